#!/usr/bin/env python3
"""schema_shim.py: a loopback HTTP proxy that lets llama-cpp-python's server constrain by JSON Schema.

llama-cpp-python's OpenAI-compatible server (0.3.x) answers 500 to
`"response_format": {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}` but
constrains by `{"type": "json_object", "schema": {...}}`. This proxy listens on 127.0.0.1 only,
forwards every request to the upstream server (also loopback), and rewrites a json_schema
response_format into json_object with the same schema; everything else passes unchanged. A
streamed reply (`"stream": true`, server-sent events) is relayed chunk by chunk as it comes;
a plain one is relayed whole. Python 3.11 standard library only.

    python3 tools/schema_shim.py --upstream http://127.0.0.1:8000 [--port 0]

prints `listening on http://127.0.0.1:PORT` and serves until killed. tools/model_check.py runs
it in-process (class Shim) for mode `json_schema`. Counters (requests, rewritten) are kept on the
instance and printed to stderr per request with --verbose.
"""
import argparse, http.client, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
       "transfer-encoding", "upgrade", "content-length", "host"}


# llama-cpp-python 0.3.36's schema-to-grammar converter copies a regex escape such as `\.` into
# the GBNF as is ("\." in a literal, [\.] in a class), which llama.cpp's grammar parser rejects;
# the server then crashes on the NULL grammar (segfault in libllama). The same characters written
# without a backslash mean the same to a regex: `[.]` outside a class, `.` inside one.
PLAIN_ESCAPES = set(".:/,;!#@%&=~'`<>\"_ ")


def fix_pattern(p):
    """`p` with escapes of plain punctuation written so the converter keeps them valid."""
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            n = p[i + 1]
            if n in PLAIN_ESCAPES:
                out.append(n if in_class else f"[{n}]")
            else:
                out.append(c + n)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def fix_patterns(schema):
    """A copy of `schema` with every "pattern" passed through fix_pattern; (copy, how many changed)."""
    changed = 0

    def walk(v):
        nonlocal changed
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == "pattern" and isinstance(x, str):
                    y = fix_pattern(x)
                    changed += y != x
                    out[k] = y
                else:
                    out[k] = walk(x)
            return out
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return walk(schema), changed


def rewrite(body):
    """(new body bytes, rewritten?) for a JSON request body: a json_schema response_format
    becomes json_object with the schema (its patterns made safe, see fix_pattern)."""
    try:
        req = json.loads(body)
    except ValueError:
        return body, False
    rf = req.get("response_format") if isinstance(req, dict) else None
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return body, False
    js = rf.get("json_schema")
    schema = js.get("schema") if isinstance(js, dict) and "schema" in js else js
    schema, _ = fix_patterns(schema if isinstance(schema, dict) else {})
    req["response_format"] = {"type": "json_object", "schema": schema}
    return json.dumps(req).encode(), True


class Shim:
    """`check(schema) -> None or why`, when given, is asked before a rewritten request is sent:
    a schema whose grammar llama.cpp would reject gets a 400 from the shim (as a server that
    refuses the schema), not a crashed server."""

    def __init__(self, upstream, port=0, verbose=False, check=None):
        u = urlsplit(upstream)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the shim forwards to a loopback upstream only")
        self.up_host, self.up_port = u.hostname, u.port or 80
        self.requests = self.rewritten = self.refused = 0
        self.check = check
        self.verbose = verbose
        shim = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                if shim.verbose:
                    sys.stderr.write("schema_shim: " + fmt % args + "\n")

            def do_GET(self):
                self.forward(b"")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                new, changed = rewrite(body) if body else (body, False)
                shim.requests += 1
                shim.rewritten += changed
                if changed and shim.check is not None:
                    why = shim.check(json.loads(new)["response_format"]["schema"])
                    if why:
                        shim.refused += 1
                        return self.refuse(400, f"schema_shim: llama.cpp rejects the schema's grammar: {why}")
                self.forward(new)

            def refuse(self, status, message):
                msg = json.dumps({"error": {"message": message}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)

            def forward(self, body):
                conn = http.client.HTTPConnection(shim.up_host, shim.up_port, timeout=3600)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                    headers["Content-Length"] = str(len(body))
                    conn.request(self.command, self.path, body=body if body or self.command == "POST" else None,
                                 headers=headers)
                    r = conn.getresponse()
                    self.send_response(r.status, r.reason)
                    for k, v in r.getheaders():
                        if k.lower() not in HOP:
                            self.send_header(k, v)
                    if r.getheader("Content-Length") is not None and not r.getheader("Transfer-Encoding"):
                        data = r.read()
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    else:  # streamed (server-sent events) or of unknown length: relay as it comes
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        while True:
                            chunk = r.read1(65536)
                            if not chunk:
                                break
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError as e:
                    try:
                        self.refuse(502, f"schema_shim: upstream: {e}")
                    except OSError:
                        pass
                finally:
                    conn.close()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, help="the llama-cpp-python server, e.g. http://127.0.0.1:8000")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    shim = Shim(a.upstream, a.port, a.verbose)
    print(f"listening on {shim.base}", flush=True)
    try:
        shim.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
