"""One definition per setting: the base of every config type, and what is derived from its fields.

A setting is a field of one config type (a frozen pydantic model): named, typed, defaulted, documented (the field's
docstring) and validated there, and nowhere else. From the fields come, with the same names:

- the command-line flags of the command that runs the config (``n_questions`` -> ``--n-questions 3``; a tuple takes
  a comma-separated list, ``--strategies zero-shot,random``; ``none`` gives None where a field allows it);
- the papermill parameters of the notebooks that take the config (``-p n_questions 3``);
- the keys of a sweep file's ``parameters`` and ``grid``.

A config is passed whole; bad values are one ConfigError naming the field, the value and the rule, before anything
runs. ``as_dict()`` is what a manifest records.

>>> class Demo(Config):
...     n: int = 3
...     '''how many'''
>>> Demo(n="4").n
4
>>> Slice(n_questions="2").n_questions
2
>>> Demo(m=1)
Traceback (most recent call last):
...
olakit.config.ConfigError: Demo: m=1: not a setting of Demo; known: n
"""

from __future__ import annotations

import argparse
import json
import textwrap
import types
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from olakit.errors import DataError, OlakitError
from olakit.names import BUILTIN_DATASETS, DATASET_FORMATS

__all__ = ["STATS", "Config", "ConfigError", "Slice", "Stats", "add_arguments", "from_arguments", "parse_value"]


class ConfigError(OlakitError, ValueError):
    """A setting that does not exist, or a value its field refuses; the message names both."""


def _message(cls: type, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        name = ".".join(str(x) for x in err["loc"])
        given = err.get("input")
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, ConfigError):  # a config inside a config (a sweep file's entries) said it already
            parts.append(f"{name}: {inner}")
        elif err["type"] == "missing":
            parts.append(f"{name}: required")
        elif err["type"] == "extra_forbidden":
            known = ", ".join(cls.model_fields)
            parts.append(f"{name}={given!r}: not a setting of {cls.__name__}; known: {known}")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            msg = msg[:1].lower() + msg[1:]
            parts.append(f"{name}={given!r}: {msg}" if name else msg)
    return f"{cls.__name__}: " + "; ".join(parts)


class Config(BaseModel):
    """Base of the config types: frozen, unknown names refused, defaults validated, field docstrings as help."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        validate_default=True,
        use_attribute_docstrings=True,
        arbitrary_types_allowed=False,
        defer_build=True,  # the schema is built at the first validation: a command's start and --help need none
    )
    ALIASES: ClassVar[dict[str, str]] = {}
    """Short command-line flags for some fields (``{"n_questions": "-n"}``); the long flag always exists."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(_message(type(self), exc)) from None

    @model_validator(mode="before")
    @classmethod
    def _same_forms(cls, data):
        """Every door gives a setting in the same forms: a scalar (or a comma-separated string) where a list is
        expected is that list, and ``"2"`` is the choice ``2`` of an integer choice (``Literal[1, 2]``)."""
        if not isinstance(data, dict):
            return data
        return {k: _form(cls.model_fields[k].annotation, v) if k in cls.model_fields else v for k, v in data.items()}

    def replace(self, **changes: Any):
        """A copy with some settings changed (validated again).

        >>> Slice(n_questions=2).replace(offset=5).offset
        5
        """
        return type(self)(**{**self.model_dump(exclude_defaults=True), **changes})

    def as_dict(self) -> dict:
        """Every setting as plain JSON data (tuples as lists): what a manifest records."""
        return self.model_dump(mode="json")

    @classmethod
    def more_help(cls, name: str) -> str:
        """What a setting's flag says beyond its field's docstring (none here; the generation settings name a
        method's own settings of its stages)."""
        return ""

    @classmethod
    def settings(cls) -> list[str]:
        """The setting names, in definition order."""
        return list(cls.model_fields)

    @classmethod
    def from_mapping(cls, values: dict, where: str = ""):
        """The config from a mapping that may hold other names too (a notebook's globals, a sweep entry's
        parameters): the names of settings are taken, the rest left alone."""
        try:
            return cls(**{k: v for k, v in values.items() if k in cls.model_fields})
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None


def read_config_file(cls: type[Config], path, what: str):
    """A config of type ``cls`` from a YAML (or JSON) file (a sweep file, an import spec): one DataError or
    ConfigError, prefixed with the path, when the file is missing, is not YAML, is not a mapping or has a bad value."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {what} not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: a {what} is a mapping of {', '.join(cls.model_fields)}")
    try:
        return cls(**raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


class Slice(Config):
    """Which questions a run answers: a dataset's split, from ``offset``, ``n_questions`` of them."""

    split: str | None = None
    """The split (default: the dataset's usual one: test for AQuA, validation for E-KAR, dev for StrategyQA)."""
    n_questions: Annotated[int, Field(ge=1)] | None = 10
    """How many questions, from ``offset`` (none: every question from there on)."""
    offset: Annotated[int, Field(ge=0)] = 0
    """The first question's position in the split."""
    data_dir: str | None = None
    """The data directory (default: $OLAKIT_DATA_DIR, then the places olakit.data.loaders names)."""

    def pick(self, questions: list) -> list:
        """This slice of ``questions``; a ConfigError when it is empty.

        >>> Slice(n_questions=2, offset=1).pick(["a", "b", "c", "d"])
        ['b', 'c']
        """
        end = None if self.n_questions is None else self.offset + self.n_questions
        picked = questions[self.offset : end]
        if not picked:
            raise ConfigError(f"offset={self.offset}: the split has {len(questions)} questions, none from there on")
        return picked


def is_dataset_file(dataset) -> bool:
    """Whether a dataset is named by its file (``gsm8k/test.jsonl``) rather than a built-in name."""
    return Path(str(dataset)).suffix.lower() in DATASET_FORMATS


def dataset_setting(value, also: tuple[str, ...] = ()) -> str:
    """A dataset setting's value: a built-in dataset's name (BUILTIN_DATASETS, and ``also``) or a dataset file's
    path (.jsonl, .json, .csv, .parquet; read when the run starts)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("give a dataset's name or a dataset file")
    value = value.strip()
    if value in BUILTIN_DATASETS + also or is_dataset_file(value):
        return value
    raise ValueError(
        f"not a built-in dataset ({', '.join(BUILTIN_DATASETS + also)}) nor a dataset file "
        f"({', '.join(DATASET_FORMATS)})"
    )


class OwnDataset(Config):
    """The dataset a run reads, by name or by file, and how a dataset file's fields map (olakit.data.datasets).
    Each config type gives ``dataset`` its own default; the check is this one."""

    OTHER_DATASETS: ClassVar[tuple[str, ...]] = ()
    """Names besides the built-in datasets that the config type takes (the review loop's ``open``)."""
    dataset: str = "aqua"
    """A built-in dataset's name or a dataset file (.jsonl, .json, .csv, .parquet)."""

    dataset_map: str | None = None
    """For a dataset file: which field is what, as ``question=FIELD,answer=FIELD,choices=FIELD`` (paths such as
    ``question.stem``; ``choices=A|B|C|D`` for one column per option), YAML, or a .map.yaml file (none: the file's
    own ``FILE.map.yaml``, else the layout recognised)."""

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, value):
        return dataset_setting(value, cls.OTHER_DATASETS)


class Stats(Config):
    """How every interval and test is computed: the seed of bootstrap resamples and random tie-breaks (its own, not
    a run's seed: changing the notes seed changes no interval), the bootstrap count, the confidence level and the
    decision level. A
    single proportion gets its closed-form (Wilson) interval; the bootstrap serves paired differences."""

    analysis_seed: int = 0
    """Seed of the bootstrap resamples and of the votes' random tie-breaks (keyed per question)."""
    n_boot: Annotated[int, Field(ge=1)] = 2000
    """Bootstrap resamples of a paired difference."""
    level: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """Confidence level of every interval."""
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    """The decision level, family-wise: a paired test is significant when its Holm-corrected p is below it, a
    registered comparison decided at it, and a plan's and a run's power computed at it (each of m comparisons at
    alpha / m, Holm's strictest step)."""
    mcnemar: Literal["exact", "mid-p"] = "exact"
    """The paired test of two cells: ``exact`` (McNemar's exact binomial test, conservative at small n) or ``mid-p``
    (its mid-p version: half the probability of the observed count, closer to the nominal level with few discordant
    questions); every paired-tests table names the one it used (``test``), and the run log records it. Plans compute
    the exact test's power."""

    def stats(self) -> Stats:
        """Just these settings of a larger config."""
        return Stats(**{k: getattr(self, k) for k in Stats.model_fields})


STATS = Stats()
"""The default analysis statistics: seed 0, 2000 resamples, 95% intervals, decisions at 0.05."""


# ---- what is derived from the fields


def _origin(annotation) -> tuple[Any, bool]:
    """(the annotation without None, whether None is allowed)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        allows_none = len(args) < len(typing.get_args(annotation))
        inner, _ = _origin(args[0]) if len(args) == 1 else (annotation, False)
        return inner, allows_none
    return annotation, False


def _choice(annotation, value):
    """A string given for a Literal of non-strings, as the choice it names (``"2"`` -> ``2``)."""
    inner, _ = _origin(annotation)
    if isinstance(value, str) and typing.get_origin(inner) is Literal:
        choices = typing.get_args(inner)
        if value not in choices:
            named = [c for c in choices if not isinstance(c, str) and str(c) == value.strip()]
            return named[0] if named else value
    return value


def _form(annotation, value):
    """A value in the form its field expects (see Config._same_forms)."""
    if _kind(annotation) != "list" or value is None:
        return _choice(annotation, value)
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    elif not isinstance(value, list | tuple):
        value = [value]
    inner, _ = _origin(annotation)
    item = (typing.get_args(inner) or (Any,))[0]
    return [_choice(item, v) for v in value]


def _kind(annotation) -> str:
    inner, _ = _origin(annotation)
    origin = typing.get_origin(inner)
    if inner is bool:
        return "bool"
    if origin in (tuple, list):
        return "list"
    if origin is dict or inner is dict:
        return "json"
    return "scalar"


def _shown(value) -> str:
    if isinstance(value, tuple | list):
        return ",".join(map(str, value)) or "''"
    return "none" if value is None else str(value)


class _Help(argparse.HelpFormatter):
    """argparse's help, without breaking a default such as ``zero-shot`` at its hyphen."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def add_arguments(parser: argparse.ArgumentParser, cls: type[Config], skip=()) -> None:
    """One flag per setting of ``cls`` (``--n-questions``), its help the field's docstring and its default; a flag
    not given leaves the config's default (the flags carry no default of their own)."""
    parser.formatter_class = _Help
    for name, field in cls.model_fields.items():
        if name in skip:
            continue
        flags = [f"--{name.replace('_', '-')}", *([cls.ALIASES[name]] if name in cls.ALIASES else [])]
        inner, _ = _origin(field.annotation)
        choices = typing.get_args(inner) if typing.get_origin(inner) is Literal else None
        text = (field.description or "").replace("``", "") + cls.more_help(name)
        text = text.replace("%", "%%")
        extra = f" (one of {', '.join(map(str, choices))})" if choices else ""
        help_ = f"{text}{extra} [{'required' if field.is_required() else f'default: {_shown(field.default)}'}]"
        if _kind(field.annotation) == "bool":
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_)  # fmt: skip
        else:
            metavar = "A,B,..." if _kind(field.annotation) == "list" else name.upper()
            parser.add_argument(*flags, dest=name, default=argparse.SUPPRESS, metavar=metavar, help=help_)


def parse_value(cls: type[Config], name: str, text):
    """A command-line string as the field expects it: ``none`` as None where allowed (and ``all`` for a number whose
    None is the whole: ``--n-questions all``), JSON for mappings; the rest (a comma-separated list included:
    Config._same_forms splits it, as at every door) to the field's validation. A list's ``all`` is its own value
    (``--vote-over all``: every condition).

    >>> from olakit.config import Slice
    >>> parse_value(Slice, "n_questions", "none") is None, parse_value(Slice, "n_questions", "all") is None
    (True, True)
    """
    if not isinstance(text, str):
        return text
    annotation = cls.model_fields[name].annotation
    _, allows_none = _origin(annotation)
    kind = _kind(annotation)
    if allows_none and text.strip().lower() in (("none", "all") if kind == "scalar" else ("none",)):
        return None
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            raise ConfigError(f"{cls.__name__}: {name}={text!r}: give a JSON object") from None
    return text


def from_arguments(cls: type[Config], namespace: argparse.Namespace, **fixed):
    """The config from parsed flags (only those given) and ``fixed`` settings."""
    given = {k: parse_value(cls, k, v) for k, v in vars(namespace).items() if k in cls.model_fields}
    return cls(**{**given, **fixed})
