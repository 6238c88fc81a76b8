#!/usr/bin/env python3
"""`memory search` right after `memory import`, against SQLite FTS5 (issue 39's "Must show").

  import_search_check.py LKJAGENT [ENTRIES] [QUERIES] [RUNS]

Writes an era-B document of ENTRIES (default 65,536) entries (keys `bulk,a<i / 256>,b<i % 256>`: 513 tags, values of
20-60 words drawn by Zipf (s = 1) from 20,000 made-up words, seeded), imports it with
`LKJAGENT --data DIR memory import FILE` (timed; in parts of 131,072 entries, as an import
reads a document of at most 64 MiB), puts the same texts (key words and value) in
a one-column FTS5 table (tokenize 'unicode61 remove_diacritics 2', what `lkjagent` ranks as),
then runs QUERIES (default 30) queries of 2-3 such words, each RUNS (default 5) times as a
whole process on both sides and takes the median of each: `LKJAGENT --data DIR memory search
Q --limit 10`, and `python3 -c PROGRAM DB Q` (tools/commands_sqlite.py's SEARCH program, the
10 best). The start-up of each side alone (`python3 -c "import sqlite3"` connecting to the
database; `LKJAGENT --help`) is timed the same way and given, so that figures net of it can
be read off. Prints whether both sides' top 3 agree for each query (keys, and scores to the 4 digits lkjagent prints).
Over 65,536 entries the data directory gets a config.json of `memory.store_capacity` ENTRIES.
Everything in a temporary directory (tmpfs when /dev/shm is there), removed at the end.
"""
import bisect
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import json

TOKENIZE = "unicode61 remove_diacritics 2"
SYL = ["ka", "to", "mi", "ra", "ne", "su", "lo", "pi", "de", "gu", "ba", "fe", "zo", "chi", "wa", "yu"]
SEARCH = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "m=' OR '.join('\"%s\"'%w for w in sys.argv[2].split())\n"
    "for r in c.execute('SELECT k,-bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 10',(m,)):"
    "print(*r)\n"
)
START = "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\n"


def words(vocab):
    out = []
    for r in range(vocab):
        w, x = "", r + 16
        while x > 0:
            w += SYL[x % 16]
            x //= 16
        out.append(w)
    return out


def timed(argv, runs):
    took = []
    out = b""
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        took.append((time.perf_counter() - t) * 1e3)
        if p.returncode != 0:
            sys.exit("failed: %s: %s" % (argv, p.stderr.decode(errors="replace")))
        out = p.stdout
        if p.stderr:
            sys.stderr.write("stderr of %s: %s" % (argv[-1], p.stderr.decode(errors="replace")))
    return statistics.median(took), out.decode()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    exe = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 65536
    nq = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    rng = random.Random(39)
    vocab = words(20000)
    cdf = []
    acc = 0.0
    for r in range(len(vocab)):
        acc += 1.0 / (r + 1)
        cdf.append(acc)

    def word():
        return vocab[min(bisect.bisect_left(cdf, rng.random() * acc), len(vocab) - 1)]

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="lkj-import-search-", dir=base)
    try:
        # `memory import` reads a document of at most 64 MiB: the entries go in parts of
        # 131,072 (about 40 MB each), imported one after the other.
        part = 131072
        rows = []
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        if n > 65536:
            # More than the default capacity: the store sized for them (memory.store_capacity).
            with open(os.path.join(data, "config.json"), "w") as f:
                json.dump({"memory": {"store_capacity": n}}, f)
        imported = 0.0
        for first in range(0, n, part):
            storage = {}
            for i in range(first, min(n, first + part)):
                key = "a%d,b%d,bulk" % (i // 256, i % 256)
                value = " ".join(word() for _ in range(rng.randint(20, 60)))
                storage[key] = value
                rows.append((key, key.replace(",", " ") + " " + value))
            doc = os.path.join(tmp, "old.json")
            with open(doc, "w") as f:
                json.dump({"state": "thinking", "iteration": 0, "working_memory": {}, "storage": storage}, f)
            del storage
            t = time.perf_counter()
            p = subprocess.run(
                [exe, "--data", data, "memory", "import", doc], stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            imported += time.perf_counter() - t
            if p.returncode != 0:
                sys.exit("memory import failed: %s" % p.stderr.decode(errors="replace"))
            os.remove(doc)
        files = sorted(os.listdir(data))
        db_path = os.path.join(tmp, "fts.db")
        db = sqlite3.connect(db_path)
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(k UNINDEXED, x, tokenize='%s')" % TOKENIZE)
        db.executemany("INSERT INTO fts(k, x) VALUES (?, ?)", rows)
        db.commit()
        db.close()
        queries = [" ".join(word() for _ in range(rng.randint(2, 3))) for _ in range(nq)]
        start_ours, _ = timed([exe, "--help"], runs * 4)
        start_theirs, _ = timed([sys.executable, "-c", START, db_path], runs * 4)
        ours, theirs, agree = [], [], 0
        for q in queries:
            a, out_a = timed([exe, "--data", data, "memory", "search", q, "--limit", "10"], runs)
            b, out_b = timed([sys.executable, "-c", SEARCH, db_path, q], runs)
            ours.append(a)
            theirs.append(b)
            # lkjagent prints "KEY  score S  ..." with 4 significant digits; SQLite "KEY S".
            top_a = [(l.split()[0], float(l.split()[2])) for l in out_a.splitlines()[:3]]
            top_b = [(l.split()[0], float(l.split()[1])) for l in out_b.splitlines()[:3]]
            same = [ka for (ka, sa), (kb, sb) in zip(top_a, top_b) if ka == kb and abs(sa - sb) <= 1e-3 * abs(sb)]
            agree += len(top_a) == len(top_b) and len(same) == len(top_a)
            if len(same) != len(top_a) or len(top_a) != len(top_b):
                print("differs: %r\n  lkjagent %r\n  sqlite   %r" % (q, top_a, top_b))
        mo, mt = statistics.mean(ours), statistics.mean(theirs)
        print("entries %d: memory import %.2f s (%d parts); files after it: %s" % (n, imported, (n + part - 1) // part, " ".join(files)))
        print(
            "lkjagent memory search, whole process: mean %.2f ms, p50 %.2f ms, longest %.2f ms; "
            "start-up (--help) %.2f ms; net mean %.2f ms" % (mo, statistics.median(ours), max(ours), start_ours, mo - start_ours)
        )
        print(
            "SQLite FTS5 (python3 -c), whole process: mean %.2f ms, p50 %.2f ms, longest %.2f ms; "
            "start-up (import, connect) %.2f ms; net mean %.2f ms" % (mt, statistics.median(theirs), max(theirs), start_theirs, mt - start_theirs)
        )
        print("ratio of whole-process means %.3fx; top 3 the same in %d of %d queries" % (mo / mt, agree, nq))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
