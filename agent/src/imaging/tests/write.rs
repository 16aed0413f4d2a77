//! Images in every format and compression, written to loop devices and compared with what `qemu-img
//! convert` writes.

use super::*;

/// The target's size: larger than the image, so that what lies past it can be checked untouched.
const TARGET: u64 = 48 << 20;

/// One image to write: its file, the qemu format of the image inside any compression (and that image's
/// file, for qemu-img), and what the report must say.
struct Case {
    image: PathBuf,
    inner: PathBuf,
    qemu_format: &'static str,
    compression: Option<Compression>,
    format: ImageFormat,
}

fn case(image: PathBuf, inner: &Path, compression: Option<Compression>) -> Case {
    let format = if inner.extension().is_some_and(|e| e == "qcow2") {
        ImageFormat::Qcow2
    } else {
        ImageFormat::Raw
    };
    Case {
        image,
        inner: inner.to_path_buf(),
        qemu_format: if format == ImageFormat::Qcow2 {
            "qcow2"
        } else {
            "raw"
        },
        compression,
        format,
    }
}

fn check(fixture: &Fixture, case: &Case, algorithm: HashAlgorithm) {
    let target = Target::new(fixture.dir.path(), "target", TARGET);
    let options = WriteOptions {
        expected_digest: Some(digest_of(&case.image, algorithm)),
        expected_length: Some(std::fs::metadata(&case.image).unwrap().len()),
        ..WriteOptions::default()
    };
    let name = case.image.display();
    let report = target
        .write(&case.image, &options)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.format, case.format, "{name}");
    assert_eq!(report.compression, case.compression, "{name}");
    assert_eq!(
        report.downloaded,
        std::fs::metadata(&case.image).unwrap().len(),
        "{name}"
    );
    assert_eq!(
        report.digest.as_ref(),
        options.expected_digest.as_ref().map(|d| &d.hex)
    );
    assert_eq!(
        report.written + report.zeroed,
        report.image_size,
        "{name}: every byte written or zeroed"
    );
    assert!(
        report.zeroed > 0,
        "{name}: the empty parts are zeroed, not written"
    );
    assert_same_as_qemu(
        fixture.dir.path(),
        &case.inner,
        case.qemu_format,
        &target,
        report.image_size,
    );
    target.assert_untouched_from(report.image_size);
}

#[test]
fn raw_images_plain_and_compressed_write_what_qemu_img_writes() {
    let f = Fixture::new();
    let raw = f.raw.clone();
    let mut cases = vec![
        case(raw.clone(), &raw, None),
        case(
            compress("gzip", &raw, &f.path("disk.raw.gz")),
            &raw,
            Some(Compression::Gzip),
        ),
        case(
            compress("xz", &raw, &f.path("disk.raw.xz")),
            &raw,
            Some(Compression::Xz),
        ),
        case(
            compress("zstd", &raw, &f.path("disk.raw.zst")),
            &raw,
            Some(Compression::Zstd),
        ),
    ];
    // Several members, streams and frames in one file (as pigz, pxz and zstd -T write, or a `cat`).
    let data = std::fs::read(&raw).unwrap();
    let (a, b) = data.split_at(data.len() / 3);
    std::fs::write(f.path("a"), a).unwrap();
    std::fs::write(f.path("b"), b).unwrap();
    for (tool, ext, compression) in [
        ("gzip", "gz", Compression::Gzip),
        ("xz", "xz", Compression::Xz),
        ("zstd", "zst", Compression::Zstd),
    ] {
        let mut joined = std::fs::read(compress(tool, &f.path("a"), &f.path("a.c"))).unwrap();
        joined.extend(std::fs::read(compress(tool, &f.path("b"), &f.path("b.c"))).unwrap());
        let path = f.path(&format!("joined.raw.{ext}"));
        std::fs::write(&path, joined).unwrap();
        cases.push(case(path, &raw, Some(compression)));
    }
    for (i, c) in cases.iter().enumerate() {
        let algorithm = if i % 2 == 0 {
            HashAlgorithm::Sha256
        } else {
            HashAlgorithm::Sha512
        };
        check(&f, c, algorithm);
    }
}

#[test]
fn qcow2_images_of_every_kind_write_what_qemu_img_writes() {
    let f = Fixture::new();
    let conversions: [(&str, &[&str]); 9] = [
        ("plain.qcow2", &["-O", "qcow2"]),
        ("v2.qcow2", &["-O", "qcow2", "-o", "compat=0.10"]),
        ("c512.qcow2", &["-O", "qcow2", "-o", "cluster_size=512"]),
        ("c2m.qcow2", &["-O", "qcow2", "-o", "cluster_size=2M"]),
        ("zlib.qcow2", &["-O", "qcow2", "-c"]),
        (
            "zlib4k.qcow2",
            &["-O", "qcow2", "-c", "-o", "cluster_size=4096"],
        ),
        (
            "zstd.qcow2",
            &["-O", "qcow2", "-c", "-o", "compression_type=zstd"],
        ),
        (
            "zstd1m.qcow2",
            &[
                "-O",
                "qcow2",
                "-c",
                "-o",
                "compression_type=zstd,cluster_size=1M",
            ],
        ),
        (
            "ext.qcow2",
            &["-O", "qcow2", "-o", "extended_l2=on,cluster_size=128k"],
        ),
    ];
    let mut cases = Vec::new();
    for (name, args) in conversions {
        let path = f.convert(name, args);
        cases.push(case(path.clone(), &path, None));
    }
    // A qcow2 image inside one layer of compression.
    let zstd = f.path("zstd.qcow2");
    cases.push(case(
        compress("gzip", &zstd, &f.path("zstd.qcow2.gz")),
        &zstd,
        Some(Compression::Gzip),
    ));
    let plain = f.path("plain.qcow2");
    cases.push(case(
        compress("xz", &plain, &f.path("plain.qcow2.xz")),
        &plain,
        Some(Compression::Xz),
    ));
    for c in &cases {
        check(&f, c, HashAlgorithm::Sha256);
    }
    let report = Target::new(f.dir.path(), "t", TARGET)
        .write(&f.path("zstd.qcow2"), &WriteOptions::default())
        .unwrap();
    let q = report.qcow2.unwrap();
    assert_eq!(
        (q.version, q.cluster_size, q.virtual_size),
        (3, 65536, DISK)
    );
    assert_eq!(q.compression, ClusterCompression::Zstd);
    assert!(q.compressed_clusters > 0 && q.data_clusters > 0, "{q:?}");
    assert_eq!(report.digest, None);
}

/// An image qemu wrote in place (not by `convert`): clusters in the order they were written,
/// subclusters, zero clusters; then a snapshot and a write after it, which moves an L2 table after the
/// data it maps.
fn written_in_place(f: &Fixture, name: &str, create: &[&str], writes: &[&str]) -> PathBuf {
    let path = f.path(name);
    let mut args = vec!["create", "-q", "-f", "qcow2"];
    args.extend_from_slice(create);
    args.extend([s(&path), "32M"]);
    run("qemu-img", &args);
    let mut io = vec!["-f", "qcow2"];
    for w in writes {
        io.extend(["-c", w]);
    }
    io.push(s(&path));
    run("qemu-io", &io);
    path
}

#[test]
fn qcow2_images_written_in_place_with_subclusters_and_zero_clusters_write_what_qemu_reads() {
    let f = Fixture::new();
    let writes = [
        "write -P 0x11 20M 1M",
        "write -P 0x22 0 64k",
        "write -P 0x33 300k 4k",
        "write -z 20M 128k",
        "write -P 0x44 31M 1M",
    ];
    for (name, create) in [
        ("inplace.qcow2", &["-o", "cluster_size=65536"][..]),
        (
            "subclusters.qcow2",
            &["-o", "extended_l2=on,cluster_size=128k"][..],
        ),
        ("v2inplace.qcow2", &["-o", "compat=0.10"][..]),
    ] {
        let path = written_in_place(&f, name, create, &writes);
        check(&f, &case(path.clone(), &path, None), HashAlgorithm::Sha256);
    }
}

#[test]
fn qcow2_data_ahead_of_its_tables_is_held_within_the_bound_and_refused_past_it() {
    let f = Fixture::new();
    let path = written_in_place(
        &f,
        "snap.qcow2",
        &["-o", "cluster_size=65536"],
        &["write -P 0x11 20M 2M", "write -P 0x22 0 64k"],
    );
    run("qemu-img", &["snapshot", "-c", "s1", s(&path)]);
    run(
        "qemu-io",
        &["-f", "qcow2", "-c", "write -P 0x55 0 128k", s(&path)],
    );
    // Within the bound: written as qemu reads it.
    check(&f, &case(path.clone(), &path, None), HashAlgorithm::Sha256);
    // Past it: refused, naming the remedy.
    let target = Target::new(f.dir.path(), "small-bound", TARGET);
    let options = WriteOptions {
        out_of_order_limit: 1 << 20,
        ..WriteOptions::default()
    };
    let e = target.write(&path, &options).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e.cause(),
            ImagingError::Qcow2(Qcow2Error::OutOfOrder { limit: 1048576, .. })
        ),
        "{text}"
    );
    assert!(text.contains("not laid out for streaming"), "{text}");
    assert!(text.contains("qemu-img convert -O qcow2"), "{text}");
    // The remedy works: converted, the image streams within the same bound.
    let converted = f.path("converted.qcow2");
    run(
        "qemu-img",
        &["convert", "-O", "qcow2", s(&path), s(&converted)],
    );
    let report = target.write(&converted, &options).unwrap();
    assert_eq!(report.image_size, 32 << 20);
    assert_same_as_qemu(f.dir.path(), &path, "qcow2", &target, report.image_size);
}

#[test]
fn progress_counts_what_was_downloaded_and_written() {
    let f = Fixture::new();
    let image = f.convert("p.qcow2", &["-O", "qcow2", "-c"]);
    let progress = Arc::new(Progress::default());
    let target = Target::new(f.dir.path(), "target", TARGET);
    let options = WriteOptions {
        progress: Some(progress.clone()),
        ..WriteOptions::default()
    };
    let report = target.write(&image, &options).unwrap();
    assert_eq!(
        progress.downloaded(),
        std::fs::metadata(&image).unwrap().len()
    );
    assert_eq!(progress.written(), report.image_size);
}
