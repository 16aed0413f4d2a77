//! Bad images: refused before anything is written when that can be known, and otherwise failing with
//! the disk's signatures wiped.

use super::*;
use std::io;

const TARGET: u64 = 48 << 20;

/// The disk's content, to show nothing was written.
fn content(target: &Target) -> Vec<u8> {
    target.read(0, target.size)
}

/// The error's message, which must contain every one of `words`.
fn says(e: &ImagingError, image: &Path, words: &[&str]) -> String {
    let text = e.to_string();
    for w in words {
        assert!(
            text.contains(w),
            "{}: {text:?} does not say {w:?}",
            image.display()
        );
    }
    text
}

/// `image` is refused before anything is written, with a message containing every one of `words`.
fn refused_untouched(f: &Fixture, image: &Path, words: &[&str]) {
    let target = Target::new(f.dir.path(), "target", TARGET);
    let e = target.write(image, &WriteOptions::default()).unwrap_err();
    let text = says(&e, image, words);
    assert!(!e.disk_changed(), "{text}");
    assert!(
        content(&target).iter().all(|&b| b == STALE),
        "{}: the disk was written",
        image.display()
    );
}

#[test]
fn images_in_formats_not_written_are_refused_by_name_before_writing() {
    let f = Fixture::new();
    let html = f.path("error.html");
    std::fs::write(
        &html,
        "<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n",
    )
    .unwrap();
    refused_untouched(&f, &html, &["an HTML page", "check the image's URL"]);
    let mut noise = Noise(7);
    let random: Vec<u8> = (0..1 << 20).map(|_| noise.next() as u8).collect();
    std::fs::write(f.path("random"), &random).unwrap();
    refused_untouched(
        &f,
        &f.path("random"),
        &["unknown image format", "no MBR boot signature"],
    );
    std::fs::write(f.path("empty"), b"").unwrap();
    refused_untouched(
        &f,
        &f.path("empty"),
        &["unknown image format", "the image is empty"],
    );
    refused_untouched(
        &f,
        &f.convert("d.vmdk", &["-O", "vmdk"]),
        &["a VMDK image", "qemu-img convert"],
    );
    refused_untouched(&f, &f.convert("d.vdi", &["-O", "vdi"]), &["a VDI image"]);
    refused_untouched(&f, &f.convert("d.vhdx", &["-O", "vhdx"]), &["a VHDX image"]);
    refused_untouched(
        &f,
        &compress("bzip2", &f.raw, &f.path("d.raw.bz2")),
        &["bzip2-compressed"],
    );
    let xz = compress("xz", &f.raw, &f.path("d.raw.xz"));
    refused_untouched(
        &f,
        &compress("gzip", &xz, &f.path("d.raw.xz.gz")),
        &["compressed twice (xz inside gzip)"],
    );
    // A file system image without a partition table.
    let fs = f.path("fs.img");
    File::create(&fs).unwrap().set_len(8 << 20).unwrap();
    run("mkfs.ext4", &["-q", "-F", s(&fs)]);
    refused_untouched(
        &f,
        &compress("zstd", &fs, &f.path("fs.img.zst")),
        &["a bare ext2/3/4 file system"],
    );
}

#[test]
fn qcow2_images_with_backing_files_encryption_or_external_data_are_refused_before_writing() {
    let f = Fixture::new();
    let base = f.convert("base.qcow2", &["-O", "qcow2"]);
    // qemu-img create with `args` before the file's name and `tail` after it.
    let create = |name: &str, args: &[&str], tail: &[&str]| {
        let path = f.path(name);
        let mut all = vec!["create", "-q", "-f", "qcow2"];
        all.extend_from_slice(args);
        all.push(s(&path));
        all.extend_from_slice(tail);
        run("qemu-img", &all);
        path
    };
    let overlay = create("overlay.qcow2", &["-b", s(&base), "-F", "qcow2"], &[]);
    refused_untouched(
        &f,
        &overlay,
        &[
            "qcow2 image: it has a backing file",
            &base.display().to_string(),
            "flatten it",
        ],
    );
    // An encrypted image: qemu-img's LUKS creation times PBKDF2 on the CPU and fails on a busy machine,
    // so the header's encryption method (byte 32) is set on an image it made: 1 AES, 2 LUKS.
    for (method, name) in [(1u8, "AES"), (2, "LUKS")] {
        let encrypted = create("enc.qcow2", &[], &["8M"]);
        let mut bytes = std::fs::read(&encrypted).unwrap();
        bytes[35] = method;
        std::fs::write(&encrypted, bytes).unwrap();
        refused_untouched(&f, &encrypted, &[&format!("it is encrypted ({name})")]);
    }
    let data = f.path("ext.data");
    let option = format!("data_file={}", s(&data));
    let external = create("ext.qcow2", &["-o", &option], &["8M"]);
    refused_untouched(
        &f,
        &external,
        &["external data file", &data.display().to_string()],
    );
}

#[test]
fn an_image_larger_than_the_disk_is_refused_before_writing_when_its_size_is_known() {
    let f = Fixture::new();
    let small = 24 << 20;
    // qcow2: the virtual size in the header.
    let qcow2 = f.convert("d.qcow2", &["-O", "qcow2", "-c"]);
    let target = Target::new(f.dir.path(), "small", small);
    let e = target.write(&qcow2, &WriteOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(&format!(
            "the image is {DISK} bytes but the disk holds {small} bytes"
        )),
        "{text}"
    );
    assert!(
        text.starts_with(&target.path().display().to_string()),
        "{text}"
    );
    assert!(!e.disk_changed());
    assert!(content(&target).iter().all(|&b| b == STALE));
    // Raw, with the download's length known.
    let options = WriteOptions {
        expected_length: Some(DISK),
        ..WriteOptions::default()
    };
    let e = target.write(&f.raw, &options).unwrap_err();
    assert!(
        matches!(
            e,
            ImagingError::ImageTooLarge {
                image_size: DISK,
                ..
            }
        ),
        "{e}"
    );
    assert!(content(&target).iter().all(|&b| b == STALE));
}

/// `image` fails after writing started: the error names `words`, and the disk holds no signature.
fn fails_wiped(
    f: &Fixture,
    image: &Path,
    options: &WriteOptions,
    size: u64,
    words: &[&str],
) -> ImagingError {
    let target = Target::new(f.dir.path(), "target", size);
    let e = target.write(image, options).unwrap_err();
    let text = says(&e, image, words);
    assert!(e.disk_changed(), "{text}");
    assert!(
        text.contains("writing had started, so the disk's signatures were wiped"),
        "{text}"
    );
    assert!(
        text.starts_with(&target.path().display().to_string()),
        "{text}"
    );
    assert_no_signatures(&target, &f.partitions);
    e
}

#[test]
fn a_checksum_mismatch_at_the_end_wipes_the_disk() {
    let f = Fixture::new();
    let image = compress("zstd", &f.raw, &f.path("d.raw.zst"));
    let wrong = ExpectedDigest::new(HashAlgorithm::Sha256, &"0".repeat(64)).unwrap();
    let options = WriteOptions {
        expected_digest: Some(wrong),
        ..WriteOptions::default()
    };
    let right = digest_of(&image, HashAlgorithm::Sha256).hex;
    let e = fails_wiped(
        &f,
        &image,
        &options,
        TARGET,
        &[
            "sha256 checksum mismatch: expected 0000000000",
            &format!("hash to {right}"),
        ],
    );
    assert!(matches!(e.cause(), ImagingError::ChecksumMismatch { .. }));
}

#[test]
fn a_stream_cut_short_at_any_layer_wipes_the_disk() {
    let f = Fixture::new();
    let qcow2 = f.convert("d.qcow2", &["-O", "qcow2"]);
    let zstd_qcow2 = f.convert(
        "z.qcow2",
        &["-O", "qcow2", "-c", "-o", "compression_type=zstd"],
    );
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            compress("gzip", &f.raw, &f.path("d.raw.gz")),
            "the image's gzip stream is corrupt or cut short",
        ),
        (
            compress("xz", &f.raw, &f.path("d.raw.xz")),
            "the image's xz stream is corrupt or cut short",
        ),
        (
            compress("zstd", &f.raw, &f.path("d.raw.zst")),
            "the image's zstd stream is corrupt or cut short",
        ),
        (qcow2.clone(), "qcow2 image: the stream ends at byte"),
        (zstd_qcow2.clone(), "qcow2 image: the stream ends at byte"),
        (
            compress("zstd", &qcow2, &f.path("d.qcow2.zst")),
            "the image's zstd stream is corrupt or cut short",
        ),
    ];
    for (image, words) in cases {
        let len = std::fs::metadata(&image).unwrap().len();
        let cut = truncated(&image, len * 3 / 4, &f.path("cut"));
        fails_wiped(&f, &cut, &WriteOptions::default(), TARGET, &[words]);
    }
    // Raw has no end of its own: the download's length tells a short stream.
    let cut = truncated(&f.raw, DISK / 2, &f.path("cut.raw"));
    let options = WriteOptions {
        expected_length: Some(DISK),
        ..WriteOptions::default()
    };
    fails_wiped(
        &f,
        &cut,
        &options,
        TARGET,
        &[&format!(
            "the image is truncated: the download was to bring {DISK} bytes and brought {}",
            DISK / 2
        )],
    );
}

/// A download that breaks off after `left` bytes.
struct Broken {
    file: File,
    left: u64,
}

impl Read for Broken {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "connection reset by peer",
            ));
        }
        let n = out.len().min(self.left as usize);
        let n = self.file.read(&mut out[..n])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[test]
fn a_download_that_breaks_off_wipes_the_disk() {
    let f = Fixture::new();
    for image in [f.raw.clone(), compress("xz", &f.raw, &f.path("d.raw.xz"))] {
        let target = Target::new(f.dir.path(), "target", TARGET);
        let len = std::fs::metadata(&image).unwrap().len();
        let source = Broken {
            file: File::open(&image).unwrap(),
            left: len / 2,
        };
        let e = write_image(source, target.path(), &WriteOptions::default()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "reading the image failed after {} bytes: connection reset by peer",
                len / 2
            )),
            "{text}"
        );
        assert!(matches!(e.cause(), ImagingError::Read { .. }), "{text}");
        assert!(e.disk_changed());
        assert_no_signatures(&target, &f.partitions);
    }
}

#[test]
fn a_raw_image_passing_the_end_of_the_disk_wipes_it() {
    let f = Fixture::new();
    let image = compress("gzip", &f.raw, &f.path("d.raw.gz"));
    let small = 24 << 20;
    fails_wiped(
        &f,
        &image,
        &WriteOptions::default(),
        small,
        &[&format!(
            "the image goes on past the end of the disk ({small} bytes)"
        )],
    );
}

#[test]
fn a_corrupt_compressed_cluster_wipes_the_disk() {
    let f = Fixture::new();
    for (name, compression) in [("zlib.qcow2", "zlib"), ("zstd.qcow2", "zstd")] {
        let image = f.convert(
            name,
            &[
                "-O",
                "qcow2",
                "-c",
                "-o",
                &format!("compression_type={compression}"),
            ],
        );
        // Garble the first compressed cluster's first bytes (an invalid deflate block type, no zstd
        // frame magic), found through the L1 and L2 tables.
        let mut data = std::fs::read(&image).unwrap();
        let be = |at: usize| u64::from_be_bytes(data[at..at + 8].try_into().unwrap());
        let l2 = (be(be(40) as usize) & 0x00ff_ffff_ffff_fe00) as usize;
        let entry = (0..8192)
            .map(|i| be(l2 + 8 * i))
            .find(|e| e & (1 << 62) != 0)
            .unwrap();
        let offset = (entry & ((1 << 54) - 1)) as usize;
        data[offset..offset + 4].fill(0xff);
        std::fs::write(&image, data).unwrap();
        let e = fails_wiped(
            &f,
            &image,
            &WriteOptions::default(),
            TARGET,
            &["qcow2 image:"],
        );
        assert!(
            matches!(
                e.cause(),
                ImagingError::Qcow2(Qcow2Error::Cluster { .. } | Qcow2Error::Corrupt(_))
            ),
            "{e}"
        );
    }
}

/// A download during which the agent is told to stop, after `left` bytes.
struct StopAfter {
    file: File,
    left: u64,
    trigger: crate::shutdown::Trigger,
}

impl Read for StopAfter {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            self.trigger.trigger();
        }
        let n = out.len().min(self.left.max(1) as usize);
        let n = self.file.read(&mut out[..n])?;
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

#[test]
fn a_stop_during_the_write_wipes_the_disk_and_a_stop_before_it_touches_nothing() {
    let f = Fixture::new();
    let (trigger, shutdown) = crate::shutdown::channel();
    let target = Target::new(f.dir.path(), "target", TARGET);
    let options = WriteOptions {
        cancel: Some(shutdown.clone()),
        ..WriteOptions::default()
    };
    let source = StopAfter {
        file: File::open(&f.raw).unwrap(),
        left: DISK / 2,
        trigger,
    };
    let e = write_image(source, target.path(), &options).unwrap_err();
    assert!(matches!(e.cause(), ImagingError::Cancelled), "{e}");
    assert!(
        e.to_string()
            .contains("stopped: the agent is shutting down"),
        "{e}"
    );
    assert!(e.disk_changed());
    assert_no_signatures(&target, &f.partitions);
    // Already stopping: nothing is written.
    let target = Target::new(f.dir.path(), "target2", TARGET);
    let e = target.write(&f.raw, &options).unwrap_err();
    assert!(matches!(e, ImagingError::Cancelled), "{e}");
    assert!(content(&target).iter().all(|&b| b == STALE));
}
