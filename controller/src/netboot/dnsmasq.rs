//! dnsmasq's configuration for network boot, the DHCP and TFTP server Ironic and Cobbler use.
//!
//! Firmware that is not iPXE (a PXE ROM, BIOS or UEFI) gets iPXE itself over TFTP (Debian's `ipxe`
//! package: `undionly.kpxe` for BIOS, `snponly.efi` for UEFI); iPXE then gets `plinth.ipxe`, a two-line
//! script that chains to the boot listener with the booting interface's MAC. Two layouts:
//!
//! - **Plinth hands out addresses** (`--dhcp-range`): dnsmasq is the network's DHCP server.
//! - **Another server hands out addresses** (`--proxy SUBNET`): dnsmasq answers only the PXE part
//!   (proxy DHCP), beside the DHCP server already there.
//!
//! The TFTP root is a directory of Plinth's own that holds copies of the iPXE binaries and the script,
//! so that nothing else on the machine is served.

use std::path::{Path, PathBuf};

/// The iPXE binaries for firmware that is not iPXE yet, by client architecture.
pub const IPXE_BIOS: &str = "undionly.kpxe";
/// UEFI's (x86-64): iPXE over the firmware's own network driver.
pub const IPXE_UEFI: &str = "snponly.efi";
/// The script iPXE fetches over TFTP.
pub const SCRIPT: &str = "plinth.ipxe";

/// How addresses are handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addressing {
    /// dnsmasq is the DHCP server: the range (`START,END[,NETMASK][,LEASE]`) and the router to give.
    Server {
        /// `dhcp-range`'s value.
        range: String,
        /// The default gateway to hand out, if any.
        router: Option<String>,
    },
    /// Another server is; dnsmasq answers PXE clients on this subnet (`10.20.0.0`) only.
    Proxy {
        /// The subnet's address.
        subnet: String,
    },
}

/// What the configuration is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The interface on the boot network.
    pub interface: String,
    /// How addresses are handed out.
    pub addressing: Addressing,
    /// The boot listener's URL as servers reach it.
    pub boot_url: String,
    /// The TFTP root to fill.
    pub tftp_root: PathBuf,
}

/// Why the configuration cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum DnsmasqError {
    /// A value would break the configuration (a newline, a comma where none belongs, ...).
    #[error("{field} {value:?}: {why}")]
    Value {
        /// The option.
        field: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The TFTP root cannot be filled.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn plain(field: &'static str, value: &str, commas: bool) -> Result<(), DnsmasqError> {
    let bad = value.is_empty()
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#' || (!commas && c == ','));
    if bad {
        return Err(DnsmasqError::Value {
            field,
            value: value.to_string(),
            why: "must be one word without spaces, '#' or control characters",
        });
    }
    Ok(())
}

/// The iPXE script served over TFTP: chain to the boot listener with the booting interface's MAC.
pub fn chain_script(boot_url: &str) -> String {
    super::script::chain(boot_url)
}

/// dnsmasq's configuration text for this layout.
pub fn config(layout: &Layout) -> Result<String, DnsmasqError> {
    plain("--interface", &layout.interface, false)?;
    plain("--boot-url", &layout.boot_url, false)?;
    let root = layout.tftp_root.display().to_string();
    plain("--tftp-root", &root, false)?;
    let mut out = String::from(
        "# dnsmasq for Plinth's network boot (plinth-controller netboot dnsmasq-config).\n\
         # No DNS: DHCP and TFTP only.\nport=0\n",
    );
    out.push_str(&format!(
        "interface={}\nbind-interfaces\nenable-tftp\ntftp-root={root}\ntftp-secure\n\
         log-dhcp\n",
        layout.interface
    ));
    out.push_str("# iPXE says so in its DHCP request (user class \"iPXE\", option 175).\n");
    out.push_str("dhcp-userclass=set:ipxe,iPXE\ndhcp-match=set:ipxe,175\n");
    match &layout.addressing {
        Addressing::Server { range, router } => {
            plain("--dhcp-range", range, true)?;
            out.push_str(&format!("dhcp-range={range}\n"));
            if let Some(router) = router {
                plain("--router", router, false)?;
                out.push_str(&format!("dhcp-option=option:router,{router}\n"));
            }
            out.push_str(&format!(
                "# UEFI x86-64 firmware (client architectures 7 and 9), else BIOS.\n\
                 dhcp-match=set:efi64,option:client-arch,7\n\
                 dhcp-match=set:efi64,option:client-arch,9\n\
                 dhcp-boot=tag:!ipxe,tag:efi64,{IPXE_UEFI}\n\
                 dhcp-boot=tag:!ipxe,tag:!efi64,{IPXE_BIOS}\n\
                 dhcp-boot=tag:ipxe,{SCRIPT}\n"
            ));
        }
        Addressing::Proxy { subnet } => {
            plain("--proxy", subnet, false)?;
            out.push_str(&format!(
                "# Proxy DHCP: the network's DHCP server hands out addresses; this answers PXE only.\n\
                 dhcp-range={subnet},proxy\n\
                 pxe-prompt=\"Plinth\",0\n\
                 pxe-service=tag:!ipxe,x86PC,\"Plinth (BIOS)\",{IPXE_BIOS}\n\
                 pxe-service=tag:!ipxe,X86-64_EFI,\"Plinth (UEFI)\",{IPXE_UEFI}\n\
                 pxe-service=tag:!ipxe,BC_EFI,\"Plinth (UEFI)\",{IPXE_UEFI}\n\
                 pxe-service=tag:ipxe,x86PC,\"Plinth\",{SCRIPT}\n\
                 pxe-service=tag:ipxe,X86-64_EFI,\"Plinth\",{SCRIPT}\n\
                 pxe-service=tag:ipxe,BC_EFI,\"Plinth\",{SCRIPT}\n"
            ));
        }
    }
    Ok(out)
}

/// Fills the TFTP root: the iPXE binaries copied from `ipxe_dir` (Debian's `/usr/lib/ipxe`) and the
/// chain script.
pub fn fill_tftp_root(layout: &Layout, ipxe_dir: &Path) -> Result<(), DnsmasqError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DnsmasqError::Io { path, source }
    };
    std::fs::create_dir_all(&layout.tftp_root).map_err(io(&layout.tftp_root))?;
    for binary in [IPXE_BIOS, IPXE_UEFI] {
        let from = ipxe_dir.join(binary);
        std::fs::copy(&from, layout.tftp_root.join(binary)).map_err(io(&from))?;
    }
    let script = layout.tftp_root.join(SCRIPT);
    std::fs::write(&script, chain_script(&layout.boot_url)).map_err(io(&script))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(addressing: Addressing) -> Layout {
        Layout {
            interface: "br-boot".into(),
            addressing,
            boot_url: "http://10.20.0.2:8080".into(),
            tftp_root: "/srv/plinth/tftp".into(),
        }
    }

    #[test]
    fn both_layouts_chain_bios_and_uefi_firmware_to_ipxe_and_ipxe_to_plinth() {
        let server = config(&layout(Addressing::Server {
            range: "10.20.0.100,10.20.0.200,12h".into(),
            router: Some("10.20.0.1".into()),
        }))
        .unwrap();
        for line in [
            "dhcp-range=10.20.0.100,10.20.0.200,12h",
            "dhcp-boot=tag:!ipxe,tag:efi64,snponly.efi",
            "dhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe",
            "dhcp-boot=tag:ipxe,plinth.ipxe",
            "tftp-root=/srv/plinth/tftp",
        ] {
            assert!(
                server.lines().any(|l| l == line),
                "{line} missing:\n{server}"
            );
        }
        let proxy = config(&layout(Addressing::Proxy {
            subnet: "10.20.0.0".into(),
        }))
        .unwrap();
        assert!(proxy.lines().any(|l| l == "dhcp-range=10.20.0.0,proxy"));
        assert!(proxy.contains("pxe-service=tag:ipxe,X86-64_EFI,\"Plinth\",plinth.ipxe"));
        assert!(!proxy.contains("dhcp-boot"));
    }

    #[test]
    fn values_that_would_break_the_file_are_refused() {
        let mut bad = layout(Addressing::Proxy {
            subnet: "10.20.0.0".into(),
        });
        bad.interface = "eth0\ndhcp-range=0.0.0.0".into();
        assert!(config(&bad)
            .unwrap_err()
            .to_string()
            .contains("--interface"));
        let bad = layout(Addressing::Server {
            range: "10.0.0.1,10.0.0.9 # x".into(),
            router: None,
        });
        assert!(config(&bad).is_err());
    }
}
