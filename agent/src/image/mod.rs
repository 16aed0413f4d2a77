//! Putting the agent into a provisioning image's root file system (`plinth-agent image inject`): the
//! binary, its systemd unit enabled (the `multi-user.target.wants` link, as `systemctl enable` makes it),
//! its configuration naming the controller, the controller's task list signing key and its TLS
//! certificate, each of which may be left to the kernel command line (a network boot image carries none
//! of them: `plinth.controller=`, `plinth.key=`, `plinth.tls=`). The configuration is validated before
//! anything is written. The image must not carry a
//! node key: every node makes its own on first boot, so one found in the tree is refused. Nothing else
//! node-specific may stay either: `/etc/hostname` is removed, `/etc/machine-id` emptied, and whatever
//! else belongs to one machine is reported ([`node_specific`]).

use crate::cmdline::KernelCmdline;
use crate::config::{FileConfig, Overrides, Settings, DEFAULT_CONFIG_PATH, DEFAULT_STATE_DIR};
use crate::fsutil;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod disk;
pub mod node_specific;
pub use disk::{inject_disk, DiskOptions};

/// The unit file, as shipped in `systemd/`.
pub const UNIT: &str = include_str!("../../../systemd/plinth-agent.service");
/// The unit's name.
pub const UNIT_NAME: &str = "plinth-agent.service";
/// Where the binary goes in the image.
pub const BINARY_PATH: &str = "usr/bin/plinth-agent";
/// Where the unit goes in the image.
pub const UNIT_DIR: &str = "lib/systemd/system";
/// Where the enabling link goes in the image.
pub const WANTS_DIR: &str = "etc/systemd/system/multi-user.target.wants";
/// Where the controller's certificate goes in the image.
pub const CERT_PATH: &str = "/etc/plinth/controller.pem";

/// What to inject.
#[derive(Debug, Clone)]
pub struct InjectOptions {
    /// The image's root directory.
    pub root: PathBuf,
    /// The agent binary to copy.
    pub binary: PathBuf,
    /// The controllers' URLs (`https://host:port`), in order of preference; may be left to the kernel
    /// command line (empty).
    pub controllers: Vec<String>,
    /// The controller's signing key, as `plinth-controller key show` prints it; `None` leaves it to the
    /// kernel command line's `plinth.key=`.
    pub public_key: Option<String>,
    /// A PEM file with the controller's TLS certificate (pinned by the agent); `None` leaves the trust
    /// to the kernel command line's `plinth.tls=`.
    pub cert: Option<PathBuf>,
    /// Tags every node booted from the image has.
    pub tags: Vec<String>,
    /// An enrollment token that admits the nodes.
    pub enrollment_token: Option<String>,
    /// The pin of the controller's TLS key (`sha256:<hex>`), instead of `cert` (a provisioned system
    /// keeps the pin its discovery image booted with).
    pub tls_key: Option<String>,
}

/// Why the image cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The root is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// The tree carries a node key.
    #[error("{0} exists: an image must not carry a node key (every node makes its own on first boot); remove it")]
    NodeKeyPresent(PathBuf),
    /// The configuration would not load.
    #[error("{0}")]
    Config(String),
    /// The certificate file holds no certificate.
    #[error("{path}: {message}")]
    Cert {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A disk image could not be read, converted or written (the message says which tool and why).
    #[error("{path}: {message}")]
    Disk {
        /// The image, or the tool that could not run.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// What was written, as paths inside the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    /// Every file and link written.
    pub written: Vec<String>,
    /// Node-specific files removed or emptied (`/etc/hostname`, `/etc/machine-id`).
    pub cleared: Vec<String>,
    /// Node-specific files found and left for the image builder: `path: why`.
    pub warnings: Vec<String>,
}

/// The configuration file's text for these options.
pub fn config_text(opts: &InjectOptions) -> String {
    let mut text = String::from(
        "# Written by `plinth-agent image inject`. The kernel command line (plinth.controller=,\n\
         # plinth.key=, plinth.tls=, plinth.tags=, plinth.labels=, plinth.rack=, plinth.name=,\n\
         # plinth.token=) adds to it.\n",
    );
    match opts.controllers.as_slice() {
        [] => {}
        [one] => text.push_str(&format!("controller = {}\n", toml_string(one))),
        several => {
            let urls: Vec<String> = several.iter().map(|u| toml_string(u)).collect();
            text.push_str(&format!("controllers = [{}]\n", urls.join(", ")));
        }
    }
    if let Some(key) = &opts.public_key {
        text.push_str(&format!(
            "controller_public_key = {}\n",
            toml_string(key.trim())
        ));
    }
    if opts.cert.is_some() {
        text.push_str(&format!("controller_cert = {}\n", toml_string(CERT_PATH)));
    } else if let Some(pin) = &opts.tls_key {
        text.push_str(&format!("controller_tls_key = {}\n", toml_string(pin)));
    }
    if !opts.tags.is_empty() {
        let tags: Vec<String> = opts.tags.iter().map(|t| toml_string(t)).collect();
        text.push_str(&format!("tags = [{}]\n", tags.join(", ")));
    }
    if let Some(t) = &opts.enrollment_token {
        text.push_str(&format!("enrollment_token = {}\n", toml_string(t)));
    }
    text
}

fn toml_string(s: &str) -> String {
    // A TOML basic string is a JSON string for every character JSON escapes.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Injects the agent into the tree at `opts.root`, removes `/etc/hostname`, empties `/etc/machine-id`
/// and reports anything else node-specific.
pub fn inject(opts: &InjectOptions) -> Result<Injected, ImageError> {
    let root = &opts.root;
    if !root.is_dir() {
        return Err(ImageError::NotADirectory(root.clone()));
    }
    let key = inside(root, DEFAULT_STATE_DIR).join(crate::identity::NODE_KEY_FILE);
    if key.exists() {
        return Err(ImageError::NodeKeyPresent(key));
    }
    let written = write_agent(opts)?;
    let cleared = node_specific::clear_tree(root)?;
    let warnings = node_specific::scan(&node_specific::Tree(root));
    Ok(Injected {
        written,
        cleared,
        warnings,
    })
}

/// Validates the options and writes the agent's files into `opts.root` (its binary, its enabled unit,
/// its configuration and the controller's certificate); returns the paths written. Unlike [`inject`],
/// a tree that holds a node's key and state is fine (a provisioned system gets the node's own).
pub fn write_agent(opts: &InjectOptions) -> Result<Vec<String>, ImageError> {
    let root = &opts.root;
    // The configuration must load as the agent will load it (the controller, its key and its TLS pin
    // may come from the kernel command line, so placeholders stand in for missing ones).
    let text = config_text(opts);
    let config_in_image = Path::new(DEFAULT_CONFIG_PATH);
    let file =
        FileConfig::parse(&text, config_in_image).map_err(|e| ImageError::Config(e.to_string()))?;
    let cmdline = KernelCmdline {
        controllers: if opts.controllers.is_empty() {
            vec!["https://controller.invalid".to_string()]
        } else {
            Vec::new()
        },
        key: opts.public_key.is_none().then(|| {
            plinth_common::signing::public_key_to_text(
                &plinth_common::signing::signing_key_from_seed([1; 32]).verifying_key(),
            )
        }),
        tls: (opts.cert.is_none() && opts.tls_key.is_none())
            .then(|| plinth_common::signing::tls_key_pin(b"placeholder")),
        ..KernelCmdline::default()
    };
    Settings::resolve(file, config_in_image, &cmdline, &Overrides::default())
        .map_err(|e| ImageError::Config(e.to_string()))?;
    let cert = match &opts.cert {
        Some(path) => {
            let cert = std::fs::read(path).map_err(|e| ImageError::Cert {
                path: path.clone(),
                message: e.to_string(),
            })?;
            if !String::from_utf8_lossy(&cert).contains("-----BEGIN CERTIFICATE-----") {
                return Err(ImageError::Cert {
                    path: path.clone(),
                    message: "holds no PEM certificate".into(),
                });
            }
            Some(cert)
        }
        None => None,
    };
    let binary = std::fs::read(&opts.binary).map_err(|e| ImageError::Write {
        path: opts.binary.clone(),
        source: e,
    })?;

    let mut written = Vec::new();
    let mut put = |rel: &str, bytes: &[u8], mode: u32| -> Result<(), ImageError> {
        let path = inside(root, rel);
        let fail = |source| ImageError::Write {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            fsutil::ensure_dir(dir, 0o755).map_err(fail)?;
        }
        fsutil::write_atomic(&path, bytes, mode).map_err(fail)?;
        // write_atomic's mode is filtered by the umask; the image gets exactly this one.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
        written.push(format!("/{}", rel.trim_start_matches('/')));
        Ok(())
    };
    put(BINARY_PATH, &binary, 0o755)?;
    put(&format!("{UNIT_DIR}/{UNIT_NAME}"), UNIT.as_bytes(), 0o644)?;
    put(DEFAULT_CONFIG_PATH, text.as_bytes(), 0o600)?;
    if let Some(cert) = &cert {
        put(CERT_PATH, cert, 0o644)?;
    }

    let wants = inside(root, WANTS_DIR);
    let link = wants.join(UNIT_NAME);
    let fail = |source| ImageError::Write {
        path: link.clone(),
        source,
    };
    fsutil::ensure_dir(&wants, 0o755).map_err(fail)?;
    match std::fs::remove_file(&link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    std::os::unix::fs::symlink(format!("/{UNIT_DIR}/{UNIT_NAME}"), &link).map_err(fail)?;
    written.push(format!("/{WANTS_DIR}/{UNIT_NAME}"));
    Ok(written)
}

/// A path of the image, under its root.
fn inside(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::signing;

    /// Options for a test, with a real certificate and a stand-in binary beside `root`.
    pub(super) fn options(root: &Path) -> InjectOptions {
        let cert = root.parent().unwrap().join("controller.pem");
        let c = rcgen::generate_simple_self_signed(vec!["ctl".to_string()]).unwrap();
        std::fs::write(&cert, c.cert.pem()).unwrap();
        let binary = root.parent().unwrap().join("plinth-agent");
        std::fs::write(&binary, b"\x7fELF binary").unwrap();
        InjectOptions {
            root: root.to_path_buf(),
            binary,
            controllers: vec!["https://10.20.0.2:7443".into()],
            public_key: Some(signing::public_key_to_text(
                &signing::signing_key_from_seed([3; 32]).verifying_key(),
            )),
            cert: Some(cert),
            tags: vec!["compute".into(), "ssd".into()],
            enrollment_token: Some("tok\"en".into()),
            tls_key: None,
        }
    }

    /// A root file system tree as an image builder has it.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("rootfs");
        for d in ["etc", "usr/bin", "lib/systemd/system", "var/lib"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        (dir, root)
    }

    #[test]
    fn injects_binary_enabled_unit_config_and_certificate() {
        let (_dir, root) = tree();
        let opts = options(&root);
        std::fs::write(root.join("etc/hostname"), "builder\n").unwrap();
        std::fs::write(root.join("etc/machine-id"), "0123456789abcdef\n").unwrap();
        let done = inject(&opts).unwrap();
        assert_eq!(done.written.len(), 5, "{:?}", done.written);
        assert_eq!(done.cleared, vec!["/etc/hostname", "/etc/machine-id"]);
        assert!(done.warnings.is_empty(), "{:?}", done.warnings);
        assert!(!root.join("etc/hostname").exists());
        assert_eq!(std::fs::read(root.join("etc/machine-id")).unwrap(), b"");
        assert_eq!(
            std::fs::read(root.join(BINARY_PATH)).unwrap(),
            b"\x7fELF binary"
        );
        let mode = |p: &str| {
            std::fs::metadata(root.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(BINARY_PATH), 0o755);
        assert_eq!(mode("etc/plinth/agent.toml"), 0o600);
        assert_eq!(
            std::fs::read_link(root.join(WANTS_DIR).join(UNIT_NAME)).unwrap(),
            PathBuf::from("/lib/systemd/system/plinth-agent.service")
        );
        assert!(std::fs::read_to_string(root.join(UNIT_DIR).join(UNIT_NAME))
            .unwrap()
            .contains("ExecStart=/usr/bin/plinth-agent"));
        assert_eq!(
            std::fs::read(root.join("etc/plinth/controller.pem")).unwrap(),
            std::fs::read(opts.cert.as_ref().unwrap()).unwrap()
        );
        // The configuration loads as the booted agent will load it.
        let file = FileConfig::load(&root.join("etc/plinth/agent.toml")).unwrap();
        let s = Settings::resolve(
            file,
            Path::new("agent.toml"),
            &crate::cmdline::parse("plinth.tags=gpu"),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(s.controllers[0].as_str(), "https://10.20.0.2:7443/");
        assert_eq!(s.controllers.len(), 1);
        assert_eq!(s.tags, vec!["compute", "ssd", "gpu"]);
        assert_eq!(s.enrollment_token.as_deref(), Some("tok\"en"));
        assert_eq!(
            s.trust,
            crate::config::ServerTrust::Pinned(PathBuf::from(CERT_PATH))
        );
        // Injecting again (a rebuilt image) replaces everything.
        inject(&opts).unwrap();
    }

    #[test]
    fn refuses_a_node_key_a_bad_key_and_a_missing_certificate() {
        let (_dir, root) = tree();
        let mut opts = options(&root);
        opts.public_key = Some("not-a-key".into());
        let e = inject(&opts).unwrap_err().to_string();
        assert!(e.contains("controller_public_key"), "{e}");
        assert!(!root.join(BINARY_PATH).exists(), "nothing is written");

        let mut opts = options(&root);
        std::fs::write(opts.cert.as_ref().unwrap(), "junk").unwrap();
        let e = inject(&opts).unwrap_err().to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        opts.cert = Some(root.join("missing.pem"));
        assert!(inject(&opts).is_err());

        let opts = options(&root);
        std::fs::create_dir_all(root.join("var/lib/plinth-agent")).unwrap();
        std::fs::write(root.join("var/lib/plinth-agent/node.key"), "k").unwrap();
        let e = inject(&opts).unwrap_err().to_string();
        assert!(e.contains("node key"), "{e}");
    }

    #[test]
    fn the_controller_may_be_left_to_the_kernel_command_line() {
        let (_dir, root) = tree();
        let mut opts = options(&root);
        opts.controllers = Vec::new();
        inject(&opts).unwrap();
        let text = std::fs::read_to_string(root.join("etc/plinth/agent.toml")).unwrap();
        assert!(
            !text.contains("\ncontroller =") && !text.contains("\ncontrollers ="),
            "{text}"
        );
    }

    #[test]
    fn a_network_boot_image_carries_nothing_about_the_controller() {
        let (_dir, root) = tree();
        let mut opts = options(&root);
        opts.controllers = Vec::new();
        opts.public_key = None;
        opts.cert = None;
        opts.tags = Vec::new();
        opts.enrollment_token = None;
        let done = inject(&opts).unwrap();
        assert!(
            !done.written.iter().any(|p| p == CERT_PATH),
            "{:?}",
            done.written
        );
        assert!(!root.join("etc/plinth/controller.pem").exists());
        let text = std::fs::read_to_string(root.join("etc/plinth/agent.toml")).unwrap();
        let file = FileConfig::parse(&text, Path::new("agent.toml")).unwrap();
        assert_eq!(file, FileConfig::default(), "{text}");
        // The booted agent takes everything from its kernel command line, and without it stops saying
        // what is missing.
        let key =
            signing::public_key_to_text(&signing::signing_key_from_seed([5; 32]).verifying_key());
        let pin = signing::tls_key_pin(b"spki");
        let s = Settings::resolve(
            file.clone(),
            Path::new("agent.toml"),
            &crate::cmdline::parse(&format!(
                "plinth.controller=https://10.0.2.2:7443 plinth.key={key} plinth.tls={pin}"
            )),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            s.trust,
            crate::config::ServerTrust::KeyPin(signing::tls_key_pin_digest(b"spki"))
        );
        let e = Settings::resolve(
            file,
            Path::new("agent.toml"),
            &crate::cmdline::parse("plinth.controller=https://10.0.2.2:7443"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("plinth.key="), "{e}");
    }

    #[test]
    fn several_controllers_are_written_as_a_list_and_checked() {
        let (_dir, root) = tree();
        let mut opts = options(&root);
        opts.controllers = vec![
            "https://10.20.0.2:7443".into(),
            "https://10.20.0.3:7443".into(),
        ];
        inject(&opts).unwrap();
        let file = FileConfig::load(&root.join("etc/plinth/agent.toml")).unwrap();
        let s = Settings::resolve(
            file,
            Path::new("agent.toml"),
            &crate::cmdline::KernelCmdline::default(),
            &Overrides::default(),
        )
        .unwrap();
        let urls: Vec<&str> = s.controllers.iter().map(|u| u.as_str()).collect();
        assert_eq!(
            urls,
            vec!["https://10.20.0.2:7443/", "https://10.20.0.3:7443/"]
        );

        let (_dir, root) = tree();
        let mut opts = options(&root);
        opts.controllers = vec![
            "https://10.20.0.2:7443".into(),
            "http://10.20.0.3:7443".into(),
        ];
        let e = inject(&opts).unwrap_err().to_string();
        assert!(
            e.contains("`controllers`") && e.contains("http://10.20.0.3:7443"),
            "{e}"
        );
        assert!(!root.join(BINARY_PATH).exists(), "nothing is written");
    }
}
