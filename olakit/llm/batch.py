"""Batch mode: an Answerer whose ``batch(requests)`` sends what the answer cache lacks as provider batches (the OpenAI
Batch API, through the real ``openai`` client: files.create(purpose="batch"), batches.create, retrieve, files.content
for the output and the error file), journaled in the cache's store so that no batch is lost.

- ``custom_id`` is the cache key; a batch is split at the provider's limits (50,000 requests, 200 MB a file).
- Every batch submitted is journaled (id, endpoint identity, custom ids, state) in the answer cache's store (the local
  cache or the shared Redis) before it is waited for. A process killed or stopped while waiting leaves the entry; the
  rerun, or another process on the same store, polls the same batch and pays nothing twice. Processes submit under
  one lock in that store, after reading the journal: two of them never submit the same request (a resubmission
  included).
- States as the provider defines them: validating, in_progress, finalizing, completed, failed, expired, cancelling,
  cancelled. Answers go into the cache as a batch's output arrives; its errors are never cached. Requests that failed
  alone (the error file) and requests an expired or cancelled batch never ran are resubmitted alone, at most
  ``resubmits`` times; a batch that failed validation fails its requests.
- Waiting shows one progress bar per batch (requests done of total, its state, time waited) and holds no
  concurrency slot and no claim, so online callers are never blocked.

Offline batch files (``export``): the requests go to a batch input file in the OpenAI batch format instead of a
provider, for any engine that reads it (``vllm run-batch -i FILE -o OUT``), and ``batch`` raises ``Exported``: the
run stops before its next stage, which needs these answers. ``ingest(OUT)`` stores the engine's output file in the
cache, after checking that every line answers a request exported for this endpoint (its custom_id) by its model;
the run, run again, takes them from the cache, and exports its next stage or completes with no call. The exported
requests are one journal entry (id ``export``), so an ingest in another process (or after a restart) knows them.

``BatchAnswerer(llm).batch(requests)`` -> the same Results as ``llm.batch(requests)``, each paid at the batch rate.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from olakit.errors import DataError, OlakitError
from olakit.llm.answerer import SCRIPTED, Completes
from olakit.llm.endpoint import LLMError
from olakit.llm.request import Reply, Request, cache_key
from olakit.llm.response import first_choice, tool_calls_of
from olakit.thinking import split_thinking

log = logging.getLogger("olakit")

STATES = ("validating", "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")
"""A provider batch's states (OpenAI's Batch API)."""
TERMINAL = ("completed", "failed", "expired", "cancelled")
MAX_REQUESTS = 50_000
"""Requests per batch file (the provider's limit)."""
MAX_BYTES = 200 * 2**20
"""Bytes per batch file (the provider's limit)."""
ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
BATCH_RATE = 0.5
"""A batched call's price against the online one (OpenAI's Batch API: half)."""
EXPORT = "export"
"""The journal entry of the requests written to batch files and not yet ingested."""
SHOWN = 3
"""Refused lines an ingest's error names (the count names them all)."""


class Exported(OlakitError):
    """An exporting answerer wrote the requests a stage needs to a batch file; the run stops until they are
    ingested (``olakit batch ingest``) and is then run again."""

    def __init__(self, message: str, path: Path, n: int):
        super().__init__(message)
        self.path, self.n = path, n


class BatchAnswerer(Completes):
    """The requests of each ``batch`` call the cache lacks, as provider batches (see the module docstring); ``llm``
    is the cached client (olakit.llm.client.LLM) whose endpoint, key and answer cache it uses."""

    def __init__(
        self, llm, *, poll: float = 10.0, resubmits: int = 2, progress: bool = True, export: str | Path | None = None
    ):
        self.llm = llm
        self.endpoint = llm.endpoint
        self.poll, self.resubmits, self.progress = poll, resubmits, progress
        self.export = Path(export) if export is not None else None
        """Where the requests go instead of a provider (an offline batch file), or None."""
        self.submitted: list[str] = []
        """Ids of the batches this answerer submitted (resumed ones are not)."""
        self._client = None

    def close(self) -> None:
        """Close the cached client's connections (and its cache)."""
        self.llm.close()

    # -- the provider
    def client(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(base_url=self.endpoint.url(), api_key=self.endpoint.api_key or "none")
        return self._client

    @property
    def journal_name(self) -> str:
        return hashlib.sha256(self.endpoint.identity.encode()).hexdigest()[:16]

    def journal(self) -> dict:
        """Batch id -> {endpoint, custom_ids, state, submitted} of every batch not yet collected."""
        return self.llm.answers.journal(self.journal_name)

    def _note(self, batch_id: str, entry: dict | None, locked: bool = False) -> None:
        """Write (or, with None, drop) one batch's journal entry, under the journal's lock unless it is held."""
        if not locked:
            with self.llm.answers.journal_lock(self.journal_name):
                return self._note(batch_id, entry, locked=True)
        entries = self.journal()
        if entry is None:
            entries.pop(batch_id, None)
        else:
            entries[batch_id] = entry
        self.llm.answers.set_journal(self.journal_name, entries)

    def status(self) -> list[dict]:
        """Every journaled batch of this endpoint as the provider reports it now: id, state, done, total."""
        rows = []
        for batch_id, entry in self.journal().items():
            if batch_id == EXPORT:
                files = ", ".join(entry.get("files", []))
                rows.append({"id": EXPORT, "state": f"exported to {files}, not yet ingested", "done": 0,
                             "total": len(entry["custom_ids"])})  # fmt: skip
                continue
            b = self.client().batches.retrieve(batch_id)
            counts = b.request_counts
            done = counts.completed + counts.failed if counts else 0
            rows.append({"id": batch_id, "state": b.status, "done": done, "total": len(entry["custom_ids"])})
        return rows

    def cancel(self) -> list[str]:
        """Ask the provider to cancel every journaled batch of this endpoint that has not ended; they stay in the
        journal, so the next run collects what each finished and resubmits the rest. Returns their ids."""
        cancelled = []
        for batch_id in self.journal():
            if batch_id != EXPORT and self.client().batches.retrieve(batch_id).status not in TERMINAL:
                self.client().batches.cancel(batch_id)
                cancelled.append(batch_id)
        return cancelled

    # -- the Answerer
    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        requests = list(requests)
        keys = [cache_key(self.endpoint.identity, r) for r in requests]
        by_key = dict(zip(keys, requests))
        results = {k: hit for k in by_key if (hit := self.llm.lookup_key(k)) is not None}
        pending = [k for k in by_key if k not in results]
        if self.export is not None and pending:
            self._export([(k, self._line(k, by_key[k])) for k in pending])
        errors: dict[str, str] = {}
        # each round: the journaled batches that hold some of these (a killed process's, another's), and new ones for
        # the rest; what they did not answer goes again, alone
        for round_ in range(self.resubmits + 1):
            if not pending:
                break
            for batch_id, entry in self._submit_missing(pending, by_key, results):
                got = self._collect(batch_id, entry, desc)
                results |= {k: r for k, r in got.items() if r.ok and k in by_key}
                errors |= {k: r.error for k, r in got.items() if not r.ok}
            pending = [k for k in pending if k not in results]
            if pending and round_ < self.resubmits:
                log.info("%d requests resubmitted alone (%s)", len(pending), next(iter(errors.values()), ""))
        for k in pending:
            results[k] = Reply(key=k, error=errors.get(k, "not answered by any batch"), attempts=self.resubmits + 1)
        out, seen = [], set()
        for k in keys:  # a request asked twice in one call: its one answer, the repeats counted as cached (as online)
            r = results[k]
            out.append(replace(r, latency=None, cached=True, attempts=0) if k in seen and r.ok else r)
            seen.add(k)
        return out

    def _line(self, key: str, request: Request) -> bytes:
        # the parameters as the endpoint takes them online (a reasoning setting mapped, a refused one left out)
        body = {
            "model": self.endpoint.model,
            "messages": request.message_dicts(),
            **self.llm.adapted(request.call_params()),
        }
        return json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}).encode() + b"\n"

    def _submit_missing(self, pending: list[str], by_key: dict, results: dict) -> list[tuple[str, dict]]:
        """The batches that answer ``pending``: under the journal's lock, those another process submitted meanwhile
        (answers it stored go into ``results``), and new ones for the rest, journaled before the lock goes."""
        with self.llm.answers.journal_lock(self.journal_name):
            for k in pending:
                hit = self.llm.lookup_key(k)
                if hit is not None:
                    results[k] = hit
            missing = [k for k in pending if k not in results]
            journal = self.journal()
            theirs = [(b, e) for b, e in journal.items() if b != EXPORT and set(e["custom_ids"]) & set(missing)]
            covered = {k for _, e in theirs for k in e["custom_ids"]}
            lines = [(k, self._line(k, by_key[k])) for k in missing if k not in covered]
            return theirs + [self._submit(chunk) for chunk in _chunks(lines)]

    def _submit(self, chunk: list[tuple[str, bytes]]) -> tuple[str, dict]:
        client = self.client()
        upload = client.files.create(file=("olakit-batch.jsonl", b"".join(line for _, line in chunk)), purpose="batch")
        created = client.batches.create(
            input_file_id=upload.id, endpoint=ENDPOINT, completion_window=WINDOW, metadata={"olakit": "answers"}
        )
        entry = {
            "endpoint": self.endpoint.identity,
            "custom_ids": [k for k, _ in chunk],
            "state": created.status,
            "submitted": time.time(),
        }
        self._note(created.id, entry, locked=True)  # before the first wait: a kill from now on leaves it found again
        self.submitted.append(created.id)
        return created.id, entry

    # -- offline batch files
    def _export(self, lines: list[tuple[str, bytes]]) -> None:
        """Write the lines to the export file (whole, or not at all), journal their custom_ids, raise Exported."""
        path = self.export
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.part")
        part.write_bytes(b"".join(line for _, line in lines))
        os.replace(part, path)
        with self.llm.answers.journal_lock(self.journal_name):
            entry = self.journal().get(EXPORT) or {"endpoint": self.endpoint.identity, "custom_ids": [], "files": []}
            ids = list(dict.fromkeys([*entry["custom_ids"], *(k for k, _ in lines)]))
            files = list(dict.fromkeys([*entry["files"], str(path.resolve())]))
            self._note(EXPORT, {**entry, "custom_ids": ids, "files": files, "state": "exported",
                                "submitted": time.time()}, locked=True)  # fmt: skip
        size = sum(len(line) for _, line in lines)
        shown = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{max(1, round(size / 2**10))} KiB"
        raise Exported(
            f"wrote {len(lines)} request{'s' * (len(lines) != 1)} ({shown}) to {path} for {self.endpoint.model}. Run"
            f" them with an engine that reads the OpenAI batch format: `olakit batch run {path} --out results.jsonl`"
            f" (the configured endpoint, or the embedded model), or `vllm run-batch -i {path} -o results.jsonl"
            f" --model {self.endpoint.model}`; then `olakit batch ingest results.jsonl`, and run this command again"
            " (it exports the next stage's requests, or completes from the cache)",
            path,
            len(lines),
        )

    def exported(self) -> set[str]:
        """The custom_ids exported for this endpoint and not yet ingested."""
        return set((self.journal().get(EXPORT) or {}).get("custom_ids", []))

    def ingest(self, path: str | Path, engine_model: str | None = None) -> dict:
        """Store an engine's batch output file (OpenAI's batch output format: ``custom_id``, ``response`` with
        ``status_code`` and ``body``, ``error``) in the answer cache. Every line must answer a request exported for
        this endpoint (its custom_id, once), by this endpoint's model (or ``engine_model``: the name the engine
        gives it, e.g. llama.cpp's file path); otherwise DataError names the lines and nothing is stored. Failed
        requests are counted, never cached: the next export writes them again.
        Returns {"answers", "failed", "already"} (already: answered in the cache before)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: cannot read it ({exc})") from None
        exported, seen = self.exported(), set()
        rows, refused = [], []
        already = 0
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            why, row = _refusal(line, exported, seen, engine_model or self.endpoint.model)
            if why and row is not None and self.llm.lookup_key(row["custom_id"]) is not None:
                already += 1  # ingested before (the same file twice): its answer is in the cache
            elif why:
                refused.append(f"line {n}: {why}")
            else:
                rows.append(row)
                seen.add(row["custom_id"])
        if refused:
            raise DataError(
                f"{path}: {len(refused)} of {len(refused) + len(rows)} lines refused, nothing ingested ("
                + "; ".join(refused[:SHOWN])
                + ("; ..." if len(refused) > SHOWN else "")
                + f"). A result is taken only for a request `olakit batch export` wrote for {self.endpoint.model}"
                f" ({len(exported)} are waiting), answered by that model (an engine that names it otherwise: give"
                " its name, --engine-model NAME)"
            )
        counts = {"answers": 0, "failed": 0, "already": already}
        stored = set()
        for row in rows:
            if self.llm.lookup_key(row["custom_id"]) is not None:  # answered meanwhile (online, another ingest)
                counts["already"] += 1
                stored.add(row["custom_id"])
                continue
            result = self._store(row)
            counts["answers" if result.ok else "failed"] += 1
            if result.ok:
                stored.add(row["custom_id"])
        with self.llm.answers.journal_lock(self.journal_name):
            entry = self.journal().get(EXPORT)
            if entry is not None:
                left = [k for k in entry["custom_ids"] if k not in stored]
                self._note(EXPORT, {**entry, "custom_ids": left} if left else None, locked=True)
        return counts

    def _collect(self, batch_id: str, entry: dict, desc: str | None) -> dict[str, Reply]:
        """Wait for one batch to end, store its answers, forget it; its requests' results (failed ones too)."""
        client = self.client()
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(entry["custom_ids"]), desc=f"{desc or 'batch'} {batch_id}", unit="req", leave=False)
        start = time.monotonic()
        while True:
            b = client.batches.retrieve(batch_id)
            if b.status != entry["state"]:
                entry = {**entry, "state": b.status}
                self._note(batch_id, entry)
            if bar is not None:
                counts = b.request_counts
                done = (counts.completed + counts.failed) if counts else 0
                bar.n = done
                bar.set_postfix_str(f"{b.status}, {time.monotonic() - start:.0f} s waited")
                bar.refresh()
            if b.status in TERMINAL:
                break
            time.sleep(self.poll)
        if bar is not None:
            bar.close()
        out: dict[str, Reply] = {}
        if b.output_file_id:
            for line in client.files.content(b.output_file_id).text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    out[row["custom_id"]] = self._store(row)
        if b.error_file_id:
            for line in client.files.content(b.error_file_id).text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    error = row.get("error") or {}
                    out.setdefault(row["custom_id"], Reply(key=row["custom_id"], error=_describe(error), attempts=1))
        for k in entry["custom_ids"]:
            if k not in out:
                why = b.errors.data[0].message if b.status == "failed" and b.errors and b.errors.data else b.status
                out[k] = Reply(key=k, error=f"batch {batch_id} {b.status}: {why}", attempts=1)
        self._note(batch_id, None)
        return out

    def _store(self, row: dict) -> Reply:
        key = row["custom_id"]
        response = row.get("response") or {}
        if response.get("status_code") != 200:
            return Reply(key=key, error=_describe(row.get("error") or response.get("body") or {}), attempts=1)
        body = response["body"]
        text, finish, usage = first_choice(body)
        thought = split_thinking(text, (body["choices"][0] or {}).get("message"), usage, finish)
        calls = tool_calls_of(body)
        pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        ct = usage.get("completion_tokens") if isinstance(usage, dict) else None
        fingerprint = body.get("system_fingerprint") if isinstance(body.get("system_fingerprint"), str) else None
        answer = {"text": thought.text, "reasoning": thought.reasoning, "reasoning_tokens": thought.reasoning_tokens,
                  "unfinished": thought.unfinished, "prompt_tokens": pt, "completion_tokens": ct,
                  "finish_reason": finish, "latency": None, "model": self.endpoint.model,
                  "system_fingerprint": fingerprint, "batch": True,
                  **({"tool_calls": list(calls)} if calls else {})}  # fmt: skip
        self.llm.answers.set(key, answer)  # no claim was taken: a batch blocks no online caller
        cost = self.endpoint.cost(pt, ct)
        return Reply(key=key, text=thought.text, prompt_tokens=pt, completion_tokens=ct, finish_reason=finish,
                     cost=cost * BATCH_RATE if cost is not None else None, attempts=1, fingerprint=fingerprint,
                     batched=True, tool_calls=calls, reasoning=thought.reasoning,
                     reasoning_tokens=thought.reasoning_tokens, unfinished=thought.unfinished)  # fmt: skip


def _refusal(line: str, exported: set[str], seen: set[str], model: str) -> tuple[str, dict | None]:
    """Why one output line cannot be ingested ("" when it can), and the line as a mapping."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})", None
    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
        return "not a batch output line (no custom_id)", None
    key = row["custom_id"]
    if key not in exported:
        return f"custom_id {key[:16]}... is no request exported for this endpoint", row
    if key in seen:
        return f"custom_id {key[:16]}... answered twice", None
    response = row.get("response")
    if response is None and row.get("error") is None:
        return "neither a response nor an error", None
    if response is not None and (not isinstance(response, dict) or "status_code" not in response):
        return "its response has no status_code", None
    body = (response or {}).get("body")
    if response is not None and response.get("status_code") == 200:
        if not isinstance(body, dict) or not body.get("choices"):
            return "a 200 response without choices", None
        if body.get("model") not in (None, model):
            return f"answered by {body.get('model')!r}, not {model!r}", None
    return "", row


def _describe(error: dict) -> str:
    if isinstance(error, dict) and "error" in error and isinstance(error["error"], dict):
        error = error["error"]
    return f"{error.get('code', 'error')}: {error.get('message', '')}" if isinstance(error, dict) else str(error)


def _chunks(lines: list[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """Lines in batch files within the provider's limits (requests and bytes per file)."""
    chunks: list[list[tuple[str, bytes]]] = [[]]
    size = 0
    for key, line in lines:
        if chunks[-1] and (len(chunks[-1]) >= MAX_REQUESTS or size + len(line) > MAX_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append((key, line))
        size += len(line)
    return [c for c in chunks if c]


def run_batch_file(source: str | os.PathLike, out: str | os.PathLike, endpoint, progress: bool = True) -> dict:
    """``olakit batch run``: what an offline engine (``vllm run-batch -i SOURCE -o OUT``) does with an OpenAI batch
    input file, done by the endpoint given (the embedded model by default): each line's request sent as it is, through
    the openai client, and the output file written whole in OpenAI's batch output format (``custom_id``,
    ``response`` with ``status_code``, ``request_id`` and ``body``, ``error``), ready for ``olakit batch ingest``.
    A request the endpoint refuses is a failed line (its status and message), as engines write it. Returns
    {"requests", "answered", "failed"}."""
    import openai
    from tqdm.auto import tqdm

    if endpoint.base_url.startswith(SCRIPTED):
        raise LLMError(
            f"{endpoint.base_url}: olakit batch run sends each request to an OpenAI-compatible server; a scripted "
            "model is none (serve it, or unset OLAKIT_BASE_URL for the embedded model)"
        )
    source = Path(source)
    try:
        lines = [(n, line) for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{source}: cannot read it ({exc})") from None
    requests = []
    for n, line in lines:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{source} line {n}: not JSON ({exc.msg})") from None
        if not isinstance(request, dict) or request.get("url") != "/v1/chat/completions" or "body" not in request:
            raise DataError(f"{source} line {n}: not a batch request (custom_id, method POST, url "
                            "/v1/chat/completions, body)")  # fmt: skip
        requests.append(request)
    client = openai.OpenAI(base_url=endpoint.url(), api_key=endpoint.api_key or "none", max_retries=2)
    rows, counts = [], {"requests": len(requests), "answered": 0, "failed": 0}
    for request in tqdm(requests, desc="batch requests", disable=not progress):
        request_id = f"olakit-batch-{hashlib.sha256(request['custom_id'].encode()).hexdigest()[:16]}"
        try:
            body = client.chat.completions.create(**request["body"]).model_dump(mode="json")
            response, error = {"status_code": 200, "request_id": request_id, "body": body}, None
            counts["answered"] += 1
        except openai.APIError as exc:
            response = {"status_code": getattr(exc, "status_code", None) or 500, "request_id": request_id}
            error, counts["failed"] = {"message": str(exc)}, counts["failed"] + 1
        rows.append({"id": request_id, "custom_id": request["custom_id"], "response": response, "error": error})
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, out)  # the output file whole or not at all
    return counts
