//! Tag CRUD, tag assignment, role conflicts, restrictions and limits, as pure checks (seed 000, seed 003).

use std::collections::BTreeMap;
use thiserror::Error;

use super::catalog::{Catalog, Owner};
use super::instances::{instance_base, is_instance_tag};
use super::primary::PRIMARY_PREFIX;
use crate::graph::{truthy, FieldEvaluator, Finding};
use crate::model::{LimitValue, Limits, Node};

/// Why a tag or role operation is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TagError {
    /// The name cannot be a tag's name.
    #[error("tag name {name:?} is invalid: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A tag of that name exists already.
    #[error("tag {0:?} already exists")]
    Exists(String),
    /// No tag of that name exists.
    #[error("tag {0:?} does not exist")]
    UnknownTag(String),
    /// The tag belongs to a role or a plugin.
    #[error("tag {tag:?} is owned by {owner} and cannot be {action}")]
    ReadOnly {
        /// The tag.
        tag: String,
        /// Who owns it (`role "controller"`, `plugin "x"`).
        owner: String,
        /// `modified` or `deleted`.
        action: String,
    },
    /// A role lists a tag that is not defined.
    #[error("role {role:?} lists tag {tag:?}, which is not defined in tags_metadata")]
    UnknownTagInRole {
        /// The role.
        role: String,
        /// The tag.
        tag: String,
    },
    /// No role of that name exists.
    #[error("role {0:?} does not exist")]
    UnknownRole(String),
    /// Two roles that conflict would share a node.
    #[error("role {role:?} conflicts with role {other:?} on node {node}")]
    Conflict {
        /// The role being assigned.
        role: String,
        /// The role already there.
        other: String,
        /// The node.
        node: String,
    },
    /// A restriction of the role holds.
    #[error("role {role:?} cannot be assigned to node {node}: {message}")]
    Restricted {
        /// The role.
        role: String,
        /// The node.
        node: String,
        /// The restriction's message (or its condition when it has none).
        message: String,
    },
    /// A node is said to be the primary of a tag it may not be the primary of: one another node is
    /// the primary of, one that has no primary, or one it does not carry.
    #[error("node {node} cannot be the primary of tag {tag:?}: {reason}")]
    Primary {
        /// The node.
        node: String,
        /// The tag.
        tag: String,
        /// Why.
        reason: String,
    },
    /// A declared node breaks a rule.
    #[error("node {node}: {error}")]
    OnNode {
        /// The node.
        node: String,
        /// The rule it breaks.
        error: Box<TagError>,
    },
    /// A restriction's condition could not be evaluated.
    #[error("role {role:?}: restriction {condition:?} cannot be evaluated: {message}")]
    Evaluation {
        /// The role.
        role: String,
        /// The condition.
        condition: String,
        /// Why.
        message: String,
    },
}

fn check_name(name: &str) -> Result<(), TagError> {
    let bad = |reason: &str| {
        Err(TagError::InvalidName {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.starts_with(PRIMARY_PREFIX) {
        return bad("`primary-` tags are elected, not defined");
    }
    if name == "*" || name == "master" || name == "self" {
        return bad("the name is reserved");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return bad("use letters, digits, `-`, `_` and `.`");
    }
    Ok(())
}

fn owner_text(catalog: &Catalog, tag: &str, owner: &Owner) -> String {
    let role = catalog
        .roles
        .iter()
        .find(|(name, r)| r.meta.tags_or_name(name).contains(&tag))
        .map(|(name, _)| name.clone());
    match (role, owner) {
        (Some(role), _) => format!("role {role:?}"),
        (None, Owner::Plugin(p)) => format!("plugin {p:?}"),
        (None, Owner::Release) => "the release".to_string(),
        (None, Owner::Cluster) => "the cluster".to_string(),
    }
}

/// Checks that a user-defined tag named `name` may be created (for a release or a cluster).
pub fn validate_tag_create(catalog: &Catalog, name: &str) -> Result<(), TagError> {
    check_name(name)?;
    if catalog.tags.contains_key(name) {
        return Err(TagError::Exists(name.to_string()));
    }
    Ok(())
}

fn writable(catalog: &Catalog, name: &str, action: &str) -> Result<(), TagError> {
    let tag = catalog
        .tags
        .get(name)
        .ok_or_else(|| TagError::UnknownTag(name.to_string()))?;
    if tag.read_only {
        return Err(TagError::ReadOnly {
            tag: name.to_string(),
            owner: owner_text(catalog, name, &tag.owner),
            action: action.to_string(),
        });
    }
    Ok(())
}

/// Checks that tag `name`'s metadata may be modified: it exists and is user-defined.
pub fn validate_tag_modify(catalog: &Catalog, name: &str) -> Result<(), TagError> {
    writable(catalog, name, "modified")
}

/// Checks that tag `name` may be deleted: it exists and is user-defined (role-owned tags are read-only).
pub fn validate_tag_delete(catalog: &Catalog, name: &str) -> Result<(), TagError> {
    writable(catalog, name, "deleted")
}

/// Checks that `tag` may be assigned to a node: a known tag, or an instance of one (`mysql:1`).
pub fn validate_tag_assignment(catalog: &Catalog, tag: &str) -> Result<(), TagError> {
    if is_instance_tag(tag) {
        let base = instance_base(tag).unwrap_or_default();
        let instance = tag.split_once(':').map(|(_, i)| i).unwrap_or_default();
        if instance.is_empty() || instance.contains(':') {
            return Err(TagError::InvalidName {
                name: tag.to_string(),
                reason: "an instance tag is `tag:instance`".to_string(),
            });
        }
        if !catalog.tags.contains_key(base) {
            return Err(TagError::UnknownTag(base.to_string()));
        }
        return Ok(());
    }
    if tag.starts_with(PRIMARY_PREFIX) {
        return Err(TagError::InvalidName {
            name: tag.to_string(),
            reason: "`primary-` tags are elected, not assigned".to_string(),
        });
    }
    if !catalog.tags.contains_key(tag) {
        return Err(TagError::UnknownTag(tag.to_string()));
    }
    Ok(())
}

/// Every role that lists a tag not defined in any `tags_metadata`.
pub fn validate_catalog(catalog: &Catalog) -> Vec<TagError> {
    let mut out = Vec::new();
    for (role, entry) in &catalog.roles {
        for tag in &entry.meta.tags {
            if !catalog.tags.contains_key(tag) {
                out.push(TagError::UnknownTagInRole {
                    role: role.clone(),
                    tag: tag.clone(),
                });
            }
        }
    }
    out
}

/// Checks nodes as they are declared (a cluster file read offline) by the rules the controller applies
/// when an operator gives a node roles and tags: every role exists (as [`check_assignment`] requires),
/// every added tag may be assigned ([`validate_tag_assignment`]: no `primary-` tag, which is elected),
/// and a node said to be a primary (`primary_tags`) carries that tag, the tag has a primary, and no
/// other node is said to be its primary. Every violation, in node order.
pub fn check_declared_nodes(catalog: &Catalog, nodes: &[Node]) -> Vec<TagError> {
    let mut out = Vec::new();
    let mut primaries: BTreeMap<&str, String> = BTreeMap::new();
    for node in nodes {
        let on_node = |error: TagError| TagError::OnNode {
            node: node.display_name(),
            error: Box::new(error),
        };
        for role in node.roles.iter().chain(&node.pending_roles) {
            if catalog.role(role).is_none() {
                out.push(on_node(TagError::UnknownRole(role.clone())));
            }
        }
        for tag in &node.tags_added {
            if let Err(e) = validate_tag_assignment(catalog, tag) {
                out.push(on_node(e));
            }
        }
        let carried = super::node_tags(node, catalog);
        for tag in &node.primary_tags {
            let refuse = |reason: String| TagError::Primary {
                node: node.display_name(),
                tag: tag.clone(),
                reason,
            };
            if !catalog.has_primary(tag) {
                out.push(refuse(
                    "the tag has no primary (has_primary is not set)".into(),
                ));
            } else if !carried.carries(tag) {
                out.push(refuse("the node does not carry the tag".into()));
            } else if let Some(first) = primaries.insert(tag.as_str(), node.display_name()) {
                out.push(refuse(format!(
                    "node {first} is its primary already: a tag has one primary, which the controller elects"
                )));
            }
        }
    }
    out
}

/// Checks that `role` may be added to `node` (whose current roles and pending roles count): the role
/// exists, conflicts neither way with a role already there, and none of its blocking restrictions holds
/// (conditions go through `evaluator`; the error carries the restriction's message).
pub fn check_assignment(
    catalog: &Catalog,
    node: &Node,
    role: &str,
    evaluator: &dyn FieldEvaluator,
) -> Result<(), TagError> {
    let entry = catalog
        .role(role)
        .ok_or_else(|| TagError::UnknownRole(role.to_string()))?;
    let node_name = node.display_name();
    for other in node.roles.iter().chain(&node.pending_roles) {
        if other == role {
            continue;
        }
        let theirs = catalog
            .role(other)
            .is_some_and(|o| o.meta.conflicts.excludes(role));
        if entry.meta.conflicts.excludes(other) || theirs {
            return Err(TagError::Conflict {
                role: role.to_string(),
                other: other.clone(),
                node: node_name,
            });
        }
    }
    for restriction in entry
        .meta
        .restrictions
        .iter()
        .filter(|r| r.blocks_assignment())
    {
        let holds = evaluator
            .cluster_expression(&restriction.condition)
            .map_err(|message| TagError::Evaluation {
                role: role.to_string(),
                condition: restriction.condition.clone(),
                message,
            })?;
        if truthy(&holds) {
            return Err(TagError::Restricted {
                role: role.to_string(),
                node: node_name,
                message: restriction
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("restricted by {}", restriction.condition)),
            });
        }
    }
    Ok(())
}

/// A role-limit finding (an alias kept for readability at call sites).
pub type LimitFinding = Finding;

/// Checks every role's `limits` against the nodes carrying it (roles and pending roles, nodes pending
/// deletion excluded): below `min` or above `max` is an error, below `recommended` a warning. Overrides
/// whose condition holds replace the values. Limits given as expressions go through `evaluator`; one
/// that cannot be evaluated is reported as a warning. A role no node carries is checked only against
/// `min`, and only when none of its blocking restrictions holds (an unavailable role needs no nodes).
pub fn check_limits(
    catalog: &Catalog,
    nodes: &[Node],
    evaluator: &dyn FieldEvaluator,
) -> Vec<LimitFinding> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for node in nodes.iter().filter(|n| !n.pending_deletion) {
        let mut seen: Vec<&str> = Vec::new();
        for role in node.roles.iter().chain(&node.pending_roles) {
            if !seen.contains(&role.as_str()) {
                seen.push(role);
                *counts.entry(role).or_default() += 1;
            }
        }
    }
    let mut out = Vec::new();
    for (role, entry) in &catalog.roles {
        let Some(limits) = &entry.meta.limits else {
            continue;
        };
        let count = counts.get(role.as_str()).copied().unwrap_or(0);
        if count == 0 {
            let available = entry
                .meta
                .restrictions
                .iter()
                .filter(|r| r.blocks_assignment())
                .all(|r| {
                    evaluator
                        .cluster_expression(&r.condition)
                        .is_ok_and(|v| !truthy(&v))
                });
            if !available {
                continue;
            }
        }
        let effective = effective_limits(role, limits, evaluator, &mut out);
        let mut number = |what: &str, v: &Option<LimitValue>| -> Option<u64> {
            match v.as_ref()? {
                LimitValue::Number(n) => Some(*n),
                LimitValue::Expression(e) => match evaluator.cluster_expression(e) {
                    // Nailgun reads a limit with `int()`: `"3"` (a text setting) is 3.
                    Ok(value) => count_of(&value).or_else(|| {
                        out.push(Finding::warning(
                            "role_limit",
                            format!("role {role:?}: {what} limit {e:?} is not a count ({value})"),
                        ));
                        None
                    }),
                    Err(message) => {
                        out.push(Finding::warning(
                            "role_limit",
                            format!(
                                "role {role:?}: {what} limit {e:?} cannot be evaluated: {message}"
                            ),
                        ));
                        None
                    }
                },
            }
        };
        let min = number("min", &effective.min.0);
        let max = if count > 0 {
            number("max", &effective.max.0)
        } else {
            None
        };
        let recommended = if count > 0 {
            number("recommended", &effective.recommended.0)
        } else {
            None
        };
        let count64 = count as u64;
        let with = |default: String, message: &Option<String>| match message {
            Some(m) => format!("{default}: {m}"),
            None => default,
        };
        if let Some(min) = min.filter(|m| count64 < *m) {
            out.push(Finding::error(
                "role_limit",
                with(
                    format!("role {role:?} needs at least {min} node(s), {count} assigned"),
                    &effective.min.1,
                ),
            ));
        }
        if let Some(max) = max.filter(|m| count64 > *m) {
            out.push(Finding::error(
                "role_limit",
                with(
                    format!("role {role:?} allows at most {max} node(s), {count} assigned"),
                    &effective.max.1,
                ),
            ));
        }
        if let Some(rec) = recommended.filter(|r| count64 < *r) {
            out.push(Finding::warning(
                "role_limit",
                with(
                    format!("role {role:?}: {rec} node(s) recommended, {count} assigned"),
                    &effective.recommended.1,
                ),
            ));
        }
    }
    out
}

/// A count as Nailgun's `int()` reads one: a whole number, or text holding one.
fn count_of(value: &serde_json::Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

/// A limit value and the message of the override that set it.
type Limit = (Option<LimitValue>, Option<String>);

struct Effective {
    min: Limit,
    max: Limit,
    recommended: Limit,
}

fn effective_limits(
    role: &str,
    limits: &Limits,
    evaluator: &dyn FieldEvaluator,
    out: &mut Vec<Finding>,
) -> Effective {
    let mut e = Effective {
        min: (limits.min.clone(), None),
        max: (limits.max.clone(), None),
        recommended: (limits.recommended.clone(), None),
    };
    for o in &limits.overrides {
        match evaluator.cluster_expression(&o.condition) {
            Ok(v) if truthy(&v) => {
                if o.min.is_some() {
                    e.min = (o.min.clone(), o.message.clone());
                }
                if o.max.is_some() {
                    e.max = (o.max.clone(), o.message.clone());
                }
                if o.recommended.is_some() {
                    e.recommended = (o.recommended.clone(), o.message.clone());
                }
            }
            Ok(_) => {}
            Err(message) => out.push(Finding::warning(
                "role_limit",
                format!(
                    "role {role:?}: limit override {:?} cannot be evaluated: {message}",
                    o.condition
                ),
            )),
        }
    }
    e
}
