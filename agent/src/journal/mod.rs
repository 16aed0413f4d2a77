//! The results journal: every result is appended here (one JSON line, fsynced) before it is sent, and every
//! acknowledgement from the controller is appended to an ack log, so a restarted agent knows what it still
//! has to send and where its run stopped. When everything is acknowledged the two files are compacted,
//! keeping only the records of the list still running.
//!
//! Files in the journal directory: `results.jsonl` ([`TaskResult`] per line) and `acks.jsonl`
//! ([`ResultKey`] per line). A line torn by a crash mid-write is dropped on open. Results the controller
//! refused for good are moved to `refused.jsonl` (the result and the controller's reason per line, kept
//! for the operator; the previous file is kept as `refused.jsonl.1` once it passes 1 MiB) and count as
//! settled, so one refused result never holds back the ones after it.

mod progress;
mod shared;

pub use progress::{task_state, TaskState};
pub use shared::SharedJournal;

use crate::fsutil;
use plinth_common::wire::{ResultKey, TaskResult};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The results file's name.
pub const RESULTS_FILE: &str = "results.jsonl";
/// The ack log's name.
pub const ACKS_FILE: &str = "acks.jsonl";
/// The quarantine of refused results.
pub const REFUSED_FILE: &str = "refused.jsonl";
/// The size past which the quarantine file is rotated.
const REFUSED_ROTATE_BYTES: u64 = 1024 * 1024;

/// Why the journal cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("journal {path}: {source}")]
pub struct JournalError {
    /// The file.
    pub path: PathBuf,
    /// The cause.
    pub source: io::Error,
}

/// The journal of one agent.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    results: File,
    acks: File,
    records: Vec<TaskResult>,
    acked: HashSet<ResultKey>,
    active_revision: Option<u64>,
    /// Lines that could not be read on open (for the log).
    skipped_lines: usize,
}

impl Journal {
    /// Opens (creating when missing) the journal in `dir` and reads it.
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| JournalError { path, source }
        };
        fsutil::ensure_dir(dir, 0o700).map_err(err(dir))?;
        let results_path = dir.join(RESULTS_FILE);
        let acks_path = dir.join(ACKS_FILE);
        let mut skipped = 0;
        let records: Vec<TaskResult> =
            read_lines(&results_path, &mut skipped).map_err(err(&results_path))?;
        let acked: HashSet<ResultKey> = read_lines::<ResultKey>(&acks_path, &mut skipped)
            .map_err(err(&acks_path))?
            .into_iter()
            .collect();
        let results = open_append(&results_path).map_err(err(&results_path))?;
        let acks = open_append(&acks_path).map_err(err(&acks_path))?;
        fsutil::sync_dir(dir).map_err(err(dir))?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            results,
            acks,
            records,
            acked,
            active_revision: None,
            skipped_lines: skipped,
        })
    }

    /// Lines dropped on open because they could not be read (a torn last line after a crash).
    pub fn skipped_lines(&self) -> usize {
        self.skipped_lines
    }

    /// Appends a result durably.
    pub fn append(&mut self, result: TaskResult) -> Result<(), JournalError> {
        let mut line =
            serde_json::to_vec(&result).map_err(|e| self.error(RESULTS_FILE, e.into()))?;
        line.push(b'\n');
        write_durably(&mut self.results, &line).map_err(|e| self.error(RESULTS_FILE, e))?;
        self.records.push(result);
        Ok(())
    }

    /// Records acknowledgements durably. Keys of results this journal does not hold are ignored.
    pub fn record_acks(&mut self, keys: &[ResultKey]) -> Result<usize, JournalError> {
        let mut fresh: Vec<&ResultKey> = Vec::new();
        let mut lines = Vec::new();
        for key in keys {
            if self.acked.contains(key) || fresh.contains(&key) {
                continue;
            }
            if !self.records.iter().any(|r| &r.key() == key) {
                continue;
            }
            serde_json::to_writer(&mut lines, key).map_err(|e| self.error(ACKS_FILE, e.into()))?;
            lines.push(b'\n');
            fresh.push(key);
        }
        if fresh.is_empty() {
            return Ok(0);
        }
        write_durably(&mut self.acks, &lines).map_err(|e| self.error(ACKS_FILE, e))?;
        let n = fresh.len();
        let fresh: Vec<ResultKey> = fresh.into_iter().cloned().collect();
        self.acked.extend(fresh);
        Ok(n)
    }

    /// Moves results the controller refused for good to the quarantine file, with its reasons, and marks
    /// them settled so they are not sent again. Returns how many were quarantined.
    pub fn quarantine(&mut self, refused: &[(ResultKey, String)]) -> Result<usize, JournalError> {
        let mut lines = Vec::new();
        let mut keys = Vec::new();
        for (key, reason) in refused {
            let Some(result) = self.records.iter().find(|r| &r.key() == key) else {
                continue;
            };
            let line = serde_json::json!({"reason": reason, "result": result});
            serde_json::to_writer(&mut lines, &line)
                .map_err(|e| self.error(REFUSED_FILE, e.into()))?;
            lines.push(b'\n');
            keys.push(key.clone());
        }
        if keys.is_empty() {
            return Ok(0);
        }
        let path = self.dir.join(REFUSED_FILE);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > REFUSED_ROTATE_BYTES) {
            std::fs::rename(&path, self.dir.join(format!("{REFUSED_FILE}.1")))
                .map_err(|e| self.error(REFUSED_FILE, e))?;
        }
        let mut file = open_append(&path).map_err(|e| self.error(REFUSED_FILE, e))?;
        write_durably(&mut file, &lines).map_err(|e| self.error(REFUSED_FILE, e))?;
        self.record_acks(&keys)
    }

    /// Unacknowledged results, oldest first: at most `max_count`, and at most about `max_bytes` of JSON
    /// (always at least one).
    pub fn unacked(&self, max_count: usize, max_bytes: usize) -> Vec<TaskResult> {
        let mut out = Vec::new();
        let mut bytes = 0;
        for r in self
            .records
            .iter()
            .filter(|r| !self.acked.contains(&r.key()))
        {
            let size = serde_json::to_vec(r).map(|v| v.len()).unwrap_or(0);
            if !out.is_empty() && (out.len() >= max_count || bytes + size > max_bytes) {
                break;
            }
            bytes += size;
            out.push(r.clone());
        }
        out
    }

    /// How many results are not acknowledged yet.
    pub fn unacked_count(&self) -> usize {
        self.records
            .iter()
            .filter(|r| !self.acked.contains(&r.key()))
            .count()
    }

    /// Every record, oldest first.
    pub fn records(&self) -> &[TaskResult] {
        &self.records
    }

    /// The records of one list (deployment and revision), oldest first.
    pub fn records_of(&self, deployment_id: u64, revision: u64) -> Vec<&TaskResult> {
        self.records
            .iter()
            .filter(|r| r.deployment_id == deployment_id && r.revision == revision)
            .collect()
    }

    /// Marks the revision whose list is running: compaction keeps its records (they say where to resume).
    pub fn set_active_revision(&mut self, revision: Option<u64>) {
        self.active_revision = revision;
    }

    /// When every result is acknowledged, rewrites both files keeping only the running list's records.
    /// Returns whether anything was dropped.
    pub fn compact(&mut self) -> Result<bool, JournalError> {
        if self.unacked_count() > 0 {
            return Ok(false);
        }
        let keep: Vec<TaskResult> = self
            .records
            .iter()
            .filter(|r| Some(r.revision) == self.active_revision)
            .cloned()
            .collect();
        if keep.len() == self.records.len() {
            return Ok(false);
        }
        let mut results = Vec::new();
        let mut acks = Vec::new();
        for r in &keep {
            serde_json::to_writer(&mut results, r)
                .map_err(|e| self.error(RESULTS_FILE, e.into()))?;
            results.push(b'\n');
            serde_json::to_writer(&mut acks, &r.key())
                .map_err(|e| self.error(ACKS_FILE, e.into()))?;
            acks.push(b'\n');
        }
        // Results first: a crash between the two leaves extra acks, which are harmless.
        let results_path = self.dir.join(RESULTS_FILE);
        fsutil::write_atomic(&results_path, &results, 0o600)
            .map_err(|e| self.error(RESULTS_FILE, e))?;
        let acks_path = self.dir.join(ACKS_FILE);
        fsutil::write_atomic(&acks_path, &acks, 0o600).map_err(|e| self.error(ACKS_FILE, e))?;
        self.results = open_append(&results_path).map_err(|e| self.error(RESULTS_FILE, e))?;
        self.acks = open_append(&acks_path).map_err(|e| self.error(ACKS_FILE, e))?;
        self.acked = keep.iter().map(TaskResult::key).collect();
        self.records = keep;
        Ok(true)
    }

    fn error(&self, file: &str, source: io::Error) -> JournalError {
        JournalError {
            path: self.dir.join(file),
            source,
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

fn write_durably(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync_data()
}

/// Reads JSON lines. A last line without its newline was torn by a crash: it is cut off the file so the
/// next append starts clean. Unreadable lines are skipped and counted.
fn read_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    skipped: &mut usize,
) -> io::Result<Vec<T>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    let mut good_len: u64 = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            // Torn tail.
            *skipped += 1;
            OpenOptions::new()
                .write(true)
                .open(path)?
                .set_len(good_len)?;
            break;
        }
        good_len += n as u64;
        match serde_json::from_slice(&line) {
            Ok(v) => out.push(v),
            Err(_) if line.iter().all(u8::is_ascii_whitespace) => {}
            Err(_) => *skipped += 1,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
