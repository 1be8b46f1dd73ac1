#!/usr/bin/env python3
"""Checks README.md's "Where things are" table against the package's targets.

Every target of Package.swift (from `swift package dump-package`) must lie under a path of the table's first column
(a row's backticked paths; `*` matches one path component, as in `Sources/helpers/*`), and every path the table
names must exist. A new target therefore fails CI until the README says where it is and what it is.

Usage:
  ci/check-readme-targets.py [--package-json FILE] [--readme FILE]
Standard library only.
"""
import argparse, fnmatch, glob, importlib.util, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = "## Where things are"
DEFAULT_FOLDER = {"regular": "Sources", "executable": "Sources", "system": "Sources", "macro": "Sources",
                  "test": "Tests", "plugin": "Plugins"}


def load_package(path):
    """The package as `swift package dump-package` gives it: check-architecture.py's reader, written once."""
    spec = importlib.util.spec_from_file_location("check_architecture", os.path.join(ROOT, "ci", "check-architecture.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_package(path)


def table_paths(readme):
    """(line number, path) for every backticked path in the first column of the section's table."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = lines.index(HEADING)
    except ValueError:
        sys.exit(f"readme check: {os.path.relpath(readme, ROOT)} has no `{HEADING}` section")
    found = []
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        if not line.startswith("| ") or line.startswith("| path") or line.startswith("|---"):
            continue
        first = line.split("|")[1]
        found += [(number, p.rstrip("/")) for p in re.findall(r"`([^`]+)`", first)]
    return found


def covered(path, patterns):
    parts = path.split("/")
    for pattern in patterns:
        pp = pattern.split("/")
        if len(pp) <= len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pp)):
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package-json", help="read `swift package dump-package` output from this file")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    args = ap.parse_args()
    package = load_package(args.package_json)
    rows = table_paths(args.readme)
    patterns = [p for _, p in rows]
    problems = []
    for number, p in rows:
        if not glob.glob(os.path.join(ROOT, p)):
            problems.append(f"README.md:{number}: `{p}` is in the table but not in the repository")
    for t in package["targets"]:
        path = t.get("path") or f"{DEFAULT_FOLDER.get(t['type'], 'Sources')}/{t['name']}"
        if not covered(path.rstrip("/"), patterns):
            problems.append(f"target {t['name']} ({path}) is not in README.md's \"Where things are\" table: "
                            "add a row that names its folder and what it is")
    for p in problems:
        print("readme check FAILED: " + p, file=sys.stderr)
    print(f"readme check: {len(package['targets'])} targets, {len(rows)} paths in the table, "
          + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
