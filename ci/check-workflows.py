#!/usr/bin/env python3
"""Runs the vendor CI templates here, as far as this machine allows.

The GitHub workflow's `run:` steps are executed in order as one bash script, with the workflow's env
(HOTSPOT_LAB_DIR is this checkout; HELPER_CMD certifies our reference helper; HELPER_BUILD is `true`:
HotspotLab's own build step builds it). The GitLab job must run the same commands in the same order.
Then the artifacts the workflow keeps must exist: a JUnit report with one test case per check, none
failed, and the HTML report. Exit status 0 only when all of that holds.
"""
import os, subprocess, sys, tempfile, xml.etree.ElementTree as ET
import yaml

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
github = yaml.safe_load(open(os.path.join(root, "ci/github/hotspot-certify.yml")))
gitlab = yaml.safe_load(open(os.path.join(root, "ci/gitlab/hotspot-certify.gitlab-ci.yml")))

steps = github["jobs"]["certify"]["steps"]
runs = [s["run"].strip() for s in steps if "run" in s]
uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
problems = []
if uses != ["actions/checkout", "actions/checkout", "actions/upload-artifact"]:
    problems.append(f"github: expected two checkouts then upload-artifact, found {uses}")
if [r.strip() for r in gitlab["hotspot-certify"]["script"]] != runs:
    problems.append("gitlab: its script is not the GitHub workflow's run steps in the same order")
if gitlab["hotspot-certify"]["variables"] != github["env"]:
    problems.append("gitlab: its variables differ from the GitHub workflow's env")

# Not under /tmp: the VM sees the host's folders except /tmp and /run (fresh there), and the lab runs in it.
os.makedirs(os.path.join(root, ".build-workflow-check"), exist_ok=True)
work = tempfile.mkdtemp(prefix="run-", dir=os.path.join(root, ".build-workflow-check"))
env = dict(os.environ)
env.update({k: str(v) for k, v in github["env"].items()})
env["HOTSPOT_LAB_DIR"] = root
env["HELPER_BUILD"] = "true"
env["HELPER_CMD"] = 'hotspot-helper-portal --account guest:croissant --network "Cafe Lumiere"'
script = "set -euo pipefail\n" + "\n".join(runs) + "\n"
print(f"workflow: running {len(runs)} steps in {work}", flush=True)
result = subprocess.run(["bash", "-c", script], cwd=work, env=env)
if result.returncode != 0:
    problems.append(f"the workflow's steps exited {result.returncode}")
junit = os.path.join(work, "reports/certify.xml")
html = os.path.join(work, "reports/certify.html")
if not os.path.exists(junit) or not os.path.exists(html):
    problems.append("the workflow's artifacts reports/certify.xml and reports/certify.html were not written")
else:
    cases = ET.parse(junit).getroot().findall(".//testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    if len(cases) < 11 or failed:
        problems.append(f"certify.xml: {len(cases)} checks, failed: {failed}")
    if "CERTIFIED" not in open(html).read():
        problems.append("certify.html does not say CERTIFIED")
for p in problems:
    print("workflow check FAILED: " + p, file=sys.stderr)
print("workflow check: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
sys.exit(1 if problems else 0)
