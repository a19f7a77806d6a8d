#!/usr/bin/env bash
# The Python package's tests: builds the extension (debug, as `cargo test` builds the library)
# into a virtual environment, target/python-venv, with the libraries users hand neardup their
# data in, and runs pytest. `cargo test` first builds the command line one test compares with.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$PWD/target/python-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "maturin>=1.9,<2" pytest pandas pyarrow polars datasets
VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH maturin develop -q
"$venv/bin/python" -m pytest python/tests -q -rs
