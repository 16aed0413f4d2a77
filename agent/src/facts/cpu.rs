//! Processors from `/proc/cpuinfo`: model, sockets, cores, threads and the flags that matter for
//! placement. When the file lacks counts (some architectures do), the running system is asked through
//! `sysinfo`.

use super::Sources;
use plinth_common::wire::Cpu;
use std::collections::{BTreeMap, BTreeSet};

/// The CPU flags worth reporting, in the order they are reported.
pub const INTERESTING_FLAGS: &[&str] = &[
    "vmx",
    "svm",
    "hypervisor",
    "aes",
    "avx",
    "avx2",
    "avx512f",
    "sse4_2",
];

/// Reads the processors; `None` when nothing is known about them.
pub fn read(src: &Sources) -> Option<Cpu> {
    let text = std::fs::read_to_string(src.path("/proc/cpuinfo")).ok();
    let mut cpu = text.as_deref().map(parse).unwrap_or_default();
    if src.live {
        fill_from_sysinfo(&mut cpu);
    }
    (cpu.threads > 0 || cpu.model.is_some()).then_some(cpu)
}

/// Parses `/proc/cpuinfo` text.
pub fn parse(text: &str) -> Cpu {
    let mut threads = 0u32;
    let mut model: Option<String> = None;
    let mut flags: BTreeSet<String> = BTreeSet::new();
    // physical id -> "cpu cores" of that package.
    let mut packages: BTreeMap<String, u32> = BTreeMap::new();
    let mut current_package: Option<String> = None;
    let mut current_cores: Option<u32> = None;

    let mut finish = |package: &mut Option<String>, cores: &mut Option<u32>| {
        if let Some(p) = package.take() {
            let entry = packages.entry(p).or_insert(0);
            *entry = (*entry).max(cores.unwrap_or(0));
        }
        *cores = None;
    };

    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => {
                finish(&mut current_package, &mut current_cores);
                threads += 1;
            }
            "model name" | "Processor" | "cpu model" if model.is_none() && !value.is_empty() => {
                model = Some(value.to_string());
            }
            "physical id" => current_package = Some(value.to_string()),
            "cpu cores" => current_cores = value.parse().ok(),
            "flags" | "Features" if flags.is_empty() => {
                flags = value.split_whitespace().map(str::to_string).collect();
            }
            _ => {}
        }
    }
    finish(&mut current_package, &mut current_cores);

    let sockets = (!packages.is_empty()).then_some(packages.len() as u32);
    let cores = if packages.values().all(|c| *c > 0) && !packages.is_empty() {
        Some(packages.values().sum())
    } else {
        None
    };
    Cpu {
        model,
        sockets,
        cores,
        threads,
        flags: INTERESTING_FLAGS
            .iter()
            .filter(|f| flags.contains(**f))
            .map(|f| f.to_string())
            .collect(),
    }
}

/// Fills what `/proc/cpuinfo` did not say from the running system.
fn fill_from_sysinfo(cpu: &mut Cpu) {
    if cpu.cores.is_none() {
        cpu.cores = sysinfo::System::physical_core_count()
            .ok()
            .and_then(|c| u32::try_from(c).ok());
    }
    if cpu.threads == 0 || cpu.model.is_none() {
        let Ok(sys) = sysinfo::System::new_with_specifics(
            sysinfo::RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing()),
        ) else {
            return;
        };
        if cpu.threads == 0 {
            cpu.threads = u32::try_from(sys.cpus().len()).unwrap_or(0);
        }
        if cpu.model.is_none() {
            cpu.model = sys
                .cpus()
                .first()
                .map(|c| c.brand().trim().to_string())
                .filter(|b| !b.is_empty());
        }
    }
}
