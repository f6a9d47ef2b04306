#!/usr/bin/env bash
# Vendors the console's one third-party asset, Cytoscape.js, from the npm registry into the
# package's static folder with its license (docs/decisions/0028-web-console.md): the wheel
# ships it, so the console needs no network and no CDN. Run again to move to another version:
#   scripts/vendor_console_assets.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-3.35.0}"
target=adapters/console/static/vendor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "cytoscape@${version}" >/dev/null && tar xzf cytoscape-*.tgz)
mkdir -p "$target"
cp "$work/package/dist/cytoscape.min.js" "$target/cytoscape.min.js"
cp "$work/package/LICENSE" "$target/cytoscape.LICENSE"
echo "cytoscape ${version}" > "$target/VERSIONS"
echo "vendored cytoscape ${version} into ${target}"
