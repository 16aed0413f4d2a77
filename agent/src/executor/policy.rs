//! The retry policy of a task, from its `timeout`, `retries` and `interval` parameters (seconds; numbers
//! or numeric strings), with defaults per task type.

use super::ParamError;
use plinth_common::wire::TaskSpec;
use std::time::Duration;

/// How often and how long a task may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (1 + retries).
    pub attempts: u32,
    /// Pause between attempts.
    pub interval: Duration,
    /// Longest an attempt may run.
    pub timeout: Duration,
}

/// The most retries a task may ask for.
pub const MAX_RETRIES: u64 = 100;

impl RetryPolicy {
    /// A single attempt with no timeout worth speaking of (for no-ops).
    pub fn once() -> RetryPolicy {
        RetryPolicy {
            attempts: 1,
            interval: Duration::ZERO,
            timeout: Duration::from_secs(1),
        }
    }

    /// Reads the policy from a task's parameters, using `defaults` for missing ones.
    pub fn from_task(task: &TaskSpec, defaults: RetryPolicy) -> Result<RetryPolicy, ParamError> {
        let timeout = match seconds(task, "timeout")? {
            Some(t) if t <= 0.0 => {
                return Err(err(task, "timeout", "must be above zero seconds".into()))
            }
            Some(t) => Duration::from_secs_f64(t),
            None => defaults.timeout,
        };
        let interval = match seconds(task, "interval")? {
            Some(i) => Duration::from_secs_f64(i),
            None => defaults.interval,
        };
        let attempts = match seconds(task, "retries")? {
            Some(r) if r.fract() != 0.0 || r > MAX_RETRIES as f64 => {
                return Err(err(
                    task,
                    "retries",
                    format!("must be a whole number from 0 to {MAX_RETRIES}"),
                ))
            }
            Some(r) => r as u32 + 1,
            None => defaults.attempts,
        };
        Ok(RetryPolicy {
            attempts,
            interval,
            timeout,
        })
    }
}

/// A non-negative number of seconds (at most a year), or `None` when the parameter is absent or null.
fn seconds(task: &TaskSpec, field: &str) -> Result<Option<f64>, ParamError> {
    let value = match task.parameters.get(field) {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let number = match value {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match number {
        Some(n) if n.is_finite() && (0.0..=31_536_000.0).contains(&n) => Ok(Some(n)),
        _ => Err(err(
            task,
            field,
            format!("expected a number of seconds from 0 to 31536000, got {value}"),
        )),
    }
}

fn err(task: &TaskSpec, field: &str, message: String) -> ParamError {
    ParamError {
        task: task.id.clone(),
        field: field.to_string(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::shell;
    use serde_json::json;

    const DEFAULTS: RetryPolicy = RetryPolicy {
        attempts: 3,
        interval: Duration::from_secs(2),
        timeout: Duration::from_secs(300),
    };

    #[test]
    fn defaults_and_values() {
        let p = RetryPolicy::from_task(&shell("t", json!({"cmd": "x"})), DEFAULTS).unwrap();
        assert_eq!(p, DEFAULTS);
        let p = RetryPolicy::from_task(
            &shell(
                "t",
                json!({"timeout": 3600, "retries": "0", "interval": 0.5}),
            ),
            DEFAULTS,
        )
        .unwrap();
        assert_eq!(p.attempts, 1);
        assert_eq!(p.timeout, Duration::from_secs(3600));
        assert_eq!(p.interval, Duration::from_millis(500));
    }

    #[test]
    fn bad_values_name_task_and_field() {
        for (params, field) in [
            (json!({"timeout": 0}), "timeout"),
            (json!({"timeout": "soon"}), "timeout"),
            (json!({"retries": 1.5}), "retries"),
            (json!({"retries": -1}), "retries"),
            (json!({"retries": 1000}), "retries"),
            (json!({"interval": [1]}), "interval"),
        ] {
            let e = RetryPolicy::from_task(&shell("deploy-x", params), DEFAULTS).unwrap_err();
            assert_eq!(e.field, field);
            assert!(e.to_string().contains("deploy-x"), "{e}");
        }
    }
}
