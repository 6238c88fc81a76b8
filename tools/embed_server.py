#!/usr/bin/env python3
"""embed_server.py: all-MiniLM-L6-v2 served on loopback as an OpenAI-compatible /v1/embeddings.

Run by tools/recall_check.py inside its cache venv (numpy is the only package used). The model
is a BERT encoder (6 layers, 12 heads, 384 wide) read from model.safetensors; this file holds
its whole forward pass in numpy, and its tokenizer (BERT's BasicTokenizer and WordPiece, read
from tokenizer.json), as sentence-transformers runs it: [CLS] text [SEP] cut at
max_seq_length (256) word pieces, mean pooling over the tokens (attention mask), then L2
normalisation.

    python embed_server.py MODEL_DIR            serve on 127.0.0.1, print "port N" on stdout
    python embed_server.py MODEL_DIR --selftest check against known behaviour, exit 0/1

POST /v1/embeddings {"model": "...", "input": "text" | ["t1", ...]}
  -> {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}],
      "model": "...", "usage": {"prompt_tokens": n, "total_tokens": n}}
Anything else: 404. A malformed request: 400 with an OpenAI-style error object.
"""
import json, math, os, struct, sys, threading, unicodedata
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# One BLAS thread: the matrices are small, and on a busy machine OpenBLAS's spinning threads
# make each product 30x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

MAX_SEQ = 256


# ---------------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------------

def load_safetensors(path):
    """{name: np.ndarray} from a .safetensors file (8-byte little-endian header length, JSON
    header of dtype/shape/data_offsets, then the raw data)."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(raw[base + a: base + b], dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
        out[name] = arr.astype(np.float32) if arr.dtype == np.float16 else arr
    return out


# ---------------------------------------------------------------------------------------------
# Tokenizer: BertNormalizer (clean, CJK spacing, lowercase, strip accents since lowercase and
# strip_accents is null), BertPreTokenizer (whitespace, then each punctuation char alone),
# WordPiece (greedy longest match, "##" continuation, [UNK] for a word that cannot be split
# or is longer than 100 characters).
# ---------------------------------------------------------------------------------------------

def _is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class WordPiece:
    def __init__(self, tokenizer_json):
        t = json.loads(Path(tokenizer_json).read_text())
        self.vocab = t["model"]["vocab"]
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]

    def normalize(self, text):
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if ch in "\t\n\r" or unicodedata.category(ch) == "Zs":
                out.append(" ")
            elif _is_cjk(cp):
                out.append(" " + ch + " ")
            else:
                out.append(ch)
        text = "".join(out).lower()
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    def words(self, text):
        for chunk in self.normalize(text).split():
            cur = ""
            for ch in chunk:
                if _is_punct(ch):
                    if cur:
                        yield cur
                        cur = ""
                    yield ch
                else:
                    cur += ch
            if cur:
                yield cur

    def pieces(self, word):
        if len(word) > 100:
            return [self.unk]
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    found = self.vocab[sub]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out

    def encode(self, text):
        ids = [self.cls]
        for w in self.words(text):
            ids.extend(self.pieces(w))
        ids = ids[:MAX_SEQ - 1]
        ids.append(self.sep)
        return ids


# ---------------------------------------------------------------------------------------------
# BERT forward pass
# ---------------------------------------------------------------------------------------------

def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    # BERT's exact GELU: x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)).
    return 0.5 * x * (1.0 + erf(x / np.float32(math.sqrt(2.0))))


def erf(x):
    """erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under float32's
    resolution of the activations), vectorised."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


class MiniLM:
    def __init__(self, model_dir):
        d = Path(model_dir)
        self.w = load_safetensors(d / "model.safetensors")
        cfg = json.loads((d / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        self.tok = WordPiece(d / "tokenizer.json")
        self.lock = threading.Lock()
        self.wt = {}

    def p(self, name):
        # Tensors are named with or without the "bert." prefix depending on the export.
        return self.w[name] if name in self.w else self.w["bert." + name]

    def linear(self, t, name):
        """t @ W^T + b over the last axis, as one 2-D matrix product (numpy's stacked matmul
        with a transposed view does not reach BLAS); W^T is made contiguous once."""
        wt = self.wt.get(name)
        if wt is None:
            wt = self.wt[name] = np.ascontiguousarray(self.p(name + ".weight").T)
        shape = t.shape
        out = np.ascontiguousarray(t).reshape(-1, shape[-1]) @ wt + self.p(name + ".bias")
        return out.reshape(*shape[:-1], wt.shape[1])

    def embed(self, texts):
        """Unit vectors (len(texts) x 384), and the number of word pieces seen."""
        ids = [self.tok.encode(t) for t in texts]
        n = max(len(i) for i in ids)
        batch = np.zeros((len(ids), n), dtype=np.int64)
        mask = np.zeros((len(ids), n), dtype=np.float32)
        for r, i in enumerate(ids):
            batch[r, :len(i)] = i
            mask[r, :len(i)] = 1.0
        with self.lock:
            h = self.forward(batch, mask)
        pooled = (h * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled, int(mask.sum())

    def forward(self, ids, mask):
        p = self.p
        b, n = ids.shape
        x = p("embeddings.word_embeddings.weight")[ids]
        x = x + p("embeddings.position_embeddings.weight")[np.arange(n)][None]
        x = x + p("embeddings.token_type_embeddings.weight")[0][None, None]
        x = layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), self.eps)
        hd = x.shape[-1] // self.heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for l in range(self.layers):
            pre = f"encoder.layer.{l}."
            lin = lambda t, name: self.linear(t, pre + name)
            q = lin(x, "attention.self.query").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            v = lin(x, "attention.self.value").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, -1)
            a = lin(a, "attention.output.dense")
            x = layer_norm(a + x, p(pre + "attention.output.LayerNorm.weight"),
                           p(pre + "attention.output.LayerNorm.bias"), self.eps)
            f = gelu(lin(x, "intermediate.dense"))
            f = lin(f, "output.dense")
            x = layer_norm(f + x, p(pre + "output.LayerNorm.weight"), p(pre + "output.LayerNorm.bias"), self.eps)
        return x


# ---------------------------------------------------------------------------------------------
# Known behaviour
# ---------------------------------------------------------------------------------------------

def selftest(model):
    """Checks the forward pass against what all-MiniLM-L6-v2 is known to do: unit vectors of
    384 numbers; the tokenizer's pieces for a few words (from BERT's uncased vocabulary);
    paraphrases close (cosine > 0.5), unrelated sentences far (< 0.25); the cosines published
    for this model reproduced within 0.002; a paraphrase nearer
    than an unrelated sentence in every triple; the same text the same vector in a batch or
    alone (padding masked). Returns a list of failures."""
    bad = []
    tok = model.tok
    for text, want in [("Hello, world!", ["hello", ",", "world", "!"]),
                       ("unaffable", ["una", "##ffa", "##ble"]),
                       ("Café", ["cafe"])]:
        inv = {v: k for k, v in tok.vocab.items()}
        got = [inv[i] for i in tok.encode(text)[1:-1]]
        if got != want:
            bad.append(f"tokenizer: {text!r} -> {got}, expected {want}")
    pairs = [
        ("A man is playing a guitar.", "Someone is strumming a musical instrument.", "The stock market fell sharply today."),
        ("How do I reset my password?", "I forgot my login credentials and need new ones.", "Penguins live in the southern hemisphere."),
        ("The cat sits on the mat.", "A kitten is resting on the rug.", "Quantum computers use qubits."),
        ("What is the capital of France?", "Which city is the French capital?", "My car needs new tyres."),
    ]
    texts = [t for triple in pairs for t in triple]
    v, _ = model.embed(texts)
    if v.shape != (len(texts), 384):
        bad.append(f"shape {v.shape}")
    if not np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4):
        bad.append("vectors are not unit length")
    for i, (a, para, other) in enumerate(pairs):
        va, vp, vo = v[3 * i], v[3 * i + 1], v[3 * i + 2]
        cp, co = float(va @ vp), float(va @ vo)
        print(f"selftest: cos(paraphrase) {cp:.3f}  cos(unrelated) {co:.3f}  {a!r}", file=sys.stderr)
        if not (cp > 0.5 and co < 0.25 and cp > co + 0.3):
            bad.append(f"{a!r}: paraphrase {cp:.3f}, unrelated {co:.3f}")
    # Published figures for this model (sentence-transformers' README and sbert.net's semantic
    # textual similarity page), to two or three decimals.
    for a, b, want in [
        ("The weather is lovely today.", "It's so sunny outside!", 0.6660),
        ("The weather is lovely today.", "He drove to the stadium.", 0.1046),
        ("It's so sunny outside!", "He drove to the stadium.", 0.1411),
        ("The cat sits outside", "The dog plays in the garden", 0.2838),
        ("A man is playing guitar", "A woman watches TV", -0.0327),
        ("The new movie is awesome", "The new movie is so great", 0.8939),
    ]:
        r, _ = model.embed([a, b])
        got = float(r[0] @ r[1])
        print(f"selftest: cos {got:.4f} (published {want:.4f})  {a!r} / {b!r}", file=sys.stderr)
        if abs(got - want) > 0.002:
            bad.append(f"{a!r} / {b!r}: cosine {got:.4f}, published {want:.4f}")
    alone, _ = model.embed([texts[0]])
    if not np.allclose(alone[0], v[0], atol=1e-4):
        bad.append("a text's vector changes with the batch it is in (padding not masked)")
    return bad


# ---------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------

def serve(model, port=0):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path in ("/health", "/v1/health"):
                return self.reply(200, {"status": "ok"})
            self.reply(404, {"error": {"message": "not found", "type": "not_found_error", "code": 404}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if self.path.rstrip("/") != "/v1/embeddings":
                return self.reply(404, {"error": {"message": "not found", "type": "not_found_error", "code": 404}})
            try:
                req = json.loads(raw)
                inp = req["input"]
                texts = [inp] if isinstance(inp, str) else list(inp)
                if not texts or not all(isinstance(t, str) for t in texts):
                    raise ValueError("input must be a string or a list of strings")
            except Exception as e:
                return self.reply(400, {"error": {"message": str(e), "type": "invalid_request_error", "code": 400}})
            vecs, ntok = model.embed(texts)
            self.reply(200, {
                "object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": [round(float(x), 7) for x in v]}
                         for i, v in enumerate(vecs)],
                "model": req.get("model", "all-MiniLM-L6-v2"),
                "usage": {"prompt_tokens": ntok, "total_tokens": ntok},
            })

    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"port {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    m = MiniLM(sys.argv[1])
    if "--selftest" in sys.argv:
        failures = selftest(m)
        for f in failures:
            print("selftest FAILED:", f, file=sys.stderr)
        sys.exit(1 if failures else 0)
    serve(m)
