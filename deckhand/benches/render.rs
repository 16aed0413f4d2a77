//! Rendering a site: the treasuremap v1.9 site from the corpus, and a generated site of 1,000 layered and
//! substituted BaremetalNode documents. The texts are read once, outside the measurement.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use plinth_deckhand::{generate, read_sources, render, render_owned, Options};

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

fn benches(c: &mut Criterion) {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/treasuremap-v1.9"
    ));
    let mut files = Vec::new();
    yaml_files(&root, &mut files);
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|p| Some((p.display().to_string(), std::fs::read_to_string(p).ok()?)))
        .collect();
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let options = Options::default();
    let clear = Options {
        cleartext_secrets: true,
    };
    if !sources.is_empty() {
        let docs = read_sources(&sources).expect("the treasuremap site reads");
        c.bench_function("read treasuremap", |b| {
            b.iter(|| read_sources(&sources).map(|d| d.len()))
        });
        c.bench_function("render treasuremap", |b| {
            b.iter_with_large_drop(|| render(&docs, &options))
        });
        c.bench_function("render treasuremap cleartext", |b| {
            b.iter_with_large_drop(|| render(&docs, &clear))
        });
        // As Deckhand's engine is timed: on documents copied beforehand, rendered in place.
        c.bench_function("render treasuremap owned", |b| {
            b.iter_batched(
                || docs.clone(),
                |d| render_owned(d, &options),
                BatchSize::LargeInput,
            )
        });
    }
    let generated = generate::baremetal_site(1000);
    c.bench_function("render 1000 nodes", |b| {
        b.iter_with_large_drop(|| render(&generated, &options))
    });
    c.bench_function("render 1000 nodes cleartext", |b| {
        b.iter_with_large_drop(|| render(&generated, &clear))
    });
    c.bench_function("render 1000 nodes owned", |b| {
        b.iter_batched(
            || generated.clone(),
            |d| render_owned(d, &options),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(render_benches, benches);
criterion_main!(render_benches);
