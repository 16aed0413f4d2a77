//! Standard output that ends the program quietly when its reader has gone (`plinthctl ... | head`):
//! Rust's `println!` panics on a closed pipe, so every command prints through [`write_out`] instead
//! (the crate's `println!`/`print!` shadow the standard ones).

use std::io::{ErrorKind, Write};

/// Writes to standard output. A closed pipe ends the program at once with status 0 and nothing on
/// standard error (the reader chose to stop); any other write error ends it with status 2 and says so.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        match e.kind() {
            ErrorKind::BrokenPipe => std::process::exit(0),
            _ => {
                eprintln!("plinthctl: cannot write to standard output: {e}");
                std::process::exit(2)
            }
        }
    }
}
