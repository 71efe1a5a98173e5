"""How tables are computed from records, the settings every analysis function takes whole: the vote rule (VoteRule:
the template order, the tie rule, what an unparsed answer does), the statistics (olakit.config.Stats: seed,
resamples, confidence level, decision level alpha) and both together (Analysis). They sit below the methods: an
OlaGPT run, a GEEK run, a review loop and an imported run are analysed under the same settings.

Where olakit departs from what the OlaGPT authors ran (read from their code at chachalin/OlaGPT@3be449a), the choice
is a setting whose default is the authors' behaviour; ``preset="olakit"`` picks olakit's choices together (the
run settings of OlaGPTConfig among them):

| setting | default (the authors', preset ``paper``) | preset ``olakit`` |
|---|---|---|
| vote_order | DT, DST, PT, ST, turbo (the order of the recorded candidate outputs) | DST, DT, PT, ST, turbo |
| unparsed | raw: an unparsed answer votes as its raw text | abstain: it is left out of the vote |
| notes_layout | the authors' note block (type, question, template prefix, explanation, answer) | answer first |
| template_position | ST's trigger after the answer-format sentence, the others before | after: every one after it |
| fill_up | off: retrieval/combine give fewer than n notes when the nearest type has fewer | on: next types fill up |
| llm_vote_prompt | the authors' wording, full candidate outputs, answer format at the end | labels and cut rationales |
| program_choice | model: a second call maps a PoT program's value to an option (PoT's) | closest: nearest number |

>>> VoteRule().order(["turbo", "DST", "ST", "DT", "PT"])
['DT', 'DST', 'PT', 'ST', 'turbo']
>>> VoteRule(preset="olakit").unparsed
'abstain'
>>> VoteRule(preset="paper", unparsed="abstain")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
olakit.config.ConfigError: VoteRule: preset 'paper' sets unparsed='raw' but unparsed='abstain' was asked for too; ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import model_validator

from olakit.answering.majority import TIE_RULES
from olakit.config import Config, Stats
from olakit.names import TURBO

PRESET_VALUES = {
    "olakit": {
        "vote_order": "olakit",
        "unparsed": "abstain",
        "notes_layout": "olakit",
        "template_position": "after",
        "fill_up": True,
        "llm_vote_prompt": "olakit",
        "program_choice": "closest",
    }
}
"""The settings a preset other than ``paper`` changes (``paper`` is every field's own default)."""
PRESETS = ("paper", *PRESET_VALUES)
VOTE_ORDERS = {"paper": ("DT", "DST", "PT", "ST", TURBO), "olakit": ("DST", "DT", "PT", "ST", TURBO)}
"""Template order of the regex vote's ``first`` tie rule; templates not listed follow in their own order."""


class VoteRule(Config):
    """How the templates' answers are combined: the template order (which the ``first`` tie rule follows), the tie
    rule and what an unparsed answer does. The default is what the OlaGPT authors' code does."""

    preset: Literal[PRESETS] | None = None  # type: ignore[valid-type]
    """A named set of settings: ``paper`` (the authors' behaviour: every default) or ``olakit`` (olakit's choices;
    see this module's table). Naming a preset with a setting it contradicts is an error."""
    vote_order: Literal[tuple(VOTE_ORDERS)] = "paper"  # type: ignore[valid-type]
    """Template order of the vote: ``paper`` (DT, DST, PT, ST, turbo: the authors' recorded candidate order) or
    ``olakit`` (DST, DT, PT, ST, turbo); templates not listed follow in their own order."""
    tie: Literal[TIE_RULES] = "first"  # type: ignore[valid-type]
    """Tie rule of a vote: ``first`` (the tied label given first in vote order: the authors' ``max(votes,
    key=votes.get)``), ``random`` (seeded per question) or ``none`` (no answer, counted wrong)."""
    unparsed: Literal["raw", "abstain"] = "raw"
    """What an unparsed answer does in a vote: ``raw`` (the authors: its raw text votes as a label of its own, never
    right) or ``abstain`` (it is left out)."""

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data):
        if not isinstance(data, dict) or data.get("preset") not in PRESETS:
            return data  # no preset (or an unknown one, which the field refuses)
        name = data["preset"]
        changed = {k for values in PRESET_VALUES.values() for k in values if k in cls.model_fields}
        values = PRESET_VALUES.get(name) or {k: cls.model_fields[k].default for k in changed}
        values = {k: v for k, v in values.items() if k in cls.model_fields}
        for key, value in values.items():
            if key in data and data[key] != value:
                raise ValueError(
                    f"preset {name!r} sets {key}={value!r} but {key}={data[key]!r} was asked for too; drop the "
                    "preset or the setting"
                )
        return {**values, **data}

    def order(self, templates: Sequence[str]) -> list[str]:
        """``templates`` in this rule's vote order (known templates first, in that order, then the rest)."""
        ranked = VOTE_ORDERS[self.vote_order]
        templates = list(dict.fromkeys(templates))
        return [t for t in ranked if t in templates] + [t for t in templates if t not in ranked]

    def rule(self) -> VoteRule:
        """Just the vote rule of a larger config (what the analysis functions take)."""
        return VoteRule(**{k: getattr(self, k) for k in VoteRule.model_fields})


PAPER = VoteRule()
"""The authors' vote rule: the default of every analysis function."""


class Analysis(VoteRule, Stats):
    """How tables are computed from records: the vote rule and the statistics (olakit.config.Stats), passed whole to
    every analysis function and recorded in every run log. ``VoteRule`` settings and ``analysis_seed``, ``n_boot``,
    ``level``, ``alpha``, by the same names at every door."""

    verdict: Literal["records", "olakit", "source"] = "records"
    """Which verdict the tables count: the records' own (``correct``: olakit's, or an imported run's by its spec's
    ``score``), olakit's reading (``olakit``) or the source's own (``source``: an imported run's verdict field or
    score rule); a record without that verdict counts its own (olakit.answering.score.with_verdict)."""

    def analysis(self) -> Analysis:
        """Just the analysis settings of a larger config (an OlaGPTConfig is one)."""
        return Analysis(**{k: getattr(self, k) for k in Analysis.model_fields})


ANALYSIS = Analysis()
"""The default: the authors' vote rule, seed 0, 2000 resamples, 95% intervals, decisions at alpha 0.05."""
