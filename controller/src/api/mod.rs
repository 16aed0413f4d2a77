//! The HTTP API: the operator API under `/api/v1` (bearer tokens) and the agent API under `/agent/v1`
//! (node keys on TLS client certificates). Handlers are thin: they authenticate, validate, and call the
//! store or the engine.

pub mod agent;
pub mod auth;
pub mod body;
pub mod clusters;
pub mod configuration;
pub mod deployments;
pub mod error;
pub mod files;
pub mod graphs;
pub mod nodes;
pub mod openapi;
pub mod plugins;
pub mod releases;
pub mod strategies;
pub mod tags;
pub mod views;

use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post, put};
use axum::Router;
use error::ApiError;
use plinth_common::wire::MAX_AGENT_REQUEST_BYTES;
use std::sync::Arc;

/// The largest operator request body (graphs can be large).
pub const MAX_OPERATOR_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// How long an operator's request body may take to arrive, whole.
pub const OPERATOR_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long an agent's request body may take to arrive, whole.
pub const AGENT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Registers a route both with and without its trailing slash (the seeds' paths end in `/`).
fn both(
    router: Router<Arc<AppState>>,
    path: &str,
    route: axum::routing::MethodRouter<Arc<AppState>>,
) -> Router<Arc<AppState>> {
    let trimmed = path.trim_end_matches('/');
    router
        .route(trimmed, route.clone())
        .route(&format!("{trimmed}/"), route)
}

/// The whole router.
pub fn router(state: Arc<AppState>) -> Router {
    let mut ops = Router::new();
    ops = both(ops, "/openapi.json", get(openapi::document));
    ops = both(ops, "/nodes", get(nodes::list));
    ops = both(ops, "/nodes/{id}", get(nodes::show).delete(nodes::delete));
    ops = both(ops, "/nodes/{id}/accept", post(nodes::accept));
    ops = both(ops, "/nodes/{id}/refusals", get(nodes::refusals));
    ops = both(ops, "/releases", get(releases::list).post(releases::create));
    ops = both(ops, "/releases/{id}", get(releases::show));
    ops = both(ops, "/clusters", get(clusters::list).post(clusters::create));
    ops = both(ops, "/clusters/{id}", get(clusters::show));
    ops = both(
        ops,
        "/clusters/{id}/nodes",
        put(clusters::assign).delete(clusters::unassign),
    );
    ops = both(ops, "/clusters/{id}/deploy", put(clusters::deploy));
    ops = both(
        ops,
        "/clusters/{id}/stop_deployment",
        put(clusters::stop_deployment),
    );
    ops = both(ops, "/{kind}/{id}/deployment_graphs", get(graphs::list));
    ops = both(
        ops,
        "/{kind}/{id}/deployment_graphs/{graph_type}",
        get(graphs::show)
            .post(graphs::create)
            .put(graphs::replace)
            .patch(graphs::patch)
            .delete(graphs::delete),
    );
    ops = both(ops, "/graphs", get(graphs::all));
    ops = both(
        ops,
        "/graphs/{id}",
        get(graphs::by_id)
            .put(graphs::replace_by_id)
            .delete(graphs::delete_by_id),
    );
    ops = both(ops, "/plugins", get(plugins::list).post(plugins::create));
    ops = both(
        ops,
        "/plugins/{id}",
        get(plugins::show).delete(plugins::delete),
    );
    ops = both(
        ops,
        "/clusters/{id}/plugins/{plugin_id}",
        put(plugins::enable).delete(plugins::disable),
    );
    ops = both(ops, "/{kind}/{id}/tags", get(tags::list).post(tags::create));
    ops = both(
        ops,
        "/{kind}/{id}/tags/{name}",
        put(tags::modify).delete(tags::delete),
    );
    ops = both(
        ops,
        "/nodes/{id}/tags",
        post(tags::node_assign).delete(tags::node_unassign),
    );
    ops = both(
        ops,
        "/clusters/{id}/deployment_tasks",
        get(views::cluster_tasks),
    );
    ops = both(
        ops,
        "/{kind}/{id}/deployment_tasks",
        get(views::class_tasks),
    );
    ops = both(
        ops,
        "/clusters/{id}/serialized_tasks",
        get(views::serialized),
    );
    ops = both(ops, "/clusters/{id}/checks", get(views::checks));
    ops = ops.route("/clusters/{id}/deploy_tasks/graph.gv", get(views::dot));
    ops = both(ops, "/deployments", get(deployments::list));
    ops = both(ops, "/deployments/{id}", get(deployments::show));
    ops = both(ops, "/deployments/{id}/events", get(deployments::events));
    ops = both(ops, "/deployments/{id}/cancel", post(deployments::cancel));
    ops = both(ops, "/deployments/{id}/retry", post(deployments::retry));
    ops = both(
        ops,
        "/clusters/{id}/strategies",
        get(strategies::list).post(strategies::create),
    );
    ops = both(
        ops,
        "/clusters/{id}/strategies/validate",
        post(strategies::validate),
    );
    ops = both(
        ops,
        "/clusters/{id}/strategies/{name}",
        get(strategies::show)
            .put(strategies::replace)
            .delete(strategies::delete),
    );
    ops = both(
        ops,
        "/clusters/{id}/deployment_configuration",
        get(configuration::show)
            .put(configuration::put)
            .delete(configuration::delete),
    );
    let ops = ops
        .layer(DefaultBodyLimit::max(MAX_OPERATOR_REQUEST_BYTES))
        .layer(middleware::from_fn(|req, next| {
            body::read_whole(req, next, MAX_OPERATOR_REQUEST_BYTES, OPERATOR_BODY_TIMEOUT)
        }));

    let agents = Router::new()
        .route("/register", post(agent::register))
        .route("/tasks", get(agent::poll))
        .route("/results", post(agent::results))
        .route("/refusals", post(agent::refusal))
        .route("/heartbeat", post(agent::heartbeat))
        .route("/gate", get(agent::gate))
        .route("/files/{*path}", get(files::get))
        .layer(DefaultBodyLimit::max(MAX_AGENT_REQUEST_BYTES))
        .layer(middleware::from_fn(|req, next| {
            body::read_whole(req, next, MAX_AGENT_REQUEST_BYTES, AGENT_BODY_TIMEOUT)
        }));

    Router::new()
        .nest("/api/v1", ops)
        .nest("/agent/v1", agents)
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .with_state(state)
}
