"""What one call asks for (Request), what came back (Reply), and the cache key that names it.

The cache key is the endpoint identity (base URL + model), the messages, every parameter that changes the output,
the sample index and, for a replicate, its index (a request asked again past the cache: olakit.llm.answerer
.Replicate). Retries, timeouts and concurrency stay out of the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace


class Frozen(str):
    """A nested value of a message or a parameter (a tool call list, a tools schema) kept as its JSON text, so a
    Request stays hashable; sent and keyed as the value itself."""


def _freeze(value):
    return Frozen(json.dumps(value, sort_keys=True, ensure_ascii=False)) if isinstance(value, (dict, list)) else value


def _thaw(value):
    return json.loads(value) if isinstance(value, Frozen) else value


@dataclass(frozen=True)
class Request:
    """One chat completion to make: messages, output-changing parameters and a sample index."""

    messages: tuple
    params: tuple = ()
    sample: int = 0
    replicate: int = 0
    """0, or which replicate of the run asks this again: in the cache key (so it is called again), never sent."""

    @classmethod
    def make(cls, messages: Sequence[dict] | str, sample: int = 0, **params) -> Request:
        """``Request.make("2+2?", max_tokens=8)``; a string becomes one user message. Nested values (an assistant
        message's ``tool_calls``, the ``tools`` parameter) are kept frozen and sent as they were given."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        msgs = tuple(tuple(sorted((k, _freeze(v)) for k, v in m.items())) for m in messages)
        return cls(messages=msgs, params=tuple(sorted((k, _freeze(v)) for k, v in params.items())), sample=sample)

    def continued(self, messages: Sequence[dict], **params) -> Request:
        """The next turn of this request's conversation: ``messages``, its own parameters (``params`` added or
        replacing), its sample and replicate index (so each sample's conversation stays its own in the cache).

        >>> Request.make("hi", sample=2, seed=10).continued([{"role": "user", "content": "more"}], stop=["x"]).sample
        2
        """
        own = {k: _thaw(v) for k, v in self.params}
        return replace(Request.make(messages, sample=self.sample, **(own | params)), replicate=self.replicate)

    def message_dicts(self) -> list[dict]:
        return [{k: _thaw(v) for k, v in m} for m in self.messages]

    def call_params(self) -> dict:
        """Parameters sent: a seed is offset by the sample index so samples differ yet repeat.

        >>> Request.make("hi", sample=2, seed=10).call_params()
        {'seed': 12}
        """
        params = {k: _thaw(v) for k, v in self.params}
        if "seed" in params and self.sample:
            params["seed"] = int(params["seed"]) + self.sample
        return params


@dataclass
class Reply:
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
    fingerprint: str | None = None
    """The endpoint's ``system_fingerprint`` for this answer, when it sends one (the backend that made it)."""
    batched: bool = False
    """Paid through a provider batch (olakit.llm.batch), at the batch rate."""
    tool_calls: tuple = ()
    """The functions the model called (the OpenAI tools API), each ``{"id", "name", "arguments"}`` with the
    arguments as the JSON text the model wrote; ``text`` is then its content, often empty."""
    reasoning: str = ""
    """The model's thinking, kept apart from ``text`` (olakit.thinking.split_thinking): never read for an
    answer, a note, a vote or a review."""
    reasoning_tokens: int | None = None
    """Reasoning tokens the endpoint reported (``usage.completion_tokens_details``); part of completion_tokens."""
    unfinished: bool = False
    """Cut off (finish ``length``) while still thinking: the reply has no answer."""

    @property
    def ok(self) -> bool:
        return self.error is None


def cache_key(identity: str, request: Request) -> str:
    """sha256 over endpoint identity, messages, parameters, sample index and a replicate's index (only when it has
    one: every other key is as it was before replicates)."""
    fields = {
        "endpoint": identity,
        "messages": request.message_dicts(),
        "params": {k: _thaw(v) for k, v in request.params},
        "sample": request.sample,
    }
    if request.replicate:
        fields["replicate"] = request.replicate
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
