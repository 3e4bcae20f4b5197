#!/usr/bin/env python3
"""A webhook receiver for rackboot, with nothing but Python's standard library.

It checks each delivery's signature the way docs/webhooks.md says, takes each delivery once
(by its Rackboot-Delivery id; rackboot delivers at least once, so a repeat is answered 204
and not acted on again) and appends every accepted delivery to a JSON-lines file.

    webhook-receiver.py --listen 127.0.0.1:8443 --secret-file hook.secret \
        --cert cert.pem --key key.pem --out deliveries.jsonl

The secret is read from a file, never from the command line or the environment.
"""

import argparse
import hashlib
import hmac
import json
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE_SECS = 300
MAX_BODY = 1 << 20


def verify(secret: bytes, header: str, body: bytes, now: int) -> bool:
    """The documented check: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>."""
    t, sigs = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            t = int(value)
        elif key == "v1":
            sigs.append(value)
    if t is None or not sigs or abs(now - t) > TOLERANCE_SECS:
        return False
    want = hmac.new(secret, f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(want, s) for s in sigs)


def handler(secret: bytes, out, seen: set):
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                return self.answer(413)
            body = self.rfile.read(length)
            signature = self.headers.get("rackboot-signature", "")
            if not verify(secret, signature, body, int(time.time())):
                return self.answer(401)
            delivery = self.headers.get("rackboot-delivery", "")
            event = json.loads(body)
            first = delivery not in seen
            seen.add(delivery)
            line = {"delivery": delivery, "first": first, "signature": signature, "body": body.decode(), "event": event}
            out.write(json.dumps(line) + "\n")
            out.flush()
            self.answer(204)

        def answer(self, status):
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    return Receiver


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="HOST:PORT")
    p.add_argument("--secret-file", required=True)
    p.add_argument("--out", required=True, help="JSON-lines file deliveries are appended to")
    p.add_argument("--cert", help="PEM certificate (HTTPS); without it, plain HTTP")
    p.add_argument("--key", help="PEM key of --cert")
    a = p.parse_args()
    with open(a.secret_file, "rb") as f:
        secret = f.read().strip()
    seen = set()
    out = open(a.out, "a", encoding="utf-8")
    # Deliveries seen before a restart of this receiver are taken once too.
    with open(a.out, encoding="utf-8") as f:
        for line in f:
            seen.add(json.loads(line)["delivery"])
    host, port = a.listen.rsplit(":", 1)
    server = HTTPServer((host, int(port)), handler(secret, out, seen))
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"listening on {a.listen}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
