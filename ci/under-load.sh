#!/usr/bin/env bash
# The timing-sensitive suites (tagged .timingSensitive) again, beside a CPU hog: one `yes > /dev/null` per core,
# started here and killed by PID on the way out. Swift Testing 6.3 cannot --filter by tag, so the suites are
# listed from the test bundle (--list-tests, event stream v1 carries the tags) and selected by ID, as the in-VM
# run does (Tests/LabKitTests/VMSuiteTests.swift). Needs a built test bundle (swift build --build-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$(ls -d .build/debug/*PackageTests.xctest | head -1)
stream=$(mktemp /tmp/hsl-under-load-XXXXXX.jsonl)
hogs=()
cleanup() {
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -f "$stream"
}
trap cleanup EXIT
"$bundle" --testing-library swift-testing --list-tests --event-stream-output-path "$stream" --event-stream-version 1 > /dev/null
mapfile -t filters < <(/usr/bin/python3 - "$stream" <<'PY'
import json, re, sys
ids = []
for line in open(sys.argv[1]):
    record = json.loads(line)
    payload = record.get("payload") or {}
    if record.get("kind") == "test" and payload.get("kind") == "suite" and ".timingSensitive" in payload.get("_tags", []):
        ids.append(payload["id"])
if not ids:
    sys.exit("ci/under-load.sh: no suite is tagged .timingSensitive")
for suite in sorted(ids):
    print("--filter")
    print("^" + re.escape(suite) + "$")
PY
)
echo "under load: $(( ${#filters[@]} / 2 )) timing-sensitive suites beside $(nproc) CPU hog(s)"
for _ in $(seq "$(nproc)"); do
    yes > /dev/null &
    hogs+=("$!")
done
# The bundle run directly (as ci/test.sh runs its other parts): no SwiftPM lock on the build folder, so it can run
# while another part of CI uses the same build.
"$bundle" --testing-library swift-testing --no-parallel "${filters[@]}"
