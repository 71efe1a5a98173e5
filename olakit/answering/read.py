"""One reader per answer kind: a value as given (a dataset's gold, an imported run's answer, the statement an
extractor found in an output) read as a number, a yes/no, an option label or a free text, with the rule it used.
Datasets, imports, extraction, votes and scoring all read through these, so an answer means one thing everywhere;
each reading names its rule (``number:currency+thousands``, ``choice:parenthesised``), which the records keep
(``read_rule``) and the import tables count.

``read_number("$40,000")`` -> ``Reading("40000", "number:currency+thousands")``; ``read_choice("(C)", "ABCDE")``
-> ``Reading("C", "choice:parenthesised")``; anything a reader does not accept is ``Reading(None, "none")``.

The rules, each stated once:

- **number** (canonical: the value rounded to PLACES decimals, no trailing zeros, no sign on zero): a number
  (``18``, ``-3``, ``+3``, ``−3``, ``18.0``, ``.5``, ``1e3``), or one written with
  ``thousands`` separators (commas between groups of three: ``40,000``; ``1,8`` is no number), a ``fraction``
  (``3/4``), a ``currency`` sign or code before it (``$300``, ``\\$5``, ``USD 5``, ``€``, ``£``, ``¥``, ``Rs.``),
  a ``percent`` sign after it (``10%`` reads 10: the number as written, not 0.1), a ``unit`` of one or two words after
  it (``5 hours``, ``216 seconds``, ``12 km/h``), a worked ``solution`` ending ``#### N`` (GSM8K: what follows the
  last ``####``), an ``equation`` (``24 - 6 = 18``: what follows the last ``=``). A JSON boolean is no number;
  anything else (two numbers, a word) is none.
- **yes_no**: a JSON ``boolean`` (true/false), or the ``word`` yes, no, true or false in any case, a full stop or
  other punctuation around it allowed; in a sentence, the last answer ``statement`` (``So the answer is yes.``,
  ``Answer: no``, ``the answer (yes or no) is no``), else a ``leading`` word followed by punctuation (``No, because
  ...``, ``Yes. It is.``). 1 and 0 are not read as yes/no; nor is a sentence that states none of these.
- **choice**: a bare ``label`` of the question (``C``; a single letter in either case), ``parenthesised`` (``(C)``),
  ``label_paren`` (``C)``), the label with its own option's text (``label_text``: ``C) 12``), or the option's text
  itself (``option_text``, normalised); with the options as the run showed them, in another order than the
  question's, a letter names the option it named there (``shown_order``). Nothing else is a label: ``C).\\n\\nQ``
  is none.
- **text**: the text with the steps of the ``normalise`` setting (TextNormalise) applied (``case`` folded, runs
  of ``space`` as one, ``punctuation`` and whitespace stripped at both ends): rule ``text:case+space+punctuation``,
  or ``text:exact`` with no step.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Literal

PLACES = 6
"""Numeric answers are compared, and voted, after rounding to this many decimal places (the stated tolerance)."""
TEXT_STEPS = ("case", "space", "punctuation")
"""The steps of free-text normalisation, all applied by default."""
TextNormalise = tuple[Literal["case", "space", "punctuation"], ...]
"""The free-text normalisation setting, one definition for every setting that takes it (an import spec's
``normalise``, the review loop's): the TEXT_STEPS to apply, none (``[]``) for exact comparison."""
NONE = "none"
"""The rule of a value no reader accepts."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What a reader made of a value: the answer (a label, ``yes``/``no``, a canonical number, a normalised text)
    or None, and the rule that read it (``kind:rule``, or ``none``)."""

    value: str | None
    rule: str


_NOTHING = Reading(None, NONE)

# ---- numbers

_SIGN = r"[-+\u2212]"
_CURRENCY = r"(?:\\?\$|USD\s*|US\$|€|£|¥|Rs\.?\s*|INR\s*)"
_DIGITS = (
    r"(?P<grouped>\d{1,3}(?:,\d{3})+(?:\.\d+)?)|(?P<fraction>\d+\s*/\s*\d+)"
    r"|(?P<plain>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)"
)
_UNIT = r"[^\W\d_]+(?:[ /][^\W\d_]+)?\.?"
_NUMBER = re.compile(
    rf"^(?P<sign1>{_SIGN})?\s*(?P<currency>{_CURRENCY})?\s*(?P<sign2>{_SIGN})?\s*(?:{_DIGITS})\s*"
    rf"(?P<percent>%)?(?P<currency_after>\s*[$€£¥])?\s*(?P<unit>{_UNIT})?\s*[.,;!]?$"
)


def _canonical(number: Decimal) -> str | None:
    if not number.is_finite():
        return None
    with localcontext() as ctx:  # enough digits for the number's whole part and PLACES decimals (1e22 has 29)
        ctx.prec = max(28, number.adjusted() + PLACES + 2)
        rounded = number.quantize(Decimal(1).scaleb(-PLACES), rounding=ROUND_HALF_EVEN).normalize()
    shown = format(rounded, "f")
    return "0" if shown in ("-0", "0") else shown


def read_number(value) -> Reading:
    """A number, by the rules above.

    >>> [read_number(x).value for x in ("$40,000", "24 - 6 = 18", "5 hours", "10%", "18.0", "1,8", True, 2.5)]
    ['40000', '18', '5', '10', '18', None, None, '2.5']
    >>> read_number("She makes $18.\\n#### 1,800").rule
    'number:solution+thousands'
    """
    if isinstance(value, bool) or _is_numpy_bool(value):
        return _NOTHING
    if isinstance(value, int):
        return Reading(_canonical(Decimal(value)), "number:plain")
    if isinstance(value, float):
        if not math.isfinite(value):
            return _NOTHING
        return Reading(_canonical(Decimal(repr(value))), "number:plain")
    if not isinstance(value, str):
        if hasattr(value, "item") and not isinstance(value, list | tuple | dict):  # a numpy scalar
            return read_number(value.item())
        return _NOTHING
    text, rules = value.strip(), []
    if "####" in text:
        text, rules = text.rsplit("####", 1)[1].strip(), ["solution"]
    elif "=" in text:
        text, rules = text.rsplit("=", 1)[1].strip(), ["equation"]
    m = _NUMBER.match(text)
    if m is None or (m["sign1"] and m["sign2"]):
        return _NOTHING
    negative = (m["sign1"] or m["sign2"] or "") in ("-", "\u2212")
    try:
        if m["fraction"]:
            top, bottom = (int(x) for x in m["fraction"].split("/"))
            if bottom == 0:
                return _NOTHING
            frac = Fraction(top, bottom)
            number = Decimal(frac.numerator) / Decimal(frac.denominator)
        else:
            number = Decimal((m["grouped"] or m["plain"]).replace(",", ""))
    except (InvalidOperation, ValueError):
        return _NOTHING
    marks = {"currency": m["currency"] or m["currency_after"], "percent": m["percent"], "unit": m["unit"],
             "thousands": m["grouped"], "fraction": m["fraction"]}  # fmt: skip
    rules += [name for name, on in marks.items() if on]
    shown = _canonical(-number if negative else number)
    return Reading(shown, "number:" + ("+".join(rules) or "plain")) if shown is not None else _NOTHING


def canonical_number(value) -> str | None:
    """A number as one string, so equal numbers are one answer (read_number's value): ``"1,600"``, ``"18.00"`` and
    ``1600.0`` are ``"1600"``; None when ``value`` is no number.

    >>> [canonical_number(x) for x in ("1,600", "18.00", "-0", "3/4", "1/3", 2.5, "x")]
    ['1600', '18', '0', '0.75', '0.333333', '2.5', None]
    """
    return read_number(value).value


def _is_numpy_bool(value) -> bool:
    return type(value).__name__ in ("bool_", "bool") and hasattr(value, "dtype")  # numpy 1's bool_, numpy 2's bool


# ---- yes / no

_WORDS = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_EDGE = " \t\n\"'`.,;:!?()[]{}*_"


def read_yes_no(value) -> Reading:
    """``yes`` or ``no``, by the rules above.

    >>> [read_yes_no(x).value for x in (True, "False", " yes.", "No!", 1, "maybe")]
    ['yes', 'no', 'yes', 'no', None, None]
    >>> [read_yes_no(x).rule for x in ("So the answer is yes.", "No, because it is wet.", "Nobody knows.")]
    ['yes_no:statement', 'yes_no:leading', 'none']
    """
    if isinstance(value, bool) or _is_numpy_bool(value):
        return Reading("yes" if value else "no", "yes_no:boolean")
    if not isinstance(value, str):
        return _NOTHING
    word = _WORDS.get(value.strip(_EDGE).casefold())
    if word:
        return Reading(word, "yes_no:word")
    stated = _YES_NO_STATEMENT.findall(value)
    if stated:
        return Reading(_WORDS[stated[-1].casefold()], "yes_no:statement")
    lead = _YES_NO_LEADING.match(value)
    return Reading(_WORDS[lead[1].casefold()], "yes_no:leading") if lead else _NOTHING


_YES_NO_STATEMENT = re.compile(
    r"(?i)\banswer\b(?:\s*\([^()\n]{0,30}\))?\s*(?:is|would be|should be)?\s*[:=]?\s*[\"'(\[*]*\s*"
    r"(yes|no|true|false)\b"
)
"""An answer statement in a sentence: ``answer`` (an aside in brackets allowed), ``is`` or a colon, the word."""
_YES_NO_LEADING = re.compile(r"(?i)^[\s\"'*(]*(yes|no|true|false)\s*[,.;:!\-\u2014]+\s*\S")
"""A sentence that begins with the word and goes on after punctuation: ``No, because ...``."""


# ---- choices


def option_text(value) -> str:
    """An option's text as options are compared: NFKC, spacing as one space, case folded, a final full stop and a
    leading ``A)`` or ``(a)`` dropped.

    >>> option_text("(B) 12 km/h."), option_text("E)  None of these")
    ('12 km/h', 'none of these')
    """
    return _option_text(str(value))


@lru_cache(maxsize=1 << 16)
def _option_text(value: str) -> str:  # a dataset's options are read once per answer: cached by their text
    text = _SPACE.sub(" ", unicodedata.normalize("NFKC", value)).strip().strip(".").lower()
    return _LEADING_LABEL.sub("", text)


_SPACE, _LEADING_LABEL = re.compile(r"\s+"), re.compile(r"^\(?[a-z]\)\s*")


def read_choice(value, labels: Sequence[str], texts: Sequence[str] = (), shown: Sequence[str] | None = None) -> Reading:
    """One of ``labels`` (whose options' texts are ``texts``, in the same order), by the rules above; ``shown``: the
    options' texts as the run showed them (option_text), when it did.

    >>> [read_choice(x, "ABCDE").value for x in ("C", "(C)", "C)", "c", "C).\\n\\nQ", "F")]
    ['C', 'C', 'C', 'C', None, None]
    >>> read_choice("12 km/h", "AB", ["10 km/h", "12 km/h"]), read_choice("A", "AB", ["x", "y"], shown=["y", "x"])
    (Reading(value='B', rule='choice:option_text'), Reading(value='B', rule='choice:shown_order'))
    """
    if isinstance(value, list | tuple):
        value = value[0] if len(value) == 1 else None
    if value is None or isinstance(value, bool):
        return _NOTHING
    labels = list(labels)
    text = str(value).strip()
    m = _LABEL.fullmatch(text)
    if m and (m[1] is None or m[3] is not None):
        label = _label_of(m[2], labels)
        if label is not None:
            rule = "parenthesised" if m[1] else "label_paren" if m[3] else "label"
            moved = _shown_order(label, labels, texts, shown)
            return Reading(moved, "choice:shown_order") if moved is not None else Reading(label, f"choice:{rule}")
    own = [option_text(t) for t in texts] if texts else []
    if own:
        m = re.fullmatch(r"\(?\s*([^\W_]{1,3})\s*\)\s*(.+)", text, re.S)
        if m and (label := _label_of(m[1], labels)) is not None and option_text(m[2]) == own[labels.index(label)]:
            return Reading(label, "choice:label_text")
        hits = [lab for lab, t in zip(labels, own) if t == option_text(text)]
        if len(hits) == 1:
            return Reading(hits[0], "choice:option_text")
    return _NOTHING


_LABEL = re.compile(r"(\()?\s*([^\W_]+)\s*(\))?")


def _shown_order(label: str, labels: list[str], texts: Sequence[str], shown: Sequence[str] | None) -> str | None:
    """The label of the option a letter named where the run showed the options in another order than the dataset's
    (``shown``: their texts as shown): the dataset's label of that text, when exactly one option has it; else None."""
    own = [option_text(t) for t in texts] if texts and shown is not None else []
    if shown is None or not own or list(shown) == own or len(label) != 1 or _letter(label) >= len(shown):
        return None
    named = [lab for lab, t in zip(labels, own) if t == shown[_letter(label)]]
    return named[0] if len(named) == 1 else None


def _label_of(found: str, labels: list[str]) -> str | None:
    if found in labels:
        return found
    folded = [lab for lab in labels if lab.casefold() == found.casefold()]
    return folded[0] if len(folded) == 1 else None


def _letter(label: str) -> int:
    return ord(label.upper()) - 65


# ---- free text


def read_text(value, normalise: Sequence[str] = TEXT_STEPS) -> Reading:
    """A free-text answer as compared with its reference, the steps of ``normalise`` applied (TEXT_STEPS).

    >>> read_text("  New  York! "), read_text("New York", ())
    (Reading(value='new york', rule='text:case+space+punctuation'), Reading(value='New York', rule='text:exact'))
    """
    if value is None or isinstance(value, bool):
        return _NOTHING
    text = str(value)
    if "case" in normalise:
        text = text.casefold()
    if "space" in normalise:
        text = " ".join(text.split())
    if "punctuation" in normalise:
        text = text.strip(_EDGE)
    steps = [s for s in TEXT_STEPS if s in normalise]
    return Reading(text, "text:" + ("+".join(steps) or "exact")) if text else _NOTHING


# ---- by kind

KINDS = ("choice", "yes_no", "number", "text")


def read_answer(value, question, shown: Sequence[str] | None = None, normalise: Sequence[str] = TEXT_STEPS) -> Reading:
    """``value`` read as an answer to ``question`` (a Question), by its kind's reader.

    >>> from olakit.types import Question
    >>> read_answer("216 seconds", Question("q", "d", "How long?", {}, "216", kind="number"))
    Reading(value='216', rule='number:unit')
    """
    kind = question.kind
    if kind == "choice":
        return read_choice(value, list(question.options), list(question.options.values()), shown)
    if kind == "yes_no":
        return read_yes_no(value)
    if kind == "number":
        return read_number(value)
    if kind == "text":
        return read_text(value, normalise)
    raise ValueError(f"question {question.id}: answer kind {kind!r}; known: {', '.join(KINDS)}")
