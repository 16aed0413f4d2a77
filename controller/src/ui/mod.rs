//! The web console at `/ui/`: static assets compiled into the binary and served on the API's listener
//! with a strict Content-Security-Policy. The console itself talks to `/api/v1` with the operator's
//! bearer token, which it keeps in memory only; nothing here authenticates, because nothing here is
//! secret (the assets are the same for everyone).

mod assets;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

pub use assets::{find, Asset, ASSETS};

/// The console's Content-Security-Policy: scripts, styles and connections from this origin only, no
/// inline script or style, no `eval`, no framing, no forms posting anywhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes (`/ui`, `/ui/`, `/ui/{*path}`), to be merged into the main router.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { serve("index.html") }))
        .route(
            "/ui/{*path}",
            get(|axum::extract::Path(path): axum::extract::Path<String>| async move {
                serve(&path)
            }),
        )
}

/// Answers one asset with its type and the console's security headers, or 404.
pub fn serve(path: &str) -> Response {
    let Some(asset) = find(path) else {
        return crate::api::error::ApiError::not_found(format!("no console file {path:?}"))
            .into_response();
    };
    let mut response = (StatusCode::OK, asset.body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // Assets change with the binary; revalidating is cheap on a local listener.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_served_with_the_policy_and_its_type() {
        for a in ASSETS {
            let r = serve(a.path);
            assert_eq!(r.status(), StatusCode::OK, "{}", a.path);
            assert_eq!(
                r.headers()[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(r.headers()[header::CONTENT_TYPE], a.content_type);
        }
    }

    #[test]
    fn unknown_and_escaping_paths_are_not_found() {
        for p in ["nope.js", "../Cargo.toml", "js/../../src/lib.rs", ""] {
            assert_eq!(serve(p).status(), StatusCode::NOT_FOUND, "{p}");
        }
    }

    #[test]
    fn no_asset_has_an_inline_script_or_handler() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".html")) {
            let text = std::str::from_utf8(a.body).expect("html is utf-8");
            for tag in text.split("<script").skip(1) {
                let open = &tag[..tag.find('>').expect("a closed script tag")];
                assert!(open.contains("src="), "{}: inline script", a.path);
            }
            assert!(!text.contains(" onclick="), "{}: inline handler", a.path);
            assert!(!text.contains("style="), "{}: inline style", a.path);
        }
    }
}
