"""A chapter's entry and its one-line run helper (xcomps_utils.pages.chapters) and its small page
tables."""

import pandas as pd
import pytest

from xcomps_utils.pages import chapters, params, verdicts
from xcomps_utils.runs import execute as methods
from xcomps_utils.runs import store as S


def _pairs(n=4):
    return pd.DataFrame({"dataset": "demo", "task": "demo", "pair_id": [str(i) for i in range(n)],
                         "good": [f"The cat {i} sleeps." for i in range(n)],
                         "bad": [f"The cat {i} sleep." for i in range(n)]})


def test_runner_passes_its_settings_and_call_overrides(monkeypatch):
    calls = []
    monkeypatch.setattr(methods, "run", lambda *a, **k: calls.append((a, k)) or "results")
    run = chapters.runner(store="results", device="cpu", bos_policy="bos", seed=3)
    assert run("m", "pairs", "direct") == "results"
    assert calls[-1] == (("m", "pairs", "direct"),
                         {"store": "results", "device": "cpu", "bos_policy": "bos", "seed": 3})
    run("m", "pairs", ["direct", "neuro"], bos_policy="lm_eval")  # one call, one setting changed
    assert calls[-1][1]["bos_policy"] == "lm_eval" and calls[-1][1]["store"] == "results"
    assert run.settings["bos_policy"] == "bos"  # the override did not stick
    with pytest.raises(TypeError):
        run.settings["seed"] = 4  # read-only


def test_runner_names_a_wrong_setting():
    with pytest.raises(TypeError, match=r"'stroe' is not a setting of methods.run.*did you mean "
                                        r"'store'"):
        chapters.runner(stroe="results")
    run = chapters.runner(store="results")
    with pytest.raises(TypeError, match="'bos' is not a setting"):
        run("m", _pairs(), "direct", bos="lm_eval")


def test_runner_gives_the_run_methods_run_gives(lm, tmp_path):
    store = tmp_path / "results"
    run = chapters.runner(store=store, bos_policy="drop_first", seed=5, progress=False)
    res = run(lm, _pairs(), "direct")
    ref = methods.run(lm, _pairs(), "direct", store=store, bos_policy="drop_first",
                      progress=False)
    assert res.runs == ref.runs and ref.computed["direct"] == 0  # same run id: read, not redone
    pd.testing.assert_frame_equal(res.wide(), ref.wide())


@pytest.fixture
def _entry(monkeypatch):
    """No build variables, and nothing installed before or after the test."""
    for name in ("XCOMPS_VERDICTS", "XCOMPS_READS", "XCOMPS_CHAPTER"):
        monkeypatch.delenv(name, raising=False)
    verdicts.install(None)
    S.log_reads(None)
    yield monkeypatch
    verdicts.install(None)
    S.log_reads(None)


def _xcomps_results(**changed) -> dict:
    """The XCOMPS results chapter's namespace at its smoke sizes, as its parameters cell leaves
    it (its checks need only the project's own sample)."""
    return {**params.sizes("xcomps_results", "smoke"), "store": "build/results", **changed}


def test_open_checks_shows_installs_and_returns_the_chapters_runner(_entry, tmp_path, capsys):
    """What the Makefile's chapter rule sets is installed: the verdicts go to
    $XCOMPS_VERDICTS/<page>.csv, every store read of the process to
    $XCOMPS_READS/<chapter>.jsonl; the runner fixes the parameters that are run settings."""
    _entry.setenv("XCOMPS_VERDICTS", str(tmp_path / "verdicts"))
    _entry.setenv("XCOMPS_READS", str(tmp_path / "reads"))
    _entry.setenv("XCOMPS_CHAPTER", "xcomps_results")
    values = _xcomps_results(seed=7)
    run = chapters.open(values, "xcomps_results", progress=False, seed=8)
    assert dict(run.settings) == {"use_chat_template": False, "device": "auto", "dtype": "auto",
                                  "token_budget": "auto", "seed": 8, "store": "build/results",
                                  "progress": False}            # a setting given wins
    shown = capsys.readouterr().out
    assert shown.startswith("**Parameters.** This page runs at its **smoke sizes**")
    assert "| `seed` | `7` |" in shown and str(params.table(values, "xcomps_results")) in shown
    assert verdicts.installed() == tmp_path / "verdicts"
    assert S.log_reads(None) == tmp_path / "reads" / "xcomps_results.jsonl"
    # a notebook run by hand (no build variables): nothing recorded
    for name in ("XCOMPS_VERDICTS", "XCOMPS_READS", "XCOMPS_CHAPTER"):
        _entry.delenv(name)
    chapters.open(values, "xcomps_results")
    assert verdicts.installed() is None and S.log_reads(None) is None


def test_open_names_a_wrong_chapter_or_parameter_before_anything_is_installed(_entry, tmp_path):
    _entry.setenv("XCOMPS_VERDICTS", str(tmp_path / "verdicts"))
    _entry.setenv("XCOMPS_READS", str(tmp_path / "reads"))
    _entry.setenv("XCOMPS_CHAPTER", "xcomps_token_level")
    with pytest.raises(ValueError, match=r"the 'name' parameter must be the chapter the build "
                                         r"executes \(\$XCOMPS_CHAPTER='xcomps_token_level'\); "
                                         r"got 'xcomps_results'"):
        chapters.open(_xcomps_results(), "xcomps_results")
    _entry.setenv("XCOMPS_CHAPTER", "xcomps_results")
    with pytest.raises(params.ParameterError, match="xcomps_results: the 'n_boot' parameter must be"):
        chapters.open(_xcomps_results(n_boot="many"), "xcomps_results")
    with pytest.raises(TypeError, match="'stroe' is not a setting of methods.run"):
        chapters.open(_xcomps_results(), "xcomps_results", stroe="x")
    assert verdicts.installed() is None and S.log_reads(None) is None
    assert not (tmp_path / "verdicts").exists() and not (tmp_path / "reads").exists()


def test_sample_notice():
    assert "not comparable" in chapters.sample_notice("sample")
    assert "pinned git blob id" in chapters.sample_notice("sample", page="dataset")
    assert chapters.sample_notice("upstream") == ""
    with pytest.raises(ValueError, match=r"^the 'page' parameter must be one of 'results', "
                                         r"'dataset'; got 'results page'; did you mean "
                                         r"'results'\?$"):
        chapters.sample_notice("sample", page="results page")


def test_paired_model_difference_leaves_out_ties_of_either_model():
    a = pd.DataFrame({"task": "t", "pair_id": list("abcd"), "correct": [1.0, 1.0, 0.0, 1.0],
                      "tie": [False, False, False, True]})
    b = pd.DataFrame({"task": "t", "pair_id": list("abcd"), "correct": [1.0, 0.0, 0.0, 0.0],
                      "near_tie": [False, False, True, False]})
    t = chapters.paired_model_difference(a, b, "A", "B", n_boot=200)
    row = t.loc["t"]
    assert row["pairs decided by both"] == 2  # c (near tie of B) and d (tie of A) left out
    assert row["A"] == 1.0 and row["B"] == 0.5 and row["difference"] == -0.5
