//! The layering policy: the first `deckhand/LayeringPolicy` document gives the layer order (a second one is
//! ignored with a warning); none is an error, as is a document whose layer is not in the order. Layers
//! holding no document are dropped from the order, as Deckhand drops them.

use crate::document::{Document, Header};
use crate::error::RenderError;
use crate::render::Warning;
use crate::tree::Tree;

/// The layer order in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerOrder {
    /// The layers holding at least one document, highest (most general) first.
    pub layers: Vec<String>,
}

impl LayerOrder {
    /// A layer's rank (0 is the highest), if it is in the order.
    pub fn rank(&self, layer: &str) -> Option<usize> {
        self.layers.iter().position(|l| l == layer)
    }
}

/// Reads the layer order from the documents and checks every document's layer against it.
pub fn layer_order(
    docs: &[Document],
    headers: &[Header<'_>],
    warnings: &mut Vec<Warning>,
) -> Result<LayerOrder, RenderError> {
    let mut policies = docs
        .iter()
        .zip(headers)
        .filter(|(_, h)| h.is_layering_policy())
        .map(|(d, _)| d);
    let policy = policies.next().ok_or(RenderError::LayeringPolicyNotFound)?;
    for other in policies {
        warnings.push(Warning::about(
            other,
            format!(
                "more than one layering policy: the first one, [{}] {} ({}), is used",
                policy.schema(),
                policy.name(),
                policy.origin
            ),
        ));
    }
    let invalid = |reason: &str| RenderError::InvalidField {
        document: policy.reference(),
        field: "data.layerOrder".to_string(),
        reason: reason.to_string(),
    };
    let declared: Vec<String> = match policy.data() {
        Tree::Object(data) => match data.get("layerOrder") {
            None => Vec::new(),
            Some(Tree::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| invalid("must list layer names"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(invalid("must be a list of layer names")),
        },
        _ => {
            return Err(invalid(
                "the policy's data must be a mapping holding layerOrder",
            ))
        }
    };
    let mut present = std::collections::HashSet::new();
    for (doc, header) in docs.iter().zip(headers) {
        let layer = header.layer;
        present.insert(layer);
        if !layer.is_empty() && !declared.iter().any(|l| l == layer) {
            return Err(RenderError::InvalidDocumentLayer {
                document: doc.reference(),
                layer: layer.to_string(),
                layer_order: declared.join(", "),
                policy: policy.name().to_string(),
            });
        }
    }
    let layers = declared
        .into_iter()
        .filter(|l| present.contains(l.as_str()))
        .collect();
    Ok(LayerOrder { layers })
}
