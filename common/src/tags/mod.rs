#![warn(missing_docs)]
//! Node tags: role expansion, primary election and matching tasks to nodes (seed 000).
//!
//! | module | owns |
//! |---|---|
//! | `catalog` | the roles and tags a cluster knows, with their owners ([`Catalog`]) |
//! | `node_tags` | a node's tags from its roles and the operator's changes ([`NodeTags`], [`node_tags`]) |
//! | `primary` | `has_primary` election ([`elect_primaries`], [`cluster_tags`]) |
//! | `pattern` | matching a task's `tags` / `roles` / `role` / `groups` to nodes ([`TagPattern`], [`Placement`]) |
//! | `instances` | instance tags like `mysql:1` and the nodes sharing them ([`instances`]) |
//! | `rules` | tag CRUD, assignment, conflicts, restrictions and limits as pure checks ([`TagError`]) |

mod catalog;
mod instances;
mod node_tags;
mod pattern;
mod primary;
mod rules;

pub use catalog::{Catalog, CatalogRole, CatalogTag, Owner};
pub use instances::{instance_base, instances, is_instance_tag};
pub use node_tags::{node_tags, NodeTags};
pub use pattern::{regex_source, Placement, PlacementField, TagPattern, MASTER_TAG};
pub use primary::{cluster_tags, elect_primaries, ClusterTags, PRIMARY_PREFIX};
pub use rules::{
    check_assignment, check_declared_nodes, check_limits, validate_catalog,
    validate_tag_assignment, validate_tag_create, validate_tag_delete, validate_tag_modify,
    LimitFinding, TagError,
};
