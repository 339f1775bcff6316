#!/usr/bin/env python3
"""A loopback TCP proxy that adds a random delay to every chunk, each way, for slow-network runs of
loadgen (every node behind a proxy adding 20-40 ms each way).

    scripts/delay-proxy.py --delay-ms 20:40 --seconds 60 7001 7002 7003
    -> prints one line per upstream: "127.0.0.1:7001 -> 127.0.0.1:41234", then forwards for 60 s.

Order is kept: a chunk is released at max(previous release, arrival + delay), so a random delay
stretches the stream without reordering it (TCP would never reorder either). Listens and connects
on 127.0.0.1 only, and stops by itself after --seconds.
"""
import argparse
import asyncio
import random
import sys


async def pipe(reader, writer, lo, hi):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    last = 0.0

    async def send():
        while True:
            at, chunk = await queue.get()
            if chunk is None:
                break
            wait = at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            last = max(last, loop.time() + random.uniform(lo, hi) / 1000.0)
            queue.put_nowait((last, chunk))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0.0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def serve(upstream, lo, hi):
    async def handle(creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pipe(creader, swriter, lo, hi), pipe(sreader, cwriter, lo, hi))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"127.0.0.1:{upstream} -> 127.0.0.1:{port}", flush=True)
    return server


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-ms", default="20:40", help="each-way delay range LO:HI in ms")
    ap.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    ap.add_argument("upstream", nargs="+", type=int, help="ports of redis-servers on 127.0.0.1")
    args = ap.parse_args()
    lo, hi = (float(x) for x in args.delay_ms.split(":"))
    servers = [await serve(p, lo, hi) for p in args.upstream]
    await asyncio.sleep(args.seconds)
    for s in servers:
        s.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
