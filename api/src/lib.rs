//! Plinth's operator API as types: what the controller answers and what a client sends, shared by the
//! controller (which serves them) and `plinthctl` (which reads them), so neither reads the other's
//! JSON by string.
//!
//! This crate holds no server: no database, no HTTP framework. With the `openapi` feature (the
//! controller's), its types also describe themselves for the OpenAPI document.
//!
//! | module | owns |
//! |---|---|
//! | [`answers`] | answers that are not records: resolutions and checks |
//! | [`controllers`] | the controllers sharing one database (`cluster-status`) |
//! | [`deployments`] | deployments: the record, the start answer, the report and its summary |
//! | [`enrollment`] | enrolled servers, their BMCs, power and boot |
//! | [`errors`] | the shape of every error answer |
//! | [`records`] | nodes, releases, clusters and plugins as the API answers with them |
//! | [`requests`] | the bodies operators send |
//! | [`tls`] | the names the controller's certificate carries |

pub mod answers;
pub mod controllers;
pub mod deployments;
pub mod enrollment;
pub mod errors;
pub mod records;
pub mod requests;
pub mod tls;
