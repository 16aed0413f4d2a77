//! The installed system's preparation on real loop devices: a small GPT disk made with `sgdisk`,
//! `mkfs.vfat` and `mke2fs` (as `make-image --format disk` lays one out) is written at the start of a
//! larger loop device, as the agent writes an image to a larger disk, and prepared there. Every loop
//! device and mount is removed by a guard, also when a test fails. Needs root.

use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1024 * 1024;

/// Held by the tests that mount roots, so that one can tell the private directories it leaves from
/// another test's.
static MOUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mounting() -> std::sync::MutexGuard<'static, ()> {
    MOUNTING.lock().unwrap_or_else(|p| p.into_inner())
}

fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "these tests make loop devices and mount file systems: run them as root"
    );
}

/// Runs a command; its standard output. Fails the test when it fails.
fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e} (scripts/test.sh installs it)"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A loop device on a file of its own, detached (its partitions first) and the file removed on drop.
struct Loop {
    device: PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    /// A loop device of `size` bytes holding `image` at its start.
    fn holding(image: &[u8], size: u64) -> Loop {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("disk.raw");
        std::fs::write(&file, image).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(size)
            .unwrap();
        let device = sh(
            "losetup",
            &[
                "--find",
                "--show",
                "--partscan",
                &file.display().to_string(),
            ],
        );
        Loop {
            device: PathBuf::from(device.trim()),
            _dir: dir,
        }
    }

    fn path(&self) -> &Path {
        &self.device
    }

    /// Partition `n`'s device node.
    fn part(&self, n: u32) -> PathBuf {
        PathBuf::from(format!("{}p{n}", self.device.display()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.device).output();
    }
}

/// How to lay out a synthetic disk.
struct Layout {
    /// The root partition's GPT type code (sgdisk's: 8304 is Linux root x86-64, 8300 Linux data).
    root_type: &'static str,
    /// Whether the root file system holds /etc/os-release.
    os_release: bool,
    /// A second Linux data partition holding an os-release too.
    second_system: bool,
}

const DISK: Layout = Layout {
    root_type: "8304",
    os_release: true,
    second_system: false,
};

/// A 64 MiB GPT disk image: 1 BIOS boot (1 MiB), 2 EFI system (8 MiB, FAT), 3 (and 4) ext4 with a
/// small root tree. Made on a loop device of its own (released before returning).
fn synthetic_disk(layout: &Layout) -> Vec<u8> {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("etc")).unwrap();
    std::fs::create_dir_all(tree.path().join("usr/lib/systemd")).unwrap();
    std::fs::write(tree.path().join("usr/lib/systemd/systemd-networkd"), "").unwrap();
    std::fs::write(
        tree.path().join("etc/hosts"),
        "127.0.0.1\tlocalhost\n127.0.1.1\tdebian\n::1\tlocalhost ip6-localhost\n",
    )
    .unwrap();
    if layout.os_release {
        std::fs::write(tree.path().join("etc/os-release"), "ID=debian\n").unwrap();
    }
    let disk = Loop::holding(&[], 64 * MIB);
    let d = disk.path().display().to_string();
    let mut args = vec![
        "--zap-all",
        "--new=1:2048:+1M",
        "--typecode=1:EF02",
        "--change-name=1:bios-boot",
        "--new=2:0:+8M",
        "--typecode=2:EF00",
        "--change-name=2:efi",
    ];
    let root_type = format!("--typecode=3:{}", layout.root_type);
    if layout.second_system {
        args.extend(["--new=3:0:+24M", &root_type, "--change-name=3:root"]);
        args.extend(["--new=4:0:0", "--typecode=4:8300", "--change-name=4:other"]);
    } else {
        args.extend(["--new=3:0:0", &root_type, "--change-name=3:root"]);
    }
    args.push(&d);
    sh("sgdisk", &args);
    sh("partx", &["--update", &d]);
    wait_for(&disk.part(3));
    sh(
        "mkfs.vfat",
        &[
            "-F",
            "32",
            "-s",
            "1",
            "-n",
            "EFI",
            &disk.part(2).display().to_string(),
        ],
    );
    let t = tree.path().display().to_string();
    let ext4 = |label: &str, part: PathBuf| {
        wait_for(&part);
        let p = part.display().to_string();
        sh(
            "mke2fs",
            &["-q", "-F", "-t", "ext4", "-L", label, "-d", &t, &p],
        );
    };
    ext4("rootfs", disk.part(3));
    if layout.second_system {
        ext4("other", disk.part(4));
    }
    std::fs::read(&disk.device).unwrap()
}

fn wait_for(node: &Path) {
    for _ in 0..100 {
        if node.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} did not appear", node.display());
}

/// `sgdisk -v`'s verdict and `sgdisk -p`'s listing.
fn sgdisk_verify(disk: &Path) -> String {
    let out = Command::new("sgdisk")
        .arg("-v")
        .arg(disk)
        .output()
        .expect("sgdisk runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A field of `sgdisk -i N` ("Last sector: 131038 (at 64.0 MiB)" is 131038).
fn sgdisk_info(disk: &Path, n: u32, field: &str) -> u64 {
    let out = sh(
        "sgdisk",
        &["-i", &n.to_string(), &disk.display().to_string()],
    );
    out.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {out}"))
}

#[test]
fn the_backup_gpt_moves_to_the_end_of_a_larger_disk() {
    require_root();
    let image = synthetic_disk(&DISK);
    let disk = Loop::holding(&image, 256 * MIB);
    // Boot code in the protective MBR (GRUB's, on a real image) survives.
    let mbr_code: Vec<u8> = std::fs::read(disk.path()).unwrap()[..440].to_vec();
    let before = sgdisk_verify(disk.path());
    assert!(!before.contains("No problems found"), "{before}");

    let moved = relocate_backup_gpt(disk.path()).unwrap();
    let sectors = 256 * MIB / 512;
    assert_eq!(
        moved,
        Relocation::Moved {
            from_lba: 64 * MIB / 512 - 1,
            to_lba: sectors - 1
        }
    );
    let after = sgdisk_verify(disk.path());
    assert!(after.contains("No problems found"), "{after}");
    let listing = sh("sgdisk", &["-p", &disk.path().display().to_string()]);
    assert!(
        listing.contains(&format!("last usable sector is {}", sectors - 34)),
        "{listing}"
    );
    let bytes = std::fs::read(disk.path()).unwrap();
    assert_eq!(&bytes[..440], mbr_code.as_slice());
    // The partitions are as they were.
    assert_eq!(sgdisk_info(disk.path(), 3, "First sector:"), 20480);
    assert_eq!(
        sgdisk_info(disk.path(), 3, "Last sector:"),
        64 * MIB / 512 - 34
    );
    assert_eq!(
        relocate_backup_gpt(disk.path()).unwrap(),
        Relocation::AlreadyAtEnd
    );
}

#[test]
fn an_mbr_disk_is_left_as_it_is() {
    require_root();
    let disk = Loop::holding(&[], 64 * MIB);
    let d = disk.path().display().to_string();
    let out = Command::new("sfdisk")
        .arg(&d)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"label: dos\n,32M,83\n")?;
            c.wait()
        })
        .expect("sfdisk runs");
    assert!(out.success());
    let before = std::fs::read(disk.path()).unwrap();
    assert_eq!(
        relocate_backup_gpt(disk.path()).unwrap(),
        Relocation::NotGpt
    );
    assert_eq!(std::fs::read(disk.path()).unwrap(), before);
    let e = grow_last_partition(disk.path()).unwrap_err().to_string();
    assert!(
        e.starts_with(&d) && e.contains("only GPT disks are grown"),
        "{e}"
    );
}

#[test]
fn the_last_partition_and_its_ext4_file_system_grow_to_the_end_of_the_disk() {
    require_root();
    let _one = mounting();
    let image = synthetic_disk(&DISK);
    let disk = Loop::holding(&image, 256 * MIB);
    let report = grow_last_partition(disk.path()).unwrap();
    let sectors = 256 * MIB / 512;
    assert_eq!(report.number, 3);
    assert_eq!(report.partition, disk.part(3));
    assert_eq!(report.old_size, (64 * MIB / 512 - 34 + 1 - 20480) * 512);
    assert_eq!(report.new_size, (sectors - 34 + 1 - 20480) * 512);
    assert_eq!(
        report.filesystem,
        FsGrowth::Grown {
            fs: "ext4".to_string()
        }
    );
    assert!(matches!(report.relocation, Relocation::Moved { .. }));
    let verify = sgdisk_verify(disk.path());
    assert!(verify.contains("No problems found"), "{verify}");
    assert_eq!(sgdisk_info(disk.path(), 3, "Last sector:"), sectors - 34);
    // The kernel sees the new size, and the file system fills it.
    let size: u64 = std::fs::read_to_string(format!(
        "/sys/class/block/{}/size",
        disk.part(3).file_name().unwrap().to_string_lossy()
    ))
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    assert_eq!(size * 512, report.new_size);
    let dumped = sh("dumpe2fs", &["-h", &disk.part(3).display().to_string()]);
    let field = |name: &str| -> u64 {
        dumped
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {dumped}"))
    };
    // resize2fs fills the partition but for less than a few blocks at its end.
    let fs_size = field("Block count:") * field("Block size:");
    assert!(
        fs_size <= report.new_size && report.new_size - fs_size < 64 * 1024,
        "{fs_size} bytes of file system in {} of partition",
        report.new_size
    );
    // Mounted, df sees it.
    let root = mount_root(&disk.part(3)).unwrap();
    let df = sh(
        "df",
        &["-k", "--output=size", &root.path().display().to_string()],
    );
    let kib: u64 = df.lines().nth(1).unwrap().trim().parse().unwrap();
    assert!(kib > 200 * 1024, "df: {df}");
    drop(root);
    // Again: nothing left to grow, and it says so by sizes.
    let again = grow_last_partition(disk.path()).unwrap();
    assert_eq!(again.old_size, again.new_size);
    assert_eq!(again.relocation, Relocation::AlreadyAtEnd);
}

#[test]
fn a_last_partition_without_a_file_system_grows_and_the_report_says_so() {
    require_root();
    let image = synthetic_disk(&DISK);
    let disk = Loop::holding(&image, 128 * MIB);
    // Wipe the ext4 superblock (at 1 KiB into the partition).
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(disk.path())
            .unwrap();
        f.seek(SeekFrom::Start(20480 * 512)).unwrap();
        f.write_all(&vec![0u8; 8192]).unwrap();
        f.sync_all().unwrap();
    }
    let report = grow_last_partition(disk.path()).unwrap();
    assert_eq!(report.new_size, (128 * MIB / 512 - 34 + 1 - 20480) * 512);
    assert!(
        matches!(&report.filesystem, FsGrowth::NotGrown { fs: None, why } if why.contains("only the partition")),
        "{report:?}"
    );
}

#[test]
fn the_root_is_found_by_number_label_type_and_os_release() {
    require_root();
    let typed = Loop::holding(&synthetic_disk(&DISK), 64 * MIB);
    let d = typed.path();
    let by = |s: RootSelector| find_root_partition(d, &s).unwrap();
    let found = by(RootSelector::Auto);
    assert_eq!((found.number, found.found_by), (3, FoundBy::GptType));
    assert_eq!(found.device, typed.part(3));
    assert_eq!(by(RootSelector::Number(3)).found_by, FoundBy::Number);
    // The GPT name, or the file system's label.
    assert_eq!(by(RootSelector::Label("root".into())).number, 3);
    assert_eq!(by(RootSelector::Label("rootfs".into())).number, 3);
    let e = find_root_partition(d, &RootSelector::Number(9))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no partition 9 (it has 1, 2, 3)"), "{e}");
    let e = find_root_partition(d, &RootSelector::Label("nope".into()))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&d.display().to_string()) && e.contains("\"nope\""),
        "{e}"
    );

    // Linux data partitions: the one holding /etc/os-release.
    let plain = Loop::holding(
        &synthetic_disk(&Layout {
            root_type: "8300",
            ..DISK
        }),
        64 * MIB,
    );
    let found = find_root_partition(plain.path(), &RootSelector::Auto).unwrap();
    assert_eq!((found.number, found.found_by), (3, FoundBy::OsRelease));

    // Two systems: which one is not guessed.
    let two = Loop::holding(
        &synthetic_disk(&Layout {
            root_type: "8300",
            second_system: true,
            ..DISK
        }),
        64 * MIB,
    );
    match find_root_partition(two.path(), &RootSelector::Auto) {
        Err(InstalledError::AmbiguousRoot { candidates, .. }) => {
            assert_eq!(candidates, [two.part(3), two.part(4)])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        find_root_partition(two.path(), &RootSelector::Label("other".into()))
            .unwrap()
            .number,
        4
    );

    // No system at all.
    let none = Loop::holding(
        &synthetic_disk(&Layout {
            root_type: "8300",
            os_release: false,
            second_system: false,
        }),
        64 * MIB,
    );
    let e = find_root_partition(none.path(), &RootSelector::Auto).unwrap_err();
    assert!(matches!(e, InstalledError::NoRoot { .. }), "{e}");
    assert!(e.to_string().contains("holding /etc/os-release"), "{e}");
}

/// A synthetic disk on a loop device, its root found and mounted.
fn mounted_disk() -> (Loop, MountedRoot) {
    require_root();
    let disk = Loop::holding(&synthetic_disk(&DISK), 64 * MIB);
    let part = find_root_partition(disk.path(), &RootSelector::Auto)
        .unwrap()
        .device;
    let root = mount_root(&part).unwrap();
    (disk, root)
}

fn mounts() -> String {
    std::fs::read_to_string("/proc/self/mounts").unwrap()
}

#[test]
fn host_name_network_and_keys_are_written_into_the_mounted_root_and_read_back() {
    let _one = mounting();
    let (disk, root) = mounted_disk();
    let at = root.path().to_path_buf();
    assert!(mounts().contains(&at.display().to_string()));
    let home = at.parent().unwrap().to_path_buf();
    assert_eq!(std::fs::metadata(&home).unwrap().mode() & 0o777, 0o700);
    // The ESP: at /boot/efi, or (a kernel without FAT) the reason names it.
    match (root.esp(), root.esp_problem()) {
        (Some(esp), None) => {
            assert_eq!(esp, disk.part(2));
            assert!(mounts().contains(&at.join("boot/efi").display().to_string()));
        }
        (None, Some(why)) => assert!(why.contains(&disk.part(2).display().to_string()), "{why}"),
        other => panic!("{other:?}"),
    }

    write_hostname(&at, "r7-n01.example.org").unwrap();
    assert_eq!(
        std::fs::read_to_string(at.join("etc/hostname")).unwrap(),
        "r7-n01.example.org\n"
    );
    assert_eq!(
        std::fs::read_to_string(at.join("etc/hosts")).unwrap(),
        "127.0.0.1\tlocalhost\n127.0.1.1\tr7-n01.example.org r7-n01\n::1\tlocalhost ip6-localhost\n"
    );
    assert!(write_hostname(&at, "bad_name").is_err());

    let config: NetworkConfig = serde_json::from_str(
        r#"{"interfaces": [{"mac": "52:54:00:12:34:56", "addresses": ["10.9.0.5/24"], "gateway": "10.9.0.1", "dns": ["10.9.0.2"]}]}"#,
    )
    .unwrap();
    let NetworkOutcome::Written(files) = write_network(&at, &config).unwrap() else {
        panic!("the image has systemd-networkd");
    };
    assert_eq!(
        files,
        [at.join("etc/systemd/network/10-plinth-525400123456.network")]
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.contains("[Match]\nMACAddress=52:54:00:12:34:56\n"),
        "{text}"
    );
    assert!(
        text.contains("Address=10.9.0.5/24\nGateway=10.9.0.1\nDNS=10.9.0.2\n"),
        "{text}"
    );
    // Written again for another interface: the first file goes.
    let other = NetworkConfig {
        interfaces: vec![InterfaceConfig {
            mac: "52:54:00:12:34:57".into(),
            dhcp: true,
            ..Default::default()
        }],
    };
    write_network(&at, &other).unwrap();
    assert!(!files[0].exists());
    assert!(at
        .join("etc/systemd/network/10-plinth-525400123457.network")
        .exists());

    let key =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZ1bGx5LXZhbGlkLWxvb2tpbmcta2V5LWJ5dGVz ops@example";
    let path = write_authorized_keys(&at, &[key.to_string()]).unwrap();
    assert_eq!(path, at.join("root/.ssh/authorized_keys"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{key}\n"));
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(at.join("root/.ssh")).unwrap().mode() & 0o777,
        0o700
    );
    for bad in [
        "ssh-ed25519 notbase64!",
        "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIGZ1bGx5",
        "hello",
        "ssh-ed25519 AAAA\nssh-rsa AAAA",
    ] {
        let e = write_authorized_keys(&at, &[key.to_string(), bad.to_string()]).unwrap_err();
        assert!(e.to_string().starts_with("SSH key 2: "), "{e}");
    }
    // A refused list leaves the file as it was.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{key}\n"));

    drop(root);
    assert!(!mounts().contains(&at.display().to_string()));
    assert!(!home.exists(), "the private directory is removed");
    // What was written is on the disk.
    let again = mount_root(&disk.part(3)).unwrap();
    assert_eq!(
        std::fs::read_to_string(again.path().join("etc/hostname")).unwrap(),
        "r7-n01.example.org\n"
    );
}

#[test]
fn paths_that_leave_the_root_or_go_through_links_are_refused() {
    let _one = mounting();
    let (_disk, root) = mounted_disk();
    let at = root.path();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), at.join("etc/escape")).unwrap();
    std::os::unix::fs::symlink("/etc", at.join("etc/absolute")).unwrap();
    std::os::unix::fs::symlink("../usr", at.join("etc/relative")).unwrap();
    for path in [
        "/etc/escape/x",
        "/etc/absolute/x",
        "/etc/relative/x",
        "/../x",
        "etc/../../x",
    ] {
        let e = place_file(at, Path::new(path), b"no", 0o644).unwrap_err();
        assert!(matches!(e, InstalledError::Refused { .. }), "{path}: {e}");
        assert!(e.to_string().starts_with(path), "{e}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!at.join("usr/x").exists());
    // A link where the file goes is replaced, not followed.
    let target = outside.path().join("target");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, at.join("etc/motd")).unwrap();
    let placed = place_file(at, Path::new("/etc/motd"), b"hello\n", 0o640).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    assert_eq!(std::fs::read_to_string(&placed).unwrap(), "hello\n");
    let meta = std::fs::symlink_metadata(&placed).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    // Missing directories are made.
    place_file(at, Path::new("/opt/plinth/deep/file"), b"x", 0o600).unwrap();
    assert!(at.join("opt/plinth/deep/file").is_file());
    assert!(place_file(at, Path::new("/"), b"x", 0o600).is_err());
    assert!(place_file(at, Path::new("/etc/x"), b"x", 0o17777).is_err());
}

#[test]
fn a_table_with_gaps_in_its_numbers_is_refused_not_renumbered() {
    require_root();
    let small = Loop::holding(&[], 16 * MIB);
    let d = small.path().display().to_string();
    sh("sgdisk", &["--new=1:2048:+1M", "--new=3:0:+1M", &d]);
    let image = std::fs::read(small.path()).unwrap();
    drop(small);
    let disk = Loop::holding(&image, 32 * MIB);
    let before = std::fs::read(disk.path()).unwrap();
    for e in [
        relocate_backup_gpt(disk.path()).unwrap_err(),
        grow_last_partition(disk.path()).unwrap_err(),
    ] {
        assert!(e.to_string().contains("gaps (1, 3)"), "{e}");
    }
    assert!(
        std::fs::read(disk.path()).unwrap() == before,
        "nothing was written"
    );
}

#[test]
fn a_root_that_cannot_be_mounted_leaves_no_directory_behind() {
    require_root();
    let _one = mounting();
    let disk = Loop::holding(&synthetic_disk(&DISK), 64 * MIB);
    find_root_partition(disk.path(), &RootSelector::Auto).unwrap();
    let ours = || -> Vec<PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("plinth-root-"))
            .collect()
    };
    let before = ours();
    // The BIOS boot partition holds no file system.
    let e = mount_root(&disk.part(1)).unwrap_err().to_string();
    assert!(e.starts_with(&disk.part(1).display().to_string()), "{e}");
    assert_eq!(ours(), before);
}
