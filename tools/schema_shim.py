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


def rewrite(body):
    """(new body bytes, rewritten?) for a JSON request body."""
    try:
        req = json.loads(body)
    except ValueError:
        return body, False
    rf = req.get("response_format") if isinstance(req, dict) else None
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return body, False
    js = rf.get("json_schema")
    schema = js.get("schema") if isinstance(js, dict) and "schema" in js else js
    req["response_format"] = {"type": "json_object", "schema": schema if isinstance(schema, dict) else {}}
    return json.dumps(req).encode(), True


class Shim:
    def __init__(self, upstream, port=0, verbose=False):
        u = urlsplit(upstream)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the shim forwards to a loopback upstream only")
        self.up_host, self.up_port = u.hostname, u.port or 80
        self.requests = self.rewritten = 0
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
                self.forward(new)

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
                        msg = json.dumps({"error": {"message": f"schema_shim: upstream: {e}"}}).encode()
                        self.send_response(502)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(msg)))
                        self.end_headers()
                        self.wfile.write(msg)
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
