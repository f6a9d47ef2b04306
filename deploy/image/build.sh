#!/usr/bin/env bash
# Builds cronpilot's container image offline: no base image is pulled. The system is a Debian
# bookworm root filesystem (rootfs.sh, debootstrap from a Debian mirror), cronpilot is a wheel
# built from this checkout, its dependencies are wheels from PyPI.
#
#   sudo deploy/image/build.sh [TAG]        # default TAG: localhost/cronpilot:<version>
#
# Needs root (debootstrap), debootstrap, buildah or podman, and a Python 3.11 with pip on a
# glibc no newer than bookworm's (the wheels pip picks must suit the image's Python). Slow parts
# are cached under CRONPILOT_IMAGE_CACHE (default ~/.cache/cronpilot-image): the root file
# system by a hash of rootfs.sh and its settings, the dependencies' wheels by a hash of the
# dependencies pyproject.toml declares.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/../.." && pwd)
cache=${CRONPILOT_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cronpilot-image}
python=${CRONPILOT_IMAGE_PYTHON:-python3}

fail() {
  echo "build.sh: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root: debootstrap makes the root filesystem"
command -v debootstrap >/dev/null || fail "debootstrap is missing (apt-get install debootstrap)"
command -v git >/dev/null || fail "git is missing: it lists the checkout's files"
if command -v buildah >/dev/null; then
  tool=buildah
elif command -v podman >/dev/null; then
  tool=podman
else
  fail "neither buildah nor podman is installed (apt-get install buildah podman)"
fi
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
  fail "$python is not Python 3.11, the image's Python; set CRONPILOT_IMAGE_PYTHON"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$checkout/pyproject.toml")
tag=${1:-localhost/cronpilot:$version}
mkdir -p "$cache"

# The checkout's files as they are now (tracked and new, not ignored): a wheel built in place
# could take along what an earlier build left in build/.
work=$(mktemp -d "${TMPDIR:-/tmp}/cronpilot-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/tree
mkdir -p "$tree"
git -C "$checkout" ls-files -z --cached --others --exclude-standard |
  (cd "$checkout" && tar --null --files-from=- --ignore-failed-read -cf -) | tar -C "$tree" -xf -

rootfs_key=$(
  {
    cat "$here/rootfs.sh"
    env | grep '^CRONPILOT_DEBIAN_' | sort || true
  } | sha256sum | cut -c1-16
)
rootfs=$cache/rootfs-$rootfs_key.tar
if [ ! -f "$rootfs" ]; then
  echo "build.sh: making the root filesystem (debootstrap; minutes)"
  "$here/rootfs.sh" "$rootfs"
fi

# The dependencies' wheels, by a hash of the dependencies that pyproject.toml declares
# (cronpilot's own wheel, built with them, is dropped).
deps_key=$(
  "$python" - "$tree/pyproject.toml" <<'PY' | sha256sum | cut -c1-16
import sys, tomllib
print(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"])
PY
)
deps=$cache/deps-$deps_key
if [ ! -d "$deps" ]; then
  echo "build.sh: fetching the dependencies' wheels"
  rm -rf "$deps.partial"
  "$python" -m pip wheel --quiet --wheel-dir "$deps.partial" "$tree"
  rm -f "$deps.partial"/cronpilot-*.whl
  mv "$deps.partial" "$deps"
fi
# What older inputs left behind.
find "$cache" -mindepth 1 -maxdepth 1 -not -name "rootfs-$rootfs_key.tar" \
  -not -name "deps-$deps_key" -exec rm -rf {} +

# The build context: hard links into the cache where it can (one file system), copies else.
context=$work/context
mkdir -p "$context/wheels"
ln "$rootfs" "$context/rootfs.tar" 2>/dev/null || cp "$rootfs" "$context/rootfs.tar"
cp -rl "$deps" "$context/wheels/deps" 2>/dev/null || cp -r "$deps" "$context/wheels/deps"
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$context/wheels/app" "$tree"

# chroot isolation: RUN needs no OCI runtime, so the build works where a container cannot
# start (cgroups v1 hybrid hosts, tight rlimits).
previous=$("$tool" images --noheading --no-trunc --format '{{.ID}}' "$tag" 2>/dev/null || true)
"$tool" build --isolation chroot --format docker --layers \
  --build-arg "VERSION=$version" --tag "$tag" --file "$here/Containerfile" "$context"
# The image this tag named before, unless it is the same or still in use.
built=$("$tool" images --noheading --no-trunc --format '{{.ID}}' "$tag")
if [ -n "$previous" ] && [ "$previous" != "$built" ]; then
  "$tool" rmi "$previous" >/dev/null 2>&1 || true
fi
echo "build.sh: built $tag"
