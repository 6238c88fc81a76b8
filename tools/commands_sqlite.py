#!/usr/bin/env python3
"""The SQLite side of `make bench`'s whole-process figures (benches/bench_commands.rs): a
database equivalent to a generated lkjagent store, and the one-statement programs that answer
the same questions, each run as a whole `python3 -c` process the way `lkjagent` is run.

  commands_sqlite.py probe            exit 0 when sqlite3 has FTS5, else 3
  commands_sqlite.py build ROWS DB    ROWS lines are "id<TAB>key<TAB>created<TAB>hits<TAB>value"

The database: `entries(id, key, created, hits)`, `tags(tag, id)` (a WITHOUT ROWID table whose
primary key (tag, id) is the posting list of each tag), and `fts`, a one-column FTS5 table
(tokenize='unicode61 remove_diacritics 2') holding "key value" under rowid = id.
"""
import sqlite3
import sys

TOKENIZE = "unicode61 remove_diacritics 2"

# The timed programs (argv: DB, then the question). Each prints one line per result, as
# `lkjagent memory query` and `memory search` do.
QUERY_ONE = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "for r in c.execute('SELECT e.key,e.created,e.hits FROM tags t JOIN entries e ON e.id=t.id "
    "WHERE t.tag=? ORDER BY t.id DESC LIMIT 50',(sys.argv[2],)):print(*r)\n"
)
QUERY_AND_NOT = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "a=sys.argv[2:6]\n"
    "for r in c.execute('SELECT e.key,e.created,e.hits FROM entries e WHERE e.id IN ("
    "SELECT id FROM tags WHERE tag=? INTERSECT SELECT id FROM tags WHERE tag=? "
    "INTERSECT SELECT id FROM tags WHERE tag=? EXCEPT SELECT id FROM tags WHERE tag=?) "
    "ORDER BY e.id DESC LIMIT 50',a):print(*r)\n"
)
SEARCH = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "m=' OR '.join('\"%s\"'%w for w in sys.argv[2].split())\n"
    "for r in c.execute('SELECT e.key,-bm25(fts),e.created,e.hits FROM fts JOIN entries e ON e.id=fts.rowid "
    "WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 50',(m,)):print(*r)\n"
)
START = "import sqlite3\n"


def probe():
    try:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='%s')" % TOKENIZE)
    except sqlite3.Error:
        return 3
    return 0


def build(rows_path, db_path):
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("CREATE TABLE entries(id INTEGER PRIMARY KEY, key TEXT, created INTEGER, hits INTEGER)")
    db.execute("CREATE TABLE tags(tag TEXT, id INTEGER, PRIMARY KEY(tag, id)) WITHOUT ROWID")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(x, tokenize='%s')" % TOKENIZE)
    db.execute("BEGIN")
    batch_e, batch_t, batch_f = [], [], []

    def flush():
        db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)", batch_e)
        db.executemany("INSERT INTO tags VALUES (?, ?)", batch_t)
        db.executemany("INSERT INTO fts(rowid, x) VALUES (?, ?)", batch_f)
        del batch_e[:], batch_t[:], batch_f[:]

    with open(rows_path, encoding="utf-8") as f:
        for line in f:
            i, key, created, hits, value = line.rstrip("\n").split("\t", 4)
            i = int(i)
            batch_e.append((i, key, int(created), int(hits)))
            batch_t.extend((t, i) for t in key.split(","))
            batch_f.append((i, key + " " + value))
            if len(batch_e) >= 50000:
                flush()
    flush()
    db.execute("COMMIT")
    db.close()


def main(argv):
    if len(argv) == 2 and argv[1] == "probe":
        return probe()
    if len(argv) == 4 and argv[1] == "build":
        build(argv[2], argv[3])
        return 0
    if len(argv) == 3 and argv[1] == "program":
        sys.stdout.write({"query_one": QUERY_ONE, "query_and_not": QUERY_AND_NOT, "search": SEARCH, "start": START}[argv[2]])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
