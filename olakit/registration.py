"""A pre-registered family of comparisons: a small YAML file, read and hashed before a run's first call, whose hash
and content go into the run's folder (registration.json, written before any call) and its run log; the tables then
mark each comparison confirmatory (registered: Holm over the family alone) or exploratory (every other pair).

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
import json
from pathlib import Path
from typing import Annotated

from pydantic import Field

from olakit.config import Config, ConfigError, read_config_file
from olakit.data.files import write_atomic

NAME = "registration.json"
"""The registration a run's folder holds, written before its first call."""


class Registration(Config):
    """What a run is registered to decide, fixed before its first call."""

    comparisons: Annotated[list[str], Field(min_length=1)]
    """The family, Holm over these alone: each ``METHOD:STRATEGY vs METHOD:STRATEGY`` (OlaGPT cells; ``best:STRATEGY``
    the top template), ``ROW vs ROW`` (GEEK) or two compared conditions by name (docs/plan.md)."""
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    """The family-wise level."""
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


def read_registration(path: str | Path) -> tuple[Registration, dict]:
    """(the registration, the entry a run records: file, sha256 of its bytes, the time it was read, its settings)."""
    path = Path(path)
    registration = read_config_file(Registration, path, "registration")
    data = path.read_bytes()
    entry = {
        "file": str(path.resolve()),
        "sha256": hashlib.sha256(data).hexdigest(),
        "registered_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "settings": registration.as_dict(),
    }
    return registration, entry


def registered_for(path: str | Path | None, config) -> tuple[Registration | None, dict | None]:
    """read_registration of ``path`` for a run of ``config``, its slice checked (check_slice) before anything is
    written; (None, None) without a path."""
    if not path:
        return None, None
    registration, entry = read_registration(path)
    check_slice(registration, config)
    return registration, entry


def logged(entry: dict) -> dict:
    """A registration's entry as a run log holds it: with ``changes``, what happened to its file since."""
    return {**entry, "changes": changes(entry)}


def check_slice(registration: Registration, config) -> None:
    """ConfigError, before any call, when the run's dataset or slice is not the registered one."""
    wrong = [
        f"{name}={getattr(config, name)!r} (registered: {want!r})"
        for name in ("dataset", "split", "n_questions", "offset")
        if (want := getattr(registration, name)) is not None and getattr(config, name) != want
    ]
    if wrong:
        raise ConfigError(f"the run is not the registered one: {'; '.join(wrong)}")


def changes(entry: dict) -> list[str]:
    """What happened to the registration file since ``entry`` was made (empty: nothing)."""
    path = Path(entry["file"])
    if not path.exists():
        return [f"{path} was removed after registration"]
    now = hashlib.sha256(path.read_bytes()).hexdigest()
    if now == entry["sha256"]:
        return []
    return [f"{path} changed after registration: sha256 {entry['sha256'][:12]} -> {now[:12]}"]


def write_registration(folder: str | Path, entry: dict) -> Path:
    """registration.json in a run's folder: the entry as it was read (without later changes: the run log has
    those), atomically."""
    text = json.dumps({k: v for k, v in entry.items() if k != "changes"}, indent=1)
    return write_atomic(Path(folder) / NAME, lambda p: Path(p).write_text(text))


def registration_of(folder: str | Path) -> Registration | None:
    """The registration a run's folder holds (registration.json, written before its first call), or None."""
    path = Path(folder) / NAME
    if not path.exists():
        return None
    return Registration(**json.loads(path.read_text())["settings"])
