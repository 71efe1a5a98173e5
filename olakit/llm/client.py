"""The LLM client: cached, concurrent, retrying chat completions to any OpenAI-compatible endpoint, through the
``openai`` package.

Each answer is stored in the cache (olakit.llm.cache) as it arrives, before it is handed on and before its lane makes
its next call, so a killed batch loses only the calls in flight (at most one per lane: ``concurrency``); errors are
never cached. An ``LLM`` keeps one client, and its open connections, across batches, on its
own event loop in a daemon thread, so ``batch()`` also works inside a notebook's running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Awaitable, Iterable
from dataclasses import replace

from olakit.env import endpoint_vars, environment
from olakit.llm.answerer import CACHE_UNAVAILABLE, SCRIPTED, Answerer, Completes, ScriptedModel
from olakit.llm.batch import BatchAnswerer
from olakit.llm.cache import RedisCache, open_cache
from olakit.llm.endpoint import Endpoint, LLMError
from olakit.llm.local import QUEUE_WAIT, SLOTS, progressing
from olakit.llm.prefix import lanes, prompt_text
from olakit.llm.request import Reply, Request, cache_key
from olakit.llm.response import describe, first_choice, parse_body, tool_calls_of
from olakit.llm.retry import REFUSED_ATTEMPTS, REFUSED_WAIT, ConnectionRefused, Stalled, backoff, refused, retryable
from olakit.thinking import Thinking, split_thinking

log = logging.getLogger("olakit")


TRANSPORTS = ("auto", "aiohttp", "httpx")
"""How a call that was not made because the answer cache failed begins its error."""


def http_client(transport: str = "auto"):
    """The HTTP client under openai's. ``auto``: its aiohttp transport (``openai.DefaultAioHttpClient``, the
    ``aiohttp`` extra) when no proxy is set in the environment, else its default httpx client, which honours
    ``HTTPS_PROXY`` and the like (the aiohttp transport ignores them). The aiohttp transport costs a fifth to a third
    less CPU per call than httpx's connection pool, which probes each idle connection's socket on every request
    (benchmarks/bench_throughput.py measures both); where aiohttp is not installed, ``auto`` uses httpx."""
    import urllib.request

    import openai

    if transport == "httpx" or (transport == "auto" and urllib.request.getproxies()):
        return openai.DefaultAsyncHttpxClient()
    try:
        return openai.DefaultAioHttpClient()
    except (AttributeError, RuntimeError):  # an openai without it, or aiohttp not installed
        if transport == "aiohttp":
            raise RuntimeError("transport='aiohttp' needs the aiohttp extra: pip install 'openai[aiohttp]'") from None
        return openai.DefaultAsyncHttpxClient()


class _Connections:
    """batch()'s own event loop, in a daemon thread, and the openai client of each event loop (kept-alive
    connections), with the answer cache they use; ``close()`` closes them all."""

    def __init__(self, answers):
        self.answers = answers
        self.clients: dict = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    def own_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None or self.loop.is_closed():
            self.loop = asyncio.new_event_loop()
            self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="olakit-llm")
            self.thread.start()
        return self.loop

    def close(self) -> None:
        loop, self.loop = self.loop, None
        if loop is not None and not loop.is_closed():
            clients = [c for lp, c in self.clients.items() if lp is loop]

            async def shut() -> None:
                running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in running:  # a batch still under way (interrupted, or closed from another thread) stops here
                    t.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                for c in clients:
                    await c.close()
                await self.answers.aclose()

            done = asyncio.run_coroutine_threadsafe(shut(), loop)
            done.add_done_callback(lambda _: loop.call_soon_threadsafe(loop.stop))
            if threading.current_thread() is not self.thread:  # (collected on the loop's own thread: no wait)
                try:
                    done.result(timeout=5)
                except TimeoutError:  # a call still hanging (e.g. after Ctrl-C): the daemon loop ends with the process
                    pass
        self.clients.clear()
        self.answers.close()


STORE_ATTEMPTS, STORE_WAIT = 5, 0.25
"""A paid answer whose store failed is stored again, up to 5 times over about 4 s (a Redis restarted mid-sweep once
lost the one answer that arrived while it came back: its rerun paid it again)."""


class _Writes:
    """The answers of a batch, each stored before its call returns (so before the lane that made it makes its next
    call, and before the answer is handed on): at a kill, the answers paid and not in the cache are at most the
    lanes' calls in flight, one per lane. Failures are counted rather than raised."""

    def __init__(self):
        self.failed, self.error = 0, None

    async def store(self, store, *args) -> None:
        for attempt in range(STORE_ATTEMPTS):  # a cache restarting (Redis comes back in a second or two)
            try:
                await store(*args)
                return
            except Exception as exc:
                if attempt == STORE_ATTEMPTS - 1:
                    self.failed, self.error = self.failed + 1, describe(exc)
                else:
                    await asyncio.sleep(STORE_WAIT * 2**attempt)


class LLM(Completes):
    """Cached, concurrent, retrying chat completions.

    ``LLM().batch([Request.make("2+2?", max_tokens=8)])`` -> ``[Reply(text="4", ...)]``.
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
        transport: str = "auto",
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
        if transport not in TRANSPORTS:
            raise ValueError(f"transport={transport!r}: use one of {', '.join(TRANSPORTS)}")
        self.transport = transport  # the HTTP client under openai's (http_client)
        self.max_attempts = max_attempts
        self._first, self._answered = asyncio.Lock(), False  # the first call goes alone (refusals learned once)
        self.refused: dict[str, str | None] = {}
        """The parameters this endpoint refused (a 400 naming them), learned once: the one sent instead (OpenAI's
        reasoning models: ``max_completion_tokens`` for ``max_tokens``), or None where it is left out."""
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.progress = progress
        self._conn = _Connections(self.answers)
        weakref.finalize(self, self._conn.close)  # when the LLM is collected or the process exits
        self._lock = threading.Lock()

    @property
    def cache(self):
        """The underlying store (a diskcache.Cache or a redis-py client): answers and in-flight claims."""
        return self.answers.store

    def lookup_key(self, key: str) -> Reply | None:
        """The cached result under a cache key, or None."""
        return self._from_cache(key, self.answers.get(key))

    def adapted(self, params: dict) -> dict:
        """The request's parameters as this endpoint takes them: a reasoning effort of ``none`` also switches a chat
        template's thinking off (``chat_template_kwargs``: Qwen3 on vLLM, SGLang or llama.cpp); then every parameter
        it refused renamed or left out (``refused``)."""
        params = dict(params)
        if params.get("reasoning_effort") == "none":
            params["chat_template_kwargs"] = {**params.get("chat_template_kwargs", {}), "enable_thinking": False}
        budget = params.pop("thinking_budget", None)
        if budget is not None:  # vLLM's request field, and the template variable SGLang passes to Qwen3's template
            params["thinking_token_budget"] = budget
            params["chat_template_kwargs"] = {**params.get("chat_template_kwargs", {}), "thinking_budget": budget}
        out = {}
        for name, value in params.items():
            instead = self.refused.get(name, name)
            if instead is not None:
                out[instead] = value
        return out

    def _learn_refusal(self, exc: BaseException, sent: dict) -> bool:
        """Whether ``exc`` is the endpoint refusing one of the parameters ``sent`` (a 400 naming it), now learned:
        said once on the terminal, recorded in the run log (``refused``), the call made again without it."""
        if getattr(exc, "status_code", None) != 400:
            return False
        body = getattr(exc, "body", None)
        named = body.get("param") if isinstance(body, dict) else None
        text = str(body.get("message") if isinstance(body, dict) and body.get("message") else exc)
        candidates = [named] if named in sent else [p for p in sent if re.search(rf"['\"`]{re.escape(p)}['\"`]", text)]
        if not candidates or candidates[0] in ("model", "messages"):
            return False
        name = candidates[0]
        original = next((k for k, v in self.refused.items() if v == name), name)
        self.refused[original] = "max_completion_tokens" if name == "max_tokens" else None
        instead = "sending max_completion_tokens instead" if name == "max_tokens" else "leaving it out"
        log.warning("%s (%s) refuses the parameter %s: %s from now on (%s)", self.endpoint.model,
                    self.endpoint.base_url, name, instead, text[:160])  # fmt: skip
        return True

    def _from_cache(self, key: str, hit: dict | None) -> Reply | None:
        if hit is None:
            return None
        # an answer stored before thinking was kept apart has it in its text: split on reading, as on arrival
        if "reasoning" in hit:
            thought = Thinking(hit["text"], hit["reasoning"], hit.get("reasoning_tokens"), bool(hit.get("unfinished")))
        else:
            thought = split_thinking(hit["text"], finish_reason=hit.get("finish_reason"))
        return Reply(
            key=key,
            text=thought.text,
            prompt_tokens=hit["prompt_tokens"],
            completion_tokens=hit["completion_tokens"],
            finish_reason=hit.get("finish_reason"),
            cost=self.endpoint.cost(hit["prompt_tokens"], hit["completion_tokens"]),
            latency=None,
            cached=True,
            fingerprint=hit.get("system_fingerprint"),
            tool_calls=tuple(hit.get("tool_calls") or ()),
            reasoning=thought.reasoning,
            reasoning_tokens=thought.reasoning_tokens,
            unfinished=thought.unfinished,
        )

    def _claim_ahead(self, key: str) -> asyncio.Task:
        """Start claiming a key (one try) before its call starts, while the calls before it run: the call finds
        its claim settled and the cache's round trip stays off the lane's path. The task gives (claimed, the answer
        another process stored)."""
        return asyncio.ensure_future(self.answers.try_claim(key, self._claim_expire))

    async def _wait_claim(self, key: str) -> tuple[bool, dict | None]:
        """Claim a key, waiting while another process holds it: (claimed, the answer it stored)."""
        other = await self.answers.claim(key, self._claim_expire)
        return other is None, other

    @property
    def _claim_expire(self) -> float:
        """A claim lapses after the longest a call can take (every attempt timing out, every wait at its cap)."""
        return self.timeout * self.max_attempts + 2 * self.max_backoff * self.max_attempts

    async def _call(
        self, client, sem: asyncio.Semaphore, request: Request, key: str, writes: _Writes, claiming: Awaitable
    ) -> Reply | None:
        """One request through its claim (``claiming``: ``_claim_ahead`` or ``_wait_claim``): its answer (paid here,
        or stored by another process meanwhile), a failed Reply, or None when another process holds its claim (the
        caller comes back to it with ``_wait_claim`` once it has nothing else to do: a wait never holds a
        concurrency slot)."""
        attempts, claimed = 0, False
        start = time.perf_counter()
        try:
            claimed, other = await claiming
            if other is not None:  # another process made this call meanwhile
                return self._from_cache(key, other)
            if not claimed:
                return None
            # until one call has been answered, calls go one at a time: what the endpoint refuses is learned once
            first = self._first if not self._answered else contextlib.nullcontext()
            async with sem, first:
                while True:  # retried on 429, 5xx, timeouts and garbage (olakit.llm.retry), up to max_attempts
                    attempts += 1
                    t0 = time.perf_counter()
                    try:
                        # the client's low-level post: the same transport, auth and status errors as
                        # chat.completions.create, without its per-call pydantic transform and model building,
                        # a fifth of the client's CPU per call (benchmarks/bench_throughput.py)
                        sent = self.adapted(request.call_params())
                        raw = await self._post(
                            client, {"model": self.endpoint.model, "messages": request.message_dicts(), **sent}
                        )
                        body = parse_body(raw)
                        text, finish, usage = first_choice(body)
                        thought = split_thinking(text, (body["choices"][0] or {}).get("message"), usage, finish)
                        calls = tool_calls_of(body)
                        latency = time.perf_counter() - t0
                        self._answered = True
                        break
                    except Exception as exc:
                        if self._learn_refusal(exc, sent):  # a parameter this endpoint refuses: once, then never
                            attempts -= 1
                            continue
                        if refused(exc):
                            if attempts >= REFUSED_ATTEMPTS:
                                url = self.endpoint.base_url or "the embedded model"
                                raise ConnectionRefused(f"connection refused at {url}: is the server running?") from exc
                            await asyncio.sleep(REFUSED_WAIT)
                            continue
                        if attempts >= self.max_attempts or not retryable(exc):
                            raise
                        await asyncio.sleep(backoff(attempts, exc, self.backoff, self.max_backoff))
        except asyncio.CancelledError:  # e.g. asyncio.wait_for timing out in a notebook: let others make this call
            await self._release(key)  # even when cancelled inside try_claim: its claim may be set; only ours goes
            raise
        except Exception as exc:  # recorded as a failed result (never cached); the batch goes on
            if claimed:
                await self._release(key)
            log.debug("call failed after %d attempts: %s", attempts, describe(exc))  # one summary per batch
            return Reply(key=key, error=describe(exc), attempts=attempts, latency=time.perf_counter() - start)
        fingerprint = body.get("system_fingerprint") if isinstance(body.get("system_fingerprint"), str) else None
        pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        ct = usage.get("completion_tokens") if isinstance(usage, dict) else None
        # stored before the answer is handed on and before this lane's next call (a kill loses only the calls in
        # flight: at most one per lane), without blocking the event loop: the other lanes go on meanwhile
        answer = {
            "text": thought.text,
            "reasoning": thought.reasoning,
            "reasoning_tokens": thought.reasoning_tokens,
            "unfinished": thought.unfinished,
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "finish_reason": finish,
            "latency": latency,
            "model": self.endpoint.model,
            "system_fingerprint": fingerprint,
            **({"tool_calls": list(calls)} if calls else {}),
        }
        await writes.store(self.answers.astore_answer, key, answer)
        return Reply(
            key=key,
            text=thought.text,
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=finish,
            cost=self.endpoint.cost(pt, ct),
            latency=latency,
            cached=False,
            attempts=attempts,
            fingerprint=fingerprint,
            tool_calls=calls,
            reasoning=thought.reasoning,
            reasoning_tokens=thought.reasoning_tokens,
            unfinished=thought.unfinished,
        )

    async def _post(self, client, body: dict) -> bytes:
        """POST one chat completion. To a remote endpoint, with the client's timeout. To the local server (which
        queues calls beyond its slots, from this process and from others sharing it), a call that takes longer than
        the timeout goes on waiting while the server makes progress (work done since the last look: local.progressing,
        up to QUEUE_WAIT), and times out only when it makes none."""
        if not self.endpoint.local:
            return await client.post("/chat/completions", cast_to=bytes, body=body)
        task = asyncio.ensure_future(
            client.post("/chat/completions", cast_to=bytes, body=body, options={"timeout": QUEUE_WAIT})
        )
        done = None
        try:
            while True:
                finished, _ = await asyncio.wait({task}, timeout=self.timeout)
                if finished:
                    return task.result()
                moving, done = await asyncio.to_thread(progressing, str(client.base_url), done)
                if not moving and not task.done():  # its answer may have come while the server was asked
                    raise Stalled(f"{client.base_url}: timed out: no progress on the call in {self.timeout:g} s")
        finally:
            if not task.done():
                task.cancel()

    async def _release(self, key: str) -> None:
        """Drop this process's claim on a key, even while the call is being cancelled; a cache that failed lets
        the claim lapse."""
        try:
            await asyncio.shield(self.answers.arelease(key))
        except (Exception, asyncio.CancelledError):
            pass

    def _client(self):
        """The openai client of the running event loop (connections stay open between batches)."""
        import openai

        clients = self._conn.clients
        loop = asyncio.get_running_loop()
        for other in [lp for lp in clients if lp.is_closed()]:
            del clients[other]
        if loop not in clients:
            clients[loop] = openai.AsyncOpenAI(
                base_url=self.endpoint.url(),
                api_key=self.endpoint.api_key or "none",
                timeout=self.timeout,
                max_retries=0,
                http_client=http_client(self.transport),
            )
        return clients[loop]

    async def abatch(self, requests: Iterable[Request], desc: str | None = "LLM calls") -> list[Reply]:
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
            return [Reply(key=k, error=f"{CACHE_UNAVAILABLE} at {self.cache_location}: {describe(exc)}") for k in keys]
        results: list[Reply | None] = [self._from_cache(k, hit) for k, hit in zip(keys, hits)]
        first: dict[str, int] = {}  # a request asked twice in one batch is called once
        for i, r in enumerate(results):
            if r is None:
                first.setdefault(keys[i], i)
        todo = list(first.values())
        if todo:
            client = self._client()
            sem = asyncio.Semaphore(self.concurrency)
            bar = tqdm(
                total=len(requests),
                initial=len(requests) - len(todo),
                desc=desc,
                disable=not self.progress or desc is None,  # None: the caller shows its own progress
            )
            if self.prefix_lanes:
                texts = [prompt_text(requests[i].message_dicts()) for i in todo]
                queue = deque([todo[j] for j in lane] for lane in lanes(texts, self.concurrency))
            else:
                queue = deque([i] for i in todo)

            writes = _Writes()
            lost_before = len(self.answers.lost)
            deferred: deque[int] = deque()  # prompts another process is calling: looked at again at the end

            # claims made before their call starts, so the cache's round trip is off a lane's path: as a call starts,
            # the lane's next call is claimed, and the first calls of the lanes at the front of the queue, one per
            # worker (they stay in the queue: any worker that comes free takes them)
            ahead: dict[int, asyncio.Task] = {}
            heads = 0  # the lanes at the front of the queue whose first call is claimed
            workers = min(self.concurrency, len(queue))

            async def worker() -> None:  # one lane at a time, its calls one after another
                nonlocal heads
                while queue:
                    lane = queue.popleft()
                    heads = max(0, heads - 1)
                    for n, now in enumerate(lane):
                        claiming = ahead.pop(now, None) or self._claim_ahead(keys[now])
                        if n + 1 < len(lane):
                            ahead[lane[n + 1]] = self._claim_ahead(keys[lane[n + 1]])
                        while heads < min(len(queue), workers):
                            ahead[queue[heads][0]] = self._claim_ahead(keys[queue[heads][0]])
                            heads += 1
                        results[now] = await self._call(client, sem, requests[now], keys[now], writes, claiming)
                        if results[now] is None:
                            deferred.append(now)
                        else:
                            bar.update(1)
                while deferred:  # nothing else to do: wait for the other process's answers (or their claims)
                    i = deferred.popleft()
                    results[i] = await self._call(client, sem, requests[i], keys[i], writes, self._wait_claim(keys[i]))
                    bar.update(1)

            try:
                await asyncio.gather(*(worker() for _ in range(workers)))  # every answer stored as its call returned
            finally:
                bar.close()
                if ahead:  # cancelled: the claims made ahead go too (each only if it is ours)
                    for task in ahead.values():
                        task.cancel()
                    await asyncio.gather(*ahead.values(), return_exceptions=True)
                    await asyncio.gather(*(self._release(keys[i]) for i in ahead))
            for i, r in enumerate(results):  # the repeats of a request: its one answer, counted as cached
                if r is None:
                    paid = results[first[keys[i]]]
                    results[i] = replace(paid, latency=None, cached=True, attempts=0) if paid.ok else paid
            failed = Counter(results[i].error for i in todo if not results[i].ok)
            if failed:  # the terminal gets one line per batch, not one per call
                error, n = failed.most_common(1)[0]
                log.warning("%d of %d calls failed after retries (%d x %s)", failed.total(), len(todo), n, error)
            lost = len(self.answers.lost) - lost_before
            if lost:  # this process was paused past a claim's lease: another may have paid for the same prompt
                log.warning("%d claims lapsed while their calls ran (a pause longer than the lease?): their answers "
                            "were not stored over another process's", lost)  # fmt: skip
            if writes.failed:  # the cache went away: the answers are still returned (and recorded by the caller)
                log.warning("%d answers not stored, the cache at %s failed: %s", writes.failed, self.cache_location,
                            writes.error)  # fmt: skip
        return results  # type: ignore[return-value]

    def batch(self, requests: Iterable[Request], desc: str | None = "LLM calls") -> list[Reply]:
        """Synchronous abatch, run on this LLM's own event loop in a daemon thread, so it works inside Jupyter's
        running loop too and the connections of one batch serve the next."""
        with self._lock:
            loop = self._conn.own_loop()
        return asyncio.run_coroutine_threadsafe(self.abatch(list(requests), desc=desc), loop).result()

    async def aclose(self) -> None:
        """Close the connections of the running event loop: for ``abatch`` on a loop of your own (``asyncio.run``),
        before that loop ends; ``close()`` closes batch()'s."""
        client = self._conn.clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()
        await self.answers.aclose()

    def close(self) -> None:
        """Close the clients and stop batch()'s loop (also done when the LLM is collected or the process exits); a
        later batch() opens them again."""
        self._conn.close()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(
    endpoint: Endpoint | None = None, *, batch: bool | None = None, export: str | None = None, **options
) -> Answerer:
    """The answerer of an endpoint (default: the configured one): the cached client with ``options``, or for a
    ``scripted://module:function`` base URL the in-process scripted model that function answers for; with ``batch``
    (default ``$OLAKIT_BATCH``) what the cache lacks goes out as provider batches (olakit.llm.batch); with
    ``export`` (a file) it is written there as a batch input file for an offline engine, for any endpoint (it names
    the model whose answers the cache will hold), and the run stops until they are ingested."""
    endpoint = endpoint or Endpoint.from_env()
    if export is not None:
        return BatchAnswerer(LLM(endpoint, **options), progress=False, export=export)
    if endpoint.base_url.startswith(SCRIPTED):
        return ScriptedModel.from_endpoint(endpoint)
    if environment().batch if batch is None else batch:
        if endpoint.local:
            raise LLMError("batch mode needs an endpoint with a Batch API (OpenAI's); the embedded model has none")
        return BatchAnswerer(LLM(endpoint, **options), poll=environment().batch_poll)
    return LLM(endpoint, **options)


def role_llm(role: str, default: Answerer, **options) -> Answerer:
    """The answerer of a role (answerer, reviewer, judge, direct): its own endpoint where ``OLAKIT_<ROLE>_BASE_URL``
    names one, else ``default`` itself (one client, one cache; a role never falls back to another endpoint than the
    one the run was given)."""
    if endpoint_vars(role)[1] == "OLAKIT_":  # the role has no endpoint of its own
        return default
    own = Endpoint.from_env(role)
    return default if own.identity == default.endpoint.identity else connect(own, **options)
