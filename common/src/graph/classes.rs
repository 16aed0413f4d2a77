//! Node classes: nodes with the same tags (and the same computed structure and dependencies) get the
//! same tasks in the same order, so each class is resolved and ordered once and shared by its nodes.

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
    /// The variant of the graph with computed structure the class's nodes run (`None`: as written).
    pub(crate) variant: Option<usize>,
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

/// The graph as written, and its variants with computed structure (see `structure`).
pub(crate) struct Graphs<'g> {
    pub(crate) base: Compiled<'g>,
    pub(crate) variants: Vec<Compiled<'g>>,
}

impl<'g> Graphs<'g> {
    /// The compiled graph a class of nodes runs: its variant's, or the graph as written.
    pub(crate) fn of(&self, class: &Class<'_>) -> &Compiled<'g> {
        self.get(class.variant)
    }

    /// The variant `v`, or the graph as written.
    pub(crate) fn get(&self, v: Option<usize>) -> &Compiled<'g> {
        match v {
            Some(v) => &self.variants[v],
            None => &self.base,
        }
    }
}

/// One node to place: its tags, whether it is the controller's own host, and its variant.
pub(crate) struct Placed<'a> {
    pub(crate) tags: NodeTags,
    pub(crate) is_master: bool,
    pub(crate) member: Member<'a>,
    pub(crate) variant: Option<usize>,
}

/// Groups the members into classes (ordered later, all together, by `schedule`): the same tags, the
/// same computed structure and the same computed cross dependencies.
pub(crate) fn build_classes<'a>(
    graphs: &Graphs<'_>,
    placed: Vec<Placed<'a>>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Vec<Class<'a>>, ResolveError> {
    type GroupKey = (bool, NodeTags, Option<usize>);
    // The controller's own host first (`!is_master` sorts it ahead), then by tags.
    let mut by_key: BTreeMap<(bool, NodeTags, Option<usize>), Vec<Member<'a>>> = BTreeMap::new();
    for p in placed {
        let key: GroupKey = (!p.is_master, p.tags, p.variant);
        by_key.entry(key).or_default().push(p.member);
    }
    let mut classes = Vec::new();
    for ((not_master, tags, variant), members) in by_key {
        let is_master = !not_master;
        let compiled = graphs.get(variant);
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
                variant,
            });
        }
    }
    Ok(classes)
}

/// The controller's own host as a member of the plan.
pub(crate) fn master_member<'a>() -> (NodeTags, Member<'a>) {
    (
        NodeTags::from_tags(&[MASTER_TAG]),
        Member {
            node: None,
            id: MASTER_NODE_ID,
            name: MASTER_TAG.to_string(),
        },
    )
}
