//! The evaluation seam: how computed fields, node filters and role conditions are evaluated.
//!
//! Resolution never parses an expression itself; it hands each one to a [`FieldEvaluator`], which the
//! expression engine implements (and tests replace). [`NoExpressions`] refuses every expression with a
//! message naming where it was found, for callers that have no engine.

use serde_json::Value;

use crate::model::Node;

/// Where a computed field is being evaluated.
#[derive(Debug, Clone, Copy)]
pub struct EvalContext<'a> {
    /// The node the task is resolved for; `None` for the controller's own host (`master`).
    pub node: Option<&'a Node>,
    /// The node's id ([`super::MASTER_NODE_ID`] for the controller's own host).
    pub node_id: u64,
    /// The task whose field is computed.
    pub task_id: &'a str,
    /// The field's path inside the task (`condition`, `parameters.strategy.amount`, `cross_depends`).
    pub field_path: &'a str,
}

/// Evaluates expressions for resolution. Implementations must be deterministic for a given input and
/// safe to share across threads.
pub trait FieldEvaluator: Sync {
    /// Computes a task field's `yaql_exp` for a node. The result replaces the `{yaql_exp: ...}` mapping.
    /// For `condition` the result is read as a boolean (YAQL truthiness). An error says what went
    /// wrong; resolution names the task, the field and the node around it.
    fn evaluate(&self, context: &EvalContext<'_>, expression: &str) -> Result<Value, String>;

    /// Whether a graph's `node_filter` selects `node` (`$` is the node).
    fn node_filter(&self, node: &Node, expression: &str) -> Result<bool, String>;

    /// Evaluates a cluster-level expression: a role restriction's condition, a limit given as an
    /// expression, or a limit override's condition (Nailgun's `settings:...` forms).
    fn cluster_expression(&self, expression: &str) -> Result<Value, String>;
}

/// An evaluator for callers without an expression engine: every expression is an error that says where.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExpressions;

impl FieldEvaluator for NoExpressions {
    fn evaluate(&self, context: &EvalContext<'_>, expression: &str) -> Result<Value, String> {
        Err(format!(
            "task {:?}, field {}: computed values are not available here (expression {:?})",
            context.task_id, context.field_path, expression
        ))
    }

    fn node_filter(&self, node: &Node, expression: &str) -> Result<bool, String> {
        Err(format!(
            "node filter {:?} cannot be evaluated for node {} without an expression engine",
            expression, node.id
        ))
    }

    fn cluster_expression(&self, expression: &str) -> Result<Value, String> {
        Err(format!(
            "expression {expression:?} cannot be evaluated without an expression engine"
        ))
    }
}

/// YAQL's truthiness: null, false, 0, empty strings and empty collections are false.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
