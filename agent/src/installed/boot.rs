//! [`set_boot_target`]: making the machine boot the installed system next. On UEFI (the kernel shows
//! `/sys/firmware/efi`) a boot entry for the disk's EFI system partition is written with `efibootmgr`
//! and put first in `BootOrder`; its loader is the image's own (`\EFI\debian\shimx64.efi`, else
//! `\EFI\debian\grubx64.efi`), else the removable path `\EFI\BOOT\BOOTX64.EFI`. The entry is labelled
//! `Plinth <disk>` (the disk's WWID or serial, else its kernel name), and an older entry of that label
//! is deleted first, so provisioning the same disk again replaces its entry rather than adding one. On
//! BIOS nothing is written: the disk boots from its own boot code.

use super::blockdev;
use super::mount::{private_dir, Mount};
use super::table::{self, ESP_TYPE};
use super::tool;
use super::InstalledError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the kernel shows that the machine booted by UEFI.
const EFI_FIRMWARE: &str = "/sys/firmware/efi";

/// The loaders looked for on the ESP, in order of preference, as paths on it and as UEFI names them.
const LOADERS: &[(&str, &str)] = &[
    ("EFI/debian/shimx64.efi", "\\EFI\\debian\\shimx64.efi"),
    ("EFI/debian/grubx64.efi", "\\EFI\\debian\\grubx64.efi"),
    ("EFI/BOOT/BOOTX64.EFI", "\\EFI\\BOOT\\BOOTX64.EFI"),
];

/// What [`set_boot_target`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootTarget {
    /// A UEFI boot entry was written and put first in `BootOrder`.
    Uefi {
        /// The entry (`Boot0004` is `"0004"`).
        entry: String,
        /// Its label.
        label: String,
        /// The EFI system partition it points at.
        esp: PathBuf,
        /// The loader on it, as UEFI names it.
        loader: String,
        /// The older entries of the same label that were deleted.
        replaced: Vec<String>,
    },
    /// The machine booted by BIOS: nothing to write, the disk boots from its own boot code.
    Bios,
}

/// Makes the machine boot `disk` next (see the module's text).
pub fn set_boot_target(disk: &Path) -> Result<BootTarget, InstalledError> {
    if !Path::new(EFI_FIRMWARE).exists() {
        return Ok(BootTarget::Bios);
    }
    let gpt = table::read(disk)?.ok_or_else(|| InstalledError::Table {
        disk: disk.to_path_buf(),
        message: "no GPT: a UEFI machine boots a disk through the EFI system partition of its GPT"
            .to_string(),
    })?;
    let number = table::of_type(&gpt, ESP_TYPE)
        .first()
        .copied()
        .ok_or_else(|| InstalledError::Table {
            disk: disk.to_path_buf(),
            message: "no EFI system partition: the machine boots by UEFI and needs one".to_string(),
        })?;
    let parts = blockdev::reread(disk, Some(&gpt.expected()))?;
    let esp = parts
        .iter()
        .find(|p| p.number == number)
        .map(|p| p.device.clone())
        .ok_or_else(|| InstalledError::Table {
            disk: disk.to_path_buf(),
            message: format!("the kernel has no partition {number}"),
        })?;
    let loader = find_loader(&esp)?;
    let label = format!("Plinth {}", disk_identity(disk)?);

    let listing = efibootmgr(disk, &[])?;
    let mut replaced = Vec::new();
    for (entry, text) in entries(&listing) {
        if text == label {
            efibootmgr(disk, &["--bootnum", &entry, "--delete-bootnum"])?;
            replaced.push(entry);
        }
    }
    let before: Vec<String> = entries(&efibootmgr(disk, &[])?)
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    let created = efibootmgr(
        disk,
        &[
            "--create",
            "--disk",
            &disk.display().to_string(),
            "--part",
            &number.to_string(),
            "--label",
            &label,
            "--loader",
            loader,
        ],
    )?;
    let entry = entries(&created)
        .into_iter()
        .find(|(e, l)| *l == label && !before.contains(e))
        .map(|(e, _)| e)
        .ok_or_else(|| InstalledError::Tool {
            device: disk.to_path_buf(),
            tool: "efibootmgr".to_string(),
            message: format!("the new entry {label:?} is not in its list"),
        })?;
    let order = boot_order(&created);
    if order.first() != Some(&entry) {
        let mut new: Vec<String> = vec![entry.clone()];
        new.extend(order.into_iter().filter(|e| *e != entry));
        efibootmgr(disk, &["--bootorder", &new.join(",")])?;
    }
    Ok(BootTarget::Uefi {
        entry,
        label,
        esp,
        loader: loader.to_string(),
        replaced,
    })
}

/// Runs `efibootmgr` with `args`; its standard output.
fn efibootmgr(disk: &Path, args: &[&str]) -> Result<String, InstalledError> {
    let out = tool::run(disk, Command::new("efibootmgr").args(args), &[0])?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The loader on the ESP, mounted read-only to look (see [`LOADERS`]).
fn find_loader(esp: &Path) -> Result<&'static str, InstalledError> {
    let dir = private_dir("esp")?;
    let mut m = match Mount::new(esp, &dir, true, true) {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
    };
    let found = LOADERS
        .iter()
        .find(|(path, _)| m.target().join(path).is_file())
        .map(|(_, name)| *name);
    m.unmount()?;
    found.ok_or_else(|| InstalledError::Table {
        disk: esp.to_path_buf(),
        message: format!(
            "the EFI system partition has no boot loader ({})",
            LOADERS
                .iter()
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// What names the disk in its boot entry's label: its WWID or serial, else its kernel name.
fn disk_identity(disk: &Path) -> Result<String, InstalledError> {
    let name = blockdev::kernel_name(disk)?;
    let sys = Path::new("/sys/class/block").join(&name);
    for file in ["wwid", "device/wwid", "device/serial", "serial"] {
        if let Ok(text) = std::fs::read_to_string(sys.join(file)) {
            let text = text.trim();
            if !text.is_empty() && text.is_ascii() {
                return Ok(text.to_string());
            }
        }
    }
    Ok(name)
}

/// The entries of an `efibootmgr` listing: `Boot0003* Label<TAB>device path` is `("0003", "Label")`.
fn entries(listing: &str) -> Vec<(String, String)> {
    listing
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Boot")?;
            let num = rest.get(..4)?;
            if !num.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let label = rest.get(4..)?.trim_start_matches('*').trim_start();
            let label = label.split('\t').next().unwrap_or(label).trim_end();
            Some((num.to_string(), label.to_string()))
        })
        .collect()
}

/// The `BootOrder:` line of an `efibootmgr` listing.
fn boot_order(listing: &str) -> Vec<String> {
    listing
        .lines()
        .find_map(|l| l.strip_prefix("BootOrder:"))
        .map(|o| {
            o.split(',')
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What efibootmgr 18 prints (Debian bookworm), a device path after a tab on each entry.
    const LISTING: &str = "BootCurrent: 0001\nTimeout: 0 seconds\nBootOrder: 0001,0000,0003\nBoot0000* UiApp\tFvVol(7cb8bdc9-f8eb-4f34-aaea-3ee4af6516a1)/FvFile(462caa21-7614-4503-836e-8ab6f4662331)\nBoot0001* UEFI PXEv4 (MAC:525400123456)\tPciRoot(0x0)/Pci(0x3,0x0)/MAC(525400123456,1)/IPv4(0.0.0.00.0.0.0,0,0)\nBoot0003  Plinth WD-WX12345\tHD(2,GPT,0c2b…,0x1000,0x20000)/File(\\EFI\\debian\\shimx64.efi)\n";

    #[test]
    fn efibootmgr_listings_are_read() {
        let e = entries(LISTING);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], ("0000".to_string(), "UiApp".to_string()));
        assert_eq!(
            e[1],
            (
                "0001".to_string(),
                "UEFI PXEv4 (MAC:525400123456)".to_string()
            )
        );
        assert_eq!(e[2], ("0003".to_string(), "Plinth WD-WX12345".to_string()));
        assert_eq!(boot_order(LISTING), ["0001", "0000", "0003"]);
        assert!(entries("BootCurrent: 0001\nBootOrder: 0001\n").is_empty());
    }

    #[test]
    fn a_bios_machine_gets_no_boot_entry() {
        if !Path::new(EFI_FIRMWARE).exists() {
            assert_eq!(
                set_boot_target(Path::new("/dev/nonexistent")).unwrap(),
                BootTarget::Bios
            );
        }
    }
}
