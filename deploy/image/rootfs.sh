#!/usr/bin/env bash
# The image's system: a Debian bookworm root filesystem made by debootstrap from a Debian
# mirror, with Python 3.11 and the CA certificates, brought up to date with bookworm's
# security and point-release updates, then trimmed. Written to the tar file named by $1.
#
# build.sh caches that tar under a hash of this file and of the variables below, so any change
# here makes a fresh one; delete the cache folder to pick up newer Debian updates.
set -euo pipefail

out=$1
suite=${CRONPILOT_DEBIAN_SUITE:-bookworm}
mirror=${CRONPILOT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${CRONPILOT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# python3-venv brings ensurepip's wheels (the image's venv); tzdata for named time zones in
# schedules; ca-certificates for the https endpoints cronpilot calls.
packages=python3,python3-venv,ca-certificates,tzdata

root=$(mktemp -d "${TMPDIR:-/tmp}/cronpilot-rootfs.XXXXXX")
trap 'umount -R "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror"

cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
SOURCES
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# As root in the chroot: its _apt user cannot write where the host runs this.
apt=(apt-get -qq -o APT::Sandbox::User=root)
chroot "$root" "${apt[@]}" update
DEBIAN_FRONTEND=noninteractive chroot "$root" "${apt[@]}" -y upgrade
chroot "$root" "${apt[@]}" clean
umount "$root/proc"
: >"$root/etc/resolv.conf"

# Documentation, manuals and translations are of no use in the image; the copyright files stay.
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,locale}/* "$root"/var/lib/apt/lists/* \
  "$root"/var/cache/apt/*.bin "$root"/var/log/*.log "$root"/var/log/apt/*

tar --numeric-owner --xattrs -C "$root" -cf "$out.partial" .
mv "$out.partial" "$out"
