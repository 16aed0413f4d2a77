//! The console's files (`controller/ui/`), compiled into the binary. A path is served only if it is in
//! this table, so nothing outside it can be reached by a crafted path.

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its path under `/ui/`.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("js/app.js", JS),
    asset!("js/api.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/vlist.js", JS),
    asset!("js/clusters.js", JS),
    asset!("js/nodes.js", JS),
    asset!("js/graph.js", JS),
    asset!("js/deployment.js", JS),
    asset!("vendor/dagre/dagre.min.js", JS),
    asset!("vendor/dagre/LICENSE", "text/plain; charset=utf-8"),
    asset!("vendor/dagre/LICENSE.graphlib", "text/plain; charset=utf-8"),
    asset!("vendor/dagre/LICENSE.lodash", "text/plain; charset=utf-8"),
];

/// The file at `path` (`index.html`, `js/app.js`, ...).
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}
