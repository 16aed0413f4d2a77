#!/usr/bin/env bash
# Prints the bin directory of a Python virtual environment (target/bmc-venv) holding the BMC emulators
# that plinth-bmc's tests drive: sushy-tools' sushy-emulator (Redfish) and virtualbmc (IPMI, over a
# libvirt domain). Makes the environment once, and installs as root, non-interactively, the Debian
# packages the tests need: ipmitool, libvirt's daemon with its qemu driver and virsh, and
# python3-libvirt (virtualbmc's libvirt binding, seen from the environment through
# --system-site-packages of Debian's own python3). Used by scripts/test.sh, which exports what it
# prints as PLINTH_BMC_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."

SUSHY_TOOLS=2.2.0
VIRTUALBMC=3.3.0
venv="$PWD/target/bmc-venv"

missing() {
  need=()
  command -v ipmitool >/dev/null 2>&1 || need+=(ipmitool)
  # libvirt-daemon-system makes the libvirt-qemu user the qemu driver runs domains as.
  [ -x /usr/sbin/libvirtd ] && id libvirt-qemu >/dev/null 2>&1 || need+=(libvirt-daemon-system)
  [ -e /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so ] ||
    ls /usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so >/dev/null 2>&1 || need+=(libvirt-daemon-driver-qemu)
  command -v virsh >/dev/null 2>&1 || need+=(libvirt-clients)
  command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
  /usr/bin/python3 -c 'import libvirt' >/dev/null 2>&1 || need+=(python3-libvirt)
  /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
}

missing
if [ ${#need[@]} -gt 0 ]; then
  echo "installing what the BMC tests need: ${need[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "need root to install ${need[*]} (or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  missing
  if [ ${#need[@]} -gt 0 ]; then
    echo "still missing after installing: ${need[*]}" >&2
    exit 1
  fi
fi

ready() {
  "$venv/bin/python" - <<EOF >/dev/null 2>&1
import importlib.metadata as m, libvirt, bcrypt
assert m.version("sushy-tools") == "$SUSHY_TOOLS"
assert m.version("virtualbmc") == "$VIRTUALBMC"
EOF
}

if ! ready; then
  echo "making $venv (sushy-tools $SUSHY_TOOLS, virtualbmc $VIRTUALBMC)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  # Debian's python3, not another one on the PATH: python3-libvirt is installed for it.
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "sushy-tools==$SUSHY_TOOLS" "virtualbmc==$VIRTUALBMC" bcrypt >&2
  if ! ready; then
    echo "$venv does not work after installing sushy-tools and virtualbmc" >&2
    exit 1
  fi
fi
echo "$venv/bin"
