//! Durable state behind one narrow interface.
//!
//! The controller talks to storage only through [`Store`]. Its operations are written once, in
//! [`sql`], over a backend: [`sqlite::SqliteStore`] is the embedded one (one file, WAL), the default;
//! [`postgres::PgStore`] keeps the same records in PostgreSQL (`database_url = "postgres://..."`) for
//! several controllers. Every method is one transaction: a method that fails changes nothing. Both
//! backends pass one test suite (`suite`).
//!
//! The trait is synchronous; async callers run it on tokio's blocking pool.

mod bodies;
mod compressed;
mod controllers;
pub mod postgres;
mod records;
pub mod sql;
pub mod sqlite;
#[cfg(test)]
pub(crate) mod suite;

pub use compressed::{CompressedError, CompressedJson};
pub use controllers::*;
pub use plinth_api::enrollment::{BootTarget, EnrollmentRecord};
pub use records::*;

use plinth_common::deploy::{NodeState, OldStates};
use plinth_common::json::Json;
use plinth_common::wire::{DeploymentEvent, TaskList, TaskResult};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Opens the store the configuration names: PostgreSQL when `database_url` is given (a `postgres://`
/// or `postgresql://` URL), else the SQLite file at `sqlite_path`.
pub fn open(
    database_url: Option<&str>,
    sqlite_path: &std::path::Path,
) -> StoreResult<std::sync::Arc<dyn Store>> {
    match database_url {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(std::sync::Arc::new(postgres::PgStore::open(url)?))
        }
        Some(_) => Err(StoreError::Database(
            "database_url: only postgres:// (or postgresql://) URLs are supported; leave it out to use \
             the embedded SQLite database"
                .into(),
        )),
        None => Ok(std::sync::Arc::new(sqlite::SqliteStore::open(sqlite_path)?)),
    }
}

/// The most refusals kept per node (older ones are dropped).
pub const MAX_REFUSALS_PER_NODE: usize = 100;

/// What storing one result did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now.
    New,
    /// Stored before.
    Duplicate,
    /// Not stored: its deployment finished (or does not exist).
    Final,
}

/// Storage failures.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database engine failed.
    #[error("database error: {0}")]
    Database(String),
    /// A record that must exist does not.
    #[error("{kind} {id} not found")]
    NotFound {
        /// What kind of record.
        kind: &'static str,
        /// Its id or name.
        id: String,
    },
    /// A write conflicts with existing state (a duplicate name, a running deployment, ...).
    #[error("{0}")]
    Conflict(String),
    /// Stored data cannot be read back (a bug or a hand-edited database).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A bound is reached (too many discovered nodes, ...); the message says which and what to do.
    #[error("{0}")]
    Full(String),
    /// An agent claimed an enrolled server another agent's key holds: refused, and the refusal recorded
    /// on that server's node.
    #[error("{0}")]
    Claimed(String),
    /// A step recorded under a sequencing lease that has changed hands since (another controller
    /// sequences now): nothing was written.
    #[error("{0}")]
    Fenced(String),
}

/// A cluster's records as [`Store::cluster_snapshot`] reads them, in one transaction.
#[derive(Debug, Clone)]
pub struct ClusterRecords {
    /// The cluster.
    pub cluster: ClusterRecord,
    /// Its release.
    pub release: ReleaseRecord,
    /// Its enabled plugins, in enabling order.
    pub plugins: Vec<PluginRecord>,
    /// The graphs of the types asked for that the release, the plugins and the cluster have.
    pub graphs: Vec<GraphRecord>,
    /// Its nodes, by id, without their facts (`null`).
    pub nodes: Vec<NodeRecord>,
    /// Each node's facts, in the order of `nodes`, as the compact tree a deployment holds (keys
    /// shared by the whole cluster).
    pub node_facts: Vec<Json>,
    /// What its nodes' tasks last ran against (empty unless asked for).
    pub old_states: OldStates,
}

/// An accepted node's model fields after it registers again: what it says of its name, tags, labels
/// and rack is kept apart (`reported`) when it differs from what the node is, and forgotten when not.
pub(crate) fn with_reported(node: &NodeRecord, reg: &NodeRegistration) -> NodeModelFields {
    let said = Reported {
        name: reg.name.clone(),
        tags: reg.tags.clone(),
        labels: reg.labels.clone(),
        rack: reg.rack.clone(),
    };
    let same = said.name == node.name
        && said.tags == node.tags
        && said.labels == node.labels
        && said.rack == node.rack;
    let mut fields = node.model.clone();
    fields.reported = (!same).then_some(said);
    fields
}

/// A node's stored facts as a compact tree, keys shared through `keys`.
pub(crate) fn compact_facts(text: &str, keys: &mut plinth_common::json::Keys) -> StoreResult<Json> {
    Json::read_with(text.as_bytes(), keys)
        .map_err(|e| StoreError::Corrupt(format!("node facts: {e}")))
}

/// The content hash a state blob is stored under.
pub fn blob_hash<T: serde::Serialize + ?Sized>(value: &T) -> String {
    // A tree of JSON values always serializes (its keys are strings); an empty text would only
    // make a hash no blob has.
    text_hash(&serde_json::to_string(value).unwrap_or_default())
}

/// The content hash of a state blob's JSON text (as [`blob_hash`] gives for the tree the text prints).
pub fn text_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Old states from stored task state references (`{"common": hash, "node": hash}` per node and task)
/// and the blobs `blobs_of` finds for the hashes they name; a reference whose blob is missing is left
/// out (the task's `changed()` is then true).
pub fn old_states_from(
    rows: Vec<(u64, String, serde_json::Value)>,
    blobs_of: impl FnOnce(&[String]) -> StoreResult<Vec<(String, Json)>>,
) -> StoreResult<OldStates> {
    let hashes: Vec<String> = rows
        .iter()
        .flat_map(|(_, _, r)| ["common", "node"].map(|key| r.get(key).and_then(|v| v.as_str())))
        .flatten()
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .map(str::to_string)
        .collect();
    let blobs: HashMap<String, Arc<Json>> = blobs_of(&hashes)?
        .into_iter()
        .map(|(h, v)| (h, Arc::new(v)))
        .collect();
    let mut old = OldStates::new();
    for (node, task, r) in rows {
        let part = |key: &str| {
            r.get(key)
                .and_then(|v| v.as_str())
                .and_then(|h| blobs.get(h))
                .cloned()
        };
        if let (Some(common), Some(own)) = (part("common"), part("node")) {
            old.insert(node, task, NodeState::new(common, own));
        }
    }
    Ok(old)
}

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

/// Everything the controller keeps durably.
pub trait Store: Send + Sync + 'static {
    // --- Enrollments -------------------------------------------------------------------------------

    /// Enrolls servers in one transaction, all or none (`Conflict` names the name, MAC, serial or UUID
    /// enrolled already, or a node that has the name).
    fn enroll(&self, new: &[NewEnrollment]) -> StoreResult<Vec<EnrollmentRecord>>;
    /// Every enrollment, by id.
    fn list_enrollments(&self) -> StoreResult<Vec<EnrollmentRecord>>;
    /// One enrollment by name.
    fn get_enrollment(&self, name: &str) -> StoreResult<EnrollmentRecord>;
    /// The enrollment a node was made from, if any.
    fn node_enrollment(&self, node_id: u64) -> StoreResult<Option<EnrollmentRecord>>;
    /// The enrollment holding a MAC (normalised), if any.
    fn enrollment_by_mac(&self, mac: &str) -> StoreResult<Option<EnrollmentRecord>>;
    /// An enrollment with its BMC password as sealed (`None` when it has none).
    fn enrollment_secret(&self, name: &str) -> StoreResult<(EnrollmentRecord, Option<String>)>;
    /// Every enrollment with its BMC password as sealed (for the power loop).
    fn list_enrollment_secrets(&self) -> StoreResult<Vec<(EnrollmentRecord, Option<String>)>>;
    /// Seals every stored BMC password again, in one transaction, with what `reseal` makes of it
    /// (the enrollment's name and the sealed text; `None` leaves it): after a signing key switch.
    /// Returns how many changed.
    fn reseal_enrollment_secrets(
        &self,
        reseal: &mut dyn FnMut(&str, &str) -> Option<String>,
    ) -> StoreResult<usize>;
    /// Deletes an enrollment; its node, if any, stays.
    fn delete_enrollment(&self, name: &str) -> StoreResult<()>;
    /// Opens or closes an enrollment to a new agent key, and sets what it boots when given.
    fn set_enrollment_boot(
        &self,
        name: &str,
        rekey: bool,
        boot: Option<BootTarget>,
    ) -> StoreResult<EnrollmentRecord>;
    /// Records power states read from BMCs.
    fn record_power(&self, readings: &[PowerReading]) -> StoreResult<()>;

    // --- Nodes -------------------------------------------------------------------------------------

    /// Changes a node's name, labels, roles, pending roles and model fields in one transaction:
    /// `change` gets the node as stored and edits it; an error from it changes nothing; a name another
    /// node has is a `Conflict`. Returns the node as written.
    fn modify_node(
        &self,
        id: u64,
        change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
    ) -> StoreResult<NodeRecord>;

    /// A page of nodes by id (see [`NodeFilter`]).
    fn list_nodes_page(&self, filter: &NodeFilter) -> StoreResult<Vec<NodeRecord>>;

    /// Creates the node for a key (its name made unique; refused when `max_discovered` nodes are
    /// discovered already and it would be one more), or refreshes its facts. A discovered node's tags,
    /// labels and rack follow what it says; an accepted node's stay as they are, and what it says of its
    /// name, tags, labels and rack is kept apart (`reported`). A name never changes here.
    fn register_node(
        &self,
        reg: &NodeRegistration,
        admission: NodeAdmission,
    ) -> StoreResult<NodeRecord> {
        self.register_nodes(&[(reg, admission)])?
            .pop()
            .unwrap_or_else(|| {
                Err(StoreError::Conflict(
                    "the registration was not answered".into(),
                ))
            })
    }
    /// Registers several nodes in one transaction (one commit for many agents registering at once),
    /// each as [`Store::register_node`] registers it, in order: what became of each. A node refused for
    /// room (`Full`) does not stop the others; any other error fails the transaction, and then none is
    /// registered.
    ///
    /// An agent whose MACs, serial or UUID name an enrolled server becomes that server's node (its name,
    /// tags, labels and rack the enrollment's, never the agent's); another key claiming a server whose
    /// node one key holds is refused (`Claimed`, recorded on that node) unless the enrollment is open to
    /// a new key, when the node takes the new key. MACs naming several enrolled servers are a `Conflict`
    /// for that agent alone.
    fn register_nodes(
        &self,
        regs: &[(&NodeRegistration, NodeAdmission)],
    ) -> StoreResult<Vec<StoreResult<NodeRecord>>>;
    /// All nodes, by id.
    fn list_nodes(&self) -> StoreResult<Vec<NodeRecord>>;
    /// Every node's id and name, without the rest (reports need only names).
    fn node_names(&self) -> StoreResult<Vec<(u64, String)>>;
    /// How many nodes have each (status, admission), and deployments each status: two counting
    /// queries, whatever the fleet's size (a metrics scrape asks every few seconds).
    fn counts(&self) -> StoreResult<Counts>;
    /// One node.
    fn get_node(&self, id: u64) -> StoreResult<NodeRecord>;
    /// Sets a node's admission.
    fn set_admission(&self, id: u64, admission: NodeAdmission) -> StoreResult<NodeRecord>;
    /// Deletes a node and what belongs to it. Refused while it takes part in a running deployment.
    fn delete_node(&self, id: u64) -> StoreResult<()>;
    /// Records when nodes were last heard from (milliseconds since the epoch).
    fn touch_nodes(&self, seen: &[(u64, i64)]) -> StoreResult<()>;
    /// Assigns nodes to a cluster with pending roles (replacing their pending roles).
    fn assign_nodes(&self, cluster_id: u64, nodes: &[NodeAssignment]) -> StoreResult<()>;
    /// Takes nodes out of their cluster.
    fn unassign_nodes(&self, cluster_id: u64, node_ids: &[u64]) -> StoreResult<()>;

    // --- Releases, clusters, graphs -------------------------------------------------------------

    /// Creates a release with its graphs by type.
    fn create_release(
        &self,
        release: &NewRelease,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<ReleaseRecord>;
    /// All releases.
    fn list_releases(&self) -> StoreResult<Vec<ReleaseRecord>>;
    /// One release.
    fn get_release(&self, id: u64) -> StoreResult<ReleaseRecord>;
    /// Creates a cluster.
    fn create_cluster(&self, cluster: &NewCluster) -> StoreResult<ClusterRecord>;
    /// All clusters.
    fn list_clusters(&self) -> StoreResult<Vec<ClusterRecord>>;
    /// One cluster.
    fn get_cluster(&self, id: u64) -> StoreResult<ClusterRecord>;
    /// The graphs an owner has, by type.
    fn list_graphs(&self, owner: GraphOwner) -> StoreResult<Vec<GraphRecord>>;
    /// One graph of an owner.
    fn get_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord>;
    /// Creates (`replace` false: conflict if it exists) or replaces a graph.
    fn put_graph(
        &self,
        owner: GraphOwner,
        graph_type: &str,
        graph: &GraphBody,
        replace: bool,
    ) -> StoreResult<GraphRecord>;
    /// Deletes a graph.
    fn delete_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<()>;
    /// Every graph of every owner, by id.
    fn list_all_graphs(&self) -> StoreResult<Vec<GraphRecord>>;
    /// One graph by its id.
    fn graph_by_id(&self, id: u64) -> StoreResult<GraphRecord>;

    /// Replaces a release's data (roles_metadata, tags_metadata, ...) after `check` accepts the release
    /// as it would be, in one transaction.
    fn update_release_data(
        &self,
        id: u64,
        change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
    ) -> StoreResult<ReleaseRecord>;

    /// Resets a cluster as Nailgun resets an environment, in one transaction: its nodes' roles pending
    /// again, their status `discover`, what their tasks last ran against forgotten; refused
    /// (`Conflict`) while a deployment of it runs. Returns its nodes.
    fn reset_cluster(&self, id: u64) -> StoreResult<Vec<u64>>;
    /// Deletes a cluster with what it owns (graphs, strategies, configuration, deployments and their
    /// lists, events and results), in one transaction; its nodes stay, unassigned. Refused
    /// (`Conflict`) while a deployment of it runs. Returns the nodes it had.
    fn delete_cluster(&self, id: u64) -> StoreResult<Vec<u64>>;
    /// Changes a cluster's name, settings, enabled plugins and user-defined tags in one transaction;
    /// `change` sees the cluster and its nodes as stored and may refuse (another cluster's name is a
    /// `Conflict`).
    fn modify_cluster(
        &self,
        id: u64,
        change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
    ) -> StoreResult<ClusterRecord>;

    // --- Plugins -----------------------------------------------------------------------------------

    /// Registers a plugin with its graphs (409 when the name and version exist).
    fn create_plugin(
        &self,
        plugin: &NewPlugin,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<PluginRecord>;
    /// Every plugin.
    fn list_plugins(&self) -> StoreResult<Vec<PluginRecord>>;
    /// One plugin.
    fn get_plugin(&self, id: u64) -> StoreResult<PluginRecord>;
    /// Removes a plugin and its graphs; refused while a cluster has it enabled.
    fn delete_plugin(&self, id: u64) -> StoreResult<()>;
    /// Replaces plugins' data and graphs (`plugins sync`), all in one transaction; refused (409) when
    /// a role a plugin drops is held by a node of a cluster that has it enabled.
    fn replace_plugins(
        &self,
        plugins: &[(
            u64,
            NewPlugin,
            std::collections::BTreeMap<String, GraphBody>,
        )],
    ) -> StoreResult<Vec<PluginRecord>>;

    // --- Task states (what each task last saw, for `changed()`) ------------------------------------

    /// Records the state each task ran against, per node, after it succeeded there: `rows` are
    /// `(node, task, reference)`, the reference naming `blobs` by their content hash (stored once).
    fn save_task_states(&self, blobs: &[StateBlob], rows: &[StateRow]) -> StoreResult<()>;
    /// The recorded state references of these nodes' tasks.
    fn task_states(&self, node_ids: &[u64]) -> StoreResult<Vec<(u64, String, serde_json::Value)>>;
    /// Stored state blobs by content hash (missing ones are left out).
    fn state_blobs(&self, hashes: &[String]) -> StoreResult<Vec<(String, Json)>>;
    /// What a deployment was resolved from (its inputs snapshot).
    fn deployment_inputs(&self, id: u64) -> StoreResult<serde_json::Value>;
    /// Everything a deployment of a cluster resolves from, read in one transaction so that no write
    /// lands between its parts: the cluster, its release, its enabled plugins (in enabling order), the
    /// graphs of `graph_types` of all three, its nodes, and (when `old_states`) what each of its nodes'
    /// tasks last ran against.
    fn cluster_snapshot(
        &self,
        cluster_id: u64,
        graph_types: &[&str],
        old_states: bool,
    ) -> StoreResult<ClusterRecords>;
    /// What these nodes' tasks last ran against, read in one transaction.
    fn old_states(&self, node_ids: &[u64]) -> StoreResult<OldStates>;

    // --- Deployments --------------------------------------------------------------------------------

    /// Starts a deployment: refuses if the cluster has a running one. The record answered leaves the
    /// state out (`null`), as lists do: the caller has it.
    fn create_deployment(&self, new: &NewDeployment) -> StoreResult<DeploymentRecord>;
    /// One deployment.
    fn get_deployment(&self, id: u64) -> StoreResult<DeploymentRecord>;
    /// Deployments, newest first, optionally of one cluster.
    fn list_deployments(&self, cluster_id: Option<u64>) -> StoreResult<Vec<DeploymentRecord>>;
    /// Deployments still running (resumed after a restart).
    fn running_deployments(&self) -> StoreResult<Vec<DeploymentRecord>>;
    /// Publishes task lists with the orchestration state and events that go with them, atomically.
    /// Assigns each list its revision from one counter of the whole controller, so a revision is above
    /// every revision ever issued, to any node (a node deleted and registered again included). Nothing a
    /// node sends moves it.
    fn publish_lists(
        &self,
        deployment_id: u64,
        lists: &mut [TaskList],
        state: &serde_json::Value,
        events: &[DeploymentEvent],
    ) -> StoreResult<()>;
    /// Ends a deployment: its final state, status and events; pending roles become deployed roles on the
    /// nodes that succeeded, and nodes take their status (ready or error). Atomically.
    fn finish_deployment(&self, id: u64, end: &DeploymentEnd<'_>) -> StoreResult<()>;
    /// Records one step of a running deployment atomically: publishes its lists (with revisions), saves
    /// its state, appends its events, records task states and, when it ended, ends it as
    /// [`Store::finish_deployment`] does. A conflict when the deployment is not running.
    fn record_progress(&self, id: u64, progress: &mut Progress<'_>) -> StoreResult<()>;
    /// Appends events to a deployment's stream.
    fn append_events(&self, id: u64, events: &[DeploymentEvent]) -> StoreResult<()>;
    /// A deployment's events after sequence number `after`, oldest first.
    fn events(&self, deployment_id: u64, after: u64) -> StoreResult<Vec<(u64, DeploymentEvent)>>;
    /// The list issued to a node with a revision, if any.
    fn issued_list(&self, node_id: u64, revision: u64) -> StoreResult<Option<TaskList>>;
    /// Every list published for a deployment, by node and then revision (a node's latest comes last).
    fn published_lists(&self, deployment_id: u64) -> StoreResult<Vec<TaskList>>;
    /// Stores results of one node idempotently, each only while its deployment is running (a finished
    /// deployment's record is final); returns what became of each, in order.
    fn store_results(&self, node_id: u64, results: &[TaskResult]) -> StoreResult<Vec<Stored>> {
        Ok(self
            .store_result_batches(&[(node_id, results)])?
            .pop()
            .unwrap_or_default())
    }
    /// Stores the results of several nodes in one transaction (one commit for many agents' reports), as
    /// [`Store::store_results`] stores each node's; returns what became of each, per node, in order.
    fn store_result_batches(
        &self,
        batches: &[(u64, &[TaskResult])],
    ) -> StoreResult<Vec<Vec<Stored>>>;
    /// Every result of a deployment, by node, in arrival order.
    fn deployment_results(&self, deployment_id: u64) -> StoreResult<Vec<(u64, TaskResult)>>;

    /// Records what a node sent that was refused (a result, a list it refused), newest kept: at most
    /// [`MAX_REFUSALS_PER_NODE`] per node.
    fn record_refusals(&self, node_id: u64, refusals: &[NewRefusal]) -> StoreResult<()>;
    /// A node's recorded refusals, newest first.
    fn node_refusals(&self, node_id: u64) -> StoreResult<Vec<RefusalRecord>>;

    // --- Deployment strategies ---------------------------------------------------------------------

    /// Creates (`replace` false: conflict if it exists) or replaces a cluster's strategy.
    fn put_strategy(
        &self,
        cluster_id: u64,
        name: &str,
        document: &serde_json::Value,
        source: &serde_json::Value,
        replace: bool,
    ) -> StoreResult<StrategyRecord>;
    /// A cluster's strategies, by name.
    fn list_strategies(&self, cluster_id: u64) -> StoreResult<Vec<StrategyRecord>>;
    /// One strategy.
    fn get_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord>;
    /// Deletes a strategy.
    fn delete_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<()>;
    /// Creates or replaces the cluster's deployment configuration (one per cluster).
    fn put_configuration(&self, record: &ConfigurationRecord) -> StoreResult<ConfigurationRecord>;
    /// The cluster's deployment configuration (not found when it has none).
    fn get_configuration(&self, cluster_id: u64) -> StoreResult<ConfigurationRecord>;
    /// Deletes the cluster's deployment configuration.
    fn delete_configuration(&self, cluster_id: u64) -> StoreResult<()>;

    // --- Operator tokens -----------------------------------------------------------------------------

    /// Stores a token (its SHA-256, never the token); a conflict when a token not revoked has the name.
    fn create_token(&self, name: &str, hash: &str, role: TokenRole) -> StoreResult<TokenRecord>;
    /// All tokens, revoked ones included.
    fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>>;
    /// The token with this SHA-256 (hex), revoked or not. Asked on every operator request, so a
    /// revocation takes effect at once, in every controller process.
    fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>>;
    /// Revokes the tokens named `name` that are not revoked yet; not found when there are none.
    /// Returns how many were revoked.
    fn revoke_token(&self, name: &str, now_ms: i64) -> StoreResult<usize>;

    // --- Health ------------------------------------------------------------------------------------

    /// The database answers a read: the schema version it has and the one this controller knows (equal
    /// once its migrations are applied; a newer controller's migrations make the first larger).
    fn schema_versions(&self) -> StoreResult<SchemaVersions>;

    // --- Several controllers ----------------------------------------------------------------------

    /// Records a controller's heartbeat (and forgets controllers silent for an hour).
    fn beat_controller(&self, beat: &ControllerBeat) -> StoreResult<()>;
    /// Every controller heard from in the last hour, by id.
    fn controllers(&self) -> StoreResult<Vec<ControllerRecord>>;
    /// Claims or renews the sequencing lease for `holder` until `now_ms + ttl_ms`: granted when it is
    /// free, expired, or `holder`'s (see [`claim_outcome`]); `held` is the token the claimant holds, if
    /// any. Returns the token when `holder` holds the lease now.
    fn claim_lease(
        &self,
        holder: &str,
        held: Option<u64>,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Option<u64>>;
    /// Gives the lease up at once (a clean stop), if `holder` holds it under `token`.
    fn release_lease(&self, holder: &str, token: u64) -> StoreResult<()>;
    /// The sequencing lease as stored, if any controller ever held it.
    fn lease(&self) -> StoreResult<Option<LeaseRecord>>;
    /// From now on, every step recorded ([`Store::record_progress`]) first checks that this fence still
    /// holds the lease, and is refused with [`StoreError::Fenced`] otherwise; `None` checks nothing
    /// (one controller alone). The embedded SQLite store serves one controller and checks nothing.
    fn set_fence(&self, _fence: Option<Fence>) {}
    /// Asks for a running deployment to be cancelled by `by` (the controller that sequences it does it).
    /// A conflict when it is not running. Returns the deployment as it is.
    fn request_cancel(&self, id: u64, by: &str) -> StoreResult<DeploymentRecord>;
    /// Running deployments someone asked to cancel, with who asked.
    fn cancel_requests(&self) -> StoreResult<Vec<(u64, String)>>;
    /// The ids of the running deployments.
    fn running_ids(&self) -> StoreResult<Vec<u64>>;
    /// Lists of running deployments published with a revision above `revision`, by revision: whole for
    /// the nodes `whole` selects, as a [`Published::Noted`] for the others. A controller that does not
    /// sequence holds only its own agents' lists, so it reads only those whole: a phase of 40,000 lists
    /// is then not read, parsed and dropped again by every controller.
    fn lists_after(
        &self,
        revision: u64,
        whole: &dyn Fn(u64) -> bool,
    ) -> StoreResult<Vec<Published>>;
    /// These nodes' results in a deployment, by node (nodes without any left out), each in arrival order.
    fn results_of_nodes(
        &self,
        deployment_id: u64,
        node_ids: &[u64],
    ) -> StoreResult<Vec<(u64, Vec<TaskResult>)>>;
    /// Sends a notice to every controller listening on this database (after the caller's writes
    /// committed). Best effort: a lost notice is made up for by the periodic checks.
    fn notify(&self, _notice: &Notice) {}
    /// Sends several notices as [`Store::notify`] sends one (in one round trip where the database
    /// allows: a group of registrations or results notices every node of it).
    fn notify_all(&self, notices: &[Notice]) {
        for notice in notices {
            self.notify(notice);
        }
    }
    /// Notices other controllers send (each controller's own included), if this database carries them:
    /// the first caller gets the receiver; `None` for SQLite (one controller alone).
    fn listen(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notice>> {
        None
    }
    /// How the database connections are used now, for the metrics; `None` where there is no pool
    /// (SQLite's one file).
    fn pool_use(&self) -> Option<PoolUse> {
        None
    }
}

/// The database connection pool's use at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open (idle or in use).
    pub open: usize,
    /// Open connections nobody holds.
    pub idle: usize,
    /// The most the pool opens.
    pub max: usize,
}
