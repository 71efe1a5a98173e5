"""Prefix lanes: the order in which a batch's uncached calls go out, so that an endpoint's prompt cache is reused.

A llama.cpp server keeps each slot's KV cache and evaluates only the part of a new prompt after the prefix it shares
with that slot's previous prompt; a prompt sent to another slot, or at the same moment as its twin, is evaluated
whole. vLLM and OpenAI cache prefixes across requests once the first has been evaluated. So the calls of a batch are
sorted by their text (prompts with a common beginning become neighbours: the OlaGPT grid's notes block shared by
every template of a question and strategy, GEEK's growing question state, the review loop's repeated context),
neighbours sharing at least half of the shorter prompt form a group, and each group is a *lane* whose calls go one
after another: the first evaluates the shared prefix, the next find it cached. Lanes run side by side up to the
client's concurrency; a group longer than its fair share of the batch is cut into several lanes so that a batch of
near-identical prompts still uses every slot.

Only the order changes: the same calls are made and each answer is stored under its own cache key.

``lanes(["n1 t1", "q", "n1 t2"], 2, min_chars=2)`` -> ``[[0, 2], [1]]``
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

MIN_SHARED = 0.5
"""Neighbours join a group when their common prefix is at least this share of the shorter prompt ..."""
MIN_CHARS = 64
"""... and at least this many characters (a short shared system line alone does not make a group)."""


def prompt_text(messages: Sequence[dict]) -> str:
    """The text a server sees first to last: each message's role and content.

    >>> prompt_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
    'system\\x1fBe brief.\\x1euser\\x1f2+2?\\x1e'
    """
    return "".join(f"{m.get('role', '')}\x1f{m.get('content', '')}\x1e" for m in messages)


def shared_prefix(a: str, b: str) -> int:
    """Length of the common beginning of two strings.

    >>> shared_prefix("notes. template A", "notes. template B")
    16
    """
    n = min(len(a), len(b))
    return len(os.path.commonprefix([a[:n], b[:n]]))


def groups(texts: Sequence[str], min_share: float = MIN_SHARED, min_chars: int = MIN_CHARS) -> list[list[int]]:
    """Indices of ``texts`` grouped by shared prefix: sorted by text, neighbours whose common prefix is at least
    ``min_share`` of the shorter one and at least ``min_chars`` characters are in one group.

    >>> groups(["notes X, template 2", "other", "notes X, template 1"], min_chars=5)
    [[2, 0], [1]]
    """
    order = sorted(range(len(texts)), key=lambda i: texts[i])
    out: list[list[int]] = []
    for i in order:
        if out:
            prev = texts[out[-1][-1]]
            common = shared_prefix(prev, texts[i])
            if common >= max(min_chars, min_share * min(len(prev), len(texts[i]))):
                out[-1].append(i)
                continue
        out.append([i])
    return out


def lanes(
    texts: Sequence[str], concurrency: int, min_share: float = MIN_SHARED, min_chars: int = MIN_CHARS
) -> list[list[int]]:
    """The groups of ``texts`` as lanes, longest first: a group longer than ``ceil(len(texts) / concurrency)`` is
    cut into lanes of at most that length, so every slot has work while each lane keeps its prefix warm.

    >>> lanes(["p a", "p b", "p c", "p d"], 2, min_chars=1)
    [[0, 1], [2, 3]]
    """
    if not texts:
        return []
    cap = max(1, math.ceil(len(texts) / max(1, concurrency)))
    out = []
    for group in groups(texts, min_share, min_chars):
        out += [group[i : i + cap] for i in range(0, len(group), cap)]
    return sorted(out, key=len, reverse=True)
