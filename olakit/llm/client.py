"""The LLM client: cached, concurrent, retrying chat completions to any OpenAI-compatible endpoint, through the
``openai`` package.

Each answer is stored in the cache (olakit.llm.cache) as soon as it arrives, so a killed batch loses only the calls
in flight; errors are never cached. An ``LLM`` keeps one client, and its open connections, across batches, on its
own event loop in a daemon thread, so ``batch()`` also works inside a notebook's running loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence

from olakit.llm.cache import RedisCache, open_cache
from olakit.llm.endpoint import Endpoint
from olakit.llm.local import SLOTS
from olakit.llm.prefix import lanes, prompt_text
from olakit.llm.request import Request, Result, cache_key
from olakit.llm.response import describe, first_choice, parse_body
from olakit.llm.retry import backoff, retryable

log = logging.getLogger("olakit")


class LLM:
    """Cached, concurrent, retrying chat completions.

    ``LLM().batch([Request.make("2+2?", max_tokens=8)])`` -> ``[Result(text="4", ...)]``.
    """

    def __init__(
        self,
        endpoint: Endpoint | None = None,
        *,
        cache_dir: str | os.PathLike | None = None,
        concurrency: int | None = None,
        max_attempts: int = 5,
        timeout: float = 120.0,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        progress: bool = True,
        prefix_lanes: bool = True,
    ):
        self.endpoint = endpoint or Endpoint.from_env()
        self.answers = open_cache(cache_dir)  # diskcache, or Redis at $OLAKIT_CACHE_URL
        self.cache_dir = self.answers.directory
        self.cache_location = self.answers.location
        if isinstance(self.answers, RedisCache):
            self.answers.store  # noqa: B018 -- an unreachable Redis is one clear error before any call
        # the embedded server has SLOTS slots: one call per slot keeps each lane's prefix in its slot
        self.concurrency = concurrency or (SLOTS if self.endpoint.local else 8)
        self.prefix_lanes = prefix_lanes
        self.max_attempts = max_attempts
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.progress = progress
        self._clients: dict = {}  # one openai client per event loop, reused across batches (kept-alive connections)
        self._loop: asyncio.AbstractEventLoop | None = None  # batch()'s own loop, in a daemon thread
        self._lock = threading.Lock()

    @property
    def cache(self):
        """The underlying store (a diskcache.Cache or a redis-py client): answers and in-flight claims."""
        return self.answers.store

    def lookup(self, request: Request) -> Result | None:
        """The cached result of a request, or None."""
        return self.lookup_key(cache_key(self.endpoint.identity, request))

    def lookup_key(self, key: str) -> Result | None:
        """The cached result under a cache key, or None."""
        return self._from_cache(key, self.answers.get(key))

    def _from_cache(self, key: str, hit: dict | None) -> Result | None:
        if hit is None:
            return None
        return Result(
            key=key,
            text=hit["text"],
            prompt_tokens=hit["prompt_tokens"],
            completion_tokens=hit["completion_tokens"],
            finish_reason=hit.get("finish_reason"),
            cost=self.endpoint.cost(hit["prompt_tokens"], hit["completion_tokens"]),
            latency=None,
            cached=True,
        )

    async def _call(self, client, sem: asyncio.Semaphore, request: Request, key: str) -> Result:
        attempts = 0
        start = time.perf_counter()
        # a claim lapses after the longest a call can take (every attempt timing out, every wait at its cap)
        expire = self.timeout * self.max_attempts + 2 * self.max_backoff * self.max_attempts
        try:
            async with sem:
                other = await self.answers.claim(key, expire)
                if other is not None:  # another process made this call meanwhile
                    return self._from_cache(key, other)
                while True:  # retried on 429, 5xx, timeouts and garbage (olakit.llm.retry), up to max_attempts
                    attempts += 1
                    t0 = time.perf_counter()
                    try:
                        # the client's low-level post: the same transport, auth and status errors as
                        # chat.completions.create, without its per-call pydantic transform and model building,
                        # a fifth of the client's CPU per call (benchmarks/bench_throughput.py)
                        raw = await client.post(
                            "/chat/completions",
                            cast_to=bytes,
                            body={
                                "model": self.endpoint.model,
                                "messages": request.message_dicts(),
                                **request.call_params(),
                            },
                        )
                        text, finish, usage = first_choice(parse_body(raw))
                        latency = time.perf_counter() - t0
                        break
                    except Exception as exc:
                        if attempts >= self.max_attempts or not retryable(exc):
                            raise
                        await asyncio.sleep(backoff(attempts, exc, self.backoff, self.max_backoff))
        except Exception as exc:  # recorded as a failed result (never cached); the batch goes on
            try:
                self.answers.release(key)
            except Exception:  # the cache itself failed (e.g. Redis went away); its claim lapses
                pass
            log.warning("call failed after %d attempts: %s", attempts, describe(exc))
            return Result(key=key, error=describe(exc), attempts=attempts, latency=time.perf_counter() - start)
        pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        ct = usage.get("completion_tokens") if isinstance(usage, dict) else None
        # written at once (a kill loses only calls in flight), without blocking the event loop, and after the
        # concurrency slot is released, so a slow commit never holds back the next call
        answer = {
            "text": text,
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "finish_reason": finish,
            "latency": latency,
            "model": self.endpoint.model,
        }
        try:
            await self.answers.astore_answer(key, answer)
        except Exception as exc:  # the cache went away: the answer is still returned (and recorded by the caller)
            log.warning("answer not stored, the cache at %s failed: %s", self.cache_location, describe(exc))
        return Result(
            key=key,
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=finish,
            cost=self.endpoint.cost(pt, ct),
            latency=latency,
            cached=False,
            attempts=attempts,
        )

    def _client(self):
        """The openai client of the running event loop (connections stay open between batches)."""
        import openai

        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[other]
        if loop not in self._clients:
            self._clients[loop] = openai.AsyncOpenAI(
                base_url=self.endpoint.base_url,
                api_key=self.endpoint.api_key or "none",
                timeout=self.timeout,
                max_retries=0,
            )
        return self._clients[loop]

    async def abatch(self, requests: Iterable[Request], desc: str = "LLM calls") -> list[Result]:
        """Results for every request, in order: cache hits first (one round trip), then the rest, ``concurrency``
        at a time, in prefix lanes (olakit.llm.prefix) so that prompts sharing a beginning follow each other on one
        connection and the server's prompt cache is reused; ``prefix_lanes=False`` sends them in the order given.
        When the cache cannot be reached every call of the batch fails (nothing is paid)."""
        from tqdm.auto import tqdm

        requests = list(requests)
        keys = [cache_key(self.endpoint.identity, r) for r in requests]
        try:
            hits = self.answers.get_many(keys)
        except Exception as exc:
            log.warning("the answer cache at %s failed: %s", self.cache_location, describe(exc))
            return [Result(key=k, error=f"answer cache unavailable: {describe(exc)}") for k in keys]
        results: list[Result | None] = [self._from_cache(k, hit) for k, hit in zip(keys, hits)]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            client = self._client()
            sem = asyncio.Semaphore(self.concurrency)
            bar = tqdm(total=len(requests), initial=len(requests) - len(todo), desc=desc, disable=not self.progress)
            if self.prefix_lanes:
                texts = [prompt_text(requests[i].message_dicts()) for i in todo]
                queue = deque([todo[j] for j in lane] for lane in lanes(texts, self.concurrency))
            else:
                queue = deque([i] for i in todo)

            async def worker() -> None:  # one lane at a time, its calls one after another
                while queue:
                    for i in queue.popleft():
                        results[i] = await self._call(client, sem, requests[i], keys[i])
                        bar.update(1)

            try:
                await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(queue)))))
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
            asyncio.run_coroutine_threadsafe(self.answers.aclose(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
        self._clients.clear()
        self.answers.close()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def complete(self, messages: Sequence[dict] | str, *, sample: int = 0, **params) -> Result:
        """One chat completion (cached)."""
        return self.batch([Request.make(messages, sample=sample, **params)])[0]
