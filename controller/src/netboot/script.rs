//! The iPXE scripts the boot listener answers with. Nothing in a script comes from what the client
//! sent except its MAC, and that only after [`normalize_mac`](plinth_common::wire::normalize_mac) made
//! it six hex pairs: a client cannot point its script at another server or add kernel arguments.

/// What every discovery script carries: where the boot files are, which controller to call, and how to
/// trust it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootParams {
    /// The boot listener's URL as clients reach it (`http://10.20.0.2:8080`), no trailing slash.
    pub boot_url: String,
    /// The controller's URL for agents (`https://10.20.0.2:7443`).
    pub controller_url: String,
    /// The controller's task-list signing key, as `plinth.key=` takes it.
    pub signing_key: String,
    /// The pin of the controller's TLS key (`sha256:<hex>`), as `plinth.tls=` takes it.
    pub tls_pin: String,
    /// The enrollment token, when the operator chose to hand it to booting servers.
    pub token: Option<String>,
    /// More kernel arguments (consoles, ...), from the configuration.
    pub kernel_args: String,
}

/// The script `/boot/ipxe` without a MAC answers: ask again, naming the booting interface's MAC.
pub fn chain(boot_url: &str) -> String {
    format!("#!ipxe\nchain {boot_url}/boot/ipxe?mac=${{netX/mac}}\n")
}

/// The discovery image for the interface with this (normalised) MAC; `name` is the enrolled server's,
/// for the console's message.
pub fn discovery(p: &BootParams, mac: &str, name: Option<&str>) -> String {
    let bootif = format!("01-{}", mac.replace(':', "-"));
    let mut args = format!(
        "initrd=initrd.img BOOTIF={bootif} plinth.controller={} plinth.key={} plinth.tls={}",
        p.controller_url, p.signing_key, p.tls_pin
    );
    if let Some(token) = &p.token {
        args.push_str(&format!(" plinth.token={token}"));
    }
    if !p.kernel_args.is_empty() {
        args.push(' ');
        args.push_str(&p.kernel_args);
    }
    let who = name.unwrap_or("an unknown server");
    format!(
        "#!ipxe\necho Plinth: {who} ({mac}) boots the discovery image\n\
         kernel {url}/boot/files/vmlinuz {args}\n\
         initrd {url}/boot/files/initrd.img\n\
         boot\n",
        url = p.boot_url
    )
}

/// The script of a provisioned server: give the boot back to the firmware, which goes on to the local
/// disk.
pub fn local_disk(name: &str, mac: &str) -> String {
    format!("#!ipxe\necho Plinth: {name} ({mac}) boots from its local disk\nexit\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> BootParams {
        BootParams {
            boot_url: "http://10.20.0.2:8080".into(),
            controller_url: "https://10.20.0.2:7443".into(),
            signing_key: "ed25519:AAAA".into(),
            tls_pin: format!("sha256:{}", "ab".repeat(32)),
            token: None,
            kernel_args: "console=ttyS0".into(),
        }
    }

    #[test]
    fn a_discovery_script_boots_the_image_with_what_the_agent_needs() {
        let s = discovery(&params(), "52:54:00:12:34:56", Some("r1-n01"));
        assert!(s.starts_with("#!ipxe\n"));
        assert!(s.contains("kernel http://10.20.0.2:8080/boot/files/vmlinuz initrd=initrd.img BOOTIF=01-52-54-00-12-34-56 plinth.controller=https://10.20.0.2:7443 plinth.key=ed25519:AAAA plinth.tls=sha256:abab"));
        assert!(s.contains(" console=ttyS0\n"));
        assert!(s.contains("initrd http://10.20.0.2:8080/boot/files/initrd.img\nboot\n"));
        assert!(!s.contains("plinth.token"));
        let with_token = discovery(
            &BootParams {
                token: Some("t0k".into()),
                ..params()
            },
            "52:54:00:12:34:56",
            None,
        );
        assert!(with_token.contains(" plinth.token=t0k"));
        assert!(with_token.contains("an unknown server"));
    }

    #[test]
    fn a_provisioned_server_exits_to_its_firmware() {
        assert_eq!(
            local_disk("r1-n01", "52:54:00:12:34:56"),
            "#!ipxe\necho Plinth: r1-n01 (52:54:00:12:34:56) boots from its local disk\nexit\n"
        );
        assert_eq!(
            chain("http://b:1"),
            "#!ipxe\nchain http://b:1/boot/ipxe?mac=${netX/mac}\n"
        );
    }
}
