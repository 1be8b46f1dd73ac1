#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer) of the parsers that read what users and peers send (issue 17):
#   frame-decoder  HotspotProtocol's FrameDecoder, then JSON and every message decoder behind it
#   json-parser    HotspotProtocol's JSON parser and writer (round trip)
#   topology       the topology parser (LabYAML, Yams, reader, validator)
#   scenario       the scenario parser (LabYAML, every step kind's parser)
# Harnesses: Tests/Fuzz/<Target>/main.swift. Seed corpora: Tests/Fuzz/corpus/<target>/ (Tests/Fuzz/make-corpus.py).
#
# Usage: ci/fuzz.sh [SECONDS] [TARGET...]     (SECONDS per target, default $FUZZ_SECONDS or 25; all targets)
#        ci/fuzz.sh --runs N [TARGET...]        (N inputs per target with a fixed seed: what ci/test.sh runs)
#        ci/fuzz.sh --build-only
#        ci/fuzz.sh --runs N --skip-build       (run the harnesses an earlier --build-only made: ci/test.sh builds them
#                                               beside the main build, then runs them)
# --runs is the CI mode: the same commit explores the same inputs on every machine, however loaded, so CI's verdict
# does not depend on luck or on how fast the machine is (a time-boxed run once failed CI on a bug that earlier
# runs had not reached). Exploration for its own sake is the time-boxed mode; what it finds becomes a seed and a test.
# Fails when a target crashes, traps, leaks past the RSS limit or spends more than FUZZ_TIMEOUT (default 10) seconds
# on one input. The input is kept as Tests/Fuzz/crashes/<target>-crash-<sha1> (or -timeout-, -oom-); reproduce
# with `.build-fuzz/bin/fuzz-<target> FILE`. New inputs libFuzzer finds go to .build-fuzz/corpus/<target>/,
# never into Tests/.
#
# How it builds (Swift 6.3.1 on Linux): SwiftPM compiles LabScenarioModel (the scenario parser and step kinds, no lab
# services) and its dependencies (LabTopology among them; Yams, libyaml included) in
# release mode into the separate scratch path .build-fuzz with `-Xswiftc -sanitize=fuzzer` (coverage
# instrumentation of the Swift code) and `-Xcc -fsanitize=fuzzer-no-link` (of the C code, libyaml's too); only the
# library target is built, so nothing is linked there. Then each harness is compiled and linked by swiftc with
# `-sanitize=fuzzer -parse-as-library` (libFuzzer supplies main) against those object files. The protocol targets
# link only HotspotCore and HotspotProtocol, the topology target LabTopology's dependency closure and the scenario target LabScenarioModel's (both from the build plan's
# targetDependencyMap).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-25}
runs=""
build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; shift
elif [[ ${1:-} == --runs ]]; then
    [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz: --runs needs a number of inputs, got '${2:-}'" >&2; exit 2; }
    runs=$2; shift 2
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
skip_build=0
if [[ ${1:-} == --skip-build ]]; then skip_build=1; shift; fi
all_targets=(frame-decoder json-parser topology scenario)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
timeout=${FUZZ_TIMEOUT:-10}

scratch=.build-fuzz
# A fresh scratch path would clone the dependencies again; reuse the main build's checkouts when there are some.
if [[ ! -d $scratch/checkouts && -d .build/checkouts ]]; then
    mkdir -p "$scratch"
    cp -r .build/checkouts .build/repositories "$scratch"/ 2>/dev/null || true
    [[ -f .build/workspace-state.json ]] && cp .build/workspace-state.json "$scratch"/
fi
if [[ $skip_build == 1 ]]; then
    for t in "${targets[@]}"; do
        [[ -x $scratch/bin/fuzz-$t ]] || { echo "fuzz: --skip-build, but $scratch/bin/fuzz-$t was not built (run ci/fuzz.sh --build-only first)" >&2; exit 2; }
    done
else
echo "fuzz: building LabScenarioModel and its dependencies with -sanitize=fuzzer into $scratch"
# -use-ld=lld: SwiftPM applies -Xswiftc to the build-time program LabScenarioModel's plugin runs (step-registry-tool) too, and
# linking that program with -sanitize=fuzzer makes gold fail (an internal error); lld links it and it runs as usual.
swift build -c release --scratch-path "$scratch" --target LabScenarioModel \
    -Xswiftc -sanitize=fuzzer -Xcc -fsanitize=fuzzer-no-link -Xswiftc -use-ld=lld
out=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
mkdir -p "$scratch/bin"

objects() { # the object files of the named SwiftPM targets and of everything they depend on (SwiftPM's build plan)
    local t dir
    for t in $(python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))["targetDependencyMap"]
names = []
for target in sys.argv[2:]:
    for name in [target] + plan[target]:
        if name not in names:
            names.append(name)
print("\n".join(names))' "$out/description.json" "$@"); do
        dir="$out/$t.build"
        [[ -d $dir ]] || continue  # a system library target (CLibNL, ...): nothing compiled, linked with -l below
        find "$dir" -name '*.o' | sort
    done
}
protocol_modules=(HotspotProtocol)

harness() { # target -> harness folder
    case $1 in
        frame-decoder) echo FrameDecoder ;; json-parser) echo JSONParser ;;
        topology) echo TopologyParser ;; scenario) echo ScenarioParser ;;
        *) echo "fuzz: unknown target '$1' (expected one of: ${all_targets[*]})" >&2; exit 2 ;;
    esac
}

for t in "${targets[@]}"; do
    h=$(harness "$t")
    case $t in
        frame-decoder|json-parser) mapfile -t objs < <(objects "${protocol_modules[@]}"); flags=() ;;
        topology|scenario)
            if [[ $t == topology ]]; then mapfile -t objs < <(objects LabTopology); else mapfile -t objs < <(objects LabScenarioModel); fi
            # The C modules the Lab modules' interfaces import: the module maps SwiftPM generated or found, their headers (a new
            # C module under a Lab module shows as "missing required module" here: add its map and headers).
            flags=()
            for m in "$out/CSystemShims.build/module.modulemap" "$out/CNetlinkShim.build/module.modulemap" \
                "$out/CTLSShim.build/module.modulemap" Sources/COpenSSL/module.modulemap \
                "$scratch/checkouts/Yams/Sources/CYaml/include/module.modulemap" \
                Sources/CLibNL/module.modulemap Sources/CLibNLGenl/module.modulemap Sources/CLibMNL/module.modulemap; do
                [[ -f $m ]] || continue  # a C target outside what was built (CTLSShim: the portals')
                flags+=(-Xcc "-fmodule-map-file=$m")
            done
            for i in Sources/CSystemShims/include Sources/CNetlinkShim/include Sources/CTLSShim/include Sources/COpenSSL \
                "$scratch/checkouts/Yams/Sources/CYaml/include" \
                $(pkg-config --cflags-only-I libnl-3.0 libnl-genl-3.0 libmnl | sed 's/-I//g'); do
                flags+=(-Xcc "-I$i")
            done
            flags+=(-lnl-genl-3 -lnl-3 -lmnl -lssl -lcrypto)
            ;;
    esac
    [[ ${#objs[@]} -gt 0 ]] || { echo "fuzz: no object files for $t in $out (did the build above fail?)" >&2; exit 1; }
    echo "fuzz: linking $scratch/bin/fuzz-$t"
    swiftc -O -sanitize=fuzzer -parse-as-library -module-name "Fuzz$h" -I "$out/Modules" "${flags[@]}" \
        "Tests/Fuzz/$h/main.swift" "${objs[@]}" -o "$scratch/bin/fuzz-$t"
done
fi
[[ $build_only == 1 ]] && exit 0

mkdir -p Tests/Fuzz/crashes
failed=()
for t in "${targets[@]}"; do
    corpus="$scratch/corpus/$t"
    mkdir -p "$corpus"
    if [[ -n $runs ]]; then
        # A fresh folder for what this run finds: inputs kept from earlier runs would change where a fixed seed goes.
        corpus="$scratch/corpus-runs/$t"; rm -rf "$corpus"; mkdir -p "$corpus"
        budget=(-runs="$runs" -seed=1)
        echo "fuzz: running $t for $runs inputs, seed 1 (seeds Tests/Fuzz/corpus/$t)"
    else
        budget=(-max_total_time="$seconds")
        echo "fuzz: running $t for ${seconds}s (seeds Tests/Fuzz/corpus/$t, found inputs $corpus)"
    fi
    log="$scratch/fuzz-$t.log"
    dict=()
    [[ -f Tests/Fuzz/$t.dict ]] && dict=(-dict="Tests/Fuzz/$t.dict")
    # The scratch folder comes first: libFuzzer writes what it finds into the first folder only.
    # SWIFT_BACKTRACE=enable=no: Swift's own backtracer would catch the trap's signal first and exit, and libFuzzer
    # would never write the crashing input.
    if SWIFT_BACKTRACE=enable=no "$scratch/bin/fuzz-$t" "${budget[@]}" -timeout="$timeout" -rss_limit_mb=2048 "${dict[@]}" \
        -print_final_stats=1 -artifact_prefix="Tests/Fuzz/crashes/$t-" "$corpus" "Tests/Fuzz/corpus/$t" >"$log" 2>&1; then
        # The last status line: executions, coverage (cov: edges, ft: features), corpus size, executions per second.
        grep -E '^#[0-9]+' "$log" | tail -1 || true
        grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' "$log" || true
    else
        tail -40 "$log"
        echo "fuzz: $t FAILED; the input is kept under Tests/Fuzz/crashes/ (the log: $log)" >&2
        failed+=("$t")
    fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: crashes in: ${failed[*]}" >&2
    exit 1
fi
if [[ -n $runs ]]; then echo "fuzz: ${targets[*]}: no crash in $runs inputs each (seed 1)"
else echo "fuzz: ${targets[*]}: no crash in ${seconds}s each"; fi
