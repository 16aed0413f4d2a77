//! Documents in either JSON or YAML: request bodies by their `Content-Type`, answers by `Accept` (or
//! `?format=yaml`). Graphs, releases and plugins are written in YAML by their authors; scripts use JSON.

use super::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A request body parsed as YAML when its `Content-Type` says so (`application/yaml`,
/// `application/x-yaml`, `text/yaml`), else as JSON. Errors name the line and column.
#[derive(Debug)]
pub struct Doc<T>(pub T);

/// Whether a content type names YAML.
pub fn is_yaml(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml"
    )
}

/// Parses a document in the given format: a body that is not JSON (or YAML) at all is 400, one that
/// parses but does not have the expected shape (an unknown or missing field) is 422.
pub fn parse_doc<T: DeserializeOwned>(bytes: &[u8], yaml: bool) -> Result<T, ApiError> {
    if yaml {
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_slice(bytes).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_yaml",
                format!("the YAML body does not parse: {e}"),
            )
        })?;
        serde_yaml_ng::from_value(value).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_document",
                format!("the YAML body does not fit: {e}"),
            )
        })
    } else {
        serde_json::from_slice(bytes).map_err(|e| {
            let (status, code) = if e.classify() == serde_json::error::Category::Data {
                (StatusCode::UNPROCESSABLE_ENTITY, "bad_document")
            } else {
                (StatusCode::BAD_REQUEST, "bad_json")
            };
            ApiError::new(status, code, format!("the JSON body does not fit: {e}"))
        })
    }
}

/// A request body's bytes and whether its `Content-Type` names YAML.
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<(Bytes, bool), ApiError> {
    let yaml = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_yaml);
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        let status = e.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, e.body_text())
    })?;
    Ok((bytes, yaml))
}

impl<S, T> FromRequest<S> for Doc<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (bytes, yaml) = body_bytes(req, state).await?;
        parse_doc(&bytes, yaml).map(Doc)
    }
}

/// A [`Doc`] with its text kept, so that findings about it name their line, and the document as JSON
/// data, as its author wrote it (before serde fills in defaults).
#[derive(Debug)]
pub struct DocText<T> {
    /// The document.
    pub doc: T,
    /// The document as written, as JSON data.
    pub value: serde_json::Value,
    /// The body's text, when it spans more than one line (a line of a one-line body says nothing).
    pub text: Option<String>,
}

impl<S, T> FromRequest<S> for DocText<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (bytes, yaml) = body_bytes(req, state).await?;
        let value: serde_json::Value = parse_doc(&bytes, yaml)?;
        let doc = parse_doc(&bytes, yaml)?;
        let text = std::str::from_utf8(&bytes)
            .ok()
            .filter(|t| t.trim_end().contains('\n'))
            .map(str::to_string);
        Ok(DocText { doc, value, text })
    }
}

/// An answer in YAML when the client asked for it, else JSON.
#[derive(Debug)]
pub struct Answer<T> {
    /// The document.
    pub doc: T,
    /// Serialize as YAML.
    pub yaml: bool,
}

impl<T> Answer<T> {
    /// Answers in the format the request's `Accept` header (or `format` query value) asks for.
    pub fn negotiated(doc: T, headers: &HeaderMap, format: Option<&str>) -> Answer<T> {
        let yaml = match format {
            Some(f) => f.eq_ignore_ascii_case("yaml"),
            None => headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.split(',').any(is_yaml)),
        };
        Answer { doc, yaml }
    }
}

impl<T: Serialize> IntoResponse for Answer<T> {
    fn into_response(self) -> Response {
        if !self.yaml {
            return axum::Json(self.doc).into_response();
        }
        match serde_yaml_ng::to_string(&self.doc) {
            Ok(text) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/yaml"),
                )],
                text,
            )
                .into_response(),
            Err(e) => ApiError::internal(format!("cannot write YAML: {e}")).into_response(),
        }
    }
}

/// Reads a request's whole body before any handler runs, within `timeout` and `limit`: a body that
/// trickles is answered 408 and its connection freed, one too large 413 (the rest of it read and
/// dropped for a few seconds first, so the client reads the answer rather than a reset), so a slow or
/// endless body holds nothing for long.
pub async fn read_whole(
    req: Request,
    next: axum::middleware::Next,
    limit: usize,
    timeout: std::time::Duration,
) -> Response {
    let (parts, mut body) = req.into_parts();
    match tokio::time::timeout(timeout, collect(&mut body, limit)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(Collect::TooLarge)) => {
            linger(body);
            let mut response = ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the request body is larger than {limit} bytes"),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
        Ok(Err(Collect::Unreadable)) => {
            ApiError::bad_request("the request body could not be read").into_response()
        }
        Err(_) => {
            let mut response = ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                format!(
                    "the request body did not arrive within {} s",
                    timeout.as_secs()
                ),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

/// Why a body was not collected.
enum Collect {
    /// It is larger than the limit (the rest is still unread).
    TooLarge,
    /// The connection failed while it was read.
    Unreadable,
}

/// The body, whole, when it is at most `limit` bytes; stops reading at the first byte beyond.
async fn collect(body: &mut axum::body::Body, limit: usize) -> Result<bytes::Bytes, Collect> {
    use http_body_util::BodyExt as _;
    let mut whole = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Collect::Unreadable)?;
        if let Ok(data) = frame.into_data() {
            if whole.len() + data.len() > limit {
                return Err(Collect::TooLarge);
            }
            whole.extend_from_slice(&data);
        }
    }
    Ok(whole.freeze())
}

/// How much of a refused body is still read and thrown away, and for how long, before the connection
/// closes: a client sends its whole body before it reads the answer, and a connection closed under it
/// would make it see a reset instead of the `413` (a lingering close, as web servers do).
const LINGER_BYTES: usize = 64 * 1024 * 1024;
/// See [`LINGER_BYTES`].
const LINGER_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads and drops the rest of a refused body, within [`LINGER_BYTES`] and [`LINGER_TIME`].
fn linger(mut body: axum::body::Body) {
    tokio::spawn(async move {
        use http_body_util::BodyExt as _;
        let drain = async {
            let mut left = LINGER_BYTES;
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data() {
                    if data.len() >= left {
                        break;
                    }
                    left -= data.len();
                }
            }
        };
        let _ = tokio::time::timeout(LINGER_TIME, drain).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_content_types() {
        assert!(is_yaml("application/yaml"));
        assert!(is_yaml("application/x-yaml; charset=utf-8"));
        assert!(is_yaml("Text/YAML"));
        assert!(!is_yaml("application/json"));
    }

    #[test]
    fn yaml_errors_name_the_line() {
        let err =
            parse_doc::<serde_json::Value>(b"tasks:\n  - id: a\n   bad: [", true).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(err.message.contains("line"), "{}", err.message);
    }
}
