//! A `provision` task's parameters, read and checked before anything runs (see `docs/PROVISIONING.md`).

use super::super::params::error;
use super::super::ParamError;
use crate::imaging::ExpectedDigest;
use crate::installed::{NetworkConfig, RootSelector};
use crate::root_device::Hints;
use plinth_common::wire::TaskSpec;
use serde_json::Value;

/// Where the image comes from.
#[derive(Debug, Clone)]
pub enum ImageSource {
    /// A file the controller serves (its path under the files root); its SHA-256 is sealed into the
    /// signed list.
    Served(String),
    /// An `https://` URL, with the checksum the task gives.
    Url {
        /// The URL.
        url: reqwest::Url,
        /// What its bytes must hash to.
        checksum: ExpectedDigest,
    },
}

impl ImageSource {
    /// How the image is named in reports.
    pub fn name(&self) -> String {
        match self {
            ImageSource::Served(path) => path.clone(),
            ImageSource::Url { url, .. } => url.to_string(),
        }
    }
}

/// The parameters.
#[derive(Debug, Clone)]
pub struct ProvisionParams {
    /// The image.
    pub image: ImageSource,
    /// The root device hints (Ironic's); `None` takes the default disk.
    pub hints: Option<Hints>,
    /// Which partition holds the root file system, when the image's own marks are not enough.
    pub root_partition: Option<RootSelector>,
    /// Grow the last partition (and its file system) to the end of the disk.
    pub grow_last_partition: bool,
    /// The installed system's host name.
    pub hostname: Option<String>,
    /// Its network configuration; `None` keeps the image's own.
    pub network: Option<NetworkConfig>,
    /// SSH keys for root.
    pub ssh_authorized_keys: Vec<String>,
}

/// Reads the parameters of `task`.
pub fn read(task: &TaskSpec) -> Result<ProvisionParams, ParamError> {
    let p = &task.parameters;
    let known = [
        "image",
        "checksum",
        "root_device",
        "root_partition",
        "grow_last_partition",
        "hostname",
        "network",
        "ssh_authorized_keys",
        "timeout",
        "retries",
        "interval",
    ];
    if let Some(unknown) = p.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(error(
            task,
            unknown,
            format!(
                "is no parameter of provision tasks (they are: {})",
                known.join(", ")
            ),
        ));
    }
    let image_text = p
        .get("image")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            error(
                task,
                "image",
                "is required: a file the controller serves, or an https:// URL",
            )
        })?;
    let image = if image_text.contains("://") {
        let url = reqwest::Url::parse(image_text)
            .map_err(|e| error(task, "image", format!("{image_text:?} is no URL: {e}")))?;
        if url.scheme() != "https" {
            return Err(error(
                task,
                "image",
                format!("{image_text:?}: only https:// URLs are fetched (or a file the controller serves)"),
            ));
        }
        let checksum_text = p.get("checksum").and_then(Value::as_str).ok_or_else(|| {
            error(
                task,
                "checksum",
                "is required with an image URL: sha256:<hex> or sha512:<hex>",
            )
        })?;
        let checksum = ExpectedDigest::parse(checksum_text)
            .map_err(|e| error(task, "checksum", e.to_string()))?;
        ImageSource::Url { url, checksum }
    } else {
        if p.contains_key("checksum") {
            return Err(error(
                task,
                "checksum",
                "is for image URLs only: a served image's SHA-256 is sealed into the signed list",
            ));
        }
        ImageSource::Served(image_text.to_string())
    };
    let hints = match p.get("root_device") {
        None | Some(Value::Null) => None,
        Some(v) => Some(Hints::parse(v).map_err(|e| error(task, "root_device", e.to_string()))?),
    };
    let root_partition = match p.get("root_partition") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(RootSelector::Number(
            n.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| error(task, "root_partition", "a partition number is 1 or more"))?,
        )),
        Some(Value::String(label)) => Some(RootSelector::Label(label.clone())),
        Some(_) => {
            return Err(error(
                task,
                "root_partition",
                "is a partition number or a partition label",
            ))
        }
    };
    let grow_last_partition = match p.get("grow_last_partition") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(error(task, "grow_last_partition", "is true or false")),
    };
    let hostname = match p.get("hostname") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(error(task, "hostname", "is a string")),
    };
    let network = match p.get("network") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value::<NetworkConfig>(v.clone())
                .map_err(|e| error(task, "network", e.to_string()))?,
        ),
    };
    let ssh_authorized_keys = match p.get("ssh_authorized_keys") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(keys)) => keys
            .iter()
            .map(|k| {
                k.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| error(task, "ssh_authorized_keys", "is a list of strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(error(task, "ssh_authorized_keys", "is a list of strings")),
    };
    Ok(ProvisionParams {
        image,
        hints,
        root_partition,
        grow_last_partition,
        hostname,
        network,
        ssh_authorized_keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(params: Value) -> TaskSpec {
        crate::testutil::task("p", plinth_common::wire::TaskKind::Provision, params)
    }

    fn refused(params: Value) -> String {
        read(&task(params)).unwrap_err().to_string()
    }

    #[test]
    fn a_served_image_needs_no_checksum_and_a_url_needs_one() {
        let p = read(&task(
            json!({"image": "images/a.qcow2", "root_device": {"size": ">= 10"}}),
        ))
        .unwrap();
        assert!(matches!(p.image, ImageSource::Served(ref s) if s == "images/a.qcow2"));
        assert!(p.hints.is_some());
        let e = refused(json!({"image": "https://example.com/a.raw"}));
        assert!(e.contains("`checksum`") && e.contains("sha256:"), "{e}");
        let p = read(&task(json!({"image": "https://example.com/a.raw",
            "checksum": format!("sha256:{}", "ab".repeat(32))})))
        .unwrap();
        assert!(matches!(p.image, ImageSource::Url { .. }));
        let e = refused(json!({"image": "images/a.qcow2", "checksum": "sha256:00"}));
        assert!(e.contains("sealed"), "{e}");
    }

    #[test]
    fn bad_parameters_name_the_parameter_and_the_cause() {
        let e = refused(json!({"image": "http://example.com/a.raw", "checksum": "sha256:00"}));
        assert!(e.contains("`image`") && e.contains("https://"), "{e}");
        let e = refused(json!({"image": "images/a.raw", "timout": 5}));
        assert!(e.contains("`timout`") && e.contains("timeout"), "{e}");
        let e = refused(json!({}));
        assert!(e.contains("`image`") && e.contains("required"), "{e}");
        let e = refused(json!({"image": "images/a.raw", "root_device": {"colour": "red"}}));
        assert!(e.contains("`root_device`") && e.contains("colour"), "{e}");
        let e = refused(json!({"image": "images/a.raw", "root_partition": 0}));
        assert!(e.contains("`root_partition`"), "{e}");
        let e =
            refused(json!({"image": "images/a.raw", "ssh_authorized_keys": "ssh-ed25519 AAAA"}));
        assert!(e.contains("`ssh_authorized_keys`"), "{e}");
        let e = refused(
            json!({"image": "images/a.raw", "network": {"interfaces": [{"mac": "52:54:00:00:00:01", "dchp": true}]}}),
        );
        assert!(e.contains("`network`") && e.contains("dchp"), "{e}");
    }
}
