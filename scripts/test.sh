#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the tests need when it is missing (Debian packages, as
# root, non-interactively), builds every binary (the end-to-end tests run them), then runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests need and the machine lacks, as Debian packages.
missing() {
  need=()
  command -v puppet >/dev/null 2>&1 || need+=(puppet)
  command -v facter >/dev/null 2>&1 || need+=(facter)
  command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
  command -v qemu-img >/dev/null 2>&1 || need+=(qemu-utils)
  command -v debugfs >/dev/null 2>&1 || need+=(e2fsprogs)
  # The agent's image writer (agent/src/imaging): disks made with sgdisk, mkswap, qemu-img and qemu-io,
  # compressed with gzip, xz, zstd and bzip2, written to loop devices and checked with wipefs and blkid.
  command -v sgdisk >/dev/null 2>&1 || need+=(gdisk)
  command -v qemu-io >/dev/null 2>&1 || need+=(qemu-utils)
  command -v xz >/dev/null 2>&1 || need+=(xz-utils)
  command -v zstd >/dev/null 2>&1 || need+=(zstd)
  command -v bzip2 >/dev/null 2>&1 || need+=(bzip2)
  command -v losetup >/dev/null 2>&1 && command -v wipefs >/dev/null 2>&1 || need+=(mount util-linux)
  command -v blkid >/dev/null 2>&1 || need+=(util-linux)
  # The web console's tests drive a headless browser.
  [ -x /usr/bin/chromium ] || need+=(chromium)
  [ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
  # The metrics test scrapes a controller with a real Prometheus server.
  [ -x /usr/bin/prometheus ] || need+=(prometheus)
  # ... and reads the agent's metrics file through node_exporter's textfile collector.
  [ -x /usr/bin/prometheus-node-exporter ] || need+=(prometheus-node-exporter)
  # The booted-image tests (tests/tests/e2e/images.rs): a Debian root file system built with mmdebstrap, booted
  # in systemd-nspawn containers, and as a disk under qemu with Debian's kernel.
  command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
  command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
  command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
  ls /boot/vmlinuz-* >/dev/null 2>&1 || need+=(linux-image-amd64)
  # Whole-disk images (make-image --format disk) and preparing the installed system on loop devices
  # (agent/src/installed): partition tables, FAT, GRUB for BIOS and UEFI, UEFI firmware for qemu.
  command -v sgdisk >/dev/null 2>&1 || need+=(gdisk)
  command -v sfdisk >/dev/null 2>&1 || need+=(fdisk)
  command -v mkfs.vfat >/dev/null 2>&1 || need+=(dosfstools)
  command -v mcopy >/dev/null 2>&1 || need+=(mtools)
  command -v grub-install >/dev/null 2>&1 || need+=(grub2-common)
  [ -d /usr/lib/grub/i386-pc ] || need+=(grub-pc-bin)
  [ -d /usr/lib/grub/x86_64-efi ] || need+=(grub-efi-amd64-bin)
  [ -f /usr/share/OVMF/OVMF_CODE_4M.fd ] || need+=(ovmf)
  # Network boot: dnsmasq (DHCP, TFTP) and the iPXE binaries it hands to firmware.
  [ -x /usr/sbin/dnsmasq ] || need+=(dnsmasq-base)
  [ -f /usr/lib/ipxe/undionly.kpxe ] || need+=(ipxe)
  # The store's tests and tests/tests/e2e/postgres.rs start a scratch PostgreSQL server with initdb and pg_ctl.
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
}

# Installed in passes: apt may remove one package to install another (a backported qemu-utils gives way
# to the distribution's qemu-system-x86), and the next pass puts back what the last one took.
missing
for pass in 1 2; do
  [ ${#need[@]} -gt 0 ] || break
  echo "installing test dependencies: ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "need root to install ${need[*]} (or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  [ "$pass" = 1 ] && apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  missing
done
if [ ${#need[@]} -gt 0 ]; then
  echo "still missing after installing: ${need[*]}" >&2
  exit 1
fi

# The fuel2 end-to-end test runs Fuel's own client (python-fuelclient 11.0.0) on Python 3.8.
PLINTH_PYTHON38="$(scripts/python38.sh)"
export PLINTH_PYTHON38

# plinth-bmc's tests drive real BMC emulators: sushy-tools (Redfish) and virtualbmc (IPMI, over libvirt),
# from a virtual environment this script makes once.
PLINTH_BMC_VENV="$(scripts/bmc-emulators.sh)"
export PLINTH_BMC_VENV

# plinth-agent's root device choice is compared with Ironic's own matcher (ironic-lib, and
# ironic-python-agent's default choice), from a virtual environment this script makes once.
PLINTH_IRONIC_VENV="$(scripts/ironic-venv.sh)"
export PLINTH_IRONIC_VENV

export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --workspace --bins --locked
cargo test --workspace --locked "$@"

# Fuel's 206 expressions compared with Python YAQL 3.2 and Nailgun's helpers, when Python YAQL can be
# installed (a virtual environment under target/); without it the comparison is skipped, not failed.
# The Rust side's expectations are in common/tests/data and were checked by `cargo test` above.
yaql_venv=target/yaql-venv
yaql_ready() { "$yaql_venv/bin/python" -c 'import collections.abc, yaql, yaml' >/dev/null 2>&1; }
if command -v python3 >/dev/null 2>&1 && ! yaql_ready; then
  rm -rf "$yaql_venv"
  python3 -m venv "$yaql_venv" >/dev/null 2>&1 &&
    timeout 300 "$yaql_venv/bin/pip" install -q yaql==3.2.0 pyyaml >/dev/null 2>&1 || true
fi
if yaql_ready; then
  PLINTH_FUEL_CONTEXT="$PWD/target/fuel-yaql-context.json" \
    cargo test -p plinth-common --locked -q --test integration expr_fuel_results:: >/dev/null
  "$yaql_venv/bin/python" bench/fuel_yaql.py --context target/fuel-yaql-context.json --check
else
  echo "Python YAQL could not be installed here: Fuel's expressions were not compared with it"
fi

# The slow booted-image tests: Debian's kernel under qemu without KVM (TCG), about half a minute; and a
# network boot image built and booted under qemu (KVM when it works, else TCG), a few minutes; and a
# rack of three libvirt domains powered on through sushy-tools (Redfish) and virtualbmc (IPMI), booting
# from dnsmasq and the boot listener on a network of the test's own, two to three minutes; and a
# whole-disk image booted by BIOS and UEFI, then written to a larger disk, prepared by the agent's
# installed-system code and booted again, a few minutes each; and a virtual machine with three disks,
# booting from dnsmasq on a network of the test's own, provisioned from its discovery image by Fuel's
# provision graph as written (a Debian image onto the disk its hints choose, the master's tasks on an
# agent beside the controller), puppet in the installed system, then Fuel's deletion graph sending it
# back, ten minutes or so under TCG.
# PLINTH_SKIP_SLOW=1 leaves them out.
if [ -z "${PLINTH_SKIP_SLOW:-}" ]; then
  cargo test -p plinth-e2e --test e2e --locked -- --ignored images:: netboot:: rack:: disk_image:: provision::
fi
