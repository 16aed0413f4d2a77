//! Rendering a site: the treasuremap v1.9 site from the corpus, and a generated site of 1,000 layered and
//! substituted BaremetalNode documents. The texts are read once, outside the measurement.
//!
//! As Deckhand's engine is timed (`bench/deckhand/render_with_deckhand.py`), the documents rendered in
//! place (`render_owned`) are copied beforehand, outside the measurement, each copy sharing nothing (as
//! Python's `copy.deepcopy` copies). `render` on documents it borrows is measured too: it copies what it
//! changes. With jemalloc, the allocator of the binaries that render sites (the controller, plinthctl).

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use plinth_deckhand::{generate, read_sources, render, render_owned, Document, Options};

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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

/// The documents copied, sharing nothing with the originals.
fn deep_copy(docs: &[Document]) -> Vec<Document> {
    docs.iter()
        .map(|d| Document::new(d.value.deep_clone(), d.origin.clone()))
        .collect()
}

/// `render` borrowed, and `render_owned` on deep copies, redacted and in clear.
fn bench_site(c: &mut Criterion, name: &str, docs: &[Document]) {
    for cleartext_secrets in [false, true] {
        let options = Options { cleartext_secrets };
        let suffix = if cleartext_secrets { " cleartext" } else { "" };
        c.bench_function(&format!("render {name}{suffix}"), |b| {
            b.iter_with_large_drop(|| render(docs, &options))
        });
        c.bench_function(&format!("render {name} owned{suffix}"), |b| {
            b.iter_batched(
                || deep_copy(docs),
                |d| render_owned(d, &options),
                BatchSize::LargeInput,
            )
        });
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
    if !sources.is_empty() {
        let docs = read_sources(&sources).expect("the treasuremap site reads");
        c.bench_function("read treasuremap", |b| {
            b.iter(|| read_sources(&sources).map(|d| d.len()))
        });
        bench_site(c, "treasuremap", &docs);
    }
    bench_site(c, "1000 nodes", &generate::baremetal_site(1000));
}

criterion_group!(render_benches, benches);
criterion_main!(render_benches);
