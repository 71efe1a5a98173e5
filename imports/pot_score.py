"""Program of Thoughts' own scoring (its outputs/compute_score.py with tool.finqa_equal, wenhuchen/Program-of-Thoughts
@850399c), written out as olakit score rules, so an import of its recorded runs counts what its README prints:

- ``equal``: a number is compared after rounding both sides to the fewer decimal places either is written with (so
  ``7.999999`` against ``8.0`` is equal at 1 place); a text (an option letter) is compared as a string; no answer is
  wrong; a JSON boolean is the gold ``yes``/``no``.
- ``relaxed``: ``equal``, with the letter ``None`` (no option matched the program's value) counted as ``A``, as its
  README's zero-shot AQuA row is scored (``--relaxed``).
- ``gold_in_line``: run_aqua_gpt4.py's rule for its GPT-4 CoT run (below).

Use: ``score: pot_score:equal`` in an import spec beside this file (imports/pot_aqua.yaml, imports/pot_gsm8k.yaml).
"""


def _places(number) -> int:
    """Decimal places a number is written with (as Python prints it); 5 when it has no point."""
    shown = str(number)
    return len(shown.split(".")[-1]) if "." in shown else 5


def equal(answer, gold, row=None) -> bool:
    if answer is None:
        return False
    if isinstance(answer, bool):
        return gold == ("yes" if answer else "no")
    if isinstance(answer, str) or isinstance(gold, str):
        return answer == gold
    try:
        places = min(_places(answer), _places(gold))
        return round(answer, places) == round(gold, places)
    except TypeError:  # a tuple or another value no number
        return False


def relaxed(answer, gold, row=None) -> bool:
    return equal("A" if answer == "None" else answer, gold, row)


def gold_in_line(answer, gold, row=None) -> bool:
    """run_aqua_gpt4.py's rule for its GPT-4 CoT run: correct when the reply's last line holds the gold's ``X)``,
    whatever other options it names too."""
    return isinstance(answer, str) and f"{gold})" in answer
