//! Memory totals from `/proc/meminfo`.

use super::Sources;
use plinth_common::wire::Memory;

/// Reads RAM and swap totals; `None` when `/proc/meminfo` is missing or has no `MemTotal`.
pub fn read(src: &Sources) -> Option<Memory> {
    let text = std::fs::read_to_string(src.path("/proc/meminfo")).ok()?;
    let mut total = None;
    let mut swap = 0;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("MemTotal:") {
            total = parse_kib(v);
        } else if let Some(v) = line.strip_prefix("SwapTotal:") {
            swap = parse_kib(v).unwrap_or(0);
        }
    }
    Some(Memory {
        total_bytes: total?,
        swap_bytes: swap,
    })
}

/// `  16318048 kB` → bytes.
fn parse_kib(value: &str) -> Option<u64> {
    let number = value.split_whitespace().next()?.parse::<u64>().ok()?;
    number.checked_mul(1024)
}
