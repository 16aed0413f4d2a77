//! A signing key rotation through the data directory: `plinth-controller key rotate` writes the next
//! key and the rotation's plan; the controller reads them at start and on reload (SIGHUP), announces
//! the next key to every agent until the switch time, then switches: the next key signs, the old one
//! is retired, BMC passwords are sealed again under the new key, and the controller's own next TLS
//! certificate, if one was made, is served.
//!
//! | file | what | mode |
//! |---|---|---|
//! | `signing.next.key` | the next signing key (PKCS#8 PEM) | 0600 |
//! | `key-rotation.json` | the plan: `next` (the next public key), `switch_at`, `tls_pins`, `started_at` | 0600 |
//! | `signing.retired.key` | the key the last switch retired | 0600 |
//! | `tls/next-cert.pem`, `tls/next-key.pem` | the controller's next self-signed certificate | 0644, 0600 |
//!
//! Every step of a switch can be repeated: a controller stopped in the middle of one finishes it at
//! its next start.

use super::{KeyRing, Keys, Next};
use crate::datadir::{random_bytes, write_new_file, DataDir};
use crate::enrollment::secrets::Sealer;
use crate::store::Store;
use anyhow::{bail, Context, Result};
use ed25519_dalek::SigningKey;
use plinth_common::signing;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// The plan of an announced rotation, as `key-rotation.json` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The next public key (base64), to tell a finished switch from one still to make.
    pub next: String,
    /// When the controller switches (seconds since the Unix epoch).
    pub switch_at: i64,
    /// Pins of the TLS keys agents are told to trust (the next certificate's).
    #[serde(default)]
    pub tls_pins: Vec<String>,
    /// When the rotation was started.
    pub started_at: i64,
}

/// What the rotation does about TLS.
#[derive(Debug, Clone)]
pub enum TlsChange {
    /// Nothing: the certificate stays, or is renewed with the same key, or agents trust a CA.
    Keep,
    /// Make the controller's next self-signed certificate (a new key), announce its pin, and serve
    /// it from the switch on. Only for the certificate the controller made itself.
    Renew {
        /// The names the certificate must hold besides the defaults.
        names: Vec<String>,
    },
    /// Announce the pin of the key of this certificate, which the operator installs (`tls_cert`,
    /// `tls_key`) and reloads once agents learned it.
    Announce(PathBuf),
}

fn next_key_path(data: &DataDir) -> PathBuf {
    data.root().join("signing.next.key")
}

fn retired_key_path(data: &DataDir) -> PathBuf {
    data.root().join("signing.retired.key")
}

fn plan_path(data: &DataDir) -> PathBuf {
    data.root().join("key-rotation.json")
}

fn next_tls(data: &DataDir) -> (PathBuf, PathBuf) {
    let dir = data.root().join("tls");
    (dir.join("next-cert.pem"), dir.join("next-key.pem"))
}

/// What [`start`] did, for the operator.
#[derive(Debug)]
pub struct Started {
    /// The plan written.
    pub plan: Plan,
    /// The fingerprint of the key signing now.
    pub current: String,
    /// The fingerprint of the next key.
    pub next: String,
}

/// Starts a rotation: makes the next key and writes the plan (switch `overlap_secs` after `now`). A
/// rotation already announced is refused (finish it first).
pub fn start(data: &DataDir, overlap_secs: i64, tls: &TlsChange, now: i64) -> Result<Started> {
    if overlap_secs < 0 {
        bail!("the overlap cannot be negative");
    }
    let current = data.load_signing_key()?;
    if plan_path(data).exists() {
        let plan = read_plan(data)?;
        bail!(
            "a rotation is already announced (to key {}, switching at {}): it must switch before another starts",
            fingerprint_of_text(&plan.next),
            plan.switch_at
        );
    }
    let next = signing::signing_key_from_seed(random_bytes()?);
    let tls_pins = match tls {
        TlsChange::Keep => Vec::new(),
        TlsChange::Announce(cert) => vec![crate::tls::key_pin(cert)?],
        TlsChange::Renew { names } => {
            let (cert, key) = next_tls(data);
            let _ = fs::remove_file(&cert);
            let _ = fs::remove_file(&key);
            crate::tls::make_self_signed(&cert, &key, names)?;
            vec![crate::tls::key_pin(&cert)?]
        }
    };
    let path = next_key_path(data);
    let _ = fs::remove_file(&path);
    write_new_file(&path, signing::signing_key_to_pem(&next)?.as_bytes(), 0o600)?;
    let plan = Plan {
        next: signing::public_key_to_text(&next.verifying_key()),
        switch_at: now.saturating_add(overlap_secs),
        tls_pins,
        started_at: now,
    };
    write_plan(data, &plan)?;
    Ok(Started {
        current: signing::fingerprint(&current.verifying_key()),
        next: signing::fingerprint(&next.verifying_key()),
        plan,
    })
}

/// Reads the keys in force from the data directory (making the signing key on first start), and
/// finishes a switch a stop interrupted.
pub fn load(data: &DataDir) -> Result<Keys> {
    let signer = data.load_or_create_signing_key()?;
    let retired = read_optional_key(&retired_key_path(data))?;
    let mut keys = Keys {
        signer,
        next: None,
        retired,
    };
    if !plan_path(data).exists() {
        return Ok(keys);
    }
    let plan = read_plan(data)?;
    let now_signer = signing::public_key_to_text(&keys.signer.verifying_key());
    if plan.next == now_signer {
        // The switch renamed the keys and stopped before removing the plan.
        finish(data)?;
        return Ok(keys);
    }
    let path = next_key_path(data);
    let Some(next) = read_optional_key(&path)? else {
        bail!(
            "{} announces a rotation but {} is missing: copy it from the controller where the rotation started, or remove {} to call the rotation off",
            plan_path(data).display(),
            path.display(),
            plan_path(data).display()
        );
    };
    if signing::public_key_to_text(&next.verifying_key()) != plan.next {
        bail!(
            "{} is not the key {} announces",
            path.display(),
            plan_path(data).display()
        );
    }
    keys.next = Some(Next {
        key: next,
        switch_at: plan.switch_at,
        tls_pins: plan.tls_pins,
    });
    Ok(keys)
}

/// Whether the controller's TLS certificate changed at a switch (the acceptor must be built again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switched {
    /// The controller's own next certificate is now served.
    pub tls_renewed: bool,
}

/// Switches when the announced switch time has come: the next key signs from now on, the old one is
/// retired, BMC passwords are sealed again under the new key (one transaction), and the next
/// self-signed certificate, if any, takes the current one's place. `None` when nothing was due.
pub fn switch_if_due(
    data: &DataDir,
    ring: &KeyRing,
    store: &dyn Store,
    now: i64,
) -> Result<Option<Switched>> {
    let keys = ring.now();
    let Some(next) = keys.next.as_ref().filter(|n| now >= n.switch_at) else {
        return Ok(None);
    };
    let old = keys.signer.clone();
    let new = next.key.clone();
    // Each step can be made again: a stop between two is finished by `load` at the next start.
    replace_file(
        &retired_key_path(data),
        signing::signing_key_to_pem(&old)?.as_bytes(),
        0o600,
    )?;
    let (next_cert, next_key) = next_tls(data);
    let tls_renewed = next_cert.exists() && next_key.exists();
    if tls_renewed {
        fs::rename(&next_key, data.tls_key())
            .with_context(|| format!("cannot move {} into place", next_key.display()))?;
        fs::rename(&next_cert, data.tls_cert())
            .with_context(|| format!("cannot move {} into place", next_cert.display()))?;
    }
    fs::rename(next_key_path(data), data.signing_key())
        .context("cannot put the next signing key in place")?;
    finish(data)?;
    ring.replace(Keys {
        signer: new.clone(),
        next: None,
        retired: Some(old.clone()),
    });
    let sealer = Sealer::with_retired(&new, Some(&old));
    let resealed = store
        .reseal_enrollment_secrets(&mut |name, sealed| sealer.reseal(name, sealed))
        .context("the signing key switched, but BMC passwords were not sealed again (they still open; the next switch or start tries again)")?;
    tracing::info!(
        key = %signing::fingerprint(&new.verifying_key()),
        retired = %signing::fingerprint(&old.verifying_key()),
        bmc_passwords_resealed = resealed,
        tls_renewed,
        "switched to the next signing key; lists signed by the old key are refused by agents from now on"
    );
    Ok(Some(Switched { tls_renewed }))
}

/// Seals again, under the current key, BMC passwords still sealed under the retired one (at start:
/// a switch whose sealing failed, or made by another controller sharing the database).
pub fn reseal_leftovers(ring: &KeyRing, store: &dyn Store) -> Result<usize> {
    let keys = ring.now();
    let Some(retired) = keys.retired.as_ref() else {
        return Ok(0);
    };
    let sealer = Sealer::with_retired(&keys.signer, Some(retired));
    Ok(store.reseal_enrollment_secrets(&mut |name, sealed| sealer.reseal(name, sealed))?)
}

/// What `key status` shows.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The fingerprint of the signing key.
    pub signing_key: String,
    /// The signing public key (base64), as agents pin it.
    pub public_key: String,
    /// The announced rotation, if any.
    pub rotation: Option<Plan>,
    /// The fingerprint of the next key, during a rotation.
    pub next_key: Option<String>,
    /// The fingerprint of the key the last switch retired.
    pub retired_key: Option<String>,
}

/// The keys as the data directory holds them.
pub fn status(data: &DataDir) -> Result<Status> {
    let key = data.load_signing_key()?;
    let rotation = if plan_path(data).exists() {
        Some(read_plan(data)?)
    } else {
        None
    };
    Ok(Status {
        signing_key: signing::fingerprint(&key.verifying_key()),
        public_key: signing::public_key_to_text(&key.verifying_key()),
        next_key: rotation.as_ref().map(|p| fingerprint_of_text(&p.next)),
        rotation,
        retired_key: read_optional_key(&retired_key_path(data))?
            .map(|k| signing::fingerprint(&k.verifying_key())),
    })
}

fn fingerprint_of_text(text: &str) -> String {
    signing::public_key_from_text(text)
        .map(|k| signing::fingerprint(&k))
        .unwrap_or_else(|_| text.to_string())
}

fn finish(data: &DataDir) -> Result<()> {
    match fs::remove_file(plan_path(data)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", plan_path(data).display())),
    }
}

fn read_plan(data: &DataDir) -> Result<Plan> {
    let path = plan_path(data);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a key rotation plan", path.display()))
}

fn write_plan(data: &DataDir, plan: &Plan) -> Result<()> {
    // Serialising strings and numbers cannot fail.
    let text = serde_json::to_vec_pretty(plan).unwrap_or_default();
    replace_file(&plan_path(data), &text, 0o600)
}

fn read_optional_key(path: &Path) -> Result<Option<SigningKey>> {
    match fs::read_to_string(path) {
        Ok(pem) => signing::signing_key_from_pem(&pem)
            .map(Some)
            .with_context(|| format!("{} is not a signing key", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes a file whole beside its place, then renames it over the old one.
fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let part = path.with_extension("part");
    let _ = fs::remove_file(&part);
    write_new_file(&part, bytes, mode)?;
    fs::rename(&part, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests;
