//! Reading response bodies without trusting their size: a body is streamed chunk by chunk and refused as
//! soon as it passes its limit, so a hostile or broken controller cannot make the agent buffer more.

use super::client::TransportError;
use serde::Deserialize;

/// How much of an error answer the agent reads.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Reads the whole body, failing once it passes `limit` bytes (checked against `Content-Length` first).
pub async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, TransportError> {
    if let Some(len) = response.content_length() {
        if len > limit as u64 {
            return Err(TransportError::TooLarge {
                limit,
                size: usize::try_from(len).unwrap_or(usize::MAX),
            });
        }
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| TransportError::Network(describe(&e)))?
    {
        if body.len() + chunk.len() > limit {
            return Err(TransportError::TooLarge {
                limit,
                size: body.len() + chunk.len(),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The controller's error document: `{"error": {"code", "message", "details"}}`.
#[derive(Debug, Deserialize)]
struct ErrorDocument {
    error: ErrorBody,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// Turns a non-success answer into an error carrying the controller's code and message when it sent one.
pub async fn error_from(response: reqwest::Response) -> TransportError {
    let status = response.status().as_u16();
    let body = read_limited(response, MAX_ERROR_BODY_BYTES)
        .await
        .unwrap_or_default();
    let (code, message) = parse_error(&body);
    TransportError::Api {
        status,
        code,
        message,
    }
}

/// The code and message of an error body, or a printable excerpt of whatever was sent.
pub fn parse_error(body: &[u8]) -> (String, String) {
    match serde_json::from_slice::<ErrorDocument>(body) {
        Ok(doc) => (doc.error.code, doc.error.message),
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let excerpt: String = text.chars().take(200).collect();
            (String::new(), excerpt.trim().to_string())
        }
    }
}

/// A reqwest error with its causes, for logs.
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_documents_and_garbage() {
        let (c, m) =
            parse_error(br#"{"error":{"code":"not_found","message":"no such node","details":{}}}"#);
        assert_eq!((c.as_str(), m.as_str()), ("not_found", "no such node"));
        let (c, m) = parse_error(b"<html>Bad Gateway</html>");
        assert_eq!((c.as_str(), m.as_str()), ("", "<html>Bad Gateway</html>"));
    }
}
