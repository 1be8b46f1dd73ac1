#!/usr/bin/env python3
"""Writes the seed corpora under Tests/Fuzz/corpus/ from the project's own files: the topologies and scenarios in
topologies/, and the protocol messages shown in docs/PROTOCOL.md (plus a few control requests). Run it again when
those change; libFuzzer adds what it finds to a scratch copy, never here (ci/fuzz.sh)."""
import json, pathlib, re, shutil, struct

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "Tests/Fuzz/corpus"

def fresh(name):
    """Empties the target's folder except the inputs fuzzing found (found-*): those stay as regression seeds."""
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if not f.name.startswith("found-"):
            f.unlink()
    return d

# JSON: every complete JSON object of docs/PROTOCOL.md's ```json blocks (one per line, or continued lines).
doc = (root / "docs/PROTOCOL.md").read_text()
messages = []
for block in re.findall(r"```json\n(.*?)```", doc, re.S):
    pending = ""
    for line in block.splitlines():
        pending = (pending + " " + line.strip()) if pending else line.strip()
        try:
            messages.append(json.loads(pending))
            pending = ""
        except json.JSONDecodeError:
            if not pending.startswith("{"):
                pending = ""
messages += [
    {"type": "status"}, {"type": "subscribeTrace"}, {"type": "leave"}, {"type": "autoJoin"},
    {"type": "associate", "network": {"ssid": "Cafe", "bssid": "02:00:00:00:00:01", "security": "open"}},
    {"type": "showScanList", "networks": [{"ssid": "Cafe", "bssid": "02:00:00:00:00:01", "signalStrength": 0.5}]},
    {"type": "join", "ssid": "Cafe", "password": "secret"}, {"type": "signal", "strength": 0.25},
    {"type": "associate", "network": {"ssid": "Caf\ufffd", "ssid_hex": "436166e9", "bssid": "02:00:00:00:00:01"}},
    {"type": "join", "ssid_hex": "43616665004c756d69657265"},
    {"type": "record", "note": {"step": "x", "list": [1, -2.5e-3, True, None, "\u00e9\n"]}},
]
texts = [json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode() for m in messages]

d = fresh("json-parser")
for k, t in enumerate(texts):
    (d / f"message-{k:02}.json").write_bytes(t)

# Frames: byte 0 = append size - 1, byte 1 = limit choice (low nibble, 0: the protocol's limit) and repeat flag (high
# nibble 15: the rest 40 times), then framed messages.
d = fresh("frame-decoder")
def framed(ts):
    return b"".join(struct.pack(">I", len(t)) + t for t in ts)
for k, t in enumerate(texts):
    (d / f"frame-{k:02}.bin").write_bytes(bytes([255, 0]) + framed([t]))
(d / "frames-all-split-7.bin").write_bytes(bytes([6, 0]) + framed(texts))
(d / "frame-over-limit.bin").write_bytes(bytes([0, 3]) + framed([texts[0]]))
(d / "frames-repeated-past-64k.bin").write_bytes(bytes([200, 0xF0]) + framed(texts[:8]))
(d / "frame-partial.bin").write_bytes(bytes([2, 0]) + framed([texts[0]])[:-5])

for name, folder, pattern in [("topology", "topologies", "*.yaml"), ("scenario", "topologies/scenarios", "*.yaml")]:
    d = fresh(name)
    for f in sorted((root / folder).glob(pattern)):
        shutil.copy(f, d / f.name)
# Dictionaries (libFuzzer -dict): the keys and the values written after them in the lab's own files, so mutations
# spell the schema's words instead of guessing them byte by byte.
for name, folder in [("topology", "topologies"), ("scenario", "topologies/scenarios")]:
    words = set()
    for f in (root / folder).glob("*.yaml"):
        for line in f.read_text().splitlines():
            m = re.match(r"^\s*(?:-\s+)?([A-Za-z0-9_-]+):(?:\s+([A-Za-z0-9_.:/-]+))?\s*(?:#.*)?$", line)
            if m:
                words.add(m.group(1) + ":")
                if m.group(2):
                    words.add(m.group(2))
    words |= {"- ", ": ", "{", "}", "[", "]", "&a", "*a", "<<: ", "!!str", "---", "...", "|", ">", "'", '"', "\t", "\n"}
    lines = ["# Written by make-corpus.py from " + folder + "/*.yaml."]
    for w in sorted(words):
        lines.append('"' + w.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\x09").replace("\n", "\\x0A") + '"')
    (root / "Tests/Fuzz" / (name + ".dict")).write_text("\n".join(lines) + "\n")
for name in sorted(p.name for p in out.iterdir()):
    print(name, len(list((out / name).iterdir())), "files")
