#!/usr/bin/env python3
"""Nothing reads hotspotd's trace by string key outside HotspotProtocol (issue 24, docs/TRACE.md).

The trace is a typed contract: hotspotd writes `TraceRecord` values, the lab reads `TraceEntry` values
(Sources/HotspotProtocol/Trace/). This check fails when a source file outside HotspotProtocol subscripts a JSON
value with a key only trace records have (`r["kind"]`, `r["commandType"]`, `r["t_ns"]`, ...), or reads the raw
line of a `TraceEntry` (`entry.written[...]`, `record.fields`): the signs of a reader going around the types. Writing such a key
(`o["seq"] = ...`) is not reading. Tests may build and read raw lines; they are not checked.

Usage: ci/check-trace-reads.py [ROOT]   (exit 1 with one `file:line: ...` per offence)
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# The field names only trace records carry (docs/TRACE.md), not the helper and control messages, the status
# reply, the topology or the scenario files. `kind` is checked as a subscript only (topologies have `kind:` keys,
# read through their own parser's `keys["kind"]`, which is not a JSON subscript of a record: see EXEMPT_LINES).
TRACE_KEYS = [
    "kind", "seq", "t_ns", "commandType", "irregularity", "latency_us", "bestHelper", "resultCode", "offendingBytes",
    "passwordFrom", "previousRSSI", "keyMgmt", "latency_ms", "client_ms", "latencyMs", "certify", "traceVersion",
    "maintainInterval_ms", "wallclock_s", "persistedSummary", "claimedBy", "detail", "irregular", "helperReport",
    "labAction", "userAction", "providerStarted", "providerExited",
]

# A subscript: `x["key"]` right after a name, `)`, `]`, `?` or `!` (an array literal `["key"]` is not one), not
# followed by `=` (a write).
SUBSCRIPT = re.compile(r'(?<=[\w\)\]\?!])\["(' + "|".join(map(re.escape, TRACE_KEYS)) + r')"\](?!\s*=[^=])')
RAW_LINE = re.compile(r'\.written\s*\[|\.written\??\.(objectValue|arrayValue)|\.record\.fields\b')

# Where the trace's own types live (and the wire protocol's encoding, which shares some names).
ALLOWED_DIRS = [os.path.join("Sources", "HotspotProtocol") + os.sep]
# Reads of something else that happens to use one of the names: (file suffix, a text on the line).
EXEMPT_LINES = [
    ("Sources/LabScenarioModel/Steps/PortalStep.swift", 'keys.required("kind")'),
    ("Sources/LabTopology/TopologyParser.swift", '"kind"'),
]


def main() -> int:
    offences = []
    for folder, _, files in os.walk(os.path.join(ROOT, "Sources")):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, ROOT)
            if any(rel.startswith(d) for d in ALLOWED_DIRS):
                continue
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    if any(rel.endswith(suffix) and text in code for suffix, text in EXEMPT_LINES):
                        continue
                    m = SUBSCRIPT.search(code)
                    if m:
                        offences.append(f'{rel}:{number}: reads the trace field "{m.group(1)}" by string key; '
                                        "read a TraceEntry's typed record instead (entry.record.<kind>?.<field>, docs/TRACE.md)")
                    elif RAW_LINE.search(code):
                        offences.append(f"{rel}:{number}: reads a trace record's raw JSON (.written[...] / .record.fields); "
                                        "read its typed payload instead (docs/TRACE.md)")
    for o in offences:
        print(o)
    if offences:
        print(f"check-trace-reads: {len(offences)} read(s) of the trace by string key outside HotspotProtocol", file=sys.stderr)
        return 1
    print("check-trace-reads: no trace read by string key outside HotspotProtocol")
    return 0


if __name__ == "__main__":
    sys.exit(main())
