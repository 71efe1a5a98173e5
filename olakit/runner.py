"""One run, whatever the door: every call made for a result goes through it.

- Roles are resolved once: the answerers given (one, for the ``answerer`` role, or role -> answerer), else each
  role's endpoint from the environment (``OLAKIT_<ROLE>_*``, else the configured endpoint, else the embedded
  model); roles with the same endpoint share one client.
- Every call is counted per role, and a failed call is refused: the batch that had one raises CallsFailed, saying
  how many failed, of which role, the first cause, and that a rerun pays only what is missing (the answers
  received are cached). No path can turn a failure into a label, an empty text, a missing vote or a verdict.
- ``finish`` writes the records and the run log (olakit.runlog) beside them; nothing is written unless every call
  succeeded.

    with Run("run", cfg, llm) as job:          # roles from the environment where not given
        results = job["answerer"].batch(requests, "answers")    # CallsFailed if one failed
        frame, log = job.finish(records, OlaGPTRecord, out_dir)

The slice of questions is the config's (``olakit.config.Slice.pick``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from olakit.data.records import save_records, to_frame
from olakit.llm.answerer import Answerer, Counted, refuse
from olakit.llm.client import connect, role_llm
from olakit.llm.endpoint import Endpoint
from olakit.llm.request import Reply, Request
from olakit.registration import logged, write_registration
from olakit.runlog import RunLog, claim_folder, make_log, records_summary, role_entry, write_log
from olakit.types import Record


class RoleCalls(Counted):
    """One role's calls in a run: counted, and a batch with a failed call raises CallsFailed (after every answer
    that came back has been cached by the client)."""

    def __init__(self, answerer: Answerer, role: str):
        super().__init__(answerer)
        self.role = role

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        return refuse(super().batch(requests, desc), f"{self.role}: {desc or 'calls'}")


class Run:
    """One run of a door: its roles' answerers (``run[role]``, each a RoleCalls), the run log, the write at the end.

    ``models``: an Answerer (the ``answerer`` role), a mapping role -> Answerer, or None (every role from the
    environment). ``out_dir`` is checked before any call: a folder holding another run is refused. ``parameters``:
    the door's own flags for the log (a ``concurrency`` there sets the clients' calls in flight)."""

    def __init__(
        self,
        door: str,
        config=None,
        models: Answerer | Mapping[str, Answerer] | None = None,
        *,
        roles: Sequence[str] = ("answerer",),
        out_dir: str | Path | None = None,
        parameters: dict | None = None,
        concurrency: int | None = None,
        registration: dict | None = None,
    ):
        self.door, self.config, self.out_dir = door, config, out_dir
        self.parameters = dict(parameters or {})
        claim_folder(out_dir, self.draft())
        self.registration = registration
        """olakit.registration's entry of a pre-registered family: in the folder before the first call, and in the
        log with any change made to its file since."""
        if registration is not None and out_dir is not None:
            write_registration(out_dir, registration)
        given = dict(models) if isinstance(models, Mapping) else ({"answerer": models} if models is not None else {})
        self._owned: list = []
        concurrency = concurrency or self.parameters.get("concurrency")
        options = {"concurrency": concurrency} if concurrency else {}
        if "answerer" not in given:
            given["answerer"] = self._own(connect(Endpoint.from_env("answerer"), **options))
        for role in roles:
            if role not in given:
                model = role_llm(role, given["answerer"], **options)
                given[role] = model if model is given["answerer"] else self._own(model)
        self.models = given
        self.roles = {role: RoleCalls(given[role], role) for role in dict.fromkeys(["answerer", *roles])}
        self.t0 = time.perf_counter()

    def draft(self) -> RunLog:
        """The log's identity part (door, config, parameters): what a folder is claimed with."""
        config = self.config.as_dict() if self.config is not None else {}
        kind = type(self.config).__name__ if self.config is not None else ""
        return RunLog(door=self.door, config_type=kind, config=config, parameters=self.parameters)

    def _own(self, model):
        self._owned.append(model)
        return model

    def __getitem__(self, role: str) -> RoleCalls:
        if role not in self.roles:
            raise KeyError(f"role {role!r} is not one of this run's ({', '.join(self.roles)})")
        return self.roles[role]

    @property
    def answerer(self) -> RoleCalls:
        return self.roles["answerer"]

    @property
    def calls(self) -> dict:
        """role -> counts (requests, unique prompts, paid, cached, failed, tokens, cost)."""
        return {role: dict(c.counts) for role, c in self.roles.items() if c.counts["requests"] or role == "answerer"}

    def _log(self, **more) -> RunLog:
        if self.registration is not None:
            more["extra"] = {**more.get("extra", {}), "registration": logged(self.registration)}
        return make_log(self.door, self.config, parameters=self.parameters, **more)  # analysis: the config's own

    def log(self, records: pd.DataFrame | None = None, **more) -> RunLog:
        """The run log as it stands: roles (those that made calls, and the answerer), calls, wall time, records."""
        used = self.calls
        roles = {r: role_entry(self.roles[r].endpoint, self.roles[r].fingerprints) for r in used}
        outputs = {"records": records_summary(records)} if records is not None else {}
        return self._log(
            roles=roles, calls=used, wall_s=round(time.perf_counter() - self.t0, 2), outputs=outputs, **more
        )

    def finish(
        self, records: Iterable[Record], kind: type[Record], out_dir: str | Path | None = None, **more
    ) -> tuple[pd.DataFrame, RunLog]:
        """(the records, of one kind, as a frame; the run log); records.parquet and run.json in out_dir when
        given."""
        frame = to_frame(records, kind)
        log = self.log(frame, **more)
        out_dir = out_dir if out_dir is not None else self.out_dir
        if out_dir is not None:
            claim_folder(out_dir, log)
            save_records(frame, Path(out_dir) / "records.parquet")
            write_log(out_dir, log)
        return frame, log

    def close(self) -> None:
        for model in self._owned:
            close = getattr(model, "close", None)
            if close is not None:
                close()
        self._owned.clear()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
