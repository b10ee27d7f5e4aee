"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests: echoes the last user message, can fail or stall."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubServer:
    def __init__(self, delay: float = 0.0, fail_first: int = 0, fail_code: int = 500) -> None:
        self.delay, self.fail_first, self.fail_code = delay, fail_first, fail_code
        self.calls: list[str] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with stub.lock:
                    stub.calls.append(prompt)
                    stub.auth.append(self.headers.get("Authorization"))
                    failing = stub.fail_first > 0
                    stub.fail_first -= failing
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                if failing:
                    return self._send(stub.fail_code, {"error": "try again"}, {"Retry-After": "0"})
                if body.get("model") == "bad":
                    return self._send(400, {"error": "unknown model 'bad'"})
                time.sleep(stub.delay)
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": f"echo: {prompt}"}}]})

            def _send(self, code, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
