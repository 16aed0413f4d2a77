//! Computing `yaql_exp` values through the evaluation seam.

use serde_json::{Map, Value};

use super::error::ResolveError;
use super::evaluate::{truthy, EvalContext, FieldEvaluator};
use crate::model::{yaql_expression, Condition, Node};

/// Who a value is computed for.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) node: Option<&'a Node>,
    pub(crate) node_id: u64,
    pub(crate) node_name: &'a str,
    pub(crate) task_id: &'a str,
}

impl Target<'_> {
    fn error(&self, field: &str, message: String) -> ResolveError {
        ResolveError::Computed {
            task: self.task_id.to_string(),
            field: field.to_string(),
            node: self.node_name.to_string(),
            message,
        }
    }

    fn eval(
        &self,
        evaluator: &dyn FieldEvaluator,
        field: &str,
        expression: &str,
    ) -> Result<Value, ResolveError> {
        let context = EvalContext {
            node: self.node,
            node_id: self.node_id,
            task_id: self.task_id,
            field_path: field,
        };
        evaluator
            .evaluate(&context, expression)
            .map_err(|m| self.error(field, m))
    }
}

/// `value` with every `{yaql_exp: ...}` inside it replaced by its result; `path` names the field.
pub(crate) fn compute_value(
    value: &Value,
    path: &str,
    target: Target<'_>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Value, ResolveError> {
    if let Some(expression) = yaql_expression(value) {
        return target.eval(evaluator, path, expression);
    }
    match value {
        Value::Object(map) => compute_map(map, path, target, evaluator).map(Value::Object),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| compute_value(v, &format!("{path}[{i}]"), target, evaluator))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// A mapping with its computed values computed; `path` is the mapping's field path.
pub(crate) fn compute_map(
    map: &Map<String, Value>,
    path: &str,
    target: Target<'_>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Map<String, Value>, ResolveError> {
    let mut out = Map::with_capacity(map.len());
    for (k, v) in map {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        out.insert(k.clone(), compute_value(v, &p, target, evaluator)?);
    }
    Ok(out)
}

/// Evaluates a task's condition (absent means true). `Ok(Some(reason))` when it is false.
pub(crate) fn condition_skip_reason(
    condition: Option<&Condition>,
    target: Target<'_>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Option<String>, ResolveError> {
    match condition {
        None | Some(Condition::Bool(true)) => Ok(None),
        Some(Condition::Bool(false)) => Ok(Some("condition is false".to_string())),
        Some(Condition::Yaql(e)) => {
            let value = target.eval(evaluator, "condition", e)?;
            Ok((!truthy(&value)).then(|| "condition is false".to_string()))
        }
        // Nailgun's older condition language (`settings:storage.volumes_ceph.value == true`), read
        // against the cluster's models as role restrictions are; a string with `$` is YAQL.
        Some(Condition::Legacy(e)) if !e.contains('$') => {
            let value = evaluator
                .cluster_expression(e)
                .map_err(|m| target.error("condition", m))?;
            Ok((!truthy(&value)).then(|| format!("condition is false: {e}")))
        }
        Some(Condition::Legacy(e)) => {
            let value = target.eval(evaluator, "condition", e)?;
            Ok((!truthy(&value)).then(|| "condition is false".to_string()))
        }
    }
}
