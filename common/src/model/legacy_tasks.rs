//! Fuel plugins' old task format (`tasks.yaml` before task-based deployment, seed 003's "plugins with
//! old task format"): tasks without an `id`, placed by `role` (`'*'` for every node) and ordered by
//! `stage: pre_deployment/100` or `post_deployment/200` (the priority a number, `0` when left out).
//! Each becomes a task of the plugin's `default` graph, placed as Nailgun's adapter of legacy tasks
//! places them: after the stage's end anchor (`pre_deployment_end`, `post_deployment_end`) and before
//! the next stage (`deploy_start` for pre-deployment tasks), one after another by priority (equal
//! priorities in the file's order). Its id is `<plugin>-<stage>-<priority>-<n>` (Nailgun's
//! `<stage>_<n>` would collide between two plugins). A graph without the anchors gets them from
//! `graph::stage_anchors`.

use serde_json::{json, Map, Value};

/// Converts old-format tasks; the error names the task by position.
pub fn convert_legacy_tasks(plugin: &str, tasks: &[Value]) -> Result<Vec<Value>, String> {
    let mut parsed: Vec<(String, f64, usize, Map<String, Value>)> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let Value::Object(map) = task else {
            return Err(format!("tasks[{i}]: a task is a mapping"));
        };
        let stage = map.get("stage").and_then(Value::as_str).ok_or_else(|| {
            format!("tasks[{i}]: an old-format task has a `stage` (post_deployment/100)")
        })?;
        let (name, priority) = match stage.split_once('/') {
            Some((n, p)) => (
                n,
                p.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| p.is_finite())
                    .ok_or_else(|| {
                        format!("tasks[{i}]: stage {stage:?}: {p:?} is not a priority")
                    })?,
            ),
            None => (stage, 0.0),
        };
        if !matches!(name, "pre_deployment" | "post_deployment") {
            return Err(format!(
                "tasks[{i}]: stage {stage:?} is neither pre_deployment nor post_deployment"
            ));
        }
        parsed.push((name.to_string(), priority, i, map.clone()));
    }
    // Lower priorities first within a stage; equal ones keep the file's order.
    let mut order: Vec<usize> = (0..parsed.len()).collect();
    order.sort_by(|&a, &b| {
        parsed[a]
            .0
            .cmp(&parsed[b].0)
            .then(parsed[a].1.total_cmp(&parsed[b].1))
            .then(parsed[a].2.cmp(&parsed[b].2))
    });
    let mut out = Vec::with_capacity(parsed.len());
    let mut previous: Option<(String, String)> = None;
    for k in order {
        let (stage, priority, index, map) = &parsed[k];
        let id = format!("{plugin}-{stage}-{priority}-{index}");
        let mut task = map.clone();
        task.remove("stage");
        task.insert("id".into(), json!(id));
        let roles = match task.remove("role") {
            Some(Value::String(s)) if s == "*" => json!(["*"]),
            Some(Value::Array(items)) if items.iter().any(|r| r == "*") => json!(["*"]),
            Some(other) => other,
            None => json!(["*"]),
        };
        task.insert("role".into(), roles);
        let mut requires = vec![json!(format!("{stage}_end"))];
        if let Some((prev_stage, prev_id)) = &previous {
            if prev_stage == stage {
                requires.push(json!(prev_id));
            }
        }
        task.insert("requires".into(), Value::Array(requires));
        if stage == "pre_deployment" {
            task.insert("required_for".into(), json!(["deploy_start"]));
        }
        previous = Some((stage.clone(), id));
        out.push(Value::Object(task));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_tasks_become_ordered_tasks_between_the_stage_anchors() {
        let tasks: Vec<Value> = serde_yaml_ng::from_str(
            "- role: ['controller']\n  stage: post_deployment/200\n  type: shell\n  parameters: {cmd: b}\n\
             - role: '*'\n  stage: post_deployment/100\n  type: shell\n  parameters: {cmd: a}\n\
             - role: ['compute']\n  stage: pre_deployment\n  type: puppet\n  parameters: {puppet_manifest: x.pp}\n",
        )
        .unwrap();
        let out = convert_legacy_tasks("zabbix", &tasks).unwrap();
        let ids: Vec<&str> = out.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "zabbix-post_deployment-100-1",
                "zabbix-post_deployment-200-0",
                "zabbix-pre_deployment-0-2"
            ]
        );
        assert_eq!(out[0]["role"], json!(["*"]));
        assert_eq!(
            out[1]["requires"],
            json!(["post_deployment_end", "zabbix-post_deployment-100-1"])
        );
        assert_eq!(out[1].get("required_for"), None);
        assert_eq!(out[2]["requires"], json!(["pre_deployment_end"]));
        assert_eq!(out[2]["required_for"], json!(["deploy_start"]));
        // Priorities are numbers, as Nailgun reads them; anything else is refused naming the task.
        let half = [
            json!({"role": "*", "stage": "post_deployment/1.5", "type": "shell"}),
            json!({"role": "*", "stage": "post_deployment/1", "type": "shell"}),
        ];
        let ids: Vec<String> = convert_legacy_tasks("z", &half)
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, ["z-post_deployment-1-1", "z-post_deployment-1.5-0"]);
        let err = convert_legacy_tasks(
            "z",
            &[json!({"stage": "post_deployment/soon", "type": "shell"})],
        )
        .unwrap_err();
        assert!(err.contains("tasks[0]") && err.contains("soon"), "{err}");
        let err = convert_legacy_tasks("z", &[json!({"type": "shell"})]).unwrap_err();
        assert!(err.contains("tasks[0]"), "{err}");
    }
}
