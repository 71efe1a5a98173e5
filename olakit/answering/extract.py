"""Answer extraction: turn a model's text into an option label, or None when there is none.

Extractors are looked up by name in ``EXTRACTORS``:

- ``"olagpt"``: the OlaGPT authors' own rule (utils/parse_option), the first match of
  ``\\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+``. Used to reproduce their numbers. It ignores the option
  labels, exactly as they did (an ``F`` on a five-option question is extracted, and is wrong).
- ``"strict"``: for live runs. The last explicit answer statement wins: JSON ``{"Answer": "C)..."}``,
  ``Answer: C``, ``the answer is (C)``, ``\\boxed{C}``, ``答案是C``; failing those, a ``(C)`` on the last
  non-empty line. Only labels of the question count. Nothing else is guessed.

``extract("strict", 'so {"Answer": "C)12"}', ["A", "B", "C"]) -> "C"``
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from olakit.answering.read import TEXT_STEPS, canonical_number, read_text
from olakit.errors import lookup

OLAGPT_PATTERN = re.compile(r"\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+")
"""The authors' pattern, as they wrote it (searched from every start, it is quadratic in the text's length)."""
OLAGPT_SEARCH = re.compile(r"[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]")
"""What ``OLAGPT_PATTERN.search`` finds, found in linear time: its leading ``\\{*?.*?`` only moves the match start
within a line, so its first match captures the label of the first ``answer`` (in text order) that is followed, past
no capital, by A-F and a non-letter. tests/test_extract.py checks both agree on every recorded output."""


def extract_olagpt(text: str, labels: Sequence[str] = ()) -> str | None:
    """OlaGPT's parse_option: first regex match, else None (they kept the raw text, which never matches).

    >>> extract_olagpt("Answer: {Answer: D}\\n")
    'D'
    """
    m = OLAGPT_SEARCH.search(text or "")
    return m.group(1) if m else None


def _statements(lab: str, flags: int) -> list[re.Pattern]:
    """The answer statements around a label pattern ``lab`` (one group): {"Answer": "C)12"}, Answer: C, the answer
    is (C), final answer = C, \\boxed{C}, 答案是C."""
    end = r"(?=\s*(?:[)\]}\"'.,:;]|$))"  # the label must close the statement
    return [
        re.compile(
            # an aside after "answer" is allowed: "the answer (yes or no) is no", Zero-shot-CoT's trigger
            rf"(?i:answer)(?:\s*\([^()\n]{{0,30}}\))?[\"']?\s*(?:(?i:is|would be|should be)\s*)?[:=]?\s*"
            rf"[\"'(\[{{]*\s*{lab}{end}",
            flags | re.MULTILINE,
        ),
        re.compile(rf"\\boxed\{{\s*\(?\s*{lab}", flags),
        re.compile(rf"答案\s*(?:是|为|應為|应为)?\s*[:：]?\s*[（(\"“]?\s*{lab}", flags),
    ]


@lru_cache(maxsize=64)
def _strict_patterns(labels: tuple[str, ...]) -> tuple[list[re.Pattern], re.Pattern]:
    alt = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    word = all(len(label) > 1 for label in labels)  # yes/no style labels match case-insensitively
    flags = re.IGNORECASE if word else 0
    lab = rf"(?<![A-Za-z])({alt})(?![A-Za-z])"
    return _statements(lab, flags), re.compile(rf"\(\s*{lab}\s*\)", flags)


def extract_strict(text: str, labels: Sequence[str] = ("A", "B", "C", "D", "E")) -> str | None:
    """The last explicit answer statement among the question's labels, else a ``(X)`` on the last line.

    >>> extract_strict("First B looked right.\\nAnswer: C", ["A", "B", "C"])
    'C'
    >>> extract_strict("I think it is B", ["A", "B", "C"]) is None
    True
    """
    text = text or ""
    if not labels:
        return None
    statements, final = _strict_patterns(tuple(labels))
    best = _last_statement(statements, text)
    if best is None:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        hits = final.findall(lines[-1]) if lines else []
        if not hits:
            return None
        best = (0, hits[-1])
    return _canonical(best[1], labels)


def _last_statement(patterns: Sequence[re.Pattern], text: str) -> tuple[int, str] | None:
    """The statement that starts last in ``text`` among the matches of every pattern: (where its answer starts, the
    answer, its first group); None when none matches."""
    found = [(m.start(1), m.group(1)) for pattern in patterns for m in pattern.finditer(text)]
    return max(found, key=lambda hit: hit[0]) if found else None


def _canonical(found: str, labels: Sequence[str]) -> str:
    """Map a case-insensitive match back to the label's own spelling."""
    for label in labels:
        if label.lower() == found.lower():
            return label
    return found


NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+"
"""A number as written in an answer: ``1,600``, ``-3``, ``0.25``, ``.5``, ``3/4``."""
_MONEY = r"(?:\\?\$|USD\s*|€|£)?"
_NOT_AN_EXPRESSION = r"(?!\s*[-+*/×^=]\s*\$?\d)(?!\s*x\s*\d)"
"""A number followed by an operator and another number is an unevaluated expression (``Answer: 50 * 35``), not an
answer."""
_NUMBER_STATEMENTS = [
    re.compile(
        rf"(?i:answer)(?:\s*\([^()\n]{{0,30}}\))?[\"']?\s*(?:(?i:is|would be|should be|=)\s*)?[:=]?\s*"
        rf"[\"'(\[{{]*\s*{_MONEY}\s*({NUMBER})(?![\d,]*\.?\d){_NOT_AN_EXPRESSION}",
        re.MULTILINE,
    ),
    re.compile(rf"\\boxed\{{\s*{_MONEY}\s*({NUMBER}){_NOT_AN_EXPRESSION}"),
    re.compile(rf"####\s*{_MONEY}\s*({NUMBER}){_NOT_AN_EXPRESSION}"),
    re.compile(rf"答案\s*(?:是|为|應為|应为)?\s*[:：]?\s*{_MONEY}\s*({NUMBER}){_NOT_AN_EXPRESSION}"),
]
_LAST_LINE_NUMBER = re.compile(rf"^\W*{_MONEY}\s*({NUMBER})\s*(?:[A-Za-z%]+\.?)?\W*$")


def extract_number(text: str, labels: Sequence[str] = ()) -> str | None:
    """The number an output states as its answer (olakit.answering.read.canonical_number), for a question without
    options: the last explicit statement (``{"Answer": 18}``, ``Answer: $18``, ``the answer is 1,600``, ``\\boxed{18}``,
    ``#### 18``, ``答案是18``), else a last line that is just a number (with a unit or ``$``); nothing else is
    guessed.

    >>> extract_number("9 * 2 = 18 dollars.\\nSo the answer is $18.")
    '18'
    >>> extract_number("She has 3 apples and buys 4 more.") is None
    True
    """
    text = text or ""
    best = _last_statement(_NUMBER_STATEMENTS, text)
    if best is None:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        m = _LAST_LINE_NUMBER.match(lines[-1].strip()) if lines else None
        if m is None:
            return None
        best = (0, m.group(1))
    return canonical_number(best[1])


def _by_kind(fn: Callable[[str, Sequence[str]], str | None]) -> Callable[[str, Sequence[str]], str | None]:
    """An extractor for every answer kind: a question with options (letters, yes/no) is read by ``fn``; one
    without options has a numeric answer, read by extract_number whatever the extractor's name."""

    def read(text: str, labels: Sequence[str] = ()) -> str | None:
        return fn(text, labels) if labels else extract_number(text)

    read.__name__, read.__doc__ = fn.__name__, fn.__doc__
    return read


def extract_option_mark(text: str, labels: Sequence[str] = ("A", "B", "C", "D", "E")) -> str | None:
    """The one label the text writes as an option, ``X)`` (a reply that ends by restating its option, as the
    GPT-4 CoT outputs PoT recorded on AQuA); None when it writes none or several.

    >>> extract_option_mark("so it is E) None of these", "ABCDE"), extract_option_mark("A) 5 or B) 6", "ABCDE")
    ('E', None)
    """
    alt = "|".join(re.escape(label) for label in labels)
    found = set(re.findall(rf"(?<![A-Za-z0-9])({alt})\)", text or ""))
    return found.pop() if len(found) == 1 else None


EXTRACTORS: dict[str, Callable[[str, Sequence[str]], str | None]] = {
    "olagpt": extract_olagpt,
    "strict": extract_strict,
    "option_mark": extract_option_mark,
}


def get_extractor(name: str) -> Callable[[str, Sequence[str]], str | None]:
    """The extractor registered under ``name`` (UnknownNameError lists the known ones), reading a question
    without options (a numeric answer) with extract_number."""
    return _by_kind(lookup(EXTRACTORS, name, "extractor"))


def extract(name: str, text: str, labels: Sequence[str]) -> str | None:
    """Extract with the named extractor."""
    return get_extractor(name)(text, labels)


_TEXT_STATEMENT = re.compile(
    r"(?i:(?:final\s+)?answer(?:\s+is)?)\s*[:=]\s*(.+)$|(?i:the answer is)\s+(.+)$", re.MULTILINE
)


def extract_text(text: str, labels: Sequence[str] = (), normalise: Sequence[str] = TEXT_STEPS) -> str | None:
    """The free-text answer an output states, normalised by ``normalise`` (olakit.answering.read.read_text): the last
    ``Answer: ...`` (or ``the answer is ...``) to the end of its line, else the last non-empty line; None when
    nothing is left.

    >>> extract_text("Take the last letters.\\nAnswer: Yajo."), extract_text("So it is  WEtj")
    ('yajo', 'so it is wetj')
    """
    text = text or ""
    found = [m.group(1) or m.group(2) for m in _TEXT_STATEMENT.finditer(text)]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return read_text(found[-1] if found else (lines[-1] if lines else ""), normalise).value


_ANY_LABEL_STATEMENTS = _statements(r"(?<![A-Za-z])([A-Z]|(?i:yes|no))(?![A-Za-z])", 0)
"""The strict extractor's statements with any capital letter (or yes/no) in place of the question's labels."""
UNFINISHED = "unfinished"
"""The cause of a reply cut off at the token limit while its model was still thinking: it has no answer at all."""
UNPARSED_CAUSES = ("cut_off", "not_an_option", "no_answer", UNFINISHED)
"""Why an answer is unparsed: the output stopped at the token limit (``cut_off``), it states an answer that is not
one of the question's labels (``not_an_option``), it finished without an answer statement (``no_answer``), or a
reasoning model's reply was cut off while it was still thinking (``unfinished``: its answer never began)."""


def unparsed_cause(text: str | None, labels: Sequence[str], finish_reason: str | None = None) -> str:
    """Why an output gave no answer (see UNPARSED_CAUSES); ``finish_reason`` is the endpoint's (None: unknown).

    >>> unparsed_cause("Step 1: 3 + 4", ["A", "B"], "length")
    'cut_off'
    >>> unparsed_cause("So the Answer: F", ["A", "B", "C", "D", "E"], "stop")
    'not_an_option'
    >>> unparsed_cause("so \\\\boxed{F}", ["A", "B", "C", "D", "E"]), unparsed_cause("答案是F", ["A", "B"])
    ('not_an_option', 'not_an_option')
    >>> unparsed_cause("I think it is one of them.", ["A", "B"], "stop")
    'no_answer'
    """
    if finish_reason == "length":
        return "cut_off"
    if not labels:  # a numeric answer: any statement it makes is read as a number
        return "no_answer"
    known = {label.lower() for label in labels}
    for pattern in _ANY_LABEL_STATEMENTS:
        for m in pattern.finditer(text or ""):
            if m.group(1).lower() not in known:
                return "not_an_option"
    return "no_answer"
