#!/usr/bin/env python3
"""Checks the package's target graph against the layers of docs/ARCHITECTURE.md.

Reads the target dependency graph from `swift package dump-package` (JSON) and checks:

  1. every target has a layer (libraries are listed in LAYERS below; executables and tests get theirs
     from their kind), and every dependency points to a strictly lower layer;
  2. the rules in FORBIDDEN hold, also through other targets (A -> B -> C counts as A reaching C);
  3. the subsystem (PURE_SUBSYSTEM) uses no package from outside this repository;
  4. every `import X` in a target's Swift files, where X is a target of this package, is among that
     target's dependencies, direct or through other targets (SwiftPM can let an import outside them
     compile by accident when X happens to be built already), and the pure targets import nothing else
     (PURE_IMPORTS);
  5. no Swift source outside HotspotSystem and Netlink spawns or reaps a process, starts a raw thread or takes an
     NSLock (SYSTEM_CALLS), starts a Foundation Thread or declares nonisolated(unsafe) state (THREAD_CALLS, less
     THREAD_CALLS_ALLOWED), and no source imports another package's internal module (INTERNAL_MODULES);
  6. the import table between `<!-- imports:begin -->` and `<!-- imports:end -->` in docs/ARCHITECTURE.md
     is the one this script generates from the package.

Usage:
  ci/check-architecture.py            check; exit 0 when everything holds, 1 with one line per problem
  ci/check-architecture.py --write    regenerate the table in docs/ARCHITECTURE.md, then check the rules
  --allow A->B                        report edge A -> B (a forbidden or upward one) as a warning instead
                                      of a failure; for a rule that will hold once pending work is merged
  --package-json FILE                 read the dump from FILE instead of running swift (tests, speed)
  --doc FILE                          the document holding the table (default docs/ARCHITECTURE.md)

Adding a library target: give it a layer in LAYERS (the lowest layer that is above all it depends on) and
run `ci/check-architecture.py --write`. Standard library only.
"""
import argparse, json, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowest first. A target may depend only on targets of a lower layer (peers in one layer may not depend on
# each other). Packages from outside the repository (ArgumentParser, Yams) count as layer 0.
LAYERS = [
    # StepRegistryScanner: build-time code (the generator's reading of LabScenarioModel's step files and LabCertify's check files, for
    # step-registry-tool and the StepRegistryPlugin); it imports nothing (PURE_IMPORTS) and is in BUILD_TOOLS.
    ("system libraries, build-time code", ["CLibNL", "CLibNLGenl", "CLibMNL", "COpenSSL", "StepRegistryScanner"]),
    ("C shims", ["CSystemShims", "CNetlinkShim", "CTLSShim"]),
    ("pure core", ["HotspotCore"]),
    ("wire protocol", ["HotspotProtocol"]),
    ("system calls", ["HotspotSystem"]),
    # FoundationSessions: Foundation's URLSession defaults, for NEHotspotHelperCompat's shadows of them (Foundation only).
    ("kernel, SDK, hotspotd's client", ["Netlink", "HotspotHelper", "HotspotClient", "FoundationSessions"]),
    # ReferenceHelperSupport: what the reference helpers and providers share (form parser, command line, probe...);
    # it uses the SDK only.
    ("daemon, compat", ["HotspotDaemon", "NEHotspotHelperCompat", "ReferenceHelperSupport"]),
    # PortalKinds: the captive portal kinds as data and request handling (no HTTP server), read by the Lab modules and Portals.
    # PortalHelper, VoucherHelper, CaptiveAPIHelper: the reference helpers' logic, shared by each helper's
    # main.swift and its provider pair (Sources/providers); they use the SDK and ReferenceHelperSupport only.
    ("station, portal kinds", ["HotspotStation", "PortalKinds", "PortalHelper", "VoucherHelper", "CaptiveAPIHelper"]),
    # The lab's modules (docs/ARCHITECTURE.md, "The lab's modules"), lowest first: each may use only those below it.
    # LabTopology: a topology file read and checked; LabVM: the VM runner; LabSandbox: a sealed lab's kernel objects,
    # processes and state; Portals: the portal server around PortalKinds; PortalNetlink: a portal server's gate sets and
    # neighbour tables over netlink (hotspot-portal's process, or the lab runner's thread in a hotspot's namespace).
    ("lab: topology, VM, sandbox, portal server", ["LabTopology", "LabVM", "LabSandbox", "Portals", "PortalNetlink"]),
    # LabScenarioModel: a scenario file read and checked, one file per step kind (what it reads, and what it asks of a
    # StepContext); nothing in it runs a lab, so the scenario parser's fuzzing builds it without LabServices.
    ("lab services, scenario model", ["LabServices", "LabScenarioModel"]),
    ("lab scenarios", ["LabScenarios"]),
    ("certify, replay", ["LabCertify", "LabReplay"]),
    ("lab reports", ["LabReports"]),
    # LabKit: the lab as one import (re-exports every Lab module) and `doctor`.
    ("lab", ["LabKit"]),
    ("benchmarks", ["HotspotBench"]),
    ("test support", ["TestSupport"]),
]
EXECUTABLES = "programs"  # every executable target: above every library
PLUGINS = "build plugins"  # every plugin target: above the programs it runs
TESTS = "tests"  # every test target: above everything (a test may use a program's module)

# What runs at build time, before any library of the package exists: a build-tool plugin, the program it runs and
# that program's library. They depend only on one another (and the toolchain), and no library or program of the
# package depends on them (a target applies a plugin, `plugins:` in Package.swift, which is no dependency).
BUILD_TOOLS = ["StepRegistryScanner", "step-registry-tool", "StepRegistryPlugin"]

# (target, must not reach, why, pending): checked through the whole dependency closure.
# pending: the rule is the goal but not yet true on main; say what makes it true.
FORBIDDEN = [
    ("LabKit", "HotspotDaemon", "the lab talks to hotspotd over its sockets; it does not link the daemon", None),
    ("LabKit", "HotspotStation", "the lab drives a station's hotspotd as a process, not as a library", None),
] + [
    (portal, t, "a captive portal is the world outside the device: it knows nothing of the subsystem", None)
    for portal in ["Portals", "PortalKinds"]
    for t in ["HotspotCore", "HotspotProtocol", "HotspotSystem", "HotspotDaemon", "HotspotStation", "HotspotHelper"]
]

# Targets that may use no package from outside this repository: the subsystem and its SDK stay
# installable with the system toolchain and libraries alone.
PURE_SUBSYSTEM = ["HotspotCore", "HotspotProtocol", "HotspotSystem", "HotspotDaemon", "HotspotStation",
                  "HotspotHelper", "NEHotspotHelperCompat", "Netlink"]

# Targets whose sources may import only what is listed (no Foundation, no Glibc): pure code, no I/O.
PURE_IMPORTS = {"HotspotCore": set(), "HotspotProtocol": {"HotspotCore"}, "StepRegistryScanner": set()}

BEGIN, END = "<!-- imports:begin -->", "<!-- imports:end -->"
KIND = {"regular": "library", "executable": "program", "test": "test", "system": "system library",
        "macro": "macro", "plugin": "plugin"}


def load_package(path):
    if path:
        with open(path) as f:
            return json.load(f)
    try:
        out = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("architecture check: cannot run `swift package dump-package`: swift is not on PATH")
    except subprocess.CalledProcessError as e:
        sys.exit(f"architecture check: `swift package dump-package` exited {e.returncode}: {e.stderr.strip()}")
    return json.loads(out)


def graph(package):
    """name -> {type, deps (targets of this package), products (external), path}"""
    targets = {}
    for t in package["targets"]:
        deps, products = [], []
        for d in t.get("dependencies", []):
            (how, value), = d.items()
            if how in ("byName", "target"):
                deps.append(value[0])
            elif how == "product":
                products.append(value[0] + (f" ({value[1]})" if value[1] else ""))
        default = {"test": "Tests", "plugin": "Plugins"}.get(t["type"], "Sources")
        plugins = [u["plugin"][0] for u in t.get("pluginUsages") or [] if "plugin" in u]
        targets[t["name"]] = {"type": t["type"], "deps": deps, "products": products,
                              "path": t.get("path") or os.path.join(default, t["name"]),
                              "exclude": t.get("exclude", []), "plugins": plugins}
    # byName may name a product of a package rather than a target: treat it as external.
    for t in targets.values():
        t["products"] += [d for d in t["deps"] if d not in targets]
        t["deps"] = [d for d in t["deps"] if d in targets]
    return targets


def layer_of(name, info):
    if info["type"] == "test":
        return len(LAYERS) + 2, TESTS
    if info["type"] == "plugin":
        return len(LAYERS) + 1, PLUGINS
    if info["type"] == "executable":
        return len(LAYERS), EXECUTABLES
    for rank, (label, names) in enumerate(LAYERS):
        if name in names:
            return rank, label
    return None, None


def table(targets):
    lines = [BEGIN,
             "<!-- Generated by `ci/check-architecture.py --write` from `swift package dump-package`; "
             "ci/test.sh fails when it differs from Package.swift. -->",
             "",
             "| target | kind | layer | depends on (targets of this package) | packages |",
             "|---|---|---|---|---|"]
    order = sorted(targets, key=lambda n: (layer_of(n, targets[n])[0] if layer_of(n, targets[n])[0] is not None
                                           else 99, list(targets).index(n)))
    for name in order:
        t = targets[name]
        rank, label = layer_of(name, t)
        where = f"{rank} {label}" if rank is not None else "(none)"
        deps = ", ".join(f"`{d}`" for d in sorted(t["deps"])) or "-"
        products = ", ".join(sorted(t["products"])) or "-"
        lines.append(f"| `{name}` | {KIND.get(t['type'], t['type'])} | {where} | {deps} | {products} |")
    lines.append(END)
    return "\n".join(lines)


def read_doc(path):
    with open(path) as f:
        text = f.read()
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < 0 or e < b:
        sys.exit(f"architecture check: {os.path.relpath(path, ROOT)} has no {BEGIN} ... {END} section")
    return text, b, e + len(END)


def parse_table(section):
    """The table as the document has it: name -> (set of deps, set of packages)."""
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        rows[cells[0].strip("`")] = (set(re.findall(r"`([^`]+)`", cells[3])),
                                     set() if cells[4] == "-" else {p.strip() for p in cells[4].split(", ")})
    return rows


def compare_table(doc_rows, targets, docname):
    problems = []
    for name, t in targets.items():
        if name not in doc_rows:
            problems.append(f"{docname}: target {name} is in Package.swift but not in the imports table")
            continue
        deps, products = doc_rows[name]
        for d in sorted(set(t["deps"]) - deps):
            problems.append(f"{docname}: edge {name} -> {d} is in Package.swift but not in the imports table")
        for d in sorted(deps - set(t["deps"])):
            problems.append(f"{docname}: edge {name} -> {d} is in the imports table but not in Package.swift")
        for p in sorted(set(t["products"]) ^ products):
            side = "Package.swift" if p in t["products"] else "the imports table"
            problems.append(f"{docname}: {name} uses package product {p} only in {side}")
    for name in sorted(set(doc_rows) - set(targets)):
        problems.append(f"{docname}: target {name} is in the imports table but not in Package.swift")
    return problems


def closure_path(targets, start, goal):
    """A dependency path start -> ... -> goal, or None."""
    seen, stack = {start}, [[start]]
    while stack:
        path = stack.pop()
        for d in targets[path[-1]]["deps"]:
            if d == goal:
                return path + [d]
            if d not in seen:
                seen.add(d)
                stack.append(path + [d])
    return None


def closure(targets, start):
    """Every target start depends on, directly or through others."""
    seen, stack = set(), list(targets[start]["deps"])
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(targets[d]["deps"])
    return seen


IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?(\w+)")


def source_imports(path, exclude=()):
    """(file, line number, module) for every import in the Swift files under path (less the target's `exclude`)."""
    found = []
    skipped = [os.path.join(ROOT, path, e) for e in exclude]
    for dirpath, dirs, files in os.walk(os.path.join(ROOT, path)):
        dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in skipped]
        files = [fn for fn in files if os.path.join(dirpath, fn) not in skipped]
        for fn in sorted(files):
            if not fn.endswith(".swift"):
                continue
            full = os.path.join(dirpath, fn)
            with open(full, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = IMPORT.match(line)
                    if m:
                        found.append((os.path.relpath(full, ROOT), n, m.group(1)))
    return found


def check_rules(targets, allowed):
    problems, warnings = [], []

    def report(edge, message):
        (warnings if edge in allowed else problems).append(message + ("  [allowed for now by --allow]" if edge in allowed else ""))

    for name, t in targets.items():
        rank, label = layer_of(name, t)
        if rank is None:
            problems.append(f"target {name} has no layer: add it to LAYERS in ci/check-architecture.py "
                            "(the lowest layer above everything it depends on), then run it with --write")
            continue
        for d in t["deps"]:
            drank, dlabel = layer_of(d, targets[d])
            if drank is not None and drank >= rank:
                report((name, d), f"edge {name} -> {d} points {'up' if drank > rank else 'sideways'} a layer: "
                                  f"{name} is in layer {rank} ({label}), {d} in layer {drank} ({dlabel})")
        if name in PURE_SUBSYSTEM and t["products"]:
            problems.append(f"target {name} uses {', '.join(t['products'])}: the subsystem and its SDK use no "
                            "package from outside this repository")
    for name, t in targets.items():
        if name in BUILD_TOOLS:
            for d in sorted(closure(targets, name) - set(BUILD_TOOLS)):
                problems.append(f"build tool {name} reaches {d}: a build tool runs before the package's libraries are "
                                "built, so it depends only on the other BUILD_TOOLS")
        elif t["type"] != "test":
            for d in sorted(set(t["deps"]) & set(BUILD_TOOLS)):
                problems.append(f"edge {name} -> {d}: only build tools (and tests) depend on the build tools; "
                                "a target uses a build-tool plugin with `plugins:`")
        for p in t["plugins"]:
            if p not in targets or targets[p]["type"] != "plugin":
                problems.append(f"target {name} applies plugin {p}, which is not a plugin target of this package")
            elif p not in BUILD_TOOLS:
                problems.append(f"target {name} applies plugin {p}, which is not in BUILD_TOOLS")
    for name, goal, why, pending in FORBIDDEN:
        if name not in targets or goal not in targets:
            continue
        path = closure_path(targets, name, goal)
        if path:
            via = "" if len(path) == 2 else " (through " + " -> ".join(path) + ")"
            note = f"; expected until merged: {pending}" if pending else ""
            report((name, goal), f"edge {name} -> {goal}{via} is forbidden: {why}{note}")
    for name, t in targets.items():
        if t["type"] == "system":
            continue
        allowed_imports = PURE_IMPORTS.get(name)
        reachable = closure(targets, name)
        for file, line, module in source_imports(t["path"], t["exclude"]):
            if module in targets and module != name and module not in reachable:
                report((name, module), f"{file}:{line}: {name} imports {module}, which is not among its "
                                       "dependencies in Package.swift (direct or through other targets)")
            elif allowed_imports is not None and module not in allowed_imports:
                only = ("imports nothing" if not allowed_imports
                        else "imports only " + ", ".join(sorted(allowed_imports)))
                problems.append(f"{file}:{line}: {name} imports {module}; {name} is pure: it {only} (PURE_IMPORTS)")
    return problems, warnings


# Signal dispositions have one owner (issue 24/27): HotspotSystem's SignalService. No other Swift source sets an
# action, waits for a signal or makes a dispatch signal source (`child.signal(SIGTERM)`, one argument, sends one: allowed).
SIGNAL_OWNER = "Sources/HotspotSystem/SignalService.swift"
SIGNAL_CALLS = re.compile(r"(?<![.\w])(sigaction|sigwait|sigwaitinfo|signalfd)\s*\(|(?<![.\w])signal\s*\(\s*\w+\s*,|makeSignalSource")


def check_signal_owner():
    problems = []
    for base, _, files in os.walk(os.path.join(ROOT, "Sources")):
        for f in sorted(files):
            path = os.path.join(base, f)
            rel = os.path.relpath(path, ROOT)
            if not f.endswith(".swift") or rel == SIGNAL_OWNER:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    code = line.split("//", 1)[0]
                    if SIGNAL_CALLS.search(code):
                        problems.append(f"{rel}:{number}: sets or waits for a signal itself; use SignalService "
                                        f"({SIGNAL_OWNER}), the one owner of signal dispositions")
    return problems


# System calls and threads have one home (issue 24): HotspotSystem (and Netlink, the kernel's sockets). No other Swift
# source under Sources/ or portals/ spawns or reaps a process, starts a raw thread or takes an NSLock: use
# ChildProcess, SystemThread, and HotspotSystem's Mutex/Locked or Synchronization.Mutex.
SYSTEM_HOMES = ("Sources/HotspotSystem/", "Sources/Netlink/")
SYSTEM_CALLS = re.compile(r"(?<![.\w])(posix_spawnp?|posix_spawn_file_actions_\w+|waitpid|wait4|waitid|fork|vfork|execvp?e?|execl[pe]?"
                          r"|pthread_create|pthread_cond_timedwait|sigprocmask|pthread_sigmask)\s*\(|(?<![.\w])(NSLock|NSRecursiveLock|NSCondition)\b")
# Files not yet moved to the one layer, each with what it still does. The check fails on any other file, so the
# list only shrinks; it is empty now (issue 24): keep it so.
SYSTEM_CALLS_PENDING: dict[str, str] = {}

# One concurrency layer (issue 24): outside HotspotSystem and Netlink no Swift source starts a Foundation thread
# (`Thread { }`, `Thread(block:)`, `Thread.detachNewThread`) or declares `nonisolated(unsafe)` state. Use SystemThread
# (start, detach, runAsync), state owned by a lock (HotspotSystem's Locked, Synchronization's Mutex or Atomic), a
# `let` for what never changes after start, and OneShot to wait for a value another thread gives.
THREAD_CALLS = re.compile(r"(?<![.\w])(?:Foundation\.)?(Thread)(?:\.detachNewThread\b|\s*[({])|(nonisolated\s*\(\s*unsafe\s*\))")
# Path prefixes (a file, or the start of paths) the rule does not hold for yet, each with why. Their lines are
# reported as warnings. Remove an entry when its last use is gone; add none without a reason.
THREAD_CALLS_ALLOWED: dict[str, str] = {
    # The portals' HTTP server (an accept loop, a thread per connection, plain or TLS) stands for a café's web server:
    # Portals may not reach HotspotSystem (FORBIDDEN, "a captive portal ... knows nothing of the subsystem"), so
    # SystemThread is not available to it and Foundation's Thread is its thread.
    "portals/Server/HTTPServer.swift": "Portals may not reach HotspotSystem (FORBIDDEN), so it has no SystemThread",
}

# Modules internal to another package (not products it offers): importing one couples us to its private layout.
# (file, module): why it is still needed.
INTERNAL_MODULES = {"CYaml": "Yams", "CNIOLinux": "swift-nio", "_NIOBase64": "swift-nio"}
INTERNAL_IMPORTS_ALLOWED = {
    ("Sources/LabTopology/LabYAML.swift", "CYaml"):
        "LabYAML scans libyaml's events to refuse anchors and aliases before anything is composed (Yams's public "
        "Parser composes, expanding aliases: the exponential blow-up it must refuse); Yams offers no public event API",
}


def swift_sources(*roots):
    for root in roots:
        for base, _, files in os.walk(os.path.join(ROOT, root)):
            for f in sorted(files):
                if f.endswith(".swift"):
                    path = os.path.join(base, f)
                    yield os.path.relpath(path, ROOT), path


def check_system_calls():
    problems, warnings = [], []
    for rel, path in swift_sources("Sources", "portals"):
        if rel.startswith(SYSTEM_HOMES):
            continue
        allowed = next((why for prefix, why in THREAD_CALLS_ALLOWED.items() if rel.startswith(prefix)), None)
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                code = line.split("//", 1)[0]
                m = SYSTEM_CALLS.search(code)
                if m:
                    what = m.group(1) or m.group(2)
                    message = (f"{rel}:{number}: {what} outside HotspotSystem/Netlink; use ChildProcess (spawn, reap), "
                               "SystemThread (threads), Locked/Mutex or Synchronization.Mutex (locks)")
                    if rel in SYSTEM_CALLS_PENDING:
                        warnings.append(message + f"  [pending: {SYSTEM_CALLS_PENDING[rel]}]")
                    else:
                        problems.append(message)
                m = THREAD_CALLS.search(code)
                if m:
                    if m.group(1):
                        message = (f"{rel}:{number}: a Foundation Thread outside HotspotSystem/Netlink; use SystemThread "
                                   "(start, detach, runAsync)")
                    else:
                        message = (f"{rel}:{number}: nonisolated(unsafe) outside HotspotSystem/Netlink; give the state to a "
                                   "lock (Locked, Synchronization.Mutex or Atomic), make it a let, or wait with OneShot")
                    if allowed is not None:
                        warnings.append(message + f"  [allowed for now: {allowed}]")
                    else:
                        problems.append(message)
    for rel, path in swift_sources("Sources", "portals", "Tests"):
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                m = IMPORT.match(line)
                if m and m.group(1) in INTERNAL_MODULES and (rel, m.group(1)) not in INTERNAL_IMPORTS_ALLOWED:
                    problems.append(f"{rel}:{number}: imports {m.group(1)}, a module internal to {INTERNAL_MODULES[m.group(1)]}; "
                                    "use the package's products only")
    return problems, warnings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="regenerate the imports table in the document")
    ap.add_argument("--allow", action="append", default=[], metavar="A->B",
                    help="report this edge as a warning instead of a failure (repeatable)")
    ap.add_argument("--package-json", help="read `swift package dump-package` output from this file")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/ARCHITECTURE.md"))
    args = ap.parse_args()
    allowed = set()
    for a in args.allow:
        if "->" not in a:
            sys.exit(f"architecture check: --allow {a!r}: expected TARGET->TARGET")
        src, dst = (s.strip() for s in a.split("->", 1))
        allowed.add((src, dst))

    targets = graph(load_package(args.package_json))
    docname = os.path.relpath(os.path.abspath(args.doc), ROOT)
    text, b, e = read_doc(args.doc)
    generated = table(targets)
    problems = []
    if args.write:
        if text[b:e] != generated:
            with open(args.doc, "w") as f:
                f.write(text[:b] + generated + text[e:])
            print(f"architecture check: wrote the imports table of {docname}")
    elif text[b:e] != generated:
        problems = compare_table(parse_table(text[b:e]), targets, docname)
        if not problems:
            problems.append(f"{docname}: the imports table's text differs from the generated one (a layer, a kind "
                            "or the order): run ci/check-architecture.py --write")
    rule_problems, warnings = check_rules(targets, allowed)
    call_problems, call_warnings = check_system_calls()
    problems += rule_problems + check_signal_owner() + call_problems
    warnings += call_warnings
    for w in warnings:
        print("architecture check WARNING: " + w, file=sys.stderr)
    for p in problems:
        print("architecture check FAILED: " + p, file=sys.stderr)
    sys.stderr.flush()
    print(f"architecture check: {len(targets)} targets, "
          + ("ok" if not problems else f"{len(problems)} problem(s)")
          + (f", {len(warnings)} allowed for now" if warnings else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
