"""One definition per setting: the config types are the only place a setting is named, typed, defaulted and
validated; the CLI, the notebooks and the sweep files take their names from them; every analysis takes the analysis
settings whole (Analysis, or its statistics Stats), whose default is the authors' rule."""

import argparse
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import olakit.analysis
import olakit.notebook.explorers
from olakit.config import ConfigError, Stats, add_arguments, from_arguments
from olakit.geek.config import GeekConfig
from olakit.olagpt.config import NotesConfig, OlaGPTConfig
from olakit.review.config import ReviewConfig
from olakit.settings import PAPER, Analysis, VoteRule

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = (OlaGPTConfig, GeekConfig, ReviewConfig, VoteRule, Analysis, NotesConfig)
VOTE_SETTINGS = ("tie", "unparsed", "vote_order", "preset", "settings", "tie_rule")
LOOSE = ("seed", "n_boot", "level", "analysis_seed", "alpha")
"""Statistics settings no analysis function may take one by one (they come whole, in its ``analysis``): the decision
level ``alpha`` too (the exact-test math takes the level of one test, ``each``: a family's alpha / m)."""
OWN_SETTINGS = ("olakit.analysis.report.report", "olakit.analysis.report.settings_of", "olakit.plan.after_run")
"""Functions of a result whose analysis settings default to the result's own (its log's), not the package's."""
RUN_SEEDED = ("olakit.olagpt.llm_vote.candidate_order", "olakit.olagpt.llm_vote.llm_vote_records")
"""The LLM vote's candidate shuffle: calls a run makes, seeded by the run's seed (a prompt, not a statistic)."""
ANALYSIS_MODULES = [
    *(f"olakit.analysis.{m.name}" for m in pkgutil.iter_modules(olakit.analysis.__path__)),
    "olakit.answering.vote",
    "olakit.plan",
    "olakit.olagpt.llm_vote",
    *(f"olakit.notebook.{m}" for m in ("ablations", "records", "outputs")),
    *(f"olakit.notebook.explorers.{m.name}" for m in pkgutil.iter_modules(olakit.notebook.explorers.__path__)),
]


def public_callables():
    for name in ANALYSIS_MODULES:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj
            elif inspect.isclass(obj) and "__init__" in vars(obj):
                yield f"{name}.{attr}", obj.__init__


def test_no_analysis_function_takes_a_vote_setting_of_its_own_or_another_default():
    """The paper's vote rule, written out by hand from the authors' code: the order of their recorded candidates,
    max(votes, key=votes.get) (the first tied label), and an unparseable output voting as its own text."""
    paper = {"vote_order": "paper", "tie": "first", "unparsed": "raw"}
    named = VoteRule(preset="paper")
    assert {k: getattr(PAPER, k) for k in paper} == paper == {k: getattr(named, k) for k in paper}
    checked = 0
    for name, fn in public_callables():
        params = inspect.signature(fn).parameters
        loose = [p for p in params if p in (*VOTE_SETTINGS, *(LOOSE if name not in RUN_SEEDED else ()))]
        assert not loose, f"{name} takes {loose}: take analysis: Analysis (or Stats) instead"
        for arg in ("rule", "analysis", "stats"):
            if arg not in params or name in OWN_SETTINGS:
                continue
            hint = typing.get_type_hints(fn).get(arg)
            assert hint in (VoteRule, Analysis, Stats), f"{name}: {arg} is a {hint}"
            default = params[arg].default
            assert default is not inspect.Parameter.empty, f"{name}: {arg} has no default"
            if hint is not Stats:
                assert {k: getattr(default, k) for k in paper} == paper, f"{name}: {arg} defaults to {default}"
            assert default == hint(), f"{name}: {arg} defaults to {default}, not {hint.__name__}()'s defaults"
            checked += 1
    assert checked >= 30  # every vote-reading table, test, interval, explorer and notebook helper


def flags_of(cls, skip=()) -> argparse.ArgumentParser:
    """A parser with the config's flags, after checking each: named as its setting, with its help and default
    (``skip``: settings that are a config of their own, whose flags are that config's)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser, cls, skip=skip)
    flags = {a.dest: a for a in parser._actions if a.dest != "help"}
    assert list(flags) == [s for s in cls.settings() if s not in skip]
    for name, field in cls.model_fields.items():
        if name in skip:
            continue
        action = flags[name]
        assert f"--{name.replace('_', '-')}" in action.option_strings
        assert field.description and "[default: " in action.help, name
    return parser


@pytest.mark.parametrize("cls", CONFIGS)
def test_every_setting_has_a_flag_with_its_name_help_and_default(cls):
    parser = flags_of(cls)
    # no flag given: the config's own defaults, every one
    assert from_arguments(cls, parser.parse_args([])) == cls()


def test_flags_parse_lists_none_and_booleans():
    parser = argparse.ArgumentParser()
    add_arguments(parser, OlaGPTConfig)
    args = parser.parse_args(
        ["-n", "none", "--strategies", "zero-shot,combine", "--n-notes", "1,2", "--no-audit", "--choose-k", "2"]
    )
    cfg = from_arguments(OlaGPTConfig, args)
    assert cfg.n_questions is None and cfg.strategies == ("zero-shot", "combine") and cfg.n_notes == (1, 2)
    assert cfg.audit is False and cfg.choose_k == 2
    with pytest.raises(ConfigError, match=r"OlaGPTConfig: strategies\.1='nearest': input should be"):
        from_arguments(OlaGPTConfig, parser.parse_args(["--strategies", "zero-shot,nearest"]))


def test_bad_values_are_one_error_naming_field_value_and_rule():
    with pytest.raises(ConfigError) as err:
        OlaGPTConfig(n_questions=-1, offset=-2)
    text = str(err.value)
    assert "\n" not in text and text.startswith("OlaGPTConfig: ")
    assert "n_questions=-1: input should be greater than or equal to 1" in text and "offset=-2" in text
    with pytest.raises(ConfigError, match=r"GeekConfig: stages={'decide': {'max_tokens': 3}}: unknown stages"):
        GeekConfig(stages={"decide": {"max_tokens": 3}})
    geek = GeekConfig(stages={"final": {"max_tokens": 64}})  # the other stages keep their own limits
    assert (geek.for_stage("final").max_tokens, geek.for_stage("select").max_tokens) == (64, 4)
    with pytest.raises(ConfigError, match="ReviewConfig: threshold=6: input should be less than or equal to 5"):
        ReviewConfig(threshold=6)
    with pytest.raises(ConfigError, match="offset=300: the split has 254 questions, none from there on"):
        OlaGPTConfig(offset=300).pick(list(range(254)))


def test_a_preset_fills_what_is_not_given_and_refuses_a_contradiction():
    olakit_ = OlaGPTConfig(preset="olakit")
    assert (olakit_.unparsed, olakit_.fill_up, olakit_.template_position) == ("abstain", True, "after")
    assert olakit_.rule() == VoteRule(preset="olakit")
    assert olakit_.replace(n_questions=2).fill_up is True
    with pytest.raises(ConfigError, match="preset 'olakit' sets fill_up=True but fill_up=False was asked for too"):
        OlaGPTConfig(preset="olakit", fill_up=False)


def test_help_shows_every_setting_with_its_default():
    out = subprocess.run(
        [sys.executable, "-m", "olakit.cli", "run", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    out = " ".join(out.split())
    for name in OlaGPTConfig.model_fields:
        assert f"--{name.replace('_', '-')}" in out, name
    assert "[default: 10]" in out and "[default: zero-shot,random,retrieval,combine]" in out


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_take_their_configs_settings_by_name(path):
    """A notebook's parameters cell holds only its own parameters and the settings that define its ablation: every
    other setting comes from the config's default, never from a second default in the notebook."""
    from olakit.analysis.compare import CompareConfig
    from olakit.notebook.parameters import accepted_names, config_type, parameter_names

    kind = config_type(path)
    own = parameter_names(path)
    if kind is None:
        assert path.stem == "explore"
        return
    assert accepted_names(path) == own + [f for f in kind.settings() if f not in own]
    meta = json.loads(path.read_text())["metadata"]["olakit"]
    if meta == {"config": "method"}:  # method.ipynb: the config of the method its parameters cell names (olagpt)
        assert path.stem == "method" and kind is OlaGPTConfig
        return
    assert meta == {
        "config": {
            OlaGPTConfig: "olagpt",
            GeekConfig: "geek",
            ReviewConfig: "review",
            Analysis: "analysis",
            CompareConfig: "compare",
        }[kind]  # fmt: skip
    }
    overridden = [n for n in own if n in kind.model_fields]
    # reasoning_effort.ipynb's ablation is three settings (efforts, templates, strategies) and it has no recorded
    # outputs to default to: its question count is its fourth, one question, so a run with no parameter is plumbing
    # of a minute on the embedded model (sweeps/reasoning.yaml sets the study's 100)
    most = 4 if path.stem == "reasoning_effort" else 3
    assert len(overridden) <= most, f"{path.stem} restates {overridden}"


@pytest.mark.parametrize(
    "command, shown",
    [
        ("geek", "select max_tokens 4, temperature 0.0; decomp max_tokens 48"),
        ("review", "review max_tokens 300, temperature 0.7, seed 0"),
        ("review", "With behaviour literal: 800 tokens on every loop call"),
        ("notes build", "check max_tokens 256, temperature 0.0"),
    ],
)
def test_the_stages_flag_shows_the_methods_own_settings_of_its_stages(command, shown, capsys):
    """A method's settings of its stages live in its code (STAGE_DEFAULTS), not in a field's default: --help names
    them (the values are docs/geek.md's, docs/review.md's and docs/olagpt.md's tables)."""
    from olakit.cli import main

    with pytest.raises(SystemExit):
        main([*command.split(), "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert shown in text
