use super::*;
use crate::cmdline;
use std::fs;
use std::os::unix::fs::symlink;

/// Builds a fake machine: two disks and three virtual block devices, three interfaces, DMI with a serial
/// that is unreadable, two sockets of four cores with hyperthreading.
fn fake_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let w = |rel: &str, content: &str| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    };
    w("proc/sys/kernel/hostname", "node-7\n");
    w("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    w(
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    w("sys/class/dmi/id/sys_vendor", "Dell Inc.\n");
    w("sys/class/dmi/id/product_name", "PowerEdge R640\n");
    w(
        "sys/class/dmi/id/product_uuid",
        "4c4c4544-0042-3510-8052-b4c04f4d4e32\n",
    );
    w("sys/class/dmi/id/board_name", "0H28RR\n");
    w("sys/class/dmi/id/bios_version", "2.17.1\n");
    w("sys/class/dmi/id/bios_date", "\n");
    // An unreadable serial (as for a non-root user): a directory where a file should be.
    fs::create_dir_all(root.join("sys/class/dmi/id/product_serial")).unwrap();

    let mut cpuinfo = String::new();
    for p in 0..16 {
        let socket = p / 8;
        cpuinfo.push_str(&format!(
            "processor\t: {p}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\n\
             physical id\t: {socket}\ncpu cores\t: 4\nflags\t\t: fpu vme sse4_2 aes avx avx2 vmx ht\n\n"
        ));
    }
    w("proc/cpuinfo", &cpuinfo);
    w(
        "proc/meminfo",
        "MemTotal:       16318048 kB\nMemFree:         1000000 kB\nSwapTotal:       2097148 kB\n",
    );

    // Disks.
    w("sys/block/sda/size", "937703088\n");
    w("sys/block/sda/queue/rotational", "1\n");
    w("sys/block/sda/removable", "0\n");
    w("sys/block/sda/device/model", "ST500DM002-1BD14\n");
    w("sys/block/sda/device/wwid", "naa.5000c5005e6f1a2b\n");
    w("sys/block/nvme0n1/size", "1953525168\n");
    w("sys/block/nvme0n1/queue/rotational", "0\n");
    w("sys/block/nvme0n1/removable", "0\n");
    w("sys/block/nvme0n1/wwid", "eui.0025388b71b2f3a4\n");
    w(
        "sys/block/nvme0n1/device/model",
        "Samsung SSD 970 EVO 1TB\n",
    );
    w("sys/block/nvme0n1/device/serial", "S467NX0M123456\n");
    for v in ["loop0", "ram0", "dm-0", "zram0"] {
        w(&format!("sys/block/{v}/size"), "8\n");
    }
    // sda: an ATA disk behind a SCSI host, known to udev, with partitions: sda1 mounted, sda2 a volume
    // group's physical volume whose volume (dm-0) is the root file system, sda3 swap.
    w("sys/block/sda/dev", "8:0\n");
    w("sys/block/sda/ro", "0\n");
    w("sys/block/sda/device/vendor", "ATA     \n");
    fs::create_dir_all(root.join("sys/block/sda/device/scsi_device/2:0:0:0")).unwrap();
    w(
        "run/udev/data/b8:0",
        "S:disk/by-id/wwn-0x5000c5005e6f1a2b\nE:ID_WWN=0x5000c5005e6f1a2b\n\
         E:ID_WWN_WITH_EXTENSION=0x5000c5005e6f1a2b\nE:ID_WWN_VENDOR_EXTENSION=\n\
         E:ID_SERIAL_SHORT=Z1D2ABCD\nG:systemd\n",
    );
    for (part, number) in [("sda1", "8:1"), ("sda2", "8:2"), ("sda3", "8:3")] {
        w(&format!("sys/block/sda/{part}/partition"), "1\n");
        w(&format!("sys/block/sda/{part}/dev"), &format!("{number}\n"));
    }
    fs::create_dir_all(root.join("sys/block/sda/sda2/holders/dm-0")).unwrap();
    w("sys/block/dm-0/dev", "253:0\n");
    fs::create_dir_all(root.join("dev/mapper")).unwrap();
    symlink("../dm-0", root.join("dev/mapper/vg-root")).unwrap();
    // nvme0n1: read-only, its one btrfs file system mounted whole (an anonymous device number, so only
    // the source names it).
    w("sys/block/nvme0n1/dev", "259:0\n");
    w("sys/block/nvme0n1/ro", "1\n");
    w(
        "proc/self/mountinfo",
        "22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw\n\
         23 22 0:21 / /proc rw,relatime - proc proc rw\n\
         24 22 8:1 / /boot/my\\040efi rw,relatime shared:2 - vfat /dev/sda1 rw\n\
         25 22 0:45 /@srv /srv rw,relatime - btrfs /dev/nvme0n1 rw\n",
    );
    w(
        "proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sda3                               partition\t2097148\t\t0\t\t-2\n",
    );
    fs::create_dir_all(root.join("dev/disk/by-path")).unwrap();
    symlink(
        "../../sda",
        root.join("dev/disk/by-path/pci-0000:00:17.0-ata-1"),
    )
    .unwrap();
    symlink(
        "../../sda1",
        root.join("dev/disk/by-path/pci-0000:00:17.0-ata-1-part1"),
    )
    .unwrap();
    symlink(
        "../../nvme0n1",
        root.join("dev/disk/by-path/pci-0000:3b:00.0-nvme-1"),
    )
    .unwrap();

    // NICs: a physical one with link, a physical one without, loopback.
    w("sys/class/net/eno1/address", "B4:96:91:2A:00:01\n");
    w("sys/class/net/eno1/mtu", "9000\n");
    w("sys/class/net/eno1/speed", "10000\n");
    w("sys/class/net/eno1/carrier", "1\n");
    w("sys/class/net/eno1/operstate", "up\n");
    fs::create_dir_all(root.join("sys/class/net/eno1/device")).unwrap();
    fs::create_dir_all(root.join("sys/bus/pci/drivers/i40e")).unwrap();
    symlink(
        root.join("sys/bus/pci/drivers/i40e"),
        root.join("sys/class/net/eno1/device/driver"),
    )
    .unwrap();
    w("sys/class/net/eno2/address", "b4:96:91:2a:00:02\n");
    w("sys/class/net/eno2/mtu", "1500\n");
    w("sys/class/net/eno2/speed", "-1\n");
    w("sys/class/net/eno2/operstate", "down\n");
    fs::create_dir_all(root.join("sys/class/net/eno2/device")).unwrap();
    w("sys/class/net/lo/address", "00:00:00:00:00:00\n");
    w("sys/class/net/lo/mtu", "65536\n");
    w("sys/class/net/lo/operstate", "unknown\n");
    dir
}

fn sources(root: &Path, cmdline_text: &str) -> Sources {
    let mut addrs = BTreeMap::new();
    addrs.insert("eno1".to_string(), vec!["10.20.0.7/24".to_string()]);
    addrs.insert("lo".to_string(), vec!["127.0.0.1/8".to_string()]);
    Sources::fake(root, cmdline::parse(cmdline_text), addrs)
}

#[test]
fn fake_tree_reads_everything() {
    let dir = fake_tree();
    let f = collect(&sources(dir.path(), "BOOTIF=01-b4-96-91-2a-00-01"));

    assert_eq!(f.hostname.as_deref(), Some("node-7"));
    assert_eq!(f.kernel.as_deref(), Some("6.1.0-18-amd64"));
    let os = f.os.unwrap();
    assert_eq!(os.id.as_deref(), Some("debian"));
    assert_eq!(os.version_id.as_deref(), Some("12"));
    assert_eq!(
        os.pretty_name.as_deref(),
        Some("Debian GNU/Linux 12 (bookworm)")
    );

    assert_eq!(f.dmi.system_vendor.as_deref(), Some("Dell Inc."));
    assert_eq!(f.dmi.product_name.as_deref(), Some("PowerEdge R640"));
    assert_eq!(f.dmi.product_serial, None, "unreadable serial is absent");
    assert_eq!(
        f.dmi.product_uuid.as_deref(),
        Some("4c4c4544-0042-3510-8052-b4c04f4d4e32")
    );
    assert_eq!(f.dmi.bios_date, None, "empty value is absent");
    assert_eq!(f.dmi.board_vendor, None, "missing file is absent");

    let cpu = f.cpu.unwrap();
    assert_eq!(cpu.threads, 16);
    assert_eq!(cpu.sockets, Some(2));
    assert_eq!(cpu.cores, Some(8));
    assert_eq!(
        cpu.model.as_deref(),
        Some("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz")
    );
    assert_eq!(cpu.flags, vec!["vmx", "aes", "avx", "avx2", "sse4_2"]);

    let mem = f.memory.unwrap();
    assert_eq!(mem.total_bytes, 16318048 * 1024);
    assert_eq!(mem.swap_bytes, 2097148 * 1024);

    let names: Vec<&str> = f.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["nvme0n1", "sda"],
        "virtual devices are left out"
    );
    let nvme = &f.disks[0];
    assert_eq!(nvme.size_bytes, 1953525168 * 512);
    assert_eq!(nvme.rotational, Some(false));
    assert_eq!(nvme.serial.as_deref(), Some("S467NX0M123456"));
    assert_eq!(nvme.wwn.as_deref(), Some("eui.0025388b71b2f3a4"));
    assert_eq!(nvme.model.as_deref(), Some("Samsung SSD 970 EVO 1TB"));
    assert_eq!(nvme.by_path, vec!["pci-0000:3b:00.0-nvme-1"]);
    assert_eq!(nvme.vendor, None);
    assert_eq!(nvme.hctl, None, "NVMe has no SCSI address");
    assert_eq!(nvme.wwn_with_extension, None);
    assert_eq!(nvme.read_only, Some(true));
    assert_eq!(nvme.mounts, vec!["/srv"]);
    let sda = &f.disks[1];
    assert_eq!(sda.rotational, Some(true));
    assert_eq!(sda.removable, Some(false));
    assert_eq!(
        sda.serial.as_deref(),
        Some("Z1D2ABCD"),
        "udev's serial when sysfs has none"
    );
    assert_eq!(
        sda.wwn.as_deref(),
        Some("0x5000c5005e6f1a2b"),
        "udev's WWN before sysfs's wwid"
    );
    assert_eq!(
        sda.wwn_with_extension.as_deref(),
        Some("0x5000c5005e6f1a2b")
    );
    assert_eq!(sda.wwn_vendor_extension, None, "an empty value is absent");
    assert_eq!(sda.vendor.as_deref(), Some("ATA"));
    assert_eq!(sda.hctl.as_deref(), Some("2:0:0:0"));
    assert_eq!(sda.read_only, Some(false));
    assert_eq!(
        sda.mounts,
        vec!["/", "/boot/my efi", "[SWAP]"],
        "through a partition, a volume built on one, and swap"
    );
    assert_eq!(
        sda.by_path,
        vec!["pci-0000:00:17.0-ata-1"],
        "partitions are not the disk"
    );

    let nic = |n: &str| f.nics.iter().find(|x| x.name == n).unwrap();
    let eno1 = nic("eno1");
    assert_eq!(eno1.mac.as_deref(), Some("b4:96:91:2a:00:01"));
    assert_eq!(eno1.driver.as_deref(), Some("i40e"));
    assert_eq!(eno1.speed_mbps, Some(10000));
    assert_eq!(eno1.link_up, Some(true));
    assert_eq!(eno1.mtu, Some(9000));
    assert_eq!(eno1.addresses, vec!["10.20.0.7/24"]);
    assert_eq!(eno1.pxe, Some(true));
    assert!(!eno1.virtual_device);
    let eno2 = nic("eno2");
    assert_eq!(eno2.speed_mbps, None, "speed -1 while down is absent");
    assert_eq!(eno2.link_up, Some(false));
    assert_eq!(eno2.driver, None);
    assert_eq!(eno2.pxe, Some(false));
    let lo = nic("lo");
    assert!(lo.virtual_device);
    assert_eq!(lo.mac, None);
    assert_eq!(lo.link_up, None);
    assert!(f.collected_in_us.is_some());
}

#[test]
fn pxe_is_unknown_without_bootif_or_ip() {
    let dir = fake_tree();
    let f = collect(&sources(dir.path(), "quiet"));
    assert!(f.nics.iter().all(|n| n.pxe.is_none()));
    let f = collect(&sources(
        dir.path(),
        "ip=10.0.0.7::10.0.0.1:255.255.255.0:n7:eno2:off",
    ));
    assert_eq!(
        f.nics.iter().find(|n| n.name == "eno2").unwrap().pxe,
        Some(true)
    );
}

#[test]
fn an_empty_root_reports_everything_absent() {
    let dir = tempfile::tempdir().unwrap();
    let f = collect(&sources(dir.path(), ""));
    assert_eq!(f.hostname, None);
    assert_eq!(f.kernel, None);
    assert_eq!(f.os, None);
    assert_eq!(f.cpu, None);
    assert_eq!(f.memory, None);
    assert!(f.disks.is_empty());
    assert!(f.nics.is_empty());
    assert_eq!(f.dmi, Default::default());
}

#[test]
fn garbage_files_do_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("proc")).unwrap();
    fs::write(root.join("proc/cpuinfo"), [0xffu8, 0xfe, b':', b'\n', b':']).unwrap();
    fs::write(root.join("proc/meminfo"), "MemTotal: lots\n").unwrap();
    fs::create_dir_all(root.join("sys/block/sdz")).unwrap();
    fs::write(root.join("sys/block/sdz/size"), "-5").unwrap();
    let f = collect(&sources(root, ""));
    assert_eq!(f.memory, None);
    assert_eq!(f.disks.len(), 1);
    assert_eq!(f.disks[0].size_bytes, 0);
}

#[test]
fn smoke_on_this_machine() {
    let f = collect(&Sources::live(crate::cmdline::KernelCmdline::default()));
    // Every Linux machine that runs the tests has a kernel release, memory, a CPU and a loopback device.
    assert!(f.kernel.is_some());
    assert!(f.memory.map(|m| m.total_bytes > 0).unwrap_or(false));
    assert!(f.cpu.map(|c| c.threads > 0).unwrap_or(false));
    assert!(f.nics.iter().any(|n| n.name == "lo" && n.virtual_device));
}

/// A loop device over a file, detached when dropped, also when the test fails.
struct Loop {
    /// `loopN`.
    name: String,
}

impl Loop {
    fn attach(file: &Path, read_only: bool) -> Loop {
        let mut cmd = std::process::Command::new("losetup");
        cmd.args(["--find", "--show"]);
        if read_only {
            cmd.arg("--read-only");
        }
        let out = cmd.arg(file).output().expect("losetup runs");
        assert!(out.status.success(), "losetup: {out:?}");
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Loop {
            name: dev.trim_start_matches("/dev/").to_string(),
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["--detach", &format!("/dev/{}", self.name)])
            .status();
    }
}

/// A mounted file system, unmounted when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn run(program: &str, args: &[&str]) {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
}

/// Real block devices: a loop device with a file system mounted from it, and a read-only one. (Partitions
/// and devices built on them are the fake tree's: not every kernel scans a loop device's partitions.)
/// Needs root, losetup and mkfs.ext4.
#[test]
fn a_real_loop_device_reports_its_mounts_and_read_only_flag() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let image = base.join("disk.img");
    fs::File::create(&image).unwrap().set_len(32 << 20).unwrap();
    run("mkfs.ext4", &["-q", "-F", image.to_str().unwrap()]);
    let disk = Loop::attach(&image, false);
    let point = base.join("mnt point");
    fs::create_dir(&point).unwrap();
    run(
        "mount",
        &[&format!("/dev/{}", disk.name), point.to_str().unwrap()],
    );
    let _mounted = Mounted(point.clone());

    let ro_image = base.join("ro.img");
    fs::File::create(&ro_image)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let ro = Loop::attach(&ro_image, true);

    let live = Sources::live(cmdline::KernelCmdline::default());
    let mounts = mounts::Mounts::read(&live);
    let by_path = BTreeMap::new();
    let d = disks::read_one(&live, &disk.name, &by_path, &mounts);
    assert_eq!(d.size_bytes, 32 << 20);
    assert_eq!(d.read_only, Some(false));
    assert_eq!(d.mounts, vec![point.to_str().unwrap().to_string()]);
    let r = disks::read_one(&live, &ro.name, &by_path, &mounts);
    assert_eq!(r.size_bytes, 8 << 20);
    assert_eq!(r.read_only, Some(true));
    assert!(r.mounts.is_empty(), "{:?}", r.mounts);
}
