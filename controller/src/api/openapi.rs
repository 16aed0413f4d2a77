//! The OpenAPI document served at `/api/v1/openapi.json`.

use axum::Json;
use serde_json::{json, Value};

fn op(summary: &str, tag: &str, ok: &str) -> Value {
    json!({
        "summary": summary,
        "tags": [tag],
        "security": [{"bearer": []}],
        "responses": {
            ok: {"description": "success"},
            "400": {"$ref": "#/components/responses/Error"},
            "401": {"$ref": "#/components/responses/Error"},
            "403": {"$ref": "#/components/responses/Error"},
            "404": {"$ref": "#/components/responses/Error"},
            "409": {"$ref": "#/components/responses/Error"},
            "413": {"$ref": "#/components/responses/Error"},
            "422": {"$ref": "#/components/responses/Error"}
        }
    })
}

fn graph_type_param() -> Value {
    json!({"name": "graph_type", "in": "path", "required": true, "schema": {"type": "string"}})
}

/// Builds the document.
pub fn spec() -> Value {
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}});
    let graph_paths = |kind: &str| {
        (
            format!("/{kind}/{{id}}/deployment_graphs/"),
            json!({"parameters": [id.clone()], "get": op(&format!("List the graphs of one of the {kind}"), "graphs", "200")}),
            format!("/{kind}/{{id}}/deployment_graphs/{{graph_type}}/"),
            json!({
                "parameters": [id.clone(), graph_type_param()],
                "get": op("Show a graph", "graphs", "200"),
                "post": op("Create a graph (409 if one of this type exists)", "graphs", "201"),
                "put": op("Create or replace a graph (JSON or YAML; a graph or a bare task list)", "graphs", "200"),
                "patch": op("Change a graph's name, tasks or node filter", "graphs", "200"),
                "delete": op("Delete a graph", "graphs", "204")
            }),
        )
    };
    let mut paths = serde_json::Map::new();
    let query = |name: &str, kind: &str, about: &str| json!({"name": name, "in": "query", "required": false, "schema": {"type": kind}, "description": about});
    paths.insert("/nodes/".into(), {
        let mut list = op(
            "List a page of nodes (X-Next-Marker and Link name the next page)",
            "nodes",
            "200",
        );
        list["parameters"] = json!([
            query(
                "limit",
                "integer",
                "at most this many (1,000 by default, at most 10,000)"
            ),
            query(
                "marker",
                "integer",
                "nodes after this id: the previous page's X-Next-Marker"
            ),
            query("status", "string", "discover, deploying, ready or error"),
            query("admission", "string", "discovered or accepted"),
            query("cluster_id", "integer", "nodes of this cluster"),
            query("tag", "string", "nodes holding this tag or role"),
        ]);
        json!({ "get": list })
    });
    paths.insert(
        "/nodes/{id}/refusals/".into(),
        json!({"parameters": [id], "get": op("What the node sent that was refused, newest first", "nodes", "200")}),
    );
    paths.insert(
        "/deployments/{id}/cancel/".into(),
        json!({"parameters": [id], "post": op("Cancel a running deployment (its nodes are ordered to stop)", "deployments", "202")}),
    );
    paths.insert(
        "/deployments/{id}/retry/".into(),
        json!({"parameters": [id], "post": op("Deploy again the failed and not-started nodes of an ended deployment, with its inputs", "deployments", "202")}),
    );
    paths.insert(
        "/clusters/{id}/stop_deployment/".into(),
        json!({"parameters": [id], "put": op("Cancel the cluster's running deployment (Nailgun's path)", "deployments", "202")}),
    );
    paths.insert("/nodes/{id}/".into(), json!({"parameters": [id], "get": op("Show a node with its facts", "nodes", "200"), "delete": op("Delete a node", "nodes", "204")}));
    paths.insert(
        "/nodes/{id}/accept/".into(),
        json!({"parameters": [id], "post": op("Accept a discovered node", "nodes", "200")}),
    );
    paths.insert("/releases/".into(), json!({"get": op("List releases", "releases", "200"), "post": op("Create a release with its graphs", "releases", "201")}));
    paths.insert(
        "/releases/{id}/".into(),
        json!({"parameters": [id], "get": op("Show a release", "releases", "200")}),
    );
    paths.insert("/clusters/".into(), json!({"get": op("List clusters", "clusters", "200"), "post": op("Create a cluster", "clusters", "201")}));
    paths.insert(
        "/clusters/{id}/".into(),
        json!({"parameters": [id], "get": op("Show a cluster", "clusters", "200")}),
    );
    paths.insert("/clusters/{id}/nodes/".into(), json!({"parameters": [id], "put": op("Assign nodes with pending roles", "clusters", "204"), "delete": op("Take nodes out of the cluster", "clusters", "204")}));
    paths.insert("/clusters/{id}/deploy/".into(), json!({
        "parameters": [id,
            {"name": "graph_type", "in": "query", "schema": {"type": "string", "default": "default"}},
            {"name": "nodes", "in": "query", "schema": {"type": "string"}, "description": "comma-separated node ids"},
            {"name": "noop", "in": "query", "schema": {"type": "boolean"}},
            {"name": "force", "in": "query", "schema": {"type": "boolean"}},
            {"name": "dry_run", "in": "query", "schema": {"type": "boolean"}, "description": "resolve and report only (200)"},
            {"name": "strategy", "in": "query", "schema": {"type": "string"}, "description": "a stored strategy; default: the one the deployment configuration names (deployment-strategy) when stored"},
            {"name": "action", "in": "query", "schema": {"type": "string", "enum": ["deploy_site", "update_site", "redeploy_server"]}, "description": "Shipyard's action"},
            {"name": "node", "in": "query", "schema": {"type": "string"}, "description": "the node redeploy_server redeploys (its name)"}],
        "put": op("Deploy a graph type on the cluster or some of its nodes (409 if a deployment runs)", "deployments", "202")
    }));
    for kind in ["releases", "plugins", "clusters"] {
        let (a, av, b, bv) = graph_paths(kind);
        paths.insert(a, av);
        paths.insert(b, bv);
        paths.insert(
            format!("/{kind}/{{id}}/deployment_tasks/"),
            json!({"parameters": [id], "get": op(if kind == "clusters" { "The merged tasks of a graph type (release, plugins, cluster)" } else { "This class's tasks of a graph type" }, "graphs", "200")}),
        );
    }
    paths.insert(
        "/graphs/".into(),
        json!({"get": op("List every graph with its owner and type", "graphs", "200")}),
    );
    paths.insert("/graphs/{id}/".into(), json!({"parameters": [id], "get": op("Show a graph", "graphs", "200"), "put": op("Replace a graph", "graphs", "200"), "delete": op("Delete a graph", "graphs", "204")}));
    paths.insert("/clusters/{id}/serialized_tasks/".into(), json!({"parameters": [id], "get": op("Every node's resolved, ordered tasks", "graphs", "200")}));
    paths.insert("/clusters/{id}/deploy_tasks/graph.gv".into(), json!({"parameters": [id], "get": op("The merged graph in Graphviz DOT (tasks=, parents_for=, remove=)", "graphs", "200")}));
    paths.insert(
        "/clusters/{id}/checks/".into(),
        json!({"parameters": [id], "get": op("The pre-deployment checks", "graphs", "200")}),
    );
    paths.insert("/plugins/".into(), json!({"get": op("List plugins", "plugins", "200"), "post": op("Register a plugin from its files", "plugins", "201")}));
    paths.insert("/plugins/{id}/".into(), json!({"parameters": [id], "get": op("Show a plugin", "plugins", "200"), "delete": op("Delete a plugin no cluster has enabled", "plugins", "204")}));
    paths.insert("/clusters/{id}/plugins/{plugin_id}/".into(), json!({"parameters": [id, {"name": "plugin_id", "in": "path", "required": true, "schema": {"type": "integer"}}], "put": op("Enable a plugin", "plugins", "200"), "delete": op("Disable a plugin (409 while its roles are in use)", "plugins", "200")}));
    for owner in ["releases", "clusters"] {
        paths.insert(format!("/{owner}/{{id}}/tags/"), json!({"parameters": [id], "get": op("List tags", "tags", "200"), "post": op("Create a user-defined tag", "tags", "201")}));
        paths.insert(format!("/{owner}/{{id}}/tags/{{name}}/"), json!({"parameters": [id, {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}], "put": op("Modify a user-defined tag", "tags", "200"), "delete": op("Delete a user-defined tag (403 for role-owned)", "tags", "204")}));
    }
    paths.insert("/nodes/{id}/tags/".into(), json!({"parameters": [id], "post": op("Assign tags to a node", "tags", "200"), "delete": op("Unassign tags from a node", "tags", "200")}));
    paths.insert("/clusters/{id}/strategies/".into(), json!({"parameters": [id], "get": op("List strategies (plain form)", "strategies", "200"), "post": op("Store a strategy: Shipyard's document, the plain form, or a site design stream (layered); YAML as PyYAML reads it", "strategies", "201")}));
    paths.insert("/clusters/{id}/strategies/validate/".into(), json!({"parameters": [id], "post": op("Check a strategy against the cluster's nodes (stores nothing)", "strategies", "200")}));
    paths.insert("/clusters/{id}/strategies/{name}/".into(), json!({"parameters": [id, {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["uploaded", "plain"]}}], "get": op("Show a strategy as uploaded (or plain)", "strategies", "200"), "put": op("Create or replace a strategy", "strategies", "200"), "delete": op("Delete a strategy", "strategies", "204")}));
    paths.insert("/clusters/{id}/deployment_configuration/".into(), json!({"parameters": [id], "get": op("The deployment configuration", "strategies", "200"), "put": op("Store Shipyard's DeploymentConfiguration (strategy name, phase timeouts)", "strategies", "200"), "delete": op("Delete the deployment configuration", "strategies", "204")}));
    paths.insert(
        "/deployments/".into(),
        json!({"get": op("List deployments", "deployments", "200")}),
    );
    paths.insert(
        "/deployments/{id}/".into(),
        json!({"parameters": [id], "get": op("A deployment's report", "deployments", "200")}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Plinth controller API", "version": env!("CARGO_PKG_VERSION")},
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "required": ["error"], "properties": {"error": {
                "type": "object", "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {}}}}}},
            "responses": {"Error": {"description": "an error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}
        }
    })
}

/// `GET /api/v1/openapi.json` (no token needed: the document holds no secrets).
pub async fn document() -> Json<Value> {
    Json(spec())
}
