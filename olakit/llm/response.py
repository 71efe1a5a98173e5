"""Reading a chat-completion response body, and describing a failure in one line."""

from __future__ import annotations

import json

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
