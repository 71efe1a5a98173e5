"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat API and misbehaves on demand.

For fault tests and benchmarks only: the embedded model cannot be made to return 429s or garbage. It answers
deterministically ("echo: <last user message>", or what ``reply(prompt, request)`` returns), after ``delay``
seconds, and counts connections and requests per prompt.
With ``fault_rate`` > 0 a seeded choice per (prompt, attempt) turns a request into one of: 429 with
Retry-After, 500, a stall past the client's timeout, or a malformed 200 body.

``with Loopback(delay=0.2) as srv: srv.base_url`` -> ``"http://127.0.0.1:PORT/v1"``.

It also serves the files and batches endpoints as the OpenAI Batch API documents them (``POST /v1/files`` with
``purpose=batch``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST
/v1/batches/{id}/cancel``), each batch walking a scripted sequence of states, one step per retrieve
(``batch_states``, default validating -> in_progress -> finalizing -> completed). Its requests are answered when it
reaches ``completed`` or ``expired`` (the first half only, the rest in the error file with ``batch_expired``);
``batch_errors(prompt, attempt)`` names the requests that fail on their own (in the error file); ``failed`` is a
batch that failed validation (no output). ``per_prompt`` counts every request a batch ran, as it counts online calls.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import http.server
import itertools
import json
import threading
import time
from collections import Counter

from olakit.llm.answerer import scripted_turn

BATCH_STATES = ("validating", "in_progress", "finalizing", "completed")
"""The states a loopback batch walks through by default, one per retrieve."""

FAULTS = ("429", "500", "stall", "garbage")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: the default 5 drops bursts of connections


PROTOCOLS = ("plain", "openai-reasoning", "reasoning", "reasoning_content", "think")
"""How the test server speaks for a reasoning model: ``plain`` (no thinking), ``openai-reasoning`` (OpenAI's
reasoning models: refuses max_tokens and a temperature, reports reasoning tokens, shows no thinking), ``reasoning``
(vLLM with a reasoning parser: ``message.reasoning``), ``reasoning_content`` (DeepSeek's API, older vLLM,
llama.cpp) and ``think`` (no parser: ``<think>...</think>`` in the content, unclosed when cut off)."""


OPENAI_PARAMETERS = frozenset({
    "model", "messages", "max_completion_tokens", "temperature", "top_p", "seed", "stop", "n", "tools", "tool_choice",
    "parallel_tool_calls", "reasoning_effort", "response_format", "stream", "stream_options", "logprobs",
    "top_logprobs", "user", "metadata", "store", "frequency_penalty", "presence_penalty", "logit_bias",
    "service_tier", "verbosity", "max_tokens",
})  # fmt: skip
"""The chat completion parameters OpenAI's API knows (``openai-reasoning`` refuses max_tokens for its own reason);
any other is "Unrecognized request argument supplied"."""


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
        batch_states=BATCH_STATES,
        batch_errors=None,
        protocol: str = "plain",
    ):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
        self.protocol = protocol  # how a reasoning model's server speaks (PROTOCOLS)
        self.refusals: Counter = Counter()  # 400s sent, by the parameter they named
        self.batch_states = batch_states  # a sequence of states, or fn(n: the server's n-th batch) -> a sequence
        self.batch_errors = batch_errors  # fn(prompt, attempt) -> an error message for a request that fails alone
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self._ids = itertools.count(1)
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

            def do_GET(self):
                status, body = outer._batch_api("GET", self.path, b"", {})
                self._send(status, body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.split("?")[0].rstrip("/").endswith(("/files", "/batches")) or "/batches/" in self.path:
                    status, answer = outer._batch_api("POST", self.path, body, dict(self.headers))
                    self._send(status, answer)
                    return
                try:
                    req = json.loads(body)
                    prompt = req["messages"][-1].get("content") or ""
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    self._send(400, b'{"error": {"message": "bad request"}}')
                    return
                refused = outer._refuses(req)
                if refused is not None:  # an OpenAI reasoning model's 400 for a parameter it does not take
                    with outer._lock:
                        outer.refusals[refused[0]] += 1
                    error = {"message": refused[1], "type": "invalid_request_error", "param": refused[0],
                             "code": "unsupported_parameter"}  # fmt: skip
                    self._send(400, json.dumps({"error": error}).encode())
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
                        self._send(200, outer._reply(prompt, req, outer.reply, outer.fingerprint, outer.protocol))
                    elif fault == "garbage":
                        self._send(200, b'{"id": "x", "choices": [{"mess')
                    else:
                        time.sleep(outer.delay)
                        self._send(200, outer._reply(prompt, req, outer.reply, outer.fingerprint, outer.protocol))
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

    def _refuses(self, req: dict) -> tuple[str, str] | None:
        """What an OpenAI reasoning model refuses in a request (protocol ``openai-reasoning``): ``max_tokens``, a
        temperature other than 1, a parameter it does not know (``chat_template_kwargs``); (parameter, message)."""
        if self.protocol != "openai-reasoning":
            return None
        if "max_tokens" in req:
            return "max_tokens", ("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                  "'max_completion_tokens' instead.")  # fmt: skip
        if req.get("temperature") not in (None, 1, 1.0):
            return "temperature", (f"Unsupported value: 'temperature' does not support {req['temperature']} with this "
                                   "model. Only the default (1) value is supported.")  # fmt: skip
        unknown = [k for k in req if k not in OPENAI_PARAMETERS]  # another server's (chat_template_kwargs, ...)
        if unknown:
            return unknown[0], f"Unrecognized request argument supplied: {unknown[0]}"
        return None

    @staticmethod
    def _reply(prompt: str, req: dict, reply=None, fingerprint: str | None = None, protocol: str = "plain") -> bytes:
        # reply may say why the output ended, or make a turn of tool calls (answerer.scripted_turn), or give the
        # thinking ({"content", "reasoning"}), which the protocol places as its server does
        got = reply(prompt, req) if reply else f"echo: {prompt}"
        text, finish, calls = scripted_turn(got)
        thinking = got.get("reasoning", "") if isinstance(got, dict) else ""
        if req.get("seed") is not None and not reply:
            text += f" (seed {req['seed']})"
        shown = text
        if protocol == "think" and thinking:  # no reasoning parser: the thinking in the content, unclosed if cut
            shown = f"<think>{thinking}" + ("" if finish == "length" and not text else f"</think>{text}")
        message = {"role": "assistant", "content": shown}
        if protocol in ("reasoning", "reasoning_content") and thinking:
            message[protocol] = thinking
        if calls:
            message["content"] = text or None
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        return json.dumps(
            {
                "id": "chatcmpl-loopback",
                "object": "chat.completion",
                "created": 0,
                "model": req.get("model", "x"),
                **({"system_fingerprint": fingerprint} if fingerprint else {}),
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()) + len(thinking.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()) + len(thinking.split()),
                    **(
                        {"completion_tokens_details": {"reasoning_tokens": len(thinking.split())}}
                        if protocol == "openai-reasoning"
                        else {}
                    ),
                },
            }
        ).encode()

    # -- the Batch API
    def _batch_api(self, method: str, path: str, body: bytes, headers: dict) -> tuple[int, bytes]:
        parts = [p for p in path.split("?")[0].split("/") if p][1:]  # after "v1"
        try:
            if method == "POST" and parts == ["files"]:
                return 200, json.dumps(self._upload(body, headers.get("Content-Type", ""))).encode()
            if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                return (
                    (200, self.files[parts[1]])
                    if parts[1] in self.files
                    else (404, b'{"error": {"message": "no file"}}')
                )
            if method == "POST" and parts == ["batches"]:
                return 200, json.dumps(self._create(json.loads(body))).encode()
            if parts[:1] == ["batches"] and len(parts) >= 2 and parts[1] in self.batches:
                b = self.batches[parts[1]]
                if method == "POST" and parts[2:] == ["cancel"]:
                    with self._lock:
                        if b["status"] not in ("completed", "failed", "expired", "cancelled"):
                            b["status"], b["_plan"] = "cancelling", ["cancelled"]
                    return 200, json.dumps(self._public(b)).encode()
                if method == "GET" and len(parts) == 2:
                    self._advance(b)
                    return 200, json.dumps(self._public(b)).encode()
        except (ValueError, KeyError) as exc:
            return 400, json.dumps({"error": {"message": f"bad request: {exc}"}}).encode()
        return 404, b'{"error": {"message": "not found"}}'

    def _upload(self, body: bytes, content_type: str) -> dict:
        msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        fields = {part.get_param("name", header="content-disposition"): part for part in msg.iter_parts()}
        if fields["purpose"].get_content().strip() != "batch":
            raise ValueError("purpose must be batch")
        data = fields["file"].get_payload(decode=True)
        file_id = f"file-{next(self._ids)}"
        with self._lock:
            self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": fields["file"].get_filename() or "batch.jsonl", "purpose": "batch"}  # fmt: skip

    def _create(self, req: dict) -> dict:
        lines = [json.loads(x) for x in self.files[req["input_file_id"]].decode().splitlines() if x.strip()]
        n = next(self._ids)
        with self._lock:
            ordinal = len(self.batches) + 1  # this server's first batch is 1
        states = self.batch_states(ordinal) if callable(self.batch_states) else self.batch_states
        batch = {
            "id": f"batch_{n}", "object": "batch", "endpoint": req["endpoint"], "errors": None,
            "input_file_id": req["input_file_id"], "completion_window": req["completion_window"],
            "status": states[0], "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "metadata": req.get("metadata"),
            "_plan": list(states[1:]), "_lines": lines,
        }  # fmt: skip
        with self._lock:
            self.batches[batch["id"]] = batch
        return self._public(batch)

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _advance(self, b: dict) -> None:
        """One step of a batch's scripted states; its requests run when it reaches completed or expired."""
        with self._lock:
            if not b["_plan"]:
                return
            b["status"] = b["_plan"].pop(0)
        if b["status"] == "failed":
            b["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "scripted failure",
                                                        "line": 1}]}  # fmt: skip
        elif b["status"] in ("completed", "expired", "cancelled"):
            self._run(b, half=b["status"] != "completed")

    def _run(self, b: dict, half: bool) -> None:
        lines = b["_lines"]
        run = lines[: len(lines) // 2] if half else lines
        out, err = [], []
        for line in run:
            req = line["body"]
            prompt = req["messages"][-1]["content"]
            with self._lock:
                self.requests += 1
                self.per_prompt[prompt] += 1
                attempt = self.per_prompt[prompt]
            failure = self.batch_errors(prompt, attempt) if self.batch_errors else None
            if failure:
                err.append({"id": f"batch_req_{next(self._ids)}", "custom_id": line["custom_id"], "response": None,
                            "error": {"code": "server_error", "message": failure}})  # fmt: skip
                continue
            reply = json.loads(self._reply(prompt, req, self.reply, self.fingerprint, self.protocol))
            out.append({"id": f"batch_req_{next(self._ids)}", "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": "req", "body": reply}})  # fmt: skip
            with self._lock:
                self.completed[prompt] += 1
        for line in lines[len(run) :]:
            err.append({"id": f"batch_req_{next(self._ids)}", "custom_id": line["custom_id"], "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                                  "completion window expired."}})  # fmt: skip
        for kind, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                b[kind] = file_id
        b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}

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
