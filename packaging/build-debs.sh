#!/usr/bin/env bash
# Builds the Debian packages plinth-controller (with plinthctl) and plinth-agent from already built
# binaries, with dpkg-deb alone.
#
#   packaging/build-debs.sh [BIN_DIR [OUT_DIR]]
#
# BIN_DIR holds plinth-controller, plinthctl and plinth-agent (default: target/release); OUT_DIR receives
# plinth-controller_<version>_<arch>.deb and plinth-agent_<version>_<arch>.deb (default: target/debian).
# The version is the workspace's (Cargo.toml), the architecture dpkg's. DEB_COMPRESSION chooses dpkg-deb's
# compressor (default xz; tests use none). Prints the paths of the packages.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/.." && pwd)"
bin_dir="${1:-$top/target/release}"
out_dir="${2:-$top/target/debian}"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$top/Cargo.toml")"
arch="$(dpkg --print-architecture)"
[ -n "$version" ] || { echo "build-debs: no version in $top/Cargo.toml" >&2; exit 1; }
for b in plinth-controller plinthctl plinth-agent; do
    [ -x "$bin_dir/$b" ] || { echo "build-debs: $bin_dir/$b is missing: build it first" >&2; exit 1; }
done
mkdir -p "$out_dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# stage PACKAGE: the package's control files into $work/PACKAGE/DEBIAN.
stage() {
    local pkg="$1" root="$work/$1"
    install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/plinth" \
        "$root/usr/share/doc/$pkg"
    sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" "$here/debian/$pkg/control" > "$root/DEBIAN/control"
    for s in postinst prerm postrm; do
        install -m 0755 "$here/debian/$pkg/$s" "$root/DEBIAN/$s"
    done
    install -m 0644 "$top/systemd/$pkg.service" "$root/lib/systemd/system/$pkg.service"
    install -m 0644 "$top/LICENSE" "$root/usr/share/doc/$pkg/copyright" 2>/dev/null \
        || printf 'Licensed under the Apache License, Version 2.0.\n' > "$root/usr/share/doc/$pkg/copyright"
}

# finish PACKAGE: sizes, conffiles, build.
finish() {
    local pkg="$1" root="$work/$1"
    (cd "$root" && find etc -type f | sed 's|^|/|' | sort) > "$root/DEBIAN/conffiles"
    local size
    size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    echo "Installed-Size: $size" >> "$root/DEBIAN/control"
    local deb="$out_dir/${pkg}_${version}_${arch}.deb"
    dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
    echo "$deb"
}

# docs PACKAGE BINARY: the binary's man page and shell completions (bash, zsh, fish), printed by the
# binary itself, so they always match its options.
docs() {
    local root="$work/$1" name="$2" bin="$bin_dir/$2"
    local man="$root/usr/share/man/man1" bash="$root/usr/share/bash-completion/completions"
    local zsh="$root/usr/share/zsh/vendor-completions" fish="$root/usr/share/fish/vendor_completions.d"
    install -d -m 0755 "$man" "$bash" "$zsh" "$fish"
    "$bin" generate man | gzip -9n > "$man/$name.1.gz"
    "$bin" generate completions bash > "$bash/$name"
    "$bin" generate completions zsh > "$zsh/_$name"
    "$bin" generate completions fish > "$fish/$name.fish"
    chmod 0644 "$man/$name.1.gz" "$bash/$name" "$zsh/_$name" "$fish/$name.fish"
}

stage plinth-controller
install -m 0755 "$bin_dir/plinth-controller" "$bin_dir/plinthctl" "$work/plinth-controller/usr/bin/"
docs plinth-controller plinth-controller
docs plinth-controller plinthctl
install -m 0644 "$here/etc/controller.toml" "$work/plinth-controller/etc/plinth/controller.toml"
install -m 0644 "$top/README.md" "$work/plinth-controller/usr/share/doc/plinth-controller/README.md"
finish plinth-controller

stage plinth-agent
install -m 0755 "$bin_dir/plinth-agent" "$work/plinth-agent/usr/bin/"
docs plinth-agent plinth-agent
install -m 0600 "$here/etc/agent.toml" "$work/plinth-agent/etc/plinth/agent.toml"
install -m 0644 "$top/agent/README.md" "$work/plinth-agent/usr/share/doc/plinth-agent/README.md"
finish plinth-agent
