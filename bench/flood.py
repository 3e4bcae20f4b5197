#!/usr/bin/env python3
"""A boot-script flood from one source: CONNS keep-alive HTTP connections asking
/boot/ipxe?mac=<made up> back to back for SECS seconds (each a firmware sighting for the
appliance to write). Prints the requests answered and their rate. A benchmark load, not a test.

    bench/flood.py HOST:PORT [SECS] [CONNS]
"""
import asyncio
import random
import sys
import time


async def one(host, port, until, counts):
    reader, writer = await asyncio.open_connection(host, port)
    rng = random.Random()
    while time.monotonic() < until:
        mac = "52:54:%02x:%02x:%02x:%02x" % tuple(rng.randrange(256) for _ in range(4))
        writer.write(f"GET /boot/ipxe?mac={mac}&platform=pcbios HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        counts[0] += 1
    writer.close()


async def main():
    host, port = sys.argv[1].rsplit(":", 1)
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    counts = [0]
    start = time.monotonic()
    until = start + secs
    results = await asyncio.gather(*(one(host, int(port), until, counts) for _ in range(conns)),
                                   return_exceptions=True)
    took = time.monotonic() - start
    errors = [r for r in results if isinstance(r, Exception)]
    print(f"flood: {counts[0]} boot scripts in {took:.1f} s ({counts[0] / took:.0f}/s), "
          f"{len(errors)} connections failed{': ' + repr(errors[0]) if errors else ''}")


asyncio.run(main())
