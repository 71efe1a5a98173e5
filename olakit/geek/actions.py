"""GEEK's actions (seeds/002, Fig 2): Add Decomp, Retrieve & Extract, Self Answer, Final Answer; which a row may use;
parsing the core model's choice, and the one fallback when it cannot be used.

The fallback (``fallback``), for a reply that names no action, or one that cannot run now: with a sub-question
pending, answer it (Retrieve & Extract where the row has it, else Self Answer); otherwise Add Decomp while the
sub-question budget lasts, else Final Answer. Every fallback is counted in the trace.
"""

from __future__ import annotations

import re

DECOMP, RETRIEVE, SELF, FINAL = "decomp", "retrieve", "self", "final"
ACTIONS = (DECOMP, RETRIEVE, SELF, FINAL)
LETTERS = dict(zip(ACTIONS, "ABCD"))
NAMES = {DECOMP: "add decomp", RETRIEVE: "retrieve", SELF: "self answer", FINAL: "final answer"}
ROWS = {
    "zero-shot": (),
    "CoT": (),
    "+De": (DECOMP, SELF, FINAL),
    "+RE": (DECOMP, RETRIEVE, SELF, FINAL),
    "Full": (DECOMP, RETRIEVE, SELF, FINAL),
}
"""The seed's Table 2 rows: zero-shot and CoT answer directly; +De decomposes and answers itself; +RE also
retrieves; Full adds strategy exploration (branches at Add Decomp)."""


def parse_action(text: str | None, allowed) -> str | None:
    """The action a reply names: its letter (``B``, ``(B)``, ``Action: B``) or its name; None when it names none
    of ``allowed``.

    >>> parse_action("B", [DECOMP, RETRIEVE, SELF, FINAL])
    'retrieve'
    >>> parse_action("I would do a Final Answer now.", [DECOMP, FINAL])
    'final'
    >>> parse_action("maybe", [DECOMP]) is None
    True
    """
    text = (text or "").strip()
    m = re.match(r"^\W*(?:action\W*)?([A-D])\b", text, re.I)
    if m:
        found = next((a for a, letter in LETTERS.items() if letter == m.group(1).upper()), None)
        return found if found in allowed else None
    low = text.lower()
    hits = [a for a in allowed if NAMES[a] in low or (a == RETRIEVE and "extract" in low)]
    return hits[0] if len(hits) == 1 else None


def usable(action: str, pending: bool, n_sub: int, max_sub: int) -> bool:
    """Whether an action can run now: answering needs a pending sub-question; a new one needs none pending and
    budget left."""
    if action in (RETRIEVE, SELF):
        return pending
    if action == DECOMP:
        return not pending and n_sub < max_sub
    return True


def fallback(allowed, pending: bool, n_sub: int, max_sub: int) -> str:
    """The one documented fallback (see the module docstring)."""
    if pending:
        return RETRIEVE if RETRIEVE in allowed else SELF
    return DECOMP if n_sub < max_sub else FINAL
