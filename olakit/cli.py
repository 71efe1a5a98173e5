"""The ``olakit`` command: thin wrappers over the library functions.

    olakit data fetch [--dest DIR] [--base-url URL]
    olakit data verify [--dest DIR]
    olakit reproduce-olagpt [--data-dir DIR] --out DIR [--figures-dir DIR] [--extractor NAME] [--tie-rule RULE]
    olakit serve [--model GGUF] [--port N] [--n-parallel N]
"""
from __future__ import annotations

import argparse
import logging
import sys

from olakit.errors import OlakitError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="olakit", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    data = sub.add_parser("data", help="download or verify the datasets").add_subparsers(dest="data_cmd", required=True)
    f = data.add_parser("fetch", help="download the data files at their pinned commits and check sha256")
    f.add_argument("--dest", default=None, help="target directory (default: data/raw in the repository)")
    f.add_argument("--base-url", default=None, help="mirror to download from (default: $OLAKIT_DATA_BASE_URL "
                                                     "or GitHub raw)")
    v = data.add_parser("verify", help="check the data files against the manifest's sha256")
    v.add_argument("--dest", default=None, help="directory to check (default: data/raw)")

    r = sub.add_parser("reproduce-olagpt", help="recompute the OlaGPT AQuA tables and figures from recorded outputs")
    r.add_argument("--data-dir", default=None, help="data directory (default: $OLAKIT_DATA_DIR, data/raw or ../shared/data)")
    r.add_argument("--out", required=True, help="output directory for records.parquet, tables/ and figures/")
    r.add_argument("--figures-dir", default=None, help="where the PNGs go (default: OUT/figures)")
    r.add_argument("--extractor", default="olagpt", help="answer extractor: olagpt (default) or strict")
    r.add_argument("--tie-rule", default="first", help="vote tie rule: first (default), random or none")
    r.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and random tie-breaks")
    r.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples per confidence interval")
    s = sub.add_parser("serve", help="serve the embedded model (or any GGUF) on 127.0.0.1 until interrupted")
    s.add_argument("--model", default=None, help="path of a GGUF file (default: the embedded Qwen2.5-Coder-0.5B)")
    s.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    s.add_argument("--n-parallel", type=int, default=4, help="concurrent requests (and the most n per request)")
    s.add_argument("--n-ctx", type=int, default=8192, help="context size shared by the parallel slots")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.cmd == "data":
            from olakit import fetch
            from olakit.data import FETCHED_DIR

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
            from olakit.reproduce import reproduce_olagpt

            rep = reproduce_olagpt(args.data_dir, args.out, figures_dir=args.figures_dir, extractor=args.extractor,
                                   tie=args.tie_rule, seed=args.seed, n_boot=args.n_boot)
            print(rep.tables["accuracy"].round(4).to_string())
            print(f"wrote {rep.out_dir}/records.parquet, {len(rep.tables)} tables and {len(rep.figures)} figures")
        elif args.cmd == "serve":
            import time

            from olakit.local import LocalServer

            with LocalServer(args.model, port=args.port, n_parallel=args.n_parallel, n_ctx=args.n_ctx) as srv:
                print(f"serving {srv.model_path.name} at {srv.base_url}\n"
                      f"  export OLAKIT_BASE_URL={srv.base_url} OLAKIT_MODEL={srv.model}", flush=True)
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
