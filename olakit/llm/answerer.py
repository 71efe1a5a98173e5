"""What answers chat completions: the ``Answerer`` protocol every method takes, the counting wrapper its runs use,
and an in-process scripted model for unit tests of the methods' logic.

- ``Answerer``: ``endpoint`` (what the cache key and the records see) and ``batch(requests, desc)``, which returns
  one Reply per request, in order (a request repeated in one batch is answered once); ``desc`` names its progress
  bar, None for none (a caller that shows its own progress). ``complete(messages,
  **params)`` is one request, the same Reply. The cached client (olakit.llm.client.LLM) is the real one.
- ``Counted(answerer)``: the same answers, and ``counts`` of what they cost (requests, unique prompts, paid, cached,
  failed, tokens, cost) for a run's summary.
- ``Replicate(answerer, index)``: the same requests asked again past the cache (a replicate of a run's slice).
- ``ScriptedModel(reply)``: answers in this process with ``reply(prompt, request) -> text`` (or ``(text,
  finish_reason)``), no HTTP, no cache: for tests whose subject is a method, not the client. Tests about HTTP
  (faults, transports, claims, the cache) use the loopback server (olakit.llm.loopback) with the real client.

>>> m = ScriptedModel(lambda prompt, request: "Answer: B")
>>> c = Counted(m)
>>> [r.text for r in c.batch([Request.make("q1"), Request.make("q1"), Request.make("q2")])]
['Answer: B', 'Answer: B', 'Answer: B']
>>> c.counts["requests"], c.counts["unique_prompts"], c.counts["paid"], m.calls
(3, 2, 2, 2)
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from olakit.errors import OlakitError
from olakit.llm.endpoint import Endpoint, LLMError
from olakit.llm.request import Reply, Request, cache_key
from olakit.thinking import split_thinking


@runtime_checkable
class Answerer(Protocol):
    """Anything that answers chat completions (see the module docstring)."""

    endpoint: Endpoint

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]: ...

    def complete(self, messages: Sequence[dict] | str, *, sample: int = 0, **params) -> Reply: ...


class CallsFailed(OlakitError):
    """Calls failed after retries; nothing was written; a rerun pays only the calls still missing."""


def calls_failed(n: int, of: int, what: str, error: str | None = None) -> CallsFailed:
    """The one message for failed calls.

    >>> str(calls_failed(2, 6, "answerer: answers", "APITimeoutError: timed out")).split(";")[0]
    '2 of 6 calls (answerer: answers) failed after retries (APITimeoutError: timed out)'
    """
    cause = f" ({error})" if error else ""
    if error and error.startswith(CACHE_UNAVAILABLE):  # nothing could be cached: do not promise it was
        return CallsFailed(
            f"{n} of {of} calls ({what}) were not made: {error}; nothing was paid or written. Rerun once the cache "
            "is back"
        )
    return CallsFailed(
        f"{n} of {of} calls ({what}) failed after retries{cause}; nothing was written. Rerun: the answers already "
        "received are cached and only the missing calls are made"
    )


def refuse(results: Sequence[Reply], what: str) -> list[Reply]:
    """The results, when every call succeeded; else CallsFailed (how many of the distinct prompts failed, ``what``
    they were, the first cause). What every path that makes calls for a result goes through: a failed call never
    becomes a label, an empty text, a missing vote or a verdict.

    >>> refuse([Reply(key="a", text="B")], "answers")[0].text
    'B'
    """
    results = list(results)
    failed = {r.key: r for r in results if not r.ok}
    if failed:
        first = next(iter(failed.values()))
        raise calls_failed(len(failed), len({r.key for r in results}), what, first.error)
    return results


class Completes:
    """``complete`` for any class with ``batch``: one request, its Reply."""

    def complete(self, messages: Sequence[dict] | str, *, sample: int = 0, **params) -> Reply:
        return self.batch([Request.make(messages, sample=sample, **params)])[0]

    def close(self) -> None:
        """Nothing to close (the cached client closes its connections)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


CACHE_UNAVAILABLE = "answer cache unavailable"
"""How a call that could not be made for want of its cache is described (nothing was paid)."""
SCRIPTED = "scripted://"
"""The base URL scheme of a scripted model (ScriptedModel.from_endpoint)."""
FIELDS = ("requests", "unique_prompts", "paid", "batched", "cached", "failed", "prompt_tokens", "completion_tokens")


class Counted(Completes):
    """An Answerer that counts what the answers of another cost: ``counts`` (requests, unique prompts, paid calls,
    cache hits, failures, tokens, cost). Each distinct request of a batch counts once; its repeats are requests."""

    def __init__(self, answerer: Answerer):
        self.answerer = answerer
        self.endpoint = answerer.endpoint
        self.counts: dict = {**dict.fromkeys(FIELDS, 0), "cost": 0.0}  # the run log's "calls" of a role
        self.fingerprints: set[str] = set()
        """The ``system_fingerprint`` values the endpoint sent with these answers."""

    @property
    def refused(self) -> dict:
        """The parameters the endpoint behind refused (olakit.llm.client.LLM.refused), as learned so far."""
        inner = self.answerer
        while not hasattr(inner, "max_attempts") and hasattr(inner, "answerer"):
            inner = inner.answerer
        return dict(getattr(inner, "refused", {}) or {})

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        requests = list(requests)
        results = self.answerer.batch(requests, desc=desc) if requests else []
        c = self.counts
        c["requests"] += len(requests)
        for r in {r.key: r for r in reversed(results)}.values():  # the first answer of each prompt
            c["unique_prompts"] += 1
            c["paid"] += int(r.ok and not r.cached)
            c["batched"] += int(r.ok and not r.cached and r.batched)  # of the paid: through a provider batch
            c["cached"] += int(r.cached)
            c["failed"] += int(not r.ok)
            if r.fingerprint:
                self.fingerprints.add(r.fingerprint)
            c["prompt_tokens"] += r.prompt_tokens or 0
            c["completion_tokens"] += r.completion_tokens or 0
            c["cost"] += r.cost or 0.0
        return results


class Replicate(Completes):
    """An Answerer that asks another everything again past the cache: each request with replicate index ``index``
    (in its cache key, never sent), so a cached run is answered anew by the endpoint and a replicate run is cached
    in its own right (its rerun costs nothing)."""

    def __init__(self, answerer: Answerer, index: int = 1):
        if index < 1:
            raise ValueError(f"replicate index {index}: a replicate is 1 or more (0 is the run itself)")
        self.answerer, self.index, self.endpoint = answerer, index, answerer.endpoint

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        return self.answerer.batch([replace(r, replicate=self.index) for r in requests], desc=desc)


def scripted_turn(got) -> tuple[str, str, tuple]:
    """What a scripted reply function returned, as (text, finish_reason, tool calls): a text; ``(text,
    finish_reason)``; or a dict ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...} or "JSON"}]}``, a
    turn of the OpenAI tools API (ids ``call_0``, ``call_1``, ... unless given; finish_reason ``tool_calls``)."""
    if isinstance(got, dict):
        calls = tuple(
            {"id": str(c.get("id") or f"call_{i}"), "name": str(c["name"]),
             "arguments": c["arguments"] if isinstance(c.get("arguments"), str) else json.dumps(c.get("arguments"))}
            for i, c in enumerate(got.get("tool_calls") or [])
        )  # fmt: skip
        return got.get("content") or "", got.get("finish_reason") or ("tool_calls" if calls else "stop"), calls
    text, finish = got if isinstance(got, tuple) else (got, "stop")
    return text, finish, ()


class ScriptedModel(Completes):
    """An in-process model: ``reply(prompt, request)`` gives the text of the last message's answer (or ``(text,
    finish_reason)``, or a turn of tool calls: scripted_turn; an exception is a failed call). Tokens are counted in
    words, as the loopback server does."""

    def __init__(self, reply: Callable, model: str = "scripted", endpoint: Endpoint | None = None):
        self.reply = reply
        self.endpoint = endpoint or Endpoint(base_url="scripted://local", model=model)
        self.calls = 0
        self.prompts: list[str] = []

    @classmethod
    def from_endpoint(cls, endpoint: Endpoint) -> ScriptedModel:
        """The scripted model an endpoint names: ``OLAKIT_BASE_URL=scripted://package.module:function`` answers with
        that function (importable on the process's path), so a command, a notebook or a sweep can be tested without
        a server, exactly as it reaches a real endpoint."""
        spec = endpoint.base_url.removeprefix(SCRIPTED)
        module, _, name = spec.partition(":")
        try:
            reply = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise LLMError(
                f"{endpoint.base_url}: no reply function {name!r} in module {module!r} ({exc}); give "
                "scripted://package.module:function"
            ) from None
        return cls(reply, endpoint=endpoint)

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        answered: dict[str, Reply] = {}
        out = []
        for request in requests:
            key = cache_key(self.endpoint.identity, request)
            if key in answered:
                out.append(replace(answered[key], cached=True))
                continue
            prompt = request.message_dicts()[-1].get("content") or ""
            self.calls += 1
            self.prompts.append(prompt)
            try:
                got = self.reply(prompt, {"messages": request.message_dicts(), **request.call_params()})
            except Exception as exc:  # a failed call, as the client records one
                answered[key] = Reply(key=key, error=f"{type(exc).__name__}: {exc}", attempts=1)
                out.append(answered[key])
                continue
            text, finish, calls = scripted_turn(got)
            shown = got.get("reasoning") if isinstance(got, dict) else None  # a server's separate thinking field
            thought = split_thinking(text, {"reasoning": shown} if shown else None, None, finish)
            thinking = len(thought.reasoning.split())  # counted in words, with the answer's, as completion tokens
            answered[key] = Reply(
                key=key,
                text=thought.text,
                prompt_tokens=len(prompt.split()),
                completion_tokens=len(thought.text.split()) + thinking,
                finish_reason=finish,
                cost=0.0,
                latency=0.0,
                attempts=1,
                tool_calls=calls,
                reasoning=thought.reasoning,
                reasoning_tokens=thinking if thought.reasoning else None,
                unfinished=thought.unfinished,
            )
            out.append(answered[key])
        return out
