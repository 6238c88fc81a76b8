#!/bin/sh
# `make report-check`: renders the report of the demo run and of a generated 100,000-cycle audit
# log, and screenshots each with headless Chromium on a narrow (390 px) and a wide (1400 px)
# window, for a person to look at. Not part of .ci/run.
#
# Chromium comes from the system's packages (`apt-get install chromium`) when it is missing.
# It runs with a new, temporary profile, no network services of its own, and opens only local
# files; the report itself fetches nothing.
#
# Environment: BIN (default target/release/lkjagent), OUT (default target/report-check),
# CYCLES (default 100000).
set -eu

BIN=${BIN:-target/release/lkjagent}
OUT=${OUT:-target/report-check}
CYCLES=${CYCLES:-100000}

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "report-check: installing chromium from the system's packages"
    apt-get update && apt-get install -y chromium
    browser=chromium
fi

rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# 1. The demo run, on a copy of data/.
cp -r data "$OUT/demo-data"
"$BIN" --data "$OUT/demo-data" demo >/dev/null
"$BIN" --data "$OUT/demo-data/demo-run" report --out "$OUT/demo.html"

# 2. A long run: a generated audit log of $CYCLES cycles over ten runs, every outcome, paging,
#    server usage and cache figures, and a few damaged lines.
mkdir -p "$OUT/long-data/logs"
cp data/config.json "$OUT/long-data/"
awk -v n="$CYCLES" 'BEGIN {
    srand(7);
    split("thinking commanding evaluating paging", st, " ");
    for (c = 1; c <= n; c++) {
        run = sprintf("run%04d", int((c - 1) * 10 / n));
        s = st[(c % 3) + 1]; if (c % 97 < 3) s = "paging";
        est = 1200 + int(c % 500) * 4 + int(rand() * 300);
        lat = 800 + int(rand() * 1500); if (c % 1000 == 0) lat = 30000;
        valid = (c % 41 == 0) ? "false" : "true";
        err = (c % 333 == 0) ? "\"LLM_TIMEOUT\"" : "null";
        acts = "";
        if (s == "commanding") {
            ok = (c % 17 == 0) ? "false" : "true";
            res = (ok == "true") ? "saved to storage" : "refused: identical to the previous action; do something else";
            acts = sprintf("{\"type\":\"storage_save\",\"key\":\"k%d\",\"ok\":%s,\"result\":\"%s\"}", c, ok, res);
        }
        probs = (valid == "false") ? "\"NO_TAGS\"" : "";
        printf("{\"time\":%d,\"run\":\"%s\",\"cycle\":%d,\"state\":\"%s\",\"next_state\":\"thinking\",\"prompt_sha256\":\"%064d\",\"prompt_bytes\":%d,\"prompt_tokens_est\":%d,\"reply_bytes\":120,\"latency_ms\":%d,\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d},\"cached_tokens\":%d,\"valid\":%s,\"finish\":\"stop\",\"constrain\":\"grammar\",\"seed\":%d,\"actions\":[%s],\"problems\":[%s],\"error\":%s}\n",
            1790000000 + c * 30, run, c, s, c, est * 3, est, lat, est, 40 + int(rand() * 80), int(est * 0.8), valid, c, acts, probs, err);
        if (c % 25000 == 0) print "{\"damaged\": ";
    }
}' > "$OUT/long-data/logs/audit.jsonl"
"$BIN" --data "$OUT/long-data" report --out "$OUT/long.html"

# 3. Screenshots.
shot() { # page width height
    profile=$(mktemp -d)
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$profile" \
        --screenshot="$OUT/$1-$2.png" --window-size="$2,$3" "file://$OUT/$1.html" >/dev/null 2>&1
    rm -rf "$profile"
    echo "report-check: $OUT/$1-$2.png"
}
for page in demo long; do
    shot "$page" 390 4200
    shot "$page" 1400 2600
done
ls -l "$OUT"/*.html
