"""Answer handling, one package of named steps that every method's answers and every imported run's go through:

- ``read`` (olakit.answering.extract, olakit.answering.read): an output's answer statement found by the run's reader
  (``strict``, ``olagpt``, ...) and read by its kind's reader (number, yes/no, choice, text), the rule it used kept
  (``read_rule``);
- ``second stage`` (olakit.answering.second_stage): an output cut off or unread gets Zero-shot-CoT's second call
  (``answer_stages=2``), read again;
- ``vote`` (olakit.answering.vote, olakit.answering.majority): several answers to one question combined under one
  vote rule, ties broken by the analysis seed;
- ``score`` (olakit.answering.score): the answer against the gold (olakit's reading, a source's own verdict, exact,
  or a user's function).

A method names its chain in the table of methods (``Method.answers``, olakit.method): OlaGPT ``read, second stage,
vote, score``; GEEK the same (its branch vote); the review loop and the notes build ``read, second stage, score``
and ``read, score``. An imported run's answers are read and scored by the same steps (olakit.data.imported). Scoring
is the report's, for every result alike (olakit.analysis.report); the other steps are called by the method's own
code, and tests/test_layout.py checks that each built-in method's package calls the steps its chain names and no
other.

The package's modules sit at different layers (pyproject's import contract): reading and voting below the data and
the model clients (datasets read their gold answers), the second stage above the clients (it makes a call). This
module imports none of them.
"""

STEPS = ("read", "second stage", "vote", "score")
"""The steps of answer handling, in order (a chain names some of them, in this order)."""
