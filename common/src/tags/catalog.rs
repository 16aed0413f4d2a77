//! The roles and tags a cluster knows: its release's, its enabled plugins' and its own.

use indexmap::IndexMap;
use serde::Serialize;

use crate::model::{Cluster, Plugin, Release, RoleMeta, TagMeta};

/// Who defined a role or a tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Owner {
    /// The release.
    Release,
    /// The named plugin.
    Plugin(String),
    /// The cluster (user-defined for this cluster only).
    Cluster,
}

/// A role and its owner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogRole {
    /// The role's metadata.
    pub meta: RoleMeta,
    /// Who defined it.
    pub owner: Owner,
}

/// A tag, its owner and whether it may be changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogTag {
    /// The tag's metadata.
    pub meta: TagMeta,
    /// Who defined it.
    pub owner: Owner,
    /// True for tags a role gives (and a plugin's tags): they cannot be modified or deleted.
    pub read_only: bool,
}

/// Every role and tag available to a cluster, in definition order (release, then plugins, then cluster).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Catalog {
    /// Roles by name.
    pub roles: IndexMap<String, CatalogRole>,
    /// Tags by name.
    pub tags: IndexMap<String, CatalogTag>,
}

impl Catalog {
    /// The catalog of a release, its enabled plugins (in order) and a cluster's own tags.
    ///
    /// A role that lists no tags gives its own name as a tag; such implicit tags join the catalog without
    /// a primary. Tags any role lists are read-only, as are a plugin's tags.
    pub fn new(release: &Release, plugins: &[&Plugin], cluster: Option<&Cluster>) -> Catalog {
        let mut catalog = Catalog::default();
        catalog.add(
            Owner::Release,
            &release.roles_metadata,
            &release.tags_metadata,
        );
        for plugin in plugins {
            catalog.add(
                Owner::Plugin(plugin.name.clone()),
                &plugin.roles_metadata,
                &plugin.tags_metadata,
            );
        }
        if let Some(cluster) = cluster {
            // The cluster's own roles replace those of the same name (keeping their owner).
            let mut new_roles = IndexMap::new();
            for (name, meta) in &cluster.roles_metadata {
                match catalog.roles.get_mut(name) {
                    Some(existing) => existing.meta = meta.clone(),
                    None => {
                        new_roles.insert(name.clone(), meta.clone());
                    }
                }
            }
            catalog.add(Owner::Cluster, &new_roles, &cluster.tags_metadata);
        }
        catalog
    }

    fn add(
        &mut self,
        owner: Owner,
        roles: &IndexMap<String, RoleMeta>,
        tags: &IndexMap<String, TagMeta>,
    ) {
        let plugin = matches!(owner, Owner::Plugin(_));
        for (name, meta) in tags {
            self.tags.entry(name.clone()).or_insert_with(|| CatalogTag {
                meta: meta.clone(),
                owner: owner.clone(),
                read_only: plugin,
            });
        }
        for (name, meta) in roles {
            self.roles
                .entry(name.clone())
                .or_insert_with(|| CatalogRole {
                    meta: meta.clone(),
                    owner: owner.clone(),
                });
            if meta.tags.is_empty() {
                // The role's name is its implicit tag.
                self.tags.entry(name.clone()).or_insert_with(|| CatalogTag {
                    meta: TagMeta::default(),
                    owner: owner.clone(),
                    read_only: true,
                });
            }
            for tag in meta.tags_or_name(name) {
                // Listed tags must be declared (see `validate_catalog`); declared ones become read-only.
                if let Some(entry) = self.tags.get_mut(tag) {
                    entry.read_only = true;
                }
            }
        }
    }

    /// The role named `name`.
    pub fn role(&self, name: &str) -> Option<&CatalogRole> {
        self.roles.get(name)
    }

    /// True when tag `name` has a primary.
    pub fn has_primary(&self, name: &str) -> bool {
        self.tags.get(name).is_some_and(|t| t.meta.has_primary)
    }

    /// The tags whose `has_primary` is set, in catalog order.
    pub fn primary_tags(&self) -> impl Iterator<Item = &str> {
        self.tags
            .iter()
            .filter(|(_, t)| t.meta.has_primary)
            .map(|(n, _)| n.as_str())
    }

    /// The tags a role gives a node: its tags, or its name when it lists none (also for unknown roles).
    pub fn role_tags<'a>(&'a self, role: &'a str) -> Vec<&'a str> {
        match self.roles.get(role) {
            Some(r) => r.meta.tags_or_name(role),
            None => vec![role],
        }
    }
}
