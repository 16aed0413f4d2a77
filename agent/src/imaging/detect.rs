//! What an image is, by its magic bytes, never by its name: one layer of compression (gzip, xz, zstd),
//! then raw or qcow2. Formats recognised and not written (VMDK, VHD/VHDX, VDI, QED, bzip2, a bare ISO or
//! file system, an HTML page...) are refused by name.
//!
//! Raw means a whole-disk image: it starts with a partition table, an MBR (the boot signature `55 AA`
//! at byte 510, which a GPT's protective MBR and a hybrid ISO also carry) or a GPT header (`EFI PART` at
//! byte 512 or 4096). Anything else is refused, so that a random file or a web server's error page is
//! never written to a disk.

use super::error::ImagingError;
use std::fmt;

/// How many bytes detection looks at (a bare btrfs's signature is at byte 65600).
pub(crate) const PEEK: usize = 72 * 1024;

/// A compression around the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip (`1f 8b`), one or several members.
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`), one or several streams.
    Xz,
    /// zstd (`28 b5 2f fd`), one or several frames.
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        })
    }
}

/// The format of the image inside any compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// A raw disk image starting with a partition table.
    Raw,
    /// qcow2, version 2 or 3.
    Qcow2,
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageFormat::Raw => "raw",
            ImageFormat::Qcow2 => "qcow2",
        })
    }
}

/// What the first bytes say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Detected {
    Compressed(Compression),
    Image(ImageFormat),
}

const CONVERT: &str = "convert it with `qemu-img convert -O qcow2` (or `-O raw`) and serve that";

/// Reads what `head` (the stream's first bytes, all of it when shorter than [`PEEK`]) is.
pub(crate) fn detect(head: &[u8]) -> Result<Detected, ImagingError> {
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    if at(0, &[0x1f, 0x8b]) {
        return Ok(Detected::Compressed(Compression::Gzip));
    }
    if at(0, &[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        return Ok(Detected::Compressed(Compression::Xz));
    }
    if at(0, &[0x28, 0xb5, 0x2f, 0xfd]) {
        return Ok(Detected::Compressed(Compression::Zstd));
    }
    if at(0, b"QFI\xfb") {
        let version = head
            .get(4..8)
            .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
        return match version {
            Some(2 | 3) => Ok(Detected::Image(ImageFormat::Qcow2)),
            Some(1) => Err(unsupported("a qcow (version 1) image", CONVERT)),
            _ => Err(unsupported(
                &format!("a qcow2 image of version {}", version.unwrap_or(0)),
                "Plinth reads qcow2 versions 2 and 3; convert it with `qemu-img convert -O qcow2`",
            )),
        };
    }
    if let Some(refused) = refused(head, &at) {
        return Err(refused);
    }
    let mbr = at(510, &[0x55, 0xaa]);
    let gpt = at(512, b"EFI PART") || at(4096, b"EFI PART");
    if mbr || gpt {
        return Ok(Detected::Image(ImageFormat::Raw));
    }
    if at(32769, b"CD001") {
        return Err(unsupported(
            "an ISO 9660 CD/DVD image without a partition table",
            "write a disk image; a hybrid ISO (with an MBR, as `isohybrid` makes) is written as raw",
        ));
    }
    if let Some(fs) = bare_file_system(&at) {
        return Err(unsupported(
            &format!("a bare {fs} file system without a partition table"),
            "Plinth writes whole-disk images: give it a partition table",
        ));
    }
    Err(ImagingError::UnknownFormat {
        found: describe(head),
    })
}

fn unsupported(what: &str, remedy: &str) -> ImagingError {
    ImagingError::Unsupported {
        what: what.to_string(),
        remedy: remedy.to_string(),
    }
}

/// Formats with a magic of their own that are not written.
fn refused(head: &[u8], at: &dyn Fn(usize, &[u8]) -> bool) -> Option<ImagingError> {
    const DECOMPRESS: &str = "serve it uncompressed or compressed with gzip, xz or zstd";
    let found: (&str, &str) = if at(0, b"KDMV") || at(0, b"# Disk DescriptorFile") {
        ("a VMDK image", CONVERT)
    } else if at(0, b"vhdxfile") {
        ("a VHDX image", CONVERT)
    } else if at(0, b"conectix") {
        ("a dynamic VHD image", CONVERT)
    } else if at(64, &[0x7f, 0x10, 0xda, 0xbe]) {
        ("a VDI image", CONVERT)
    } else if at(0, b"QED\0") {
        ("a QED image", CONVERT)
    } else if at(0, b"WithoutFreeSpace") || at(0, b"WithouFreSpacExt") {
        ("a Parallels image", CONVERT)
    } else if at(0, b"BZh") && at(4, &[0x31, 0x41, 0x59, 0x26, 0x53, 0x59]) {
        ("bzip2-compressed", DECOMPRESS)
    } else if at(0, &[0x04, 0x22, 0x4d, 0x18]) {
        ("lz4-compressed", DECOMPRESS)
    } else if at(0, b"LZIP") {
        ("lzip-compressed", DECOMPRESS)
    } else if at(0, b"PK\x03\x04") {
        ("a zip archive", DECOMPRESS)
    } else if at(0, b"7z\xbc\xaf\x27\x1c") {
        ("a 7-Zip archive", DECOMPRESS)
    } else if at(257, b"ustar") {
        (
            "a tar archive",
            "serve the disk image itself, not an archive of it",
        )
    } else if at(0, b"LUKS\xba\xbe") {
        ("a LUKS-encrypted volume", "serve the disk image itself")
    } else if looks_like_html(head) {
        (
            "an HTML page, not an image (a web server's error or login page?)",
            "check the image's URL",
        )
    } else {
        return None;
    };
    Some(unsupported(found.0, found.1))
}

/// File systems that start at byte 0 of an image with no partition table.
fn bare_file_system(at: &dyn Fn(usize, &[u8]) -> bool) -> Option<&'static str> {
    if at(1080, &[0x53, 0xef]) {
        Some("ext2/3/4")
    } else if at(0, b"XFSB") {
        Some("XFS")
    } else if at(65600, b"_BHRfS_M") {
        Some("btrfs")
    } else if at(0, b"hsqs") {
        Some("squashfs")
    } else {
        None
    }
}

fn looks_like_html(head: &[u8]) -> bool {
    let start: Vec<u8> = head
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take(15)
        .map(|b| b.to_ascii_lowercase())
        .collect();
    start.starts_with(b"<!doctype html")
        || start.starts_with(b"<html")
        || start.starts_with(b"<?xml")
}

/// The first bytes, in hexadecimal and as text, for a message.
fn describe(head: &[u8]) -> String {
    if head.is_empty() {
        return "the image is empty".to_string();
    }
    let first = &head[..head.len().min(16)];
    let text: String = first
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    format!(
        "{} bytes starting {} ({text:?}), with no MBR boot signature at byte 510 nor GPT header at byte 512",
        if head.len() < PEEK { head.len().to_string() } else { "many".to_string() },
        hex::encode(first)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(offset: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; PEEK];
        v[offset..offset + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn formats_are_known_by_their_magic() {
        assert_eq!(
            detect(&with(0, &[0x1f, 0x8b, 8])).unwrap(),
            Detected::Compressed(Compression::Gzip)
        );
        assert_eq!(
            detect(&with(0, b"\xfd7zXZ\0")).unwrap(),
            Detected::Compressed(Compression::Xz)
        );
        assert_eq!(
            detect(&with(0, &[0x28, 0xb5, 0x2f, 0xfd])).unwrap(),
            Detected::Compressed(Compression::Zstd)
        );
        assert_eq!(
            detect(&with(0, b"QFI\xfb\0\0\0\x03")).unwrap(),
            Detected::Image(ImageFormat::Qcow2)
        );
        assert_eq!(
            detect(&with(510, &[0x55, 0xaa])).unwrap(),
            Detected::Image(ImageFormat::Raw)
        );
        assert_eq!(
            detect(&with(512, b"EFI PART")).unwrap(),
            Detected::Image(ImageFormat::Raw)
        );
        assert_eq!(
            detect(&with(4096, b"EFI PART")).unwrap(),
            Detected::Image(ImageFormat::Raw)
        );
    }

    #[test]
    fn formats_not_written_are_refused_by_name() {
        let cases: [(Vec<u8>, &str); 9] = [
            (with(0, b"KDMV"), "a VMDK image"),
            (with(0, b"vhdxfile"), "a VHDX image"),
            (with(64, &[0x7f, 0x10, 0xda, 0xbe]), "a VDI image"),
            (with(0, b"BZh91AY&SY"), "bzip2-compressed"),
            (with(0, b"QFI\xfb\0\0\0\x01"), "qcow (version 1)"),
            (with(32769, b"CD001"), "ISO 9660"),
            (with(1080, &[0x53, 0xef]), "bare ext2/3/4 file system"),
            (
                b"\n<!DOCTYPE html><html><body>404</body></html>".to_vec(),
                "an HTML page",
            ),
            (with(0, b"LUKS\xba\xbe"), "LUKS"),
        ];
        for (head, name) in cases {
            let e = detect(&head).unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
            assert!(e.contains("which Plinth does not write"), "{e}");
        }
    }

    #[test]
    fn anything_else_is_an_unknown_format_showing_its_first_bytes() {
        let e = detect(b"hello, world: not a disk at all")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown image format: 31 bytes starting 68656c6c6f2c"),
            "{e}"
        );
        assert!(e.contains("\"hello, world: no\""), "{e}");
        let e = detect(b"").unwrap_err().to_string();
        assert!(e.contains("the image is empty"), "{e}");
    }
}
