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
                "put": op("Create or replace a graph", "graphs", "200"),
                "delete": op("Delete a graph", "graphs", "204")
            }),
        )
    };
    let mut paths = serde_json::Map::new();
    paths.insert(
        "/nodes/".into(),
        json!({"get": op("List nodes", "nodes", "200")}),
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
            {"name": "force", "in": "query", "schema": {"type": "boolean"}}],
        "put": op("Deploy a graph type on the cluster or some of its nodes (409 if a deployment runs)", "deployments", "202")
    }));
    for kind in ["releases", "clusters"] {
        let (a, av, b, bv) = graph_paths(kind);
        paths.insert(a, av);
        paths.insert(b, bv);
    }
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
