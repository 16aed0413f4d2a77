//! The machine's own BMC address, read in band as Ironic's agent reads it: where the kernel offers an
//! IPMI device, `ipmitool lan print N` for the LAN channels 1 to 11, the first address that is set.
//! An enrolled server with no MAC in its enrollment (a Drydock node identified by its out-of-band
//! address) is known to the controller by it.

use super::Sources;
use std::process::Command;

/// The device files an IPMI system interface shows up as.
const DEVICES: &[&str] = &["/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"];

/// The BMC's address, when the machine has an IPMI device, `ipmitool` runs and a channel has one.
pub fn address(src: &Sources) -> Option<String> {
    if !src.live || !DEVICES.iter().any(|d| src.path(d).exists()) {
        return None;
    }
    (1..=11).find_map(|channel| {
        let out = Command::new("ipmitool")
            .args(["lan", "print", &channel.to_string()])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        address_in(&String::from_utf8_lossy(&out.stdout))
    })
}

/// The `IP Address` line of `ipmitool lan print`'s output, when it is set (`0.0.0.0` is not).
fn address_in(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        if key.trim() != "IP Address" {
            return None;
        }
        let value = value.trim();
        let parsed: std::net::IpAddr = value.parse().ok()?;
        (!parsed.is_unspecified()).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ipmitool lan print 1` on a Dell server, as ipmitool 1.8 prints it.
    const LAN_PRINT: &str = "\
Set in Progress         : Set Complete
Auth Type Support       : NONE MD2 MD5 PASSWORD
IP Address Source       : Static Address
IP Address              : 10.23.104.12
Subnet Mask             : 255.255.255.0
MAC Address             : 18:66:da:9a:4e:10
Default Gateway IP      : 10.23.104.1
";

    #[test]
    fn the_address_line_is_read_and_its_source_line_is_not() {
        assert_eq!(address_in(LAN_PRINT).as_deref(), Some("10.23.104.12"));
    }

    #[test]
    fn an_unset_address_or_another_output_is_none() {
        assert_eq!(
            address_in(&LAN_PRINT.replace("10.23.104.12", "0.0.0.0")),
            None
        );
        assert_eq!(address_in("Invalid channel 9\n"), None);
        assert_eq!(address_in(""), None);
    }

    #[test]
    fn a_fake_tree_asks_no_device() {
        let dir = tempfile::tempdir().unwrap();
        let src = Sources::fake(dir.path(), Default::default(), Default::default());
        assert_eq!(address(&src), None);
    }
}
