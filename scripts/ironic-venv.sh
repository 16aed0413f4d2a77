#!/usr/bin/env bash
# Prints the bin directory of a Python virtual environment (target/ironic-venv) holding OpenStack
# Ironic's root device hint matcher (ironic-lib's match_root_device_hints, with oslo.utils'
# specs_matcher) and its agent's default disk choice (ironic-python-agent's guess_root_disk), which
# plinth-agent's differential test runs beside Plinth's own matcher. Makes the environment once, and
# installs python3-venv as root, non-interactively, when missing. Used by scripts/test.sh, which exports
# what it prints as PLINTH_IRONIC_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."

IRONIC_LIB=7.0.0
IRONIC_PYTHON_AGENT=13.0.0
OSLO_UTILS=10.2.0
PYPARSING=3.3.3
venv="$PWD/target/ironic-venv"

if ! /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "installing python3-venv for Ironic's matcher" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "need root to install python3-venv (or install it yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi

ready() {
  "$venv/bin/python" - <<PY >/dev/null 2>&1
import importlib.metadata as m
from ironic_lib import utils
from ironic_python_agent.utils import guess_root_disk
assert m.version("ironic-lib") == "$IRONIC_LIB"
assert m.version("ironic-python-agent") == "$IRONIC_PYTHON_AGENT"
assert m.version("oslo.utils") == "$OSLO_UTILS"
assert m.version("pyparsing") == "$PYPARSING"
PY
}

if ! ready; then
  echo "making $venv (ironic-lib $IRONIC_LIB, ironic-python-agent $IRONIC_PYTHON_AGENT)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  # Debian's python3, not another one on the PATH: the one the other test environments use.
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "ironic-lib==$IRONIC_LIB" "ironic-python-agent==$IRONIC_PYTHON_AGENT" \
    "oslo.utils==$OSLO_UTILS" "pyparsing==$PYPARSING" >&2
  if ! ready; then
    echo "$venv does not work after installing ironic-lib and ironic-python-agent" >&2
    exit 1
  fi
fi
echo "$venv/bin"
