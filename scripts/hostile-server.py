#!/usr/bin/env python3
"""A hostile OpenAI-compatible server, for measuring what hearth survives.

    scripts/hostile-server.py MODE [PORT]

MODE is one of:
  endless-line    one SSE line that never ends
  big-event       one 20 MB event, then the end of the stream
  endless-deltas  valid content deltas, forever
  answer          a short, well-behaved answer (the baseline)
Then, e.g.: /usr/bin/time -v hearth run -p hi  (with HEARTH_BASE_URL=http://127.0.0.1:PORT/v1)
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 8765
CHUNK = b"x" * 65536


def delta(text):
    body = {"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            if MODE == "endless-line":
                self.wfile.write(b"data: ")
                while True:
                    self.wfile.write(CHUNK)
            elif MODE == "big-event":
                self.wfile.write(b"data: " + b"x" * (20 << 20) + b"\n\n")
            elif MODE == "answer":
                self.wfile.write(delta("hello") + b"data: [DONE]\n\n")
            elif MODE == "endless-deltas":
                piece = delta("lorem ipsum " * 40)
                while True:
                    self.wfile.write(piece * 16)
        except (BrokenPipeError, ConnectionResetError):
            pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
