#!/usr/bin/env python3
"""hotspotd's start on a large state file (issue 27): the time from spawn until `status` is answered, for
state files of N cache entries, with one or more hotspotd binaries run in turn (so a ratio comes from one run on
one machine, whatever its load). Usage: bench/state-load.py [--runs K] [--entries N ...] NAME=HOTSPOTD ...
Prints the median and minimum per binary and entry count, and the ratio of each binary's median to the first's."""
import argparse, json, os, shutil, socket, statistics, struct, subprocess, sys, tempfile, time

def state_file(entries):
    items = ",".join('{"ssid":"Network-%06d","security":"open","helper":"com.example.helper"}' % i for i in range(entries))
    return ('{"version":1,"cache":[%s],"autoJoinDisabled":[]}\n' % items).encode()

def status(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    body = json.dumps({"type": "status"}).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk: raise OSError("closed")
        head += chunk
    n = struct.unpack(">I", head)[0]
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk: raise OSError("closed")
        data += chunk
    s.close()
    return json.loads(data)

def one(binary, content):
    d = tempfile.mkdtemp(prefix="hsl-stateload-")
    try:
        with open(d + "/state.json", "wb") as f: f.write(content)
        start = time.monotonic()
        p = subprocess.Popen([binary, "--run-dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                try:
                    s = status(d + "/control.sock")
                    took = time.monotonic() - start
                    return took, len(s.get("cache", []))
                except OSError:
                    if p.poll() is not None: raise RuntimeError("hotspotd exited %s" % p.returncode)
                    time.sleep(0.002)
        finally:
            p.terminate(); p.wait()
    finally:
        shutil.rmtree(d, ignore_errors=True)

def main():
    a = argparse.ArgumentParser()
    a.add_argument("--runs", type=int, default=7)
    a.add_argument("--entries", type=int, nargs="+", default=[26000, 128000])
    a.add_argument("binaries", nargs="+")
    o = a.parse_args()
    named = [b.split("=", 1) for b in o.binaries]
    for entries in o.entries:
        content = state_file(entries)
        times = {name: [] for name, _ in named}
        kept = {}
        for _ in range(o.runs):
            for name, binary in named:  # interleaved: the same load for each
                t, k = one(binary, content)
                times[name].append(t); kept[name] = k
        base = statistics.median(times[named[0][0]])
        for name, _ in named:
            m = statistics.median(times[name])
            print("%7d entries (%.1f MB) %-8s median %.3f s  min %.3f s  cache kept %d  ratio to %s %.2f"
                  % (entries, len(content) / 1e6, name, m, min(times[name]), kept[name], named[0][0], m / base))
    print("load average: %s" % open("/proc/loadavg").read().split()[0])

main()
