#!/usr/bin/env bash
# Vendors the web's third-party assets from the npm registry into the package's static folder
# with their licenses (docs/decisions/0028-web-console.md): Cytoscape.js for the console's
# graph, and Swagger UI (its bundle and stylesheet) for the API's /docs. The wheel ships them,
# so neither needs a network or a CDN. Run again to move to other versions:
#   scripts/vendor_console_assets.sh [CYTOSCAPE_VERSION [SWAGGER_UI_VERSION]]
set -euo pipefail
cd "$(dirname "$0")/.."

cytoscape="${1:-3.35.0}"
swagger="${2:-5.35.0}"
target=adapters/console/static/vendor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# `npm pack NAME@VERSION` into a folder of its own, unpacked there under `package/`.
unpack() {
  mkdir -p "$work/$1"
  (cd "$work/$1" && npm pack --silent "$1@$2" >/dev/null && tar xzf ./*.tgz)
}

unpack cytoscape "$cytoscape"
unpack swagger-ui-dist "$swagger"
mkdir -p "$target"
cp "$work/cytoscape/package/dist/cytoscape.min.js" "$target/cytoscape.min.js"
cp "$work/cytoscape/package/LICENSE" "$target/cytoscape.LICENSE"
cp "$work/swagger-ui-dist/package/swagger-ui-bundle.js" "$target/swagger-ui-bundle.js"
cp "$work/swagger-ui-dist/package/swagger-ui.css" "$target/swagger-ui.css"
cp "$work/swagger-ui-dist/package/LICENSE" "$target/swagger-ui.LICENSE"
printf 'cytoscape %s\nswagger-ui-dist %s\n' "$cytoscape" "$swagger" > "$target/VERSIONS"
echo "vendored cytoscape ${cytoscape} and swagger-ui-dist ${swagger} into ${target}"
