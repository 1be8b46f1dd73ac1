#!/usr/bin/env bash
# The test command (README "Run the tests"). Builds everything, then runs the whole suite:
# unit tests, root tests (namespaces, nftables) and the end-to-end suite inside one VM boot.
set -euo pipefail
cd "$(dirname "$0")/.."
# How long each step took, printed again at the end (CI keeps only the tail of the output).
timings=()
step() {
    local name=$1 start=$SECONDS
    shift
    "$@"
    timings+=("$name: $((SECONDS - start)) s")
}
print_timings() {
    [ "${#timings[@]}" -eq 0 ] || printf '=== step times: %s\n' "${timings[@]}"
    # The host side's cgroup (below), once its processes are gone.
    [ -z "${hostcg:-}" ] || rmdir "$hostcg" 2>/dev/null || true
}
trap print_timings EXIT
# background LOG PREFIX COMMAND...: COMMAND in a session of its own, its output kept in LOG and printed with PREFIX;
# LOG.pgid holds its process group, LOG.status its exit status once it ended. `$!` is the job afterwards.
background() {
    local log=$1 prefix=$2
    shift 2
    HSL_LOG="$log" HSL_PREFIX="$prefix" setsid bash -c 'set -o pipefail; echo $$ > "$HSL_LOG.pgid"; status=0
      "$@" 2>&1 | tee "$HSL_LOG" | sed -u "s/^/$HSL_PREFIX /" || status=$?
      echo "$status" > "$HSL_LOG.status"' background "$@" &
}
# stop_background LOG JOB WHAT: on the way out, a background part's process group, if it still runs.
stop_background() {
    local group
    group=$(cat "$1.pgid" 2>/dev/null || true)
    if [ -n "$group" ] && [ ! -e "$1.status" ] && kill -0 -- "-$group" 2>/dev/null; then
        echo "=== stopping $3 (process group $group)"
        kill -TERM -- "-$group" 2>/dev/null || true
        wait "$2" 2>/dev/null || true
    fi
}
# The packages resolved once, so that the two builds below start from the same checkouts.
step "resolve" swift package resolve
# The fuzzing's instrumented release build (ci/fuzz.sh --build-only, into .build-fuzz; issue 17) runs beside the
# main build, at the same priority, and its inputs run later (below). Beside the VM suite, even at nice 19, that build
# (about 200 CPU-seconds) had made the VM suite half as long again: run 67, with it, 641 s; run 68, without any
# fuzzing, 433 s (bench/README.md, stop 43). The main build leaves a core partly idle (its module chains), which
# this build now takes. Its lines are prefixed [fuzz-build] and kept in a file, printed again on a failure.
fuzzbuildlog="$(mktemp "${TMPDIR:-/tmp}/hotspotlab-fuzz-build.XXXXXX")"
fuzzbuildstart=$SECONDS
background "$fuzzbuildlog" "[fuzz-build]" ci/fuzz.sh --build-only
fuzzbuildjob=$!
trap 'stop_background "$fuzzbuildlog" "$fuzzbuildjob" "the fuzzing build"; print_timings' EXIT
# Everything, the test bundle included, built once: the runs below use it without building (SwiftPM allows one
# `swift test` at a time per build folder).
step "build (with tests)" swift build --build-tests
bundle="$(swift build --show-bin-path)/HotspotLabPackageTests.xctest"
# The VM suite (VMBootTests/suitesInsideOneBoot: the one boot that runs every InVM suite) is the long pole, so it starts
# first and runs beside everything else: the checks, the host suites and the fuzzing's inputs. It computes (alone it
# keeps both cores 83-95 % busy for its 359 s) where the host suites mostly wait (bench/README.md, stop 43); neither's
# verdict may depend on the other's load (the lab's promise). What is left of the fuzzing's build when the main build
# is done goes on at nice 19. The bundle is run directly (Swift Testing only, as inside the VM); its lines are prefixed [vm-suite] and
# also kept in a file, printed again on a failure.
# It runs in a session of its own, so that a step failing below (set -e) stops it and its VM with one signal to its
# process group (SIGTERM to all of them, qemu included: a background job of a script ignores SIGINT) instead of
# leaving them running.
fuzzbuildgroup=$(cat "$fuzzbuildlog.pgid" 2>/dev/null || true)
if [ -e "$fuzzbuildlog.status" ]; then
    timings+=("fuzz build (beside the main build): done before it")
elif [ -n "$fuzzbuildgroup" ]; then
    renice -n 19 -g "$fuzzbuildgroup" > /dev/null 2>&1 || true
    echo "=== the fuzzing's build goes on at nice 19 ($((SECONDS - fuzzbuildstart)) s after it started)"
    fuzzbuildlate=$SECONDS
fi
# The one boot that runs every InVM suite; VMBootTests' three short boots (about 12 s) run with the host suites'
# [host-boots] group (at the VM suite's weight) instead of on this, CI's longest path.
vm_suite='VMBootTests/suitesInsideOneBoot'
vmlog="$(mktemp "${TMPDIR:-/tmp}/hotspotlab-vm-suite.XXXXXX")"
vmstart=$SECONDS
background "$vmlog" "[vm-suite]" "$bundle" --testing-library swift-testing --filter "$vm_suite"
vmjob=$!
trap 'stop_background "$fuzzbuildlog" "$fuzzbuildjob" "the fuzzing build"
      stop_background "$vmlog" "$vmjob" "the VM suite"; print_timings' EXIT
# The host side's lower CPU weight: a cgroup (cgroup v1's cpu controller, as on CI's machines; v2's cpu.weight
# elsewhere) that every process of the checks, the host suites, the under-load step and the fuzzing's inputs is started
# in, with nice 10. nice alone does not reach a test bundle's children: libdispatch sets each worker thread's nice from
# its QoS (0 for the default QoS), the labs and the hogs are spawned from those threads, so they ran at nice 0 beside
# the VM suite whatever the bundle's nice (`ps -L` in run 78; bench/README.md, stop 44). A cgroup's weight holds for
# every process started in it, whatever its threads' nice. Without a writable cpu controller the parts run at nice 10
# only. The weight (HOTSPOT_LAB_CI_HOST_SHARES, 256 of 1024 by default): in run 80 the VM suite took 359 s under it
# where it had taken 418-462 s beside the host side at full weight; the host side then became the long path because its
# parts ran one after another, which they no longer do (below).
hostcg=""
for root in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
    if [ -f "$root/cpu.shares" ] && mkdir "$root/hotspotlab-ci-$$" 2>/dev/null; then
        if echo "${HOTSPOT_LAB_CI_HOST_SHARES:-256}" > "$root/hotspotlab-ci-$$/cpu.shares" 2>/dev/null; then hostcg="$root/hotspotlab-ci-$$"; break; fi
        rmdir "$root/hotspotlab-ci-$$" 2>/dev/null || true
    elif [ -f "$root/cgroup.controllers" ] && grep -qw cpu "$root/cgroup.controllers" && mkdir "$root/hotspotlab-ci-$$" 2>/dev/null; then
        if echo "${HOTSPOT_LAB_CI_HOST_WEIGHT:-25}" > "$root/hotspotlab-ci-$$/cpu.weight" 2>/dev/null; then hostcg="$root/hotspotlab-ci-$$"; break; fi
        rmdir "$root/hotspotlab-ci-$$" 2>/dev/null || true
    fi
done
echo "=== the host side's CPU weight: ${hostcg:-no writable cgroup cpu controller; nice 10 only}"
# lowered COMMAND...: COMMAND in that cgroup, at nice 10.
lowered() {
    if [ -n "$hostcg" ]; then
        HSL_CGROUP="$hostcg" sh -c 'echo $$ > "$HSL_CGROUP/cgroup.procs" && exec "$@"' lowered nice -n 10 "$@"
    else
        nice -n 10 "$@"
    fi
}
# The background parts run their command in a bash of their own: they need the function and its cgroup.
export -f lowered
export hostcg
# The quick checks (a second or so each), here in order.
# The layers of docs/ARCHITECTURE.md: who may import whom, and its import table against Package.swift.
step "architecture" /usr/bin/python3 ci/check-architecture.py
# README's "Where things are" table names the folder of every target of Package.swift (and only paths that exist).
step "readme targets" /usr/bin/python3 ci/check-readme-targets.py
# The trace is a typed contract (docs/TRACE.md): nothing outside HotspotProtocol reads a record by string key.
step "trace reads" /usr/bin/python3 ci/check-trace-reads.py
# The host side's parts, all at once beside the VM suite, each a process group of its own with its lines prefixed and
# kept in a file (CI keeps only the tail, so on a failure a part's failing tests are printed again last):
# - [checks]: the vendor CI templates (ci/github, ci/gitlab), their steps run in order, certifying the reference
#   helper; then the SDK's DocC catalogs (HotspotHelper, NEHotspotHelperCompat: every symbol and article link must
#   resolve). Both call `swift build`, a no-op here (SwiftPM's lock keeps them one at a time).
# - the host suites in six processes (the test bundle run directly, Swift Testing only, as the VM suite is). They
#   wait on labs' timers far more than they compute (alone, one after the other: 523 s at about a quarter of the 2
#   cores, most of it the hogs of the two load tests; bench/README.md, stop 43). Within a process the suites stay one
#   at a time (on 2 cores, suites that block Swift's cooperative threads starve the in-process portal servers of the
#   helper tests); processes share no threads. The groups: [host-load], issue 25's fixtures certified beside two CPU
#   hogs with the quiet native certify of the broken fixtures, whose verdicts the load test compares against (computed
#   once per process: in another group they were certified twice, stop 44); [host-race], issue 27's close race (500
#   rounds quiet, 500 beside two CPU hogs; in [host-load] it made that group CI's longest path, run 84);
#   [host-labs], the other long native-tier lab suites; [host-slow], the suites that mostly wait
#   (a helper 13 s late, the vendor patterns' certifies, bring-up under signals, the air's capture, hotspotd's bounds and
#   bad input: these three made [host-rest] the host side's longest part, run 86); [host-boots], VMBootTests' three short
#   boots, outside the cgroup at nice 10 (its qemu at nice 0: in the cgroup it was starved past the boots' bounds, run 85);
#   [host-rest], every test matched by none of them, so none is left out. The native tier's scenarios are judged by
#   the VM suite (its parity check runs them beside the VM and judges each one, Tests/LabKitTests/VMSuiteTests.swift),
#   so the host suites skip NativeTierRootTests.scenario instead of running the same 46 labs a second time.
# - [under-load]: the timing-sensitive suites again beside CPU hogs (CI runs on shared machines;
#   docs/RELIABILITY.md), as soon as [host-load] and [host-race] are done (their hogs gone), while the others still run.
# - [fuzz]: coverage-guided fuzzing of the frame decoder, JSON, topology and scenario parsers (issue 17): 100,000
#   inputs per target from a fixed seed, so the verdict is the commit's and not the machine's load or luck; fails on a
#   crash, a trap or a hang and keeps the input under Tests/Fuzz/crashes/. The harnesses were built beside the main
#   build; the inputs (about 50 CPU-seconds) run once the fuzzing's build and [host-boots] are done (at nice 10 as the
#   rest: at nice 19 the hogs beside it in the cgroup starved it, 225 s in run 84; after [host-labs], in run 86, they
#   were the host side's last part).
# None's verdict may depend on the others' load, nor on the VM suite's (the lab's promise).
load_suites='NativeCertifyUnderLoadRootTests/|NativeCertifyRootTests/'
race_suites='CloseRaceTests/'
lab_suites='HotspotGateRootTests/|IPv6GateRootTests/|NativeReplayRootTests/|IPv6OnlyCertifyRootTests/'
slow_suites='CertifyDeadlineRootTests/|VendorPatternsRootTests/|SignalChaosRootTests/|AirCaptureRootTests/|BoundsTests/|RobustnessTests/'
# VMBootTests' three short boots: at the VM suite's weight, not the host side's (in the cgroup their qemu was starved
# past the boots' own bounds, run 85).
boot_suites='VMBootTests/'
hoststart=$SECONDS
# Every background part by its job: its name, log, start and what to call it when it is stopped.
declare -A partname partlog partstart
parts=()
start_part() { # NAME PREFIX COMMAND...
    local name=$1 prefix=$2 log
    shift 2
    log="$(mktemp "${TMPDIR:-/tmp}/hotspotlab-$name.XXXXXX")"
    background "$log" "$prefix" "$@"
    partname[$!]=$name
    partlog[$!]=$log
    partstart[$!]=$SECONDS
    parts+=("$!")
}
stop_parts() {
    for job in "${parts[@]}"; do stop_background "${partlog[$job]}" "$job" "${partname[$job]}"; done
    stop_background "$fuzzbuildlog" "$fuzzbuildjob" "the fuzzing build"
    stop_background "$vmlog" "$vmjob" "the VM suite"
}
trap 'stop_parts; print_timings' EXIT
start_part checks "[checks]" lowered bash -c 'set -e; /usr/bin/python3 ci/check-workflows.py; bash ci/docs.sh'
hostgroups=(load race labs slow boots rest)
for group in "${hostgroups[@]}"; do
    case $group in
        load) selection=(--filter "$load_suites") ;;
        race) selection=(--filter "$race_suites") ;;
        labs) selection=(--filter "$lab_suites") ;;
        slow) selection=(--filter "$slow_suites") ;;
        boots) selection=(--filter "$boot_suites" --skip "$vm_suite") ;;
        rest) selection=(--skip "$vm_suite" --skip 'NativeTierRootTests/scenario\(' --skip "$load_suites" --skip "$race_suites" --skip "$lab_suites" --skip "$slow_suites" --skip "$boot_suites") ;;
    esac
    weight=lowered
    [ "$group" != boots ] || weight=nice
    start_part "host-$group" "[host-$group]" "$weight" env NO_COLOR=1 "$bundle" --testing-library swift-testing --no-parallel "${selection[@]}"
done
# The parts started as others end: under-load after [host-load] and [host-race], the fuzzing's inputs after its build and
# [host-boots] (the short boots: the only part outside the cgroup).
pending=("${parts[@]}" "$fuzzbuildjob")
declare -A ended
while [ "${#pending[@]}" -gt 0 ]; do
    finished=""
    wait -n -p finished "${pending[@]}" || true
    [ -n "$finished" ] || break
    still=()
    for job in "${pending[@]}"; do [ "$job" = "$finished" ] || still+=("$job"); done
    pending=("${still[@]}")
    if [ "$finished" = "$fuzzbuildjob" ]; then
        ended[fuzz-build]=1
        [ -z "${fuzzbuildlate:-}" ] || timings+=("fuzz build: done after the main build, $((SECONDS - fuzzbuildlate)) s after it")
    else
        ended[${partname[$finished]}]=1
        timings+=("${partname[$finished]}: $((SECONDS - ${partstart[$finished]})) s (ended $((SECONDS - hoststart)) s after the build)")
    fi
    if [ -n "${ended[host-load]:-}" ] && [ -n "${ended[host-race]:-}" ] && [ -z "${underloadstarted:-}" ]; then
        underloadstarted=1
        start_part under-load "[under-load]" lowered env NO_COLOR=1 ci/under-load.sh
        pending+=("$!")
    fi
    if [ -n "${ended[fuzz-build]:-}" ] && [ -n "${ended[host-boots]:-}" ] && [ -z "${fuzzstarted:-}" ]; then
        fuzzstarted=1
        if [ "$(cat "$fuzzbuildlog.status" 2>/dev/null || echo unknown)" = 0 ]; then
            start_part fuzz "[fuzz]" lowered ci/fuzz.sh --runs 100000 --skip-build
            pending+=("$!")
        fi
    fi
done
fuzzbuildstatus=$(cat "$fuzzbuildlog.status" 2>/dev/null || echo "unknown")
wait "$vmjob" || true
vmstatus=$(cat "$vmlog.status" 2>/dev/null || echo "unknown")
timings+=("VM suite (beside the host side): $((SECONDS - vmstart)) s")
failures_again() { # WHAT STATUS LOG: a failed part's failing tests, printed again
    [ "$2" = 0 ] && return 0
    echo "=== $1 failed (exit status $2); its failures, again ($3 has the whole output):"
    # Each failing expectation with the message lines under it (`↳ ...`: a test's own comment, such as a
    # command's stderr), not the suites' doc comments (`↳ ///`).
    awk '/^(\[vm\] )?✘|Fatal error|flaky/ { print; keep = /recorded an issue/; next }
         keep && /^(\[vm\] )?↳/ && !/↳ \/\/\// { print; next }
         { keep = 0 }' "$3" | cut -c1-1500 | tail -n 120 || true
}
status=0
# Each part by name: its log and exit status ("never started" for a part whose start condition never came).
declare -A lognamed
for job in "${parts[@]}"; do lognamed[${partname[$job]}]=${partlog[$job]}; done
part_status() { [ -n "${lognamed[$1]:-}" ] && cat "${lognamed[$1]}.status" 2>/dev/null || echo "never started"; }
for group in "${hostgroups[@]}"; do
    log=${lognamed[host-$group]}
    # The group's own count, as `swift test` printed it (a group that ran nothing has failed too: its filter is stale).
    grep -a "Test run with" "$log" | tail -n 1 | sed "s/^/=== host suites, $group: /" || true
    if ! grep -aq "Test run with [1-9]" "$log"; then
        echo "=== host suites, $group: no test ran (its filter selects nothing)"
        status=1
    fi
    [ "$(part_status "host-$group")" = 0 ] || status=1
    failures_again "the host suites ($group)" "$(part_status "host-$group")" "$log"
done
failures_again "the VM suite" "$vmstatus" "$vmlog"
[ "$vmstatus" = 0 ] || status=1
if [ "$(part_status checks)" != 0 ]; then
    echo "=== the workflow certify or the docs failed (exit status $(part_status checks)); the last lines, again (${lognamed[checks]} has them all):"
    tail -n 60 "${lognamed[checks]}"
    status=1
fi
if [ "$fuzzbuildstatus" != 0 ]; then
    echo "=== the fuzzing's build failed (exit status $fuzzbuildstatus); its last lines, again ($fuzzbuildlog has them all):"
    tail -n 60 "$fuzzbuildlog"
    status=1
elif [ "$(part_status fuzz)" != 0 ]; then
    echo "=== the fuzzing failed (exit status $(part_status fuzz)); its last lines, again (${lognamed[fuzz]:-no log} has them all):"
    [ -z "${lognamed[fuzz]:-}" ] || tail -n 60 "${lognamed[fuzz]}"
    status=1
fi
if [ "$(part_status under-load)" != 0 ]; then
    failures_again "the timing-sensitive suites under load" "$(part_status under-load)" "${lognamed[under-load]:-/dev/null}"
    status=1
fi
[ "$status" -eq 0 ] || exit 1
rm -f "$vmlog" "$vmlog.status" "$vmlog.pgid" "$fuzzbuildlog" "$fuzzbuildlog.status" "$fuzzbuildlog.pgid"
for job in "${parts[@]}"; do rm -f "${partlog[$job]}" "${partlog[$job]}.status" "${partlog[$job]}.pgid"; done
