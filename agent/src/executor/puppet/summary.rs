//! Puppet's run summary (`last_run_summary.yaml`): resource counts, times and when the run happened.

use serde_json::json;
use serde_yaml_ng::Value;

/// The parts of a run summary the agent reports and judges by.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// Resources changed.
    pub changed: u64,
    /// Resources that failed.
    pub failed: u64,
    /// Services that failed to restart.
    pub failed_to_restart: u64,
    /// Resources found out of sync (in a no-op run: what would change).
    pub out_of_sync: u64,
    /// Resources restarted.
    pub restarted: u64,
    /// Resources skipped.
    pub skipped: u64,
    /// Resources in the catalog.
    pub total: u64,
    /// Failed events.
    pub failed_events: u64,
    /// Seconds the run took (`time.total`).
    pub time_total: Option<f64>,
    /// Seconds compiling the catalog took (`time.config_retrieval`).
    pub config_retrieval: Option<f64>,
    /// When the run happened, seconds since the Unix epoch (`time.last_run`).
    pub last_run: Option<i64>,
    /// Puppet's version.
    pub puppet_version: Option<String>,
    /// True when the summary has a `resources` section (a run that failed early writes none).
    pub has_resources: bool,
}

impl RunSummary {
    /// Reads a summary. Fails on text that is not a YAML mapping.
    pub fn parse(text: &str) -> Result<RunSummary, String> {
        let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        if !doc.is_mapping() {
            return Err("the summary is not a YAML mapping".into());
        }
        let count = |section: &str, key: &str| -> u64 {
            doc.get(section)
                .and_then(|s| s.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let float = |key: &str| {
            doc.get("time")
                .and_then(|t| t.get(key))
                .and_then(Value::as_f64)
        };
        Ok(RunSummary {
            changed: count("resources", "changed"),
            failed: count("resources", "failed"),
            failed_to_restart: count("resources", "failed_to_restart"),
            out_of_sync: count("resources", "out_of_sync"),
            restarted: count("resources", "restarted"),
            skipped: count("resources", "skipped"),
            total: count("resources", "total"),
            failed_events: count("events", "failure"),
            time_total: float("total"),
            config_retrieval: float("config_retrieval"),
            last_run: doc
                .get("time")
                .and_then(|t| t.get("last_run"))
                .and_then(Value::as_i64),
            puppet_version: doc
                .get("version")
                .and_then(|v| v.get("puppet"))
                .and_then(|p| p.as_str().map(str::to_string)),
            has_resources: doc.get("resources").is_some_and(Value::is_mapping),
        })
    }

    /// True when the summary was written by a run that started at `started_secs` or later.
    pub fn written_since(&self, started_secs: i64) -> bool {
        self.last_run.is_some_and(|t| t >= started_secs)
    }

    /// Resources that failed or failed to restart.
    pub fn failures(&self) -> u64 {
        self.failed + self.failed_to_restart
    }

    /// The summary as a result's details.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "changed": self.changed,
            "failed": self.failed,
            "failed_to_restart": self.failed_to_restart,
            "out_of_sync": self.out_of_sync,
            "restarted": self.restarted,
            "skipped": self.skipped,
            "total": self.total,
            "failed_events": self.failed_events,
            "time_total": self.time_total,
            "config_retrieval": self.config_retrieval,
            "last_run": self.last_run,
            "puppet_version": self.puppet_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "---\nversion:\n  config: 1795388947\n  puppet: 7.23.0\nresources:\n  changed: 1\n  \
        corrective_change: 0\n  failed: 1\n  failed_to_restart: 0\n  out_of_sync: 2\n  restarted: 0\n  \
        scheduled: 0\n  skipped: 0\n  total: 9\ntime:\n  config_retrieval: 0.054853493\n  total: 0.02\n  \
        last_run: 1795388947\nchanges:\n  total: 1\nevents:\n  failure: 1\n  success: 1\n  total: 2\n";

    #[test]
    fn reads_counts_times_and_version() {
        let s = RunSummary::parse(SAMPLE).unwrap();
        assert_eq!((s.changed, s.failed, s.out_of_sync, s.total), (1, 1, 2, 9));
        assert_eq!(s.failures(), 1);
        assert_eq!(s.failed_events, 1);
        assert_eq!(s.last_run, Some(1_795_388_947));
        assert_eq!(s.puppet_version.as_deref(), Some("7.23.0"));
        assert!(s.has_resources);
        assert!(s.written_since(1_795_388_947));
        assert!(!s.written_since(1_795_388_948));
        assert_eq!(s.to_json()["out_of_sync"], 2);
    }

    #[test]
    fn a_summary_without_resources_or_time_is_not_fresh() {
        let s = RunSummary::parse("---\nversion:\n  puppet: 7.23.0\n").unwrap();
        assert!(!s.has_resources);
        assert!(!s.written_since(0));
        assert!(RunSummary::parse("- a\n- b\n").is_err());
        assert!(RunSummary::parse("resources: [").is_err());
    }
}
