//! Hardware and system facts an agent reports. Every source may be missing on a given machine, so every
//! field is optional or a possibly empty list: absence is reported, never guessed.

use serde::{Deserialize, Serialize};

/// Everything the agent knows about its machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Facts {
    /// The node's hostname.
    pub hostname: Option<String>,
    /// The running kernel's release (`uname -r`).
    pub kernel: Option<String>,
    /// The operating system, from `/etc/os-release`.
    pub os: Option<OsRelease>,
    /// DMI (SMBIOS) identity of the system, board and BIOS.
    pub dmi: Dmi,
    /// Processors.
    pub cpu: Option<Cpu>,
    /// Memory.
    pub memory: Option<Memory>,
    /// Block devices that are disks.
    pub disks: Vec<Disk>,
    /// Network interfaces.
    pub nics: Vec<Nic>,
    /// The address of the machine's own BMC, read in band (`ipmitool lan print`) where the machine
    /// has an IPMI device; an enrollment with no MAC is known by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmc_address: Option<String>,
    /// How long collecting these facts took, in microseconds.
    pub collected_in_us: Option<u64>,
}

/// The operating system's identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OsRelease {
    /// `ID`, for example `debian`.
    pub id: Option<String>,
    /// `VERSION_ID`, for example `12`.
    pub version_id: Option<String>,
    /// `PRETTY_NAME`.
    pub pretty_name: Option<String>,
}

/// DMI identity, read from `/sys/class/dmi/id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dmi {
    /// `sys_vendor`.
    pub system_vendor: Option<String>,
    /// `product_name`.
    pub product_name: Option<String>,
    /// `product_serial` (root only).
    pub product_serial: Option<String>,
    /// `product_uuid` (root only).
    pub product_uuid: Option<String>,
    /// `board_vendor`.
    pub board_vendor: Option<String>,
    /// `board_name`.
    pub board_name: Option<String>,
    /// `board_serial` (root only).
    pub board_serial: Option<String>,
    /// `bios_vendor`.
    pub bios_vendor: Option<String>,
    /// `bios_version`.
    pub bios_version: Option<String>,
    /// `bios_date`.
    pub bios_date: Option<String>,
}

/// Processors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// Model name of the first processor.
    pub model: Option<String>,
    /// Physical packages.
    pub sockets: Option<u32>,
    /// Physical cores over all sockets.
    pub cores: Option<u32>,
    /// Hardware threads (logical CPUs).
    pub threads: u32,
    /// Flags that matter for placement: `vmx`, `svm`, `hypervisor`, `aes`, `avx2`, ...
    pub flags: Vec<String>,
}

/// Memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    /// Total RAM in bytes.
    pub total_bytes: u64,
    /// Total swap in bytes.
    pub swap_bytes: u64,
}

/// One disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disk {
    /// Kernel name, for example `sda` or `nvme0n1`.
    pub name: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Model, when the device reports one.
    pub model: Option<String>,
    /// Serial number, when the device reports one.
    pub serial: Option<String>,
    /// Whether the disk spins; absent when unknown.
    pub rotational: Option<bool>,
    /// World Wide Name, when the device has one.
    pub wwn: Option<String>,
    /// Stable `/dev/disk/by-path` names pointing at this disk.
    pub by_path: Vec<String>,
    /// Whether it is removable media.
    pub removable: Option<bool>,
    /// The vendor the device reports (sysfs `device/vendor`, for example `ATA`).
    pub vendor: Option<String>,
    /// The SCSI address, `host:channel:target:lun` (sysfs `device/scsi_device/`); absent for devices
    /// that are not SCSI (NVMe, virtio).
    pub hctl: Option<String>,
    /// The World Wide Name with the vendor extension appended (udev's `ID_WWN_WITH_EXTENSION`).
    pub wwn_with_extension: Option<String>,
    /// The vendor extension of the World Wide Name (udev's `ID_WWN_VENDOR_EXTENSION`).
    pub wwn_vendor_extension: Option<String>,
    /// Whether the kernel refuses writes to it (sysfs `ro`).
    pub read_only: Option<bool>,
    /// Where the running system uses it: the mount points of file systems on the disk, on its
    /// partitions or on devices built on them (device-mapper, software RAID), and `[SWAP]` for swap
    /// in use there. Empty when the system uses none of it.
    pub mounts: Vec<String>,
}

/// One network interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Nic {
    /// Interface name.
    pub name: String,
    /// Hardware address.
    pub mac: Option<String>,
    /// Kernel driver.
    pub driver: Option<String>,
    /// Link speed in Mbit/s, when the link is up and the driver reports it.
    pub speed_mbps: Option<u32>,
    /// Whether the link is up (carrier).
    pub link_up: Option<bool>,
    /// MTU.
    pub mtu: Option<u32>,
    /// Addresses in CIDR form.
    pub addresses: Vec<String>,
    /// Whether this interface booted the node (PXE), when the kernel command line says so.
    pub pxe: Option<bool>,
    /// True for virtual interfaces (loopback, bridges, veth, ...).
    pub virtual_device: bool,
}

/// A MAC address in the one form Plinth keeps and compares: six lowercase hex pairs joined by colons.
/// Reads `AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`, `aabb.ccdd.eeff` and `aabbccddeeff`; `None` for
/// anything else.
pub fn normalize_mac(text: &str) -> Option<String> {
    let hex: String = text
        .trim()
        .chars()
        .filter(|c| !matches!(c, ':' | '-' | '.'))
        .collect();
    if hex.len() != 12 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let separators = text.trim().len() - hex.len();
    if ![0, 2, 5].contains(&separators) {
        return None;
    }
    let hex = hex.to_ascii_lowercase();
    let pairs: Vec<&str> = (0..6).map(|i| &hex[i * 2..i * 2 + 2]).collect();
    Some(pairs.join(":"))
}

impl Facts {
    /// The MACs of the node's physical interfaces (not loopback, bridges, veth, ...), normalised by
    /// [`normalize_mac`], each once, in the order reported.
    pub fn physical_macs(&self) -> Vec<String> {
        let mut macs: Vec<String> = Vec::new();
        for nic in self.nics.iter().filter(|n| !n.virtual_device) {
            if let Some(mac) = nic.mac.as_deref().and_then(normalize_mac) {
                if mac != "00:00:00:00:00:00" && !macs.contains(&mac) {
                    macs.push(mac);
                }
            }
        }
        macs
    }
}

#[cfg(test)]
mod mac_tests {
    use super::*;

    #[test]
    fn macs_in_every_usual_spelling_read_as_one() {
        for text in [
            "52:54:00:AB:cd:01",
            "52-54-00-ab-cd-01",
            "5254.00ab.cd01",
            "525400abcd01",
            " 52:54:00:ab:cd:01 ",
        ] {
            assert_eq!(
                normalize_mac(text).as_deref(),
                Some("52:54:00:ab:cd:01"),
                "{text}"
            );
        }
        for bad in [
            "",
            "52:54:00:ab:cd",
            "52:54:00:ab:cd:0g",
            "5:2:5:4:0:0:a:b:c:d:0:1",
            "52:54:00:ab:cd:01:02",
        ] {
            assert_eq!(normalize_mac(bad), None, "{bad}");
        }
    }
}
