"""The ``olakit`` command: thin wrappers over the library functions.

olakit data fetch [--dest DIR] [--base-url URL]
olakit data verify [--dest DIR]
olakit reproduce-olagpt [--data-dir DIR] --out DIR [--figures-dir DIR] [--extractor NAME] [--tie-rule RULE]
olakit serve [--model GGUF] [--port N] [--n-parallel N]
olakit run --dataset aqua --n 10 --out DIR [--strategies zero-shot,random,...] [--n-notes 3] [...]
olakit sweep FILE.yaml [--run-id ID] [--parallel N] [--figures-dir figures]
olakit notes build --dataset ekar_zh --split train --pool 40 --out FILE [--r 3] [--explainer dataset]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from olakit.analysis.iterations import flips, iteration_accuracy, stage_cost
from olakit.analysis.reproduce import reproduce_olagpt
from olakit.analysis.runs import run_tables
from olakit.analysis.traces import geek_tables
from olakit.data import fetch
from olakit.data.files import write_atomic, write_tables
from olakit.data.loaders import FETCHED_DIR, load_questions
from olakit.errors import DataError, OlakitError
from olakit.geek.actions import ROWS as GEEK_ROWS
from olakit.geek.run import GeekConfig, run_geek
from olakit.llm import LLM
from olakit.llm.cache import cache_location, copy_cache
from olakit.llm.local import LocalServer
from olakit.names import voting_templates
from olakit.notebook.sweep import EXECUTORS, run_sweep
from olakit.olagpt.active_learning import build_library
from olakit.olagpt.run import BASELINE_NAMES, RunConfig, run
from olakit.olagpt.settings import SettingsError, resolve, vote_order
from olakit.review.loop import LoopConfig
from olakit.review.run import ReviewConfig, run_review


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="olakit", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    data = sub.add_parser("data", help="download or verify the datasets").add_subparsers(dest="data_cmd", required=True)
    f = data.add_parser("fetch", help="download the data files at their pinned commits and check sha256")
    f.add_argument("--dest", default=None, help="target directory (default: data/raw in the repository)")
    f.add_argument(
        "--base-url", default=None, help="mirror to download from (default: $OLAKIT_DATA_BASE_URL or GitHub raw)"
    )
    v = data.add_parser("verify", help="check the data files against the manifest's sha256")
    v.add_argument("--dest", default=None, help="directory to check (default: data/raw)")

    r = sub.add_parser("reproduce-olagpt", help="recompute the OlaGPT AQuA tables and figures from recorded outputs")
    r.add_argument(
        "--data-dir", default=None, help="data directory (default: $OLAKIT_DATA_DIR, data/raw or ../shared/data)"
    )
    r.add_argument("--out", required=True, help="output directory for records.parquet, tables/ and figures/")
    r.add_argument("--figures-dir", default=None, help="where the PNGs go (default: OUT/figures)")
    r.add_argument("--extractor", default="olagpt", help="answer extractor: olagpt (default) or strict")
    r.add_argument("--tie-rule", default="first", help="vote tie rule: first (default), random or none")
    r.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and random tie-breaks")
    r.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples per confidence interval")
    _settings_args(r)
    s = sub.add_parser("serve", help="serve the embedded model (or any GGUF) on 127.0.0.1 until interrupted")
    s.add_argument("--model", default=None, help="path of a GGUF file (default: the embedded Qwen2.5-Coder-0.5B)")
    s.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    s.add_argument("--n-parallel", type=int, default=4, help="concurrent requests (and the most n per request)")
    s.add_argument("--n-ctx", type=int, default=8192, help="context size shared by the parallel slots")
    s.add_argument("--verbosity", type=int, default=3, help="llama.cpp's log verbosity (0: none; 3: its default)")
    s.add_argument("--threads", type=int, default=None, help="CPU threads (default: llama.cpp's choice)")
    lv = sub.add_parser("run", help="run the OlaGPT grid live (templates x note strategies, baselines, votes)")
    lv.add_argument("--dataset", default="aqua", help="aqua, ekar_zh or strategyqa")
    lv.add_argument("--split", default=None, help="default: test (AQuA), validation (E-KAR), dev (StrategyQA)")
    lv.add_argument("--n", type=int, default=10, help="questions in the slice (default 10)")
    lv.add_argument("--offset", type=int, default=0, help="first question of the slice")
    lv.add_argument("--templates", default=None, help="comma-separated template names (default: all that suit)")
    lv.add_argument("--strategies", default="zero-shot,random,retrieval,combine", help="note strategies")
    lv.add_argument("--n-notes", default="3", help="comma-separated note counts (default 3)")
    lv.add_argument("--library", default="olagpt", help="notes library file, or olagpt (the authors' AQuA notes)")
    lv.add_argument(
        "--baselines",
        default=",".join(BASELINE_NAMES),
        help="baselines besides the templates ('' for none; the turbo baseline is the turbo template)",
    )
    lv.add_argument("--votes", default="regex_vote,llm_vote", help="votes to compute ('regex_vote' makes no calls)")
    lv.add_argument("--sc-k", type=int, default=5, help="self-consistency samples (default 5)")
    lv.add_argument("--sc-template", default="turbo", help="the template SC samples (default turbo, the plain prompt)")
    lv.add_argument("--autocot-demos", default="generated", help="generated or published")
    lv.add_argument("--max-tokens", type=int, default=256, help="answer length limit")
    lv.add_argument("--verify", action="store_true", help="verification thinking: review and revise every answer")
    lv.add_argument("--diy", action="store_true", help="integrative thinking: a template composed per question")
    lv.add_argument("--choose-k", type=int, default=None, help="the controller picks this many templates a question")
    lv.add_argument(
        "--answer-stages",
        type=int,
        default=1,
        help="1 (the paper) or 2: a cut-off or answerless output gets a second call with the answer trigger",
    )
    lv.add_argument("--vote-max-tokens", type=int, default=192, help="LLM-vote answer length limit")
    lv.add_argument("--seed", type=int, default=0)
    lv.add_argument("--concurrency", type=int, default=4, help="calls in flight at once")
    lv.add_argument("--data-dir", default=None)
    lv.add_argument("--out", required=True, help="output directory (records.parquet, tables/)")
    _settings_args(lv)

    gk = sub.add_parser("geek", help="GEEK on StrategyQA: the Table-2 rows with their traces")
    gk.add_argument("--split", default="dev", help="train or dev (default dev)")
    gk.add_argument("--n", type=int, default=10, help="questions in the slice (default 10)")
    gk.add_argument("--offset", type=int, default=0)
    gk.add_argument("--rows", default=",".join(GEEK_ROWS), help="comma-separated rows: " + ", ".join(GEEK_ROWS))
    gk.add_argument(
        "--corpus",
        default="strategyqa-facts:open",
        help="strategyqa-facts:open, strategyqa-facts:oracle (an upper bound) or a JSON Lines path",
    )
    gk.add_argument("--retriever", default="bm25", help="bm25, dense or hybrid")
    gk.add_argument("--k", type=int, default=3, help="paragraphs per Retrieve & Extract")
    gk.add_argument("--max-steps", type=int, default=8)
    gk.add_argument("--max-sub-questions", type=int, default=4)
    gk.add_argument("--branches", type=int, default=3, help="candidate sub-questions per explored Add Decomp (Full)")
    gk.add_argument("--depth", type=int, default=1, help="Add Decomps that branch (Full)")
    gk.add_argument(
        "--pre-answer",
        action="store_true",
        help="Add Decomp writes every remaining sub-question with a "
        "guessed answer; the guess goes to the extractor as a hint",
    )
    gk.add_argument("--answer-stages", type=int, default=1, help="1 or 2 (two-stage yes/no extraction)")
    gk.add_argument("--seed", type=int, default=0)
    gk.add_argument("--concurrency", type=int, default=4)
    gk.add_argument("--data-dir", default=None)
    gk.add_argument("--out", required=True, help="output directory (records.parquet with traces, tables/, run.json)")

    rv = sub.add_parser("review", help="the CoT + self-review loop (seeds/003) on a dataset slice or one question")
    rv.add_argument("--ask", default=None, help="one open question: print the final answer and the history")
    rv.add_argument("--dataset", default="aqua", help="aqua, ekar_zh, strategyqa, or open (the shipped questions)")
    rv.add_argument("--split", default=None)
    rv.add_argument("--n", type=int, default=5)
    rv.add_argument("--offset", type=int, default=0)
    rv.add_argument("--mode", default="lite", help="lite or standard")
    rv.add_argument("--behaviour", default="intended", help="intended or literal (the blog's code)")
    rv.add_argument("--iterations", type=int, default=3)
    rv.add_argument("--threshold", type=int, default=4)
    rv.add_argument("--answer-stages", type=int, default=1)
    rv.add_argument("--seed", type=int, default=0)
    rv.add_argument("--data-dir", default=None)
    rv.add_argument("--out", default=None, help="output directory (records.parquet with histories, tables/)")

    sw = sub.add_parser("sweep", help="run notebooks over parameter grids through papermill, in parallel")
    sw.add_argument("file", help="sweep file (YAML)")
    sw.add_argument("--run-id", default=None, help="default: the file's run_id, or its name and a timestamp")
    sw.add_argument("--parallel", type=int, default=None, help="notebooks at once (default: the file's, or 2)")
    sw.add_argument("--runs-dir", default="runs", help="where executed notebooks go (runs/<run_id>/)")
    sw.add_argument("--results-dir", default="results", help="where outputs go (results/<run_id>/<name>/)")
    sw.add_argument("--figures-dir", default=None, help="also copy every run's figures here (<name>__<figure>)")
    sw.add_argument("--executor", choices=EXECUTORS, default=None, help="local processes (default) or dask tasks")
    sw.add_argument("--scheduler", default=None, help="with dask: tcp://HOST:8786 (default: a LocalCluster here)")

    ca = sub.add_parser("cache", help="the answer cache").add_subparsers(dest="cache_cmd", required=True)
    cp = ca.add_parser("copy", help="copy every answer from one cache to another (a directory or redis://HOST/DB)")
    cp.add_argument("src", help="a diskcache directory or a Redis URL")
    cp.add_argument("dst", help="a diskcache directory or a Redis URL")

    nb = sub.add_parser("notes", help="notes libraries").add_subparsers(dest="notes_cmd", required=True)
    b = nb.add_parser("build", help="build a notes library by active learning (error book of a pool)")
    b.add_argument("--dataset", default="ekar_zh")
    b.add_argument("--split", default="train")
    b.add_argument(
        "--pool", type=int, default=40, help="pool questions (the first N, or a KMeans sample with --sample)"
    )
    b.add_argument(
        "--sample", type=int, default=None, help="draw this many from the whole split by KMeans (20 clusters)"
    )
    b.add_argument("--r", type=int, default=3, help="answers per question (paper: 3-5)")
    b.add_argument("--explainer", default="dataset", help="llm, dataset or person")
    b.add_argument("--max-tokens", type=int, default=256)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--data-dir", default=None)
    b.add_argument("--out", required=True, help="library file (JSON Lines)")
    return p


def _settings_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default=None, help="settings preset: paper (default: the authors' behaviour) or olakit")
    p.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one setting (repeatable): vote_order, unparsed, notes_layout, template_position, fill_up, "
        "llm_vote_prompt; see olakit.olagpt.settings",
    )


def _settings(args) -> dict:
    """--setting NAME=VALUE pairs as a dict (true/false for fill_up)."""
    out = {}
    for item in args.setting:
        name, sep, value = item.partition("=")
        if not sep:
            raise SettingsError(f"--setting {item!r}: write NAME=VALUE, e.g. unparsed=abstain")
        out[name.strip()] = {"true": True, "false": False}.get(value.strip().lower(), value.strip())
    return out


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per HTTP request otherwise
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("papermill").setLevel(logging.WARNING)  # four lines per notebook otherwise
    try:
        if args.cmd == "data":
            dest = args.dest or FETCHED_DIR
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
            rep = reproduce_olagpt(
                args.data_dir,
                args.out,
                figures_dir=args.figures_dir,
                extractor=args.extractor,
                tie=args.tie_rule,
                seed=args.seed,
                n_boot=args.n_boot,
                preset=args.preset,
                **_settings(args),
            )
            print(rep.tables["accuracy"].round(4).to_string())
            print(f"wrote {rep.out_dir}/records.parquet, {len(rep.tables)} tables and {len(rep.figures)} figures")
        elif args.cmd == "run":
            cfg = RunConfig(
                dataset=args.dataset,
                split=args.split,
                n_questions=args.n,
                offset=args.offset,
                templates=_names(args.templates),
                strategies=_names(args.strategies),
                n_notes=[int(x) for x in _names(args.n_notes)],
                library=args.library,
                baselines=_names(args.baselines),
                votes=_names(args.votes),
                sc_k=args.sc_k,
                sc_template=args.sc_template,
                autocot_demos=args.autocot_demos,
                max_tokens=args.max_tokens,
                answer_stages=args.answer_stages,
                verify=args.verify,
                diy=args.diy,
                choose_k=args.choose_k,
                vote_max_tokens=args.vote_max_tokens,
                seed=args.seed,
                data_dir=args.data_dir,
                settings=resolve(args.preset, **_settings(args)),
            ).check()  # before the LLM: bad settings are refused before any model starts
            with LLM(concurrency=args.concurrency) as llm:
                res = run(cfg, llm=llm, out_dir=args.out)
            names = voting_templates(res.records["template"])
            templates = vote_order(names, cfg.settings.vote_order)
            tables = run_tables(res.records, templates, tie=cfg.tie, seed=cfg.seed, unparsed=cfg.settings.unparsed)
            write_tables(tables, args.out)
            print(tables["methods_wide"].round(4).to_string())
            print(json.dumps(res.calls))
        elif args.cmd == "geek":
            cfg = GeekConfig(
                split=args.split,
                n_questions=args.n,
                offset=args.offset,
                rows=_names(args.rows),
                corpus=args.corpus,
                retriever=args.retriever,
                k=args.k,
                max_steps=args.max_steps,
                max_sub_questions=args.max_sub_questions,
                branches=args.branches,
                depth=args.depth,
                pre_answer=args.pre_answer,
                answer_stages=args.answer_stages,
                seed=args.seed,
                data_dir=args.data_dir,
            ).check()  # before the LLM: a bad row is refused before any model starts
            with LLM(concurrency=args.concurrency) as llm:
                res = run_geek(cfg, llm=llm, out_dir=args.out)
            tables = geek_tables(res.records)
            write_tables(tables, args.out)
            doc = {"config": res.config, "calls": res.calls, "recall": res.recall, "corpus": res.corpus}
            write_atomic(Path(args.out) / "run.json", lambda p: p.write_text(json.dumps(doc, indent=1, default=str)))
            print(f"GEEK on {res.corpus}, {len(res.records) // len(cfg.rows)} questions")
            print(tables["table2"][["method", "n", "correct", "accuracy", "ci_low", "ci_high"]].round(4).to_string())
            print(f"calls {json.dumps(res.calls)}; retrieval {json.dumps(res.recall)}")
        elif args.cmd == "review":
            loop = LoopConfig(
                mode=args.mode,
                behaviour=args.behaviour,
                max_iterations=args.iterations,
                threshold=args.threshold,
                seed=args.seed,
            ).check()
            cfg = ReviewConfig(
                dataset=args.dataset,
                split=args.split,
                n_questions=args.n,
                offset=args.offset,
                loop=loop,
                answer_stages=args.answer_stages,
                data_dir=args.data_dir,
            ).check()
            if args.ask is None and args.out is None:
                raise DataError('give --out DIR for a dataset slice, or --ask "question" for one question')
            res = run_review(cfg, out_dir=args.out, ask=args.ask)
            if args.ask is not None:
                h = res.histories[0]
                print(f"outline ({h.steps} steps):\n{h.outline}\n")
                for i, r in enumerate(h.reviews, 1):
                    print(f"review {i}: overall {r['scores']['overall']} -> {r['decision']}")
                print(f"\nfinal answer:\n{h.final}")
            else:
                tables = {
                    "iteration_accuracy": iteration_accuracy(res.records),
                    "flips": flips(res.records),
                    "stage_cost": stage_cost(res.records),
                }
                write_tables(tables, args.out)
                print(tables["iteration_accuracy"][["method", "n", "correct", "accuracy", "unparsed"]].to_string())
                print(tables["flips"].to_string())
            print(f"calls {json.dumps(res.calls)}")
        elif args.cmd == "sweep":
            index = run_sweep(
                args.file,
                run_id=args.run_id,
                parallel=args.parallel,
                runs_dir=args.runs_dir,
                results_dir=args.results_dir,
                figures_dir=args.figures_dir,
                executor=args.executor,
                scheduler=args.scheduler,
            )
            for job in index["runs"]:
                print(
                    f"{job['status']:6} {job['wall_s']:7.1f} s  {job['name']}"
                    + (f"  ({job['error'][:200]})" if job["error"] else "")
                )
            print(
                f"sweep {index['run_id']}: {len(index['runs'])} notebooks in {index['wall_s']} s; calls "
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
            pool = load_questions(args.dataset, args.split, data_dir=args.data_dir)
            if not args.sample:
                pool = pool[: args.pool]
            with LLM() as llm:
                lib = build_library(
                    llm,
                    pool,
                    r=args.r,
                    size=args.sample,
                    explainer=args.explainer,
                    seed=args.seed,
                    max_tokens=args.max_tokens,
                    path=args.out,
                )
            print(
                f"{len(lib)} notes from {len(pool) if not args.sample else args.sample} pool questions "
                f"written to {args.out}"
            )
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
    except OlakitError as exc:
        print(f"olakit: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
