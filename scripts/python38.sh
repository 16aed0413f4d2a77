#!/usr/bin/env bash
# Prints the path of a Python 3.8 interpreter (python-fuelclient 11.0.0, Fuel's `fuel2`, runs on 3.8),
# installing one when none is found: through pyenv when it is there, else through uv (installed for the
# user with pip when missing). Used by scripts/test.sh for the fuel2 end-to-end test.
set -euo pipefail

works() { [ -n "$1" ] && "$1" -c 'import sys, venv; assert sys.version_info[:2] == (3, 8)' >/dev/null 2>&1; }

if [ -n "${PLINTH_PYTHON38:-}" ] && works "$PLINTH_PYTHON38"; then echo "$PLINTH_PYTHON38"; exit 0; fi
if p=$(command -v python3.8 2>/dev/null) && works "$p"; then echo "$p"; exit 0; fi

pyenv_bin=$(command -v pyenv 2>/dev/null || true)
[ -z "$pyenv_bin" ] && [ -x "${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv" ] && pyenv_bin="${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv"
if [ -n "$pyenv_bin" ]; then
  root=$("$pyenv_bin" root)
  found=$(ls -d "$root"/versions/3.8.* 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ]; then
    echo "installing Python 3.8 with pyenv" >&2
    "$pyenv_bin" install -s 3.8 >&2 || echo "pyenv could not build Python 3.8; trying uv" >&2
    found=$(ls -d "$root"/versions/3.8.* 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  if works "$found/bin/python3.8"; then echo "$found/bin/python3.8"; exit 0; fi
fi

uv_bin=$(command -v uv 2>/dev/null || true)
[ -z "$uv_bin" ] && [ -x "$HOME/.local/bin/uv" ] && uv_bin="$HOME/.local/bin/uv"
if [ -z "$uv_bin" ]; then
  echo "installing uv (to fetch Python 3.8)" >&2
  python3 -m pip install --user --quiet uv >&2 || python3 -m pip install --user --quiet --break-system-packages uv >&2
  uv_bin="$HOME/.local/bin/uv"
fi
"$uv_bin" python install 3.8 >&2
p=$("$uv_bin" python find 3.8)
if works "$p"; then echo "$p"; exit 0; fi
echo "no Python 3.8 could be found or installed" >&2
exit 1
