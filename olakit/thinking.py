"""A reply's thinking kept apart from its answer, wherever its server put it (issue 50): a separate ``reasoning`` or
``reasoning_content`` field, ``<think>`` blocks in the content (an unclosed one at a cut-off included), or, from
OpenAI's reasoning models, only a count of reasoning tokens. Read by the client as answers arrive
(olakit.llm.client), by the cache for answers stored before (their text split on reading), and by imports of runs
made elsewhere (olakit.data.imported): no answer, note, vote or review is read from thinking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Thinking", "split_thinking"]


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
