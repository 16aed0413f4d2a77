//! Whole-disk images (`packaging/make-image --format disk`) booted for real: under qemu (TCG) by BIOS
//! (SeaBIOS, GRUB's i386-pc boot code in the MBR and the BIOS boot partition) and by UEFI (OVMF, with
//! no boot entry: the removable path `\EFI\BOOT\BOOTX64.EFI`), each until the system asks for a login
//! on the serial console. Then the image is written at the start of a larger disk (a loop device), the
//! agent's installed-system code prepares it (the backup GPT moved, the root partition and file system
//! grown, the host name, network and SSH key written, a file placed) and the disk boots by BIOS with
//! the grown root file system and the written host name. Needs root (loop devices, the image's build)
//! and qemu.

use plinth_agent::installed::{
    find_root_partition, grow_last_partition, mount_root, place_file, set_boot_target,
    write_authorized_keys, write_hostname, write_network, BootTarget, FoundBy, FsGrowth,
    InterfaceConfig, NetworkConfig, NetworkOutcome, RootSelector,
};
use plinth_e2e::images::{disk_image, Scratch};
use plinth_e2e::netns::require_root;
use plinth_e2e::vm::Vm;
use plinth_e2e::{tail, wait_for};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Long enough for a TCG boot on a busy two-core machine.
const BOOT: Duration = Duration::from_secs(900);

const MAC: &str = "52:54:00:d1:5c:01";

/// Boots `disk` (raw) under qemu (TCG; killed on drop); by UEFI with `vars` (a copy of OVMF's variable
/// store), else by BIOS. `snapshot`: writes go to a temporary overlay, the disk stays as it is.
fn boot(home: &Path, name: &str, disk: &Path, vars: Option<&Path>, snapshot: bool) -> Vm {
    let mut qemu = Command::new(plinth_e2e::needs::qemu());
    qemu.args(["-accel", "tcg", "-m", "1024", "-smp", "1", "-no-reboot"]);
    if let Some(vars) = vars {
        qemu.arg("-drive")
            .arg(format!(
                "if=pflash,format=raw,unit=0,readonly=on,file={}",
                ovmf_code().display()
            ))
            .arg("-drive")
            .arg(format!(
                "if=pflash,format=raw,unit=1,file={}",
                vars.display()
            ));
    }
    qemu.arg("-drive").arg(format!(
        "file={},format=raw,if=virtio{}",
        disk.display(),
        if snapshot { ",snapshot=on" } else { "" }
    ));
    qemu.args(["-netdev", "user,id=n0"])
        .args(["-device", &format!("virtio-net-pci,netdev=n0,mac={MAC}")]);
    Vm::start(home, name, qemu)
}

/// Waits until `vm`'s console shows `needle`: the seconds since qemu started, or the console's tail.
fn shows(vm: &Vm, needle: &str) -> Result<f64, String> {
    if wait_for(BOOT, || vm.console().contains(needle)) {
        Ok(vm.started.elapsed().as_secs_f64())
    } else {
        Err(vm.tail(60))
    }
}

/// OVMF's firmware (Debian's `ovmf`).
fn ovmf_code() -> PathBuf {
    let code = PathBuf::from("/usr/share/OVMF/OVMF_CODE_4M.fd");
    assert!(
        code.exists(),
        "OVMF is needed and missing: apt-get install ovmf (scripts/test.sh installs it)"
    );
    code
}

/// The GPT as `sgdisk -p` lists it.
fn sgdisk(args: &[&str], disk: &Path) -> String {
    let out = Command::new("sgdisk")
        .args(args)
        .arg(disk)
        .output()
        .expect("sgdisk runs (apt-get install gdisk)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "slow: builds a disk image and boots it twice under TCG; scripts/test.sh runs it with --ignored"]
fn slow_a_disk_image_boots_by_bios_and_by_uefi() {
    require_root("building disk images");
    plinth_e2e::needs::qemu();
    let work = Scratch::new("3G");
    let disk = work.path().join("disk.raw");
    let said = disk_image(&disk);
    assert!(!said.contains("BIOS only"), "{said}");
    let listing = sgdisk(&["-p"], &disk);
    let lines: Vec<&str> = listing
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(lines.len(), 3, "{listing}");
    for (line, (code, name)) in
        lines
            .iter()
            .zip([("EF02", "bios-boot"), ("EF00", "efi"), ("8304", "root")])
    {
        assert!(line.contains(code) && line.ends_with(name), "{listing}");
    }
    let valid = sgdisk(&["-v"], &disk);
    assert!(valid.contains("No problems found"), "{valid}");

    let bios = boot(work.path(), "bios", &disk, None, true);
    let secs = shows(&bios, "login:").unwrap_or_else(|c| panic!("the disk boots by BIOS:\n{c}"));
    let console = bios.console();
    assert!(console.contains("GNU GRUB"), "{}", tail(&console, 40));
    assert!(
        console.contains("Command line: BOOT_IMAGE=/vmlinuz root=UUID="),
        "{}",
        tail(&console, 40)
    );
    assert!(console.contains("Reached target"), "{}", tail(&console, 40));
    eprintln!("BIOS: the login prompt {secs:.1} s after qemu started (TCG)");
    drop(bios);

    let vars = work.path().join("OVMF_VARS.fd");
    std::fs::copy("/usr/share/OVMF/OVMF_VARS_4M.fd", &vars).expect("OVMF's variable store");
    let uefi = boot(work.path(), "uefi", &disk, Some(&vars), true);
    let secs = shows(&uefi, "login:").unwrap_or_else(|c| panic!("the disk boots by UEFI:\n{c}"));
    assert!(uefi.console().contains("GNU GRUB"));
    eprintln!("UEFI: the login prompt {secs:.1} s after qemu started (TCG)");
}

/// A loop device on a file, detached on drop.
struct Loop(PathBuf);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).output();
    }
}

#[test]
#[ignore = "slow: builds a disk image, prepares it on a larger disk and boots it under TCG; scripts/test.sh runs it with --ignored"]
fn slow_an_image_written_to_a_larger_disk_is_prepared_and_boots_grown_and_named() {
    require_root("building disk images");
    plinth_e2e::needs::qemu();
    let work = Scratch::new("4G");
    let image = work.path().join("image.raw");
    disk_image(&image);
    let image_size = std::fs::metadata(&image).unwrap().len();
    // The image at the start of a 3 GiB disk, as the agent writes it.
    let disk = work.path().join("disk.raw");
    let ok = Command::new("cp")
        .args(["--sparse=always"])
        .arg(&image)
        .arg(&disk)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&disk)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show", "--partscan"])
        .arg(&disk)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let device = Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));

    let started = Instant::now();
    let grown = grow_last_partition(&device.0).unwrap();
    assert_eq!(grown.number, 3);
    assert_eq!(grown.filesystem, FsGrowth::Grown { fs: "ext4".into() });
    assert!(grown.new_size > grown.old_size + (3 << 30) - image_size - (2 << 20));
    let root = find_root_partition(&device.0, &RootSelector::Auto).unwrap();
    assert_eq!((root.number, root.found_by), (3, FoundBy::GptType));
    let mounted = mount_root(&root.device).unwrap();
    let at = mounted.path().to_path_buf();
    write_hostname(&at, "disk-vm1").unwrap();
    let network = NetworkConfig {
        interfaces: vec![InterfaceConfig {
            mac: MAC.into(),
            dhcp: true,
            ..Default::default()
        }],
    };
    assert!(matches!(
        write_network(&at, &network).unwrap(),
        NetworkOutcome::Written(_)
    ));
    write_authorized_keys(
        &at,
        &["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZ1bGx5LXZhbGlkLWxvb2tpbmcta2V5LWJ5dGVz ops@example"
            .to_string()],
    )
    .unwrap();
    // What the booted system says of itself on the serial console (systemd runs /etc/rc.local).
    place_file(
        &at,
        Path::new("/etc/rc.local"),
        b"#!/bin/sh\necho \"plinth-check root-kib=$(df -k --output=size / | tail -n1 | tr -d ' ') \
          hostname=$(hostname) networkd=$(ls /etc/systemd/network | tr '\\n' ' ')\" > /dev/ttyS0\n",
        0o755,
    )
    .unwrap();
    assert_eq!(set_boot_target(&device.0).unwrap(), BootTarget::Bios);
    mounted.unmount().unwrap();
    eprintln!(
        "prepared in {:.1} s: partition {} grown from {} to {} MiB",
        started.elapsed().as_secs_f64(),
        grown.partition.display(),
        grown.old_size >> 20,
        grown.new_size >> 20
    );
    drop(device);

    let vm = boot(work.path(), "installed", &disk, None, false);
    let secs = shows(&vm, "disk-vm1 login:")
        .unwrap_or_else(|c| panic!("the prepared disk boots with its host name:\n{c}"));
    let console = vm.console();
    let check = console
        .lines()
        .find(|l| l.contains("plinth-check root-kib="))
        .unwrap_or_else(|| panic!("rc.local ran: {}", tail(&console, 60)));
    let kib: u64 = check
        .split("root-kib=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{check}"));
    assert!(kib > 2_700_000, "the root file system is grown: {check}");
    assert!(check.contains("hostname=disk-vm1"), "{check}");
    assert!(check.contains("10-plinth-525400d15c01.network"), "{check}");
    eprintln!("the prepared disk asked for a login {secs:.1} s after qemu started (TCG): {check}");
}
