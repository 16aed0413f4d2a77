//! A measurement, run on demand: what the files catalog costs for a tree of many files the first time
//! (every file read and hashed), again (each file only stat'ed: its version is unchanged), and when an
//! agent asks for a sealed manifest (no walk at all).
//!
//! `cargo test -p plinth-controller --test manifest_cache -- --ignored --nocapture`

use plinth_common::signing::manifest_digest;
use plinth_controller::file_catalog::FileCatalog;
use std::time::Instant;

#[test]
#[ignore = "a measurement; run on demand"]
fn manifest_costs_first_again_and_sealed() {
    const FILES: usize = 5_000;
    const SIZE: usize = 16 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    for i in 0..FILES {
        let sub = dir.path().join(format!("modules/m{}/files", i % 100));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.pp")), &data).unwrap();
    }
    let catalog = FileCatalog::new(dir.path().to_path_buf());
    let t = Instant::now();
    let first = catalog.manifest("modules").unwrap();
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(first.files.len(), FILES);
    assert_eq!(catalog.files_hashed(), FILES as u64);

    let t = Instant::now();
    let again = catalog.manifest("modules").unwrap();
    let again_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(again, first);
    assert_eq!(catalog.files_hashed(), FILES as u64, "nothing read again");

    let digest = catalog.remember(&first);
    const ASKS: usize = 1_000;
    let t = Instant::now();
    for _ in 0..ASKS {
        let bytes = catalog
            .sealed_manifest("modules", &digest)
            .unwrap()
            .unwrap();
        assert!(!bytes.is_empty());
    }
    let sealed_us = t.elapsed().as_secs_f64() * 1e6 / ASKS as f64;
    assert_eq!(manifest_digest(&first), digest);
    println!(
        "{FILES} files of {} KiB: first manifest {first_ms:.0} ms (all hashed), again {again_ms:.0} ms (stat only), sealed manifest {sealed_us:.1} µs per request",
        SIZE / 1024
    );
}
