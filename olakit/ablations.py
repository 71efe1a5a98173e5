"""What the ablation notebooks share: get records (recorded or live), write figures and a run manifest.

Each notebook is parameters, a call to ``get_records``, one or two analysis calls and ``finish``:

    records, templates, info = get_records("recorded", "aqua", strategies=["zero-shot", "retrieval"])
    table = analysis.template_count_ablation(records, templates)
    finish(out_dir, "template_count", params, records, info, tables={"template_count": table}, figures={...})

``finish`` writes tables/NAME.csv, figures/NAME.png and .pdf, and manifest.json (model, endpoint identity,
prompt hashes, seeds, package versions; never a key) into out_dir.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Sequence

import pandas as pd

from olakit.data import REPO_ROOT, write_atomic
from olakit.errors import DataError

PACKAGES = ("olakit", "openai", "numpy", "pandas", "scipy", "statsmodels", "scikit-learn", "faiss-cpu",
            "sentence-transformers", "torch", "xllamacpp", "papermill", "seaborn", "matplotlib")
RECORDED_TEMPLATES = ["DST", "DT", "PT", "ST", "turbo"]


def get_records(source: str, dataset: str = "aqua", *, n_questions: int | None = None, offset: int = 0,
                templates: Sequence[str] | None = None,
                strategies: Sequence[str] = ("zero-shot", "random", "retrieval", "combine"),
                n_notes: Sequence[int] = (3,), library: str | None = "olagpt", baselines: Sequence[str] = (),
                votes: Sequence[str] = ("regex",), sc_k: int = 3, max_tokens: int = 256, vote_max_tokens: int = 192,
                seed: int = 0, extractor: str | None = None, data_dir=None,
                concurrency: int = 4) -> tuple[pd.DataFrame, list[str], dict]:
    """(records, template names, info) from the OlaGPT recorded outputs or a live run of the runner.

    ``source``: ``"recorded"`` (AQuA only: the authors' gpt-3.5 outputs, n_notes 3) or ``"live"`` (the endpoint
    from the environment, or the embedded model).
    """
    if source == "recorded":
        from olakit.records import OLAGPT_TOP_N, import_olagpt

        if dataset != "aqua":
            raise DataError(f"recorded outputs exist for AQuA only, not {dataset!r}; use source='live'")
        df = import_olagpt(data_dir, extractor=extractor or "olagpt")
        names = list(templates) if templates else RECORDED_TEMPLATES
        unknown = sorted(set(names) - set(RECORDED_TEMPLATES))
        if unknown:
            raise DataError(f"templates {unknown} are not in the recorded outputs; recorded: {RECORDED_TEMPLATES}")
        df = df[df["template"].isin(names) & df["notes_strategy"].isin(strategies)]
        ids = list(dict.fromkeys(df["question_id"]))
        keep = ids[offset:None if n_questions is None else offset + n_questions]
        df = df[df["question_id"].isin(keep)].reset_index(drop=True)
        info = {"source": "olagpt-recorded", "model": "gpt-3.5-turbo", "endpoint": "recorded (OlaGPT repository)",
                "n_notes": OLAGPT_TOP_N, "stats": {"requests": 0}}
        return df, names, info
    if source == "live":
        from olakit.llm import LLM
        from olakit.run import RunConfig, run

        cfg = RunConfig(dataset=dataset, n_questions=n_questions, offset=offset, templates=templates,
                        strategies=tuple(strategies), n_notes=tuple(n_notes), library=library,
                        baselines=tuple(baselines), votes=tuple(votes), sc_k=sc_k, max_tokens=max_tokens,
                        vote_max_tokens=vote_max_tokens, seed=seed, extractor=extractor or "strict",
                        data_dir=data_dir)
        with LLM(concurrency=concurrency) as llm:
            res = run(cfg, llm=llm)
            info = {"source": "live", "model": llm.endpoint.model, "endpoint": llm.endpoint.identity,
                    "stats": res.stats}
        from olakit.analysis import NON_TEMPLATES

        names = [t for t in dict.fromkeys(res.records["template"]) if t not in NON_TEMPLATES]
        return res.records, names, info
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def save_figure(fig, out_dir: str | os.PathLike, name: str) -> list[Path]:
    """figures/NAME.png and figures/NAME.pdf under out_dir (each written atomically)."""
    folder = Path(out_dir) / "figures"
    return [write_atomic(folder / f"{name}.{ext}", lambda p, e=ext: fig.savefig(p, format=e, dpi=150, bbox_inches="tight"))
            for ext in ("png", "pdf")]


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth)$", re.IGNORECASE)


def manifest(notebook: str, parameters: dict, records: pd.DataFrame, info: dict) -> dict:
    """What a run used: parameters (anything named like a secret refused), model, endpoint identity, prompt
    hashes, seeds, package versions, python, git commit."""
    bad = [k for k, v in parameters.items() if SECRET_NAME.search(k) or (isinstance(v, str) and v.startswith("sk-"))]
    if bad:
        raise DataError(f"parameters {bad} look like secrets; keys come from the environment only")
    hashes = sorted(set(records["prompt_hash"]))
    return {
        "notebook": notebook,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "parameters": parameters,
        "source": info.get("source"),
        "model": sorted(set(records["model"])) or [info.get("model")],
        "endpoint": info.get("endpoint"),
        "calls": info.get("stats", {}),
        "records": len(records),
        "prompt_hashes": hashes,
        "prompts_digest": hashlib.sha256("".join(hashes).encode()).hexdigest(),
        "seeds": {k: v for k, v in parameters.items() if "seed" in k},
        "packages": package_versions(),
        "python": platform.python_version(),
        "olakit_commit": _commit(),
    }


def finish(out_dir: str | os.PathLike, notebook: str, parameters: dict, records: pd.DataFrame, info: dict, *,
           tables: dict[str, pd.DataFrame], figures: dict) -> dict:
    """Write tables (CSV), figures (PNG and PDF) and manifest.json into out_dir; close the figures."""
    import matplotlib.pyplot as plt

    from olakit.reproduce import write_tables

    out = Path(out_dir)
    write_tables(tables, out)
    written = {name: [str(p) for p in save_figure(fig, out, name)] for name, fig in figures.items()}
    for fig in figures.values():
        plt.close(fig)
    man = manifest(notebook, parameters, records, info)
    man["tables"] = sorted(tables)
    man["figures"] = written
    write_atomic(out / "manifest.json", lambda p: p.write_text(json.dumps(man, indent=1, default=str)))
    return man
