#!/usr/bin/env python3
"""Change to answer: how long a new name takes to resolve after the change that makes it.

Run in the client namespace by bench/dns.sh. Each change adds one new host (hNNNN at a fresh
address): for rackboot a machine with a reservation, created through the API (the clock
starts when the API has answered, that is when the change is committed); for dnsmasq a file
moved into its --hostsdir (the clock starts after the rename). A poller asks the server for
every name not yet answered, about once a millisecond each, and stops the clock at the first
answer with an address. Prints one line: "MODE COUNT done p50_ms p99_ms max_ms".

  dnslat.py rackboot|dnsmasq quiet|churn COUNT START SERVER [API_URL TOKEN_FILE CA_FILE | HOSTSDIR]

quiet: one change, then its answer, then a pause of 2.1 s: longer than rackboot ever spaces its
rebuilds (2 s), so each change follows a quiet stretch.
DNSLAT_EACH=1 also prints each name's latency on stderr.
churn: a change every 10 ms without waiting for answers (100 changes a second).
"""
import http.client
import json
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

DOMAIN = "lab.rackboot.test"


def query(qid, name):
    """A DNS query for NAME's A record, recursion not asked for."""
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack(">HHHHHH", qid, 0, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1)


def answered(reply):
    """(query id, has an answer record) of a reply."""
    qid, flags, _qd, an = struct.unpack(">HHHH", reply[:8])
    return qid, (flags & 0xF) == 0 and an > 0


class Poller:
    """Asks for every pending name in turn and records when each was first answered."""

    def __init__(self, server):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect((server, 53))
        self.sock.setblocking(False)
        self.pending = {}  # index -> (name, change time)
        self.done = {}  # index -> latency in seconds
        self.lock = threading.Lock()
        self.stop = False
        self.deadline = float("inf")

    def add(self, index, name, at):
        with self.lock:
            self.pending[index] = (name, at)

    def run(self):
        while not self.stop or self.pending:
            with self.lock:
                batch = list(self.pending.items())
            for index, (name, _) in batch:
                try:
                    self.sock.send(query(index, name))
                except BlockingIOError:
                    pass
            end = time.monotonic() + 0.001
            while True:
                left = end - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    break
                try:
                    qid, ok = answered(self.sock.recv(512))
                except (BlockingIOError, ConnectionRefusedError, struct.error):
                    continue
                now = time.monotonic()
                with self.lock:
                    if ok and qid in self.pending:
                        self.done[qid] = now - self.pending.pop(qid)[1]
            if self.stop and time.monotonic() > self.deadline:
                break

    def finish(self, timeout):
        self.deadline = time.monotonic() + timeout
        self.stop = True


def host(i):
    return f"n{i:04d}.{DOMAIN}", f"198.18.{200 + i // 250}.{1 + i % 250}"


def main():
    server_kind, mode, count, start, server = sys.argv[1:6]
    count, start = int(count), int(start)
    rest = sys.argv[6:]
    if server_kind == "rackboot":
        api, token_file, ca = rest
        url = urllib.parse.urlparse(api)
        token = open(token_file).read().strip()
        conn = http.client.HTTPSConnection(url.hostname, url.port or 443,
                                           context=ssl.create_default_context(cafile=ca))

        def change(i):
            name, ip = host(i)
            body = json.dumps({"macs": [f"52:54:01:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}"],
                               "hostname": name.split(".")[0], "reserved_ip": ip})
            conn.request("POST", url.path + "/machines", body,
                         {"authorization": f"Bearer {token}", "content-type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status >= 300:
                sys.exit(f"the API refused machine {i}: {r.status}")
    else:
        (hostsdir,) = rest

        def change(i):
            name, ip = host(i)
            tmp = os.path.join(hostsdir, f".n{i}")
            with open(tmp, "w") as f:
                f.write(f"{ip} {name}\n")
            os.rename(tmp, os.path.join(hostsdir, f"n{i}"))

    poller = Poller(server)
    t = threading.Thread(target=poller.run)
    t.start()
    began = time.monotonic()
    for k, i in enumerate(range(start, start + count)):
        if mode == "churn":
            # Paced from the start: a slow change makes the next ones follow at once.
            wait = began + k * 0.010 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        change(i)
        poller.add(i, host(i)[0], time.monotonic())
        if mode == "quiet":
            limit = time.monotonic() + 10
            while i not in poller.done and time.monotonic() < limit:
                time.sleep(0.001)
            time.sleep(2.1)
    poller.finish(timeout=10)
    t.join()
    if os.environ.get("DNSLAT_EACH"):
        for i in sorted(poller.done):
            print(f"  {host(i)[0]} {poller.done[i] * 1000:.1f} ms", file=sys.stderr)
    lat = sorted(v * 1000 for v in poller.done.values())

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p))] if lat else float("nan")

    print(f"{mode} {count} {len(lat)} {pct(0.5):.1f} {pct(0.99):.1f} {lat[-1] if lat else float('nan'):.1f}")


if __name__ == "__main__":
    main()
