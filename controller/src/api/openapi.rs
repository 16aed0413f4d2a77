//! The OpenAPI document served at `/api/v1/openapi.json`, generated from the handlers' own
//! annotations (`#[utoipa::path]`: method, path, parameters, bodies) and the types they take and answer
//! with (`plinth_api`, `ToSchema`). It covers every route of the operator router
//! ([`super::OPERATOR_ROUTES`]; a test holds the two to each other). Nailgun's compatibility API is
//! served on its own listener, not by this router, and is not in the document (`docs/FUEL.md` lists it).

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, ServerBuilder};
use utoipa::{Modify, OpenApi};

/// The document's paths and schemas, from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(title = "Plinth controller API"),
    paths(
        super::openapi::document,
        super::nodes::list,
        super::nodes::show,
        super::nodes::delete,
        super::nodes::accept,
        super::nodes::refusals,
        super::enrollments::list,
        super::enrollments::enroll,
        super::enrollments::show,
        super::enrollments::delete,
        super::enrollments::release,
        super::enrollments::power_status,
        super::enrollments::power_action,
        super::enrollments::boot_device,
        super::releases::list,
        super::releases::create,
        super::releases::show,
        super::releases::put_role,
        super::clusters::put_role,
        super::clusters::list,
        super::clusters::create,
        super::clusters::show,
        super::clusters::generated,
        super::attributes::show,
        super::attributes::replace,
        super::attributes::patch,
        super::attributes::defaults,
        super::clusters::assign,
        super::clusters::unassign,
        super::clusters::deploy,
        super::clusters::stop_deployment,
        super::clusters::reset,
        super::clusters::delete,
        super::graphs::list,
        super::graphs::show,
        super::graphs::create,
        super::graphs::replace,
        super::graphs::patch,
        super::graphs::delete,
        super::graphs::all,
        super::graphs::by_id,
        super::graphs::replace_by_id,
        super::graphs::delete_by_id,
        super::plugins::list,
        super::plugins::create,
        super::plugin_sync::sync,
        super::plugins::show,
        super::plugins::delete,
        super::plugins::enable,
        super::plugins::disable,
        super::tags::list,
        super::tags::create,
        super::tags::modify,
        super::tags::delete,
        super::tags::node_show,
        super::tags::node_assign,
        super::tags::node_unassign,
        super::views::cluster_tasks,
        super::views::class_tasks,
        super::views::serialized,
        super::views::checks,
        super::views::dot,
        super::deployments::list,
        super::deployments::show,
        super::deployments::events,
        super::deployments::summary,
        super::deployments::node,
        super::auth::whoami,
        super::controllers::status,
        super::deployments::cancel,
        super::deployments::retry,
        super::strategies::list,
        super::strategies::create,
        super::strategies::validate,
        super::strategies::check_stored,
        super::strategies::show,
        super::strategies::replace,
        super::strategies::delete,
        super::configuration::show,
        super::configuration::put,
        super::configuration::delete
    ),
    components(schemas(plinth_api::errors::ErrorBody)),
    modifiers(&Site)
)]
struct ApiDoc;

/// The server's base path and how operators authenticate.
struct Site;

impl Modify for Site {
    fn modify(&self, doc: &mut Document) {
        doc.servers = Some(vec![ServerBuilder::new().url("/api/v1").build()]);
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "xAuthToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Auth-Token",
                "the same operator token, as Keystone's clients send it",
            ))),
        );
    }
}

/// Builds the document.
pub fn spec() -> serde_json::Value {
    // The document is made of plain data; serialising it cannot fail.
    serde_json::to_value(ApiDoc::openapi()).unwrap_or_default()
}

#[utoipa::path(
    get,
    path = "/openapi.json/",
    tag = "meta",
    responses(
        (status = 200, description = "success")
    )
)]
/// `GET /api/v1/openapi.json` (no token needed: the document holds no secrets).
pub async fn document() -> Json<serde_json::Value> {
    Json(spec())
}

#[cfg(test)]
mod tests {
    use super::super::OPERATOR_ROUTES;
    use std::collections::BTreeSet;

    /// Every (path, method) of the router is in the document, and the document names no other.
    #[test]
    fn the_document_describes_every_route_of_the_router_and_no_other() {
        let doc = super::spec();
        let documented: BTreeSet<(String, String)> = doc["paths"]
            .as_object()
            .expect("the document has paths")
            .iter()
            .flat_map(|(path, item)| {
                item.as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| {
                        ["get", "put", "post", "delete", "patch"].contains(&k.as_str())
                    })
                    .map(move |(method, _)| (path.clone(), method.clone()))
            })
            .collect();
        let routed: BTreeSet<(String, String)> = OPERATOR_ROUTES
            .iter()
            .flat_map(|(path, methods)| {
                methods
                    .iter()
                    .map(move |m| (path.to_string(), m.to_string()))
            })
            .collect();
        let missing: Vec<_> = routed.difference(&documented).collect();
        let invented: Vec<_> = documented.difference(&routed).collect();
        assert!(
            missing.is_empty(),
            "routes missing from the document: {missing:?}"
        );
        assert!(
            invented.is_empty(),
            "documented routes the router lacks: {invented:?}"
        );
        assert!(
            routed.len() > 60,
            "the table lists the operator API ({} routes)",
            routed.len()
        );
    }

    /// Path parameters are declared, and answers that have a type name its schema.
    #[test]
    fn parameters_and_typed_answers_are_described() {
        let doc = super::spec();
        let show = &doc["paths"]["/nodes/{id}/"]["get"];
        assert_eq!(show["parameters"][0]["name"], "id");
        assert_eq!(show["parameters"][0]["in"], "path");
        let body = &show["responses"]["200"]["content"]["application/json"]["schema"];
        assert!(body.to_string().contains("NodeView"), "{body}");
        assert!(doc["components"]["schemas"]["NodeView"].is_object());
        assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
        // The deployment answers name their types, down to a report's tasks.
        let report = &doc["paths"]["/deployments/{id}/"]["get"]["responses"]["200"];
        assert!(report.to_string().contains("Report"), "{report}");
        let started = &doc["paths"]["/clusters/{id}/deploy/"]["put"]["responses"]["202"];
        assert!(
            started.to_string().contains("StartedDeployment"),
            "{started}"
        );
        for name in [
            "Report",
            "NodeLine",
            "TaskLine",
            "Summary",
            "DeploymentRecord",
        ] {
            assert!(doc["components"]["schemas"][name].is_object(), "{name}");
        }
        let deploy = &doc["paths"]["/clusters/{id}/deploy/"]["put"]["parameters"];
        let names: Vec<&str> = deploy
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        for want in [
            "id",
            "graph_type",
            "nodes",
            "strategy",
            "action",
            "noop",
            "force",
            "dry_run",
        ] {
            assert!(names.contains(&want), "deploy lacks {want}: {names:?}");
        }
        // Every `{name}` of every path is a declared path parameter of each of its operations, and each
        // operation says what success answers.
        for (path, item) in doc["paths"].as_object().unwrap() {
            let wanted: Vec<&str> = path
                .split('{')
                .skip(1)
                .filter_map(|p| p.split('}').next())
                .collect();
            for (method, op) in item.as_object().unwrap() {
                let declared: Vec<&str> = op["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["in"] == "path")
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                for w in &wanted {
                    assert!(declared.contains(w), "{method} {path} does not declare {w}");
                }
                let answers = op["responses"].as_object().unwrap();
                assert!(
                    answers.keys().any(|k| k.starts_with('2')),
                    "{method} {path} has no success answer"
                );
            }
        }
        assert_eq!(doc["servers"][0]["url"], "/api/v1");
        assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    }
}
