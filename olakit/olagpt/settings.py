"""Where olakit departs from what the OlaGPT authors ran, each choice is a named setting, and a preset picks all of
them: ``paper`` (the authors' behaviour, read from their code at chachalin/OlaGPT@3be449a; the default) or
``olakit`` (olakit's own choices, kept where they are sound). Every run manifest records the settings used.

| setting | ``paper`` | ``olakit`` |
|---|---|---|
| vote_order | DT, DST, PT, ST, turbo (the order of the recorded candidate outputs) | DST, DT, PT, ST, turbo |
| unparsed | raw: an unparsed answer votes as its raw text | abstain: it is left out of the vote |
| notes_layout | the authors' note block (type, question, template prefix, explanation, answer) | answer first |
| template_position | ST's trigger after the answer-format sentence, the others before | after: every one after it |
| fill_up | off: retrieval/combine give fewer than n notes when the nearest type has fewer | on: next types fill up |
| llm_vote_prompt | the authors' wording, full candidate outputs, answer format at the end | labels and cut rationales |

template_position also takes ``before`` (every template's text before the question, Fig 3's order).

``resolve("paper", unparsed="abstain")`` -> SettingsError (a preset named together with a setting it contradicts);
``resolve(None, unparsed="abstain")`` -> the paper preset with that one change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from olakit.errors import OlakitError
from olakit.names import TURBO


class SettingsError(OlakitError):
    """An unknown setting, an unknown value, or a preset contradicted by an explicit setting."""


@dataclass(frozen=True)
class Settings:
    """The named choices of one run (see the module docstring)."""

    vote_order: str = "paper"
    unparsed: str = "raw"
    notes_layout: str = "paper"
    template_position: str = "paper"
    fill_up: bool = False
    llm_vote_prompt: str = "paper"

    def as_dict(self) -> dict:
        return asdict(self)


CHOICES = {
    "vote_order": ("paper", "olakit"),
    "unparsed": ("raw", "abstain"),
    "notes_layout": ("paper", "olakit"),
    "template_position": ("paper", "before", "after"),
    "fill_up": (False, True),
    "llm_vote_prompt": ("paper", "olakit"),
}
PRESETS = {
    "paper": Settings(),
    "olakit": Settings(
        vote_order="olakit",
        unparsed="abstain",
        notes_layout="olakit",
        template_position="after",
        fill_up=True,
        llm_vote_prompt="olakit",
    ),
}
DEFAULT_PRESET = "paper"
VOTE_ORDERS = {"paper": ("DT", "DST", "PT", "ST", TURBO), "olakit": ("DST", "DT", "PT", "ST", TURBO)}
"""Template order of the regex vote's ``first`` tie rule; templates not listed follow in their own order."""


def resolve(preset: str | None = None, **explicit) -> Settings:
    """The settings of a preset (default ``paper``) with explicit settings applied; SettingsError names what is
    unknown, or which explicit setting contradicts a named preset."""
    name = DEFAULT_PRESET if preset is None else preset
    if name not in PRESETS:
        raise SettingsError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    base = PRESETS[name]
    known = [f.name for f in fields(Settings)]
    for key, value in explicit.items():
        if key not in known:
            raise SettingsError(f"unknown setting {key!r}; known: {', '.join(known)}")
        if not any(value == c and type(value) is type(c) for c in CHOICES[key]):
            raise SettingsError(f"setting {key}={value!r}: use one of {', '.join(map(repr, CHOICES[key]))}")
        if preset is not None and getattr(base, key) != value:
            raise SettingsError(
                f"preset {preset!r} sets {key}={getattr(base, key)!r} but {key}={value!r} was asked "
                f"for too; drop the preset or the setting"
            )
    return Settings(**{**base.as_dict(), **explicit})


def vote_order(templates, order: str) -> list[str]:
    """``templates`` in the vote order of a setting (known templates first, in that order, then the rest).

    >>> vote_order(["turbo", "DST", "ST", "DT", "PT"], "paper")
    ['DT', 'DST', 'PT', 'ST', 'turbo']
    """
    if order not in VOTE_ORDERS:
        raise SettingsError(f"setting vote_order={order!r}: use one of {', '.join(map(repr, VOTE_ORDERS))}")
    ranked = VOTE_ORDERS[order]
    return [t for t in ranked if t in templates] + [t for t in templates if t not in ranked]
