//! The HTTP API: the operator API under `/api/v1` (bearer tokens) and the agent API under `/agent/v1`
//! (node keys on TLS client certificates). Handlers are thin: they authenticate, validate, and call the
//! store or the engine.

pub mod agent;
pub mod attributes;
pub mod auth;
pub mod body;
pub mod clusters;
pub mod configuration;
pub mod controllers;
pub mod deployments;
pub mod enrollments;
pub mod error;
pub mod files;
pub mod graphs;
pub mod keystone_token;
pub mod metrics;
pub mod nailgun;
pub mod nodes;
pub mod openapi;
pub mod plugin_sync;
pub mod plugins;
pub mod probes;
pub mod releases;
pub mod strategies;
pub mod tags;
pub mod views;

use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use error::ApiError;
use plinth_common::wire::MAX_AGENT_REQUEST_BYTES;
use std::sync::Arc;

impl AppState {
    /// Runs a handler's blocking work (database, orchestration) on the blocking pool, at most
    /// [`crate::workers::BLOCKING_WORKERS`] jobs at once; the others wait as futures, not threads.
    /// (Defined here, beside the handlers: its errors are answers.)
    pub async fn blocking<T, F>(self: &Arc<Self>, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&AppState) -> Result<T, ApiError> + Send + 'static,
    {
        let state = self.clone();
        self.workers
            .run(move || f(&state))
            .await
            .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
    }
}

/// The largest operator request body (graphs can be large).
pub const MAX_OPERATOR_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// How long an operator's request body may take to arrive, whole.
pub const OPERATOR_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long an agent's request body may take to arrive, whole.
pub const AGENT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Declares the operator API's routes once: the router is built from this table, and
/// [`OPERATOR_ROUTES`] lists it for the test that holds the OpenAPI document to it. A path ending in `/`
/// is served with and without the slash (the seeds' paths end in one); any other path as written.
macro_rules! operator_routes {
    ($( $path:literal => $( $method:ident ( $handler:path ) ),+ ; )*) => {
        /// Every route of the operator API (under `/api/v1`): its path as the document names it, and its
        /// methods. The router is built from the same table.
        pub const OPERATOR_ROUTES: &[(&str, &[&str])] = &[
            $( ($path, &[ $( stringify!($method) ),+ ]) ),*
        ];

        fn operator_routes(mut ops: Router<Arc<AppState>>) -> Router<Arc<AppState>> {
            $(
                ops = route(ops, $path, axum::routing::MethodRouter::new() $( .$method($handler) )+);
            )*
            ops
        }
    };
}

/// Registers a route; one ending in `/` both with and without it.
fn route(
    router: Router<Arc<AppState>>,
    path: &str,
    route: axum::routing::MethodRouter<Arc<AppState>>,
) -> Router<Arc<AppState>> {
    match path.strip_suffix('/') {
        Some(trimmed) => router.route(trimmed, route.clone()).route(path, route),
        None => router.route(path, route),
    }
}

operator_routes! {
    "/openapi.json/" => get(openapi::document);
    "/nodes/" => get(nodes::list);
    "/nodes/{id}/" => get(nodes::show), delete(nodes::delete);
    "/nodes/{id}/accept/" => post(nodes::accept);
    "/nodes/{id}/refusals/" => get(nodes::refusals);
    "/enrollments/" => get(enrollments::list), post(enrollments::enroll);
    "/enrollments/{name}/" => get(enrollments::show), delete(enrollments::delete);
    "/enrollments/{name}/release/" => post(enrollments::release);
    "/enrollments/{name}/power/" => get(enrollments::power_status), put(enrollments::power_action);
    "/enrollments/{name}/boot-device/" => put(enrollments::boot_device);
    "/releases/" => get(releases::list), post(releases::create);
    "/releases/{id}/" => get(releases::show);
    "/releases/{id}/roles/{name}/" => put(releases::put_role);
    "/clusters/{id}/roles/{name}/" => put(clusters::put_role);
    "/clusters/" => get(clusters::list), post(clusters::create);
    "/clusters/{id}/" => get(clusters::show), delete(clusters::delete);
    "/clusters/{id}/reset/" => put(clusters::reset);
    "/clusters/{id}/generated/" => get(clusters::generated);
    "/clusters/{id}/attributes/" => get(attributes::show), put(attributes::replace), patch(attributes::patch);
    "/clusters/{id}/attributes/defaults/" => get(attributes::defaults);
    "/clusters/{id}/nodes/" => put(clusters::assign), delete(clusters::unassign);
    "/clusters/{id}/deploy/" => put(clusters::deploy);
    "/clusters/{id}/stop_deployment/" => put(clusters::stop_deployment);
    "/{kind}/{id}/deployment_graphs/" => get(graphs::list);
    "/{kind}/{id}/deployment_graphs/{graph_type}/" => get(graphs::show), post(graphs::create), put(graphs::replace), patch(graphs::patch), delete(graphs::delete);
    "/graphs/" => get(graphs::all);
    "/graphs/{id}/" => get(graphs::by_id), put(graphs::replace_by_id), delete(graphs::delete_by_id);
    "/plugins/" => get(plugins::list), post(plugins::create);
    "/plugins/sync/" => post(plugin_sync::sync);
    "/plugins/{id}/" => get(plugins::show), delete(plugins::delete);
    "/clusters/{id}/plugins/{plugin_id}/" => put(plugins::enable), delete(plugins::disable);
    "/{kind}/{id}/tags/" => get(tags::list), post(tags::create);
    "/{kind}/{id}/tags/{name}/" => put(tags::modify), delete(tags::delete);
    "/nodes/{id}/tags/" => get(tags::node_show), post(tags::node_assign), delete(tags::node_unassign);
    "/clusters/{id}/deployment_tasks/" => get(views::cluster_tasks);
    "/{kind}/{id}/deployment_tasks/" => get(views::class_tasks);
    "/clusters/{id}/serialized_tasks/" => get(views::serialized);
    "/clusters/{id}/checks/" => get(views::checks);
    "/clusters/{id}/deploy_tasks/graph.gv" => get(views::dot);
    "/deployments/" => get(deployments::list);
    "/deployments/{id}/" => get(deployments::show);
    "/deployments/{id}/events/" => get(deployments::events);
    "/deployments/{id}/summary/" => get(deployments::summary);
    "/deployments/{id}/nodes/{node_id}/" => get(deployments::node);
    "/whoami/" => get(auth::whoami);
    "/cluster-status/" => get(controllers::status);
    "/deployments/{id}/cancel/" => post(deployments::cancel);
    "/deployments/{id}/retry/" => post(deployments::retry);
    "/clusters/{id}/strategies/" => get(strategies::list), post(strategies::create);
    "/clusters/{id}/strategies/validate/" => post(strategies::validate);
    "/clusters/{id}/strategies/{name}/check/" => get(strategies::check_stored);
    "/clusters/{id}/strategies/{name}/" => get(strategies::show), put(strategies::replace), delete(strategies::delete);
    "/clusters/{id}/deployment_configuration/" => get(configuration::show), put(configuration::put), delete(configuration::delete);
}

/// The operator API's routes (mounted under `/api/v1`), with its body limits.
pub fn operator_api() -> Router<Arc<AppState>> {
    operator_routes(Router::new())
        .layer(DefaultBodyLimit::max(MAX_OPERATOR_REQUEST_BYTES))
        .layer(middleware::from_fn(|req, next| {
            body::read_whole(req, next, MAX_OPERATOR_REQUEST_BYTES, OPERATOR_BODY_TIMEOUT)
        }))
}

/// The whole router of the TLS port: the operator API and the agent API.
pub fn router(state: Arc<AppState>) -> Router {
    let ops = operator_api();

    // Requests with a body: read whole first, within a time and a size.
    let agent_posts = Router::new()
        .route("/register", post(agent::register))
        .route("/results", post(agent::results))
        .route("/refusals", post(agent::refusal))
        .route("/heartbeat", post(agent::heartbeat))
        .route("/boot", post(enrollments::agent_boot))
        .layer(DefaultBodyLimit::max(MAX_AGENT_REQUEST_BYTES))
        .layer(middleware::from_fn(|req, next| {
            body::read_whole(req, next, MAX_AGENT_REQUEST_BYTES, AGENT_BODY_TIMEOUT)
        }));
    // Requests without one, which never read it: long polls mostly, held by every agent of a fleet at
    // once, so without the reading layer's future in each (1.4 KiB a poll). A body sent all the same is
    // never read, and the connection is closed after the answer rather than kept for another request.
    let agents = Router::new()
        .route("/tasks", get(agent::poll))
        .route("/gate", get(agent::gate))
        .route("/files/{*path}", get(files::get))
        .layer(DefaultBodyLimit::max(MAX_AGENT_REQUEST_BYTES))
        .merge(agent_posts);

    let peers = Router::new()
        .route("/gate", get(agent::peer_gate))
        .layer(DefaultBodyLimit::max(MAX_AGENT_REQUEST_BYTES));

    Router::new()
        .route("/healthz", get(probes::healthz))
        .route("/readyz", get(probes::readyz))
        .route("/metrics", get(metrics::with_token))
        .nest("/api/v1", ops)
        .nest("/agent/v1", agents)
        .nest("/internal/v1", peers)
        .merge(crate::ui::router())
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .with_state(state)
}
