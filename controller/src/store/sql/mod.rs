//! The store written once: every operation of [`Store`] as SQL both SQLite and PostgreSQL run,
//! against the small interface in [`access`] that each backend implements (its connections and
//! transactions, its placeholders and types, the few fragments of SQL that differ, its bulk writes).
//!
//! [`SqlStore`] is the store over a [`Backend`]; `SqliteStore` and `PgStore` are its two instances.
//! Each method is one transaction of the kind its work needs ([`TxKind`]): reads from one snapshot,
//! writes, writes that queue behind others that would conflict, and the heartbeat's own.

pub mod access;
mod catalog;
mod controllers;
mod deployments;
mod enrollments;
mod lifecycle;
pub(crate) mod nodes;
mod results;
mod states;
mod tokens;

pub use access::{Arg, Backend, Queue, Tx, TxKind};

use super::*;
use deployments::Columns;
use plinth_common::json::Keys;
use std::collections::BTreeMap;

/// The store over a database `B`.
pub struct SqlStore<B> {
    pub(crate) backend: B,
    /// Checked by every recorded step when set (see [`Store::set_fence`]).
    fence: std::sync::Mutex<Option<Fence>>,
}

impl<B: Backend> SqlStore<B> {
    /// The store over an opened (and migrated) database.
    pub(crate) fn new(backend: B) -> Self {
        SqlStore {
            backend,
            fence: std::sync::Mutex::new(None),
        }
    }

    /// Runs `f` in one transaction of `kind`.
    pub(crate) fn run<T>(
        &self,
        kind: TxKind,
        mut f: impl FnMut(&dyn Tx) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.backend.run(kind, &mut f)
    }

    /// Runs `f` in a transaction that only reads.
    pub(crate) fn read<T>(&self, f: impl FnMut(&dyn Tx) -> StoreResult<T>) -> StoreResult<T> {
        self.run(TxKind::Read, f)
    }

    /// Runs `f` in a transaction that writes.
    pub(crate) fn write<T>(&self, f: impl FnMut(&dyn Tx) -> StoreResult<T>) -> StoreResult<T> {
        self.run(TxKind::Write, f)
    }

    fn fence(&self) -> Option<Fence> {
        self.fence.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl<B: Backend> Store for SqlStore<B> {
    fn register_nodes(
        &self,
        regs: &[(&NodeRegistration, NodeAdmission)],
    ) -> StoreResult<Vec<StoreResult<NodeRecord>>> {
        self.run(TxKind::Queued(Queue::Registration), |t| {
            regs.iter()
                .map(
                    |(reg, admission)| match nodes::register_one(t, reg, *admission) {
                        // Refused before it wrote anything: the others go on.
                        Err(e @ (StoreError::Full(_) | StoreError::Conflict(_))) => Ok(Err(e)),
                        // Refused, with the refusal written on the holder's node.
                        Err(e @ StoreError::Claimed(_)) => Ok(Err(e)),
                        other => other.map(Ok),
                    },
                )
                .collect()
        })
    }

    fn enroll(&self, new: &[NewEnrollment]) -> StoreResult<Vec<EnrollmentRecord>> {
        self.write(|t| enrollments::enroll(t, new))
    }

    fn list_enrollments(&self) -> StoreResult<Vec<EnrollmentRecord>> {
        self.read(enrollments::list)
    }

    fn get_enrollment(&self, name: &str) -> StoreResult<EnrollmentRecord> {
        self.read(|t| enrollments::by_name(t, name))
    }

    fn node_enrollment(&self, node_id: u64) -> StoreResult<Option<EnrollmentRecord>> {
        self.read(|t| enrollments::of_node(t, node_id))
    }

    fn enrollment_by_mac(&self, mac: &str) -> StoreResult<Option<EnrollmentRecord>> {
        self.read(|t| enrollments::by_mac(t, mac))
    }

    fn enrollment_secret(&self, name: &str) -> StoreResult<(EnrollmentRecord, Option<String>)> {
        self.read(|t| {
            Ok((
                enrollments::by_name(t, name)?,
                enrollments::sealed_secret(t, name)?,
            ))
        })
    }

    fn list_enrollment_secrets(&self) -> StoreResult<Vec<(EnrollmentRecord, Option<String>)>> {
        self.read(enrollments::list_with_secrets)
    }

    fn reset_cluster(&self, id: u64) -> StoreResult<Vec<u64>> {
        self.write(|t| lifecycle::reset_cluster(t, id))
    }

    fn delete_cluster(&self, id: u64) -> StoreResult<Vec<u64>> {
        self.write(|t| lifecycle::delete_cluster(t, id))
    }

    fn delete_enrollment(&self, name: &str) -> StoreResult<()> {
        self.write(|t| enrollments::delete(t, name))
    }

    fn reseal_enrollment_secrets(
        &self,
        reseal: &mut dyn FnMut(&str, &str) -> Option<String>,
    ) -> StoreResult<usize> {
        self.write(|t| enrollments::reseal(t, reseal))
    }

    fn set_enrollment_boot(
        &self,
        name: &str,
        rekey: bool,
        boot: Option<BootTarget>,
    ) -> StoreResult<EnrollmentRecord> {
        self.write(|t| enrollments::set_boot(t, name, rekey, boot))
    }

    fn record_power(&self, readings: &[PowerReading]) -> StoreResult<()> {
        self.write(|t| enrollments::set_power(t, readings))
    }

    fn modify_node(
        &self,
        node_id: u64,
        change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
    ) -> StoreResult<NodeRecord> {
        self.write(|t| nodes::modify_node(t, node_id, change))
    }

    fn list_nodes_page(&self, filter: &NodeFilter) -> StoreResult<Vec<NodeRecord>> {
        self.read(|t| nodes::list_nodes_page(t, filter))
    }

    fn list_nodes(&self) -> StoreResult<Vec<NodeRecord>> {
        self.read(|t| nodes::query_nodes(t, "", &[]))
    }

    fn node_names(&self) -> StoreResult<Vec<(u64, String)>> {
        self.read(nodes::node_names)
    }

    fn counts(&self) -> StoreResult<Counts> {
        self.read(nodes::counts)
    }

    fn get_node(&self, node_id: u64) -> StoreResult<NodeRecord> {
        self.read(|t| nodes::one_node(t, node_id))
    }

    fn set_admission(&self, node_id: u64, admission: NodeAdmission) -> StoreResult<NodeRecord> {
        self.write(|t| nodes::set_admission(t, node_id, admission))
    }

    fn delete_node(&self, node_id: u64) -> StoreResult<()> {
        self.write(|t| nodes::delete_node(t, node_id))
    }

    fn touch_nodes(&self, seen: &[(u64, i64)]) -> StoreResult<()> {
        let (ids, times) = nodes::latest_seen(seen);
        if ids.is_empty() {
            return Ok(());
        }
        self.run(TxKind::Committed, |t| nodes::touch_nodes(t, &ids, &times))
    }

    fn assign_nodes(&self, cluster_id: u64, assigned: &[NodeAssignment]) -> StoreResult<()> {
        self.write(|t| nodes::assign_nodes(t, cluster_id, assigned))
    }

    fn unassign_nodes(&self, cluster_id: u64, node_ids: &[u64]) -> StoreResult<()> {
        self.write(|t| nodes::unassign_nodes(t, cluster_id, node_ids))
    }

    fn create_release(
        &self,
        release: &NewRelease,
        graphs: &BTreeMap<String, GraphBody>,
    ) -> StoreResult<ReleaseRecord> {
        self.write(|t| catalog::create_release(t, release, graphs))
    }

    fn list_releases(&self) -> StoreResult<Vec<ReleaseRecord>> {
        self.read(catalog::list_releases)
    }

    fn get_release(&self, release_id: u64) -> StoreResult<ReleaseRecord> {
        self.read(|t| catalog::release_row(t, release_id))
    }

    fn create_cluster(&self, cluster: &NewCluster) -> StoreResult<ClusterRecord> {
        self.write(|t| catalog::create_cluster(t, cluster))
    }

    fn list_clusters(&self) -> StoreResult<Vec<ClusterRecord>> {
        self.read(catalog::list_clusters)
    }

    fn get_cluster(&self, cluster_id: u64) -> StoreResult<ClusterRecord> {
        self.read(|t| catalog::cluster_row(t, cluster_id))
    }

    fn list_graphs(&self, owner: GraphOwner) -> StoreResult<Vec<GraphRecord>> {
        self.read(|t| catalog::list_graphs(t, owner))
    }

    fn get_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord> {
        self.read(|t| catalog::graph_row(t, owner, graph_type))
    }

    fn put_graph(
        &self,
        owner: GraphOwner,
        graph_type: &str,
        graph: &GraphBody,
        replace: bool,
    ) -> StoreResult<GraphRecord> {
        self.write(|t| catalog::put_graph(t, owner, graph_type, graph, replace))
    }

    fn delete_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<()> {
        self.write(|t| catalog::delete_graph(t, owner, graph_type))
    }

    fn list_all_graphs(&self) -> StoreResult<Vec<GraphRecord>> {
        self.read(catalog::list_all_graphs)
    }

    fn graph_by_id(&self, graph_id: u64) -> StoreResult<GraphRecord> {
        self.read(|t| catalog::graph_by_id(t, graph_id))
    }

    fn update_release_data(
        &self,
        release_id: u64,
        change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
    ) -> StoreResult<ReleaseRecord> {
        self.write(|t| catalog::update_release_data(t, release_id, change))
    }

    fn modify_cluster(
        &self,
        cluster_id: u64,
        change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
    ) -> StoreResult<ClusterRecord> {
        self.write(|t| catalog::modify_cluster(t, cluster_id, change))
    }

    fn create_plugin(
        &self,
        plugin: &NewPlugin,
        graphs: &BTreeMap<String, GraphBody>,
    ) -> StoreResult<PluginRecord> {
        self.write(|t| catalog::create_plugin(t, plugin, graphs))
    }

    fn list_plugins(&self) -> StoreResult<Vec<PluginRecord>> {
        self.read(catalog::list_plugins)
    }

    fn get_plugin(&self, plugin_id: u64) -> StoreResult<PluginRecord> {
        self.read(|t| catalog::plugin_row(t, plugin_id))
    }

    fn delete_plugin(&self, plugin_id: u64) -> StoreResult<()> {
        self.write(|t| catalog::delete_plugin(t, plugin_id))
    }

    fn replace_plugins(
        &self,
        plugins: &[(u64, NewPlugin, BTreeMap<String, GraphBody>)],
    ) -> StoreResult<Vec<PluginRecord>> {
        self.write(|t| catalog::replace_plugins(t, plugins))
    }

    fn save_task_states(&self, blobs: &[StateBlob], rows: &[StateRow]) -> StoreResult<()> {
        self.write(|t| states::save_task_states(t, blobs, rows))
    }

    fn task_states(&self, node_ids: &[u64]) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
        self.read(|t| states::task_states(t, node_ids))
    }

    fn state_blobs(&self, hashes: &[String]) -> StoreResult<Vec<(String, Json)>> {
        self.read(|t| states::state_blobs(t, hashes))
    }

    fn deployment_inputs(&self, dep_id: u64) -> StoreResult<serde_json::Value> {
        self.read(|t| deployments::deployment_inputs(t, dep_id))
    }

    fn cluster_snapshot(
        &self,
        cluster_id: u64,
        graph_types: &[&str],
        old_states: bool,
    ) -> StoreResult<ClusterRecords> {
        self.read(|t| {
            let cluster = catalog::cluster_row(t, cluster_id)?;
            let release = catalog::release_row(t, cluster.release_id)?;
            let plugins = cluster
                .data
                .plugins
                .iter()
                .map(|p| catalog::plugin_row(t, *p))
                .collect::<StoreResult<Vec<_>>>()?;
            let owners = std::iter::once(GraphOwner::Release(release.id))
                .chain(plugins.iter().map(|p| GraphOwner::Plugin(p.id)))
                .chain(std::iter::once(GraphOwner::Cluster(cluster.id)));
            let mut graphs = Vec::new();
            for owner in owners {
                for graph_type in graph_types {
                    match catalog::graph_row(t, owner, graph_type) {
                        Ok(g) => graphs.push(g),
                        Err(StoreError::NotFound { kind: "graph", .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            let (nodes, node_facts) = nodes::query_nodes_compact(
                t,
                "WHERE cluster_id = $1",
                access::args![access::sql_id(cluster_id)],
                &mut Keys::default(),
            )?;
            let old_states = if old_states {
                let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
                old_states_from(states::task_states(t, &ids)?, |h| states::state_blobs(t, h))?
            } else {
                OldStates::new()
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

    fn old_states(&self, node_ids: &[u64]) -> StoreResult<OldStates> {
        self.read(|t| {
            old_states_from(states::task_states(t, node_ids)?, |h| {
                states::state_blobs(t, h)
            })
        })
    }

    fn create_deployment(&self, new: &NewDeployment) -> StoreResult<DeploymentRecord> {
        self.write(|t| deployments::create_deployment(t, new))
    }

    fn get_deployment(&self, dep_id: u64) -> StoreResult<DeploymentRecord> {
        self.read(|t| deployments::deployment_by_id(t, Columns::Whole, dep_id))
    }

    fn list_deployments(&self, cluster_id: Option<u64>) -> StoreResult<Vec<DeploymentRecord>> {
        self.read(|t| match cluster_id {
            Some(c) => deployments::query_deployments(
                t,
                Columns::WithoutState,
                "WHERE cluster_id = $1",
                access::args![access::sql_id(c)],
            ),
            None => deployments::query_deployments(t, Columns::WithoutState, "", &[]),
        })
    }

    fn running_deployments(&self) -> StoreResult<Vec<DeploymentRecord>> {
        self.read(|t| {
            deployments::query_deployments(t, Columns::Whole, "WHERE status = 'running'", &[])
        })
    }

    fn publish_lists(
        &self,
        deployment_id: u64,
        lists: &mut [TaskList],
        state: &serde_json::Value,
        events: &[DeploymentEvent],
    ) -> StoreResult<()> {
        let state = compressed::packed(state, "the deployment's state")?;
        self.run(TxKind::Queued(Queue::Revision), |t| {
            deployments::set_state(t, deployment_id, Some(&state), DeploymentStatus::Running)?;
            deployments::append_events(t, deployment_id, events)?;
            deployments::insert_lists(t, deployment_id, lists)
        })
    }

    fn finish_deployment(&self, dep_id: u64, end: &DeploymentEnd<'_>) -> StoreResult<()> {
        let state = compressed::packed(end.state, "the deployment's state")?;
        self.write(|t| deployments::finish(t, dep_id, Some(&state), end.events, &Ending::of(end)))
    }

    fn record_progress(&self, dep_id: u64, progress: &mut Progress<'_>) -> StoreResult<()> {
        // Publishing takes revisions from the one counter: such steps take turns (see `Queue`).
        let kind = if progress.lists.is_empty() {
            TxKind::Write
        } else {
            TxKind::Queued(Queue::Revision)
        };
        let fence = self.fence();
        self.run(kind, |t| {
            deployments::record_progress(t, dep_id, progress, fence.as_ref())
        })
    }

    fn append_events(&self, dep_id: u64, events: &[DeploymentEvent]) -> StoreResult<()> {
        self.write(|t| deployments::append_events(t, dep_id, events))
    }

    fn events(&self, deployment_id: u64, after: u64) -> StoreResult<Vec<(u64, DeploymentEvent)>> {
        self.read(|t| deployments::events(t, deployment_id, after))
    }

    fn issued_list(&self, node_id: u64, revision: u64) -> StoreResult<Option<TaskList>> {
        self.read(|t| deployments::issued_list(t, node_id, revision))
    }

    fn published_lists(&self, deployment_id: u64) -> StoreResult<Vec<TaskList>> {
        self.read(|t| deployments::published_lists(t, deployment_id))
    }

    fn store_result_batches(
        &self,
        batches: &[(u64, &[TaskResult])],
    ) -> StoreResult<Vec<Vec<Stored>>> {
        self.write(|t| results::store_batches(t, batches))
    }

    fn deployment_results(&self, deployment_id: u64) -> StoreResult<Vec<(u64, TaskResult)>> {
        self.read(|t| results::deployment_results(t, deployment_id))
    }

    fn record_refusals(&self, node_id: u64, refusals: &[NewRefusal]) -> StoreResult<()> {
        self.write(|t| results::record_refusals(t, node_id, refusals))
    }

    fn node_refusals(&self, node_id: u64) -> StoreResult<Vec<RefusalRecord>> {
        self.read(|t| results::node_refusals(t, node_id))
    }

    fn put_strategy(
        &self,
        cluster_id: u64,
        name: &str,
        document: &serde_json::Value,
        source: &serde_json::Value,
        replace: bool,
    ) -> StoreResult<StrategyRecord> {
        self.write(|t| catalog::put_strategy(t, cluster_id, name, document, source, replace))
    }

    fn list_strategies(&self, cluster_id: u64) -> StoreResult<Vec<StrategyRecord>> {
        self.read(|t| catalog::list_strategies(t, cluster_id))
    }

    fn get_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
        self.read(|t| catalog::strategy_row(t, cluster_id, name))
    }

    fn delete_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<()> {
        self.write(|t| catalog::delete_strategy(t, cluster_id, name))
    }

    fn put_configuration(&self, record: &ConfigurationRecord) -> StoreResult<ConfigurationRecord> {
        self.write(|t| catalog::put_configuration(t, record))
    }

    fn get_configuration(&self, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
        self.read(|t| catalog::configuration_row(t, cluster_id))
    }

    fn delete_configuration(&self, cluster_id: u64) -> StoreResult<()> {
        self.write(|t| catalog::delete_configuration(t, cluster_id))
    }

    fn create_token(&self, name: &str, hash: &str, role: TokenRole) -> StoreResult<TokenRecord> {
        self.write(|t| tokens::create_token(t, name, hash, role))
    }

    fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        self.read(tokens::list_tokens)
    }

    fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        self.read(|t| tokens::token_by_hash(t, hash))
    }

    fn revoke_token(&self, name: &str, now_ms: i64) -> StoreResult<usize> {
        self.write(|t| tokens::revoke_token(t, name, now_ms))
    }

    fn beat_controller(&self, beat: &ControllerBeat) -> StoreResult<()> {
        self.run(TxKind::Beat, |t| controllers::beat(t, beat))
    }

    fn controllers(&self) -> StoreResult<Vec<ControllerRecord>> {
        self.read(controllers::controllers)
    }

    fn claim_lease(
        &self,
        holder: &str,
        held: Option<u64>,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Option<u64>> {
        self.run(TxKind::Beat, |t| {
            controllers::claim(t, holder, held, now_ms, ttl_ms)
        })
    }

    fn release_lease(&self, holder: &str, token: u64) -> StoreResult<()> {
        self.write(|t| controllers::release(t, holder, token))
    }

    fn schema_versions(&self) -> StoreResult<SchemaVersions> {
        let database = self.read(|t| t.int(B::SCHEMA_VERSION, access::args![]))?;
        Ok(SchemaVersions {
            database: usize::try_from(database).unwrap_or(0),
            controller: B::MIGRATIONS,
        })
    }

    fn lease(&self) -> StoreResult<Option<LeaseRecord>> {
        self.read(|t| controllers::lease(t, false))
    }

    fn set_fence(&self, fence: Option<Fence>) {
        // One controller alone on its database checks nothing.
        if B::SHARED {
            *self.fence.lock().unwrap_or_else(|p| p.into_inner()) = fence;
        }
    }

    fn request_cancel(&self, dep_id: u64, by: &str) -> StoreResult<DeploymentRecord> {
        self.write(|t| deployments::request_cancel(t, dep_id, by))
    }

    fn cancel_requests(&self) -> StoreResult<Vec<(u64, String)>> {
        self.read(controllers::cancel_requests)
    }

    fn running_ids(&self) -> StoreResult<Vec<u64>> {
        self.read(controllers::running_ids)
    }

    fn lists_after(
        &self,
        revision: u64,
        whole: &dyn Fn(u64) -> bool,
    ) -> StoreResult<Vec<Published>> {
        self.read(|t| controllers::lists_after(t, revision, whole))
    }

    fn results_of_nodes(
        &self,
        deployment_id: u64,
        node_ids: &[u64],
    ) -> StoreResult<Vec<(u64, Vec<TaskResult>)>> {
        self.read(|t| results::results_of_nodes(t, deployment_id, node_ids))
    }

    fn notify(&self, notice: &Notice) {
        self.backend.notify(std::slice::from_ref(notice));
    }

    fn notify_all(&self, notices: &[Notice]) {
        if !notices.is_empty() {
            self.backend.notify(notices);
        }
    }

    fn listen(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notice>> {
        self.backend.listen()
    }

    fn pool_use(&self) -> Option<crate::store::PoolUse> {
        self.backend.pool_use()
    }
}
