//! YAQL 3.2 in Rust: its grammar, operators and standard library, plus Nailgun's deployment helpers
//! (`changed()`, `old()`, ...), reading data as a compact JSON tree ([`json::Json`]). Plinth computes
//! task fields (`yaql_exp`) and graph node filters with it; nothing else of Plinth is needed to use it.
//!
//! ```
//! use plinth_yaql::{Context, Engine, ExprCache};
//! use plinth_yaql::json::Json;
//! use serde_json::json;
//!
//! let engine = Engine::new();
//! let cache = ExprCache::new();
//! let expr = cache.get_or_parse("$.nodes.where($.status = 'ready').len()").unwrap();
//! let data = json!({"nodes": [{"status": "ready"}, {"status": "error"}]});
//! assert_eq!(engine.evaluate(&expr, &data).unwrap(), json!(1));
//!
//! // Data read often is converted once into the engine's compact form.
//! let (data, old) = (Json::from(data), Json::from(json!({"nodes": []})));
//! let changed = cache.get_or_parse("changed($.nodes)").unwrap();
//! let ctx = Context::new(&data).old(Some(&old));
//! assert_eq!(engine.evaluate_in(&changed, &ctx).unwrap(), json!(true));
//! ```
//!
//! See the crate's `README.md` for the language and `CONFORMANCE.md` for how it compares with YAQL's
//! own test suite.

pub mod ast;
pub mod cache;
pub mod engine;
pub mod errors;
pub mod eval;
pub mod fastpath;
pub mod fuel;
pub(crate) mod hashindex;
pub mod json;
pub mod lexer;
pub mod library;
pub mod limits;
pub(crate) mod memo;
pub mod parser;
pub(crate) mod pattern;
pub(crate) mod registry;
pub mod shared;
pub(crate) mod states;
pub mod value;

pub use cache::ExprCache;
pub use engine::Context;
pub use errors::{EvalError, EvalErrorKind, ExprError, Fail, ParseError, ParseErrorKind};
pub use limits::Limits;
pub use parser::Expression;
pub use registry::{Call, Engine, Form, Interp, NativeFn, Slot, Spec};
pub use shared::Shared;
pub use value::Value;
