"""A ledger of the OlaGPT paper's claims (seeds/000): each number or finding the paper states, worked out from its own
printed cells (Table 3 and Table 8, olakit/resources/paper_tables.json) and, where the authors' records exist (AQuA),
from the reproduction's tables, each with a status: ``reproduced``, ``differs by x`` (or, for a finding, in how
many columns it holds) or ``not reproducible here`` with the reason.

- Table 3's %Improv row: the best OlaGPT vote over the best baseline, (ours - base) / base, per column.
- Table 7 (the templates' range and mean per column, turbo left out) and A.4's best templates by mean accuracy.
- A.5: the LLM vote's mean gap to the regex vote's lower and upper bounds (Table 8).
- Table 2: the datasets' sizes, counted in the data files, and the notes libraries.
- Table 4: each column's counts against the number of questions.
- The findings of 4.2 and 4.3, each as a check over the columns of Table 3 (and of the records for AQuA).

Pure: no LLM calls; the records' tables come from olakit.analysis.reproduce.reproduction_tables.
"""

from __future__ import annotations

import pandas as pd

from olakit.analysis.reproduce import load_paper_tables
from olakit.data.files import read_jsonl
from olakit.data.loaders import data_file, load_builtin, load_olagpt_notes
from olakit.errors import DataError

DATASETS = {"aqua": "AQuA", "ekar_zh": "E-KAR"}
STRATEGIES = ("zero-shot", "random", "retrieval", "combine")
BASELINES = ("turbo", "auto_cot", "SC")
VOTES = ("regex_vote", "llm_vote")
NO_EKAR = "no recorded E-KAR outputs (the authors published AQuA's only)"
NO_BASELINES = "SC's and Auto-CoT's outputs are not among the recorded files"
COLUMNS = ["claim", "section", "statement", "printed", "from_printed", "status_printed", "from_records",
           "status_records"]  # fmt: skip


def _status(printed: float | None, computed: float | None, places: int, why: str = "") -> str:
    """reproduced when ``computed`` rounds to ``printed`` at the printed places, else the difference."""
    if computed is None or printed is None:
        return f"not reproducible here: {why}" if why else "not reproducible here"
    diff = computed - printed
    return "reproduced" if abs(diff) < 0.5 * 10**-places + 1e-9 else f"differs by {diff:+.{places}f}"


def _holds(checks: dict[str, bool]) -> tuple[str, str]:
    """(how many of the checks hold, the status): reproduced when all do, else which fail."""
    good = sum(checks.values())
    failed = [name for name, ok in checks.items() if not ok]
    status = "reproduced" if not failed else f"differs: fails in {', '.join(failed)}"
    return f"{good} of {len(checks)}", status


def _templates(t3: dict) -> list[str]:
    return [m for m in t3 if m not in (*BASELINES, *VOTES)]


def _improv(paper: dict) -> list[dict]:
    rows = []
    printed = {(ds, st): v for ds in DATASETS for st, v in paper[ds]["text"]["improv"].items()}
    for (ds, st), value in printed.items():
        t3 = paper[ds]["table3"]
        ours = max(t3[v][st] for v in VOTES)
        base = max(t3[b][st] for b in BASELINES if t3[b][st] is not None)
        got = ours / base - 1
        rows.append({"claim": f"improv_{ds}_{st}", "section": "Table 3, %Improv",
                     "statement": f"{DATASETS[ds]} {st}: the best OlaGPT vote improves on the best baseline by "
                                  f"{value:.2%}", "printed": value, "from_printed": round(got, 6),
                     "status_printed": _status(value, got, 4), "from_records": None,
                     "status_records": _status(None, None, 4, NO_BASELINES if ds == "aqua" else NO_EKAR)})  # fmt: skip
    return rows


def _means(paper: dict, records: dict | None) -> list[dict]:
    rows = []
    for ds in DATASETS:
        t3, t7 = paper[ds]["table3"], paper[ds]["table7"]
        names = _templates(t3)
        rec = records.get(ds) if records else None
        for st in STRATEGIES:
            cells = [t3[m][st] for m in names]
            mine = [float(rec.loc[m, st]) for m in names] if rec is not None else None
            for stat, fn in (("Mean", lambda v: sum(v) / len(v)), ("Range", lambda v: max(v) - min(v))):
                got = fn(cells)
                from_rec = fn(mine) if mine is not None else None
                rows.append({"claim": f"table7_{ds}_{stat.lower()}_{st}", "section": "Table 7",
                             "statement": f"{DATASETS[ds]} {st}: the templates' {stat.lower()} accuracy "
                                          f"({', '.join(names)}; turbo left out)", "printed": t7[stat][st],
                             "from_printed": round(got, 6), "status_printed": _status(t7[stat][st], got, 4),
                             "from_records": None if from_rec is None else round(from_rec, 6),
                             "status_records": _status(t7[stat][st], from_rec, 4, NO_EKAR)})  # fmt: skip
        best, value = paper[ds]["text"]["best_template"]["template"], paper[ds]["text"]["best_template"]["mean"]
        means = {m: sum(t3[m][st] for st in STRATEGIES) / 4 for m in names}
        top = max(means, key=means.get)
        rec_means = {m: float(rec.loc[m, list(STRATEGIES)].mean()) for m in names} if rec is not None else None
        rows.append({"claim": f"a4_best_template_{ds}", "section": "A.4",
                     "statement": f"{DATASETS[ds]}: the best template by mean accuracy is {best}, {value}",
                     "printed": value, "from_printed": round(means[best], 6),
                     "status_printed": _status(value, means[best], 4) + ("" if top == best else f"; best is {top}"),
                     "from_records": None if rec_means is None else round(rec_means[best], 6),
                     "status_records": _status(value, rec_means[best] if rec_means else None, 4, NO_EKAR) + (
                         "" if rec_means is None or max(rec_means, key=rec_means.get) == best
                         else f"; best is {max(rec_means, key=rec_means.get)}")})  # fmt: skip
    return rows


def _gaps(paper: dict, bounds: pd.DataFrame | None, records: dict | None) -> list[dict]:
    rows = []
    printed = {(ds, bound): v for ds in DATASETS for bound, v in paper[ds]["text"]["llm_vote_gap"].items()}
    for (ds, bound), value in printed.items():
        t8 = paper[ds]["table8"]
        sign = 1 if bound == "regex_lower" else -1  # above the lower bound, below the upper one
        got = sum(sign * (t8["llm_vote"][st] - t8[bound][st]) for st in STRATEGIES) / 4
        from_rec = None
        if ds == "aqua" and bounds is not None and records:
            b = bounds.set_index(["method", "notes_strategy"])["accuracy"]
            llm = records["aqua"].loc["llm_vote"]
            from_rec = sum(sign * (float(llm[st]) - float(b[bound, st])) for st in STRATEGIES) / 4
        word = "above the regex vote's lower bound" if sign > 0 else "below its upper bound"
        rows.append({"claim": f"a5_{bound}_{ds}", "section": "A.5",
                     "statement": f"{DATASETS[ds]}: the LLM vote is on average {value} {word} (Table 8)",
                     "printed": value, "from_printed": round(got, 6), "status_printed": _status(value, got, 4),
                     "from_records": None if from_rec is None else round(from_rec, 6),
                     "status_records": _status(value, from_rec, 4, NO_EKAR)})  # fmt: skip
    return rows


def _sizes(paper: dict, data_dir) -> list[dict]:
    """Table 2 against the data files (and the E-KAR total in the text: 1,655 Chinese questions)."""
    missing: list[str] = []

    def count(fn, *args) -> int | None:
        """How many rows the data file has; None (its name kept) where the data directory lacks it."""
        try:
            return len(fn(*args))
        except DataError as exc:
            missing.append(str(exc).split(":", 1)[0])
            return None

    aqua_test = count(load_builtin, "aqua", "test", data_dir)
    ekar_train = count(load_builtin, "ekar_zh", "train", data_dir)
    ekar_val = count(load_builtin, "ekar_zh", "validation", data_dir)
    ekar_test = count(lambda: list(read_jsonl(data_file(data_dir, "ekar_chinese/test_blind.json"))))
    aqua_notes = count(load_olagpt_notes, data_dir, "aqua")
    ekar_notes = count(load_olagpt_notes, data_dir, "ekar_zh")
    absent = f"not in the data directory ({', '.join(missing)})" if missing else ""
    a, e = paper["aqua"]["text"]["table2"], paper["ekar_zh"]["text"]["table2"]
    total = None if None in (ekar_train, ekar_val, ekar_test) else ekar_train + ekar_val + ekar_test
    cases = [
        ("aqua_testing", "AQuA #testing", a["testing"], aqua_test, absent),
        ("aqua_training", "AQuA #training", a["training"], None, "AQuA's train.json is not in the data"),
        ("aqua_error_books", "AQuA #error books (the notes library)", a["error_books"], aqua_notes, absent),
        ("ekar_testing", "E-KAR #testing (the blind test: no labels)", e["testing"], ekar_test, absent),
        ("ekar_training", "E-KAR #training", e["training"], ekar_train, absent),
        ("ekar_error_books", "E-KAR #error books", e["error_books"], None,
         f"the authors' repository holds {ekar_notes} E-KAR notes, not their {e['error_books']}"),
        ("ekar_total", "E-KAR Chinese questions (train, validation, test)", paper["ekar_zh"]["text"]["questions"],
         total, absent),
    ]  # fmt: skip
    return [{"claim": f"table2_{name}", "section": "Table 2" if name != "ekar_total" else "4 (Datasets)",
             "statement": text, "printed": printed, "from_printed": None, "status_printed": "",
             "from_records": got, "status_records": _status(printed, got, 0, why)}
            for name, text, printed, got, why in cases]  # fmt: skip


def _consistency(paper: dict) -> list[dict]:
    rows = []
    n = {"aqua": 254, "ekar_zh": 335}
    for ds in DATASETS:
        t4 = paper[ds]["table4"]
        for st in STRATEGIES:
            total = sum(row[st] for row in t4.values() if row.get(st) is not None)
            rows.append({"claim": f"table4_{ds}_{st}_total", "section": "Table 4",
                         "statement": f"{DATASETS[ds]} {st}: the consistency counts (c = 2..) cover the {n[ds]} "
                                      "questions", "printed": n[ds], "from_printed": total,
                         "status_printed": _status(n[ds], total, 0) + (
                             "" if total == n[ds] else " (c = 0 and 1 are not printed)"),
                         "from_records": None, "status_records": ""})  # fmt: skip
    return rows


def _findings(paper: dict, records: dict | None, template_count: pd.DataFrame | None) -> list[dict]:
    """4.2 and 4.3 in words, each checked column by column over printed Table 3 (and the records for AQuA)."""
    rows = []

    def add(claim, section, statement, over_printed, over_records=None, why=NO_BASELINES):
        printed, status = _holds(over_printed)
        if over_records is None:
            rec, rec_status = None, f"not reproducible here: {why}"
        else:
            rec, rec_status = _holds(over_records)
        rows.append({"claim": claim, "section": section, "statement": statement, "printed": "holds",
                     "from_printed": printed, "status_printed": status, "from_records": rec,
                     "status_records": rec_status})  # fmt: skip

    def cols(fn, ds_list=DATASETS):
        return {f"{DATASETS[ds]} {st}": fn(paper[ds]["table3"], st) for ds in ds_list for st in STRATEGIES}

    rec = records.get("aqua") if records else None

    def rec_cols(fn):
        return {f"AQuA {st}": fn(rec, st) for st in STRATEGIES} if rec is not None else None

    at = lambda t, m, st: t[m][st] if isinstance(t, dict) else float(t.loc[m, st])  # noqa: E731
    add("sc_beats_turbo", "4.2", "SC is better than GPT-3.5-turbo", cols(lambda t, st: t["SC"][st] > t["turbo"][st]))
    add(
        "vote_beats_sc",
        "4.2",
        "OlaGPT (the regex vote) surpasses SC",
        cols(lambda t, st: t["regex_vote"][st] > t["SC"][st]),
    )
    best_two = {}
    for ds in DATASETS:
        t3 = paper[ds]["table3"]
        means = {m: sum(t3[m][st] for st in STRATEGIES) for m in _templates(t3)}
        best_two[DATASETS[ds]] = set(sorted(means, key=means.get)[-2:]) == {"ST", "DT"}
    rec_two = None
    if rec is not None:
        means = {m: float(rec.loc[m, list(STRATEGIES)].sum()) for m in _templates(paper["aqua"]["table3"])}
        rec_two = {"AQuA": set(sorted(means, key=means.get)[-2:]) == {"ST", "DT"}}
    add("st_dt_best", "4.2", "ST and DT are the better templates (the top two by mean accuracy)", best_two, rec_two)
    notes_rows = lambda t: [m for m in t if m not in ("auto_cot",)]  # noqa: E731
    checks = {f"{DATASETS[ds]} {m} {st}": paper[ds]["table3"][m][st] > paper[ds]["table3"][m]["zero-shot"]
              for ds in DATASETS for m in notes_rows(paper[ds]["table3"]) for st in STRATEGIES[1:]}  # fmt: skip
    rec_checks = None
    if rec is not None:
        rec_checks = {f"AQuA {m} {st}": at(rec, m, st) > at(rec, m, "zero-shot") for m in rec.index
                      for st in STRATEGIES[1:]}  # fmt: skip
    add(
        "notes_beat_zero_shot",
        "4.2",
        "every note strategy (random, retrieval, combine) beats zero-shot",
        checks,
        rec_checks,
    )
    for ds in DATASETS:
        t3 = paper[ds]["table3"]
        mean = {st: sum(t3[m][st] for m in (*_templates(t3), *VOTES)) for st in STRATEGIES}
        rows_ds = {f"{DATASETS[ds]} regex vote": max(STRATEGIES, key=lambda s: t3["regex_vote"][s]) == "combine",
                   f"{DATASETS[ds]} templates and votes on average": max(mean, key=mean.get) == "combine"}  # fmt: skip
        rec_ds = None
        if ds == "aqua" and rec is not None:
            m_rec = {st: float(rec.loc[[*_templates(t3), *VOTES], st].sum()) for st in STRATEGIES}
            rec_ds = {"AQuA regex vote": max(STRATEGIES, key=lambda s: at(rec, "regex_vote", s)) == "combine",
                      "AQuA templates and votes on average": max(m_rec, key=m_rec.get) == "combine"}  # fmt: skip
        add(
            f"combine_best_{ds}",
            "4.2, 4.3",
            f"{DATASETS[ds]}: the combine strategy works best",
            rows_ds,
            rec_ds,
            NO_EKAR,
        )
    t3 = paper["ekar_zh"]["table3"]
    best_cell = max(((m, st) for m in t3 for st in STRATEGIES if t3[m][st] is not None), key=lambda c: t3[c[0]][c[1]])
    add(
        "ekar_random_best",
        "4.3",
        f"E-KAR's best result is the random strategy (printed best: {best_cell[0]} "
        f"{best_cell[1]}, {t3[best_cell[0]][best_cell[1]]})",
        {"E-KAR best cell": best_cell[1] == "random"},
        None,
        NO_EKAR,
    )
    add("templates_beat_turbo", "4.3", "every template surpasses turbo",
        {f"{DATASETS[ds]} {m} {st}": paper[ds]["table3"][m][st] > paper[ds]["table3"]["turbo"][st]
         for ds in DATASETS for m in _templates(paper[ds]["table3"]) for st in STRATEGIES},
        {f"AQuA {m} {st}": at(rec, m, st) > at(rec, "turbo", st) for m in _templates(paper["aqua"]["table3"])
         for st in STRATEGIES} if rec is not None else None)  # fmt: skip
    for ds in DATASETS:
        named = [tuple(cell) for cell in paper[ds]["text"]["top_three"]]
        t3 = paper[ds]["table3"]
        cells = sorted(((t3[m][st], m, st) for m in _templates(t3) for st in STRATEGIES), reverse=True)
        third = cells[2][0]
        top = {(m, st) for v, m, st in cells if v >= third}  # the top three, ties at the third included
        over_rec = None
        if ds == "aqua" and rec is not None:
            rc = sorted(((at(rec, m, st), m, st) for m in _templates(t3) for st in STRATEGIES), reverse=True)
            rtop = {(m, st) for v, m, st in rc if v >= rc[2][0]}
            over_rec = {f"{m}-{st}": (m, st) in rtop for m, st in named}
        add(
            f"top_three_{ds}",
            "4.3",
            f"{DATASETS[ds]}'s top three template cells: " + ", ".join(f"{m}-{st}" for m, st in named),
            {f"{m}-{st}": (m, st) in top for m, st in named},
            over_rec,
            NO_EKAR,
        )
    add("vote_beats_templates", "4.3", "voting improves on every single template",
        cols(lambda t, st: t["regex_vote"][st] > max(t[m][st] for m in _templates(t))),
        rec_cols(lambda r, st: at(r, "regex_vote", st) > max(at(r, m, st) for m in _templates(paper["aqua"]["table3"])))
        if rec is not None else None)  # fmt: skip
    if template_count is not None and len(template_count):
        grows = {f"AQuA {st}": bool(g.sort_values("k")["mean"].is_monotonic_increasing)
                 for st, g in template_count.groupby("notes_strategy", sort=False)}  # fmt: skip
        printed, status = _holds(grows)
        rows.append({"claim": "accuracy_grows_with_templates", "section": "4.3 (Fig 6)",
                     "statement": "the vote's accuracy increases with the number of templates (mean over subsets)",
                     "printed": "holds", "from_printed": None, "status_printed": "not printed as numbers (a figure)",
                     "from_records": printed, "status_records": status})  # fmt: skip
    rows.append({"claim": "templates_cluster", "section": "A.5 (Fig 12)",
                 "statement": "answers of different templates tend to cluster", "printed": "holds",
                 "from_printed": None, "status_printed": "not reproducible here: a qualitative reading of a heatmap",
                 "from_records": None,
                 "status_records": "not a number: Fig 12 is redrawn from the records"})  # fmt: skip
    return rows


def claims_ledger(tables: dict[str, pd.DataFrame] | None = None, data_dir=None) -> pd.DataFrame:
    """The ledger: one row per claim (columns COLUMNS). ``tables``: the reproduction's tables on the authors' AQuA
    records (olakit.analysis.reproduce.reproduction_tables), for the ``from_records`` column; without them only the
    printed cells and the data files are used."""
    paper = {ds: load_paper_tables(ds) for ds in DATASETS}
    records = {"aqua": tables["accuracy"]} if tables is not None else None
    bounds = tables["bounds"] if tables is not None else None
    counts = tables["template_count"] if tables is not None else None
    rows = [*_improv(paper), *_means(paper, records), *_gaps(paper, bounds, records), *_sizes(paper, data_dir),
            *_consistency(paper), *_findings(paper, records, counts)]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
