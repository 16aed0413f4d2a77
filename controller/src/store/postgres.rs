//! The PostgreSQL backend, for a database outside the controller (`database_url = "postgres://..."`).
//!
//! Every method is one transaction, as with SQLite. Writes run at `SERIALIZABLE`, reads at
//! `REPEATABLE READ, READ ONLY` (one snapshot): where SQLite relied on its single writer (the
//! revision counter, one running deployment per cluster, a result stored only while its deployment
//! runs, the bound on discovered nodes, unique node names), PostgreSQL's serializable isolation gives
//! the same outcome as some one-at-a-time order, and a transaction it refuses to serialize (or a
//! deadlock) is run again from the start, up to [`ATTEMPTS`] times. The one exception is the flush of
//! agents' last-seen times ([`Store::touch_nodes`]): a blind upsert into `node_seen` at `READ
//! COMMITTED`, a table no other write touches, so that liveness, written every few seconds for
//! thousands of nodes by every controller, never makes a deployment's step fail to serialize.
//!
//! See [`bridge`] for how the synchronous trait meets tokio-postgres, and [`connect`] for the URL.

use super::*;
use crate::clock::now_ms;
use bridge::{Lease, Params, Pool, Tx};
use plinth_common::json::{Json, Keys};
use std::collections::HashMap;
use tokio_postgres::Row;

mod bridge;
mod cluster;
pub mod connect;
mod listen;
mod model;
mod schema;
pub mod scratch;
#[cfg(test)]
mod tests;

/// The most times one method's transaction is tried (the first included) when PostgreSQL cannot
/// serialize it with others running at the same time.
pub const ATTEMPTS: u32 = 20;

/// The most connections one controller opens by default.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// PostgreSQL-backed [`Store`].
pub struct PgStore {
    pool: Pool,
    /// One connection of its own for the controller's heartbeat and the sequencing lease: a beat never
    /// waits for a connection behind bulk work (a large deployment's start, its results, its reads),
    /// which could otherwise hold every pooled one past the lease's expiry.
    beat: Pool,
    /// Checked by every recorded step when set (see [`Store::set_fence`]).
    fence: std::sync::Mutex<Option<Fence>>,
    /// Where the listener connects; taken by the first [`Store::listen`].
    listen_target: std::sync::Mutex<Option<connect::Target>>,
    /// Drives the connections' sockets; shut down without waiting when the store is dropped.
    runtime: Option<tokio::runtime::Runtime>,
    /// Drives the beat's connection alone, so that no bulk transfer on the others delays it.
    beat_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        for rt in [self.runtime.take(), self.beat_runtime.take()]
            .into_iter()
            .flatten()
        {
            rt.shutdown_background();
        }
    }
}

/// Writes that would conflict with each other whenever they overlap, so they take turns (a
/// session-level advisory lock of this key, taken before `BEGIN`) instead of being refused and retried
/// over and over under load: registrations (each counts the discovered nodes and looks for its name,
/// which every other registration changes), and publications of lists (each takes the next revision
/// from the one counter). Other writes rarely overlap on the same rows and run side by side.
#[derive(Clone, Copy)]
enum Queue {
    Registration = 0x706c_0001,
    Revision = 0x706c_0002,
}

/// How a transaction begins.
#[derive(Clone, Copy)]
enum Mode {
    Read,
    Write,
    /// `READ COMMITTED`: only for writes that conflict with nothing (see the module's text).
    Committed,
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    // The controller's own types always serialise.
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

fn id(v: i64) -> u64 {
    u64::try_from(v).unwrap_or_default()
}

fn sql_id(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Ids as an array parameter (`= ANY($n)`, `UNNEST`).
fn sql_ids(ids: &[u64]) -> Vec<i64> {
    ids.iter().map(|n| sql_id(*n)).collect()
}

/// Column `i` of a row, or a corrupt-data error naming `what`.
fn col<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    i: usize,
    what: &str,
) -> StoreResult<T> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

const NODE_COLUMNS: &str =
    "id, node_key, public_key, name, admission, status, cluster_id, pending_roles, \
    roles, tags, labels, rack, facts, registered_at, \
    GREATEST(last_seen, COALESCE((SELECT s.last_seen FROM node_seen s WHERE s.node_id = nodes.id), 0)), \
    COALESCE((SELECT MAX(l.revision) FROM task_lists l WHERE l.node_id = nodes.id), 0), model";

fn admission_text(a: NodeAdmission) -> &'static str {
    match a {
        NodeAdmission::Discovered => "discovered",
        NodeAdmission::Accepted => "accepted",
    }
}

fn node_from_row(row: &Row) -> StoreResult<NodeRecord> {
    node_record(row, true)
}

/// A node's record from its row; its facts left `null` unless `with_facts`.
fn node_record(row: &Row, with_facts: bool) -> StoreResult<NodeRecord> {
    let w = "node";
    let admission: String = col(row, 4, w)?;
    let status: String = col(row, 5, w)?;
    Ok(NodeRecord {
        id: id(col(row, 0, w)?),
        node_key: col(row, 1, w)?,
        public_key: col(row, 2, w)?,
        name: col(row, 3, w)?,
        admission: match admission.as_str() {
            "accepted" => NodeAdmission::Accepted,
            "discovered" => NodeAdmission::Discovered,
            other => return Err(StoreError::Corrupt(format!("node admission {other:?}"))),
        },
        status: match status.as_str() {
            "discover" => NodeStatus::Discover,
            "deploying" => NodeStatus::Deploying,
            "ready" => NodeStatus::Ready,
            "error" => NodeStatus::Error,
            other => return Err(StoreError::Corrupt(format!("node status {other:?}"))),
        },
        cluster_id: col::<Option<i64>>(row, 6, w)?.map(id),
        pending_roles: from_json(col(row, 7, w)?, "node pending_roles")?,
        roles: from_json(col(row, 8, w)?, "node roles")?,
        tags: from_json(col(row, 9, w)?, "node tags")?,
        labels: from_json(col(row, 10, w)?, "node labels")?,
        rack: col(row, 11, w)?,
        facts: if with_facts {
            from_json(col(row, 12, w)?, "node facts")?
        } else {
            serde_json::Value::Null
        },
        registered_at_ms: col(row, 13, w)?,
        last_seen_ms: col(row, 14, w)?,
        revision: id(col(row, 15, w)?),
        model: from_json(col(row, 16, w)?, "node model")?,
    })
}

fn query_nodes(t: &Tx, where_clause: &str, args: Params<'_>) -> StoreResult<Vec<NodeRecord>> {
    t.query(
        &format!("SELECT {NODE_COLUMNS} FROM nodes {where_clause} ORDER BY id"),
        args,
    )?
    .iter()
    .map(node_from_row)
    .collect()
}

/// As [`query_nodes`], each node's facts read apart as the compact tree a deployment holds, their
/// keys shared through `keys` (the records' own facts are `null`): a deployment's start reads every
/// node of the cluster, and the facts as `serde_json` trees were its largest part.
fn query_nodes_compact(
    t: &Tx,
    where_clause: &str,
    args: Params<'_>,
    keys: &mut Keys,
) -> StoreResult<(Vec<NodeRecord>, Vec<Json>)> {
    let rows = t.query(
        &format!("SELECT {NODE_COLUMNS} FROM nodes {where_clause} ORDER BY id"),
        args,
    )?;
    let (mut nodes, mut facts) = (
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
    );
    for row in &rows {
        let text: &str = col(row, 12, "node")?;
        facts.push(super::compact_facts(text, keys)?);
        nodes.push(node_record(row, false)?);
    }
    Ok((nodes, facts))
}

fn one_node(t: &Tx, node_id: u64) -> StoreResult<NodeRecord> {
    query_nodes(t, "WHERE id = $1", &[&sql_id(node_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "node",
            id: node_id.to_string(),
        })
}

/// Those of these nodes that exist, by id.
fn known_nodes(t: &Tx, node_ids: &[u64]) -> StoreResult<HashMap<u64, NodeRecord>> {
    let ids = sql_ids(node_ids);
    Ok(query_nodes(t, "WHERE id = ANY($1)", &[&ids])?
        .into_iter()
        .map(|n| (n.id, n))
        .collect())
}

/// These nodes (each once, in id order); a missing one is `NotFound`.
/// How many nodes' records one statement reads or writes where a step changes thousands of nodes
/// (one in the unit tests, so the store suite's few nodes take several statements).
const NODES_PER_STATEMENT: usize = if cfg!(test) { 1 } else { 2_000 };

fn nodes_by_id(t: &Tx, node_ids: &[u64]) -> StoreResult<Vec<NodeRecord>> {
    if node_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = sql_ids(node_ids);
    let nodes = query_nodes(t, "WHERE id = ANY($1)", &[&ids])?;
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

/// A deployment's columns as [`deployment_from_row`] reads them: its orchestration state is `state_gz`
/// (compressed) where it was written so, else the text in `state`.
const DEPLOYMENT_COLUMNS: &str =
    "id, cluster_id, graph_type, status, node_ids, options, state, created_at, finished_at, state_gz";
/// [`DEPLOYMENT_COLUMNS`] with the orchestration state left out (read as JSON `null`), for lists:
/// the state places every node in the strategy, megabytes for a large fleet.
const DEPLOYMENT_LIST_COLUMNS: &str =
    "id, cluster_id, graph_type, status, node_ids, options, 'null', created_at, finished_at, NULL::BYTEA";

fn deployment_from_row(row: &Row) -> StoreResult<DeploymentRecord> {
    let w = "deployment";
    let status: String = col(row, 3, w)?;
    Ok(DeploymentRecord {
        id: id(col(row, 0, w)?),
        cluster_id: id(col(row, 1, w)?),
        graph_type: col(row, 2, w)?,
        status: DeploymentStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("deployment status {status:?}")))?,
        node_ids: from_json(col(row, 4, w)?, "deployment node_ids")?,
        options: from_json(col(row, 5, w)?, "deployment options")?,
        state: super::compressed::stored_json(
            col(row, 9, w)?,
            col(row, 6, w)?,
            "deployment state",
        )?,
        created_at_ms: col(row, 7, w)?,
        finished_at_ms: col(row, 8, w)?,
    })
}

fn query_deployments(
    t: &Tx,
    columns: &str,
    where_clause: &str,
    args: Params<'_>,
) -> StoreResult<Vec<DeploymentRecord>> {
    t.query(
        &format!("SELECT {columns} FROM deployments {where_clause} ORDER BY id DESC"),
        args,
    )?
    .iter()
    .map(deployment_from_row)
    .collect()
}

/// One deployment with these columns; `NotFound` when there is none.
fn deployment_by_id(t: &Tx, columns: &str, dep_id: u64) -> StoreResult<DeploymentRecord> {
    query_deployments(t, columns, "WHERE id = $1", &[&sql_id(dep_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        })
}

const GRAPH_COLUMNS: &str = "id, owner_kind, owner_id, graph_type, name, tasks, node_filter";

fn graph_from_row(row: &Row) -> StoreResult<GraphRecord> {
    let w = "graph";
    let kind: String = col(row, 1, w)?;
    let owner_id = id(col(row, 2, w)?);
    let owner = match kind.as_str() {
        "release" => GraphOwner::Release(owner_id),
        "plugin" => GraphOwner::Plugin(owner_id),
        "cluster" => GraphOwner::Cluster(owner_id),
        other => return Err(StoreError::Corrupt(format!("graph owner kind {other:?}"))),
    };
    Ok(GraphRecord {
        id: id(col(row, 0, w)?),
        owner,
        graph_type: col(row, 3, w)?,
        body: GraphBody {
            name: col(row, 4, w)?,
            tasks: from_json(col(row, 5, w)?, "graph tasks")?,
            node_filter: col(row, 6, w)?,
        },
    })
}

impl PgStore {
    /// Connects to the database at `url` (see [`connect`]) and runs pending migrations, with at most
    /// [`DEFAULT_POOL_SIZE`] connections.
    pub fn open(url: &str) -> StoreResult<Self> {
        Self::open_with(url, DEFAULT_POOL_SIZE)
    }

    /// As [`PgStore::open`], with at most `pool_size` connections.
    pub fn open_with(url: &str, pool_size: usize) -> StoreResult<Self> {
        let target = connect::parse(url)?;
        let start = |name: &str| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(name)
                .enable_all()
                .build()
                .map_err(|e| {
                    StoreError::Database(format!("cannot start the database runtime: {e}"))
                })
        };
        let runtime = start("plinth-db")?;
        let beat_runtime = start("plinth-db-beat")?;
        let listen_target = std::sync::Mutex::new(Some(target.clone()));
        let beat = Pool::new(
            1,
            connect::connector(target.clone(), beat_runtime.handle().clone()),
        );
        let pool = Pool::new(
            pool_size,
            connect::connector(target, runtime.handle().clone()),
        );
        let store = PgStore {
            pool,
            beat,
            fence: std::sync::Mutex::new(None),
            listen_target,
            runtime: Some(runtime),
            beat_runtime: Some(beat_runtime),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Runs pending migrations in one transaction, under an advisory lock so that controllers
    /// starting at once migrate one after the other.
    fn migrate(&self) -> StoreResult<()> {
        let mut lease = self.pool.get()?;
        let t = Tx::new(&mut lease);
        let run = || -> StoreResult<()> {
            t.batch("BEGIN")?;
            t.exec(
                "SELECT pg_advisory_xact_lock($1)",
                &[&schema::MIGRATION_LOCK],
            )?;
            t.batch(schema::VERSION_TABLE)?;
            let applied: i32 = col(
                &t.one("SELECT version FROM plinth_schema", &[])?,
                0,
                "schema version",
            )?;
            let applied = usize::try_from(applied).unwrap_or(0);
            if applied > schema::MIGRATIONS.len() {
                return Err(StoreError::Database(format!(
                    "the database has schema version {applied}, newer than this controller's {}",
                    schema::MIGRATIONS.len()
                )));
            }
            for sql in schema::MIGRATIONS.iter().skip(applied) {
                t.batch(sql)?;
            }
            let version = i32::try_from(schema::MIGRATIONS.len()).unwrap_or(i32::MAX);
            t.exec("UPDATE plinth_schema SET version = $1", &[&version])?;
            t.batch("COMMIT")
        };
        let out = run();
        if out.is_err() {
            let _ = t.batch("ROLLBACK");
        }
        out
    }

    /// Runs `f` in one transaction: committed if it returns `Ok`, rolled back otherwise; run again
    /// from the start when PostgreSQL could not serialize it.
    fn tx<T>(
        &self,
        mode: Mode,
        queue: Option<Queue>,
        f: impl FnMut(&Tx) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.tx_on(&self.pool, mode, queue, f)
    }

    /// [`PgStore::tx`] on a connection of `pool`.
    fn tx_on<T>(
        &self,
        pool: &Pool,
        mode: Mode,
        queue: Option<Queue>,
        mut f: impl FnMut(&Tx) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let begin = match mode {
            Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            Mode::Write => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Mode::Committed => "BEGIN ISOLATION LEVEL READ COMMITTED",
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut lease = pool.get()?;
            let (out, retry, broken, large) = {
                let t = Tx::new(&mut lease);
                // Queued before the transaction begins, so that its snapshot is taken after the one
                // before it in the queue committed: the two never overlap, and never conflict.
                let queued = match queue {
                    Some(q) => t
                        .exec("SELECT pg_advisory_lock($1)", &[&(q as i64)])
                        .map(|_| ()),
                    None => Ok(()),
                };
                let mut committing = false;
                let out = queued
                    .and_then(|()| t.batch(begin))
                    .and_then(|()| f(&t))
                    .and_then(|v| {
                        committing = true;
                        t.batch("COMMIT")?;
                        Ok(v)
                    });
                // A failed COMMIT has ended the transaction already.
                if out.is_err() && !committing && !t.broken.get() && t.batch("ROLLBACK").is_err() {
                    t.broken.set(true);
                }
                if let Some(q) = queue {
                    if !t.broken.get()
                        && t.exec("SELECT pg_advisory_unlock($1)", &[&(q as i64)])
                            .is_err()
                    {
                        // Closing the connection releases the lock.
                        t.broken.set(true);
                    }
                }
                (out, t.retry.get(), t.broken.get(), t.large())
            };
            // A connection that sent a large message keeps buffers that large: closed, not pooled.
            if broken || large {
                Lease::discard(lease);
            } else {
                drop(lease);
            }
            match out {
                // A pooled connection the server closed since (a restart) fails its first statement:
                // try once more on a new one.
                Err(_) if broken && attempt == 1 => {}
                Err(_) if retry && attempt < ATTEMPTS => {
                    // Back off a little, more each time, so that the same transactions do not collide again.
                    std::thread::sleep(std::time::Duration::from_millis(u64::from(attempt)));
                }
                out => return out,
            }
        }
    }

    fn read<T>(&self, f: impl FnMut(&Tx) -> StoreResult<T>) -> StoreResult<T> {
        self.tx(Mode::Read, None, f)
    }

    fn write<T>(&self, f: impl FnMut(&Tx) -> StoreResult<T>) -> StoreResult<T> {
        self.tx(Mode::Write, None, f)
    }

    /// A write that waits its turn in `queue` (see [`Queue`]).
    fn write_queued<T>(
        &self,
        queue: Queue,
        f: impl FnMut(&Tx) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.tx(Mode::Write, Some(queue), f)
    }
}

impl Store for PgStore {
    fn register_nodes(
        &self,
        regs: &[(&NodeRegistration, NodeAdmission)],
    ) -> StoreResult<Vec<StoreResult<NodeRecord>>> {
        self.write_queued(Queue::Registration, |t| {
            regs.iter()
                .map(|(reg, admission)| match register_one(t, reg, *admission) {
                    // Refused before it wrote anything: the others go on.
                    Err(e @ StoreError::Full(_)) => Ok(Err(e)),
                    other => other.map(Ok),
                })
                .collect()
        })
    }

    fn modify_node(
        &self,
        node_id: u64,
        change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
    ) -> StoreResult<NodeRecord> {
        self.write(|t| model::modify_node(t, node_id, change))
    }

    fn update_release_data(
        &self,
        release_id: u64,
        change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
    ) -> StoreResult<ReleaseRecord> {
        self.write(|t| model::update_release_data(t, release_id, change))
    }

    fn modify_cluster(
        &self,
        cluster_id: u64,
        change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
    ) -> StoreResult<ClusterRecord> {
        self.write(|t| model::modify_cluster(t, cluster_id, change))
    }

    fn create_plugin(
        &self,
        plugin: &NewPlugin,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<PluginRecord> {
        self.write(|t| model::create_plugin(t, plugin, graphs))
    }

    fn list_plugins(&self) -> StoreResult<Vec<PluginRecord>> {
        self.read(model::list_plugins)
    }

    fn get_plugin(&self, plugin_id: u64) -> StoreResult<PluginRecord> {
        self.read(|t| model::plugin_row(t, plugin_id))
    }

    fn delete_plugin(&self, plugin_id: u64) -> StoreResult<()> {
        self.write(|t| model::delete_plugin(t, plugin_id))
    }

    fn save_task_states(&self, blobs: &[StateBlob], rows: &[StateRow]) -> StoreResult<()> {
        self.write(|t| model::save_task_states(t, blobs, rows))
    }

    fn state_blobs(
        &self,
        hashes: &[String],
    ) -> StoreResult<Vec<(String, plinth_common::json::Json)>> {
        self.read(|t| model::state_blobs(t, hashes))
    }

    fn deployment_inputs(&self, dep_id: u64) -> StoreResult<serde_json::Value> {
        self.read(|t| {
            let row = t
                .opt(
                    "SELECT inputs, inputs_gz FROM deployments WHERE id = $1",
                    &[&sql_id(dep_id)],
                )?
                .ok_or_else(|| StoreError::NotFound {
                    kind: "deployment",
                    id: dep_id.to_string(),
                })?;
            super::compressed::stored_json(
                col(&row, 1, "deployment inputs")?,
                col(&row, 0, "deployment inputs")?,
                "deployment inputs",
            )
        })
    }

    fn task_states(&self, node_ids: &[u64]) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
        self.read(|t| model::task_states(t, node_ids))
    }

    fn cluster_snapshot(
        &self,
        cluster_id: u64,
        graph_types: &[&str],
        old_states: bool,
    ) -> StoreResult<ClusterRecords> {
        self.read(|t| {
            let cluster = cluster_row(t, cluster_id)?;
            let release = release_row(t, cluster.release_id)?;
            let plugins = cluster
                .data
                .plugins
                .iter()
                .map(|p| model::plugin_row(t, *p))
                .collect::<StoreResult<Vec<_>>>()?;
            let owners = std::iter::once(GraphOwner::Release(release.id))
                .chain(plugins.iter().map(|p| GraphOwner::Plugin(p.id)))
                .chain(std::iter::once(GraphOwner::Cluster(cluster.id)));
            let mut graphs = Vec::new();
            for owner in owners {
                for graph_type in graph_types {
                    match graph_row(t, owner, graph_type) {
                        Ok(g) => graphs.push(g),
                        Err(StoreError::NotFound { kind: "graph", .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            let (nodes, node_facts) = query_nodes_compact(
                t,
                "WHERE cluster_id = $1",
                &[&sql_id(cluster_id)],
                &mut Keys::default(),
            )?;
            let old_states = if old_states {
                let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
                old_states_from(model::task_states(t, &ids)?, |h| model::state_blobs(t, h))?
            } else {
                plinth_common::deploy::OldStates::new()
            };
            Ok(ClusterRecords {
                cluster,
                release,
                plugins,
                graphs,
                nodes,
                node_facts,
                old_states,
            })
        })
    }

    fn old_states(&self, node_ids: &[u64]) -> StoreResult<plinth_common::deploy::OldStates> {
        self.read(|t| {
            old_states_from(model::task_states(t, node_ids)?, |h| {
                model::state_blobs(t, h)
            })
        })
    }

    fn list_nodes(&self) -> StoreResult<Vec<NodeRecord>> {
        self.read(|t| query_nodes(t, "", &[]))
    }

    fn node_names(&self) -> StoreResult<Vec<(u64, String)>> {
        self.read(|t| {
            t.query("SELECT id, name FROM nodes ORDER BY id", &[])?
                .iter()
                .map(|r| Ok((id(col(r, 0, "node")?), col(r, 1, "node")?)))
                .collect()
        })
    }

    fn list_nodes_page(&self, f: &NodeFilter) -> StoreResult<Vec<NodeRecord>> {
        let mut clauses = vec!["id > $1".to_string()];
        let mut args: Vec<Box<dyn tokio_postgres::types::ToSql + Sync>> =
            vec![Box::new(sql_id(f.after_id))];
        if let Some(status) = f.status {
            args.push(Box::new(status.as_str()));
            clauses.push(format!("status = ${}", args.len()));
        }
        if let Some(admission) = f.admission {
            args.push(Box::new(admission_text(admission)));
            clauses.push(format!("admission = ${}", args.len()));
        }
        if let Some(cluster) = f.cluster_id {
            args.push(Box::new(sql_id(cluster)));
            clauses.push(format!("cluster_id = ${}", args.len()));
        }
        if let Some(tag) = &f.tag {
            args.push(Box::new(tag.clone()));
            let n = args.len();
            let holds = |array: &str| {
                format!(
                    "EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof({array}) = 'array' \
                     THEN {array} ELSE '[]'::jsonb END) AS e(value) WHERE e.value = ${n})"
                )
            };
            clauses.push(format!(
                "({} OR {} OR {} OR {})",
                holds("nodes.tags::jsonb"),
                holds("nodes.roles::jsonb"),
                holds("nodes.pending_roles::jsonb"),
                holds("(nodes.model::jsonb -> 'tags_added')"),
            ));
        }
        if let Some(name) = &f.name {
            args.push(Box::new(name.to_ascii_lowercase()));
            clauses.push(format!("strpos(lower(name), ${}) > 0", args.len()));
        }
        args.push(Box::new(i64::try_from(f.limit).unwrap_or(i64::MAX)));
        let sql = format!(
            "SELECT {NODE_COLUMNS} FROM nodes WHERE {} ORDER BY id LIMIT ${}",
            clauses.join(" AND "),
            args.len()
        );
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            args.iter().map(|a| a.as_ref()).collect();
        self.read(|t| t.query(&sql, &refs)?.iter().map(node_from_row).collect())
    }

    fn get_node(&self, node_id: u64) -> StoreResult<NodeRecord> {
        self.read(|t| one_node(t, node_id))
    }

    fn set_admission(&self, node_id: u64, admission: NodeAdmission) -> StoreResult<NodeRecord> {
        self.write(|t| {
            one_node(t, node_id)?;
            t.exec(
                "UPDATE nodes SET admission = $2 WHERE id = $1",
                &[&sql_id(node_id), &admission_text(admission)],
            )?;
            one_node(t, node_id)
        })
    }

    fn delete_node(&self, node_id: u64) -> StoreResult<()> {
        self.write(|t| {
            let node = one_node(t, node_id)?;
            if node.status == NodeStatus::Deploying {
                return Err(StoreError::Conflict(format!(
                    "node {node_id} takes part in a running deployment"
                )));
            }
            t.exec("DELETE FROM nodes WHERE id = $1", &[&sql_id(node_id)])?;
            t.exec(
                "DELETE FROM node_seen WHERE node_id = $1",
                &[&sql_id(node_id)],
            )?;
            t.exec(
                "DELETE FROM refusals WHERE node_id = $1",
                &[&sql_id(node_id)],
            )?;
            Ok(())
        })
    }

    fn touch_nodes(&self, seen: &[(u64, i64)]) -> StoreResult<()> {
        // One statement for the batch (the nodes seen in the last seconds: thousands), each node once
        // with its latest time, in id order.
        let mut latest: std::collections::BTreeMap<i64, i64> = Default::default();
        for (node_id, at) in seen {
            let t = latest.entry(sql_id(*node_id)).or_insert(*at);
            *t = (*t).max(*at);
        }
        let (ids, times): (Vec<i64>, Vec<i64>) = latest.into_iter().unzip();
        if ids.is_empty() {
            return Ok(());
        }
        self.tx(Mode::Committed, None, |t| {
            t.exec(
                "INSERT INTO node_seen (node_id, last_seen) \
                 SELECT v.id, v.at FROM UNNEST($1::BIGINT[], $2::BIGINT[]) AS v(id, at) \
                 WHERE EXISTS (SELECT 1 FROM nodes WHERE nodes.id = v.id) \
                 ON CONFLICT (node_id) DO UPDATE \
                 SET last_seen = GREATEST(node_seen.last_seen, excluded.last_seen)",
                &[&ids, &times],
            )
            .map(|_| ())
        })
    }

    fn assign_nodes(&self, cluster_id: u64, nodes: &[NodeAssignment]) -> StoreResult<()> {
        self.write(|t| {
            cluster_row(t, cluster_id)?;
            let ids: Vec<u64> = nodes.iter().map(|a| a.id).collect();
            let known = known_nodes(t, &ids)?;
            // Checked in the order given, then written in one statement (the last assignment of a
            // node given twice wins, as one statement at a time would leave it).
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
            if !rows.is_empty() {
                t.exec(
                    "UPDATE nodes SET cluster_id = $4, pending_roles = v.roles, model = v.model \
                     FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[]) AS v(id, roles, model) \
                     WHERE nodes.id = v.id",
                    &[&rows, &roles, &models, &sql_id(cluster_id)],
                )?;
            }
            Ok(())
        })
    }

    fn unassign_nodes(&self, cluster_id: u64, node_ids: &[u64]) -> StoreResult<()> {
        self.write(|t| {
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
                "UPDATE nodes SET cluster_id = NULL, pending_roles = '[]', roles = '[]', status = 'discover', \
                 model = '{}' WHERE id = ANY($1)",
                &[&ids],
            )?;
            Ok(())
        })
    }

    fn create_release(
        &self,
        release: &NewRelease,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<ReleaseRecord> {
        self.write(|t| {
            let row = t
                .one(
                    "INSERT INTO releases (name, version, data) VALUES ($1, $2, $3) RETURNING id",
                    &[&release.name, &release.version, &to_json(&release.data)],
                )
                .map_err(|e| match e {
                    StoreError::Conflict(_) => StoreError::Conflict(format!(
                        "release {} {} exists already",
                        release.name, release.version
                    )),
                    other => other,
                })?;
            let release_id = id(col(&row, 0, "release id")?);
            for (graph_type, graph) in graphs {
                insert_graph(t, GraphOwner::Release(release_id), graph_type, graph)?;
            }
            release_row(t, release_id)
        })
    }

    fn list_releases(&self) -> StoreResult<Vec<ReleaseRecord>> {
        self.read(|t| {
            t.query("SELECT id FROM releases ORDER BY id", &[])?
                .iter()
                .map(|r| release_row(t, id(col(r, 0, "release id")?)))
                .collect()
        })
    }

    fn get_release(&self, release_id: u64) -> StoreResult<ReleaseRecord> {
        self.read(|t| release_row(t, release_id))
    }

    fn create_cluster(&self, cluster: &NewCluster) -> StoreResult<ClusterRecord> {
        self.write(|t| {
            release_row(t, cluster.release_id)?;
            let row = t
                .one(
                    "INSERT INTO clusters (name, release_id, settings, generated) VALUES ($1, $2, $3, $4) \
                     RETURNING id",
                    &[
                        &cluster.name,
                        &sql_id(cluster.release_id),
                        &to_json(&cluster.settings),
                        &to_json(&cluster.generated),
                    ],
                )
                .map_err(|e| match e {
                    StoreError::Conflict(_) => {
                        StoreError::Conflict(format!("cluster {:?} exists already", cluster.name))
                    }
                    other => other,
                })?;
            let cluster_id = id(col(&row, 0, "cluster id")?);
            // Attributes made before the cluster had its id name it now (Nailgun's `{cluster.id}`).
            let mut settings = cluster.settings.clone();
            let mut generated = cluster.generated.clone();
            plinth_common::model::format_cluster_id(&mut settings, cluster_id);
            plinth_common::model::format_cluster_id(&mut generated, cluster_id);
            if settings != cluster.settings || generated != cluster.generated {
                t.exec(
                    "UPDATE clusters SET settings = $2, generated = $3 WHERE id = $1",
                    &[&sql_id(cluster_id), &to_json(&settings), &to_json(&generated)],
                )?;
            }
            cluster_row(t, cluster_id)
        })
    }

    fn list_clusters(&self) -> StoreResult<Vec<ClusterRecord>> {
        self.read(|t| {
            t.query("SELECT id FROM clusters ORDER BY id", &[])?
                .iter()
                .map(|r| cluster_row(t, id(col(r, 0, "cluster id")?)))
                .collect()
        })
    }

    fn get_cluster(&self, cluster_id: u64) -> StoreResult<ClusterRecord> {
        self.read(|t| cluster_row(t, cluster_id))
    }

    fn list_graphs(&self, owner: GraphOwner) -> StoreResult<Vec<GraphRecord>> {
        self.read(|t| {
            owner_exists(t, owner)?;
            t.query(
                &format!(
                    "SELECT {GRAPH_COLUMNS} FROM graphs WHERE owner_kind = $1 AND owner_id = $2 \
                     ORDER BY graph_type COLLATE \"C\""
                ),
                &[&owner.kind(), &sql_id(owner.id())],
            )?
            .iter()
            .map(graph_from_row)
            .collect()
        })
    }

    fn get_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord> {
        self.read(|t| graph_row(t, owner, graph_type))
    }

    fn put_graph(
        &self,
        owner: GraphOwner,
        graph_type: &str,
        graph: &GraphBody,
        replace: bool,
    ) -> StoreResult<GraphRecord> {
        self.write(|t| {
            owner_exists(t, owner)?;
            let exists = graph_row(t, owner, graph_type).is_ok();
            if exists && !replace {
                return Err(StoreError::Conflict(format!(
                    "{} {} has a graph of type {graph_type:?} already",
                    owner.kind(),
                    owner.id()
                )));
            }
            insert_graph(t, owner, graph_type, graph)?;
            graph_row(t, owner, graph_type)
        })
    }

    fn list_all_graphs(&self) -> StoreResult<Vec<GraphRecord>> {
        self.read(|t| {
            t.query(
                &format!("SELECT {GRAPH_COLUMNS} FROM graphs ORDER BY id"),
                &[],
            )?
            .iter()
            .map(graph_from_row)
            .collect()
        })
    }

    fn graph_by_id(&self, graph_id: u64) -> StoreResult<GraphRecord> {
        self.read(|t| {
            match t.opt(
                &format!("SELECT {GRAPH_COLUMNS} FROM graphs WHERE id = $1"),
                &[&sql_id(graph_id)],
            )? {
                Some(r) => graph_from_row(&r),
                None => Err(StoreError::NotFound {
                    kind: "graph",
                    id: graph_id.to_string(),
                }),
            }
        })
    }

    fn delete_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<()> {
        self.write(|t| {
            graph_row(t, owner, graph_type)?;
            t.exec(
                "DELETE FROM graphs WHERE owner_kind = $1 AND owner_id = $2 AND graph_type = $3",
                &[&owner.kind(), &sql_id(owner.id()), &graph_type],
            )?;
            Ok(())
        })
    }

    fn create_deployment(&self, new: &NewDeployment) -> StoreResult<DeploymentRecord> {
        self.write(|t| {
            cluster_row(t, new.cluster_id)?;
            let running = t.opt(
                "SELECT id FROM deployments WHERE cluster_id = $1 AND status = 'running'",
                &[&sql_id(new.cluster_id)],
            )?;
            if let Some(running) = running {
                let running: i64 = col(&running, 0, "deployment id")?;
                return Err(StoreError::Conflict(format!(
                    "cluster {} has a running deployment ({running})",
                    new.cluster_id
                )));
            }
            model::save_primaries(t, &new.primaries)?;
            t.carrying(
                new.inputs.as_bytes().len() + new.state.as_bytes().len() + 8 * new.node_ids.len(),
            );
            let row = t.one(
                "INSERT INTO deployments (cluster_id, graph_type, status, node_ids, options, state, created_at, inputs_gz, state_gz) \
                 VALUES ($1, $2, 'running', $3, $4, '', $5, $6, $7) RETURNING id",
                &[
                    &sql_id(new.cluster_id),
                    &new.graph_type,
                    &to_json(&new.node_ids),
                    &to_json(&new.options),
                    &new.now_ms,
                    &new.inputs.as_bytes(),
                    &new.state.as_bytes(),
                ],
            )?;
            let dep_id = id(col(&row, 0, "deployment id")?);
            if new.deploys {
                set_cluster_status(t, new.cluster_id, "deployment")?;
                let ids = sql_ids(&new.node_ids);
                t.exec(
                    "UPDATE nodes SET status = 'deploying' WHERE id = ANY($1)",
                    &[&ids],
                )?;
            }
            // Its state is the one just written: not read back.
            deployment_by_id(t, DEPLOYMENT_LIST_COLUMNS, dep_id)
        })
    }

    fn get_deployment(&self, dep_id: u64) -> StoreResult<DeploymentRecord> {
        self.read(|t| deployment_by_id(t, DEPLOYMENT_COLUMNS, dep_id))
    }

    fn list_deployments(&self, cluster_id: Option<u64>) -> StoreResult<Vec<DeploymentRecord>> {
        self.read(|t| match cluster_id {
            Some(c) => query_deployments(
                t,
                DEPLOYMENT_LIST_COLUMNS,
                "WHERE cluster_id = $1",
                &[&sql_id(c)],
            ),
            None => query_deployments(t, DEPLOYMENT_LIST_COLUMNS, "", &[]),
        })
    }

    fn running_deployments(&self) -> StoreResult<Vec<DeploymentRecord>> {
        self.read(|t| query_deployments(t, DEPLOYMENT_COLUMNS, "WHERE status = 'running'", &[]))
    }

    fn publish_lists(
        &self,
        deployment_id: u64,
        lists: &mut [TaskList],
        state: &serde_json::Value,
        events: &[DeploymentEvent],
    ) -> StoreResult<()> {
        let state = super::compressed::packed(state, "the deployment's state")?;
        self.write_queued(Queue::Revision, |t| {
            set_state(t, deployment_id, Some(&state), DeploymentStatus::Running)?;
            append_events(t, deployment_id, events)?;
            insert_lists(t, deployment_id, lists)
        })
    }

    fn finish_deployment(&self, dep_id: u64, end: &DeploymentEnd<'_>) -> StoreResult<()> {
        let state = super::compressed::packed(end.state, "the deployment's state")?;
        self.write(|t| finish(t, dep_id, Some(&state), end.events, &Ending::of(end)))
    }

    fn record_progress(&self, dep_id: u64, p: &mut Progress<'_>) -> StoreResult<()> {
        // Publishing takes revisions from the one counter: such steps take turns (see `Queue`).
        let queue = (!p.lists.is_empty()).then_some(Queue::Revision);
        let fence = self.fence.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.tx(Mode::Write, queue, |t| {
            let row = t
                .opt(
                    "SELECT status FROM deployments WHERE id = $1 FOR UPDATE",
                    &[&sql_id(dep_id)],
                )?
                .ok_or_else(|| StoreError::NotFound {
                    kind: "deployment",
                    id: dep_id.to_string(),
                })?;
            let status: String = col(&row, 0, "deployment status")?;
            if status != DeploymentStatus::Running.as_str() {
                return Err(StoreError::Conflict(format!(
                    "deployment {dep_id} is not running (it is {status})"
                )));
            }
            insert_lists(t, dep_id, p.lists)?;
            if !p.task_rows.is_empty() {
                model::save_task_states(t, &[], p.task_rows)?;
            }
            let done = match p.end {
                Some(end) => finish(t, dep_id, p.state, p.events, &end),
                None => {
                    if p.state.is_some() {
                        set_state(t, dep_id, p.state, DeploymentStatus::Running)?;
                    }
                    append_events(t, dep_id, p.events)
                }
            };
            done?;
            // Checked last, so the lease row is locked only while this step commits (a claim to take
            // the lease waits for that, never for the whole step).
            if let Some(fence) = &fence {
                cluster::check_fence(t, fence)?;
            }
            Ok(())
        })
    }

    fn append_events(&self, dep_id: u64, events: &[DeploymentEvent]) -> StoreResult<()> {
        self.write(|t| append_events(t, dep_id, events))
    }

    fn events(&self, deployment_id: u64, after: u64) -> StoreResult<Vec<(u64, DeploymentEvent)>> {
        self.read(|t| {
            t.query(
                "SELECT seq, event FROM events WHERE deployment_id = $1 AND seq > $2 ORDER BY seq",
                &[&sql_id(deployment_id), &sql_id(after)],
            )?
            .iter()
            .map(|r| {
                Ok((
                    id(col(r, 0, "event")?),
                    from_json(col(r, 1, "event")?, "event")?,
                ))
            })
            .collect()
        })
    }

    fn issued_list(&self, node_id: u64, revision: u64) -> StoreResult<Option<TaskList>> {
        self.read(|t| {
            t.opt(
                &format!(
                    "{} WHERE l.node_id = $1 AND l.revision = $2",
                    cluster::LISTS
                ),
                &[&sql_id(node_id), &sql_id(revision)],
            )?
            .map(|r| cluster::join_row(&mut bodies::Joiner::default(), &r))
            .transpose()
        })
    }

    fn published_lists(&self, deployment_id: u64) -> StoreResult<Vec<TaskList>> {
        self.read(|t| {
            let mut joiner = bodies::Joiner::default();
            t.query(
                &format!(
                    "{} WHERE l.deployment_id = $1 ORDER BY l.node_id, l.revision",
                    cluster::LISTS
                ),
                &[&sql_id(deployment_id)],
            )?
            .iter()
            .map(|r| cluster::join_row(&mut joiner, r))
            .collect()
        })
    }

    fn store_result_batches(
        &self,
        batches: &[(u64, &[TaskResult])],
    ) -> StoreResult<Vec<Vec<Stored>>> {
        self.write(|t| store_batches(t, batches))
    }

    fn record_refusals(&self, node_id: u64, refusals: &[NewRefusal]) -> StoreResult<()> {
        self.write(|t| {
            for r in refusals {
                t.exec(
                    "INSERT INTO refusals (node_id, at_ms, kind, deployment_id, reason, detail) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        &sql_id(node_id),
                        &r.at_ms,
                        &r.kind,
                        &r.deployment_id.map(sql_id),
                        &r.reason,
                        &to_json(&r.detail),
                    ],
                )?;
            }
            t.exec(
                "DELETE FROM refusals WHERE node_id = $1 AND seq NOT IN \
                 (SELECT seq FROM refusals WHERE node_id = $1 ORDER BY seq DESC LIMIT $2)",
                &[&sql_id(node_id), &(MAX_REFUSALS_PER_NODE as i64)],
            )?;
            Ok(())
        })
    }

    fn node_refusals(&self, node_id: u64) -> StoreResult<Vec<RefusalRecord>> {
        self.read(|t| {
            t.query(
                "SELECT seq, at_ms, kind, deployment_id, reason, detail FROM refusals \
                 WHERE node_id = $1 ORDER BY seq DESC",
                &[&sql_id(node_id)],
            )?
            .iter()
            .map(|r| {
                let w = "refusal";
                Ok(RefusalRecord {
                    seq: id(col(r, 0, w)?),
                    node_id,
                    refusal: NewRefusal {
                        kind: col(r, 2, w)?,
                        deployment_id: col::<Option<i64>>(r, 3, w)?.map(id),
                        reason: col(r, 4, w)?,
                        detail: from_json(col(r, 5, w)?, w)?,
                        at_ms: col(r, 1, w)?,
                    },
                })
            })
            .collect()
        })
    }

    fn deployment_results(&self, deployment_id: u64) -> StoreResult<Vec<(u64, TaskResult)>> {
        self.read(|t| {
            t.query(
                "SELECT node_id, result FROM results WHERE deployment_id = $1 ORDER BY seq",
                &[&sql_id(deployment_id)],
            )?
            .iter()
            .map(|r| {
                Ok((
                    id(col(r, 0, "task result")?),
                    from_json(col(r, 1, "task result")?, "task result")?,
                ))
            })
            .collect()
        })
    }

    fn put_strategy(
        &self,
        cluster_id: u64,
        name: &str,
        document: &serde_json::Value,
        source: &serde_json::Value,
        replace: bool,
    ) -> StoreResult<StrategyRecord> {
        self.write(|t| {
            cluster_row(t, cluster_id)?;
            let exists = strategy_row(t, cluster_id, name).is_ok();
            if exists && !replace {
                return Err(StoreError::Conflict(format!(
                    "cluster {cluster_id} has a strategy named {name:?} already"
                )));
            }
            t.exec(
                "INSERT INTO strategies (cluster_id, name, document, source) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (cluster_id, name) DO UPDATE SET document = excluded.document, \
                 source = excluded.source",
                &[&sql_id(cluster_id), &name, &to_json(document), &to_json(source)],
            )?;
            strategy_row(t, cluster_id, name)
        })
    }

    fn list_strategies(&self, cluster_id: u64) -> StoreResult<Vec<StrategyRecord>> {
        self.read(|t| {
            cluster_row(t, cluster_id)?;
            t.query(
                "SELECT name FROM strategies WHERE cluster_id = $1 ORDER BY name COLLATE \"C\"",
                &[&sql_id(cluster_id)],
            )?
            .iter()
            .map(|r| strategy_row(t, cluster_id, col(r, 0, "strategy name")?))
            .collect()
        })
    }

    fn get_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
        self.read(|t| strategy_row(t, cluster_id, name))
    }

    fn delete_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<()> {
        self.write(|t| {
            strategy_row(t, cluster_id, name)?;
            t.exec(
                "DELETE FROM strategies WHERE cluster_id = $1 AND name = $2",
                &[&sql_id(cluster_id), &name],
            )?;
            Ok(())
        })
    }

    fn put_configuration(&self, record: &ConfigurationRecord) -> StoreResult<ConfigurationRecord> {
        self.write(|t| {
            cluster_row(t, record.cluster_id)?;
            t.exec(
                "INSERT INTO deployment_configurations (cluster_id, name, configuration, source) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (cluster_id) DO UPDATE SET name = excluded.name, \
                 configuration = excluded.configuration, source = excluded.source",
                &[
                    &sql_id(record.cluster_id),
                    &record.name,
                    &to_json(&record.configuration),
                    &to_json(&record.source),
                ],
            )?;
            configuration_row(t, record.cluster_id)
        })
    }

    fn get_configuration(&self, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
        self.read(|t| configuration_row(t, cluster_id))
    }

    fn delete_configuration(&self, cluster_id: u64) -> StoreResult<()> {
        self.write(|t| {
            configuration_row(t, cluster_id)?;
            t.exec(
                "DELETE FROM deployment_configurations WHERE cluster_id = $1",
                &[&sql_id(cluster_id)],
            )?;
            Ok(())
        })
    }

    fn create_token(&self, name: &str, hash: &str, role: TokenRole) -> StoreResult<TokenRecord> {
        self.write(|t| {
            let taken = t
                .opt(
                    "SELECT 1 FROM tokens WHERE name = $1 AND revoked_at IS NULL",
                    &[&name],
                )?
                .is_some();
            if taken {
                return Err(StoreError::Conflict(format!(
                    "a token named {name:?} exists: revoke it first, or choose another name"
                )));
            }
            let row = t.one(
                "INSERT INTO tokens (name, hash, role) VALUES ($1, $2, $3) RETURNING id",
                &[&name, &hash, &to_json(&role).trim_matches('"')],
            )?;
            Ok(TokenRecord {
                id: id(col(&row, 0, "token id")?),
                name: name.into(),
                hash: hash.into(),
                role,
                revoked_at_ms: None,
            })
        })
    }

    fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        self.read(|t| {
            t.query(
                "SELECT id, name, hash, role, revoked_at FROM tokens ORDER BY id",
                &[],
            )?
            .iter()
            .map(token_from_row)
            .collect()
        })
    }

    fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        self.read(|t| {
            t.opt(
                "SELECT id, name, hash, role, revoked_at FROM tokens WHERE hash = $1",
                &[&hash],
            )?
            .map(|r| token_from_row(&r))
            .transpose()
        })
    }

    fn revoke_token(&self, name: &str, now_ms: i64) -> StoreResult<usize> {
        self.write(|t| {
            let n = t.exec(
                "UPDATE tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
                &[&name, &now_ms],
            )?;
            if n == 0 {
                return Err(StoreError::NotFound {
                    kind: "token",
                    id: format!("{name:?} (not revoked)"),
                });
            }
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    fn beat_controller(&self, beat: &ControllerBeat) -> StoreResult<()> {
        self.tx_on(&self.beat, Mode::Write, None, |t| cluster::beat(t, beat))
    }

    fn controllers(&self) -> StoreResult<Vec<ControllerRecord>> {
        self.read(cluster::controllers)
    }

    fn claim_lease(
        &self,
        holder: &str,
        held: Option<u64>,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Option<u64>> {
        self.tx_on(&self.beat, Mode::Write, None, |t| {
            cluster::claim(t, holder, held, now_ms, ttl_ms)
        })
    }

    fn release_lease(&self, holder: &str, token: u64) -> StoreResult<()> {
        self.write(|t| cluster::release(t, holder, token))
    }

    fn lease(&self) -> StoreResult<Option<LeaseRecord>> {
        self.read(|t| cluster::lease(t, false))
    }

    fn set_fence(&self, fence: Option<Fence>) {
        *self.fence.lock().unwrap_or_else(|p| p.into_inner()) = fence;
    }

    fn request_cancel(&self, dep_id: u64, by: &str) -> StoreResult<DeploymentRecord> {
        self.write(|t| {
            let changed = t.exec(
                "UPDATE deployments SET cancel_by = $2 WHERE id = $1 AND status = 'running'",
                &[&sql_id(dep_id), &by],
            )?;
            let dep = deployment_by_id(t, DEPLOYMENT_COLUMNS, dep_id)?;
            if changed == 0 {
                return Err(StoreError::Conflict(format!(
                    "deployment {dep_id} is not running (it is {})",
                    dep.status.as_str()
                )));
            }
            Ok(dep)
        })
    }

    fn cancel_requests(&self) -> StoreResult<Vec<(u64, String)>> {
        self.read(cluster::cancel_requests)
    }

    fn running_ids(&self) -> StoreResult<Vec<u64>> {
        self.read(cluster::running_ids)
    }

    fn lists_after(
        &self,
        revision: u64,
        whole: &dyn Fn(u64) -> bool,
    ) -> StoreResult<Vec<Published>> {
        self.read(|t| cluster::lists_after(t, revision, whole))
    }

    fn results_of_nodes(
        &self,
        deployment_id: u64,
        node_ids: &[u64],
    ) -> StoreResult<Vec<(u64, Vec<TaskResult>)>> {
        self.read(|t| cluster::results_of_nodes(t, deployment_id, node_ids))
    }

    fn notify(&self, notice: &Notice) {
        let payload = notice.payload();
        let sent = self.tx(Mode::Write, None, |t| {
            t.exec("SELECT pg_notify($1, $2)", &[&listen::CHANNEL, &payload])
                .map(|_| ())
        });
        if let Err(e) = sent {
            tracing::warn!(error = %e, notice = %payload, "cannot notify the other controllers");
        }
    }

    fn notify_all(&self, notices: &[Notice]) {
        if notices.is_empty() {
            return;
        }
        let payloads: Vec<String> = notices.iter().map(Notice::payload).collect();
        let sent = self.tx(Mode::Write, None, |t| {
            t.exec(
                "SELECT pg_notify($1, p) FROM UNNEST($2::TEXT[]) AS p",
                &[&listen::CHANNEL, &payloads],
            )
            .map(|_| ())
        });
        if let Err(e) = sent {
            tracing::warn!(error = %e, notices = payloads.len(), "cannot notify the other controllers");
        }
    }

    fn listen(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notice>> {
        let target = self
            .listen_target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.runtime.as_ref()?.spawn(listen::listen(target, tx));
        Some(rx)
    }
}

fn token_from_row(r: &Row) -> StoreResult<TokenRecord> {
    let w = "token";
    let role: String = col(r, 3, w)?;
    let role = match role.as_str() {
        "admin" => TokenRole::Admin,
        "read_only" => TokenRole::ReadOnly,
        other => return Err(StoreError::Corrupt(format!("token role {other:?}"))),
    };
    Ok(TokenRecord {
        id: id(col(r, 0, w)?),
        name: col(r, 1, w)?,
        hash: col(r, 2, w)?,
        role,
        revoked_at_ms: col(r, 4, w)?,
    })
}

fn release_row(t: &Tx, release_id: u64) -> StoreResult<ReleaseRecord> {
    let row = t
        .opt(
            "SELECT id, name, version, data FROM releases WHERE id = $1",
            &[&sql_id(release_id)],
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "release",
            id: release_id.to_string(),
        })?;
    let w = "release";
    Ok(ReleaseRecord {
        id: id(col(&row, 0, w)?),
        name: col(&row, 1, w)?,
        version: col(&row, 2, w)?,
        data: from_json(col(&row, 3, w)?, "release data")?,
    })
}

fn cluster_row(t: &Tx, cluster_id: u64) -> StoreResult<ClusterRecord> {
    let row = t
        .opt(
            "SELECT id, name, release_id, settings, data, generated FROM clusters WHERE id = $1",
            &[&sql_id(cluster_id)],
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "cluster",
            id: cluster_id.to_string(),
        })?;
    let w = "cluster";
    Ok(ClusterRecord {
        id: id(col(&row, 0, w)?),
        name: col(&row, 1, w)?,
        release_id: id(col(&row, 2, w)?),
        settings: from_json(col(&row, 3, w)?, "cluster settings")?,
        generated: from_json(col(&row, 5, w)?, "cluster generated attributes")?,
        data: from_json(col(&row, 4, w)?, "cluster data")?,
    })
}

/// Sets `status` in a cluster's data (SQLite's `json_set(data, '$.status', ...)`).
fn set_cluster_status(t: &Tx, cluster_id: u64, status: &str) -> StoreResult<()> {
    t.exec(
        "UPDATE clusters SET data = jsonb_set(data::jsonb, '{status}', to_jsonb($2::text))::text \
         WHERE id = $1",
        &[&sql_id(cluster_id), &status],
    )?;
    Ok(())
}

/// Inserts lists, each with the next revision of the controller-wide counter.
fn insert_lists(t: &Tx, deployment_id: u64, lists: &mut [TaskList]) -> StoreResult<()> {
    if lists.is_empty() {
        return Ok(());
    }
    // The lists' revisions in one step of the counter: the next `n`, in the lists' order.
    let n = i64::try_from(lists.len()).unwrap_or(i64::MAX);
    let last: i64 = col(
        &t.one(
            "UPDATE counters SET value = value + $1 WHERE name = 'revision' RETURNING value",
            &[&n],
        )?,
        0,
        "revision counter",
    )?;
    let mut nodes: Vec<i64> = Vec::with_capacity(lists.len());
    for (i, list) in lists.iter_mut().enumerate() {
        let revision = last - n + 1 + i64::try_from(i).unwrap_or(0);
        list.revision = id(revision);
        nodes.push(sql_id(list.node_id));
    }
    nodes.sort_unstable();
    nodes.dedup();
    // Every node must exist; its revision is its latest list's, so nothing of its row is written.
    let known: i64 = col(
        &t.one("SELECT count(*) FROM nodes WHERE id = ANY($1)", &[&nodes])?,
        0,
        "known nodes",
    )?;
    if known != i64::try_from(nodes.len()).unwrap_or(i64::MAX) {
        let known: std::collections::HashSet<i64> = t
            .query("SELECT id FROM nodes WHERE id = ANY($1)", &[&nodes])?
            .iter()
            .map(|r| col(r, 0, "node"))
            .collect::<StoreResult<_>>()?;
        let missing = nodes
            .iter()
            .find(|n| !known.contains(n))
            .copied()
            .unwrap_or(0);
        return Err(StoreError::NotFound {
            kind: "node",
            id: missing.to_string(),
        });
    }
    let split = bodies::split(lists);
    t.carrying(
        split
            .bodies
            .iter()
            .map(|(h, b)| h.len() + b.len())
            .sum::<usize>()
            + split
                .headers
                .iter()
                .zip(&split.hashes)
                .map(|(h, x)| h.len() + x.len() + 16)
                .sum::<usize>(),
    );
    let (hashes, texts): (Vec<&str>, Vec<&str>) = split
        .bodies
        .iter()
        .map(|(h, b)| (h.as_str(), b.as_str()))
        .unzip();
    t.exec(
        "INSERT INTO task_bodies (hash, tasks) SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[]) \
         ON CONFLICT (hash) DO NOTHING",
        &[&hashes, &texts],
    )?;
    let (list_nodes, list_revisions): (Vec<i64>, Vec<i64>) = lists
        .iter()
        .map(|l| (sql_id(l.node_id), sql_id(l.revision)))
        .unzip();
    t.exec(
        "INSERT INTO task_lists (deployment_id, node_id, revision, list, tasks_hash) \
         SELECT $1, v.node_id, v.revision, v.list, v.tasks_hash \
         FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::TEXT[], $5::TEXT[]) \
         AS v(node_id, revision, list, tasks_hash)",
        &[
            &sql_id(deployment_id),
            &list_nodes,
            &list_revisions,
            &split.headers,
            &split.hashes,
        ],
    )?;
    Ok(())
}

/// Ends a deployment (see [`Store::finish_deployment`]).
fn finish(
    t: &Tx,
    dep_id: u64,
    state: Option<&CompressedJson>,
    events: &[DeploymentEvent],
    end: &Ending<'_>,
) -> StoreResult<()> {
    set_state(t, dep_id, state, end.status)?;
    // A cancelled deployment, and a custom graph (seed 002), leave the cluster's status as it was.
    let cluster_status = match end.status {
        DeploymentStatus::Success => Some("operational"),
        DeploymentStatus::SuccessWithFailures => Some("partially_deployed"),
        DeploymentStatus::Failed | DeploymentStatus::Running => Some("error"),
        DeploymentStatus::Cancelled => None,
    };
    if let Some(cluster_status) = cluster_status.filter(|_| end.deploys) {
        let row = t.one(
            "SELECT cluster_id FROM deployments WHERE id = $1",
            &[&sql_id(dep_id)],
        )?;
        set_cluster_status(t, id(col(&row, 0, "deployment cluster")?), cluster_status)?;
    }
    append_events(t, dep_id, events)?;
    // Only a deployment that deploys moves pending roles and marks nodes ready.
    let (succeeded, untouched): (&[u64], Vec<u64>) = if end.deploys {
        (end.succeeded, end.untouched.to_vec())
    } else {
        (&[], [end.succeeded, end.untouched].concat())
    };
    // A statement per chunk of nodes: a deployment ends for thousands of nodes at once, and each
    // node's whole record is read to change it, so a chunk bounds what is held at once.
    for chunk in succeeded.chunks(NODES_PER_STATEMENT) {
        let mut ids = Vec::with_capacity(chunk.len());
        let mut roles = Vec::with_capacity(chunk.len());
        let mut models = Vec::with_capacity(chunk.len());
        for node in nodes_by_id(t, chunk)? {
            let mut all = node.roles.clone();
            for role in &node.pending_roles {
                if !all.contains(role) {
                    all.push(role.clone());
                }
            }
            let mut fields = node.model;
            fields.pending_addition = false;
            fields.error_type = None;
            ids.push(sql_id(node.id));
            roles.push(to_json(&all));
            models.push(to_json(&fields));
        }
        t.exec(
            "UPDATE nodes SET status = 'ready', roles = v.roles, pending_roles = '[]', model = v.model \
             FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[]) AS v(id, roles, model) WHERE nodes.id = v.id",
            &[&ids, &roles, &models],
        )?;
    }
    for chunk in end.failed.chunks(NODES_PER_STATEMENT) {
        let (ids, models): (Vec<i64>, Vec<String>) = nodes_by_id(t, chunk)?
            .into_iter()
            .map(|node| {
                let mut fields = node.model;
                fields.error_type = Some("deploy".into());
                (sql_id(node.id), to_json(&fields))
            })
            .unzip();
        t.exec(
            "UPDATE nodes SET status = 'error', model = v.model \
             FROM UNNEST($1::BIGINT[], $2::TEXT[]) AS v(id, model) WHERE nodes.id = v.id",
            &[&ids, &models],
        )?;
    }
    let ids = sql_ids(&untouched);
    t.exec(
        "UPDATE nodes SET status = CASE WHEN roles = '[]' THEN 'discover' ELSE 'ready' END \
         WHERE id = ANY($1) AND status = 'deploying'",
        &[&ids],
    )?;
    Ok(())
}

/// Writes a deployment's orchestration state (compressed; `None` writes `null`) and status.
fn set_state(
    t: &Tx,
    dep_id: u64,
    state: Option<&CompressedJson>,
    status: DeploymentStatus,
) -> StoreResult<()> {
    let finished = (status != DeploymentStatus::Running).then(now_ms);
    let (text, packed) = super::compressed::columns(state);
    t.carrying(packed.map_or(0, <[u8]>::len));
    let changed = t.exec(
        "UPDATE deployments SET state = $2, state_gz = $3, status = $4, finished_at = COALESCE(finished_at, $5) \
         WHERE id = $1",
        &[&sql_id(dep_id), &text, &packed, &status.as_str(), &finished],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        });
    }
    Ok(())
}

fn append_events(t: &Tx, dep_id: u64, events: &[DeploymentEvent]) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    // One statement; the events take their sequence numbers in the order given.
    let texts: Vec<String> = events.iter().map(to_json).collect();
    t.carrying(texts.iter().map(String::len).sum());
    t.exec(
        "INSERT INTO events (deployment_id, event) \
         SELECT $1, v.event FROM UNNEST($2::TEXT[]) WITH ORDINALITY AS v(event, n) ORDER BY v.n",
        &[&sql_id(dep_id), &texts],
    )?;
    Ok(())
}

fn strategy_row(t: &Tx, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
    let row = t
        .opt(
            "SELECT document, source FROM strategies WHERE cluster_id = $1 AND name = $2",
            &[&sql_id(cluster_id), &name],
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "strategy",
            id: format!("{name:?} of cluster {cluster_id}"),
        })?;
    Ok(StrategyRecord {
        cluster_id,
        name: name.to_string(),
        document: from_json(col(&row, 0, "strategy")?, "strategy")?,
        source: from_json(col(&row, 1, "strategy")?, "strategy source")?,
    })
}

fn configuration_row(t: &Tx, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
    let row = t
        .opt(
            "SELECT name, configuration, source FROM deployment_configurations WHERE cluster_id = $1",
            &[&sql_id(cluster_id)],
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "deployment configuration",
            id: format!("of cluster {cluster_id}"),
        })?;
    let w = "deployment configuration";
    Ok(ConfigurationRecord {
        cluster_id,
        name: col(&row, 0, w)?,
        configuration: from_json(col(&row, 1, w)?, w)?,
        source: from_json(col(&row, 2, w)?, "deployment configuration source")?,
    })
}

fn insert_graph(t: &Tx, owner: GraphOwner, graph_type: &str, graph: &GraphBody) -> StoreResult<()> {
    t.exec(
        "INSERT INTO graphs (owner_kind, owner_id, graph_type, name, tasks, node_filter) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (owner_kind, owner_id, graph_type) DO UPDATE SET \
         name = excluded.name, tasks = excluded.tasks, node_filter = excluded.node_filter",
        &[
            &owner.kind(),
            &sql_id(owner.id()),
            &graph_type,
            &graph.name,
            &to_json(&graph.tasks),
            &graph.node_filter,
        ],
    )?;
    Ok(())
}

fn owner_exists(t: &Tx, owner: GraphOwner) -> StoreResult<()> {
    match owner {
        GraphOwner::Release(r) => release_row(t, r).map(|_| ()),
        GraphOwner::Cluster(c) => cluster_row(t, c).map(|_| ()),
        GraphOwner::Plugin(p) => model::plugin_row(t, p).map(|_| ()),
    }
}

fn graph_row(t: &Tx, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord> {
    owner_exists(t, owner)?;
    match t.opt(
        &format!(
            "SELECT {GRAPH_COLUMNS} FROM graphs WHERE owner_kind = $1 AND owner_id = $2 AND graph_type = $3"
        ),
        &[&owner.kind(), &sql_id(owner.id()), &graph_type],
    )? {
        Some(r) => graph_from_row(&r),
        None => Err(StoreError::NotFound {
            kind: "graph",
            id: format!("{graph_type:?} of {} {}", owner.kind(), owner.id()),
        }),
    }
}

/// Stores every batch's results in the caller's transaction (see [`Store::store_results`]) with one
/// statement for all of them: thousands of agents' reports arrive together, and a statement per
/// result was a round trip per result. Rows come back in the batches' order, each `New` when it was
/// inserted now, else `Duplicate` when the same result is stored, else `Final` (the deployment ended
/// or the task's outcome was recorded differently).
fn store_batches(t: &Tx, batches: &[(u64, &[TaskResult])]) -> StoreResult<Vec<Vec<Stored>>> {
    let count: usize = batches.iter().map(|(_, rs)| rs.len()).sum();
    let mut rows = ResultRows::with_capacity(count);
    for (node_id, results) in batches {
        for r in *results {
            rows.push(*node_id, r);
        }
    }
    t.carrying(
        rows.text.iter().map(String::len).sum::<usize>()
            + rows.task.iter().map(|x| x.len() + 48).sum::<usize>(),
    );
    let inserted = t.query(
        "INSERT INTO results (node_id, deployment_id, revision, task_id, attempt, status, result) \
         SELECT v.node_id, v.deployment_id, v.revision, v.task_id, v.attempt, v.status, v.result \
         FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::BIGINT[], $4::TEXT[], $5::BIGINT[], $6::TEXT[], $7::TEXT[]) \
              WITH ORDINALITY AS v(node_id, deployment_id, revision, task_id, attempt, status, result, n) \
         WHERE EXISTS (SELECT 1 FROM deployments d WHERE d.id = v.deployment_id AND d.status = 'running') \
         ORDER BY v.n \
         ON CONFLICT DO NOTHING \
         RETURNING node_id, deployment_id, revision, task_id, attempt, status",
        &[
            &rows.node, &rows.deployment, &rows.revision, &rows.task, &rows.attempt, &rows.status,
            &rows.text,
        ],
    )?;
    let mut new: std::collections::HashSet<ResultKey> = inserted
        .iter()
        .map(|r| {
            Ok((
                col(r, 0, "task result")?,
                col(r, 1, "task result")?,
                col(r, 2, "task result")?,
                col(r, 3, "task result")?,
                col(r, 4, "task result")?,
                col(r, 5, "task result")?,
            ))
        })
        .collect::<StoreResult<_>>()?;
    let mut out = Vec::with_capacity(batches.len());
    let mut i = 0;
    for (_, results) in batches {
        let mut stored = Vec::with_capacity(results.len());
        for _ in *results {
            let key = rows.key(i);
            i += 1;
            // A key inserted now is new once: a second copy in the same batch is a duplicate of it.
            if new.remove(&key) {
                stored.push(Stored::New);
                continue;
            }
            let (node, deployment, revision, task, attempt, status) = &key;
            let same = t.opt(
                "SELECT 1 FROM results WHERE node_id = $1 AND deployment_id = $2 AND revision = $3 \
                 AND task_id = $4 AND attempt = $5 AND status = $6",
                &[node, deployment, revision, task, attempt, status],
            )?;
            stored.push(if same.is_some() {
                Stored::Duplicate
            } else {
                Stored::Final
            });
        }
        out.push(stored);
    }
    Ok(out)
}

/// A stored result's identity: node, deployment, revision, task, attempt, status.
type ResultKey = (i64, i64, i64, String, i64, String);

/// Results as columns, for one `UNNEST` insert.
struct ResultRows {
    node: Vec<i64>,
    deployment: Vec<i64>,
    revision: Vec<i64>,
    task: Vec<String>,
    attempt: Vec<i64>,
    status: Vec<String>,
    text: Vec<String>,
}

impl ResultRows {
    fn with_capacity(n: usize) -> Self {
        ResultRows {
            node: Vec::with_capacity(n),
            deployment: Vec::with_capacity(n),
            revision: Vec::with_capacity(n),
            task: Vec::with_capacity(n),
            attempt: Vec::with_capacity(n),
            status: Vec::with_capacity(n),
            text: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, node_id: u64, r: &TaskResult) {
        let status = to_json(&r.status);
        self.node.push(sql_id(node_id));
        self.deployment.push(sql_id(r.deployment_id));
        self.revision.push(sql_id(r.revision));
        self.task.push(r.task_id.clone());
        self.attempt.push(i64::from(r.attempt));
        self.status.push(status.trim_matches('"').to_string());
        self.text.push(to_json(r));
    }

    fn key(&self, i: usize) -> ResultKey {
        (
            self.node[i],
            self.deployment[i],
            self.revision[i],
            self.task[i].clone(),
            self.attempt[i],
            self.status[i].clone(),
        )
    }
}

/// Registers one node in a registration's transaction (see [`Store::register_node`]).
fn register_one(
    t: &Tx,
    reg: &NodeRegistration,
    admission: NodeAdmission,
) -> StoreResult<NodeRecord> {
    let existing = t.opt("SELECT id FROM nodes WHERE node_key = $1", &[&reg.node_key])?;
    let node_id: i64 = match existing {
        Some(row) => {
            let node_id: i64 = col(&row, 0, "node id")?;
            let node = one_node(t, id(node_id))?;
            if node.admission == NodeAdmission::Accepted {
                let fields = with_reported(&node, reg);
                t.exec(
                    "UPDATE nodes SET facts = $2, last_seen = $3, model = $4 WHERE id = $1",
                    &[
                        &node_id,
                        &to_json(&reg.facts),
                        &reg.now_ms,
                        &to_json(&fields),
                    ],
                )?;
            } else {
                t.exec(
                        "UPDATE nodes SET facts = $2, tags = $3, labels = $4, rack = $5, last_seen = $6 \
                         WHERE id = $1",
                        &[&node_id, &to_json(&reg.facts), &to_json(&reg.tags), &to_json(&reg.labels), &reg.rack, &reg.now_ms],
                    )?;
            }
            node_id
        }
        None => {
            if admission == NodeAdmission::Discovered {
                let waiting: i64 = col(
                    &t.one(
                        "SELECT COUNT(*) FROM nodes WHERE admission = 'discovered'",
                        &[],
                    )?,
                    0,
                    "count",
                )?;
                if u64::try_from(waiting).unwrap_or(0) >= reg.max_discovered {
                    return Err(StoreError::Full(format!(
                            "{waiting} nodes are waiting to be accepted, the most this controller keeps \
                             (max_discovered_nodes): accept or delete some first"
                        )));
                }
            }
            let row = t.one(
                    "INSERT INTO nodes (node_key, public_key, name, admission, facts, tags, labels, rack, \
                     registered_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
                    &[
                        &reg.node_key,
                        &reg.public_key,
                        &reg.name,
                        &admission_text(admission),
                        &to_json(&reg.facts),
                        &to_json(&reg.tags),
                        &to_json(&reg.labels),
                        &reg.rack,
                        &reg.now_ms,
                    ],
                )?;
            let new_id: i64 = col(&row, 0, "node id")?;
            // Names are unique: a second machine with the same hostname gets its id appended.
            let taken: i64 = col(
                &t.one(
                    "SELECT COUNT(*) FROM nodes WHERE name = $1 AND id != $2",
                    &[&reg.name, &new_id],
                )?,
                0,
                "count",
            )?;
            if taken > 0 {
                t.exec(
                    "UPDATE nodes SET name = $2 WHERE id = $1",
                    &[&new_id, &format!("{}-{new_id}", reg.name)],
                )?;
            }
            new_id
        }
    };
    one_node(t, id(node_id))
}
