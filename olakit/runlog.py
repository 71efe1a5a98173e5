"""The run log: what a result says about how it was made, the same for every door (``olakit run``, ``geek``,
``review``, ``notes build``, ``import``, ``compare``, ``reproduce-olagpt``, every notebook and so every sweep
entry), written as ``run.json`` beside the records.

It is typed, read back as written and never re-defaulted: the door and the kind of result, the config type and every
setting, the analysis settings, the dataset read (DatasetRef: name, resolved split, map, file and sha256), each role's
endpoint (Role: base URL, model, identity, the ``system_fingerprint`` values it sent), the calls per role (Calls),
wall time, olakit's version and commit, the versions of the packages that shape results, the sha256 of every data
file this run read (not every file the process read), the records, tables and figures written, a registration's
entry, the digest of the result's inputs (``inputs``: what a kept result is checked against) and the logs of the
other runs a result includes (``parts``). A key this olakit does not know is an error naming it; never a key of an
endpoint.

A folder holds one run: a rerun of the same run (same door, config and parameters) replaces it and keeps the earlier
logs in ``runs.jsonl`` (so what a cold run paid is not lost when a warm rerun follows); another run into a folder
that holds one is refused before its first call (``claim_folder``).

``command(log)`` gives the command (or the papermill call) that makes the same run again.

>>> log = RunLog(door="run", config_type="OlaGPTConfig", config={"n_questions": 2, "strategies": ["zero-shot"],
...     "verify": False, "choose_k": None})
>>> command(log, "out")
'olakit run --out out --n-questions 2 --strategies zero-shot --no-verify --choose-k none'
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import shlex
import uuid
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from olakit.data.files import read_jsonl, sha256_cached
from olakit.data.provenance import SECRET_NAME, commit, package_versions
from olakit.data.records import load_records
from olakit.errors import DataError
from olakit.types import DatasetRef

FORMAT = 2
"""1: untyped roles and calls, extras and registration mixed in ``extra``, the process's data files; 2: typed."""
UNSHAPING = ("out", "out_dir", "concurrency", "figures_dir")
"""Parameters that do not change a run's results (where it writes, how many calls at once)."""
LOG_NAME = "run.json"
HISTORY_NAME = "runs.jsonl"
"""Earlier logs of the same run in the same folder, one JSON object a line, oldest first."""
COMMANDS = ("run", "geek", "review", "notes build", "reproduce-olagpt", "compare", "method")
"""Doors that are ``olakit`` commands (a notebook's door is ``notebook:<name>``; ``import`` takes its spec)."""


@dataclass(frozen=True)
class Role:
    """One role's endpoint as a log names it (never its key)."""

    base_url: str = ""
    model: str = ""
    identity: str = ""
    """What the answer cache keys the role's answers by (base URL and model; the embedded model: its weights)."""
    embedded: bool = False
    """The embedded test model answered: its numbers are plumbing, not results."""
    system_fingerprints: tuple[str, ...] = ()
    """The ``system_fingerprint`` values the endpoint sent (two: its backend changed while the run went)."""
    refused: dict = field(default_factory=dict)
    """The parameters the endpoint refused, learned at its first 400 (olakit.llm.client.LLM.refused): each with
    the one sent instead, or None where it was left out."""


@dataclass(frozen=True)
class Calls:
    """What one role's calls cost: requests, unique prompts (calls), those paid (of them through a provider batch),
    those the cache served, those failed, tokens and cost in USD."""

    requests: int = 0
    unique_prompts: int = 0
    paid: int = 0
    batched: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Calls) -> Calls:
        return Calls(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(Calls)})

    def as_dict(self) -> dict:
        out = asdict(self)
        out["cost"] = round(float(out["cost"]), 6)
        return out


def _typed(cls, value, where: str):
    """A dataclass from its JSON form; DataError naming any key it does not have."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise DataError(f"{where}: expected a mapping of {', '.join(f.name for f in fields(cls))}, got {value!r}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise DataError(f"{where}: keys this olakit does not know: {', '.join(unknown)} (known: {', '.join(known)})")
    value = {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
    return cls(**value)


@dataclass(frozen=True)
class RunLog:
    """How one result was made (see the module docstring); ``as_dict`` is the JSON written."""

    door: str
    """``run``, ``geek``, ``review``, ``notes build``, ``import``, ``compare``, ``reproduce-olagpt`` or
    ``notebook:<name>``."""
    kind: str = ""
    """What the result holds (olakit.result.KINDS): ``olagpt``, ``recorded``, ``reproduction``, ``geek``,
    ``review``, ``notes``, ``import`` or ``compare``."""
    run_id: str = ""
    """Unique to one execution (a rerun of the same run gets another)."""
    config_type: str = ""
    """The config type's name (``OlaGPTConfig``, ``GeekConfig``, ``ReviewConfig``, ``Analysis``, ...)."""
    config: dict = field(default_factory=dict)
    """Every setting of that config, as plain JSON."""
    analysis: dict = field(default_factory=dict)
    """The analysis settings the tables were computed with (vote rule, analysis seed, bootstrap count, levels)."""
    dataset: DatasetRef | None = None
    """The questions the run answered, as read: dataset, resolved split, map, file and its sha256."""
    roles: dict[str, Role] = field(default_factory=dict)
    """role -> its endpoint (never a key)."""
    calls: dict[str, Calls] = field(default_factory=dict)
    """role -> what its calls cost."""
    wall_s: float = 0.0
    created: str = ""
    olakit: str | None = None
    commit: str | None = None
    python: str = ""
    packages: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    """Every data file this run read (path -> sha256)."""
    outputs: dict = field(default_factory=dict)
    """records (file, rows, questions, prompts digest), tables, figures, answers (the cache keys' file)."""
    parameters: dict = field(default_factory=dict)
    """A notebook's parameters, or a command's own flags that are no setting (``concurrency``, ``out``)."""
    extra: dict = field(default_factory=dict)
    """What the result's kind adds (olakit.result: GEEK's recall and corpus, an import's report, ...), typed there."""
    registration: dict | None = None
    """A pre-registered family's entry (olakit.registration): file, sha256, when read (before the first call),
    settings, and the changes made to its file since."""
    inputs: str = ""
    """The digest of what the result was made from (a notebook's: olakit.notebook.inputs): a sweep keeps a result
    whose inputs are unchanged instead of making it again."""
    parts: dict[str, RunLog] = field(default_factory=dict)
    """Other runs this result includes (a notebook's second run, a judge, a cross-method row): name -> their logs."""
    format: int = FORMAT

    def as_dict(self) -> dict:
        out = asdict(self)
        out["calls"] = {r: c.as_dict() for r, c in self.calls.items()}
        out["roles"] = {
            r: {**asdict(e), "system_fingerprints": list(e.system_fingerprints)} for r, e in self.roles.items()
        }
        out["parts"] = {n: p.as_dict() for n, p in self.parts.items()}
        return out

    @classmethod
    def from_dict(cls, doc: dict, where: str = "run log") -> RunLog:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise DataError(
                f"{where}: run log format {found!r}; this olakit reads format {FORMAT} (a log of an earlier olakit: "
                "make the run again, `olakit again FOLDER` prints the command)"
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise DataError(f"{where}: keys this olakit does not know: {', '.join(unknown)}")
        doc = dict(doc)
        doc["roles"] = {r: _typed(Role, e, f"{where}: roles.{r}") for r, e in (doc.get("roles") or {}).items()}
        doc["calls"] = {r: _typed(Calls, c, f"{where}: calls.{r}") for r, c in (doc.get("calls") or {}).items()}
        if doc.get("dataset") is not None:
            doc["dataset"] = _typed(DatasetRef, doc["dataset"], f"{where}: dataset")
        doc["parts"] = {n: cls.from_dict(p, f"{where}: parts.{n}") for n, p in (doc.get("parts") or {}).items()}
        return cls(**doc)

    @property
    def identity(self) -> str:
        """What makes two logs the same run: door, config type, settings and parameters (not ``out``)."""
        return shaped(self.as_dict())

    @property
    def embedded(self) -> bool:
        """Whether any call went to the embedded test model (its numbers are plumbing, not results)."""
        return any(r.embedded for r in self.roles.values()) or any(p.embedded for p in self.parts.values())

    def calls_by_role(self) -> dict[str, Calls]:
        """role -> its calls, over this run and its parts (a part's answerer adds to the answerer)."""
        out = dict(self.calls)
        for part in self.parts.values():
            for role, c in part.calls_by_role().items():
                out[role] = out.get(role, Calls()) + c
        return out

    def total(self, what: str = "paid") -> float:
        """One count summed over roles and parts: ``total("paid")``, ``total("cost")``."""
        return sum(getattr(c, what) for c in self.calls_by_role().values())

    def summary(self) -> dict:
        """The calls per role (over the parts too) and ``total``, the sum over every role with the wall time: one
        shape for every door's result."""
        by_role = self.calls_by_role()
        total = sum(by_role.values(), Calls())
        return {**{r: c.as_dict() for r, c in by_role.items()}, "total": {**total.as_dict(), "wall_s": self.wall_s}}

    def with_part(self, name: str, other: RunLog) -> RunLog:
        return replace(self, parts={**self.parts, name: other})

    def replace(self, **changes) -> RunLog:
        return replace(self, **changes)


def shaped(doc: dict, known: dict | None = None) -> str:
    """The identity of a log's JSON form (any format: an earlier olakit's log is compared by the same fields), over
    the settings and parameters ``known`` (an earlier log's JSON) has too: one a later olakit added, which the earlier
    run could not set, is not compared (see ``same_run``)."""
    params = {k: v for k, v in (doc.get("parameters") or {}).items() if k not in UNSHAPING}
    config = dict(doc.get("config") or {})
    if known is not None:
        params = {k: v for k, v in params.items() if k in (known.get("parameters") or {})}
        config = {k: v for k, v in config.items() if k in (known.get("config") or {})}
    door = doc.get("door", "")
    notebook = door.startswith("notebook:")  # its parameters hold its settings; its runs' configs vary
    body = [door, params] if notebook else [door, doc.get("config_type", ""), config, params]
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fingerprint_note(log: RunLog) -> str | None:
    """A line for a run whose endpoint sent more than one ``system_fingerprint`` (its backend changed under the
    model's name while it ran: its cells' answers may differ for that alone); None otherwise."""
    changed = {r: e.system_fingerprints for r, e in log.roles.items() if len(e.system_fingerprints) > 1}
    if not changed:
        return None
    said = "; ".join(f"{role}: {', '.join(prints)}" for role, prints in changed.items())
    return (f"note: the endpoint's system_fingerprint changed during this run ({said}): a backend change alone can "
            "move answers")  # fmt: skip


def role_entry(endpoint, fingerprints=(), refused=None) -> Role:
    """What the log says of one role's endpoint: base URL, model, identity, embedded, system fingerprints, the
    parameters it refused."""
    base_url = endpoint.base_url or ("embedded (127.0.0.1)" if endpoint.local else "")
    return Role(base_url, endpoint.model, endpoint.identity, bool(endpoint.local), tuple(sorted(set(fingerprints))),
                dict(refused or {}))  # fmt: skip


def make_log(
    door: str,
    config=None,
    *,
    kind: str = "",
    analysis=None,
    parameters=None,
    files=(),
    **more,
) -> RunLog:
    """A log with the environment filled in: versions, commit, python, the time, and the sha256 of ``files`` (the
    data files the run read: olakit.data.loaders.reading)."""
    bad = [k for k, v in (parameters or {}).items() if SECRET_NAME.search(k) or (isinstance(v, str) and
                                                                                v.startswith("sk-"))]  # fmt: skip
    if bad:
        raise DataError(f"parameters {bad} look like secrets; keys come from the environment only")
    versions = package_versions()
    if analysis is None and config is not None:  # a config that holds analysis settings says them
        own = getattr(config, "analysis", None) or getattr(config, "stats", None)
        analysis = own().as_dict() if own is not None else None
    return RunLog(
        door=door,
        kind=kind,
        run_id=uuid.uuid4().hex[:12],
        config_type=type(config).__name__ if config is not None else "",
        config=config.as_dict() if config is not None else {},
        analysis=dict(analysis or {}),
        parameters=plain(parameters or {}),
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        olakit=versions.get("olakit"),
        commit=commit(),
        python=platform.python_version(),
        packages=versions,
        data={str(p): sha256_cached(p) for p in files},
        **more,
    )


def plain(value):
    """A value as its JSON reads back (paths as text, tuples as lists): what a log holds, so it reads back equal."""
    return json.loads(json.dumps(value, default=str))


def records_summary(records, name: str = "records.parquet") -> dict:
    """The records' part of ``outputs``: file, rows, questions and the digest of their prompt hashes."""
    hashes = sorted(set(records["prompt_hash"])) if len(records) else []
    return {
        "file": name,
        "rows": len(records),
        "questions": int(records["question_id"].nunique()) if len(records) else 0,
        "models": sorted(set(records["model"])) if len(records) else [],
        "prompts_digest": hashlib.sha256("".join(hashes).encode()).hexdigest(),
    }


def _history_name(name: str) -> str:
    return name.removesuffix(LOG_NAME) + HISTORY_NAME


def read_raw(folder: str | os.PathLike, name: str = LOG_NAME) -> dict | None:
    """A run log's JSON as written (any format), or None where there is none."""
    path = Path(folder) / name
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{path}: not a readable run log ({exc})") from None
    if not isinstance(doc, dict):
        raise DataError(f"{path}: not a run log (a JSON object)")
    return doc


def read_log(folder: str | os.PathLike, name: str = LOG_NAME) -> RunLog | None:
    """The run log in a folder (None when it has none); ``name``: its file name."""
    doc = read_raw(folder, name)
    return RunLog.from_dict(doc, str(Path(folder) / name)) if doc is not None else None


def load_run(records_path: str | os.PathLike) -> tuple:
    """(the records of a run, with manual corrections applied; its run log, None where it has none)."""
    records_path = Path(records_path)
    return load_records(records_path), read_log(records_path.parent)


def history(folder: str | os.PathLike, name: str = LOG_NAME) -> list[RunLog]:
    """Every log of the run in a folder, oldest first (the earlier ones from runs.jsonl, then run.json)."""
    path = Path(folder) / _history_name(name)
    earlier = [RunLog.from_dict(obj, f"{path} line {n}") for n, obj in read_jsonl(path)] if path.is_file() else []
    current = read_log(folder, name)
    return earlier + ([current] if current else [])


def same_run(earlier: RunLog | dict, later: RunLog | dict) -> bool:
    """Whether ``later`` is a rerun of ``earlier``: the same door, config type, and every setting and parameter the
    earlier log has equal (a setting a later olakit added is not compared: the earlier run could not set it, and the
    rerun's log, kept in runs.jsonl, says what it was)."""
    a = earlier.as_dict() if isinstance(earlier, RunLog) else earlier
    b = later.as_dict() if isinstance(later, RunLog) else later
    return shaped(a) == shaped(b, known=a)


def claim_folder(folder: str | os.PathLike | None, log: RunLog, output: str = "records.parquet") -> None:
    """Refuse, before any call, a folder that holds another run: its run log names other settings, or it holds
    the output (records) without a log. The same run (a rerun) may write there again."""
    if folder is None:
        return
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise DataError(f"{folder}: a file is there; give a directory (it is created when missing)")
    old = read_raw(folder)
    if old is None:
        if (folder / output).exists():
            raise DataError(
                f"{folder / output} is there without a run log (another run, or an older olakit): give another "
                "output, or remove that one"
            )
        return
    if not same_run(old, log):
        raise DataError(
            f"{folder} holds another run ({old.get('door')}, {old.get('config_type')}, written {old.get('created')});"
            " a folder holds one run: give another output folder, or remove that one (`olakit again` shows the "
            "command that made it)"
        )


def history_lines(folder: Path) -> str:
    """The folder's earlier logs as runs.jsonl will hold them after a rerun: its runs.jsonl, then its run.json (any
    format: an earlier olakit's logs are kept as they were written)."""
    text = (folder / HISTORY_NAME).read_text(encoding="utf-8") if (folder / HISTORY_NAME).is_file() else ""
    old = read_raw(folder)
    if old is not None:
        text += json.dumps(old, default=str) + "\n"
    return text


def log_text(log: RunLog) -> str:
    return json.dumps(log.as_dict(), indent=1, default=str) + "\n"


def _flag(name: str, value) -> list[str]:
    flag = f"--{name.replace('_', '-')}"
    if isinstance(value, bool):
        return [flag if value else f"--no-{name.replace('_', '-')}"]
    if value is None:
        return [flag, "none"]
    if isinstance(value, list | tuple):
        return [flag, ",".join(map(str, value))]
    if isinstance(value, dict):
        return [flag, json.dumps(value)]
    return [flag, str(value)]


def command(log: RunLog, out: str | os.PathLike | None = None) -> str:
    """The shell command that makes the same run again, its outputs into ``out`` (default: a new folder beside the
    log's own, ``<out>-again``): every setting as a flag (an ``olakit`` command), or every parameter as ``olakit
    notebook``'s ``-y`` mapping (a notebook)."""
    if log.door.startswith("notebook:"):
        name = log.door.split(":", 1)[1]
        params = {**log.parameters, **({"out_dir": str(out)} if out is not None else {})}
        words = ["olakit", "notebook", name, "-y", json.dumps(params)]
        return shlex.join(words + (["--output", f"{out}.ipynb"] if out is not None else []))
    if log.door == "import":  # the spec file holds the runs; the analysis settings are its flags
        target = out if out is not None else log.parameters.get("out")
        words = ["olakit", "import", log.parameters["spec"], "--out", str(target)]
        return shlex.join(words + [w for name, value in log.analysis.items() for w in _flag(name, value)])
    if log.door not in COMMANDS:
        raise DataError(f"run log door {log.door!r}: no command makes it; known: {', '.join(COMMANDS)}, import")
    words = ["olakit", *log.door.split()]
    if log.door == "method":  # a method of one's own: named first, as `olakit method NAME` takes it
        words.append(log.parameters.get("method", ""))
    target = out if out is not None else log.parameters.get("out")
    if target is not None:
        words += ["--out", str(target)]
    for name, value in log.parameters.items():
        if name not in ("out", "method") and value is not None:
            words += _flag(name, value)
    for name, value in log.config.items():
        words += _flag(name, value)
    return shlex.join(words)
