#!/bin/bash
cd "$(dirname "$0")/.."
# The native tier against a trivial VM run and the radio tier, one after another in one run (bench/README.md, "the native tier").
L=.build/debug/hotspot-lab
uptime
s=$(date +%s.%N); $L vm -- selftest exit > /tmp/tier-m-vm.log 2>&1; rc=$?; echo "vm selftest exit: $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
s=$(date +%s.%N); $L demo --link native > /tmp/tier-m-demo-native.log 2>&1; rc=$?; echo "demo --link native: $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
s=$(date +%s.%N); $L certify --helper 'hotspot-helper-portal --account guest:croissant' > /tmp/tier-m-certify.log 2>&1; rc=$?; echo "certify (native by default): $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
s=$(date +%s.%N); $L certify --jobs 2 --helper 'hotspot-helper-portal --account guest:croissant' > /tmp/tier-m-certify2.log 2>&1; rc=$?; echo "certify --jobs 2 (native): $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
s=$(date +%s.%N); $L run --link native --no-retry --jobs 2 --json /tmp/tier-m-native4.json topologies/scenarios/captive.yaml topologies/scenarios/not-captive.yaml topologies/scenarios/cached.yaml topologies/scenarios/ui-required.yaml > /tmp/tier-m-run-native.log 2>&1; rc=$?; echo "run --link native (4 sequences): $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
s=$(date +%s.%N); $L run --link radio --no-retry --jobs 2 --json /tmp/tier-m-radio4.json topologies/scenarios/captive.yaml topologies/scenarios/not-captive.yaml topologies/scenarios/cached.yaml topologies/scenarios/ui-required.yaml > /tmp/tier-m-run-radio.log 2>&1; rc=$?; echo "run --link radio (4 sequences, = demo in the VM): $(echo "$(date +%s.%N) - $s" | bc) s rc=$rc"
uptime
