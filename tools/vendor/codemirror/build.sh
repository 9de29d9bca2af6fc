#!/usr/bin/env bash
# Rebuild the vendored CodeMirror 6 bundle:
#   static/vendor/codemirror/codemirror-<version>.min.js  (IIFE, minified, sets window.CM)
#   static/vendor/codemirror/LICENSE
#
# Usage:
#   tools/vendor/codemirror/build.sh              # build from package.json + package-lock.json
#   tools/vendor/codemirror/build.sh --update-lock  # re-resolve package-lock.json first
#                                                   # (after editing versions in package.json)
#
# The build runs in a temporary copy of this folder, so no node_modules is left
# in the repository. Needs Node.js >= 18 and npm (online, to download packages).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUT_DIR="$ROOT/static/vendor/codemirror"
TARGET="es2020"

UPDATE_LOCK=0
case "${1:-}" in
  "") ;;
  --update-lock) UPDATE_LOCK=1 ;;
  *) echo "usage: $0 [--update-lock]" >&2; exit 2 ;;
esac

VERSION="$(node -p 'require(process.argv[1]).dependencies.codemirror' "$HERE/package.json")"
if ! [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "package.json must pin codemirror to an exact version (got '$VERSION')" >&2
  exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cm-vendor.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cp "$HERE/package.json" "$HERE/entry.mjs" "$WORK/"
cd "$WORK"

# Drop the "resolved" download URL (it names the package server's host) from
# every lockfile entry; "version" + "integrity" are enough for `npm ci` to fetch
# and verify each package.
strip_lock() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const entry of Object.values(lock.packages || {})) delete entry.resolved;
    fs.writeFileSync("package-lock.json", JSON.stringify(lock, null, 2) + "\n");
  '
}

if [ "$UPDATE_LOCK" = 1 ]; then
  npm install --package-lock-only --ignore-scripts --no-audit --no-fund
  strip_lock
  cp package-lock.json "$HERE/package-lock.json"
  echo "updated $HERE/package-lock.json"
fi

if [ -f "$HERE/package-lock.json" ]; then
  cp "$HERE/package-lock.json" .
  npm ci --ignore-scripts --no-audit --no-fund
else
  npm install --ignore-scripts --no-audit --no-fund
fi

INSTALLED="$(node -p 'require("./node_modules/codemirror/package.json").version')"
if [ "$INSTALLED" != "$VERSION" ]; then
  echo "installed codemirror $INSTALLED != pinned $VERSION" >&2
  exit 1
fi

OUT_NAME="codemirror-$VERSION.min.js"
./node_modules/.bin/esbuild entry.mjs \
  --bundle --format=iife --minify --target="$TARGET" \
  --legal-comments=none --charset=utf8 \
  --banner:js="/*! CodeMirror $VERSION bundle (window.CM) for Kafka Transaction Playground. MIT license, see LICENSE. Rebuild: tools/vendor/codemirror/build.sh */" \
  --metafile=meta.json --outfile="$OUT_NAME"

# LICENSE: CodeMirror's MIT license text, followed by the list of packages that
# ended up in the bundle (all MIT, all by the same author).
node -e '
  const fs = require("fs");
  const meta = JSON.parse(fs.readFileSync("meta.json", "utf8"));
  const names = new Set();
  const output = Object.values(meta.outputs)[0];
  for (const [input, info] of Object.entries(output.inputs)) {
    if (!info.bytesInOutput) continue;
    const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
    if (m) names.add(m[1]);
  }
  let out = fs.readFileSync("node_modules/codemirror/LICENSE", "utf8").trimEnd() + "\n";
  out += "\n---------------------------------------------------------------------------\n";
  out += "The bundle codemirror-*.min.js in this folder contains these packages, each\n";
  out += "under the MIT license above (copyright line from each package shown):\n\n";
  for (const name of [...names].sort()) {
    const pkg = JSON.parse(fs.readFileSync(`node_modules/${name}/package.json`, "utf8"));
    const lic = fs.readdirSync(`node_modules/${name}`).find((f) => /^licen[sc]e/i.test(f));
    const text = lic ? fs.readFileSync(`node_modules/${name}/${lic}`, "utf8") : "";
    const copyright = (text.split("\n").find((l) => /copyright/i.test(l)) || "").trim();
    out += `  ${name} ${pkg.version} (${pkg.license})  ${copyright}\n`;
  }
  fs.writeFileSync("LICENSE.out", out);
'

mkdir -p "$OUT_DIR"
# Remove bundles of other versions so only the current one stays.
find "$OUT_DIR" -maxdepth 1 -name 'codemirror-*.min.js' ! -name "$OUT_NAME" -delete
cp "$OUT_NAME" "$OUT_DIR/$OUT_NAME"
cp LICENSE.out "$OUT_DIR/LICENSE"

RAW=$(wc -c < "$OUT_DIR/$OUT_NAME")
GZ=$(gzip -9 -c "$OUT_DIR/$OUT_NAME" | wc -c)
echo "wrote $OUT_DIR/$OUT_NAME ($RAW bytes, $GZ bytes gzip -9)"
echo "wrote $OUT_DIR/LICENSE"
