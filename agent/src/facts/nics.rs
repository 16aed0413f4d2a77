//! Network interfaces from `/sys/class/net`: MAC, driver, speed, link, MTU, whether virtual, whether it
//! booted the node (from the kernel command line), and addresses (from the running kernel through
//! `sysinfo`).

use super::{sysfs, AddressSource, Sources};
use plinth_common::wire::Nic;
use std::collections::BTreeMap;

/// Reads every interface.
pub fn read(src: &Sources) -> Vec<Nic> {
    let net = src.path("/sys/class/net");
    let names = sysfs::list_dir(&net);
    if names.is_empty() {
        return Vec::new();
    }
    let addresses = match &src.addresses {
        AddressSource::Live => live_addresses(),
        AddressSource::Fixed(map) => map.clone(),
    };
    names
        .into_iter()
        .filter(|name| {
            net.join(name).join("address").exists() || net.join(name).join("mtu").exists()
        })
        .map(|name| {
            let dir = net.join(&name);
            let mac = sysfs::read_trimmed(&dir.join("address"))
                .map(|m| m.to_ascii_lowercase())
                .filter(|m| m != "00:00:00:00:00:00");
            let carrier = sysfs::read_u64(&dir.join("carrier")).map(|c| c == 1);
            let operstate = sysfs::read_trimmed(&dir.join("operstate"));
            let from_operstate = match operstate.as_deref() {
                Some("up") => Some(true),
                Some("down") | Some("lowerlayerdown") | Some("notpresent") => Some(false),
                _ => None,
            };
            let link_up = carrier.or(from_operstate);
            // Speed reads as -1 or fails with EINVAL while the link is down.
            let speed_mbps = sysfs::read_i64(&dir.join("speed"))
                .filter(|s| *s > 0)
                .and_then(|s| u32::try_from(s).ok());
            Nic {
                driver: sysfs::link_name(&dir.join("device/driver")),
                speed_mbps,
                link_up,
                mtu: sysfs::read_u64(&dir.join("mtu")).and_then(|m| u32::try_from(m).ok()),
                addresses: addresses.get(&name).cloned().unwrap_or_default(),
                pxe: src.cmdline.is_boot_interface(&name, mac.as_deref()),
                virtual_device: !dir.join("device").exists(),
                mac,
                name,
            }
        })
        .collect()
}

/// The running kernel's interface addresses in CIDR form, by interface name.
pub fn live_addresses() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Ok(networks) = sysinfo::Networks::new_with_refreshed_list() else {
        return out;
    };
    for (name, data) in &networks {
        let mut addrs: Vec<String> = data.ip_networks().iter().map(|n| n.to_string()).collect();
        addrs.sort();
        out.insert(name.to_string_lossy().into_owned(), addrs);
    }
    out
}
