#!/usr/bin/env python3
"""Server cost of owner-checked releases on PRESENT keys: one RELEASE script call per
lock against one RELEASE_MANY call carrying N locks (answering one character per lock), on one
redis-server this script starts on a free port and stops by pid.

Each pass pipelines, on one connection, batches of N `SET key value PX 60000` followed by their releases
(N single calls, or one call of N), for 64,000 keys; a SET-only pass is subtracted, so the figure is the
release's own server CPU (INFO cpu user+sys) per key.
   python3 results/2026-12-01/release-batch/cost.py > results/2026-12-01/release-batch/cost.txt
"""
import os, socket, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
from resp import enc  # noqa: E402

RELEASE = ("local v = redis.call('GET', KEYS[1]) "
           "if v == ARGV[1] then return redis.call('DEL', KEYS[1]) "
           "elseif v == false then return 0 else return -1 end")
# One character per lock: 1 released, 0 gone, - someone else's (what a coalesced release must report).
RELEASE_MANY = ("local out = {} for i, k in ipairs(KEYS) do local v = redis.call('GET', k) "
                "if v == ARGV[i] then redis.call('DEL', k) out[i] = '1' "
                "elseif v == false then out[i] = '0' else out[i] = '-' end end "
                "return table.concat(out)")
KEYS = 64_000


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 16)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            body, self.buf = self.buf[:n], self.buf[n + 2:]
            return body
        if line[:1] == b"-":
            raise RuntimeError(line)
        return line[1:]

    def run(self, payload, replies):
        self.s.sendall(payload)
        return [self.reply() for _ in range(replies)]


def cpu(c):
    info = c.run(enc("INFO", "cpu"), 1)[0].decode()
    f = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    return float(f["used_cpu_user"]) + float(f["used_cpu_sys"])


def main():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        c = Conn(port)
        one, many = (c.run(enc("SCRIPT", "LOAD", src), 1)[0] for src in (RELEASE, RELEASE_MANY))
        ver = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()[2]
        print(f"redis {ver}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, {KEYS} keys per pass")
        print("release        batch   server µs/key (release only)   total µs/key (SET + release)")
        for n in (1, 4, 16, 32, 64):
            results = {}
            for mode in ("set", "one", "many"):
                if mode == "many" and n == 1:
                    continue
                t0 = cpu(c)
                for start in range(0, KEYS, 1024):
                    payload, replies = [], 0
                    for b in range(start, min(start + 1024, KEYS), n):
                        keys = [f"k{mode}{i}" for i in range(b, b + n)]
                        vals = [f"value-of-lock-{i}-xxxxxxxx" for i in range(b, b + n)]
                        for k, v in zip(keys, vals):
                            payload.append(enc("SET", k, v, "PX", 60000)); replies += 1
                        if mode == "one":
                            for k, v in zip(keys, vals):
                                payload.append(enc("EVALSHA", one, 1, k, v)); replies += 1
                        elif mode == "many":
                            payload.append(enc("EVALSHA", many, n, *keys, *vals)); replies += 1
                    out = c.run(b"".join(payload), replies)
                    if mode == "many":
                        assert all(r == b"1" * n for r in out[n::n + 1]), "every lock released"
                results[mode] = (cpu(c) - t0) * 1e6 / KEYS
                if mode == "set":
                    c.run(enc("FLUSHALL"), 1)
            for mode in ("one", "many"):
                if mode in results:
                    name = "RELEASE" if mode == "one" else "RELEASE_MANY"
                    print(f"{name:14s} {n:5d}   {results[mode] - results['set']:28.2f}   {results[mode]:28.2f}")
    finally:
        srv.terminate(); srv.wait()


main()
