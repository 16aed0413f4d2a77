//! Wiping signatures, erasing whole disks, and telling a disk the running system uses.

use super::*;

const TARGET: u64 = 48 << 20;

/// A target holding the fixture's disk, written by the engine.
fn written(f: &Fixture) -> Target {
    let target = Target::new(f.dir.path(), "target", TARGET);
    target.write(&f.raw, &WriteOptions::default()).unwrap();
    target
}

#[test]
fn wiping_removes_every_signature_wipefs_and_blkid_find_and_leaves_the_rest() {
    let f = Fixture::new();
    let target = written(&f);
    // Before: the partition table on the disk, ext4 and swap in the partitions.
    assert!(
        blkid(target.path()).contains("PTTYPE=\"gpt\""),
        "{}",
        blkid(target.path())
    );
    for (&(offset, len), kind) in f.partitions.iter().zip(["TYPE=\"ext4\"", "TYPE=\"swap\""]) {
        let part = Loop::attach(&target.file, Some((offset, len)));
        assert!(blkid(&part.path).contains(kind), "{}", blkid(&part.path));
    }
    let report = wipe_signatures(target.path()).unwrap();
    assert_eq!(report.partitions, 2);
    assert_no_signatures(&target, &f.partitions);
    // The image's backup GPT (at the image's end, 32 MiB into a 48 MiB disk) went too, and the data
    // between the wiped spans is still there.
    let p1 = f.partitions[0];
    let middle = p1.0 + (4 << 20);
    let original = std::fs::read(&f.raw).unwrap();
    assert_eq!(
        target.read(middle, middle + (1 << 20)),
        &original[middle as usize..][..1 << 20]
    );
    assert!(
        report
            .ranges
            .iter()
            .any(|&(start, len)| start < DISK && start + len >= DISK),
        "{:?}",
        report.ranges
    );
}

#[test]
fn erasing_zeroes_the_whole_disk() {
    let f = Fixture::new();
    let target = written(&f);
    let report = erase(target.path()).unwrap();
    assert_eq!(report.bytes, TARGET);
    // A loop device discards (punching holes in its file) and has a write-zeroes command.
    assert!(report.discarded, "{report:?}");
    assert_eq!(report.method, EraseMethod::WriteZeroes);
    assert!(
        target.read(0, TARGET).iter().all(|&b| b == 0),
        "the disk is not all zeros"
    );
    assert_no_signatures(&target, &f.partitions);
    // A regular file standing in for a disk: its blocks are deallocated.
    let file = f.path("disk-file");
    std::fs::copy(&f.raw, &file).unwrap();
    let report = erase(&file).unwrap();
    assert_eq!(report.method, EraseMethod::Hole);
    assert!(std::fs::read(&file).unwrap().iter().all(|&b| b == 0));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), DISK);
}

/// A mount, unmounted when dropped.
struct Mount {
    dir: PathBuf,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

#[test]
fn a_mounted_disk_holds_the_running_system_and_is_not_opened_for_writing() {
    let f = Fixture::new();
    let fs = f.path("fs.img");
    File::create(&fs).unwrap().set_len(16 << 20).unwrap();
    run("mkfs.ext4", &["-q", "-F", s(&fs)]);
    let dev = Loop::attach(&fs, None);
    assert!(!device_holds_running_system(&dev.path));
    assert_eq!(
        running_system_uses(&dev.path).unwrap(),
        Vec::<String>::new()
    );
    let dir = f.path("mnt");
    std::fs::create_dir(&dir).unwrap();
    run("mount", &[s(&dev.path), s(&dir)]);
    let mount = Mount { dir: dir.clone() };
    assert!(device_holds_running_system(&dev.path));
    let uses = running_system_uses(&dev.path).unwrap();
    assert_eq!(uses.len(), 1, "{uses:?}");
    assert!(
        uses[0].starts_with(&format!("{} (", dev.path.display())),
        "{uses:?}"
    );
    assert!(
        uses[0].ends_with(&format!("mounted at {}", dir.display())),
        "{uses:?}"
    );
    // The kernel refuses an exclusive open of a mounted device: nothing is written to it.
    let e = write_image(
        File::open(&f.raw).unwrap(),
        &dev.path,
        &WriteOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("cannot open it exclusively"), "{e}");
    let e = erase(&dev.path).unwrap_err();
    assert!(e.to_string().contains("cannot open it exclusively"), "{e}");
    // Told to (an erase_node task with allow_running_system), the signatures go all the same: blkid
    // finds no file system on it any more.
    wipe_signatures_in_use(&dev.path).unwrap();
    let probe = Command::new("blkid")
        .args(["-p", s(&dev.path)])
        .output()
        .unwrap();
    assert_eq!(probe.status.code(), Some(2), "{probe:?}");
    drop(mount);
    assert!(!device_holds_running_system(&dev.path));
}
