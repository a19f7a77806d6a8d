//! End-to-end tests of the `neardup` binary on real and generated files, one file per
//! command, sharing the helpers in `common`.

mod common;

mod classic;
mod damage;
mod dedup;
mod eval;
mod help;
mod learned;
mod limits;
mod probe;
mod results;
mod stages;
mod two_stage;
