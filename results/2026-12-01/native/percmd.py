#!/usr/bin/env python3
"""Server CPU per lock operation on one node: the scripts vs the native commands, single and
batched (16 per write), on present keys. Usage: percmd.py PORT [ROUNDS]. Prints usec of server CPU
(INFO cpu user+sys delta) per operation, each variant minus the cost of the SETs that create the keys."""
import os, socket, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
from resp import enc  # noqa: E402

port = int(sys.argv[1]); rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")

def read():
    line = f.readline()
    t = line[:1]
    if t in b"+-:": return line[1:-2]
    if t == b"$":
        n = int(line[1:-2])
        if n < 0: return None
        d = f.read(n + 2); return d[:-2]
    if t == b"*":
        return [read() for _ in range(int(line[1:-2]))]
    raise RuntimeError(line)

def call(*a):
    s.sendall(enc(*a)); return read()

def cpu():
    info = call("INFO", "cpu").decode()
    d = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
    return float(d["used_cpu_user"]) + float(d["used_cpu_sys"])

REL = "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then return redis.call('DEL', KEYS[1]) elseif v == false then return 0 else return -1 end"
RELN = "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then redis.call('DEL', KEYS[1]) if redis.call('EXISTS', KEYS[1] .. ':wait') == 1 then redis.call('PUBLISH', KEYS[1], '') return 2 end return 1 elseif v == false then return 0 else return -1 end"
EXT = "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 elseif v == false then return 0 else return -1 end"
RELM = "local r = {} for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) if type(v) == 'table' then r[i] = 'e' elseif v == ARGV[i] then redis.call('DEL', k) r[i] = '1' elseif v == false then r[i] = '0' else r[i] = '-' end end return table.concat(r)"
RELNM = "local r = {} for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) if type(v) == 'table' then r[i] = 'e' elseif v == ARGV[i] then redis.call('DEL', k) if redis.call('EXISTS', k .. ':wait') == 1 then redis.call('PUBLISH', k, '') r[i] = '2' else r[i] = '1' end elseif v == false then r[i] = '0' else r[i] = '-' end end return table.concat(r)"
EXTM = "local r = {} for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) if v == ARGV[2 * i - 1] then redis.call('PEXPIRE', k, ARGV[2 * i]) r[i] = '1' elseif v == false then r[i] = '0' else r[i] = '-' end end return table.concat(r)"
sha = {n: call("SCRIPT", "LOAD", src).decode() for n, src in
       dict(REL=REL, RELN=RELN, EXT=EXT, RELM=RELM, RELNM=RELNM, EXTM=EXTM).items()}
B = 16
val = b"x" * 25

def keys(r): return [b"redlock:{res%d}" % i for i in range(B)]

def batch(kind, ks):
    if kind in ("none", "extend_none"): return []
    if kind == "release_script": return [enc("EVALSHA", sha["REL"], 1, k, val) for k in ks]
    if kind == "release_notify_script": return [enc("EVALSHA", sha["RELN"], 1, k, val) for k in ks]
    if kind == "release_many_script": return [enc("EVALSHA", sha["RELM"], B, *ks, *([val] * B))]
    if kind == "release_notify_many_script": return [enc("EVALSHA", sha["RELNM"], B, *ks, *([val] * B))]
    if kind == "release_native": return [enc("DELIFEQ", k, val) + enc("EXISTS", k) for k in ks]
    if kind == "release_native_delifeq_only": return [enc("DELIFEQ", k, val) for k in ks]
    if kind == "release_notify_native": return [enc("DELIFEQ", k, val) + enc("EXISTS", k) + enc("EXISTS", k + b":wait") for k in ks]
    if kind == "extend_script": return [enc("EVALSHA", sha["EXT"], 1, k, val, 10000) for k in ks]
    if kind == "extend_many_script":
        args = []
        for _ in ks: args += [val, 10000]
        return [enc("EVALSHA", sha["EXTM"], B, *ks, *args)]
    if kind == "extend_native": return [enc("SET", k, val, "IFEQ", val, "GET", "PX", 10000) for k in ks]
    raise KeyError(kind)

def nreplies(frames):
    return sum(fr.count(b"\r\n*") + (1 if fr.startswith(b"*") else 0) for fr in frames)

def run(kind):
    t0 = cpu()
    for r in range(rounds):
        ks = keys(r)
        out = [enc("SET", k, val, "NX", "PX", 10000) for k in ks] + batch(kind, ks)
        s.sendall(b"".join(out))
        n = B + sum(1 for fr in out[B:] for _ in range(fr.count(b"\r\n*") + 1))
        for _ in range(n): read()
        if kind.startswith("extend"):
            s.sendall(b"".join(enc("DEL", k) for k in ks))
            for _ in ks: read()
    return (cpu() - t0) * 1e6 / (rounds * B)

kinds = ["none", "extend_none", "release_script", "release_native", "release_native_delifeq_only", "release_many_script",
         "release_notify_script", "release_notify_native", "release_notify_many_script",
         "extend_script", "extend_native", "extend_many_script"]
res = {k: [] for k in kinds}
for rep in range(3):
    for k in kinds:
        res[k].append(run(k))
print("variant,us_cpu_per_op (median of 3, minus the SETs/DELs that make the keys),us_cpu_per_cycle")
for k in kinds:
    base = sorted(res["extend_none" if k.startswith("extend") else "none"])[1]
    m = sorted(res[k])[1]
    print(f"{k},{m - base:.2f},{m:.2f}")
