"""Issue 29 item 2, issue 31 item 5, issue 43 item 2: each chapter declares its parameters once
(:data:`xcomps_utils.pages.params.CHAPTERS`); its parameters cell, its check and its table are held
to that declaration here, and what make passes papermill is derived from it."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import yaml
from papermill.translators import PythonTranslator

from xcomps_utils.methods import config
from xcomps_utils.pages import params

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (REPO / "notebooks").glob("*.md"))
WITH_PARAMETERS = [c for c in CHAPTERS if params.declaration(c).model_fields]


def _code_cells(chapter):
    nb = jupytext.read(REPO / "notebooks" / f"{chapter}.md")
    return [c for c in nb.cells if c.cell_type == "code"]


def _parameters_cell(chapter) -> dict:
    """The names and literal values of a chapter's papermill ``parameters`` cell, in order."""
    cells = [c for c in _code_cells(chapter) if "parameters" in c.metadata.get("tags", [])]
    if not cells:
        return {}
    (cell,) = cells
    out = {}
    for node in ast.parse(cell.source).body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, (chapter, ast.unparse(node))
        out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_every_chapter_is_declared_and_no_other():
    assert sorted(params.CHAPTERS) == CHAPTERS
    with pytest.raises(KeyError, match="did you mean 'direct_scoring'"):
        params.declaration("direct_scoring_")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_parameters_cell_is_the_declaration(chapter):
    """The cell assigns exactly the declared parameters, in the declared order, to the declared
    defaults (a chapter once declared 18 and checked 10)."""
    model = params.declaration(chapter)
    cell = _parameters_cell(chapter)
    assert list(cell) == list(model.model_fields)
    assert cell == params.sizes(chapter, "default")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_declared_sizes_are_valid(chapter, data_dir):
    for which in ("default", "publish", "smoke"):
        params.check(params.sizes(chapter, which), chapter)


@pytest.mark.parametrize("chapter", WITH_PARAMETERS)
def test_chapter_checks_and_shows_its_own_declaration(chapter):
    """A chapter enters once, naming itself: chapters.open checks and shows its parameters; the
    findings page (its own page, issue 31: no runs, no verdicts, no table) only checks them."""
    sources = [c.source for c in _code_cells(chapter)]
    calls = [call for s in sources
             for call in re.findall(r"(?:params\.check\w*|chapters\.open)\(.*", s)]
    if chapter == "findings":
        assert calls == [f'params.check(globals(), "{chapter}")']
    else:
        assert len(calls) == 1 and calls[0].startswith(f'chapters.open(globals(), "{chapter}"')


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("size", ["smoke", "publish"])
def test_make_passes_papermill_the_declared_sizes(chapter, size, tmp_path, capsys):
    """What make passes papermill (``python -m xcomps_utils.pages.params papermill``, its
    ``main``, read back as papermill reads ``-f``) gives, over the defaults, exactly the declared
    values at that size, with make's store where the chapter has one; and its line says what the
    chapter computes. (In-process; the next test runs the module as make does.)"""
    out = tmp_path / "p.yaml"
    assert params.main(["papermill", chapter, size, "--store", "S", "--out", str(out)]) == 0
    given = yaml.safe_load(out.read_text())
    model = params.declaration(chapter)
    assert capsys.readouterr().out.startswith(model.computes + "; parameters: ") and model.computes
    assert set(given) <= set(model.model_fields)
    assert given.pop("store", None) == ("S" if "store" in model.model_fields else None)
    effective, declared = {**params.sizes(chapter), **given}, params.sizes(chapter, size)
    effective.pop("store", None), declared.pop("store", None)
    assert effective == declared


def test_the_module_writes_what_its_main_writes(tmp_path):
    """``python -m xcomps_utils.pages.params papermill`` (the Makefile's call) writes the file and
    the line its ``main`` does, in a process of its own."""
    out, again = tmp_path / "p.yaml", tmp_path / "q.yaml"
    r = subprocess.run([sys.executable, "-m", "xcomps_utils.pages.params", "papermill",
                        "xcomps_results", "smoke", "--store", "S", "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    params.main(["papermill", "xcomps_results", "smoke", "--store", "S", "--out", str(again)])
    assert out.read_text() == again.read_text() and "store" in yaml.safe_load(out.read_text())
    assert r.stdout.startswith(params.declaration("xcomps_results").computes + "; parameters: ")


def _takes_a_model(annotation) -> bool:
    """Whether a field's type is, or holds, :data:`xcomps_utils.declare.Model`."""
    from typing import get_args

    from xcomps_utils import declare

    return annotation is declare.Model or any(_takes_a_model(a) for a in get_args(annotation))


def test_no_chapter_declares_a_model_parameter_but_models():
    """Issue 44 item 1: one model parameter, ``models`` (a list), the same type and meaning on
    every page that runs a model; ``model``, ``compare_model``, ``methods_model``,
    ``neuro_model`` are gone from every declaration and parameters cell."""
    from xcomps_utils import declare

    takers = {}
    for chapter in CHAPTERS:
        fields = params.declaration(chapter).model_fields
        named = [n for n, f in fields.items() if _takes_a_model(f.annotation) or "model" in n]
        assert named in ([], ["models"]), (chapter, named)
        assert not [n for n in _parameters_cell(chapter) if "model" in n and n != "models"]
        if named:
            takers[chapter] = fields["models"]
    assert fields is not None and len(takers) == 9, sorted(takers)
    from pydantic.fields import FieldInfo

    declared = FieldInfo.from_annotation(declare.Models)  # a list, each a model, each once
    for chapter, field in takers.items():
        assert (field.annotation, field.metadata) == (declared.annotation, declared.metadata)
        assert field.description.startswith(params.MODELS), chapter
    assert _takes_a_model(declare.Models) and not _takes_a_model(declare.Names)


@pytest.mark.parametrize("size", ["smoke", "publish"])
def test_papermill_models_sets_every_chapter_that_declares_them(size, tmp_path, capsys):
    """``--models`` (make's ``MODELS``, the study's models) sets ``models`` on every chapter
    that declares it, at any size, with the rest of the size as declared; a chapter without it
    (the models and findings pages, the dataset page) is given what it was given before.
    (In-process, through the module's ``main``.)"""
    for chapter in CHAPTERS:
        out = tmp_path / f"{chapter}.yaml"
        assert params.main(["papermill", chapter, size, "--store", "S", "--models", "./tiny",
                            "random:x@seed=1", "--device", "cpu", "--out", str(out)]) == 0
        r = capsys.readouterr()
        given = yaml.safe_load(out.read_text())
        fields = params.declaration(chapter).model_fields
        plain = params.papermill_parameters(chapter, size, "S")
        if "models" in fields:
            assert given.pop("models") == ["./tiny", "random:x@seed=1"], chapter
            assert "models=['./tiny', 'random:x@seed=1']" in r.out
        else:
            assert "models" not in given
        assert given.pop("device", None) == ("cpu" if "device" in fields else None), chapter
        plain.pop("models", None), plain.pop("device", None)
        assert given == plain, chapter


def test_papermill_parameters_are_the_differences_and_the_store():
    got = params.papermill_parameters("grammar_across_languages", "publish", "store")
    assert got["items_per_task"] == 200 and got["xcomps_items"] is None
    assert got["constructions"][:2] == ["simple_agrmt", "vp_coord"] and got["store"] == "store"
    assert "n_boot" in got and "seed" not in got  # 2000 differs from the default 1000; 0 does not
    assert params.papermill_parameters("findings", "publish", "store") == {}  # no store declared
    assert params.papermill_parameters("direct_scoring", "default") == {}
    with pytest.raises(params.ParameterError, match="the 'which' parameter must be"):
        params.papermill_parameters("direct_scoring", "huge")


# --- the one check --------------------------------------------------------------------------------

@pytest.mark.parametrize("chapter", WITH_PARAMETERS)
def test_every_declared_parameter_is_checked(chapter, data_dir):
    """A float (which no parameter takes: papermill passes 1.5 for ``-p x 1.5``) is refused for
    each parameter of each chapter, in one line naming the chapter and the parameter."""
    for name in params.declaration(chapter).model_fields:
        with pytest.raises(params.ParameterError) as err:
            params.check({**params.sizes(chapter), name: 1.5}, chapter)
        message = str(err.value)
        assert message.startswith(f"{chapter}: the {name!r} parameter must be ")
        assert message.endswith("; got 1.5") and "\n" not in message


def test_messages_say_what_is_allowed_from_the_declaration(data_dir):
    d = params.sizes("direct_scoring")
    cases = {
        "n_pairs": ("abc", "must be an integer >= 1 or None (every one); got 'abc'"),
        "dtype": ("float64", "must be one of " + ", ".join(map(repr, config.DTYPES))
                  + " (or 'fp32', 'bf16', 'fp16'); got 'float64'"),
        "bos_policy": ("eos", "must be one of " + ", ".join(map(repr, config.bos_policies()))
                       + "; got 'eos'"),
        "token_budget": (0, "must be 'auto' (from the device's memory), an integer >= 1 (tokens "
                            "a forward pass) or None (no cap); got 0"),
        "device": ("gpu", "must be one of 'auto', 'cpu', 'mps', 'cuda' or 'cuda:N' (N: a GPU's "
                          "index); got 'gpu'"),
        "seed": (-1, "must be an integer from 0 to 4294967295; got -1"),
        "models": ("gemma-3-270m", "must be a non-empty list, each a model: an embedded name "
                                   "(`xcomps-study tasks` lists them), a local folder or a "
                                   "Hugging Face id; got 'gemma-3-270m'; pass a list: "
                                   "-y '{models: [gemma-3-270m]}'"),
        "tasks": ("dust", "must be a non-empty list of strings; got 'dust'; pass a list: "
                          "-y '{tasks: [dust]}'"),
    }
    for name, (value, words) in cases.items():
        with pytest.raises(params.ParameterError) as err:
            params.check({**d, name: value}, "direct_scoring")
        assert str(err.value) == f"direct_scoring: the {name!r} parameter {words}"
    with pytest.raises(params.ParameterError, match=r"'n_pairs' parameter must be .*got True$"):
        params.check({**d, "n_pairs": True}, "direct_scoring")  # a bool is not an integer here
    with pytest.raises(params.ParameterError, match=r"'tasks\[0\]' parameter must be a task name"
                                                    r".*got 'blimp_anaphr'.*did you mean "
                                                    r"'blimp_anaphor'"):
        params.check({**d, "tasks": ["blimp_anaphr"]}, "direct_scoring")


def test_values_known_from_the_data_are_checked(data_dir):
    t = params.sizes("token_perplexity_method")
    with pytest.raises(params.ParameterError) as err:
        params.check({**t, "pair_index": 10**9}, "token_perplexity_method")
    assert str(err.value) == (
        "token_perplexity_method: the 'pair_index' parameter must be an integer from 0 to 999 "
        "(the task 'blimp_anaphor' has 1,000 pairs); got 1000000000")
    params.check({**t, "pair_index": 999}, "token_perplexity_method")
    with pytest.raises(params.ParameterError, match=r"'wording' parameter must be one of "
                                                    r"'grammatical'.*\(the wordings of 'blimp'\); "
                                                    r"got 'gramatical'; did you mean "
                                                    r"'grammatical'\?$"):
        params.check({**t, "wording": "gramatical"}, "token_perplexity_method")
    with pytest.raises(params.ParameterError, match="'task' parameter must be a task name.*got "
                                                    "'dusty'.*did you mean 'dust'"):
        params.check({**t, "task": "dusty"}, "token_perplexity_method")
    x = params.sizes("xcomps_results")
    with pytest.raises(params.ParameterError, match=r"'languages\[1\]' parameter must be one of "
                                                    r"'en', 'de'.*sample files\); got 'ar'$"):
        params.check({**x, "languages": ["en", "ar"]}, "xcomps_results")
    params.check({**x, "languages": ["en", "ar"], "source": "upstream"}, "xcomps_results")
    with pytest.raises(params.ParameterError, match=r"'methods\[1\]' parameter must be one of "
                                                    r"'meta', 'direct', 'neuro'; got 'token_ppl'$"):
        params.check({**x, "methods": ["direct", "token_ppl"]}, "xcomps_results")


def test_a_name_papermill_injected_must_be_declared(data_dir):
    """papermill only warns about ``-p n_pair 5``; the chapter refuses it, with a did-you-mean.
    The injected cell is read from IPython's ``In``, as papermill writes it."""
    injected = PythonTranslator.codify({"n_pair": 5}, comment="Parameters")
    values = {**params.sizes("direct_scoring"), "In": ["", "model = 'x'", injected]}
    with pytest.raises(params.ParameterError) as err:
        params.check(values, "direct_scoring")
    assert str(err.value).startswith("direct_scoring: 'n_pair' is not a parameter (the "
                                     "chapter's parameters: models, tasks, n_pairs, ")
    assert str(err.value).endswith("; did you mean 'n_pairs'?")
    ok = PythonTranslator.codify({"n_pairs": 5}, comment="Parameters")
    params.check({**params.sizes("direct_scoring"), "n_pairs": 5, "In": ["", ok]},
                 "direct_scoring")
    with pytest.raises(params.ParameterError, match="'seed' parameter must be an integer from 0 "
                                                    "to 4294967295; it is missing; the chapter's "
                                                    "parameters cell assigns it"):
        params.check({k: v for k, v in params.sizes("first_token").items() if k != "seed"},
                     "first_token")


def test_the_types_are_the_package_declarations():
    """A chapter's shared parameters have the one declaration's types (a dtype, source or BOS
    policy added there is a chapter's at once), as the run parameters and sweep files have."""
    from typing import get_args

    from xcomps_utils import declare

    for name in ("Seed", "Device", "Dtype", "Source", "BosPolicy", "Model", "TokenBudget"):
        assert getattr(params, name, None) in (getattr(declare, name), None), name
    assert params.Budget is declare.TokenBudget
    fields = params.declaration("direct_scoring").model_fields
    run = config.RunParameters.model_fields
    for name in ("seed", "token_budget", "bos_policy"):
        assert fields[name].annotation == run[name].annotation, name
        assert fields[name].metadata == run[name].metadata, name
    assert set(get_args(get_args(declare.Dtype)[0])) == set(config.DTYPES)
    assert set(get_args(declare.Source)) == set(config.SOURCES)
    assert set(get_args(declare.BosPolicy)) == set(config.bos_policies())


# --- the visible table -------------------------------------------------------------------------------

def test_table_says_which_sizes_the_page_runs_at():
    smoke = {**params.sizes("direct_scoring", "smoke"), "store": "build/smoke/results"}
    t = params.table(smoke, "direct_scoring")
    assert (t.size, t.differences) == ("smoke", {})
    assert "**smoke sizes** (`make smoke`)" in t.markdown()
    t = params.table(params.sizes("direct_scoring", "publish"), "direct_scoring")
    assert (t.size, t.differences) == ("publish", {})
    other = {**params.sizes("direct_scoring"), "models": ["meta-llama/Llama-3.1-8B-Instruct"]}
    t = params.table(other, "direct_scoring")
    assert t.size == "default"
    assert t.differences == {"models": (["meta-llama/Llama-3.1-8B-Instruct"],
                                        ["smollm2-135m-instruct", "gemma-3-270m"])}
    assert "except `models = ['meta-llama/Llama-3.1-8B-Instruct']`" in t.sentence()
    lines = t.markdown().splitlines()
    assert lines[2] == "| parameter | value | what it does | publish (`make book`) |"
    row = next(x for x in lines if x.startswith("| `n_pairs` |"))
    assert row == "| `n_pairs` | `150` | pairs per task, a seeded sample (None: all) | `1000` |"
    # the publish column is what `make book` passes: the shipped store, not the default results/
    store = next(x for x in lines if x.startswith("| `store` |"))
    assert store.endswith(f"| `{params.BOOK_STORE!r}` |") and params.BOOK_STORE == "store", store
    make = (REPO / "Makefile").read_text()
    assert re.search(rf"^SHIP_STORE \?= {params.BOOK_STORE}$", make, flags=re.M)
    assert "book: install data-check" in make and "STORE=$(SHIP_STORE)" in make
    assert len(lines) == 4 + len(params.declaration("direct_scoring").model_fields)
    assert t._repr_markdown_() == t.markdown()
    repro = params.table({"study_size": "publish"}, "reproducibility")
    assert repro.size == "publish" and repro.sentence().startswith("This page runs at ")


@pytest.mark.parametrize("chapter", WITH_PARAMETERS)
def test_every_parameter_says_what_it_does(chapter):
    for name, field in params.declaration(chapter).model_fields.items():
        assert field.description and "|" not in field.description, (chapter, name)


@pytest.mark.slow
def test_an_undeclared_name_stops_the_chapter_under_papermill(data_dir, tmp_path):
    """What papermill injects is seen by the check (IPython's ``In``): ``-p language ...`` stops
    the chapter with a did-you-mean instead of a warning."""
    import papermill

    nb = jupytext.read(REPO / "notebooks" / "xcomps_dataset.md")
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    check = next(i for i in code if "chapters.open" in nb.cells[i].source)
    nb.cells = nb.cells[:check + 1]
    jupytext.write(nb, tmp_path / "in.ipynb")
    with pytest.raises(papermill.PapermillExecutionError,
                       match="'language' is not a parameter .*did you mean 'languages'"):
        papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                                   parameters={"language": ["en"]}, cwd=str(REPO),
                                   kernel_name="python3", progress_bar=False)
