//! Writes the generated benchmark site (`plinth_deckhand::generate::baremetal_site`) as a YAML stream, so
//! that Deckhand's own engine can render the same documents.
//!
//! `cargo run -p plinth-deckhand --example generate_site -- OUT.yaml [NODES]` (1000 nodes by default).

use plinth_deckhand::generate::{baremetal_site, to_yaml};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: generate_site OUT.yaml [NODES]");
        std::process::exit(2);
    };
    let nodes = match args.next().map(|n| n.parse::<usize>()) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("NODES: {e}");
            std::process::exit(2);
        }
    };
    let docs = baremetal_site(nodes);
    if let Err(e) = std::fs::write(&out, to_yaml(&docs)) {
        eprintln!("{out}: {e}");
        std::process::exit(1);
    }
    eprintln!("{out}: {} documents ({nodes} nodes)", docs.len());
}
