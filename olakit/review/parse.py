"""Reading the model's outputs in the review loop: the step count at the end of an outline (digits, English words,
Chinese numerals), the three similar questions, the best of three, and the review's scores (parsed strictly).
"""

from __future__ import annotations

import re

WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
CHINESE = dict(zip("一二三四五六七八九十", range(1, 11))) | {"两": 2}
_NUM = r"(\d+|zero|one|two|three|four|five|six|seven|eight|nine|ten|[一二三四五六七八九十两])"
_STEP_PATTERNS = [
    rf"total\s*(?:number\s+of\s+)?(?:steps?|sub-?problems?)\s*[:：=]?\s*{_NUM}",
    rf"number\s+of\s+(?:steps?|sub-?problems?)\b[^\n\d]{{0,40}}?\b(?:is|are|equals?)\s*{_NUM}",
    rf"(?:steps?|sub-?problems?)\s*(?:in\s+total)?\s*[:：=]\s*{_NUM}",
    rf"there\s+are\s+{_NUM}\s+(?:steps?|sub-?problems?)",
    rf"{_NUM}\s*(?:steps?|sub-?problems?)\b",
    rf"(?:总共有|共)?\s*{_NUM}\s*个?步(?:骤)?",
]


def _number(token: str) -> int | None:
    token = token.lower()
    if token.isdigit():
        return int(token)
    return WORDS.get(token, CHINESE.get(token))


def parse_steps(outline: str | None) -> int:
    """The number of steps an outline states on one of its last lines (1-10), else 0.

    >>> parse_steps("1. Define\\n2. Explain\\nTotal Steps: 2")
    2
    >>> parse_steps("...\\nThere are five steps.")
    5
    >>> parse_steps("...\\n总共有三个步骤")
    3
    >>> parse_steps("1. A\\n2. B\\nThe total number of steps in this outline is 5.")
    5
    >>> parse_steps("no count here")
    0
    """
    lines = [ln.strip() for ln in (outline or "").strip().splitlines() if ln.strip()]
    for line in reversed(lines[-3:]):
        for pattern in _STEP_PATTERNS:
            m = re.search(pattern, line, re.IGNORECASE)
            if m and (n := _number(m.group(1))) is not None and 1 <= n <= 10:
                return n
        bare = re.fullmatch(rf"\**{_NUM}\**\.?", line, re.IGNORECASE)
        if bare and (n := _number(bare.group(1))) is not None and 1 <= n <= 10:
            return n
    return 0


_SEED_STEP = re.compile(
    r"(?:Total\s*Steps?:\s*(\d+))|(?:Step\s*(\d+))|(?:There\s+are\s+(\d+)\s+steps?)"
    r"|(?:There\s+are\s+(\d+)\s+sub-problems?)|(?:总共有\s*(\d+)\s*个?步骤)|(?:\s*(\d+)\s*步)"
    r"|(?:\s*([一二三四五六七八九十])\s*个?步骤)|(?:\s*([a-zA-Z]+)\s*steps?)|(?:\s*(\d+)\s*个?步骤)",
    re.IGNORECASE,
)


def _seed_number(token: str) -> int | None:
    """A count as the seed's parser reads it: a Chinese numeral or an English word (zero-ten) as is, digits 1-10."""
    if re.fullmatch(r"[一二三四五六七八九十]", token):
        return CHINESE.get(token)
    if re.fullmatch(r"[a-zA-Z]+", token):
        return WORDS.get(token.lower())
    return int(token) if token.isdigit() and 1 <= int(token) <= 10 else None


def parse_steps_seed(outline: str | None) -> int:
    """The step count as the seed's code (V1.4 ``parse_steps``) reads it, for the ``literal`` behaviour: every
    line from the last up; the first line that matches one of its patterns ("Total Steps: n", "Step n" anywhere,
    "There are n steps", "n步", "five steps", ...) gives the count if it reads as one, else the search goes on; a
    line that matches none counts if it is a bare number, a bare English number word or a Chinese numeral with 步.
    0 when nothing reads.

    >>> parse_steps_seed("1. Gather\\n...\\nStep 4: conclude")
    4
    >>> parse_steps_seed("Total Steps: 8")
    8
    >>> parse_steps_seed("no count here")
    0
    """
    for line in (outline or "").strip().split("\n")[::-1]:
        m = _SEED_STEP.search(line)
        if m:
            for group in m.groups():
                if group and (n := _seed_number(group)) is not None:
                    return n
            continue
        bare = re.fullmatch(r"\s*(\d+)\s*", line) or re.fullmatch(r"\s*([a-zA-Z]+)\s*", line)
        if bare and (n := _seed_number(bare.group(1))) is not None:
            return n
        chinese = re.fullmatch(r"\s*([一二三四五六七八九十])\s*步", line)
        if chinese:
            return CHINESE[chinese.group(1)]
    return 0


def parse_similar(text: str | None) -> list[str]:
    """The similar questions: one per line (numbering and bullets dropped); when the lines are not three, the lines
    that end with a question mark, or else the question-mark-ended sentences, when those are three; else the
    non-empty lines as they are (the caller records how many came, and the loop goes on with them).

    >>> parse_similar("1. What is A?\\n2. What is B?\\n- What is C?")
    ['What is A?', 'What is B?', 'What is C?']
    >>> parse_similar("What is A? What is B? What is C?")
    ['What is A?', 'What is B?', 'What is C?']
    """
    clean = lambda t: re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", t).strip()  # noqa: E731
    lines = [clean(ln) for ln in (text or "").splitlines() if clean(ln)]
    if len(lines) == 3:
        return lines
    asked = [ln for ln in lines if ln.endswith("?")]
    if len(asked) == 3:
        return asked
    sentences = [clean(s.split("\n")[-1]) for s in re.findall(r"[^?]*\?", text or "") if s.strip()]
    if len(sentences) == 3:
        return sentences
    return lines


def parse_best(text: str | None, n: int = 3) -> int | None:
    """The best answer's position (0-based) from the last line of the common-outline reply, or None.

    >>> parse_best("common reasoning ...\\nBest: 2")
    1
    """
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    if not lines:
        return None
    m = re.search(rf"\b([1-{n}])\b", lines[-1])
    return int(m.group(1)) - 1 if m else None


def parse_scores(review: str | None) -> dict[str, int | None]:
    """The five scores (1-5) of a review, each from its own ``Name: n`` (or ``n/5``, ``n of five``) line; a
    criterion with no such line is None. ``overall`` also reads "General Score" and "Average Score".

    >>> parse_scores("Accuracy: 4\\nCompleteness: 3\\nClarity: 5\\nDepth: 4\\nOverall Score: 4/5")["overall"]
    4
    >>> parse_scores("Great answer, I would give it a 4.")["overall"] is None
    True
    """
    names = {
        "accuracy": "accuracy",
        "completeness": "completeness",
        "clarity": "clarity",
        "depth": "depth",
        "overall": r"(?:overall|general|average)(?:\s+score)?",
    }
    out: dict[str, int | None] = {}
    for key, name in names.items():
        found = None
        for line in (review or "").splitlines():
            m = re.search(
                rf"^\W*(?:\d+\.\s*)?{name}\s*(?:score)?\s*\**\s*[:：=]\s*\**\s*(\d|one|two|three|four|five)"
                rf"(?:\s*(?:/\s*5|of\s*(?:5|five)))?\b",
                line.strip(),
                re.IGNORECASE,
            )
            if m:
                value = _number(m.group(1))
                found = value if value is not None and 1 <= value <= 5 else None
        out[key] = found
    return out


_SEED_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_SEED_SCORE_RULES = (
    # (what the line must hold, the score it gives), tried in this order on each line from the last up
    (re.compile(r"(Overall|Average)\s+Score:\s*(\d+|one|two|three|four|five)(?:\s*of\s*(?:one|two|three|four|five)"
                r"|/\d+)?", re.IGNORECASE), lambda m: _seed_score(m.group(2).lower())),
    (re.compile(r"(\d|one|two|three|four|five)\s+of\s+(one|two|three|four|five)"), lambda m: _seed_score(m.group(1))),
    (re.compile(r"(\d)/(\d)"), lambda m: int(m.group(1)) if m.group(2) == "5" else _NO_SCORE),
    (re.compile(r"\b[1-5]\b"), lambda m: int(m.group(0))),
)  # fmt: skip
_NO_SCORE = object()
"""A rule that matched but gives no score: the seed's ``x/y`` with y other than 5 falls through to the next rule."""


def _seed_score(token: str) -> int | None:
    return int(token) if token.isdigit() else _SEED_WORDS.get(token)


def parse_score_seed(review: str | None) -> int | None:
    """The review's score as the seed's code (V1.4 ``extract_average_score_from_review``) reads it, for the
    ``literal`` behaviour: each line from the last up, the first of these that the line holds gives the score:
    "Overall Score: n" or "Average Score: n" (n digits or one-five, "n of five" and "n/m" after it allowed; the
    rule is only tried on a line that says "Overall Score:" or "Average Score:"), "x of y" (x one digit or
    one-five, y one-five, on the line in lower case), "x/5" (the first "x/y" of the line, when y is 5), and a lone
    digit 1-5. None when no line gives one. So "I rate it 3 of five" reads 3, "Depth: 2" on the last line reads 2,
    and "Overall Score: 10" reads 10, as the seed's code does.

    >>> parse_score_seed("Accuracy: 4\\nOverall Score: four of five")
    4
    >>> parse_score_seed("Good.\\nClarity 3/5\\nThanks!")
    3
    >>> parse_score_seed("No scores here.") is None
    True
    """
    for line in reversed((review or "").strip().split("\n")):
        for i, (pattern, score) in enumerate(_SEED_SCORE_RULES):
            if i == 0 and not re.search(r"(Overall|Average)\s+Score:", line, re.IGNORECASE):
                continue
            m = pattern.search(line.lower() if i == 1 else line)
            if m is not None and (value := score(m)) is not _NO_SCORE:
                return value
    return None


def states_an_answer(text: str | None) -> bool:
    """Whether a loop's final answer answers the question, for an open question (one with options is read by the
    strict reader instead). A heuristic, documented as one: False when the text is empty, carries review score lines
    (two or more criteria scored), or opens by talking about the answer or the review ("The original answer ...",
    "This review ...", "The revised answer addresses ..."), as a small model's revision often does.

    >>> states_an_answer("To face the music means to accept the consequences.")
    True
    >>> states_an_answer("The original answer is accurate but could give more depth.")
    False
    >>> states_an_answer("The answer is 42."), states_an_answer("The answer provides a clear definition.")
    (True, False)
    >>> states_an_answer("Accuracy: 4\\nCompleteness: 3\\nOverall Score: 3")
    False
    """
    text = (text or "").strip()
    if not text:
        return False
    if sum(v is not None for v in parse_scores(text).values()) >= 2:
        return False
    opening = text.splitlines()[0].lower()
    return not any(re.match(pattern, opening) for pattern in _COMMENTARY)


_COMMENTARY = (
    r"^\W*(?:the|this|your)\s+(?:original|revised|improved|given|provided|above)\s+(?:answer|response)\b",
    r"^\W*(?:the|this|your)\s+(?:review|response|feedback)\b",
    r"^\W*(?:the|this|your)\s+answer\s+(?:provides|covers|addresses|could|should|does|lacks"
    r"|is\s+(?:accurate|correct|clear|well|good|comprehensive|generally|mostly|largely))\b",
)
"""How commentary on an answer opens (``states_an_answer``); "The answer is 42." is an answer."""
