//! Matching a task's `tags` (or deprecated `roles` / `role` / `groups`) to nodes.

use regex::Regex;

use super::instances::is_instance_tag;
use super::node_tags::NodeTags;

/// The tag of the controller's own host.
pub const MASTER_TAG: &str = "master";

/// One entry of a task's `tags` / `roles` / `role` / `groups`.
#[derive(Debug, Clone)]
pub enum TagPattern {
    /// `*`: every node but the controller's own host.
    AllNodes,
    /// `master`: the controller's own host only.
    Master,
    /// `/re/`: a node with a tag the expression matches at its start (Python's `re.match`); instance
    /// tags (`mysql:1`) are never matched by an expression.
    Regex {
        /// The expression as written, between the slashes.
        source: String,
        /// The expression anchored at the start.
        regex: Regex,
    },
    /// Anything else: a node carrying exactly this tag.
    Exact(String),
}

impl TagPattern {
    /// Reads one entry. Fails only on a `/regex/` that does not compile.
    pub fn parse(text: &str) -> Result<TagPattern, String> {
        if text == "*" {
            return Ok(TagPattern::AllNodes);
        }
        if text == MASTER_TAG {
            return Ok(TagPattern::Master);
        }
        if let Some(source) = regex_source(text) {
            Regex::new(source).map_err(|e| format!("invalid regular expression {text}: {e}"))?;
            let regex = Regex::new(&format!("^(?:{source})"))
                .map_err(|e| format!("invalid regular expression {text}: {e}"))?;
            return Ok(TagPattern::Regex {
                source: source.to_string(),
                regex,
            });
        }
        Ok(TagPattern::Exact(text.to_string()))
    }

    /// True when this pattern matches a tag (on a node other than the controller's host).
    pub fn matches_tag(&self, tag: &str) -> bool {
        match self {
            TagPattern::AllNodes => true,
            TagPattern::Master => false,
            TagPattern::Regex { regex, .. } => !is_instance_tag(tag) && regex.is_match(tag),
            TagPattern::Exact(t) => t == tag,
        }
    }
}

/// The text between the slashes of `/re/`, if `text` is written that way.
pub fn regex_source(text: &str) -> Option<&str> {
    text.strip_prefix('/')
        .and_then(|t| t.strip_suffix('/'))
        .filter(|_| text.len() >= 2)
}

/// Which of a node's tag sets a placement looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlacementField {
    /// The task's `tags`: the node's explicit tags.
    Tags,
    /// The deprecated `roles` / `role` / `groups`: explicit tags and implicit role-name tags.
    Roles,
}

/// A compiled task placement: the patterns and the tag set they look at.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Which tag set.
    pub field: PlacementField,
    /// The patterns; a node matches when any pattern does.
    pub patterns: Vec<TagPattern>,
}

impl Placement {
    /// Compiles `entries` for `field`.
    pub fn new<S: AsRef<str>>(field: PlacementField, entries: &[S]) -> Result<Placement, String> {
        let patterns = entries
            .iter()
            .map(|e| TagPattern::parse(e.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Placement { field, patterns })
    }

    /// True when the placement selects a node (not the controller's host) with these tags.
    pub fn matches(&self, node: &NodeTags) -> bool {
        self.patterns.iter().any(|p| match p {
            TagPattern::AllNodes => true,
            TagPattern::Master => false,
            _ => {
                node.tags.iter().any(|t| p.matches_tag(t))
                    || (self.field == PlacementField::Roles
                        && node.roles.iter().any(|t| p.matches_tag(t)))
            }
        })
    }

    /// True when the placement selects the controller's own host.
    pub fn matches_master(&self) -> bool {
        self.patterns
            .iter()
            .any(|p| matches!(p, TagPattern::Master))
    }
}
