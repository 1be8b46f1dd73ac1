#!/usr/bin/env python3
"""A second hotspot helper, in Python with the standard library only: it speaks hotspotd's helper
protocol (docs/PROTOCOL.md) directly, to prove the protocol is language-neutral.

Its behaviour is scripted by arguments, the same ones as the Swift `hotspot-test-helper`:
  --socket PATH --id IDENTIFIER --name DISPLAYNAME
  --evaluate high|low|none|never|crash
  --authenticate success|uiRequired|unsupportedNetwork|temporaryFailure|failure|never|crash
  --present-ui RESULT  --maintain RESULT  --logoff RESULT
  --filter claim|none   (claim: every listed network, password "secret" for secure ones)
  --delay-ms N          (wait before each answer)
  --evaluate-after-file PATH  (answer evaluate only once PATH exists: a test orders two helpers' answers by a
                        condition it sets, not by a delay a loaded machine can undo)
  --logoff-after-auth-ms N  (N ms after answering authenticate with success, call logoff(network))
  --deliver-twice yes   (deliver every response a second time: like the SDK, the second is refused here and
                        reported to hotspotd with a `report` message of kind secondDelivery)
Provider mode (issue 15, docs/PROTOCOL.md "Apps and providers"):
  --role helper|evaluationProvider|authenticationProvider  (default: $HOTSPOT_PROVIDER_ROLE, else helper)
  --app BUNDLE-ID       (default: $HOTSPOT_APP)
  --start ok|fail|never (the answer to `start`)
  --probe-network HOST:PORT  (on `start`, try a TCP connection and report the outcome on stdout)
A provider answers `start` with `started`, and `stop` with `stopped`, then exits.
--id defaults to $HOTSPOT_HELPER_IDENTIFIER.
Results are names (success, failure, uiRequired, ...) or "never" (do not answer) or "crash" (exit at once).
It prints one line per received message to stdout (for debugging) and exits when the daemon closes.
"""
import argparse
import json
import os
import socket
import struct
import sys
import time

RESULTS = {"success": 0, "failure": 1, "uiRequired": 2, "commandNotRecognized": 3,
           "authenticationRequired": 4, "unsupportedNetwork": 5, "temporaryFailure": 6}
CONFIDENCE = {"none": 0, "low": 1, "high": 2}
MAX_FRAME = 65536
VERSION = 1


class Connection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, obj):
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def receive(self):
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if n > MAX_FRAME:
                    raise ValueError("frame of %d bytes exceeds the limit" % n)
                if len(self.buf) >= 4 + n:
                    payload, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return json.loads(payload.decode("utf-8"))
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def report(self, kind, command, message):
        """Tells hotspotd what this side refused (nothing else was sent for it); traced as helperReport."""
        obj = {"type": "report", "kind": kind, "message": message}
        if command is not None:
            obj["command"] = command
        self.send(obj)
        print("report", kind, message, file=sys.stderr, flush=True)


class Delivery:
    """One response, delivered at most once, as the SDK's deliver(): a second call sends nothing and is reported."""

    def __init__(self, conn, response):
        self.conn = conn
        self.response = response
        self.delivered = False

    def deliver(self):
        if self.delivered:
            cid = self.response["command"]
            self.conn.report("secondDelivery", cid, "deliver() called a second time for command %d: ignored" % cid)
            return False
        self.delivered = True
        self.conn.send(self.response)
        return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--socket", default=os.environ.get("HOTSPOT_HELPER_SOCKET", "/run/hotspotd/helper.sock"))
    p.add_argument("--id", default=os.environ.get("HOTSPOT_HELPER_IDENTIFIER"))
    p.add_argument("--name", default="Python")
    p.add_argument("--role", default=os.environ.get("HOTSPOT_PROVIDER_ROLE", "helper"))
    p.add_argument("--app", default=os.environ.get("HOTSPOT_APP"))
    p.add_argument("--start", default="ok")
    p.add_argument("--probe-network", default=None)
    p.add_argument("--evaluate", default="high")
    p.add_argument("--authenticate", default="success")
    p.add_argument("--present-ui", default="success")
    p.add_argument("--maintain", default="success")
    p.add_argument("--logoff", default="success")
    p.add_argument("--filter", default="claim")
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--evaluate-after-file", default="")
    p.add_argument("--logoff-after-auth-ms", type=int, default=-1)
    p.add_argument("--deliver-twice", default="no")
    a = p.parse_args()
    if not a.id:
        p.error("--id is required (or $HOTSPOT_HELPER_IDENTIFIER)")

    def respond(response):
        d = Delivery(conn, response)
        d.deliver()
        if a.deliver_twice == "yes":
            print("second deliver() returned", d.deliver(), file=sys.stderr, flush=True)

    conn = Connection(a.socket)
    register = {"type": "register", "version": VERSION, "identifier": a.id, "displayName": a.name}
    if a.role != "helper":
        register["role"] = a.role
        register["app"] = a.app
    conn.send(register)
    reply = conn.receive()
    print("reply", json.dumps(reply), flush=True)
    if reply is None or reply.get("type") != "registered":
        sys.exit(2)

    plan = {"authenticate": a.authenticate, "presentUI": a.present_ui, "maintain": a.maintain, "logoff": a.logoff}
    pending_logoff_at = None
    request_id = 0
    backlog = []  # messages read while waiting for a reply, handled next
    while True:
        if pending_logoff_at is not None:
            conn.sock.settimeout(max(0.0, pending_logoff_at - time.monotonic()))
        else:
            conn.sock.settimeout(None)
        try:
            msg = backlog.pop(0) if backlog else conn.receive()
        except socket.timeout:
            msg = "timeout"
        if msg is None:
            return
        if msg == "timeout":
            pending_logoff_at = None
            # Blocking again: the reply may take a while on a loaded machine, and with the logoff's timeout (about 0 s
            # by now) still set, the read below raised socket.timeout and the helper died before calling logoff
            # (CI run 120).
            conn.sock.settimeout(None)
            request_id += 1
            conn.send({"type": "supportedNetworkInterfaces", "requestID": request_id})
            # Replies come in order, but a command may arrive first: keep reading until ours, and handle what came
            # before it afterwards (it was dropped, so such a command went unanswered).
            while True:
                m = conn.receive()
                if m is None:
                    return
                if m.get("type") == "interfaces":
                    break
                backlog.append(m)
            networks = m.get("networks", [])
            if networks:
                request_id += 1
                conn.send({"type": "logoff", "requestID": request_id, "network": networks[0]})
            continue
        print("got", json.dumps(msg), flush=True)
        if msg.get("type") == "start":
            if a.probe_network:
                host, port = a.probe_network.rsplit(":", 1)
                try:
                    socket.create_connection((host, int(port)), timeout=2).close()
                    print("probe connected", flush=True)
                except OSError as e:
                    print("probe failed", e.errno, e.strerror, flush=True)
            if a.start != "never":
                conn.send({"type": "started", "ok": a.start == "ok"})
            continue
        if msg.get("type") == "stop":
            conn.send({"type": "stopped"})
            return
        if msg.get("type") != "command":
            continue
        name = msg["commandName"]
        cid = msg["id"]
        if name == "filterScanList":
            if a.filter == "never":
                continue
            claimed = []
            if a.filter == "claim":
                for n in msg.get("networkList", []):
                    if n.get("isSecure"):
                        n["password"] = "secret"
                    claimed.append(n)
            time.sleep(a.delay_ms / 1000.0)
            respond({"type": "response", "command": cid, "result": 0, "networkList": claimed})
            continue
        if name == "evaluate":
            if a.evaluate == "crash":
                os._exit(9)
            if a.evaluate == "never":
                continue
            network = msg["network"]
            network["confidence"] = CONFIDENCE[a.evaluate]
            while a.evaluate_after_file and not os.path.exists(a.evaluate_after_file):
                time.sleep(0.01)
            time.sleep(a.delay_ms / 1000.0)
            respond({"type": "response", "command": cid, "result": 0, "network": network})
            continue
        action = plan.get(name, "success")
        if action == "crash":
            os._exit(9)
        if action == "never":
            continue
        if name == "authenticate" and action == "uiRequired":
            conn.send({"type": "notify", "title": a.name, "body": "Tap to sign in to " + msg["network"]["ssid"]})
        time.sleep(a.delay_ms / 1000.0)
        respond({"type": "response", "command": cid, "result": RESULTS[action]})
        if name == "authenticate" and action == "success" and a.logoff_after_auth_ms >= 0:
            pending_logoff_at = time.monotonic() + a.logoff_after_auth_ms / 1000.0


if __name__ == "__main__":
    main()
