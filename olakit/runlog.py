"""The run log: what a result says about how it was made, the same for every door (``olakit run``, ``geek``,
``review``, ``notes build``, ``reproduce-olagpt``, every notebook and so every sweep cell), written as ``run.json``
beside the records.

It holds the door, the config type and every setting, the analysis settings, each role's endpoint identity (base
URL, model, and the ``system_fingerprint`` values the endpoint sent), the calls per role (requests, unique prompts,
paid, cached, failed, tokens, cost), wall time, olakit's version and commit, the versions of the packages that shape
results, the sha256 of every data file read, and the tables and figures written. Never a key.

A folder holds one run: a rerun of the same run (same door, config and parameters) writes a new ``run.json`` and
keeps the earlier logs in ``runs.jsonl`` (so what a cold run paid is not lost when a warm rerun follows); another
run into a folder that holds one is refused before its first call (``claim_folder``).

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

from olakit.data.files import read_jsonl, write_atomic, write_tables
from olakit.data.loaders import files_read
from olakit.data.provenance import SECRET_NAME, commit, package_versions, save_figure, sha256_cached
from olakit.data.records import load_records
from olakit.errors import DataError

FORMAT = 1
UNSHAPING = ("out", "out_dir", "concurrency", "figures_dir")
"""Parameters that do not change a run's results (where it writes, how many calls at once)."""
LOG_NAME = "run.json"
HISTORY_NAME = "runs.jsonl"
"""Earlier logs of the same run in the same folder, one JSON object a line, oldest first."""
COMMANDS = ("run", "geek", "review", "notes build", "reproduce-olagpt", "compare")
"""Doors that are ``olakit`` commands (a notebook's door is ``notebook:<name>``)."""


@dataclass(frozen=True)
class RunLog:
    """How one result was made (see the module docstring); ``as_dict`` is the JSON written."""

    door: str
    """``run``, ``geek``, ``review``, ``notes build``, ``reproduce-olagpt`` or ``notebook:<name>``."""
    run_id: str = ""
    """Unique to one execution (a rerun of the same run gets another)."""
    config_type: str = ""
    """The config type's name (``OlaGPTConfig``, ``GeekConfig``, ``ReviewConfig``, ``VoteRule``, ...)."""
    config: dict = field(default_factory=dict)
    """Every setting of that config, as plain JSON."""
    analysis: dict = field(default_factory=dict)
    """The analysis settings the tables were computed with (vote rule, analysis seed, bootstrap count, level)."""
    roles: dict = field(default_factory=dict)
    """role -> {base_url, model, identity, embedded, system_fingerprints} (never a key)."""
    calls: dict = field(default_factory=dict)
    """role -> what its calls cost (requests, unique_prompts, paid, cached, failed, tokens, cost)."""
    wall_s: float = 0.0
    created: str = ""
    olakit: str | None = None
    commit: str | None = None
    python: str = ""
    packages: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    """Every data file read by the process (path -> sha256)."""
    outputs: dict = field(default_factory=dict)
    """records (file, rows, questions, prompts digest), tables, figures."""
    parameters: dict = field(default_factory=dict)
    """A notebook's parameters, or a command's own flags that are no setting (``concurrency``, ``out``)."""
    extra: dict = field(default_factory=dict)
    """What one door adds (GEEK's recall and corpus, a judge's verdicts, the records' source)."""
    parts: dict = field(default_factory=dict)
    """Other runs this result includes (a notebook's second run, a cross-method row): name -> their logs."""
    format: int = FORMAT

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict, where: str = "run log") -> RunLog:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise DataError(f"{where}: run log format {found!r}; this olakit reads format {FORMAT}")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})

    @property
    def identity(self) -> str:
        """What makes two logs the same run: door, config type, settings and parameters (not ``out``)."""
        return self.shaped()

    def shaped(self, known: RunLog | None = None) -> str:
        """The identity over the settings and parameters ``known`` (an earlier log) has too: one a later olakit
        added, which the earlier run could not set, is not compared (see ``same_run``)."""
        params = {k: v for k, v in self.parameters.items() if k not in UNSHAPING}
        config = dict(self.config)
        if known is not None:
            params = {k: v for k, v in params.items() if k in known.parameters}
            config = {k: v for k, v in config.items() if k in known.config}
        notebook = self.door.startswith("notebook:")  # its parameters hold its settings; its runs' configs vary
        doc = [self.door, params] if notebook else [self.door, self.config_type, config, params]
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @property
    def embedded(self) -> bool:
        """Whether any call went to the embedded test model (its numbers are plumbing, not results)."""
        logs = [self, *(RunLog.from_dict(p) for p in self.parts.values())]
        return any(r.get("embedded") for lg in logs for r in lg.roles.values())

    def total(self, what: str = "paid") -> float:
        """One count summed over roles (and parts): ``total("paid")``, ``total("cost")``."""
        own = sum(c.get(what) or 0 for c in self.calls.values())
        return own + sum(RunLog.from_dict(p).total(what) for p in self.parts.values())

    def summary(self) -> dict:
        """The calls over every role (and part): requests, unique prompts, paid, cached, failed, tokens, cost, and
        the wall time."""
        out: dict = {}
        for counts in self.calls.values():
            for k, v in counts.items():
                out[k] = out.get(k, 0) + (v or 0)
        for part in self.parts.values():
            for k, v in RunLog.from_dict(part).summary().items():
                if k != "wall_s":
                    out[k] = out.get(k, 0) + (v or 0)
        if "cost" in out:
            out["cost"] = round(float(out["cost"]), 6)
        return {**out, "wall_s": self.wall_s}

    def with_part(self, name: str, other: RunLog) -> RunLog:
        return replace(self, parts={**self.parts, name: other.as_dict()})

    def replace(self, **changes) -> RunLog:
        return replace(self, **changes)


def fingerprint_note(log: RunLog) -> str | None:
    """A line for a run whose endpoint sent more than one ``system_fingerprint`` (its backend changed under the
    model's name while it ran: its cells' answers may differ for that alone); None otherwise."""
    changed = {r: e["system_fingerprints"] for r, e in log.roles.items() if len(e.get("system_fingerprints", [])) > 1}
    if not changed:
        return None
    said = "; ".join(f"{role}: {', '.join(prints)}" for role, prints in changed.items())
    return (f"note: the endpoint's system_fingerprint changed during this run ({said}): a backend change alone can "
            "move answers")  # fmt: skip


def role_entry(endpoint, fingerprints=()) -> dict:
    """What the log says of one role's endpoint: base URL, model, identity, embedded, system fingerprints."""
    base_url = endpoint.base_url or ("embedded (127.0.0.1)" if endpoint.local else "")
    return {
        "base_url": base_url,
        "model": endpoint.model,
        "identity": endpoint.identity,
        "embedded": bool(endpoint.local),
        "system_fingerprints": sorted(set(fingerprints)),
    }


def make_log(door: str, config=None, *, analysis=None, parameters=None, **more) -> RunLog:
    """A log with the environment filled in: versions, commit, python, the data files read, the time."""
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
        run_id=uuid.uuid4().hex[:12],
        config_type=type(config).__name__ if config is not None else "",
        config=config.as_dict() if config is not None else {},
        analysis=dict(analysis or {}),
        parameters=dict(parameters or {}),
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        olakit=versions.get("olakit"),
        commit=commit(),
        python=platform.python_version(),
        packages=versions,
        data={str(p): sha256_cached(p) for p in files_read()},
        **more,
    )


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


def read_log(folder: str | os.PathLike, name: str = LOG_NAME) -> RunLog | None:
    """The run log in a folder (None when it has none); ``name``: its file name (``<file>.run.json`` beside a
    single output file)."""
    path = Path(folder) / name
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{path}: not a readable run log ({exc})") from None
    return RunLog.from_dict(doc, str(path))


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


def same_run(earlier: RunLog, later: RunLog) -> bool:
    """Whether ``later`` is a rerun of ``earlier``: the same door, config type, and every setting and parameter the
    earlier log has equal (a setting a later olakit added is not compared: the earlier run could not set it, and the
    rerun's log, kept in runs.jsonl, says what it was)."""
    return earlier.shaped() == later.shaped(known=earlier)


def claim_folder(folder: str | os.PathLike | None, log: RunLog, output: str = "records.parquet") -> None:
    """Refuse, before any call, a folder that holds another run: its run log names other settings, or it holds
    the output (records) without a log. The same run (a rerun) may write there again. For a door whose output is
    one file (``notes build``), ``folder`` is that file's folder and ``output`` its name; its log is
    ``<name>.run.json``."""
    if folder is None:
        return
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise DataError(f"{folder}: a file is there; give a directory (it is created when missing)")
    name = LOG_NAME if output == "records.parquet" else f"{output}.{LOG_NAME}"
    old = read_log(folder, name)
    if old is None:
        if (folder / output).exists():
            raise DataError(
                f"{folder / output} is there without a run log (another run, or an older olakit): give another "
                "output, or remove that one"
            )
        return
    if not same_run(old, log):
        raise DataError(
            f"{folder} holds another run ({old.door}, {old.config_type}, written {old.created}); a folder holds one "
            "run: give another output folder, or remove that one (`olakit again` shows the command that made it)"
        )


def write_log(folder: str | os.PathLike, log: RunLog, name: str = LOG_NAME) -> Path:
    """Write ``run.json`` (atomically); the log it replaces goes to ``runs.jsonl``; tables and figures the earlier
    log listed and this one does not are removed, so the folder never mixes two runs' outputs. The caller has
    claimed the folder (``claim_folder``) before writing anything into it."""
    folder = Path(folder)
    old = read_log(folder, name)
    if old is not None:
        for rel in set(_written(old)) - set(_written(log)):
            (folder / rel).unlink(missing_ok=True)
    if old is not None and old.run_id != log.run_id:  # an earlier execution: its log is kept
        with open(folder / _history_name(name), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(old.as_dict(), default=str) + "\n")
    text = json.dumps(log.as_dict(), indent=1, default=str) + "\n"
    return write_atomic(folder / name, lambda p: p.write_text(text, encoding="utf-8"))


def write_outputs(
    folder: str | os.PathLike,
    log: RunLog,
    tables: dict,
    figures: dict | None = None,
    *,
    figures_dir: str | os.PathLike | None = None,
) -> RunLog:
    """Tables (CSV) and figures (PNG and PDF; into ``figures_dir``, default the folder's figures/) into a run's
    folder, then its log naming them; figures are closed. The folder was claimed when the run started."""
    folder = Path(folder)
    write_tables(tables, folder)
    where = Path(figures_dir) if figures_dir is not None else folder / "figures"
    written = {
        name: [_within(p, folder) for p in save_figure(fig, where, name)] for name, fig in (figures or {}).items()
    }
    if figures:
        import matplotlib.pyplot as plt

        for fig in figures.values():
            plt.close(fig)
    outputs = {**log.outputs, "tables": sorted(tables), "figures": written}
    log = log.replace(outputs=outputs)
    write_log(folder, log)
    return log


def _written(log: RunLog) -> list[str]:
    """The files of a log's tables and figures, relative to its folder."""
    out = [f"tables/{name}.csv" for name in log.outputs.get("tables", [])]
    for paths in log.outputs.get("figures", {}).values():
        out += [p for p in paths if not Path(p).is_absolute()]  # those in the folder; figures_dir's are shared
    return out


def _within(path: Path, folder: Path) -> str:
    """A path relative to the folder when inside it, else absolute."""
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path.resolve())


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
    target = out if out is not None else log.parameters.get("out")
    if target is not None:
        words += ["--out", str(target)]
    for name, value in log.parameters.items():
        if name not in ("out",) and value is not None:
            words += _flag(name, value)
    for name, value in log.config.items():
        words += _flag(name, value)
    return shlex.join(words)
