"""olakit: which prompting ideas make an LLM reason better (OlaGPT, GEEK, the CoT + self-review loop).

Thin wrappers over the library functions. The flags of ``run``, ``geek``, ``review``, ``notes build`` and
``reproduce-olagpt`` are the fields of their config types (olakit.config): ``olakit run --help`` lists each with its
default. Every command that makes a result writes its run log (run.json) beside it; ``olakit again DIR`` prints the
command that makes the same run again.

olakit data fetch [--dest DIR] [--base-url URL]
olakit data verify [--dest DIR]
olakit reproduce-olagpt --out DIR [Analysis settings] [--data-dir DIR] [--figures-dir DIR] [--extractor NAME]
olakit run --out DIR [OlaGPTConfig settings, e.g. -n 10 --strategies zero-shot,retrieval --preset olakit]
olakit geek --out DIR [GeekConfig settings]
olakit review (--out DIR | --ask QUESTION) [ReviewConfig settings]
olakit sweep FILE.yaml [--run-id ID] [--parallel N] [--figures-dir figures]
olakit notebook NAME [-p NAME VALUE ...] [-y YAML] [--output EXECUTED.ipynb]
olakit import SPEC.yaml --out DIR [Analysis settings]
olakit compare --sources RUN,RUN,... --out DIR [CompareConfig settings: --labels, --vote-over, Analysis settings]
olakit export RUN --out FILE.jsonl [--data-dir DIR]   (Every Eval Ever instance-level JSON Lines)
olakit batch status | cancel   (the provider batches journaled for the configured endpoint)
olakit batch export --requests FILE.jsonl (run | geek) [their settings]   (exit 3: requests written, run them)
olakit batch ingest OUTPUT.jsonl [--engine-model NAME]   (an offline engine's output, vllm run-batch's, into the cache)
olakit plan --comparisons "A:S vs B:S,..." [--estimates recorded|RUN] [--delta D] [--power P] [--alpha A] [run settings]
olakit plan --after REGISTERED_RUN [--comparisons "..."]   (decided or not; comparisons added after it: exploratory)
olakit serve [--model GGUF] [--port N] [--n-parallel N]
olakit cache copy SRC DST
olakit notes build --out FILE [NotesConfig settings, e.g. --dataset ekar_zh --pool 40 --r 3]
olakit again DIR [--out NEW]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from olakit.analysis.compare import CompareConfig, compare_runs
from olakit.analysis.imports import import_spec
from olakit.analysis.iterations import flips, iteration_accuracy, stage_cost
from olakit.analysis.power import (
    PlanConfig,
    after_run,
    mark_roles,
    plan,
    plan_report,
    registered_plan,
    registered_tables,
    run_pairs,
    sensitivity,
    sensitivity_line,
)
from olakit.analysis.reproduce import reproduce_olagpt
from olakit.analysis.runs import replicate_line, replicate_table, run_tables
from olakit.analysis.traces import geek_tables
from olakit.config import ConfigError, add_arguments, from_arguments, parse_value
from olakit.data import fetch
from olakit.data.eee import export_eee
from olakit.data.loaders import FETCHED_DIR, questions_of, resolve_data_dir, run_questions
from olakit.data.recorded import RECORDED_READER
from olakit.data.records import condition_columns, kind_of, prompt_hash
from olakit.errors import DataError, OlakitError
from olakit.geek.config import GeekConfig
from olakit.geek.run import run_geek
from olakit.llm.batch import BatchAnswerer, Exported
from olakit.llm.cache import cache_location, copy_cache
from olakit.llm.client import LLM, connect
from olakit.llm.endpoint import Endpoint
from olakit.llm.local import LocalServer
from olakit.names import plural, voting_templates
from olakit.notebook.jobs import notebook_path, run_notebook
from olakit.notebook.parameters import from_text
from olakit.notebook.sweep import SweepSettings, run_sweep
from olakit.olagpt.active_learning import build_notes
from olakit.olagpt.budget import describe, planned_calls
from olakit.olagpt.config import NotesConfig, OlaGPTConfig
from olakit.olagpt.run import run
from olakit.registration import registered_for
from olakit.review.config import ReviewConfig
from olakit.review.run import ask_report, run_review
from olakit.runlog import LOG_NAME, RunLog, command, fingerprint_note, load_run, read_log, write_outputs
from olakit.settings import Analysis


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="olakit", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    sub = p.add_subparsers(dest="cmd", required=True)
    _no_abbreviations(sub)

    data = sub.add_parser("data", help="download or verify the datasets").add_subparsers(dest="data_cmd", required=True)
    f = data.add_parser("fetch", help="download the data files at their pinned commits and check sha256")
    f.add_argument("--dest", default=None, help="target directory (default: data/raw in the repository)")
    f.add_argument(
        "--base-url", default=None, help="mirror to download from (default: $OLAKIT_DATA_BASE_URL or GitHub raw)"
    )
    v = data.add_parser("verify", help="check the data files against the manifest's sha256")
    v.add_argument(
        "--dest",
        default=None,
        help="directory to check (default: the data in use: --data-dir's, $OLAKIT_DATA_DIR, "
        "data/raw or ../shared/data)",
    )

    r = sub.add_parser("reproduce-olagpt", help="recompute the OlaGPT AQuA tables and figures from recorded outputs")
    r.add_argument("--out", required=True, help="output directory for records.parquet, tables/ and figures/")
    r.add_argument("--data-dir", default=None, help="data directory (default: $OLAKIT_DATA_DIR or the usual places)")
    r.add_argument("--figures-dir", default=None, help="where the PNGs go (default: OUT/figures)")
    r.add_argument("--extractor", default=None, help=f"answer reader: olagpt or strict [default: {RECORDED_READER}]")
    add_arguments(r, Analysis)
    s = sub.add_parser("serve", help="serve the embedded model (or any GGUF) on 127.0.0.1 until interrupted")
    s.add_argument("--model", default=None, help="path of a GGUF file (default: the embedded Qwen2.5-Coder-0.5B)")
    s.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    s.add_argument("--n-parallel", type=int, default=4, help="concurrent requests (and the most n per request)")
    s.add_argument("--n-ctx", type=int, default=8192, help="context size shared by the parallel slots")
    s.add_argument("--verbosity", type=int, default=3, help="llama.cpp's log verbosity (0: none; 3: its default)")
    s.add_argument("--threads", type=int, default=None, help="CPU threads (default: llama.cpp's choice)")
    lv = sub.add_parser("run", help="run the OlaGPT grid live (templates x note strategies, baselines, votes)")
    lv.add_argument("--out", required=True, help="output directory (records.parquet, tables/)")
    lv.add_argument("--concurrency", type=int, default=None, help="calls in flight at once [default: the client's]")
    _registration_argument(lv, "METHOD:STRATEGY vs METHOD:STRATEGY")
    lv.add_argument(
        "--batch",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="answer through the provider's Batch API at its batch rate (docs/batch.md) [default: $OLAKIT_BATCH]",
    )
    add_arguments(lv, OlaGPTConfig)

    gk = sub.add_parser(
        "geek", help="GEEK on StrategyQA (or a yes/no dataset file): the Table-2 rows with their traces"
    )
    gk.add_argument("--out", required=True, help="output directory (records.parquet with traces, tables/, run.json)")
    gk.add_argument("--concurrency", type=int, default=None, help="calls in flight at once [default: the client's]")
    _registration_argument(gk, "ROW vs ROW, e.g. +RE vs CoT")
    gk.add_argument(
        "--batch",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="answer through the provider's Batch API at its batch rate (docs/batch.md) [default: $OLAKIT_BATCH]",
    )
    add_arguments(gk, GeekConfig)

    rv = sub.add_parser("review", help="the CoT + self-review loop (seeds/003) on a dataset slice or one question")
    rv.add_argument("--ask", default=None, help="one open question: print the final answer and the history")
    rv.add_argument("--out", default=None, help="output directory (records.parquet with histories, tables/)")
    add_arguments(rv, ReviewConfig)

    sw = sub.add_parser("sweep", help="run notebooks over parameter grids through papermill, in parallel")
    sw.add_argument("file", help="sweep file (YAML)")
    sw.add_argument("--runs-dir", default="runs", help="where executed notebooks go (runs/<run_id>/)")
    sw.add_argument("--results-dir", default="results", help="where outputs go (results/<run_id>/<name>/)")
    sw.add_argument("--figures-dir", default=None, help="also copy every run's figures here (<name>__<figure>)")
    add_arguments(sw, SweepSettings)

    nb = sub.add_parser(
        "notebook", help="run one notebook through papermill, every parameter and setting checked before it starts"
    )
    nb.add_argument("notebook", help="a notebook's name (template_count) or path")
    nb.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="a parameter or setting of its config, as its flag takes it (none, A,B,...) or a YAML value",
    )  # fmt: skip
    nb.add_argument("-y", "--parameters-yaml", default=None, help="parameters as a YAML (or JSON) mapping")
    nb.add_argument("--output", default=None, help="the executed notebook [default: runs/NAME.ipynb]")

    im = sub.add_parser("import", help="runs made elsewhere (tables, Inspect, lm-eval, Every Eval Ever), with tables")
    im.add_argument("spec", help="an import spec (YAML): the dataset and each run's file and fields (docs/imports.md)")
    im.add_argument("--out", required=True, help="output directory (records.parquet, tables/, run.json)")
    add_arguments(im, Analysis)

    cm = sub.add_parser(
        "compare", help="runs side by side: run folders, records files and import specs, with the tables"
    )
    cm.add_argument("--out", required=True, help="output directory (records.parquet, tables/, run.json)")
    add_arguments(cm, CompareConfig)

    pl = sub.add_parser(
        "plan", help="before a run: the questions each comparison needs (exact McNemar power, Holm) and their price"
    )
    pl.add_argument("--out", default=None, help="also write the plan as a CSV file")
    add_arguments(pl, PlanConfig)

    ex = sub.add_parser("export", help="a run's records as an Every Eval Ever instance-level file (JSON Lines)")
    ex.add_argument("run", help="a run folder or a records file (.parquet)")
    ex.add_argument("--out", required=True, help="the file to write (.jsonl)")
    ex.add_argument("--data-dir", default=None, help="where the run's questions are (default: the usual places)")

    bt = sub.add_parser("batch", help="the provider batches journaled for the configured endpoint (docs/batch.md)")
    bt_cmd = bt.add_subparsers(dest="batch_cmd", required=True)
    bt_cmd.add_parser("status", help="each journaled batch's state and requests done, as the provider reports them")
    bt_cmd.add_parser("cancel", help="cancel them; the next run collects what they finished and resubmits the rest")
    be = bt_cmd.add_parser(
        "export",
        help="write the requests a run's next stage needs (and the cache lacks) as an OpenAI batch input file for an"
        " offline engine (vllm run-batch); exit 3 when it wrote some, 0 when the run completed from the cache",
    )
    be.add_argument("--requests", required=True, help="the batch input file to write (.jsonl)")
    be.add_argument("command", nargs=argparse.REMAINDER, help="run or geek, with their settings (and --out)")
    bi = bt_cmd.add_parser("ingest", help="store an offline engine's batch output file in the answer cache")
    bi.add_argument("output", help="the engine's output file (.jsonl): one result per exported request")
    bi.add_argument(
        "--engine-model",
        default=None,
        help="the name the engine gives the model in its answers when it is not $OLAKIT_MODEL (llama.cpp: its file)",
    )

    ca = sub.add_parser("cache", help="the answer cache").add_subparsers(dest="cache_cmd", required=True)
    cp = ca.add_parser("copy", help="copy every answer from one cache to another (a directory or redis://HOST/DB)")
    cp.add_argument("src", help="a diskcache directory or a Redis URL")
    cp.add_argument("dst", help="a diskcache directory or a Redis URL")

    nb = sub.add_parser("notes", help="notes libraries").add_subparsers(dest="notes_cmd", required=True)
    b = nb.add_parser("build", help="build a notes library by active learning (error book of a pool)")
    _no_abbreviations(nb)
    b.add_argument("--out", required=True, help="library file (JSON Lines); its run log goes beside it")
    add_arguments(b, NotesConfig)

    ag = sub.add_parser("again", help="print the command that makes the run in a folder (its run.json) again")
    ag.add_argument("folder", help="a run's output folder (or a notes library file)")
    ag.add_argument("--out", default=None, help="where the new run writes (default: FOLDER-again)")
    return p


def _no_abbreviations(subparsers) -> None:
    """Every parser under ``subparsers`` refuses abbreviated flags (``--n-note 1`` is an error, never a guess)."""
    make = subparsers.add_parser

    def add_parser(*args, **kwargs):
        return make(*args, **{"allow_abbrev": False, **kwargs})

    subparsers.add_parser = add_parser


def _log_of(path: str) -> RunLog:
    """The run log of a run folder or of a single output file (``FILE.run.json``)."""
    where = Path(path)
    found = read_log(where.parent, f"{where.name}.{LOG_NAME}") if where.is_file() else read_log(where)
    if found is None:
        raise DataError(f"{path}: no run log there ({LOG_NAME}); give a folder a run wrote")
    return found


def _out_dir(path: str | None) -> str | None:
    """An output directory that can be written: checked before the first call, so a bad one costs nothing."""
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise DataError(f"--out {path}: a file is there; give a directory (it is created when missing)")
    return path


EXPORTED = 3
"""The exit status of ``olakit batch export`` when it wrote requests (the run is not complete yet)."""


def _answerer(concurrency: int | None, batch: bool | None = None, export: str | None = None):
    """The answerer role's client, made before the run so the plan can name its endpoint."""
    options = {"concurrency": concurrency} if concurrency else {}
    return connect(Endpoint.from_env("answerer"), batch=batch, export=export, **options)


def _journal() -> BatchAnswerer:
    """The batches journaled for the configured endpoint (status, cancel, ingest); any endpoint's, the embedded
    model's too, since exported requests are journaled for whichever endpoint the run was given."""
    return BatchAnswerer(LLM(Endpoint.from_env("answerer")), progress=False)


def yaml_mapping(text: str) -> dict:
    """A YAML (or JSON) mapping given on the command line; ConfigError when it is something else."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"-y {text[:60]!r}: not valid YAML ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"-y {text[:60]!r}: give a mapping of parameter names to values")
    return value


def _registration_argument(parser: argparse.ArgumentParser, form: str) -> None:
    """``--registration FILE`` of the doors that run paired tests (olakit.registration)."""
    parser.add_argument(
        "--registration",
        default=None,
        help=f"a pre-registered family of comparisons ({form}; YAML, docs/plan.md): hashed into the run before its "
        "first call, its comparisons confirmatory in the tables",
    )


def _judged(tables: dict, log: RunLog) -> None:
    """A run's closing words on what it can be trusted to say: each registered comparison's verdict, and a change of
    the endpoint's system_fingerprint during the run."""
    if "registered" in tables:
        for _, r in tables["registered"].iterrows():
            print(f"registered: {r['comparison']}: {r['verdict']}")
    if note := fingerprint_note(log):
        print(note)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    export = None
    if args.cmd == "batch" and args.batch_cmd == "export":  # the run itself, its requests written to a file
        export, inner = args.requests, [a for a in args.command if a != "--"]
        if not inner or inner[0] not in ("run", "geek"):
            print("olakit batch export: give the run after --requests FILE: run ... or geek ...", file=sys.stderr)
            return 2
        args = _parser().parse_args(inner)
    # olakit's own progress lines; other libraries only when something is wrong (faiss logs its loader at INFO)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("olakit").setLevel(logging.INFO)
    logging.getLogger("papermill").setLevel(logging.ERROR)  # four lines per notebook, and a warning per setting given
    try:
        if args.cmd == "data":
            dest = args.dest or (FETCHED_DIR if args.data_cmd == "fetch" else resolve_data_dir())
            if args.data_cmd == "fetch":
                status = fetch.fetch(dest, base_url=args.base_url)
                n_new = sum(s == "fetched" for s in status.values())
                print(f"{len(status)} files in {dest}: {n_new} fetched, {len(status) - n_new} already present")
            else:
                bad = fetch.verify(dest)
                if bad:
                    print(f"{len(bad)} files missing or corrupt in {dest}: {', '.join(bad)}", file=sys.stderr)
                    return 1
                print(f"all files in {dest} match the manifest")
        elif args.cmd == "reproduce-olagpt":
            analysis = from_arguments(Analysis, args)
            rep = reproduce_olagpt(
                args.data_dir, _out_dir(args.out), figures_dir=args.figures_dir, extractor=args.extractor,
                analysis=analysis,
            )  # fmt: skip
            print(rep.tables["accuracy"].round(4).to_string())
            n_tables, n_figures = len(rep.tables), len(rep.figures)
            print(f"wrote {rep.out_dir}/records.parquet, run.json, {n_tables} tables and {n_figures} figures")
        elif args.cmd == "run":
            cfg = from_arguments(OlaGPTConfig, args)  # before the LLM: bad settings cost nothing
            out = _out_dir(args.out)
            registered, entry = registered_for(args.registration, cfg)
            params = {"out": args.out, "concurrency": args.concurrency, "batch": args.batch}
            params |= {"registration": args.registration} if args.registration else {}
            with _answerer(args.concurrency, args.batch, export) as llm:
                batched = isinstance(llm, BatchAnswerer)
                print(describe(planned_calls(cfg), llm.endpoint, batched), flush=True)  # before the first call
                n = len(cfg.pick(questions_of(cfg)))
                print("  " + sensitivity_line(sensitivity(n, run_pairs(cfg), what="cells")), flush=True)
                if registered is not None:
                    print(registered_plan(registered, n, cfg.data_dir, cfg.analysis()), flush=True)
                res = run(cfg, llm=llm, out_dir=out, parameters=params, registration=entry)
            names = voting_templates(res.records["template"])
            tables = run_tables(res.records, names, cfg.analysis())
            again = replicate_table(res.log)
            if again is not None:
                tables["replicate"] = again
            if registered is not None:
                tables |= registered_tables(res.records, names, registered, cfg.analysis())
            write_outputs(args.out, res.log, tables)
            print(tables["methods_wide"].round(4).to_string())
            if again is not None:
                print(replicate_line(again))
            _judged(tables, res.log)
            print(f"calls {json.dumps(res.calls)}; run log: {Path(args.out) / LOG_NAME}")
        elif args.cmd == "geek":
            cfg = from_arguments(GeekConfig, args)
            registered, entry = registered_for(args.registration, cfg)
            params = {"out": args.out, "concurrency": args.concurrency, "batch": args.batch}
            params |= {"registration": args.registration} if args.registration else {}
            n, rows = len(cfg.pick(questions_of(cfg))), len(cfg.rows)
            print(sensitivity_line(sensitivity(n, rows * (rows - 1) // 2, what="rows")), flush=True)  # before a call
            if registered is not None:
                print(registered_plan(registered, n, cfg.data_dir), flush=True)
            with _answerer(args.concurrency, args.batch, export) as llm:
                res = run_geek(cfg, llm=llm, out_dir=_out_dir(args.out), parameters=params, registration=entry)
            tables = geek_tables(res.records, cfg)
            if registered is not None:
                tables |= mark_roles(tables["paired_tests"], registered)
            write_outputs(args.out, res.log, tables)
            print(f"GEEK on {res.corpus}, {plural(len(res.records) // len(cfg.rows), 'question')}")
            print(tables["table2"][["method", "n", "correct", "accuracy", "ci_low", "ci_high"]].round(4).to_string())
            _judged(tables, res.log)
            print(f"calls {json.dumps(res.calls)}; retrieval {json.dumps(res.recall)}")
        elif args.cmd == "review":
            cfg = from_arguments(ReviewConfig, args)
            if args.ask is None and args.out is None:
                raise DataError('give --out DIR for a dataset slice, or --ask "question" for one question')
            if args.ask is None and cfg.dataset != "open":  # each iteration against the one before (flips)
                n = len(cfg.pick(questions_of(cfg)))
                print(sensitivity_line(sensitivity(n, cfg.max_iterations, what="iterations")), flush=True)
            res = run_review(cfg, out_dir=_out_dir(args.out), ask=args.ask, parameters={"out": args.out})
            if args.ask is not None:
                print(ask_report(res))
            if args.out is not None:
                tables = {
                    "iteration_accuracy": iteration_accuracy(res.records, cfg),
                    "flips": flips(res.records),
                    "stage_cost": stage_cost(res.records),
                }
                write_outputs(args.out, res.log, tables)
                shown = ["method", "iteration", "n", "correct", "accuracy", "unparsed"]
                print(tables["iteration_accuracy"][shown].to_string())
                print(tables["flips"].to_string())
            print(f"calls {json.dumps(res.calls)}")
        elif args.cmd == "import":
            _, tables, _, report = import_spec(args.spec, _out_dir(args.out), from_arguments(Analysis, args))
            print("\n".join(report.lines()))
            shown = tables["methods"][["method", "n", "correct", "accuracy", "ci_low", "ci_high"]]
            print(shown.round(4).to_string(index=False))
            print(f"wrote {args.out}/records.parquet, run.json and {len(tables)} tables")
        elif args.cmd == "compare":
            comparison, tables, _ = compare_runs(from_arguments(CompareConfig, args), _out_dir(args.out))
            shown = tables["conditions"][["condition", "model", "n", "correct", "accuracy", "ci_low", "ci_high"]]
            print(shown.round(4).to_string(index=False))
            vote = tables["methods"][tables["methods"]["method"] == "regex_vote"]
            if len(vote):
                v = vote.iloc[0]
                over = len(tables["template_count"]["k"].unique())
                interval = f"[{v['ci_low']:.4f}, {v['ci_high']:.4f}]"
                print(f"regex vote over {over} conditions: {v['correct']}/{v['n']} = {v['accuracy']:.4f} {interval}")
            decided = tables["paired_tests"]["significant"].sum()
            print(f"{len(tables['paired_tests'])} pairs, exact McNemar with Holm: {decided} differ at 0.05")
            if len(tables["left_out"]):
                print(f"{len(tables['left_out'])} questions some condition lacks were left out")
            print(f"wrote {args.out}/records.parquet, run.json and {len(tables)} tables")
        elif args.cmd == "batch" and args.batch_cmd == "ingest":
            with _journal() as answerer:
                counts = answerer.ingest(args.output, args.engine_model)
                waiting = len(answerer.exported())
            print(
                f"ingested {plural(counts['answers'], 'answer')} for {answerer.endpoint.model} into the cache;"
                f" {counts['failed']} failed (not cached: the next export writes them again),"
                f" {counts['already']} were there already; {waiting} exported requests still wait"
            )
        elif args.cmd == "batch":
            with _journal() as answerer:
                if args.batch_cmd == "status":
                    rows = answerer.status()
                    for r in rows:
                        print(f"{r['id']}: {r['state']}, {r['done']} of {r['total']} requests done")
                    print(f"{plural(len(rows), 'batch')} journaled for {answerer.endpoint.model}")
                else:
                    ids = answerer.cancel()
                    print(f"asked to cancel {plural(len(ids), 'batch')}: {', '.join(ids) or 'none running'}")
        elif args.cmd == "plan":
            cfg = from_arguments(PlanConfig, args)
            endpoint = Endpoint.from_env("answerer")
            if cfg.after is not None:
                table = after_run(cfg.after, cfg.comparisons, cfg.analysis())
                for _, r in table.iterrows():
                    print(f"{r['role']}: {r['comparison']}: {r['verdict']}")
            else:
                table = plan(cfg, endpoint)
                print(plan_report(table, cfg, endpoint))
            if args.out:
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                table.to_csv(args.out, index=False)
                print(f"wrote {args.out}")
        elif args.cmd == "export":
            source = Path(args.run)
            records, log = load_run(source / "records.parquet" if source.is_dir() else source)
            config = (log.extra.get("questions") or log.config) if log is not None else {}
            questions = {q.id: q for q in run_questions(config, list(dict.fromkeys(records["dataset"])), args.data_dir)}
            evaluation = log.run_id if log is not None and log.run_id else f"olakit-{prompt_hash(str(source))[:16]}"
            path = export_eee(records, args.out, questions, evaluation_id=evaluation,
                              cells=condition_columns(kind_of(records)))  # fmt: skip
            print(f"wrote {len(records)} instances of {records['question_id'].nunique()} questions to {path}")
        elif args.cmd == "notebook":
            path = notebook_path(args.notebook)
            given = yaml_mapping(args.parameters_yaml) if args.parameters_yaml else {}
            job = run_notebook(args.notebook, {**given, **from_text(path, args.parameter)}, args.output)
            if job.status != "ok":
                print(
                    f"olakit: error: notebook {job.name} failed: {job.error} (executed: {job.output})", file=sys.stderr
                )
                return 1
            out = job.parameters.get("out_dir")
            print(f"executed: {job.output}" + (f"; outputs: {out}" if out else ""))  # after the log's "ok in N s"
        elif args.cmd == "sweep":
            given = {
                k: parse_value(SweepSettings, k, v) for k, v in vars(args).items() if k in SweepSettings.settings()
            }
            index = run_sweep(
                args.file, runs_dir=args.runs_dir, results_dir=args.results_dir, figures_dir=args.figures_dir, **given
            )
            for job in index["runs"]:
                print(
                    f"{job['status']:6} {job['wall_s']:7.1f} s  {job['name']}"
                    + (f"  ({job['error'][:200]})" if job["error"] else "")
                )
            print(
                f"sweep {index['run_id']}: {plural(len(index['runs']), 'notebook')} in {index['wall_s']} s; calls "
                f"{json.dumps(index['calls'])}; index: {args.runs_dir}/{index['run_id']}/index.json"
            )
            if index.get("server") and index["server"]["tokens_generated"]:
                srv = index["server"]
                print(
                    f"embedded model: {srv['tokens_generated']} tokens generated at "
                    f"{srv['generated_tokens_per_s']} tokens/s per slot; {srv['prompt_tokens_evaluated']} prompt "
                    f"tokens evaluated, {srv['prompt_tokens_reused']} reused from its prompt cache"
                )
            if any(j["status"] != "ok" for j in index["runs"]):
                return 1
        elif args.cmd == "cache":
            src, dst = cache_location(args.src), cache_location(args.dst)
            n = copy_cache(src, dst)
            print(f"copied {n} answers from {src.location} to {dst.location}")
            src.close()
            dst.close()
        elif args.cmd == "notes":
            cfg = from_arguments(NotesConfig, args)
            lib, run_log = build_notes(cfg, args.out)
            print(
                f"{len(lib)} notes from {run_log.extra['pool']} pool questions written to {args.out} (run log "
                f"{args.out}.{LOG_NAME}); calls {json.dumps(run_log.summary())}"
            )
        elif args.cmd == "again":
            print(command(_log_of(args.folder), args.out or f"{args.folder.rstrip('/')}-again"))
        elif args.cmd == "serve":
            with LocalServer(
                args.model,
                port=args.port,
                n_parallel=args.n_parallel,
                n_ctx=args.n_ctx,
                verbosity=args.verbosity,
                threads=args.threads,
            ) as srv:
                print(
                    f"serving {srv.model_path.name} at {srv.base_url}\n"
                    f"  export OLAKIT_BASE_URL={srv.base_url} OLAKIT_MODEL={srv.model}",
                    flush=True,
                )
                try:
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    pass
    except Exported as exc:
        print(f"olakit: {exc}", file=sys.stderr)
        return EXPORTED
    except OlakitError as exc:
        print(f"olakit: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
