//! Times the rendering of a site as `bench/deckhand/render_with_deckhand.py` times Deckhand's engine,
//! for figures side by side: each rendering is of a fresh copy of the documents sharing nothing with the
//! ones read (Python's `copy.deepcopy`), made outside the time measured, rendered in place
//! (`render_owned`); reading the YAML is timed apart. Prints the minimum and the median.
//!
//! ```sh
//! cargo run --release -p plinth-deckhand --example time_render -- [--repeat N] [--cleartext] PATH...
//! ```
//!
//! A PATH is a YAML file or a folder of them (as the Python script takes them). With jemalloc, the
//! allocator of the binaries that render sites (the controller, plinthctl).

use std::path::{Path, PathBuf};
use std::time::Instant;

use plinth_deckhand::{read_sources, render_owned, Document, Options};

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn yaml_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            yaml_files(&entry, out)?;
        } else if entry.extension().is_some_and(|e| e == "yaml") {
            out.push(entry);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut repeat = 20usize;
    let mut cleartext_secrets = false;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--repeat" => repeat = args.next().ok_or("--repeat takes a number")?.parse()?,
            "--cleartext" => cleartext_secrets = true,
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    if paths.is_empty() {
        return Err("give the site's YAML files or folders".into());
    }
    let mut files = Vec::new();
    for path in &paths {
        yaml_files(path, &mut files)?;
    }
    let texts = files
        .iter()
        .map(|f| Ok((f.display().to_string(), std::fs::read_to_string(f)?)))
        .collect::<std::io::Result<Vec<(String, String)>>>()?;
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let started = Instant::now();
    let docs = read_sources(&sources)?;
    let read = started.elapsed();
    let options = Options { cleartext_secrets };
    let mut times = Vec::with_capacity(repeat);
    let mut count = 0;
    for _ in 0..repeat.max(1) {
        let copy: Vec<Document> = docs
            .iter()
            .map(|d| Document::new(d.value.deep_clone(), d.origin.clone()))
            .collect();
        let started = Instant::now();
        let rendered = render_owned(copy, &options)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        count = rendered.documents.len();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "documents read: {} ({:.1} ms)",
        docs.len(),
        read.as_secs_f64() * 1000.0
    );
    println!("concrete documents rendered: {count}");
    println!(
        "render: min {:.2} ms, median {:.2} ms, max {:.2} ms over {} runs",
        times[0],
        times[times.len() / 2],
        times[times.len() - 1],
        times.len()
    );
    Ok(())
}
