//! Node classes: nodes with the same tags (and the same computed dependencies) get the same tasks in the
//! same order, so each class is resolved and ordered once and shared by its nodes.

use indexmap::IndexMap;
use std::collections::{BTreeMap, HashMap};

use super::compile::{Compiled, CompiledDep, CompiledDeps};
use super::compute::{compute_value, Target};
use super::error::ResolveError;
use super::evaluate::FieldEvaluator;
use super::MASTER_NODE_ID;
use crate::model::{CrossDep, Dependencies, Node};
use crate::tags::{NodeTags, MASTER_TAG};

/// A node of the plan (or the controller's own host).
#[derive(Debug, Clone)]
pub(crate) struct Member<'a> {
    pub(crate) node: Option<&'a Node>,
    pub(crate) id: u64,
    pub(crate) name: String,
}

/// Nodes resolved alike.
#[derive(Debug)]
pub(crate) struct Class<'a> {
    pub(crate) tags: NodeTags,
    pub(crate) is_master: bool,
    pub(crate) members: Vec<Member<'a>>,
    pub(crate) scheduled: Vec<bool>,
    /// Dependencies computed for this class's nodes: task → (forward, backward).
    pub(crate) computed: HashMap<usize, (Vec<CompiledDep>, Vec<CompiledDep>)>,
    /// The scheduled tasks in order.
    pub(crate) order: Vec<usize>,
}

impl Class<'_> {
    /// The task's `cross_depends` and `cross_depended_by` on this class.
    pub(crate) fn deps<'s>(
        &'s self,
        compiled: &'s Compiled<'_>,
        task: usize,
    ) -> (&'s [CompiledDep], &'s [CompiledDep]) {
        if let Some((f, b)) = self.computed.get(&task) {
            return (f, b);
        }
        let pick = |d: &'s CompiledDeps| -> &'s [CompiledDep] {
            match d {
                CompiledDeps::Static(list) => list,
                _ => &[],
            }
        };
        let t = &compiled.tasks[task];
        (pick(&t.forward), pick(&t.backward))
    }
}

type DepKey = Vec<(usize, Vec<CrossDep>, Vec<CrossDep>)>;

fn computed_deps(
    compiled: &Compiled<'_>,
    scheduled: &[bool],
    member: &Member<'_>,
    evaluator: &dyn FieldEvaluator,
) -> Result<DepKey, ResolveError> {
    let mut key = Vec::new();
    for (i, t) in compiled.tasks.iter().enumerate() {
        if !scheduled[i] {
            continue;
        }
        if !matches!(t.forward, CompiledDeps::Computed(_))
            && !matches!(t.backward, CompiledDeps::Computed(_))
        {
            continue;
        }
        let task = compiled.task(i);
        let target = Target {
            node: member.node,
            node_id: member.id,
            node_name: &member.name,
            task_id: &task.id,
        };
        let eval = |deps: &CompiledDeps, field: &str| -> Result<Vec<CrossDep>, ResolveError> {
            match deps {
                CompiledDeps::Computed(v) => {
                    let value = compute_value(v, field, target, evaluator)?;
                    Dependencies::parse_list(value).map_err(|message| ResolveError::Computed {
                        task: task.id.clone(),
                        field: field.to_string(),
                        node: member.name.clone(),
                        message,
                    })
                }
                CompiledDeps::Static(list) => Ok(list.iter().map(|d| d.raw.clone()).collect()),
                CompiledDeps::None => Ok(Vec::new()),
            }
        };
        key.push((
            i,
            eval(&t.forward, "cross_depends")?,
            eval(&t.backward, "cross_depended_by")?,
        ));
    }
    Ok(key)
}

/// Groups the members into classes (ordered later, all together, by `schedule`).
pub(crate) fn build_classes<'a>(
    compiled: &Compiled<'_>,
    members: Vec<(NodeTags, Member<'a>)>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Vec<Class<'a>>, ResolveError> {
    let mut by_tags: BTreeMap<NodeTags, Vec<Member<'a>>> = BTreeMap::new();
    for (tags, member) in members {
        by_tags.entry(tags).or_default().push(member);
    }
    let mut groups: Vec<(NodeTags, bool, Vec<Member<'a>>)> = Vec::new();
    if compiled.uses_master {
        groups.push((
            NodeTags::from_tags(&[MASTER_TAG]),
            true,
            vec![Member {
                node: None,
                id: MASTER_NODE_ID,
                name: MASTER_TAG.to_string(),
            }],
        ));
    }
    groups.extend(by_tags.into_iter().map(|(t, m)| (t, false, m)));
    let mut classes = Vec::new();
    for (tags, is_master, members) in groups {
        let scheduled = compiled.scheduled(&tags, is_master);
        let mut split: IndexMap<DepKey, Vec<Member<'a>>> = IndexMap::new();
        for member in members {
            let key = computed_deps(compiled, &scheduled, &member, evaluator)?;
            split.entry(key).or_default().push(member);
        }
        for (key, members) in split {
            let mut computed = HashMap::new();
            for (i, forward, backward) in key {
                let id = &compiled.task(i).id;
                computed.insert(
                    i,
                    (
                        compiled.compile_deps(id, "cross_depends", &forward)?,
                        compiled.compile_deps(id, "cross_depended_by", &backward)?,
                    ),
                );
            }
            classes.push(Class {
                tags: tags.clone(),
                is_master,
                members,
                scheduled: scheduled.clone(),
                computed,
                order: Vec::new(),
            });
        }
    }
    Ok(classes)
}
