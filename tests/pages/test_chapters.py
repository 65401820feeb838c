"""The chapters' one-line run helper (xcomps_utils.pages.chapters) and its small page tables."""

import pandas as pd
import pytest

from xcomps_utils.pages import chapters
from xcomps_utils.runs import execute as methods


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
