#!/usr/bin/env python3
"""The reference side of lkjagent's recall checks: SQLite FTS5, in process, through Python's
sqlite3 (standard library only). Called by tests/recall_fts5.rs and benches/bench_recall.rs;
it reads files those write and prints what FTS5 makes of them. For a store with a cold tier
the corpus is the union of its live and cold entries, one table, so that FTS5's bm25() order
over all of them is what lkjagent's one ranking over both must give.

  fts5_check.py probe                       exit 0 when sqlite3 has FTS5, else 3
  fts5_check.py tokens TEXTS                one line per input line: its tokens, hex, space-separated
  fts5_check.py rank CORPUS QUERIES K       one line per query: "rowid:score ..." best first
  fts5_check.py bench CORPUS QUERIES        figures: build time, mean query latency, sizes

CORPUS lines are "rowid<TAB>text"; QUERIES lines are words separated by spaces, searched as
"w1" OR "w2" OR ... on a one-column table with tokenize='unicode61 remove_diacritics 2'.
score is -bm25(), so higher is better, as lkjagent reports it.
"""
import sqlite3
import sys
import time

TOKENIZE = "unicode61 remove_diacritics 2"


def table(db):
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='%s')" % TOKENIZE)


def load(db, corpus):
    rows = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            rowid, _, text = line.rstrip("\n").partition("\t")
            rows.append((int(rowid), text))
    db.execute("BEGIN")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", rows)
    db.execute("COMMIT")
    return rows


def queries(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def match(words):
    return " OR ".join('"%s"' % w.replace('"', '""') for w in words)


def probe():
    try:
        db = sqlite3.connect(":memory:")
        table(db)
    except sqlite3.Error:
        return 3
    return 0


def tokens(path):
    db = sqlite3.connect(":memory:")
    table(db)
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(lines)))
    out = [[] for _ in lines]
    for doc, term in db.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        out[doc].append(term.encode("utf-8").hex())
    for toks in out:
        print(" ".join(toks))


def rank(corpus, qpath, k):
    db = sqlite3.connect(":memory:")
    table(db)
    load(db, corpus)
    sql = "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT %d" % int(k)
    for words in queries(qpath):
        hits = db.execute(sql, (match(words),)).fetchall()
        print(" ".join("%d:%r" % (rowid, score) for rowid, score in hits))


def bench(corpus, qpath):
    db = sqlite3.connect(":memory:")
    table(db)
    t0 = time.perf_counter()
    rows = load(db, corpus)
    build = time.perf_counter() - t0
    text_bytes = sum(len(text.encode("utf-8")) for _, text in rows)
    sql = "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
    qs = queries(qpath)
    t0 = time.perf_counter()
    for words in qs:
        db.execute(sql, (match(words),)).fetchall()
    mean = (time.perf_counter() - t0) / max(1, len(qs))
    # The three most common words.
    db.execute("CREATE VIRTUAL TABLE vr USING fts5vocab(t, 'row')")
    common = [w for (w,) in db.execute("SELECT term FROM vr ORDER BY doc DESC LIMIT 3")]
    t0 = time.perf_counter()
    n = 5
    for _ in range(n):
        db.execute(sql, (match(common),)).fetchall()
    top3 = (time.perf_counter() - t0) / n
    pages = db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    index_bytes = 0
    try:
        for (n_bytes,) in db.execute("SELECT sum(length(block)) FROM t_data"):
            index_bytes = n_bytes or 0
    except sqlite3.Error:
        pass
    print("rows %d" % len(rows))
    print("text_bytes %d" % text_bytes)
    print("build_s %.6f" % build)
    print("mean_query_ms %.6f" % (mean * 1e3))
    print("common3_ms %.6f" % (top3 * 1e3))
    print("common3_words %s" % " ".join(common))
    print("db_bytes %d" % pages)
    print("index_bytes %d" % index_bytes)


def main(argv):
    if len(argv) >= 2 and argv[1] == "probe":
        return probe()
    if len(argv) == 3 and argv[1] == "tokens":
        tokens(argv[2])
        return 0
    if len(argv) == 5 and argv[1] == "rank":
        rank(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 4 and argv[1] == "bench":
        bench(argv[2], argv[3])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
