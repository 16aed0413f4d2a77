//! A cluster's attributes as Nailgun makes them from its release's `attributes_metadata`: `editable`
//! (the settings an operator sees and changes) and `generated` (passwords, keys and paths made once, when
//! the cluster is created), with Nailgun's generators (`password`, `hexstring`, `uuid4`, `cephx_key`,
//! `identical`, `from_settings`, `ip`) run and `{settings.MASTER_IP}`-style strings formatted; and the
//! values Nailgun's deployment data shows of them (`merged_attrs_values`).
//!
//! Randomness comes in as an argument ([`AttributeSite::random`]), so this stays pure.

use serde_json::{json, Map, Value};
use thiserror::Error;

/// Why attributes could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AttributeError {
    /// A `{generator: ...}` names a generator Nailgun does not have.
    #[error("{path}: unknown generator {name:?}")]
    UnknownGenerator {
        /// Where the generator is (`generated.mysql.root_password`).
        path: String,
        /// Its name.
        name: String,
    },
    /// A generator's argument is not what it takes.
    #[error("{path}: generator {name:?}: {message}")]
    BadArgument {
        /// Where the generator is.
        path: String,
        /// Its name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// What a cluster's attributes are generated against: the master node's settings Nailgun reads
/// (`settings.MASTER_IP`, `DNS_UPSTREAM`, `NTP_UPSTREAM`), the cluster's id and release version, and a
/// source of random bytes.
pub struct AttributeSite<'a> {
    /// The controller's address as nodes reach it (`MASTER_IP`).
    pub master_ip: String,
    /// Upstream DNS servers (`DNS_UPSTREAM`).
    pub dns_upstream: Vec<String>,
    /// Upstream NTP servers (`NTP_UPSTREAM`).
    pub ntp_upstream: Vec<String>,
    /// The cluster's id (`{cluster.id}`), when known; unknown, `{cluster.id}` is left for
    /// [`format_cluster_id`] once the cluster has its id.
    pub cluster_id: Option<u64>,
    /// The release's version (`{cluster.release.version}`).
    pub release_version: String,
    /// Fills the buffer with random bytes.
    pub random: &'a mut dyn FnMut(&mut [u8]),
}

impl AttributeSite<'_> {
    fn setting(&self, name: &str) -> Option<Value> {
        match name {
            "MASTER_IP" => Some(json!(self.master_ip)),
            // Lists, as the `text_list` attributes reading them hold.
            "DNS_UPSTREAM" => Some(json!(self.dns_upstream)),
            "NTP_UPSTREAM" => Some(json!(self.ntp_upstream)),
            _ => None,
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        (self.random)(&mut buf);
        buf
    }
}

/// A cluster's attributes: `editable` (its settings) and `generated`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterAttributes {
    /// The settings, by section (Nailgun's `editable`).
    pub editable: Value,
    /// Made once at creation (Nailgun's `generated`).
    pub generated: Value,
}

/// The attributes a new cluster starts with, as Nailgun's `Cluster.create_attributes` makes them: the
/// release's `attributes_metadata.editable` and `.generated`, traversed with the generators. `given`
/// (settings supplied at creation) is merged over the editable defaults.
pub fn new_cluster_attributes(
    attributes_metadata: &Value,
    given: &Value,
    site: &mut AttributeSite<'_>,
) -> Result<ClusterAttributes, AttributeError> {
    let editable = attributes_metadata
        .get("editable")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let generated = attributes_metadata
        .get("generated")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut editable = traverse(&editable, site, "editable")?;
    if let Value::Object(_) = given {
        dict_merge(&mut editable, given);
    }
    Ok(ClusterAttributes {
        editable,
        generated: traverse(&generated, site, "generated")?,
    })
}

/// Nailgun's `dict_merge`: `b` merged into `a`, mappings merged key by key, anything else replaced.
pub fn dict_merge(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        dict_merge(existing, v)
                    }
                    _ => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (a, b) => *a = b.clone(),
    }
}

/// Nailgun's `traverse`: every `{generator: name, generator_arg(s): ...}` mapping replaced by what the
/// generator makes, every string formatted (`{settings.MASTER_IP}`, `{cluster.id}`,
/// `{cluster.release.version}`; other braces left as written).
pub fn traverse(
    value: &Value,
    site: &mut AttributeSite<'_>,
    path: &str,
) -> Result<Value, AttributeError> {
    Ok(match value {
        Value::Object(map) if map.contains_key("generator") => generate(map, site, path)?,
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), traverse(v, site, &format!("{path}.{k}"))?);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                out.push(traverse(v, site, &format!("{path}[{i}]"))?);
            }
            Value::Array(out)
        }
        Value::String(s) => Value::String(format_string(s, site)),
        other => other.clone(),
    })
}

fn format_string(s: &str, site: &AttributeSite<'_>) -> String {
    if !s.contains('{') {
        return s.to_string();
    }
    let mut out = s
        .replace("{settings.MASTER_IP}", &site.master_ip)
        .replace("{cluster.release.version}", &site.release_version);
    if let Some(id) = site.cluster_id {
        out = out.replace("{cluster.id}", &id.to_string());
    }
    out
}

/// Writes the cluster's id into every `{cluster.id}` left in `value` (attributes made before the
/// cluster had its id).
pub fn format_cluster_id(value: &mut Value, cluster_id: u64) {
    match value {
        Value::String(s) if s.contains("{cluster.id}") => {
            *s = s.replace("{cluster.id}", &cluster_id.to_string())
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| format_cluster_id(v, cluster_id)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| format_cluster_id(v, cluster_id)),
        _ => {}
    }
}

const PASSWORD_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn generate(
    map: &Map<String, Value>,
    site: &mut AttributeSite<'_>,
    path: &str,
) -> Result<Value, AttributeError> {
    let name = map.get("generator").and_then(Value::as_str).unwrap_or("");
    let arg = map
        .get("generator_arg")
        .or_else(|| map.get("generator_args"));
    let bad = |message: String| AttributeError::BadArgument {
        path: path.to_string(),
        name: name.to_string(),
        message,
    };
    let length = |default: usize| -> Result<usize, AttributeError> {
        match arg {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| bad(format!("{n} is not a length"))),
            Some(Value::String(s)) => s
                .trim()
                .parse::<usize>()
                .map_err(|_| bad(format!("{s:?} is not a length"))),
            Some(other) => Err(bad(format!("{other} is not a length"))),
        }
        .and_then(|n| {
            if n > 4096 {
                Err(bad(format!("length {n} is over 4096")))
            } else {
                Ok(n)
            }
        })
    };
    Ok(match name {
        "password" => {
            let n = length(24)?;
            let bytes = site.bytes(n);
            let text: String = bytes
                .iter()
                .map(|b| PASSWORD_CHARS[*b as usize % PASSWORD_CHARS.len()] as char)
                .collect();
            Value::String(text)
        }
        "hexstring" => {
            let n = length(32)?;
            let bytes = site.bytes(n.div_ceil(2));
            let mut text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            text.truncate(n);
            Value::String(text)
        }
        "uuid4" => {
            let mut b = site.bytes(16);
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            Value::String(format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ))
        }
        "cephx_key" => {
            // Ceph's key format: type (1, AES), creation time (8 bytes, zero here), length, 16-byte key.
            use base64::Engine as _;
            let key = site.bytes(16);
            let mut raw = vec![1u8, 0];
            raw.extend([0u8; 8]);
            raw.extend((key.len() as u16).to_le_bytes());
            raw.extend(key);
            Value::String(base64::engine::general_purpose::STANDARD.encode(raw))
        }
        "identical" => arg.cloned().unwrap_or(Value::Null),
        "from_settings" => {
            let key = arg
                .and_then(Value::as_str)
                .ok_or_else(|| bad("takes the name of a master setting as generator_arg".into()))?;
            site.setting(key)
                .ok_or_else(|| bad(format!("no master setting {key:?}")))?
        }
        // Nailgun's `ip` generator gives the master's address on the named network (`admin`).
        "ip" => json!(site.master_ip),
        _ => {
            return Err(AttributeError::UnknownGenerator {
                path: path.to_string(),
                name: name.to_string(),
            })
        }
    })
}

/// The values Nailgun's deployment data shows of a cluster's attributes (`merged_attrs_values`):
/// `generated` with `editable` merged over it, each attribute written `{value: x, ...}` read as `x`, the
/// `common` section's keys lifted to the top, and each `additional_components` entry given as
/// `{<component>: {enabled: <value>}}`.
pub fn merged_values(editable: &Value, generated: &Value) -> Map<String, Value> {
    let mut attrs = match generated {
        Value::Object(_) => generated.clone(),
        _ => json!({}),
    };
    if editable.is_object() {
        dict_merge(&mut attrs, editable);
    }
    let Value::Object(mut attrs) = attrs else {
        return Map::new();
    };
    for group in attrs.values_mut() {
        if let Value::Object(group) = group {
            for value in group.values_mut() {
                if let Some(v) = value.as_object().and_then(|o| o.get("value")).cloned() {
                    *value = v;
                }
            }
        }
    }
    if let Some(Value::Object(common)) = attrs.remove("common") {
        for (k, v) in common {
            attrs.insert(k, v);
        }
    }
    if let Some(Value::Object(components)) = attrs.remove("additional_components") {
        for (component, enabled) in components {
            if let Value::Bool(enabled) = enabled {
                let entry = attrs.entry(component).or_insert_with(|| json!({}));
                if let Value::Object(e) = entry {
                    e.insert("enabled".into(), Value::Bool(enabled));
                } else {
                    *entry = json!({"enabled": enabled});
                }
            }
        }
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(rng: &mut dyn FnMut(&mut [u8])) -> AttributeSite<'_> {
        AttributeSite {
            master_ip: "10.20.0.2".into(),
            dns_upstream: vec!["8.8.8.8".into()],
            ntp_upstream: vec!["pool.ntp.org".into()],
            cluster_id: Some(7),
            release_version: "newton-10.0".into(),
            random: rng,
        }
    }

    #[test]
    fn generators_make_what_nailgun_makes() {
        let mut counter = 0u8;
        let mut rng = |buf: &mut [u8]| {
            for b in buf {
                counter = counter.wrapping_add(37);
                *b = counter;
            }
        };
        let meta = json!({
            "editable": {"access": {"user": {"value": "admin"}},
                         "dns": {"list": {"value": {"generator": "from_settings", "generator_arg": "DNS_UPSTREAM"}}}},
            "generated": {"mysql": {"root_password": {"generator": "password"}},
                          "cinder": {"fixed_key": {"generator": "hexstring", "generator_arg": "64"}},
                          "ceph": {"fsid": {"generator": "uuid4"}},
                          "base_syslog": {"syslog_port": {"generator": "identical", "generator_arg": "514"}},
                          "puppet": {"modules": "rsync://{settings.MASTER_IP}:/puppet/{cluster.release.version}/modules/"}}
        });
        let a = new_cluster_attributes(
            &meta,
            &json!({"access": {"user": {"value": "ops"}}}),
            &mut site(&mut rng),
        )
        .unwrap();
        assert_eq!(a.editable["access"]["user"]["value"], "ops");
        assert_eq!(a.editable["dns"]["list"]["value"], json!(["8.8.8.8"]));
        let pw = a.generated["mysql"]["root_password"].as_str().unwrap();
        assert_eq!(pw.len(), 24);
        assert!(pw.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(
            a.generated["cinder"]["fixed_key"].as_str().unwrap().len(),
            64
        );
        assert_eq!(a.generated["ceph"]["fsid"].as_str().unwrap().len(), 36);
        assert_eq!(a.generated["base_syslog"]["syslog_port"], "514");
        assert_eq!(
            a.generated["puppet"]["modules"],
            "rsync://10.20.0.2:/puppet/newton-10.0/modules/"
        );
    }

    #[test]
    fn an_unknown_generator_is_named_with_its_place() {
        let mut rng = |_: &mut [u8]| {};
        let meta = json!({"generated": {"x": {"y": {"generator": "nope"}}}});
        let e = new_cluster_attributes(&meta, &Value::Null, &mut site(&mut rng)).unwrap_err();
        assert_eq!(e.to_string(), "generated.x.y: unknown generator \"nope\"");
    }

    #[test]
    fn merged_values_read_like_nailguns_deployment_data() {
        let editable = json!({
            "common": {"debug": {"value": true}},
            "additional_components": {"ironic": {"value": false}, "metadata": {"label": "x"}},
            "storage": {"osd_pool_size": {"value": "3"}, "metadata": {"label": "Storage"}}
        });
        let generated = json!({"ironic": {"db_password": "p"}, "storage": {"x": 1}});
        let m = merged_values(&editable, &generated);
        assert_eq!(m["debug"], true);
        assert_eq!(m["ironic"], json!({"db_password": "p", "enabled": false}));
        assert_eq!(m["storage"]["osd_pool_size"], "3");
        assert_eq!(m["storage"]["x"], 1);
        assert!(!m.contains_key("additional_components"));
    }
}
