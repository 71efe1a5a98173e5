"""Reading a chat-completion response body, and describing a failure in one line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from olakit.llm.retry import MalformedResponse


def parse_body(raw: bytes) -> dict:
    """The JSON body of a 2xx response, or MalformedResponse (retried)."""
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise MalformedResponse(f"unparseable response body ({exc}): {raw[:200]!r}") from exc
    if not isinstance(body, dict):
        raise MalformedResponse(f"response body is not an object: {raw[:200]!r}")
    return body


def first_choice(resp: dict) -> tuple[str, str | None, dict | None]:
    """(text of the first choice, its finish_reason, usage) of a chat-completion body.

    >>> first_choice({"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}], "usage": None})
    ('4', 'stop', None)
    """
    choices = resp.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if first is None:
        raise MalformedResponse(f"response without choices: {str(resp)[:200]!r}")
    message = first.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if text is None and isinstance(message, dict) and message.get("tool_calls"):
        text = ""  # a turn of tool calls only
    if not isinstance(text, str):
        raise MalformedResponse(f"response without message content: {str(resp)[:200]!r}")
    return text, first.get("finish_reason"), resp.get("usage")


def tool_calls_of(resp: dict) -> tuple:
    """The first choice's tool calls as ``({"id", "name", "arguments"}, ...)`` (arguments: the JSON text the model
    wrote, unparsed: a malformed call is the tool loop's to report); () when it made none.

    >>> tool_calls_of({"choices": [{"message": {"content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...     "function": {"name": "calculator", "arguments": "{\\"input\\": \\"2+2\\"}"}}]}}]})
    ({'id': 'c1', 'name': 'calculator', 'arguments': '{"input": "2+2"}'},)
    """
    message = (resp.get("choices") or [{}])[0].get("message") or {}
    calls = message.get("tool_calls") or []
    out = []
    for i, call in enumerate(calls if isinstance(calls, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out.append({"id": str(call.get("id") or f"call_{i}"), "name": str(fn.get("name") or ""),
                        "arguments": fn.get("arguments") if isinstance(fn.get("arguments"), str)
                        else json.dumps(fn.get("arguments"))})  # fmt: skip
    return tuple(out)


def describe(exc: BaseException) -> str:
    """``"RateLimitError 429: ..."``: the error's type, status and message, cut to 300 characters."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {str(exc)[:300]}"


@dataclass(frozen=True)
class Thinking:
    """A reply's answer with its thinking kept apart: ``text`` the answer (what is read, voted, reviewed), the
    ``reasoning`` (never read for an answer), the reasoning tokens the endpoint reported (None: not reported), and
    ``unfinished``: the reply was cut off (finish ``length``) while it was still thinking, so it has no answer."""

    text: str
    reasoning: str = ""
    reasoning_tokens: int | None = None
    unfinished: bool = False


_THINK = re.compile(r"<think>(.*?)</think>", re.S)


def split_thinking(text: str | None, message: dict | None = None, usage: dict | None = None,
                   finish_reason: str | None = None) -> Thinking:  # fmt: skip
    """The answer and the thinking of a reply, as its server speaks: a separate ``reasoning`` field (vLLM with a
    reasoning parser) or ``reasoning_content`` (DeepSeek's API, older vLLM, llama.cpp with a reasoning format),
    else ``<think>...</think>`` blocks in the content (a server without a parser), an unclosed one at the end being
    thinking cut off; reasoning tokens from ``usage.completion_tokens_details.reasoning_tokens`` (OpenAI's reasoning
    models return no thinking, only its count).

    >>> t = split_thinking("<think>B? no, A.</think>So the answer is A.")
    >>> t.text, t.reasoning, t.unfinished
    ('So the answer is A.', 'B? no, A.', False)
    >>> split_thinking("<think>Let me weigh C against", finish_reason="length").unfinished
    True
    """
    text = text or ""
    message = message if isinstance(message, dict) else {}
    parts = [message.get(k) for k in ("reasoning", "reasoning_content") if isinstance(message.get(k), str)]
    parts = [p for p in parts if p.strip()][:1]  # a server that sends both sends the same text twice
    parts += [m.strip() for m in _THINK.findall(text)]
    answer = _THINK.sub("", text)
    cut = "<think>" in answer  # opened and never closed: the reply ended while thinking
    if cut:
        answer, rest = answer.split("<think>", 1)
        parts.append(rest.strip())
    if "</think>" in answer and not parts:  # a template that opened the block in the prompt: its close only
        head, answer = answer.rsplit("</think>", 1)
        parts.append(head.strip())
    details = (usage or {}).get("completion_tokens_details") if isinstance(usage, dict) else None
    tokens = details.get("reasoning_tokens") if isinstance(details, dict) else None
    reasoning = "\n\n".join(p for p in parts if p)
    thought = bool(reasoning) or (isinstance(tokens, int) and tokens > 0)  # OpenAI's: only the count is shown
    unfinished = finish_reason == "length" and (cut or (thought and not answer.strip()))
    return Thinking(answer.strip() if parts else answer, reasoning, tokens if isinstance(tokens, int) else None,
                    unfinished)  # fmt: skip
