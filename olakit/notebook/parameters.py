"""A notebook's parameters and config: what it takes (its parameters cell's names and the settings of the config type
its metadata names, ``"olakit": {"config": "olagpt"}``), the check that refuses any other name (a misspelled
parameter must not pass silently, neither in a sweep file nor in papermill's injected cell), and ``configure``, which
a running notebook calls to get its config and the parameters its manifest records.

``configure("template_count", globals())`` -> ``(OlaGPTConfig(...), {"source": "recorded", ..., "n_questions": None,
...})``.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
from pathlib import Path

from olakit.analysis.compare import CompareConfig
from olakit.config import Config, ConfigError, parse_value
from olakit.data.files import SHIPPED
from olakit.env import environment
from olakit.errors import DataError
from olakit.methods import BUILTIN, method_of
from olakit.runlog import RunLog, claim_folder
from olakit.settings import Analysis

NOTEBOOKS = SHIPPED / "notebooks"


CONFIGS = {
    **{name: BUILTIN[name].config for name in ("olagpt", "geek", "review")}, "analysis": Analysis,
    "compare": CompareConfig,
}  # fmt: skip
"""The config types a notebook can name in its metadata (``"olakit": {"config": NAME}``): the built-in methods'
(olakit.methods.BUILTIN), the analysis settings and a comparison's."""
_PLAIN = (str, int, float, bool, list, dict, tuple, type(None))
_IPYTHON = {"In", "Out", "exit", "quit", "get_ipython", "open"}


METHOD = "method"
"""The metadata config of a notebook that runs any method (method.ipynb): its config type is that of the method its
``method`` parameter names (olakit.methods.method_of)."""


def config_type(path: str | os.PathLike, values: dict | None = None) -> type[Config] | None:
    """The config type a notebook names in its metadata, or None; a method notebook's: the config type of the method
    ``values`` (the parameters given) or its parameters cell name."""
    meta = json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {}).get("olakit", {})
    name = meta.get("config")
    if name == METHOD:
        spec = (values or {}).get(METHOD, parameter_defaults(path).get(METHOD))
        return method_of(spec).config
    if name is not None and name not in CONFIGS:
        raise DataError(f"{path}: metadata olakit.config {name!r}; known: {', '.join(CONFIGS)}, {METHOD}")
    return CONFIGS.get(name)


def accepted_names(path: str | os.PathLike, values: dict | None = None) -> list[str]:
    """What a notebook takes as parameters: its parameters cell's names, then its config's settings."""
    own = parameter_names(path)
    kind = config_type(path, values)
    return own + [f for f in (kind.settings() if kind else []) if f not in own]


def check_names(path: str | os.PathLike, names, where: str = "", values: dict | None = None) -> None:
    """DataError naming every name the notebook does not take (a misspelled parameter must not pass silently)."""
    known = accepted_names(path, values)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise DataError(
            f"{where or Path(path).name}: unknown parameters {unknown}; {Path(path).stem} takes: {', '.join(known)}"
        )


def check_parameters(notebook: Path, parameters: dict, grid: dict, where: str) -> None:
    """Every name a notebook's own parameter or a setting of its config, and every grid point a valid config, so a
    misspelled name or a bad value stops the sweep before any kernel starts."""
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        point = {**parameters, **dict(zip(keys, values))}
        check_names(notebook, [*parameters, *grid], where, point)
        kind = config_type(notebook, point)
        if kind is None:
            return
        # the parameters cell's own values stand where nothing overrides them (a setting with no default: sources)
        own = {k: v for k, v in parameter_defaults(notebook).items() if k in kind.model_fields}
        kind.from_mapping({**own, **point}, where)


def from_text(path: str | os.PathLike, pairs: list[tuple[str, str]]) -> dict:
    """Parameters given as text (``olakit notebook -p NAME VALUE``): a setting of the notebook's config as its
    command-line flag would take it (``none``, a comma-separated list, JSON for a mapping), any other parameter as
    a YAML value (``3`` an integer, ``[1, 3]`` a list)."""
    import yaml

    kind = config_type(path, dict(pairs))
    out = {}
    for name, text in pairs:
        if kind is not None and name in kind.model_fields:
            out[name] = _typed(kind, name, parse_value(kind, name, text))
        else:
            try:
                out[name] = yaml.safe_load(text)
            except yaml.YAMLError:
                out[name] = text
    return out


def _typed(kind: type[Config], name: str, value):
    """A setting's value as its field makes it (``"2"`` -> 2, ``"ST,DT"`` -> ``["ST", "DT"]``), so the kernel gets the
    value and not its text; the text as it was where the field alone cannot say (the config's own checks do, when the
    notebook builds it)."""
    try:
        typed = getattr(kind(**{name: value}), name)
    except ConfigError:
        return value
    return list(typed) if isinstance(typed, tuple) else typed


def configure(notebook: str, namespace: dict):
    """(config, parameters) of a running notebook: its config built from the settings in ``namespace`` (its
    globals: the parameters cell and papermill's injected cell), and every parameter's value for the run log.
    A plain-data global that is neither a parameter nor a setting is refused (a misspelled name), and so is an
    ``out_dir`` that holds another run."""
    path = notebook_file(notebook)
    later = set(assigned_names(path)) - set(parameter_names(path))  # the notebook's own variables: on a second Run
    namespace = {k: v for k, v in namespace.items() if k not in later}  # All in one kernel, no parameters
    given = [k for k, v in namespace.items() if not k.startswith("_") and k not in _IPYTHON and isinstance(v, _PLAIN)]
    check_names(path, given, f"notebook {notebook}", namespace)
    kind = config_type(path, namespace)
    cfg = kind.from_mapping(namespace, f"notebook {notebook}") if kind else None
    own = {name: namespace[name] for name in parameter_names(path)}
    params = {**own, **(cfg.as_dict() if cfg else {})}
    if params.get("out_dir"):  # a folder holding another run is refused before the first call
        claim_folder(params["out_dir"], RunLog(door=f"notebook:{notebook}", parameters=params))
    return cfg, params


def notebook_file(notebook: str) -> Path:
    """The file of the notebook a kernel runs: the one ``olakit notebook`` or a sweep started it on
    ($OLAKIT_NOTEBOOK), else olakit's own by its name (JupyterLab)."""
    given = environment().notebook
    return Path(given) if given is not None else NOTEBOOKS / f"{notebook}.ipynb"


def parameter_defaults(path: str | os.PathLike) -> dict:
    """The literal values the parameters cell assigns (``n_questions = 5``), by name; other expressions left out."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def assigned_names(path: str | os.PathLike) -> list[str]:
    """Every name the notebook's code cells other than its parameters cell bind at their top level (assignments,
    loops, imports, definitions): the notebook's own variables, which a second Run All finds in the kernel and which
    are never taken for parameters. A cell that is not Python (a magic) is skipped."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    names: list[str] = []
    for c in cells:
        if c["cell_type"] != "code" or "parameters" in c.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse("".join(c["source"]))
        except SyntaxError:
            continue
        names += _bound(tree)
    return list(dict.fromkeys(names))


_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
              ast.GeneratorExp)  # fmt: skip


def _bound(node) -> list[str]:
    """The names a cell binds in the kernel's namespace (not those of a function, class or comprehension's own
    scope; a walrus inside a comprehension aside)."""
    out = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append(child.name)
        elif isinstance(child, ast.Import | ast.ImportFrom):
            out += [(a.asname or a.name).split(".")[0] for a in child.names]
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            out.append(child.id)
        if not isinstance(child, _OWN_SCOPE):
            out += _bound(child)
    return out


def parameter_names(path: str | os.PathLike) -> list[str]:
    """The names assigned at the top level of a notebook's cell tagged ``parameters``, in order (what
    papermill.inspect_notebook lists, read with ``ast``: importing papermill in a kernel costs a second or two)."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    names = []
    for node in ast.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def where_to_look(path: str | os.PathLike) -> list[Path]:
    """Where a notebook looks for a relative input path (a run's records, as ``make paper`` leaves them): the
    kernel's working directory (the command's; in JupyterLab the notebook's own folder), then, for a notebook that
    JupyterLab runs in a checkout's ``notebooks/`` folder, the checkout itself, where ``make paper`` and every command
    typed there write their results. An absolute path is looked for as it is."""
    path = Path(path)
    if path.is_absolute():
        return [path]
    here = Path.cwd()
    places = [here / path]
    if here.name == "notebooks" and (here.parent / "notebooks").is_dir() and (here.parent / "sweeps").is_dir():
        places.append(here.parent / path)
    return places


def located(path: str | os.PathLike, what: str, how: str) -> Path:
    """The first of where_to_look's places that holds ``path``; else one DataError naming every folder looked in and
    ``how`` to make it (``what``: what the file is)."""
    places = where_to_look(path)
    for place in places:
        if place.is_file():
            return place
    raise DataError(f"no {what} at {' nor '.join(str(p) for p in places)}: {how}")
