"""Cached, concurrent, retrying LLM calls to any OpenAI-compatible endpoint.

Configuration comes from the environment only, so a key never lands in a notebook, the cache or a record:

- ``OLAKIT_BASE_URL``: the endpoint, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
  Unset: olakit serves its embedded model on 127.0.0.1 (olakit.local) and uses that.
- ``OLAKIT_MODEL``: the model name the endpoint knows.
- ``OLAKIT_API_KEY`` (or ``OPENAI_API_KEY``): the key, if the endpoint wants one.
- ``OLAKIT_CACHE_DIR``: the cache directory (default ``~/.cache/olakit/llm``).

The cache key is the endpoint identity (base URL + model), the messages, every parameter that changes the
output, and the sample index. Retries, timeouts and concurrency stay out of the key; errors are never cached.
Each answer is written to the cache as soon as it arrives, so a killed batch loses only the calls in flight.
The cache is diskcache (SQLite), safe for several processes at once.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from olakit.errors import OlakitError

log = logging.getLogger("olakit")

PRICES: dict[str, tuple[float, float]] = {
    # USD per million tokens: (prompt, completion). Extend with register_price().
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
}
LOCAL_PRICE = (0.0, 0.0)
"""Price of the embedded model (it runs on your machine)."""
RETRYABLE_STATUS = (408, 409, 429, 500, 502, 503, 504)
INFLIGHT = "inflight:"
"""Prefix of the cache's in-flight markers (never an answer)."""


def register_price(model: str, prompt_per_mtok: float, completion_per_mtok: float) -> None:
    """Add or change a model's price (USD per million tokens)."""
    PRICES[model] = (float(prompt_per_mtok), float(completion_per_mtok))


class LLMError(OlakitError):
    """An LLM endpoint is misconfigured or unusable."""


class MalformedResponse(Exception):
    """The endpoint answered 2xx with a body that is not a chat completion (retried)."""


@dataclass(frozen=True)
class Endpoint:
    """Where calls go. ``identity`` (not the key) is what the cache key sees."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    identity: str = ""
    local: bool = False

    def __post_init__(self):
        if not self.identity:
            object.__setattr__(self, "identity", f"{self.base_url.rstrip('/')}|{self.model}")

    @classmethod
    def from_env(cls) -> "Endpoint":
        """The configured endpoint, or the embedded model when OLAKIT_BASE_URL is unset."""
        base_url = os.environ.get("OLAKIT_BASE_URL", "").strip()
        key = os.environ.get("OLAKIT_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
        if base_url:
            model = os.environ.get("OLAKIT_MODEL", "").strip()
            if not model:
                raise LLMError("OLAKIT_BASE_URL is set but OLAKIT_MODEL is not; set the model name the endpoint serves")
            return cls(base_url=base_url, model=model, api_key=key)
        return cls.embedded()

    @classmethod
    def embedded(cls) -> "Endpoint":
        """The embedded model served by this process on 127.0.0.1 (started on first use)."""
        from olakit.local import DEFAULT_MODEL, shared_server

        srv = shared_server()
        # the port changes between runs; the weights do not: identify the endpoint by the weights
        return cls(base_url=srv.base_url, model=srv.model, local=True,
                   identity=f"olakit-embedded|{DEFAULT_MODEL['sha256'][:16]}|{srv.model}")


@dataclass
class Result:
    """The outcome of one request: text or error, usage, cost, latency and whether it was cached."""

    key: str
    text: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    cost: float | None = None
    latency: float | None = None
    cached: bool = False
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Request:
    """One chat completion to make: messages, output-changing parameters and a sample index."""

    messages: tuple
    params: tuple = ()
    sample: int = 0

    @classmethod
    def make(cls, messages: Sequence[dict] | str, sample: int = 0, **params) -> "Request":
        """``Request.make("2+2?", max_tokens=8)``; a string becomes one user message."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        msgs = tuple(tuple(sorted(m.items())) for m in messages)
        return cls(messages=msgs, params=tuple(sorted(params.items())), sample=sample)

    def message_dicts(self) -> list[dict]:
        return [dict(m) for m in self.messages]

    def call_params(self) -> dict:
        """Parameters sent: a seed is offset by the sample index so samples differ yet repeat."""
        params = dict(self.params)
        if "seed" in params and self.sample:
            params["seed"] = int(params["seed"]) + self.sample
        return params


def cache_key(identity: str, request: Request) -> str:
    """sha256 over endpoint identity, messages, parameters and sample index."""
    payload = json.dumps({"endpoint": identity, "messages": request.message_dicts(), "params": dict(request.params),
                          "sample": request.sample}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    return Path(os.environ.get("OLAKIT_CACHE_DIR") or Path.home() / ".cache" / "olakit" / "llm")


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class LLM:
    """Cached, concurrent, retrying chat completions.

    ``LLM().batch([Request.make("2+2?", max_tokens=8)])`` -> ``[Result(text="4", ...)]``.
    """

    def __init__(self, endpoint: Endpoint | None = None, *, cache_dir: str | os.PathLike | None = None,
                 concurrency: int = 8, max_attempts: int = 5, timeout: float = 120.0, backoff: float = 0.5,
                 max_backoff: float = 20.0, progress: bool = True):
        self.endpoint = endpoint or Endpoint.from_env()
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.progress = progress
        self._cache = None
        self._clients: dict = {}  # one openai client per event loop, reused across batches (kept-alive connections)
        self._loop: asyncio.AbstractEventLoop | None = None  # batch()'s own loop, in a daemon thread
        self._lock = threading.Lock()

    @property
    def cache(self):
        if self._cache is None:
            import diskcache

            self.cache_dir.mkdir(parents=True, exist_ok=True)
            self._cache = diskcache.Cache(str(self.cache_dir), timeout=60)
        return self._cache

    def price(self) -> tuple[float, float] | None:
        if self.endpoint.local:
            return LOCAL_PRICE
        return PRICES.get(self.endpoint.model)

    def _cost(self, prompt_tokens, completion_tokens) -> float | None:
        price = self.price()
        if price is None or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

    def lookup(self, request: Request) -> Result | None:
        """The cached result of a request, or None."""
        return self.lookup_key(cache_key(self.endpoint.identity, request))

    def lookup_key(self, key: str) -> Result | None:
        """The cached result under a cache key, or None."""
        hit = self.cache.get(key)
        if hit is None:
            return None
        return Result(key=key, text=hit["text"], prompt_tokens=hit["prompt_tokens"],
                      completion_tokens=hit["completion_tokens"], finish_reason=hit.get("finish_reason"),
                      cost=self._cost(hit["prompt_tokens"], hit["completion_tokens"]), latency=None, cached=True)

    async def _claim(self, key: str) -> Result | None:
        """Claim a prompt for this process, so parallel processes sharing the cache (papermill notebooks of a
        sweep) pay for it once: None when claimed, or the answer another process stored while we waited.

        The claim is an in-flight marker in the cache (atomic ``add``); it is dropped when the call ends, lapses
        after the longest a call can take, and is taken over when its process no longer exists (e.g. killed).
        """
        marker = INFLIGHT + key
        expire = self.timeout * self.max_attempts + 2 * self.max_backoff * self.max_attempts
        while True:
            if self.cache.add(marker, os.getpid(), expire=expire):
                hit = self.lookup_key(key)  # stored by the previous owner just before its marker went
                if hit is not None:
                    self._release(key)
                return hit
            hit = self.lookup_key(key)
            if hit is not None:
                return hit
            owner = self.cache.get(marker)
            if owner is None:
                continue
            if owner == os.getpid():
                return None  # this process already calls it (another batch); no wait on ourselves
            if not _alive(owner):
                self.cache.delete(marker)
                continue
            await asyncio.sleep(0.05)

    def _release(self, key: str) -> None:
        self.cache.delete(INFLIGHT + key)

    async def _call(self, client, sem: asyncio.Semaphore, request: Request) -> Result:
        import openai
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        key = cache_key(self.endpoint.identity, request)

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, MalformedResponse)):
                return True
            return isinstance(exc, openai.APIStatusError) and exc.status_code in RETRYABLE_STATUS

        def wait(state) -> float:
            exc = state.outcome.exception() if state.outcome else None
            after = _retry_after(exc) if exc else None
            if after is not None:
                return min(after, 60.0)
            import random

            base = min(self.max_backoff, self.backoff * 2 ** (state.attempt_number - 1))
            return base * (0.5 + random.random() / 2)

        attempts = 0
        start = time.perf_counter()
        try:
            async with sem:
                other = await self._claim(key)
                if other is not None:  # another process made this call meanwhile
                    return other
                async for attempt in AsyncRetrying(retry=retry_if_exception(retryable), wait=wait,
                                                   stop=stop_after_attempt(self.max_attempts), reraise=True):
                    with attempt:
                        attempts += 1
                        t0 = time.perf_counter()
                        # the client's low-level post: the same transport, auth and status errors as
                        # chat.completions.create, without its per-call pydantic transform and model building,
                        # a fifth of the client's CPU per call (benchmarks/bench_throughput.py)
                        raw = await client.post("/chat/completions", cast_to=bytes,
                                                body={"model": self.endpoint.model,
                                                      "messages": request.message_dicts(), **request.call_params()})
                        text, finish, usage = _content(_parse(raw))
                        latency = time.perf_counter() - t0
        except Exception as exc:  # recorded as a failed result; the batch goes on
            self._release(key)
            log.warning("call failed after %d attempts: %s", attempts, _describe(exc))
            return Result(key=key, error=_describe(exc), attempts=attempts, latency=time.perf_counter() - start)
        pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        ct = usage.get("completion_tokens") if isinstance(usage, dict) else None
        # written at once (a kill loses only calls in flight), off the event loop (SQLite commits block) and
        # after the concurrency slot is released, so a slow commit never holds back the next call
        await asyncio.to_thread(self.cache.set, key, {"text": text, "prompt_tokens": pt, "completion_tokens": ct,
                                                      "finish_reason": finish, "latency": latency,
                                                      "model": self.endpoint.model})
        self._release(key)
        return Result(key=key, text=text, prompt_tokens=pt, completion_tokens=ct, finish_reason=finish,
                      cost=self._cost(pt, ct), latency=latency, cached=False, attempts=attempts)

    def _client(self):
        """The openai client of the running event loop (connections stay open between batches)."""
        import openai

        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[other]
        if loop not in self._clients:
            self._clients[loop] = openai.AsyncOpenAI(base_url=self.endpoint.base_url,
                                                     api_key=self.endpoint.api_key or "none",
                                                     timeout=self.timeout, max_retries=0)
        return self._clients[loop]

    async def abatch(self, requests: Iterable[Request], desc: str = "LLM calls") -> list[Result]:
        """Results for every request, in order: cache hits first, then the rest concurrently."""
        from tqdm.auto import tqdm

        requests = list(requests)
        results: list[Result | None] = [self.lookup(r) for r in requests]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            client = self._client()
            sem = asyncio.Semaphore(self.concurrency)
            bar = tqdm(total=len(requests), initial=len(requests) - len(todo), desc=desc, disable=not self.progress)

            async def one(i: int) -> None:
                results[i] = await self._call(client, sem, requests[i])
                bar.update(1)

            try:
                await asyncio.gather(*(one(i) for i in todo))
            finally:
                bar.close()
        return results  # type: ignore[return-value]

    def batch(self, requests: Iterable[Request], desc: str = "LLM calls") -> list[Result]:
        """Synchronous abatch, run on this LLM's own event loop in a daemon thread, so it works inside Jupyter's
        running loop too and the connections of one batch serve the next."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, daemon=True, name="olakit-llm").start()
        return asyncio.run_coroutine_threadsafe(self.abatch(list(requests), desc=desc), self._loop).result()

    def close(self) -> None:
        """Close the clients and stop batch()'s loop (also done when the process exits)."""
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            clients = [c for lp, c in self._clients.items() if lp is loop]
            for c in clients:
                asyncio.run_coroutine_threadsafe(c.close(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
        self._clients.clear()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def complete(self, messages: Sequence[dict] | str, *, sample: int = 0, **params) -> Result:
        """One chat completion (cached)."""
        return self.batch([Request.make(messages, sample=sample, **params)])[0]


def _parse(raw: bytes) -> dict:
    """The JSON body of a 2xx response, or MalformedResponse (retried)."""
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise MalformedResponse(f"unparseable response body ({exc}): {raw[:200]!r}") from exc
    if not isinstance(body, dict):
        raise MalformedResponse(f"response body is not an object: {raw[:200]!r}")
    return body


def _alive(pid) -> bool:
    """Whether a process of this machine with that pid exists."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


def _content(resp: dict) -> tuple[str, str | None, dict | None]:
    """(text of the first choice, its finish_reason, usage) of a chat-completion body."""
    choices = resp.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if first is None:
        raise MalformedResponse(f"response without choices: {str(resp)[:200]!r}")
    message = first.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise MalformedResponse(f"response without message content: {str(resp)[:200]!r}")
    return text, first.get("finish_reason"), resp.get("usage")


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {str(exc)[:300]}"


def summarize(results: Sequence[Result]) -> dict:
    """Batch usage: requests, paid calls, cache hits, failures, tokens (all answers), cost and latency (paid calls)."""
    paid = [r for r in results if r.ok and not r.cached]
    costs = [r.cost for r in paid if r.cost is not None]
    return {"requests": len(results), "paid": len(paid), "cached": sum(r.cached for r in results),
            "failed": sum(not r.ok for r in results),
            "prompt_tokens": sum(r.prompt_tokens or 0 for r in results if r.ok),
            "completion_tokens": sum(r.completion_tokens or 0 for r in results if r.ok),
            "cost": sum(costs) if costs else None, "latency_s": sum(r.latency or 0 for r in paid)}
