//! DMI (SMBIOS) identity from `/sys/class/dmi/id`. Serial numbers and the UUID are readable by root only;
//! without root they are reported absent.

use super::{sysfs, Sources};
use plinth_common::wire::Dmi;

/// Reads the DMI identity.
pub fn read(src: &Sources) -> Dmi {
    let dir = src.path("/sys/class/dmi/id");
    let field = |name: &str| sysfs::read_trimmed(&dir.join(name));
    Dmi {
        system_vendor: field("sys_vendor"),
        product_name: field("product_name"),
        product_serial: field("product_serial"),
        product_uuid: field("product_uuid"),
        board_vendor: field("board_vendor"),
        board_name: field("board_name"),
        board_serial: field("board_serial"),
        bios_vendor: field("bios_vendor"),
        bios_version: field("bios_version"),
        bios_date: field("bios_date"),
    }
}
