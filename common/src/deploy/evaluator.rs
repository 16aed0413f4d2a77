//! [`YaqlFields`]: the YAQL implementation of the resolution seam.

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use super::data::{DeployData, NodeState};
use super::restriction::restriction_to_yaql;
use crate::expr::{Context, Engine, ExprCache, Expression, Shared};
use crate::graph::{EvalContext, FieldEvaluator};
use crate::json::Json;
use crate::model::Node;

/// What each task saw the last time it succeeded on each node: `(node id, task id)` → state.
#[derive(Debug, Clone, Default)]
pub struct OldStates {
    /// By task, then node (looked up without building a key).
    states: HashMap<String, HashMap<u64, NodeState, Fx>, Fx>,
}

impl OldStates {
    /// No old state: every `changed()` is true.
    pub fn new() -> OldStates {
        OldStates::default()
    }

    /// Records the state `task` last ran against on `node`.
    pub fn insert(&mut self, node: u64, task: impl Into<String>, state: NodeState) {
        self.states
            .entry(task.into())
            .or_default()
            .insert(node, state);
    }

    /// The state `task` last ran against on `node`.
    pub fn get(&self, node: u64, task: &str) -> Option<&NodeState> {
        self.states.get(task)?.get(&node)
    }

    /// Every recorded state.
    pub fn iter(&self) -> impl Iterator<Item = &NodeState> {
        self.states.values().flat_map(|by_node| by_node.values())
    }

    /// How many are recorded.
    pub fn len(&self) -> usize {
        self.states.values().map(HashMap::len).sum()
    }

    /// True when none is recorded.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

/// Evaluates computed fields, node filters and restrictions with YAQL, per node, with Nailgun's
/// deployment helpers reading the old state of the task being resolved.
///
/// What an expression reads of the cluster part only is evaluated once per class of nodes (those
/// whose old state has the same cluster part: one class on a first deployment, one per earlier
/// deployment after) and reused for every node of the class; see [`crate::expr::shared`].
pub struct YaqlFields {
    engine: Arc<Engine>,
    cache: Arc<ExprCache>,
    data: DeployData,
    old: OldStates,
    forced: bool,
    /// The models Nailgun's restriction conditions name (`settings`, `cluster`, `release`, `version`).
    models: Value,
    /// The same, as expressions read them.
    models_json: Json,
    /// The top-level keys of the nodes' own parts, now and in the old states.
    node_keys: HashSet<String>,
    node_key_list: Vec<String>,
    /// Per old cluster part: whether it agrees with the current one outside the node keys.
    same_outside: RwLock<HashMap<usize, bool>>,
    /// Each expression text as given (typographic quotes and all): parsed once, with its
    /// node-independent values per class of nodes.
    compiled: RwLock<HashMap<u64, Vec<Arc<Compiled>>, Fx>>,
}

/// A cheap hash of an expression text: its length and four samples of eight bytes (the texts are
/// long and looked up for every node; texts that agree on these are told apart by comparison).
fn text_hash(text: &str) -> u64 {
    use std::hash::Hasher;
    let b = text.as_bytes();
    let mut h = crate::expr::value::FxHasher::default();
    h.write_usize(b.len());
    let n = b.len();
    for at in [0, n / 3, 2 * n / 3, n.saturating_sub(8)] {
        h.write(&b[at.min(n)..(at + 8).min(n)]);
    }
    h.finish()
}

/// Texts come from the release's graphs: a fast hasher is enough.
type Fx = std::hash::BuildHasherDefault<crate::expr::value::FxHasher>;

/// One expression text, parsed (or its parse error), and what is kept of it per class of nodes.
struct Compiled {
    text: String,
    expr: Result<Arc<Expression>, String>,
    classes: RwLock<Vec<Class>>,
}

/// What one class of nodes (same old cluster part, `0` for none) shares of an expression.
#[derive(Clone)]
struct Class {
    old: usize,
    shared: Arc<Shared>,
    /// The expression's error when it reads nothing of the node and fails, as text.
    whole_error: Option<Arc<str>>,
    /// Whether the old cluster part agrees with the current one outside the node keys.
    same_outside: bool,
}

impl std::fmt::Debug for YaqlFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("YaqlFields")
            .field("old_states", &self.old.len())
            .field("forced", &self.forced)
            .finish()
    }
}

impl YaqlFields {
    /// An evaluator over a deployment's data. `forced` treats the old state as empty.
    pub fn new(
        engine: Arc<Engine>,
        cache: Arc<ExprCache>,
        data: DeployData,
        old: OldStates,
        forced: bool,
    ) -> YaqlFields {
        let common = data.common().as_ref();
        let models = serde_json::json!({
            "settings": common.get("settings").map_or(Value::Null, Json::to_value),
            "cluster": common.get("cluster").map_or(Value::Null, Json::to_value),
            "release": common.get("release").map_or(Value::Null, Json::to_value),
            "version": {"feature_groups": []},
        });
        let mut node_keys = HashSet::new();
        let mut seen = HashSet::new();
        let parts = data
            .node_parts()
            .chain(old.iter().map(NodeState::node))
            .filter(|p| seen.insert(*p as *const Json as usize));
        for part in parts {
            if let Some(m) = part.as_object() {
                for k in m.keys() {
                    if !node_keys.contains(k) {
                        node_keys.insert(k.to_string());
                    }
                }
            }
        }
        YaqlFields {
            engine,
            cache,
            data,
            old,
            forced,
            models_json: Json::from(&models),
            models,
            node_key_list: node_keys.iter().cloned().collect(),
            node_keys,
            compiled: RwLock::new(HashMap::default()),
            same_outside: RwLock::new(HashMap::new()),
        }
    }

    /// Whether `old`'s cluster part agrees with the current one on every key but the nodes' own
    /// (computed once per old cluster part).
    fn same_outside(&self, old: &NodeState) -> bool {
        let key = Arc::as_ptr(&old.common) as usize;
        if let Some(s) = self
            .same_outside
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return *s;
        }
        let same = match (self.data.common().as_ref(), old.common.as_ref()) {
            (Json::Object(new), Json::Object(was)) => {
                let outside = |m: &crate::json::Object| {
                    m.keys().filter(|k| !self.node_keys.contains(*k)).count()
                };
                outside(new) == outside(was)
                    && new
                        .iter()
                        .filter(|(k, _)| !self.node_keys.contains(*k))
                        .all(|(k, v)| {
                            was.get(k).is_some_and(|w| {
                                crate::expr::value::equal(
                                    &crate::expr::Value::from_json(v),
                                    &crate::expr::Value::from_json(w),
                                )
                            })
                        })
            }
            _ => false,
        };
        self.same_outside
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, same);
        same
    }

    /// The expression `text` (as given), parsed on first use.
    fn compiled(&self, text: &str) -> Arc<Compiled> {
        let hash = text_hash(text);
        if let Some(c) = self
            .compiled
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&hash)
            .and_then(|all| all.iter().find(|c| c.text == text))
        {
            return c.clone();
        }
        let straight = super::quotes::straighten_quotes(text);
        let compiled = Arc::new(Compiled {
            text: text.to_string(),
            expr: self
                .cache
                .get_or_parse(&straight)
                .map_err(|e| e.to_string()),
            classes: RwLock::new(Vec::new()),
        });
        let mut map = self.compiled.write().unwrap_or_else(|p| p.into_inner());
        let all = map.entry(hash).or_default();
        if let Some(c) = all.iter().find(|c| c.text == text) {
            return c.clone();
        }
        all.push(compiled.clone());
        compiled
    }

    /// What nodes whose old state is `old` share of `expr`, computed on first use.
    fn class(&self, compiled: &Compiled, expr: &Arc<Expression>, old: Option<&NodeState>) -> Class {
        let key = old.map_or(0, |s| Arc::as_ptr(&s.common) as usize);
        if let Some(c) = compiled
            .classes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|c| c.old == key)
        {
            return c.clone();
        }
        let common = self.data.common().as_ref();
        let ctx = Context::new(common)
            .var("common", common)
            .old(old.map(|s| s.common.as_ref()))
            .forced(self.forced);
        let shared = Arc::new(
            self.engine
                .share(expr, &ctx, &|k: &str| self.node_keys.contains(k)),
        );
        let class = Class {
            old: key,
            whole_error: shared.whole_error().map(|e| Arc::from(e.to_string())),
            shared,
            same_outside: old.is_some_and(|o| self.same_outside(o)),
        };
        let mut classes = compiled.classes.write().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = classes.iter().find(|c| c.old == key) {
            return c.clone();
        }
        classes.push(class.clone());
        class
    }

    /// The deployment's data.
    pub fn data(&self) -> &DeployData {
        &self.data
    }

    fn old_state(&self, node_id: u64, task: &str) -> Option<&NodeState> {
        if self.forced {
            return None;
        }
        self.old.get(node_id, task)
    }

    fn run(&self, text: &str, ctx: &Context<'_>) -> Result<Value, String> {
        let text = super::quotes::straighten_quotes(text);
        let expr = self.cache.get_or_parse(&text).map_err(|e| e.to_string())?;
        self.engine
            .evaluate_in(&expr, ctx)
            .map_err(|e| e.to_string())
    }
}

impl FieldEvaluator for YaqlFields {
    fn evaluate(&self, at: &EvalContext<'_>, expression: &str) -> Result<Value, String> {
        let compiled = self.compiled(expression);
        let expr = compiled.expr.as_ref().map_err(|e| e.clone())?;
        let old = self.old_state(at.node_id, at.task_id);
        let class = self.class(&compiled, expr, old);
        let shared = &class.shared;
        if let Some(whole) = shared.whole() {
            return Ok(whole.to_value());
        }
        if let Some(e) = &class.whole_error {
            return Err(e.to_string());
        }
        let empty = Json::Object(Default::default());
        let common = self.data.common().as_ref();
        let node_part = self.data.node_part(at.node_id).unwrap_or(&empty);
        // `$` is the cluster part with the node's keys over it, layered, not copied.
        let mut ctx = Context::layered(common, node_part)
            .var("node", node_part)
            .var("common", common)
            .old_layered(old.map(|s| (s.common.as_ref(), s.node())))
            .forced(self.forced)
            .shared(shared);
        if old.is_some() {
            ctx = ctx.same_cluster_part(class.same_outside, &self.node_key_list);
        }
        self.engine
            .evaluate_in(expr, &ctx)
            .map_err(|e| e.to_string())
    }

    fn node_filter(&self, node: &Node, expression: &str) -> Result<bool, String> {
        let fallback;
        let data = match self.data.node_part(node.id) {
            Some(v) => v,
            None => {
                fallback = serde_json::to_value(node).map_or(Json::Null, Json::from);
                &fallback
            }
        };
        let ctx = Context::new(data).var("common", self.data.common().as_ref());
        let v = self
            .run(expression, &ctx)
            .map_err(|e| format!("node filter, node {}: {e}", node.id))?;
        Ok(crate::graph::truthy(&v))
    }

    fn cluster_expression(&self, expression: &str) -> Result<Value, String> {
        let text = restriction_to_yaql(expression, &self.models)?;
        self.run(&text, &Context::new(&self.models_json))
            .map_err(|e| format!("condition {expression:?}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cluster, Release};
    use crate::tags::{cluster_tags, Catalog};
    use serde_json::json;

    fn fields(nodes: &[Node], old: OldStates, forced: bool) -> YaqlFields {
        let release = Release {
            name: "r".into(),
            ..Release::default()
        };
        let cluster = Cluster {
            name: "c".into(),
            release: "r".into(),
            settings: json!({"storage": {"volumes_lvm": {"value": false}}}),
            ..Cluster::default()
        };
        let catalog = Catalog::new(&release, &[], Some(&cluster));
        let tags = cluster_tags(nodes, &catalog);
        let data = DeployData::build(1, &cluster, &release, nodes, &tags);
        YaqlFields::new(
            Arc::new(Engine::new()),
            Arc::new(ExprCache::new()),
            data,
            old,
            forced,
        )
    }

    fn at<'a>(node_id: u64, task: &'a str) -> EvalContext<'a> {
        EvalContext {
            node: None,
            node_id,
            task_id: task,
            field_path: "condition",
        }
    }

    #[test]
    fn the_context_has_nailguns_shape() {
        let nodes = vec![
            Node::new(1, "ctl-1", &["controller"]),
            Node::new(2, "cmp-1", &["compute"]),
        ];
        let f = fields(&nodes, OldStates::new(), false);
        let v = f
            .evaluate(&at(1, "t"), "$.nodes.where('controller' in $.roles).len()")
            .unwrap();
        assert_eq!(v, json!(1));
        assert_eq!(f.evaluate(&at(2, "t"), "$.name").unwrap(), json!("cmp-1"));
        assert_eq!(f.evaluate(&at(2, "t"), "$node.uid").unwrap(), json!("2"));
        assert_eq!(
            f.evaluate(&at(2, "t"), "$common.cluster.name").unwrap(),
            json!("c")
        );
        let err = f.evaluate(&at(2, "deploy"), "$.nodes.where(").unwrap_err();
        assert!(
            err.starts_with("syntax error") && err.contains('^'),
            "{err}"
        );
    }

    #[test]
    fn node_records_read_as_nailguns_with_a_record_per_role() {
        let nodes = vec![
            Node::new(1, "ctl-1", &["controller", "mongo"]),
            Node::new(2, "cmp-1", &["compute"]),
        ];
        let f = fields(&nodes, OldStates::new(), false);
        let count = |e: &str| f.evaluate(&at(1, "t"), e).unwrap();
        assert_eq!(count("$.nodes.where($.role = 'compute').len()"), json!(1));
        assert_eq!(
            count("$.nodes.where($.role = ‘mongo’).select($.fqdn)"),
            json!(["ctl-1"])
        );
        assert_eq!(
            count("$.nodes.len()"),
            json!(3),
            "one record per node and role"
        );
        assert_eq!(count("$.uid"), json!("1"));
        assert_eq!(count("$.role"), json!("controller"));
    }

    #[test]
    fn changed_reads_the_tasks_old_state() {
        let before = vec![Node::new(1, "ctl-1", &["controller"])];
        let old_fields = fields(&before, OldStates::new(), false);
        let mut old = OldStates::new();
        old.insert(1, "t", old_fields.data().state(1).unwrap());
        let after = vec![
            Node::new(1, "ctl-1", &["controller"]),
            Node::new(2, "ctl-2", &["controller"]),
        ];
        let expr = "changed($.nodes.where('controller' in $.roles).len())";
        let f = fields(&after, old.clone(), false);
        assert_eq!(f.evaluate(&at(1, "t"), expr).unwrap(), json!(true));
        assert_eq!(
            f.evaluate(&at(1, "t"), "changed($.name)").unwrap(),
            json!(false)
        );
        assert_eq!(
            f.evaluate(&at(1, "other"), "changed($.name)").unwrap(),
            json!(true),
            "a task that never ran sees everything changed"
        );
        let forced = fields(&after, old, true);
        assert_eq!(
            forced.evaluate(&at(1, "t"), "changed($.name)").unwrap(),
            json!(true)
        );
    }

    #[test]
    fn restrictions_and_filters() {
        let nodes = vec![Node::new(1, "ctl-1", &["controller"])];
        let f = fields(&nodes, OldStates::new(), false);
        assert_eq!(
            f.cluster_expression("settings:storage.volumes_lvm.value == false")
                .unwrap(),
            json!(true)
        );
        assert!(f.node_filter(&nodes[0], "$.name = 'ctl-1'").unwrap());
        let at1 = EvalContext {
            node: None,
            node_id: 1,
            task_id: "t",
            field_path: "condition",
        };
        assert_eq!(
            f.evaluate(&at1, "$.storage.volumes_lvm").unwrap(),
            json!(false),
            "settings sections are at the top, as in Nailgun's deployment data"
        );
        assert!(!f.node_filter(&nodes[0], "$.pending_deletion").unwrap());
    }
}
