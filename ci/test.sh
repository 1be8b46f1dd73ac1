#!/usr/bin/env bash
# The test command (README "Run the tests"). Builds everything, then runs the whole suite:
# unit tests, root tests (namespaces, nftables) and the end-to-end suite inside one VM boot.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build
swift test
