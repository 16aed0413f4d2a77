//! What the corpus tests share: where the corpus is, and Fuel's task files under a folder.

use plinth_common::model::{parse_tasks, Task};
use std::path::{Path, PathBuf};

/// The corpus beside the checkout.
pub fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

/// Every task of every `tasks.yaml` under `dir`, files in path order.
pub fn tasks_under(dir: &Path) -> Vec<Task> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("corpus folder")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "tasks.yaml") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("readable");
            parse_tasks(&text, &f.display().to_string()).expect("loads")
        })
        .collect()
}
