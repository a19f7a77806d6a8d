//! Starting `neardup serve` in a test: the address it says it listens on.

use std::io::BufRead;
use std::process::Child;

/// The base URL of the server `child` runs, from the first line of its standard output
/// (which must be piped): `listening on http://127.0.0.1:PORT`.
pub fn listening_url(child: &mut Child) -> String {
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("serve's stdout piped"))
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("serve did not start: its first line is {line:?}"))
        .to_owned()
}
