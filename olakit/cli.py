"""olakit: which prompting ideas make an LLM reason better (OlaGPT, GEEK, the CoT + self-review loop).

A shell over the library: each command reads its config from its flags (the fields of its config type, olakit.config:
``olakit run --help`` lists each with its default), calls the library function that makes the Result, its tables
(olakit.analysis.report) and the one writer (Result.write), and prints a summary. Every command that makes a result
writes its run log (run.json) beside it; ``olakit again DIR`` prints the command that makes the same run again. The
parser imports no heavy package; each command imports what it needs.

olakit data fetch [--dest DIR] [--base-url URL]
olakit data verify [--dest DIR]
olakit reproduce-olagpt --out DIR [Analysis settings] [--data-dir DIR] [--figures-dir DIR] [--extractor NAME]
olakit run --out DIR [OlaGPTConfig settings, e.g. -n 10 --strategies zero-shot,retrieval --preset olakit]
olakit geek --out DIR [GeekConfig settings]
olakit review (--out DIR | --ask QUESTION) [ReviewConfig settings]
olakit method NAME --out DIR [its config's settings]   (any method: olagpt, geek, review, notes, module:object)
olakit methods   (the methods found by name: built-in, and installed packages' entry points)
olakit sweep FILE.yaml [--run-id ID] [--parallel N] [--figures-dir figures] [--force]
olakit notebook NAME [-p NAME VALUE ...] [-y YAML] [--output EXECUTED.ipynb]
olakit import SPEC.yaml --out DIR [Analysis settings]
olakit compare --sources RUN,RUN,... --out DIR [CompareConfig settings: --labels, --vote-over, Analysis settings]
olakit export RUN --out FILE.jsonl [--data-dir DIR]   (Every Eval Ever instance-level JSON Lines)
olakit batch status | cancel   (the provider batches journaled for the configured endpoint)
olakit batch export --requests FILE.jsonl (run | geek) [their settings]   (exit 3: requests written, run them)
olakit batch run REQUESTS.jsonl --out OUTPUT.jsonl   (an exported file answered by the endpoint: the embedded model)
olakit batch ingest OUTPUT.jsonl [--engine-model NAME]   (an offline engine's output, vllm run-batch's, into the cache)
olakit plan --comparisons "A:S vs B:S,..." [--estimates recorded|RUN] [--delta D] [--power P] [run settings, --alpha A]
olakit plan --after REGISTERED_RUN [--comparisons "..."]   (decided or not; comparisons added after it: exploratory)
olakit serve [--model GGUF] [--port N] [--n-parallel N]
olakit cache copy SRC DST
olakit notes build --out DIR [NotesConfig settings, e.g. --dataset ekar_zh --pool 40 --r 3]
olakit again DIR [--out NEW]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from olakit.errors import DataError, OlakitError

EXPORTED = 3
"""The exit status of ``olakit batch export`` when it wrote requests (the run is not complete yet)."""


CONFIGS = {
    "run": ("olakit.olagpt.config:OlaGPTConfig",),
    "geek": ("olakit.geek.config:GeekConfig",),
    "review": ("olakit.review.config:ReviewConfig",),
    "reproduce-olagpt": ("olakit.settings:Analysis",),
    "import": ("olakit.settings:Analysis",),
    "compare": ("olakit.analysis.config:CompareConfig",),
    "plan": ("olakit.plan_config:PlanConfig", "olakit.olagpt.config:OlaGPTConfig"),
    "notes": ("olakit.olagpt.config:NotesConfig",),
    "sweep": ("olakit.notebook.sweep:SweepSettings",),
}
"""The config types whose fields are each command's flags, imported only for the command given: the parser of
`olakit --help`, and of an argument error of `olakit run`, imports no heavy package."""


def _configs(argv: list[str]) -> dict:
    """The config types the command line's command takes flags from (``{}`` for none); ``olakit method NAME``: the
    named method's own (olakit.methods.method_of)."""
    import importlib

    words = [a for a in argv if not a.startswith("-")]
    if words[:1] == ["method"] and len(words) > 1:
        from olakit.methods import method_of

        return {"method": method_of(words[1]).config}
    names = next((CONFIGS[a] for a in argv if a in CONFIGS), ())
    if "export" in argv and "batch" in argv:  # `olakit batch export ... run|geek|method ...`: the run's own
        names = next((CONFIGS[a] for a in argv if a in ("run", "geek")), names)
        if "method" in argv:
            return _configs(argv[argv.index("method") :])
    out = {}
    for name in names:
        module, _, cls = name.partition(":")
        out[cls] = getattr(importlib.import_module(module), cls)
    return out


# ---- the parser


def _parser(configs: dict | None = None) -> argparse.ArgumentParser:
    """The parser, with the flags of the config types in ``configs`` (those of the command given, _configs)."""
    p = _Parser(prog="olakit", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    c = configs or {}

    def flags(parser, name, **kw):
        if name in c:
            from olakit.config import add_arguments

            add_arguments(parser, c[name], **kw)

    data = sub.add_parser("data", help="download or verify the datasets").add_subparsers(
        dest="data_cmd", required=True, parser_class=_Parser
    )
    f = data.add_parser("fetch", help="download the data files at their pinned commits and check sha256")
    f.add_argument("--dest", default=None, help="target directory (default: data/raw in the repository)")
    f.add_argument(
        "--base-url", default=None, help="mirror to download from (default: $OLAKIT_DATA_BASE_URL or GitHub)"
    )
    v = data.add_parser("verify", help="check the data files against the manifest's sha256")
    v.add_argument("--dest", default=None, help="directory to check (default: the data in use: $OLAKIT_DATA_DIR, "
                   "data/raw or ../shared/data)")  # fmt: skip

    r = sub.add_parser("reproduce-olagpt", help="recompute the OlaGPT AQuA tables and figures from recorded outputs")
    r.add_argument("--out", required=True, help="output directory for records.parquet, tables/ and figures/")
    r.add_argument("--data-dir", default=None, help="data directory (default: $OLAKIT_DATA_DIR or the usual places)")
    r.add_argument("--figures-dir", default=None, help="where the PNGs go (default: OUT/figures)")
    r.add_argument("--extractor", default=None, help="answer reader: olagpt or strict [default: olagpt, the authors']")
    flags(r, "Analysis")
    s = sub.add_parser("serve", help="serve the embedded model (or any GGUF) on 127.0.0.1 until interrupted")
    s.add_argument("--model", default=None, help="path of a GGUF file (default: the embedded Qwen2.5-Coder-0.5B)")
    s.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    s.add_argument("--n-parallel", type=int, default=4, help="concurrent requests (and the most n per request)")
    s.add_argument("--n-ctx", type=int, default=8192, help="context size shared by the parallel slots")
    s.add_argument("--verbosity", type=int, default=3, help="llama.cpp's log verbosity (0: none; 3: its default)")
    s.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: OLAKIT_EMBEDDED_THREADS)")

    for name, config, what, form in (  # the doors that run a method: their flags defined once
        ("run", "OlaGPTConfig", "run the OlaGPT grid live (templates x note strategies, baselines, votes)",
         "METHOD:STRATEGY vs METHOD:STRATEGY"),
        ("geek", "GeekConfig", "GEEK on StrategyQA (or a yes/no dataset file): the Table-2 rows with their traces",
         "ROW vs ROW, e.g. +RE vs CoT"),
        ("method", "method", "run any method by name: olagpt, geek, review, notes, or one of your own "
         "(module:object, file.py:object; docs/methods.md)", "CELL vs CELL, as its tables name them"),
    ):  # fmt: skip
        lv = sub.add_parser(name, help=what)
        if name == "method":
            lv.add_argument("spec", metavar="NAME", help="a method's name (olakit methods lists them) or module:object")
        lv.add_argument("--out", required=True, help="output directory (records.parquet, tables/, run.json)")
        lv.add_argument("--concurrency", type=int, default=None, help="calls in flight at once [default: the client's]")
        lv.add_argument(
            "--registration",
            default=None,
            help=f"a pre-registered family of comparisons ({form}; YAML, "
            "docs/plan.md): hashed before the first call, its comparisons confirmatory in the tables",
        )
        lv.add_argument(
            "--batch",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="answer through the provider's Batch API at its batch rate (docs/batch.md) [default: $OLAKIT_BATCH]",
        )
        flags(lv, config)  # fmt: skip

    sub.add_parser("methods", help="list the methods found by name")

    rv = sub.add_parser("review", help="the CoT + self-review loop (seeds/003) on a dataset slice or one question")
    rv.add_argument("--ask", default=None, help="one open question: print the final answer and the history")
    rv.add_argument("--out", default=None, help="output directory (records.parquet with histories, tables/)")
    flags(rv, "ReviewConfig")

    sw = sub.add_parser("sweep", help="run notebooks over parameter grids through papermill, in parallel")
    sw.add_argument("file", help="sweep file (YAML)")
    sw.add_argument("--runs-dir", default="runs", help="where executed notebooks go (runs/<run_id>/)")
    sw.add_argument("--results-dir", default="results", help="where outputs go (results/<run_id>/<name>/)")
    sw.add_argument("--figures-dir", default=None, help="also copy every run's figures here (<name>__<figure>)")
    sw.add_argument("--force", action="store_true", help="make every result again, even those whose inputs are "
                    "unchanged (by default they are kept)")  # fmt: skip
    flags(sw, "SweepSettings")

    nb = sub.add_parser("notebook", help="run one notebook through papermill, every parameter checked before it starts")
    nb.add_argument("notebook", help="a notebook's name (template_count) or path")
    nb.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a parameter or setting of its config, as its flag takes it (none, A,B,...) or a YAML value",
    )
    nb.add_argument("-y", "--parameters-yaml", default=None, help="parameters as a YAML (or JSON) mapping")
    nb.add_argument(
        "--output", default=None, help="the executed notebook [default: NAME.ipynb in the working directory]"
    )
    nb.add_argument("--force", action="store_true", help="run it even when its result's inputs are unchanged")

    im = sub.add_parser("import", help="runs made elsewhere (tables, Inspect, lm-eval, Every Eval Ever), with tables")
    im.add_argument("spec", help="an import spec (YAML): the dataset and each run's file and fields (docs/imports.md)")
    im.add_argument("--out", required=True, help="output directory (records.parquet, tables/, run.json)")
    flags(im, "Analysis")

    cm = sub.add_parser("compare", help="runs side by side: run folders, records files and import specs, with tables")
    cm.add_argument("--out", required=True, help="output directory (records.parquet, tables/, run.json)")
    flags(cm, "CompareConfig")

    pl = sub.add_parser("plan", help="before a run: the questions each comparison needs (exact McNemar power, Holm) "
                        "and their price")  # fmt: skip
    pl.add_argument("--out", default=None, help="also write the plan as a CSV file")
    flags(pl, "PlanConfig", skip=("run",))
    flags(pl, "OlaGPTConfig")

    ex = sub.add_parser("export", help="a run's records as an Every Eval Ever instance-level file (JSON Lines)")
    ex.add_argument("run", help="a run folder or a records file (.parquet)")
    ex.add_argument("--out", required=True, help="the file to write (.jsonl)")
    ex.add_argument("--data-dir", default=None, help="where the run's questions are (default: the usual places)")

    bt = sub.add_parser("batch", help="the provider batches journaled for the configured endpoint (docs/batch.md)")
    bt_cmd = bt.add_subparsers(dest="batch_cmd", required=True, parser_class=_Parser)
    bt_cmd.add_parser("status", help="each journaled batch's state and requests done, as the provider reports them")
    bt_cmd.add_parser("cancel", help="cancel them; the next run collects what they finished and resubmits the rest")
    be = bt_cmd.add_parser("export", help="write the requests a run's next stage needs (and the cache lacks) as an "
                           "OpenAI batch input file for an offline engine (vllm run-batch); exit 3 when it wrote "
                           "some, 0 when the run completed from the cache")  # fmt: skip
    be.add_argument("--requests", required=True, help="the batch input file to write (.jsonl)")
    be.add_argument("command", nargs=argparse.REMAINDER, help="run or geek, with their settings (and --out)")
    br = bt_cmd.add_parser(
        "run",
        help="answer an exported batch input file through the configured endpoint (the "
        "embedded model by default), as an offline engine does, into a batch output file",
    )
    br.add_argument("requests", help="the batch input file `olakit batch export` wrote (.jsonl)")
    br.add_argument("--out", required=True, help="the batch output file to write (.jsonl), for `olakit batch ingest`")
    bi = bt_cmd.add_parser("ingest", help="store an offline engine's batch output file in the answer cache")
    bi.add_argument("output", help="the engine's output file (.jsonl): one result per exported request")
    bi.add_argument("--engine-model", default=None, help="the name the engine gives the model in its answers when it "
                    "is not $OLAKIT_MODEL")  # fmt: skip

    ca = sub.add_parser("cache", help="the answer cache").add_subparsers(
        dest="cache_cmd", required=True, parser_class=_Parser
    )
    cp = ca.add_parser("copy", help="copy every answer from one cache to another (a directory or redis://HOST/DB)")
    cp.add_argument("src", help="a diskcache directory or a Redis URL")
    cp.add_argument("dst", help="a diskcache directory or a Redis URL")

    notes = sub.add_parser("notes", help="notes libraries").add_subparsers(
        dest="notes_cmd", required=True, parser_class=_Parser
    )
    b = notes.add_parser("build", help="build a notes library by active learning (error book of a pool)")
    b.add_argument("--out", required=True, help="output directory: notes.jsonl (the library), records.parquet (the "
                   "pool's answers), run.json; give the folder as a run's --library")  # fmt: skip
    flags(b, "NotesConfig")

    ag = sub.add_parser("again", help="print the command that makes the run in a folder (its run.json) again")
    ag.add_argument("folder", help="a run's output folder")
    ag.add_argument("--out", default=None, help="where the new run writes (default: FOLDER-again)")
    return p


class _Parser(argparse.ArgumentParser):
    """A parser that refuses abbreviated flags (``--n-note 1`` is an error, never a guess): argparse's own
    ``allow_abbrev=False``, for every command's parser (``add_subparsers(parser_class=_Parser)``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})


# ---- the commands


def _print_table(df, columns=None) -> None:
    shown = df[columns] if columns else df
    print(shown.round(4).to_string(index=False))


def _judged(tables: dict, log) -> None:
    """A run's closing words on what it can be trusted to say: each registered comparison's verdict, and a change of
    the endpoint's system_fingerprint during the run."""
    from olakit.runlog import fingerprint_note

    if "registered" in tables:
        for _, r in tables["registered"].iterrows():
            print(f"registered: {r['comparison']}: {r['verdict']}")
    if note := fingerprint_note(log):
        print(note)


def _calls(result) -> str:
    """The calls a result made, for a person: the total, then each role's paid calls where there are several."""
    calls = result.calls
    t = calls.pop("total")
    line = (f"calls: {t['unique_prompts']:,} made ({t['paid']:,} paid, {t['cached']:,} from the cache, "
            f"{t['failed']:,} failed), {t['prompt_tokens']:,} prompt and {t['completion_tokens']:,} completion "
            f"tokens, ${t['cost']:.4f}, {t['wall_s']} s")  # fmt: skip
    if len(calls) > 1:
        line += "; per role: " + ", ".join(
            f"{r} {c['paid']:,} paid of {c['unique_prompts']:,}" for r, c in calls.items()
        )
    return line


def _announce(cfg, registered, method, plan=None):
    """What a live run of ``method`` prints once its roles are resolved, before its first call: its planned calls,
    what its questions can decide (every pair of its cells, ``method.cells``: none known, one), and a registered
    family's power."""
    from olakit.analysis.exact import sensitivity, sensitivity_line
    from olakit.data.loaders import questions_of
    from olakit.plan import registered_plan
    from olakit.settings import Analysis

    cells = len(method.cells(cfg)) if method.cells is not None else 1
    pairs, what = cells * (cells - 1) // 2, method.pairs
    own = cfg.analysis() if hasattr(cfg, "analysis") else Analysis(**cfg.stats().as_dict())
    analysis = registered.analysis_for(own) if registered is not None else own

    def announce(job):
        if plan is not None:
            print(plan(job), flush=True)
        n = len(cfg.pick(questions_of(cfg)))
        print(("  " if plan else "") + sensitivity_line(sensitivity(n, pairs, analysis, what=what)), flush=True)
        if registered is not None:
            print(registered_plan(registered, n, cfg.data_dir, analysis), flush=True)

    return announce


def _door(name: str, cfg, args, export):
    """The common part of ``run`` and ``geek``: the registration read and checked before any call, the folder
    claimed, the parameters for the log."""
    from olakit.registration import registered_for
    from olakit.runlog import RunLog, claim_folder

    registered = registered_for(args.registration, cfg)
    params = {"out": args.out, "concurrency": args.concurrency, "batch": args.batch}
    params |= {"registration": args.registration} if args.registration else {}
    claim_folder(_out_dir(args.out), RunLog(door=name, config_type=type(cfg).__name__, config=cfg.as_dict(),
                                            parameters=params))  # fmt: skip
    door = dict(parameters=params, registration=registered, concurrency=args.concurrency, batch=args.batch,
                export=export)  # fmt: skip
    return registered, door


def cmd_run(args, export=None) -> int:
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.methods import BUILTIN
    from olakit.plan import describe

    method = BUILTIN["olagpt"]
    cfg = from_arguments(method.config, args)  # before the LLM: bad settings cost nothing
    if len(cfg.reasoning_effort) > 1:
        return _effort_grid(args, "olagpt", export)
    registered, door = _door("run", cfg, args, export)
    plan = lambda job: describe(method.calls(cfg), job.answerer.endpoint, job.batched)  # noqa: E731
    result = method.run(cfg, announce=_announce(cfg, registered, method, plan), **door)
    tables = report(result)
    result = result.write(args.out, tables)
    print(tables["methods_wide"].round(4).to_string())
    if "replicate" in tables:
        from olakit.analysis.runs import replicate_line

        print(replicate_line(tables["replicate"]))
    _judged(tables, result.log)
    print(f"{_calls(result)}; run log: {Path(args.out) / 'run.json'}")
    return 0


def cmd_geek(args, export=None) -> int:
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.methods import BUILTIN
    from olakit.names import plural

    method = BUILTIN["geek"]
    cfg = from_arguments(method.config, args)
    if len(cfg.reasoning_effort) > 1:
        return _effort_grid(args, "geek", export)
    registered, door = _door("geek", cfg, args, export)
    result = method.run(cfg, announce=_announce(cfg, registered, method), **door)
    rows = len(method.cells(cfg))
    tables = report(result)
    result = result.write(args.out, tables)
    print(f"GEEK on {result.extras.corpus}, {plural(len(result.records) // rows, 'question')}")
    _print_table(tables["table2"], ["method", "n", "correct", "accuracy", "ci_low", "ci_high"])
    _judged(tables, result.log)
    print(f"{_calls(result)}; retrieval {json.dumps(result.extras.recall)}")
    return 0


def cmd_method(args, export=None) -> int:
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.data.loaders import questions_of
    from olakit.door import run_method
    from olakit.methods import method_of, summary

    method = method_of(args.spec)
    cfg = from_arguments(method.config, args)
    registered, door = _door("method", cfg, args, export)
    door["parameters"] |= {"method": args.spec}
    takes = method.options()
    if "announce" in takes and hasattr(cfg, "pick"):
        door["announce"] = _announce(cfg, registered, method)
    options = {k: v for k, v in door.items() if k in takes or v is not None}
    result = run_method(method, cfg, **options)
    tables = report(result)
    result = result.write(args.out, tables)
    if hasattr(cfg, "pick") and result.kind == "olagpt":
        n = len(cfg.pick(questions_of(cfg)))
        print(f"{method.name} on {getattr(cfg, 'dataset', '')}, {n} questions")
    print(summary(result, tables))
    _judged(tables, result.log)
    print(f"{_calls(result)}; run log: {Path(args.out) / 'run.json'}")
    return 0


def _effort_grid(args, spec: str, export=None) -> int:
    """Several reasoning efforts (``--reasoning-effort low,high``): the method's one door runs them as a grid
    (olakit.door.effort_grid), as ``olakit method NAME`` does."""
    args.spec = spec
    for name in ("registration", "concurrency", "batch"):  # flags a command may lack (the review loop's)
        setattr(args, name, getattr(args, name, None))
    return cmd_method(args, export)


def cmd_methods(args) -> int:
    from olakit.methods import known_methods

    for name, method in known_methods().items():
        print(f"{name:10} {method.config.__name__:16} {' > '.join(method.answers):34} {method.about}")
    print("and any method of your own: olakit method module:object (or file.py:object); docs/methods.md")
    return 0


def cmd_review(args) -> int:
    from olakit.analysis.exact import sensitivity, sensitivity_line
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.data.loaders import questions_of
    from olakit.methods import BUILTIN
    from olakit.runlog import RunLog, claim_folder

    method = BUILTIN["review"]
    cfg = from_arguments(method.config, args)
    if args.ask is None and args.out is None:
        raise DataError('give --out DIR for a dataset slice, or --ask "question" for one question')
    if len(cfg.reasoning_effort) > 1:
        if args.ask is not None:
            raise DataError("--ask answers one question under one reasoning effort; several are a grid, with --out")
        return _effort_grid(args, "review")
    params = {"out": args.out}
    if args.out is not None:
        claim_folder(_out_dir(args.out), RunLog(door="review", config_type=method.config.__name__,
                                                config=cfg.as_dict(), parameters=params))  # fmt: skip
    if args.ask is None and cfg.dataset != "open":  # each iteration against the one before (flips)
        n = len(cfg.pick(questions_of(cfg)))
        print(sensitivity_line(sensitivity(n, cfg.max_iterations, cfg.stats(), what="iterations")), flush=True)
    result = method.run(cfg, ask=args.ask, parameters=params)
    if args.ask is not None:
        print(method.show(result))
    if args.out is not None:
        tables = report(result)
        result = result.write(args.out, tables)
        print(tables["iteration_accuracy"][["method", "iteration", "n", "correct", "accuracy", "unparsed"]].to_string())
        print(tables["flips"].to_string())
    print(_calls(result))
    return 0


def cmd_import(args) -> int:
    from olakit.analysis.imports import import_spec
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.settings import Analysis

    result = import_spec(args.spec, from_arguments(Analysis, args), parameters={"out": args.out})
    tables = report(result)
    result.write(_out_dir(args.out), tables)
    print("\n".join(result.extras.report.lines()))
    _print_table(tables["methods"], ["method", "n", "correct", "accuracy", "ci_low", "ci_high"])
    print(f"wrote {args.out}/records.parquet, run.json and {len(tables)} tables")
    return 0


def cmd_compare(args) -> int:
    from olakit.analysis.compare import CompareConfig, compare_runs
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.names import REGEX_VOTE

    cfg = from_arguments(CompareConfig, args)
    result = compare_runs(cfg, parameters={"out": args.out})
    tables = report(result)
    result = result.write(_out_dir(args.out), tables)
    _print_table(tables["conditions"], ["condition", "model", "n", "correct", "accuracy", "ci_low", "ci_high"])
    vote = tables["methods"][tables["methods"]["method"] == REGEX_VOTE]
    if len(vote):
        v, over = vote.iloc[0], len(tables["template_count"]["k"].unique())
        interval = f"[{v['ci_low']:.4f}, {v['ci_high']:.4f}]"
        print(f"regex vote over {over} conditions: {v['correct']}/{v['n']} = {v['accuracy']:.4f} {interval}")
    tests = tables["paired_tests"]
    decided = int(tests["significant"].sum()) if len(tests) else 0
    print(f"{len(tests)} pairs, exact McNemar with Holm: {decided} differ at {cfg.alpha:g}")
    _judged(tables, result.log)
    if len(tables["left_out"]):
        from olakit.names import plural

        left = len(tables["left_out"])
        print(f"{plural(left, 'question')} some condition lacks {'was' if left == 1 else 'were'} left out")
    print(f"wrote {args.out}/records.parquet, run.json and {len(tables)} tables")
    return 0


def cmd_reproduce(args) -> int:
    from olakit.analysis.report import report
    from olakit.analysis.reproduce import draw_figures, reproduce_olagpt
    from olakit.config import from_arguments
    from olakit.names import RECORDED_READER
    from olakit.settings import Analysis

    params = {
        "extractor": args.extractor or RECORDED_READER,
        "data_dir": args.data_dir,
        "figures_dir": args.figures_dir,
    }
    result = reproduce_olagpt(args.data_dir, args.extractor, from_arguments(Analysis, args), parameters=params)
    tables = report(result)
    figures = draw_figures(tables)
    result = result.write(_out_dir(args.out), tables, figures, figures_dir=args.figures_dir)
    print(tables["accuracy"].round(4).to_string())
    print(f"wrote {args.out}/records.parquet, run.json, {len(tables)} tables and {len(figures)} figures")
    return 0


def cmd_plan(args) -> int:
    from olakit.config import from_arguments
    from olakit.methods import BUILTIN
    from olakit.plan import PlanConfig, after_run, design_plan, plan, plan_report
    from olakit.runner import endpoint

    cfg = from_arguments(PlanConfig, args, run=from_arguments(BUILTIN["olagpt"].config, args))
    if cfg.target_se is not None and not cfg.comparisons and cfg.after is None:
        table, text = design_plan(cfg, endpoint())
        print(text)
    elif cfg.after is not None:
        table = after_run(cfg.after, cfg.comparisons)
        if "note" in table.attrs:
            print(table.attrs["note"])
        for change in table.attrs.get("changes", []):
            print(f"change after registration: {change}")
        for _, r in table.iterrows():
            print(f"{r['role']}: {r['comparison']}: {r['verdict']}")
    else:
        table, notes = plan(cfg, endpoint())
        print(plan_report(table, cfg, endpoint(), notes))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    return 0


def cmd_export(args) -> int:
    from olakit.data.eee import export_eee
    from olakit.data.loaders import run_questions
    from olakit.data.records import condition_columns, kind_of, prompt_hash
    from olakit.runlog import load_run

    source = Path(args.run)
    records, log = load_run(source / "records.parquet" if source.is_dir() else source)
    ref = log.dataset if log is not None else None
    questions = {q.id: q for q in run_questions(ref, list(dict.fromkeys(records["dataset"])), args.data_dir)}
    evaluation = log.run_id if log is not None and log.run_id else f"olakit-{prompt_hash(str(source))[:16]}"
    path = export_eee(records, args.out, questions, evaluation_id=evaluation, cells=condition_columns(kind_of(records)))
    print(f"wrote {len(records)} instances of {records['question_id'].nunique()} questions to {path}")
    return 0


def cmd_batch(args) -> int:
    from olakit.names import plural
    from olakit.runner import endpoint, journal

    if args.batch_cmd == "run":
        from olakit.llm.batch import run_batch_file

        counts = run_batch_file(args.requests, args.out, endpoint())
        print(f"answered {counts['answered']} of {plural(counts['requests'], 'request')} with {endpoint().model} into "
              f"{args.out} ({counts['failed']} failed); next: olakit batch ingest {args.out}")  # fmt: skip
        return 0

    with journal() as answerer:
        if args.batch_cmd == "ingest":
            counts = answerer.ingest(args.output, args.engine_model)
            print(
                f"ingested {plural(counts['answers'], 'answer')} for {answerer.endpoint.model} into the cache;"
                f" {counts['failed']} failed (not cached: the next export writes them again),"
                f" {counts['already']} were there already; {len(answerer.exported())} exported requests still wait"
            )
        elif args.batch_cmd == "status":
            rows = answerer.status()
            for r in rows:
                print(f"{r['id']}: {r['state']}, {r['done']} of {r['total']} requests done")
            print(f"{plural(len(rows), 'batch')} journaled for {answerer.endpoint.model}")
        else:
            ids = answerer.cancel()
            print(f"asked to cancel {plural(len(ids), 'batch')}: {', '.join(ids) or 'none running'}")
    return 0


def cmd_notebook(args) -> int:
    from olakit.notebook.jobs import notebook_path, run_notebook
    from olakit.notebook.parameters import from_text

    path = notebook_path(args.notebook)
    given = yaml_mapping(args.parameters_yaml) if args.parameters_yaml else {}
    job = run_notebook(args.notebook, {**given, **from_text(path, args.parameter)}, args.output, force=args.force)
    if job.status not in ("ok", "kept"):
        print(f"olakit: error: notebook {job.name} failed: {job.error} (executed: {job.output})", file=sys.stderr)
        return 1
    out = _shown_path(job.out_dir) if job.out_dir else None  # the parameters cell's folder when none was given
    if job.status == "kept":
        print(f"unchanged: kept {out} (its inputs are those of its last run; --force makes it again)")
    else:  # after the log's "ok in N s"
        where = f"; tables: {out}/tables, figures: {out}/figures, run log: {out}/run.json" if out else ""
        print(f"executed: {job.output}{where}")
    return 0


def cmd_sweep(args) -> int:
    from olakit.config import parse_value
    from olakit.names import plural
    from olakit.notebook.sweep import SweepSettings, run_sweep

    given = {k: parse_value(SweepSettings, k, v) for k, v in vars(args).items() if k in SweepSettings.settings()}
    index = run_sweep(args.file, runs_dir=args.runs_dir, results_dir=args.results_dir, figures_dir=args.figures_dir,
                      force=args.force, **given)  # fmt: skip
    for job in index.runs:
        said = "unchanged: kept" if job.status == "kept" else job.status
        print(f"{said:15} {job.wall_s:7.1f} s  {job.name}" + (f"  ({job.error[:200]})" if job.error else ""))
    made = sum(j.status != "kept" for j in index.runs)
    print(
        f"sweep {index.run_id}: {plural(len(index.runs), 'notebook')} ({made} made, {len(index.runs) - made} kept) "
        f"in {index.wall_s} s; calls {json.dumps(index.calls)}; index: {args.runs_dir}/{index.run_id}/index.json"
    )
    if index.server and index.server["tokens_generated"]:
        srv = index.server
        print(f"embedded model: {srv['tokens_generated']} tokens generated at {srv['generated_tokens_per_s']} "
              f"tokens/s per slot; {srv['prompt_tokens_evaluated']} prompt tokens evaluated, "
              f"{srv['prompt_tokens_reused']} reused from its prompt cache")  # fmt: skip
    return 1 if any(j.status not in ("ok", "kept") for j in index.runs) else 0


def cmd_data(args) -> int:
    from olakit.data import fetch
    from olakit.data.loaders import FETCHED_DIR, resolve_data_dir

    dest = args.dest or (FETCHED_DIR if args.data_cmd == "fetch" else resolve_data_dir())
    if args.data_cmd == "fetch":
        status = fetch.fetch(dest, base_url=args.base_url)
        n_new = sum(s == "fetched" for s in status.values())
        print(f"{len(status)} files in {dest}: {n_new} fetched, {len(status) - n_new} already present")
        return 0
    bad = fetch.verify(dest)
    if bad:
        print(f"{len(bad)} files missing or corrupt in {dest}: {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"all files in {dest} match the manifest")
    return 0


def cmd_cache(args) -> int:
    from olakit.llm.cache import cache_location, copy_cache

    src, dst = cache_location(args.src), cache_location(args.dst)
    try:
        n = copy_cache(src, dst)
        print(f"copied {n} answers from {src.location} to {dst.location}")
    finally:
        src.close()
        dst.close()
    return 0


def cmd_notes(args) -> int:
    from olakit.analysis.report import report
    from olakit.config import from_arguments
    from olakit.methods import BUILTIN
    from olakit.runlog import RunLog, claim_folder

    method = BUILTIN["notes"]
    cfg = from_arguments(method.config, args)
    params = {"out": args.out}
    claim_folder(_out_dir(args.out), RunLog(door="notes build", config_type=method.config.__name__,
                                            config=cfg.as_dict(), parameters=params))  # fmt: skip
    result = method.run(cfg, parameters=params)
    result.write(args.out, report(result))
    x = result.extras
    where = f"from {x.pool} pool questions ({x.error_book} wrong every time)" if x.pool else "refined from drafts"
    checked = f"; {x.passed} of {x.checked} pass their check" if x.checked else ""
    print(f"{x.notes} notes {where} written to {Path(args.out) / x.library}{checked} (run log "
          f"{Path(args.out) / 'run.json'}); {_calls(result)}")  # fmt: skip
    return 0


def cmd_again(args) -> int:
    from olakit.runlog import command, read_log

    log = read_log(args.folder)
    if log is None:
        raise DataError(f"{args.folder}: no run log there (run.json); give a folder a run wrote")
    print(command(log, args.out or f"{args.folder.rstrip('/')}-again"))
    return 0


def cmd_serve(args) -> int:
    import time

    from olakit.llm.local import LocalServer

    options = dict(port=args.port, n_parallel=args.n_parallel, n_ctx=args.n_ctx, verbosity=args.verbosity,
                   threads=args.threads)  # fmt: skip
    with LocalServer(args.model, **options) as srv:
        print(f"serving {srv.model_path.name} at {srv.base_url}\n  export OLAKIT_BASE_URL={srv.base_url} "
              f"OLAKIT_MODEL={srv.model}", flush=True)  # fmt: skip
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


COMMANDS = {
    "run": cmd_run, "geek": cmd_geek, "review": cmd_review, "import": cmd_import, "compare": cmd_compare,
    "reproduce-olagpt": cmd_reproduce, "plan": cmd_plan, "export": cmd_export, "batch": cmd_batch,
    "notebook": cmd_notebook, "sweep": cmd_sweep, "data": cmd_data, "cache": cmd_cache, "notes": cmd_notes,
    "again": cmd_again, "serve": cmd_serve, "method": cmd_method, "methods": cmd_methods,
}  # fmt: skip


def _shown_path(path: str) -> str:
    """A path as a person typed it: relative to the working directory when it is below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _out_dir(path: str | None) -> str | None:
    """An output directory that can be written: checked before the first call, so a bad one costs nothing."""
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise DataError(f"--out {path}: a file is there; give a directory (it is created when missing)")
    return path


def yaml_mapping(text: str) -> dict:
    """A YAML (or JSON) mapping given on the command line; ConfigError when it is something else."""
    import yaml

    from olakit.config import ConfigError

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"-y {text[:60]!r}: not valid YAML ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"-y {text[:60]!r}: give a mapping of parameter names to values")
    return value


class Terminal(logging.Formatter):
    """Log lines for people: olakit's progress as plain sentences, a warning or error says so, another library's
    line names it; no timestamps, levels or logger names otherwise.

    >>> import logging
    >>> f = Terminal()
    >>> f.format(logging.makeLogRecord({"name": "olakit", "levelno": 20, "levelname": "INFO", "msg": "3 notes"}))
    '3 notes'
    >>> f.format(logging.makeLogRecord({"name": "faiss", "levelno": 30, "levelname": "WARNING", "msg": "slow"}))
    'faiss: warning: slow'
    """

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        if record.name != "olakit" and not record.name.startswith("olakit."):
            text = f"{record.name}: {text}"
        if record.exc_info:
            text = f"{text}\n{self.formatException(record.exc_info)}"
        return text


def _parse(argv: list[str]) -> argparse.Namespace:
    """The command line parsed with the flags of its command's config types."""
    return _parser(_configs(argv)).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    export = None
    if args.cmd == "batch" and args.batch_cmd == "export":  # the run itself, its requests written to a file
        export, inner = args.requests, [a for a in args.command if a != "--"]
        if not inner or inner[0] not in ("run", "geek", "method"):
            print("olakit batch export: give the run after --requests FILE: run ..., geek ... or method NAME ...",
                  file=sys.stderr)  # fmt: skip
            return 2
        args = _parse(inner)
    # olakit's own progress lines; other libraries only when something is wrong (faiss logs its loader at INFO)
    handler = logging.StreamHandler()
    handler.setFormatter(Terminal())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("olakit").setLevel(logging.INFO)
    logging.getLogger("papermill").setLevel(logging.ERROR)  # four lines per notebook, and a warning per setting given
    from olakit.llm.batch import Exported

    try:
        if args.cmd in ("run", "geek", "method"):
            return COMMANDS[args.cmd](args, export)
        return COMMANDS[args.cmd](args)
    except Exported as exc:
        print(f"olakit: {exc}", file=sys.stderr)
        return EXPORTED
    except OlakitError as exc:
        print(f"olakit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
