"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat API and misbehaves on demand.

For fault tests and benchmarks only: the embedded model cannot be made to return 429s or garbage. It answers
deterministically ("echo: <last user message>", or what ``reply(prompt, request)`` returns), after ``delay``
seconds, and counts connections and requests per prompt.
With ``fault_rate`` > 0 a seeded choice per (prompt, attempt) turns a request into one of: 429 with
Retry-After, 500, a stall past the client's timeout, or a malformed 200 body.

``with Loopback(delay=0.2) as srv: srv.base_url`` -> ``"http://127.0.0.1:PORT/v1"``.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
from collections import Counter

FAULTS = ("429", "500", "stall", "garbage")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: the default 5 drops bursts of connections


class Loopback:
    def __init__(
        self,
        *,
        delay: float = 0.0,
        fault_rate: float = 0.0,
        faults=FAULTS,
        stall: float = 3.0,
        retry_after: float = 0.1,
        seed: int = 0,
        reply=None,
        fingerprint: str | None = "fp_loopback",
    ):
        self.fingerprint = fingerprint  # the system_fingerprint each answer carries (None: none, as some servers)
        self.reply = reply  # optional fn(prompt, request) -> text or (text, finish_reason), for answers a test controls
        self.delay, self.fault_rate, self.faults, self.stall = delay, fault_rate, tuple(faults), stall
        self.retry_after, self.seed = retry_after, seed
        self.requests = 0
        self.connections = 0
        self.open_connections = 0  # connections the client has not closed yet
        self.active = self.max_active = 0  # requests being answered now, and the most at once
        self.per_prompt: Counter = Counter()
        self.fault_counts: Counter = Counter()
        self.completed: Counter = Counter()
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with outer._lock:
                    outer.connections += 1
                    outer.open_connections += 1

            def finish(self):
                try:
                    super().finish()
                finally:
                    with outer._lock:
                        outer.open_connections -= 1

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    req = json.loads(body)
                    prompt = req["messages"][-1]["content"]
                except (ValueError, KeyError, IndexError, TypeError):
                    self._send(400, b'{"error": {"message": "bad request"}}')
                    return
                fault = outer._admit(prompt, req)
                with outer._lock:
                    outer.active += 1
                    outer.max_active = max(outer.max_active, outer.active)
                try:
                    if fault == "429":
                        self._send(
                            429, b'{"error": {"message": "rate limited"}}', {"Retry-After": str(outer.retry_after)}
                        )
                    elif fault == "500":
                        self._send(500, b'{"error": {"message": "internal error"}}')
                    elif fault == "stall":
                        time.sleep(outer.stall)
                        self._send(200, outer._reply(prompt, req, outer.reply, outer.fingerprint))
                    elif fault == "garbage":
                        self._send(200, b'{"id": "x", "choices": [{"mess')
                    else:
                        time.sleep(outer.delay)
                        self._send(200, outer._reply(prompt, req, outer.reply, outer.fingerprint))
                        with outer._lock:
                            outer.completed[prompt] += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with outer._lock:
                        outer.active -= 1

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _admit(self, prompt: str, req: dict) -> str | None:
        with self._lock:
            self.requests += 1
            self.per_prompt[prompt] += 1
            attempt = self.per_prompt[prompt]
        if not self.fault_rate:
            return None
        h = hashlib.sha256(f"{self.seed}|{prompt}|{attempt}".encode()).digest()
        if int.from_bytes(h[:4], "big") / 2**32 >= self.fault_rate:
            return None
        fault = self.faults[h[4] % len(self.faults)]
        with self._lock:
            self.fault_counts[fault] += 1
        return fault

    @staticmethod
    def _reply(prompt: str, req: dict, reply=None, fingerprint: str | None = None) -> bytes:
        text = reply(prompt, req) if reply else f"echo: {prompt}"
        text, finish = text if isinstance(text, tuple) else (text, "stop")  # reply may say why the output ended
        if req.get("seed") is not None and not reply:
            text += f" (seed {req['seed']})"
        return json.dumps(
            {
                "id": "chatcmpl-loopback",
                "object": "chat.completion",
                "created": 0,
                "model": req.get("model", "x"),
                **({"system_fingerprint": fingerprint} if fingerprint else {}),
                "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()),
                },
            }
        ).encode()

    def wait_completed(self, n: int, timeout: float = 60.0) -> int:
        """Block until n answers have been delivered (or timeout); returns how many were."""
        deadline = time.time() + timeout
        while sum(self.completed.values()) < n and time.time() < deadline:
            time.sleep(0.02)
        return sum(self.completed.values())

    def wait_closed(self, timeout: float = 10.0) -> int:
        """Block until the client has closed every connection (or timeout); returns how many are still open."""
        deadline = time.time() + timeout
        while self.open_connections and time.time() < deadline:
            time.sleep(0.02)
        return self.open_connections

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def main(argv=None) -> None:
    """``python -m olakit.llm.loopback --delay 0.2``: serve in a process of its own; prints the base URL."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--fault-rate", type=float, default=0.0)
    args = p.parse_args(argv)
    srv = Loopback(delay=args.delay, fault_rate=args.fault_rate)
    print(srv.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.close()


if __name__ == "__main__":
    main()
