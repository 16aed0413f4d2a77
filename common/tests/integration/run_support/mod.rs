//! Building a [`Run`] from a case (a deployment written as YAML) and driving it the way the controller
//! does: the store's part (assigning revisions) is played by [`Driver`]. Shared by `run_cases.rs` (the
//! data-driven cases) and `run_properties.rs` (the properties).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use plinth_common::graph::{FaultToleranceGroup, WaitSet, WaitTarget};
use plinth_common::model::{FaultTolerance, Policy};
use plinth_common::run::{Effects, GraphPlan, Run, RunNode, RunPlan};
use plinth_common::strategy::{parse_strategy, InventoryNode, Strategy};
use plinth_common::wire::{
    CrossDependency, ResultStatus, TaskKind, TaskList, TaskResult, TaskSpec,
};
use serde::Deserialize;

/// A deployment, as a case file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What the case shows, in words.
    #[serde(default)]
    pub about: String,
    /// A strategy in Plinth's plain form; absent: every node at once, one phase `deploy` running the
    /// only graph type.
    #[serde(default)]
    pub strategy: Option<serde_yaml_ng::Value>,
    /// Whether the strategy counts as named by an operator (default: when one is given).
    #[serde(default)]
    pub named: Option<bool>,
    /// The phase timeout of the default strategy, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// The nodes, in id order from 1.
    pub nodes: Vec<NodeDef>,
    /// Per graph type, what resolution found.
    pub graphs: BTreeMap<String, GraphDef>,
    /// The events, one a line (see `run_cases.rs`).
    #[serde(default)]
    pub steps: Vec<String>,
}

fn default_timeout() -> u64 {
    60
}

/// A node: its name, or its name with tags.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NodeDef {
    /// Just a name.
    Name(String),
    /// A name and tags.
    Tagged {
        /// The name.
        name: String,
        /// Its tags.
        #[serde(default)]
        tags: Vec<String>,
    },
}

impl NodeDef {
    fn name(&self) -> &str {
        match self {
            NodeDef::Name(n) | NodeDef::Tagged { name: n, .. } => n,
        }
    }
}

/// One graph type resolved.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphDef {
    /// Each node's tasks in order: `id`, then `gated` and `waits:NODE.TASK` as wanted.
    #[serde(default)]
    pub tasks: BTreeMap<String, Vec<String>>,
    /// Concurrency limits by task.
    #[serde(default)]
    pub limits: BTreeMap<String, usize>,
    /// Gated tasks' wait sets, by `NODE.TASK`.
    #[serde(default)]
    pub gated: BTreeMap<String, Vec<SetDef>>,
    /// Fault tolerance groups.
    #[serde(default)]
    pub fault_tolerance: Vec<ToleranceDef>,
}

/// A wait set: its policy and, by task, the nodes it runs on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetDef {
    /// `all` or `any`.
    pub policy: Policy,
    /// Task → nodes.
    pub targets: BTreeMap<String, Vec<String>>,
}

/// A fault tolerance group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceDef {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// `N`, `-N` or `N%`; absent: no limit.
    #[serde(default)]
    pub tolerance: Option<String>,
}

/// The deployment's id in every case.
pub const DEPLOYMENT: u64 = 7;

impl Case {
    /// The node ids by name.
    pub fn ids(&self) -> HashMap<String, u64> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name().to_string(), i as u64 + 1))
            .collect()
    }

    /// The run this case describes.
    pub fn run(&self) -> Result<Run, String> {
        let ids = self.ids();
        let id = |name: &str| -> Result<u64, String> {
            ids.get(name)
                .copied()
                .ok_or_else(|| format!("unknown node {name:?}"))
        };
        let mut graphs = BTreeMap::new();
        for (graph_type, def) in &self.graphs {
            let mut plan = GraphPlan::default();
            for (node, tasks) in &def.tasks {
                let mut specs = Vec::new();
                for text in tasks {
                    let mut words = text.split_whitespace();
                    let task = words.next().ok_or("an empty task")?;
                    let mut spec = TaskSpec {
                        id: task.to_string(),
                        kind: TaskKind::Shell,
                        parameters: Default::default(),
                        skip_reason: None,
                        waits_for: Vec::new(),
                        gated: false,
                        manifests: Default::default(),
                    };
                    for word in words {
                        if word == "gated" {
                            spec.gated = true;
                        } else if let Some(target) = word.strip_prefix("waits:") {
                            let (n, t) = target
                                .split_once('.')
                                .ok_or_else(|| format!("{word}: NODE.TASK"))?;
                            spec.waits_for.push(CrossDependency {
                                node_id: id(n)?,
                                task: t.to_string(),
                            });
                            spec.gated = true;
                        } else {
                            return Err(format!("task {task}: unknown word {word:?}"));
                        }
                    }
                    specs.push(spec);
                }
                plan.specs.insert(id(node)?, specs.into());
            }
            plan.limits = def.limits.clone().into_iter().collect();
            for (at, sets) in &def.gated {
                let (n, t) = at
                    .split_once('.')
                    .ok_or_else(|| format!("{at}: NODE.TASK"))?;
                let mut indexes = Vec::new();
                for set in sets {
                    let mut targets = Vec::new();
                    for (task, nodes) in &set.targets {
                        let mut nodes =
                            nodes.iter().map(|n| id(n)).collect::<Result<Vec<_>, _>>()?;
                        nodes.sort_unstable();
                        targets.push(WaitTarget {
                            task: task.clone(),
                            nodes,
                        });
                    }
                    indexes.push(plan.wait_sets.len() as u32);
                    plan.wait_sets.push(WaitSet {
                        policy: set.policy,
                        targets,
                    });
                }
                plan.gated_waits.insert((id(n)?, t.to_string()), indexes);
            }
            for g in &def.fault_tolerance {
                plan.fault_tolerance.push(FaultToleranceGroup {
                    name: g.name.clone(),
                    node_ids: g.nodes.iter().map(|n| id(n)).collect::<Result<_, _>>()?,
                    fault_tolerance: g
                        .tolerance
                        .as_deref()
                        .map(FaultTolerance::parse)
                        .transpose()?,
                });
            }
            graphs.insert(graph_type.clone(), Arc::new(plan));
        }
        let strategy = match &self.strategy {
            Some(doc) => parse_strategy(&serde_yaml_ng::to_string(doc).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?,
            None => {
                let mut s = Strategy::all_nodes();
                s.phases = vec![plinth_common::strategy::Phase {
                    name: "deploy".into(),
                    graph_type: self
                        .graphs
                        .keys()
                        .next()
                        .cloned()
                        .unwrap_or_else(|| "default".into()),
                    timeout: None,
                }];
                s.phase_timeout = self.timeout;
                s
            }
        };
        let plan = RunPlan {
            deployment_id: DEPLOYMENT,
            nodes: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    (
                        i as u64 + 1,
                        RunNode {
                            name: n.name().to_string(),
                            node_key: format!("key-{}", n.name()),
                        },
                    )
                })
                .collect(),
            graphs,
            noop: false,
            named_strategy: self.named.unwrap_or(self.strategy.is_some()),
        };
        let inventory: Vec<InventoryNode> = self
            .nodes
            .iter()
            .map(|n| match n {
                NodeDef::Name(name) => InventoryNode::new(name.clone()),
                NodeDef::Tagged { name, tags } => {
                    tags.iter().fold(InventoryNode::new(name.clone()), |n, t| {
                        n.with_tag(t.clone())
                    })
                }
            })
            .collect();
        Run::new(plan, strategy, &inventory).map_err(|e| e.to_string())
    }
}

/// The store's part: revisions from one counter, each node's latest list.
#[derive(Debug, Default)]
pub struct Driver {
    /// The last revision given.
    pub revision: u64,
    /// Each node's lists, oldest first.
    pub lists: BTreeMap<u64, Vec<TaskList>>,
    /// Every list published after the run finished (must stay empty).
    pub after_finish: Vec<TaskList>,
}

impl Driver {
    /// Assigns revisions to what the effects publish and tells the run, as the store and the engine do.
    pub fn apply(&mut self, run: &mut Run, fx: &mut Effects) {
        let mut stored = Vec::new();
        for list in fx.publish.iter_mut().chain(fx.stop_orders.iter_mut()) {
            self.revision += 1;
            list.revision = self.revision;
            self.lists
                .entry(list.node_id)
                .or_default()
                .push(list.clone());
            stored.push(Arc::new(list.clone()));
        }
        run.published(&stored)
            .expect("the store's revisions only grow");
    }

    /// The revision of a node's latest list.
    pub fn revision_of(&self, node: u64) -> u64 {
        self.lists
            .get(&node)
            .and_then(|l| l.last())
            .map_or(0, |l| l.revision)
    }
}

/// A result as an agent sends it.
pub fn result(revision: u64, task: &str, status: ResultStatus, attempt: u32) -> TaskResult {
    TaskResult {
        deployment_id: DEPLOYMENT,
        revision,
        task_id: task.to_string(),
        attempt,
        status,
        last: status != ResultStatus::Running,
        exit_code: None,
        started_at_ms: 0,
        duration_ms: 0,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        message: String::new(),
        details: serde_json::Value::Null,
    }
}
