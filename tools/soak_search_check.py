#!/usr/bin/env python3
"""Times whole `lkjagent memory search` processes on a kept soak store (issue 39's "mean
query <= 5 ms" on a store turned over by the soak).

Usage: tools/soak_search_check.py BINARY[,BINARY2...] KEEP_DIR [ROUNDS]

KEEP_DIR is the directory `make recall-fts5`'s soak part keeps its store in
(`LKJ_FTS5_SOAK_KEEP=DIR`): the store in `KEEP_DIR/data`, the queries in
`KEEP_DIR/queries.txt` (one a line). Each query runs ROUNDS times (default 1) as
`BINARY --data KEEP_DIR/data memory search Q --limit 10`; `BINARY --help` runs 50 times for the process's start-up. Printed: wall-clock
mean, p50 and longest; time on a CPU (user + sys, from the children's rusage) mean; the
start-up's; and both net of it. Also the load average before and after. Several binaries
(comma-separated) run each query in turn, the order turning, and are reported apart.
"""
import os
import resource
import subprocess
import sys
import time


def run(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (argv, p.returncode, p.stderr.decode(errors="replace")))
    return wall * 1000.0, cpu * 1000.0, p.stderr


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binaries, keep = sys.argv[1].split(","), sys.argv[2]
    data = os.path.join(keep, "data")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(os.path.join(keep, "queries.txt")) as f:
        queries = [q.strip() for q in f if q.strip()]
    load0 = os.getloadavg()[0]
    start = {b: [] for b in binaries}
    walls = {b: [] for b in binaries}
    cpus = {b: [] for b in binaries}
    for i in range(50):
        for b in rotate(binaries, i):
            start[b].append(run([b, "--help"]))
    warned = False
    i = 0
    for _ in range(rounds):
        for q in queries:
            # Each query by every binary in turn, the order turning: drift in the machine's
            # load falls on all of them alike.
            for b in rotate(binaries, i):
                w, c, err = run([b, "--data", data, "memory", "search", q, "--limit", "10"])
                if err and not warned:
                    sys.stderr.write("stderr of a search: %s\n" % err.decode(errors="replace"))
                    warned = True
                walls[b].append(w)
                cpus[b].append(c)
            i += 1
    load1 = os.getloadavg()[0]
    print("queries %d x %d, load %.1f-%.1f" % (len(queries), rounds, load0, load1))
    for b in binaries:
        ws = sorted(walls[b])
        sw = sum(s[0] for s in start[b]) / len(start[b])
        sc = sum(s[1] for s in start[b]) / len(start[b])
        mw = sum(ws) / len(ws)
        mc = sum(cpus[b]) / len(cpus[b])
        print("%s:" % b)
        print("  wall: mean %.2f ms, p50 %.2f, longest %.1f" % (mw, ws[len(ws) // 2], ws[-1]))
        print("  on a CPU (user + sys): mean %.2f ms" % mc)
        print("  --help: wall %.2f ms, CPU %.2f ms" % (sw, sc))
        print("  net of start-up: wall %.2f ms, CPU %.2f ms" % (mw - sw, mc - sc))


def rotate(xs, i):
    k = i % len(xs)
    return xs[k:] + xs[:k]


if __name__ == "__main__":
    main()
