"""A pre-registered family of comparisons: a small YAML file, read and hashed before a run's first call (Registered:
its settings, file, sha256 and the time it was read), carried whole from the door to the tables, and kept in the
run's log (``registration``, with any change made to its file since); the tables then mark each comparison
confirmatory (registered: Holm over the family alone) or exploratory (every other pair).

```yaml
comparisons: ["DST:retrieval vs turbo:zero-shot", "regex_vote:combine vs ST:combine"]
alpha: 0.05
stop_rule: fixed n
dataset: aqua
split: test
n_questions: 254
```
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from olakit.config import Config, ConfigError, read_config_file
from olakit.data.loaders import DEFAULT_SPLIT

CHANGES = "changes.jsonl"
"""Beside a registered run's run.json: each comparison examined after the run (``olakit plan --after``), one JSON
object a line, appended; the run's own log is never rewritten."""


class Registration(Config):
    """What a run is registered to decide, fixed before its first call."""

    comparisons: Annotated[list[str], Field(min_length=1)]
    """The family, Holm over these alone: each ``METHOD:STRATEGY vs METHOD:STRATEGY`` (OlaGPT cells; ``best:STRATEGY``
    the top template), ``ROW vs ROW`` (GEEK) or two compared conditions by name (docs/plan.md)."""
    alpha: Annotated[float, Field(gt=0, lt=1)] | None = None
    """The family-wise level (none: the run's analysis setting ``alpha``, 0.05 by default). Given, it is the run's
    level: every paired test, verdict, power and printed sentence of the run reads it."""
    power: Annotated[float, Field(gt=0, lt=1)] = 0.8
    """The power the run was planned for (``olakit plan``)."""
    estimates: str = "recorded"
    """Where the run's printed plan takes the discordance rates from: ``recorded`` (the OlaGPT authors' outputs on
    AQuA) or an earlier run (a folder or a records file), as ``olakit plan --estimates``."""
    stop_rule: str = "fixed n: every question of the slice, no look before the end"
    """When the run stops (stated; olakit runs a slice to its end)."""
    dataset: str | None = None
    """The dataset the run must answer (none: not fixed)."""
    split: str | None = None
    """Its split (none: not fixed)."""
    n_questions: Annotated[int, Field(ge=1)] | None = None
    """How many questions (none: not fixed)."""
    offset: Annotated[int, Field(ge=0)] = 0
    """From which one."""


@dataclass(frozen=True)
class Registered:
    """A registration as read before a run's first call: the one form it travels in, from the door to the tables
    and the explorers (the log holds its ``entry()``)."""

    settings: Registration
    file: str
    """The file, resolved."""
    sha256: str
    """The sha256 of its bytes when read."""
    registered_at: str
    """When it was read (before the run's first call)."""

    @property
    def comparisons(self) -> list[str]:
        return self.settings.comparisons

    def level(self, analysis) -> float:
        """The family's level: its own alpha, else the analysis settings'."""
        return self.settings.alpha if self.settings.alpha is not None else analysis.alpha

    def analysis_for(self, analysis):
        """The analysis settings a registered run is judged under: its alpha the family's (ConfigError when the run
        was given another alpha too)."""
        if self.settings.alpha is None or self.settings.alpha == analysis.alpha:
            return analysis
        default = type(analysis).model_fields["alpha"].default
        if analysis.alpha != default:
            raise ConfigError(
                f"alpha={analysis.alpha} but the registration {self.file} says alpha={self.settings.alpha}: a "
                "registered run is judged at its registration's level; drop one of the two"
            )
        return analysis.replace(alpha=self.settings.alpha)

    def changes(self) -> list[str]:
        """What happened to the file since it was read (empty: nothing)."""
        path = Path(self.file)
        if not path.exists():
            return [f"{path} was removed after registration"]
        now = hashlib.sha256(path.read_bytes()).hexdigest()
        if now == self.sha256:
            return []
        return [f"{path} changed after registration: sha256 {self.sha256[:12]} -> {now[:12]}"]

    def entry(self) -> dict:
        """What a run log holds: file, sha256, when read, the settings, and the changes to the file so far."""
        return {"file": self.file, "sha256": self.sha256, "registered_at": self.registered_at,
                "settings": self.settings.as_dict(), "changes": self.changes()}  # fmt: skip

    @classmethod
    def from_entry(cls, entry: dict) -> Registered:
        """The registration a run log holds (its ``registration``)."""
        return cls(Registration(**entry["settings"]), entry["file"], entry["sha256"], entry["registered_at"])

    def check_slice(self, config) -> None:
        """ConfigError, before any call, when the run's dataset or slice is not the registered one; the split is
        compared resolved (a run of AQuA that names none answers ``test``)."""
        wrong = []
        for name in ("dataset", "split", "n_questions", "offset"):
            want = getattr(self.settings, name)
            have = getattr(config, name)
            if name == "split" and have is None:
                have = DEFAULT_SPLIT.get(str(config.dataset))
            if want is not None and have != want:
                wrong.append(f"{name}={have!r} (registered: {want!r})")
        if wrong:
            raise ConfigError(f"the run is not the registered one: {'; '.join(wrong)}")

    def check_cells(self, known: Sequence[str]) -> None:
        """ConfigError, before any call, for a comparison naming a cell the run will not have (a misspelt template
        or strategy, ``XYZ:zero-shot``, ``DT:zeroshot``): ``known`` the run's cells as its tables name them."""
        bad = []
        for text in self.comparisons:
            try:
                parsed = parse_comparison(text)
            except ValueError as exc:
                raise ConfigError(f"{self.file}: {exc}") from None
            missing = [
                p for raw, p in zip(halves(text), parsed)
                if raw not in known and p not in known and p.partition(" | ")[0] != BEST
            ]  # fmt: skip
            if missing:
                bad.append(f"{text!r} ({', '.join(missing)})")
        if bad:
            shown = ", ".join(list(known)[:12]) + (", ..." if len(known) > 12 else "")
            raise ConfigError(f"{self.file}: comparisons name cells this run will not have: {'; '.join(bad)}; its "
                              f"cells: {shown}")  # fmt: skip


def read_registration(path: str | Path) -> Registered:
    """The registration in a YAML file, hashed and stamped with the time it was read."""
    path = Path(path)
    settings = read_config_file(Registration, path, "registration")
    return Registered(
        settings,
        str(path.absolute()),
        hashlib.sha256(path.read_bytes()).hexdigest(),
        _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    )


def registered_for(path: str | Path | None, config) -> Registered | None:
    """read_registration of ``path`` for a run of ``config``, its slice checked before anything runs; None without a
    path."""
    if not path:
        return None
    registered = read_registration(path)
    registered.check_slice(config)
    return registered


def registration_of(log) -> Registered | None:
    """The registration a run's log holds, or None."""
    return Registered.from_entry(log.registration) if log is not None and log.registration else None


BEST = "best"
"""A comparison's cell ``best:STRATEGY`` (or ``best``, for GEEK rows): the template (row) with the highest accuracy
under that strategy where the comparison is judged (ties: the first in the table's order). A choice made on the
data it is tested on: its p is optimistic, and the verdict names the cell it took."""


def parse_comparison(text: str) -> tuple[str, str]:
    """``"DST:retrieval vs turbo:zero-shot"`` -> ("DST | retrieval", "turbo | zero-shot"): two cells of an OlaGPT
    run, also written as the tables name them ("DST | retrieval"); a name without a colon is a GEEK row or a
    compared condition as it stands (``"+RE vs CoT"``).

    >>> parse_comparison("DST:retrieval vs turbo:zero-shot")
    ('DST | retrieval', 'turbo | zero-shot')
    """
    parts = halves(text)
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"comparison {text!r}: write it as 'METHOD:STRATEGY vs METHOD:STRATEGY' (or 'ROW vs ROW')")
    return tuple(_cell(p) for p in parts)  # type: ignore[return-value]


def halves(text: str) -> list[str]:
    """The sides of ``A vs B`` as written."""
    return [p.strip() for p in text.replace(" VS ", " vs ").split(" vs ")]


def _cell(text: str) -> str:
    if " | " in text or ":" not in text:
        return text
    method, _, strategy = text.partition(":")
    if not method.strip() or not strategy.strip():
        raise ValueError(f"cell {text!r}: write it as METHOD:STRATEGY (e.g. DST:retrieval, regex_vote:combine)")
    return f"{method.strip()} | {strategy.strip()}"
