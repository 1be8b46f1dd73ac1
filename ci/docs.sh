#!/usr/bin/env bash
# The helper SDK's documentation: builds the DocC catalogs of HotspotHelper and NEHotspotHelperCompat
# (Sources/<Module>/<Module>.docc) into .build/docs/<Module>.doccarchive, with the toolchain's docc.
#
#   bash ci/docs.sh
#
# Steps: `swift build --target NEHotspotHelperCompat` (it builds HotspotHelper too; nothing is rebuilt when
# the modules are current), then `swift symbolgraph-extract` reads each module's public symbols from the
# built .swiftmodule into .build/docs/symbol-graphs/<Module> (extension blocks included, so the compat
# module's `bind(to:)` and `createTCPConnection(_:)` on other modules' types are documented), then
# `docc convert --warnings-as-errors`. Any docc warning (a ``Symbol`` link that does not resolve, a
# <doc:Article> that does not exist, a malformed Topics section) fails the script with docc's message
# and a non-zero status. Safe to run again: each run replaces its own outputs under .build/docs only.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(HotspotHelper NEHotspotHelperCompat)
out=.build/docs

# The toolchain's docc: next to `swift` (the toolchain at /opt/swift here), else on PATH.
swift_bin=$(dirname "$(readlink -f "$(command -v swift)")")
if [ -x "$swift_bin/docc" ]; then
    docc="$swift_bin/docc"
elif [ -x /opt/swift/usr/bin/docc ]; then
    docc=/opt/swift/usr/bin/docc
elif command -v docc >/dev/null; then
    docc=$(command -v docc)
else
    echo "docs: no docc found next to $swift_bin/swift, at /opt/swift/usr/bin/docc, or on PATH" >&2
    exit 1
fi

start=$SECONDS
swift build --target NEHotspotHelperCompat
bin=$(swift build --show-bin-path)

# The C modules the SDK imports: SwiftPM's generated module maps (build folder) and COpenSSL's own.
clang_modules=(
    -Xcc "-fmodule-map-file=Sources/COpenSSL/module.modulemap"
    -Xcc "-fmodule-map-file=$bin/CTLSShim.build/module.modulemap"
    -Xcc "-fmodule-map-file=$bin/CSystemShims.build/module.modulemap"
)

for module in "${modules[@]}"; do
    graphs="$out/symbol-graphs/$module"
    archive="$out/$module.doccarchive"
    rm -rf "$graphs" "$archive"
    mkdir -p "$graphs"
    if ! swift symbolgraph-extract -module-name "$module" -I "$bin/Modules" "${clang_modules[@]}" \
        -minimum-access-level public -emit-extension-block-symbols -output-dir "$graphs"; then
        echo "docs: extracting the symbol graph of $module from $bin/Modules failed (see above)" >&2
        exit 1
    fi
    if ! "$docc" convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$graphs" \
        --output-path "$archive" --warnings-as-errors; then
        echo "docs: docc convert of Sources/$module/$module.docc failed: fix the warnings above" >&2
        exit 1
    fi
    echo "docs: $module -> $archive"
done
echo "docs: built ${#modules[@]} catalogs in $((SECONDS - start)) s"
