//! Nodes: registration, admission, assignment to clusters, the model fields operators change, and
//! when each was last heard from.

use super::access::{args, id, sql_id, sql_ids, to_json, Arg, Row, Rows, Tx};
use super::catalog::cluster_row;
use super::enrollments;
use crate::store::{
    compact_facts, with_reported, NodeAdmission, NodeAssignment, NodeFilter, NodeRecord,
    NodeRegistration, NodeStatus, StoreError, StoreResult,
};
use plinth_common::json::{Json, Keys};
use std::collections::{BTreeMap, HashMap};

/// A node's columns as [`node_record`] reads them: its last-seen time is the later of its row's and
/// the one flushed to `node_seen`, its revision its latest list's.
fn node_columns(t: &dyn Tx) -> String {
    format!(
        "id, node_key, public_key, name, admission, status, cluster_id, pending_roles, \
         roles, tags, labels, rack, facts, registered_at, \
         {}(last_seen, COALESCE((SELECT s.last_seen FROM node_seen s WHERE s.node_id = nodes.id), 0)), \
         COALESCE((SELECT MAX(l.revision) FROM task_lists l WHERE l.node_id = nodes.id), 0), model",
        t.dialect().greatest()
    )
}

/// The facts column of [`node_columns`].
const FACTS: usize = 12;

/// How many nodes wait to be accepted (on every registration of a new discovered node).
pub(crate) const COUNT_DISCOVERED: &str =
    "SELECT COUNT(*) FROM nodes WHERE admission = 'discovered'";
/// Whether another node has a name (on every registration of a new node).
/// An enrolled server's name is taken too, until its own node has it.
pub(crate) const COUNT_NAME_TAKEN: &str =
    "SELECT (SELECT COUNT(*) FROM nodes WHERE name = $1 AND id != $2) \
     + (SELECT COUNT(*) FROM enrollments WHERE name = $1 AND (node_id IS NULL OR node_id != $2))";

/// How many nodes' records one statement reads or writes where a step changes thousands of nodes
/// (one in the unit tests, so the store suite's few nodes take several statements).
pub(crate) const NODES_PER_STATEMENT: usize = if cfg!(test) { 1 } else { 2_000 };

/// An admission as stored.
pub(crate) fn admission_text(a: NodeAdmission) -> &'static str {
    match a {
        NodeAdmission::Discovered => "discovered",
        NodeAdmission::Accepted => "accepted",
    }
}

/// A node's record from its row; its facts left `null` unless `with_facts`.
fn node_record(r: &dyn Row, with_facts: bool) -> StoreResult<NodeRecord> {
    let admission = r.text(4)?;
    let status = r.text(5)?;
    Ok(NodeRecord {
        id: r.id(0)?,
        node_key: r.string(1)?,
        public_key: r.string(2)?,
        name: r.string(3)?,
        admission: match admission {
            "accepted" => NodeAdmission::Accepted,
            "discovered" => NodeAdmission::Discovered,
            other => return Err(StoreError::Corrupt(format!("node admission {other:?}"))),
        },
        status: match status {
            "discover" => NodeStatus::Discover,
            "deploying" => NodeStatus::Deploying,
            "provisioning" => NodeStatus::Provisioning,
            "provisioned" => NodeStatus::Provisioned,
            "ready" => NodeStatus::Ready,
            "error" => NodeStatus::Error,
            other => return Err(StoreError::Corrupt(format!("node status {other:?}"))),
        },
        cluster_id: r.opt_id(6)?,
        pending_roles: r.json(7, "node pending_roles")?,
        roles: r.json(8, "node roles")?,
        tags: r.json(9, "node tags")?,
        labels: r.json(10, "node labels")?,
        rack: r.opt_string(11)?,
        facts: if with_facts {
            r.json(FACTS, "node facts")?
        } else {
            serde_json::Value::Null
        },
        registered_at_ms: r.int(13)?,
        last_seen_ms: r.int(14)?,
        revision: r.id(15)?,
        model: r.json(16, "node model")?,
    })
}

/// The nodes `where_clause` selects, by id.
pub(crate) fn query_nodes(
    t: &dyn Tx,
    where_clause: &str,
    args: &[Arg<'_>],
) -> StoreResult<Vec<NodeRecord>> {
    let sql = format!(
        "SELECT {} FROM nodes {where_clause} ORDER BY id",
        node_columns(t)
    );
    t.rows(&sql, args, |r| node_record(r, true))
}

/// As [`query_nodes`], each node's facts read apart as the compact tree a deployment holds, their
/// keys shared through `keys` (the records' own facts are `null`): a deployment's start reads every
/// node of the cluster, and the facts as `serde_json` trees were its largest part.
pub(crate) fn query_nodes_compact(
    t: &dyn Tx,
    where_clause: &str,
    args: &[Arg<'_>],
    keys: &mut Keys,
) -> StoreResult<(Vec<NodeRecord>, Vec<Json>)> {
    let sql = format!(
        "SELECT {} FROM nodes {where_clause} ORDER BY id",
        node_columns(t)
    );
    let (mut nodes, mut facts) = (Vec::new(), Vec::new());
    t.each(&sql, args, &mut |r| {
        facts.push(compact_facts(r.text(FACTS)?, keys)?);
        nodes.push(node_record(r, false)?);
        Ok(())
    })?;
    Ok((nodes, facts))
}

/// One node; `NotFound` when there is none.
pub(crate) fn one_node(t: &dyn Tx, node_id: u64) -> StoreResult<NodeRecord> {
    query_nodes(t, "WHERE id = $1", args![sql_id(node_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "node",
            id: node_id.to_string(),
        })
}

/// Those of these nodes that exist, by id.
fn known_nodes(t: &dyn Tx, node_ids: &[u64]) -> StoreResult<HashMap<u64, NodeRecord>> {
    let ids = sql_ids(node_ids);
    let clause = format!("WHERE id {}", t.dialect().in_list(1));
    Ok(query_nodes(t, &clause, args![&ids])?
        .into_iter()
        .map(|n| (n.id, n))
        .collect())
}

/// These nodes (each once, in id order); a missing one is `NotFound`.
pub(crate) fn nodes_by_id(t: &dyn Tx, node_ids: &[u64]) -> StoreResult<Vec<NodeRecord>> {
    if node_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = sql_ids(node_ids);
    let clause = format!("WHERE id {}", t.dialect().in_list(1));
    let nodes = query_nodes(t, &clause, args![&ids])?;
    if let Some(missing) = node_ids
        .iter()
        .find(|n| nodes.binary_search_by_key(*n, |node| node.id).is_err())
    {
        return Err(StoreError::NotFound {
            kind: "node",
            id: missing.to_string(),
        });
    }
    Ok(nodes)
}

/// Every node's id and name.
pub(crate) fn node_names(t: &dyn Tx) -> StoreResult<Vec<(u64, String)>> {
    t.rows("SELECT id, name FROM nodes ORDER BY id", args![], |r| {
        Ok((r.id(0)?, r.string(1)?))
    })
}

/// Nodes by status and admission, deployments by status (see [`crate::store::Store::counts`]).
pub(crate) fn counts(t: &dyn Tx) -> StoreResult<crate::store::Counts> {
    let count = |r: &dyn Row, i| -> StoreResult<u64> { Ok(u64::try_from(r.int(i)?).unwrap_or(0)) };
    Ok(crate::store::Counts {
        nodes: t.rows(
            "SELECT status, admission, COUNT(*) FROM nodes GROUP BY status, admission",
            args![],
            |r| Ok((r.string(0)?, r.string(1)?, count(r, 2)?)),
        )?,
        deployments: t.rows(
            "SELECT status, COUNT(*) FROM deployments GROUP BY status",
            args![],
            |r| Ok((r.string(0)?, count(r, 1)?)),
        )?,
    })
}

/// A page of nodes (see [`NodeFilter`]).
pub(crate) fn list_nodes_page(t: &dyn Tx, f: &NodeFilter) -> StoreResult<Vec<NodeRecord>> {
    let d = t.dialect();
    let lower_name = f.name.as_ref().map(|n| n.to_ascii_lowercase());
    let mut clauses = vec!["id > $1".to_string()];
    let mut params: Vec<Arg<'_>> = vec![Arg::Int(sql_id(f.after_id))];
    if let Some(status) = f.status {
        params.push(Arg::Text(status.as_str()));
        clauses.push(format!("status = ${}", params.len()));
    }
    if let Some(admission) = f.admission {
        params.push(Arg::Text(admission_text(admission)));
        clauses.push(format!("admission = ${}", params.len()));
    }
    if let Some(cluster) = f.cluster_id {
        params.push(Arg::Int(sql_id(cluster)));
        clauses.push(format!("cluster_id = ${}", params.len()));
    }
    if let Some(tag) = &f.tag {
        params.push(Arg::Text(tag));
        let n = params.len();
        clauses.push(format!(
            "({} OR {} OR {} OR {})",
            d.array_holds("nodes.tags", None, n),
            d.array_holds("nodes.roles", None, n),
            d.array_holds("nodes.pending_roles", None, n),
            d.array_holds("nodes.model", Some("tags_added"), n),
        ));
    }
    if let Some(name) = &lower_name {
        params.push(Arg::Text(name));
        clauses.push(d.contains("lower(name)", params.len()));
    }
    params.push(Arg::Int(i64::try_from(f.limit).unwrap_or(i64::MAX)));
    let clause = format!(
        "WHERE {} ORDER BY id LIMIT ${}",
        clauses.join(" AND "),
        params.len()
    );
    let sql = format!("SELECT {} FROM nodes {clause}", node_columns(t));
    t.rows(&sql, &params, |r| node_record(r, true))
}

/// Registers one node in a registration's transaction (see [`crate::store::Store::register_node`]).
pub(crate) fn register_one(
    t: &dyn Tx,
    reg: &NodeRegistration,
    admission: NodeAdmission,
) -> StoreResult<NodeRecord> {
    let existing = t.opt(
        "SELECT id FROM nodes WHERE node_key = $1",
        args![&reg.node_key],
        |r| r.int(0),
    )?;
    let enrolled = enrollments::matching(t, &reg.identity)?;
    let node_id = match (existing, enrolled) {
        (Some(node_id), enrolled) => {
            let node_id = id(node_id);
            // Known to be an enrolled server's node here; else asked only when it matters (below).
            let mut bound = enrolled
                .as_ref()
                .is_some_and(|e| e.node_id == Some(node_id));
            match enrolled {
                Some(e) if e.node_id.is_none() => {
                    // Discovered before it was enrolled: it becomes its enrollment's node now.
                    enrollments::bind(t, &e, node_id)?;
                    bound = true;
                }
                Some(e) if e.node_id != Some(node_id) => {
                    // A node of its own claims a server another node holds.
                    let holder = e.node_id.unwrap_or(node_id);
                    enrollments::refuse_claim(t, &e, holder, &reg.node_key, reg.now_ms)?;
                }
                _ => {}
            }
            refresh(t, node_id, reg, bound)?;
            node_id
        }
        (None, Some(e)) => match e.node_id {
            Some(holder) => {
                let node_id = enrollments::take_over(
                    t,
                    &e,
                    holder,
                    &reg.node_key,
                    &reg.public_key,
                    reg.now_ms,
                )?;
                refresh(t, node_id, reg, true)?;
                node_id
            }
            None => {
                let new_id = insert(t, reg, admission, &e.name)?;
                enrollments::bind(t, &e, new_id)?;
                new_id
            }
        },
        (None, None) => {
            if admission == NodeAdmission::Discovered {
                let waiting = t.int(COUNT_DISCOVERED, args![])?;
                if u64::try_from(waiting).unwrap_or(0) >= reg.max_discovered {
                    return Err(StoreError::Full(format!(
                        "{waiting} nodes are waiting to be accepted, the most this controller keeps \
                         (max_discovered_nodes): accept or delete some first"
                    )));
                }
            }
            let new_id = insert(t, reg, admission, &reg.name)?;
            // Names are unique: a second machine with the same hostname gets its id appended.
            let taken = t.int(COUNT_NAME_TAKEN, args![&reg.name, sql_id(new_id)])?;
            if taken > 0 {
                t.exec(
                    "UPDATE nodes SET name = $2 WHERE id = $1",
                    args![sql_id(new_id), &format!("{}-{new_id}", reg.name)],
                )?;
            }
            new_id
        }
    };
    one_node(t, node_id)
}

/// A known node's registration: its facts and last-seen time; what it says of its name, tags, labels
/// and rack is the record while it is discovered and not enrolled, and a report kept apart otherwise
/// (the operator's record, or the enrollment's, stands).
fn refresh(t: &dyn Tx, node_id: u64, reg: &NodeRegistration, kept: bool) -> StoreResult<()> {
    let node = one_node(t, node_id)?;
    // An accepted node's report is kept apart whatever it is; only a discovered one's asks whether it
    // is an enrolled server's (one query fewer on every accepted node's registration).
    if kept || node.admission == NodeAdmission::Accepted || enrollments::is_bound(t, node_id)? {
        let fields = with_reported(&node, reg);
        t.exec(
            "UPDATE nodes SET facts = $2, last_seen = $3, model = $4 WHERE id = $1",
            args![
                sql_id(node_id),
                &to_json(&reg.facts),
                reg.now_ms,
                &to_json(&fields)
            ],
        )?;
    } else {
        t.exec(
            "UPDATE nodes SET facts = $2, tags = $3, labels = $4, rack = $5, last_seen = $6 \
             WHERE id = $1",
            args![
                sql_id(node_id),
                &to_json(&reg.facts),
                &to_json(&reg.tags),
                &to_json(&reg.labels),
                &reg.rack,
                reg.now_ms
            ],
        )?;
    }
    Ok(())
}

/// A new node's row, named `name`; answers its id.
fn insert(
    t: &dyn Tx,
    reg: &NodeRegistration,
    admission: NodeAdmission,
    name: &str,
) -> StoreResult<u64> {
    let new_id = t.int(
        "INSERT INTO nodes (node_key, public_key, name, admission, facts, tags, labels, rack, \
         registered_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
        args![
            &reg.node_key,
            &reg.public_key,
            name,
            admission_text(admission),
            &to_json(&reg.facts),
            &to_json(&reg.tags),
            &to_json(&reg.labels),
            &reg.rack,
            reg.now_ms
        ],
    )?;
    Ok(id(new_id))
}

/// Writes a node's roles, pending roles and model fields as `change` leaves them.
pub(crate) fn modify_node(
    t: &dyn Tx,
    node_id: u64,
    change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
) -> StoreResult<NodeRecord> {
    let mut node = one_node(t, node_id)?;
    let name = node.name.clone();
    change(&mut node)?;
    if node.name != name {
        let taken = t.opt(
            "SELECT id FROM nodes WHERE name = $1 AND id <> $2",
            args![&node.name, sql_id(node_id)],
            |r| r.id(0),
        )?;
        if let Some(other) = taken {
            return Err(StoreError::Conflict(format!(
                "node {other} is named {:?} already",
                node.name
            )));
        }
    }
    t.exec(
        "UPDATE nodes SET roles = $2, pending_roles = $3, model = $4, name = $5, labels = $6 \
         WHERE id = $1",
        args![
            sql_id(node_id),
            &to_json(&node.roles),
            &to_json(&node.pending_roles),
            &to_json(&node.model),
            &node.name,
            &to_json(&node.labels)
        ],
    )?;
    one_node(t, node_id)
}

/// Sets each listed node's `primary_tags`.
pub(crate) fn save_primaries(t: &dyn Tx, primaries: &[(u64, Vec<String>)]) -> StoreResult<()> {
    for (node_id, tags) in primaries {
        modify_node(t, *node_id, &mut |n| {
            n.model.primary_tags = tags.clone();
            Ok(())
        })?;
    }
    Ok(())
}

/// Sets a node's admission.
pub(crate) fn set_admission(
    t: &dyn Tx,
    node_id: u64,
    admission: NodeAdmission,
) -> StoreResult<NodeRecord> {
    one_node(t, node_id)?;
    t.exec(
        "UPDATE nodes SET admission = $2 WHERE id = $1",
        args![sql_id(node_id), admission_text(admission)],
    )?;
    one_node(t, node_id)
}

/// Deletes a node not taking part in a running deployment, with its liveness and refusals.
pub(crate) fn delete_node(t: &dyn Tx, node_id: u64) -> StoreResult<()> {
    let node = one_node(t, node_id)?;
    if node.status == NodeStatus::Deploying {
        return Err(StoreError::Conflict(format!(
            "node {node_id} takes part in a running deployment"
        )));
    }
    enrollments::unbind_node(t, node_id)?;
    for sql in [
        "DELETE FROM nodes WHERE id = $1",
        "DELETE FROM node_seen WHERE node_id = $1",
        "DELETE FROM refusals WHERE node_id = $1",
    ] {
        t.exec(sql, args![sql_id(node_id)])?;
    }
    Ok(())
}

/// Each node's latest time of those given, by id (the rows [`touch_nodes`] writes).
pub(crate) fn latest_seen(seen: &[(u64, i64)]) -> (Vec<i64>, Vec<i64>) {
    let mut latest: BTreeMap<i64, i64> = BTreeMap::new();
    for (node_id, at) in seen {
        let t = latest.entry(sql_id(*node_id)).or_insert(*at);
        *t = (*t).max(*at);
    }
    latest.into_iter().unzip()
}

/// Records when nodes were last heard from: each node once, with its latest time, in id order; a
/// node that no longer exists is left out.
pub(crate) fn touch_nodes(t: &dyn Tx, ids: &[i64], times: &[i64]) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let tail = format!(
        "ON CONFLICT (node_id) DO UPDATE SET last_seen = {}(node_seen.last_seen, excluded.last_seen)",
        t.dialect().greatest()
    );
    t.dialect().insert_rows(
        t,
        &Rows {
            table: "node_seen",
            columns: &[("node_id", Arg::Ints(ids)), ("last_seen", Arg::Ints(times))],
            filter: "EXISTS (SELECT 1 FROM nodes WHERE nodes.id = v.node_id)",
            tail: &tail,
            set: "",
        },
    )
}

/// Assigns nodes to a cluster with pending roles. Checked in the order given, then written (the
/// last assignment of a node given twice wins, as one at a time would leave it).
pub(crate) fn assign_nodes(
    t: &dyn Tx,
    cluster_id: u64,
    nodes: &[NodeAssignment],
) -> StoreResult<()> {
    cluster_row(t, cluster_id)?;
    let ids: Vec<u64> = nodes.iter().map(|a| a.id).collect();
    let known = known_nodes(t, &ids)?;
    let mut last: HashMap<u64, usize> = HashMap::with_capacity(nodes.len());
    for (i, a) in nodes.iter().enumerate() {
        let node = known.get(&a.id).ok_or_else(|| StoreError::NotFound {
            kind: "node",
            id: a.id.to_string(),
        })?;
        if let Some(other) = node.cluster_id.filter(|c| *c != cluster_id) {
            return Err(StoreError::Conflict(format!(
                "node {} belongs to cluster {other}",
                a.id
            )));
        }
        last.insert(a.id, i);
    }
    let (mut rows, mut roles, mut models) = (Vec::new(), Vec::new(), Vec::new());
    for (i, a) in nodes.iter().enumerate() {
        let Some(node) = known.get(&a.id).filter(|_| last.get(&a.id) == Some(&i)) else {
            continue;
        };
        let mut fields = node.model.clone();
        if node.cluster_id.is_none() {
            fields.pending_addition = true;
        }
        rows.push(sql_id(a.id));
        roles.push(to_json(&a.roles));
        models.push(to_json(&fields));
    }
    let cluster = vec![sql_id(cluster_id); rows.len()];
    t.dialect().update_rows(
        t,
        &Rows {
            table: "nodes",
            columns: &[
                ("id", Arg::Ints(&rows)),
                ("cluster_id", Arg::Ints(&cluster)),
                ("pending_roles", Arg::Strings(&roles)),
                ("model", Arg::Strings(&models)),
            ],
            filter: "",
            tail: "",
            set: "",
        },
    )
}

/// Takes nodes out of their cluster (each must be in it, and not deploying).
pub(crate) fn unassign_nodes(t: &dyn Tx, cluster_id: u64, node_ids: &[u64]) -> StoreResult<()> {
    let known = known_nodes(t, node_ids)?;
    for node_id in node_ids {
        let node = known.get(node_id).ok_or_else(|| StoreError::NotFound {
            kind: "node",
            id: node_id.to_string(),
        })?;
        if node.cluster_id != Some(cluster_id) {
            return Err(StoreError::Conflict(format!(
                "node {node_id} is not in cluster {cluster_id}"
            )));
        }
        if node.status == NodeStatus::Deploying {
            return Err(StoreError::Conflict(format!(
                "node {node_id} takes part in a running deployment"
            )));
        }
    }
    let ids = sql_ids(node_ids);
    t.exec(
        &format!(
            "UPDATE nodes SET cluster_id = NULL, pending_roles = '[]', roles = '[]', \
             status = 'discover', model = '{{}}' WHERE id {}",
            t.dialect().in_list(1)
        ),
        args![&ids],
    )?;
    Ok(())
}

/// Marks nodes as deploying.
pub(crate) fn set_deploying(t: &dyn Tx, node_ids: &[u64]) -> StoreResult<()> {
    let ids = sql_ids(node_ids);
    t.exec(
        &format!(
            "UPDATE nodes SET status = 'deploying' WHERE id {}",
            t.dialect().in_list(1)
        ),
        args![&ids],
    )?;
    Ok(())
}
