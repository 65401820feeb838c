"""Issue 20: every input checked before any work (repros 5-8), one error line from the CLI."""

import subprocess
import sys
import warnings

import pandas as pd
import pytest
import torch
import yaml
from click.testing import CliRunner

from xcomps_utils.lm.encoding import check_pair_texts, context_length, text_problem
from xcomps_utils.pairs import data, tasks
from xcomps_utils.runs import cli, execute as methods, planner, store as S

CLI = [sys.executable, "-m", "xcomps_utils.runs.cli"]


def _pairs(good, bad="The cat sleeps."):
    return pd.DataFrame({"dataset": ["t"], "task": ["t"], "pair_id": ["p7"], "good": [good],
                         "bad": [bad]})


@pytest.mark.parametrize("text, why", [
    ("", "empty"), ("   \t", "whitespace only"), ("\u200b", "only invisible characters (U+200B"),
    ("\u200b\u200d \ufeff", "only invisible characters"), (None, "not a string")])
def test_bad_texts_are_named_before_any_work(text, why, tmp_path):
    """Repro 5: a whitespace-only or zero-width "sentence" was scored and counted correct."""
    with pytest.raises(ValueError) as err:
        methods.run("smollm2-135m-instruct", _pairs(text), "direct", store=tmp_path / "s")
    msg = str(err.value)
    assert why in msg and "pair t/p7 (row 0)" in msg and "'good'" in msg
    assert not (tmp_path / "s").exists()  # no run folder, no store


def test_visible_texts_pass():
    assert text_problem("Ein Satz.") is None and text_problem("\u200bword") is None
    check_pair_texts(_pairs("Das ist gut.", "猫が寝る。"))


def test_bad_field_is_named(tmp_path):
    with pytest.raises(ValueError, match="'bad' is whitespace only"):
        check_pair_texts(_pairs("A sentence.", "  "))


def test_too_long_text_is_an_error_or_cut_with_a_warning(lm, tmp_path):
    """Repro 5: a 12,285-token text was scored past the model's 8,192-token context. Refused
    before any work with SmolLM2; cut with a warning where asked, on a tiny folder model with a
    512-token context (the same path: scoring 8,191 tokens on one core took most of 90 s)."""
    ctx = context_length(lm)
    assert ctx == 8192
    long = " ".join(["the"] * (ctx + 100))
    with pytest.raises(ValueError) as err:
        methods.run(lm, _pairs(long), "direct", store=tmp_path)
    msg = str(err.value)
    assert "pair t/p7 (row 0): 'good' is 8,292 tokens" in msg and "8,192" in msg
    assert "truncate" in msg and not (tmp_path / "runs").exists()


def test_a_text_past_the_context_is_cut_where_asked(tiny_folder, tmp_path):
    from xcomps_utils.lm.models import load_model

    tiny = load_model(str(tiny_folder), device="cpu", dtype="float32")
    ctx = context_length(tiny)
    assert ctx == 512
    long = " ".join(["cat"] * (ctx + 100))
    with pytest.raises(ValueError, match=f"'good' is [0-9,]+ tokens.*{ctx}"):
        methods.run(tiny, _pairs(long), "direct", store=tmp_path)
    with pytest.warns(UserWarning, match=f"cut to {ctx - 1} tokens"):
        res = methods.run(tiny, _pairs(long), "direct", store=tmp_path, truncate=True,
                          progress=False)
    n = res.measures.set_index("measure").value
    short = len(tiny.tokenizer("The cat sleeps.")["input_ids"])
    assert n["n_tokens_good"] == ctx - 1 and n["n_tokens_bad"] == short


def test_text_starting_with_the_bos_string_is_an_error(lm, tmp_path):
    """Repro 5: a text that began with the BOS string got a second BOS."""
    bos = lm.tokenizer.bos_token
    with pytest.raises(ValueError, match=f"'bad' starts with the BOS string {bos!r}; remove it"):
        methods.run(lm, _pairs("A cat.", bos + "A dog."), "direct", store=tmp_path)
    assert not (tmp_path / "runs").exists()


def test_methods_none_and_bad_methods_are_clear():
    with pytest.raises(ValueError, match=r"^the 'methods' parameter must be a non-empty list of "
                                         r"strings; got None$"):
        methods.run("smollm2-135m-instruct", _pairs("A."), None)
    with pytest.raises(ValueError, match=r"^the 'methods\[0\]' parameter must be one of the 4 "
                                         r"methods \('direct', .*; got 'dirct'; did you mean "
                                         r"'direct'\?$"):
        methods.run("smollm2-135m-instruct", _pairs("A."), ["dirct"])


def test_token_ppl_on_xcomps_fails_before_the_model_and_leaves_no_run(data_dir, tmp_path,
                                                                      guard):
    """Repro 7: `run token_ppl --languages en` failed after the model load, leaving a run
    marked running. (The guard refuses ``load_model``: had it been called, it is in
    ``guard.loads()`` and the command ends in a traceback.)"""
    r = subprocess.run(CLI + ["run", "token_ppl", "--languages", "en", "--items-per-language",
                              "1", "--store", str(tmp_path)], capture_output=True, text=True,
                       env=guard.env(), timeout=600)  # a hang guard, not a speed bound
    assert guard.loads() == []
    assert r.returncode == 1 and "token-level perplexity has none for XCOMPS yet" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("device, expect", [
    ("bogus", "the 'device' parameter must be one of 'auto', 'cpu', 'mps', 'cuda' or 'cuda:N' "
              "(N: a GPU's index); got 'bogus'"),
    pytest.param("cuda", "the 'device' parameter must be a device this machine has: 'cpu' or "
                         "'auto' (torch ",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")),
    pytest.param("cuda:7", "the 'device' parameter must be a device this machine has",
                 marks=pytest.mark.skipif(torch.cuda.device_count() > 7, reason="8 GPUs"))])
def test_bad_device_is_one_line_before_the_model_loads(device, expect, data_dir, tmp_path,
                                                        guard):
    """Repro 6: --device cuda on a CPU-only torch and --device bogus gave tracebacks, after
    the model had loaded."""
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--device", device, "--store", str(tmp_path)],
                       capture_output=True, text=True, env=guard.env(), timeout=600)
    assert guard.loads() == []
    assert r.returncode == 1 and expect in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_debug_shows_the_traceback(data_dir, tmp_path):
    r = subprocess.run(CLI + ["--debug", "run", "direct", "--task", "blimp_anaphor",
                              "--n-pairs", "2", "--device", "bogus", "--store", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "Error: the 'device' parameter must be one of 'auto', 'cpu', 'mps', 'cuda' or 'cuda:N' "
        "(N: a GPU's index); got 'bogus'")


def test_a_garbage_shard_is_a_one_line_error(lm, data_dir, tmp_path):
    """Repro 6: a garbage shard gave a traceback."""
    pairs = tasks.sample(["blimp_anaphor"], 2, 0)
    res = methods.run(lm, pairs, "direct", store=tmp_path, progress=False)
    (tmp_path / "measures" / f"run={res.runs['direct']}" / "shard-00000.parquet").write_bytes(
        b"garbage" * 1000)
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--device", "cpu", "--dtype", "float32", "--store", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert f"run {res.runs['direct']}: shard shard-00000" in r.stderr and "--repair" in r.stderr


def test_unknown_model_in_sweep_dry_run(tmp_path):
    """Repro 8: `sweep --dry-run` accepted unknown model names."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"models": ["smollm2-135m-instruct", "./no/such/model"],
                                    "methods": ["direct"],
                                    "data": [{"languages": ["en"], "items_per_language": 1}]}))
    r = CliRunner().invoke(cli.main, ["sweep", str(path), "--dry-run"])
    assert r.exit_code == 1 and "models[1]" in r.output and "does not exist" in r.output


def test_repeated_tasks_are_run_once(data_dir):
    """Repro 8: `--task dust,dust` was not de-duplicated."""
    assert cli._split(("dust,dust", "blimp_anaphor,dust")) == ["dust", "blimp_anaphor"]
    (one,) = planner.select(["direct"], cli._split(("dust,dust",)), n_pairs=5)
    assert len(one.pairs) == 5 and one.pairs.pair_id.is_unique


def test_unknown_blimp_phenomenon_never_suggests_nothing():
    """Repro 8: "did you mean []?"."""
    with pytest.raises(data.DataError) as err:
        tasks.get("blimp:zzzzqqqq")
    assert "[]" not in str(err.value) and "did you mean" not in str(err.value)
    assert "'adjunct_island'" in str(err.value)
    with pytest.raises(data.DataError, match="did you mean 'anaphor_gender_agreement'"):
        tasks.get("blimp:anaphor_gender_agreemnt")


def test_quiet_silences_weight_loading_bars(lm, data_dir, tmp_path):
    """Repro 8: --quiet still printed weight-loading bars."""
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--device", "cpu", "--store", str(tmp_path), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "%|" not in r.stderr and "it/s" not in r.stderr, r.stderr[-500:]


def test_warnings_are_not_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_pair_texts(_pairs("Fine."))
    assert S.StoreError.__doc__


def test_sweep_into_a_read_only_store_fails_before_any_model_loads(data_dir, tmp_path,
                                                                    monkeypatch):
    import os

    store = "/sys/xcomps-store" if os.geteuid() == 0 else str(tmp_path / "ro")
    if os.geteuid() != 0:
        os.makedirs(store)
        os.chmod(store, 0o555)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"models": ["smollm2-135m-instruct"], "methods": ["direct"],
                                    "executor": "local", "store": store, "device": "cpu",
                                    "data": [{"languages": ["en"], "items_per_language": 1}]}))
    _no_model(monkeypatch)
    r = CliRunner().invoke(cli.main, ["sweep", str(path), "--quiet"])
    assert r.exit_code == 1 and "is not writable" in r.output, r.output


# --- issue 41 item 6: sizes checked before work (refused, the one policy) -------------------------

def _no_model(monkeypatch):
    """Loading a model or running a method fails the test: the refusal comes before either."""
    from xcomps_utils.lm import models

    def boom(*a, **k):
        raise AssertionError("a model was loaded or a run started")

    monkeypatch.setattr(models, "load_model", boom)
    monkeypatch.setattr(planner, "load", boom)
    monkeypatch.setattr(methods, "run", boom)


def test_n_pairs_above_the_task_is_refused_before_any_model_loads(data_dir, tmp_path,
                                                                   monkeypatch):
    """`run direct --task bmlama17:vi --n-pairs 1000000000000` started a run of all 59,143
    pairs, saying nothing of the task holding fewer. The line is the one a sweep file and
    ``methods.run`` give (``--n-pairs none`` is every pair)."""
    _no_model(monkeypatch)
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "bmlama17:vi", "--n-pairs",
                                      "1000000000000", "--store", str(tmp_path / "s")])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == (
        "Error: the 'n_pairs' parameter must be an integer from 1 to 59,143 (the pairs "
        "bmlama17:vi holds) or None (every one); got 1000000000000")
    assert not (tmp_path / "s" / "runs").exists()


def test_planner_select_refuses_a_size_no_task_holds(data_dir):
    with pytest.raises(tasks.SizeError, match=r"^the 'n_pairs' parameter must be an integer from "
                                              r"1 to 2,122 \(the pairs dust holds\) or None "
                                              r"\(every one\); got 2123$"):
        planner.select(["direct"], ["dust"], n_pairs=2123)
    with pytest.raises(tasks.SizeError, match=r"from 1 to 2,114 \(the pairs dust holds after "
                                              r"token-level perplexity's selection\)"):
        planner.select(["token_ppl"], ["dust"], n_pairs=2122)
    with pytest.raises(tasks.SizeError, match=r"the largest of its 2 tasks, dust, holds"):
        planner.select(["direct"], ["clams:en:simple_agrmt", "dust"], n_pairs=5000)
    with pytest.raises(tasks.SizeError, match=r"^the 'items_per_language' parameter must be an "
                                              r"integer from 1 to 30 \(the items XCOMPS' sample "
                                              r"holds per language\)"):
        planner.select(["direct"], languages=["en", "de"], items_per_language=31)
    # at the bound, and a smaller task beside a larger one ("up to n per task"): accepted
    assert len(planner.select(["direct"], ["dust"], n_pairs=2122)[0].pairs) == 2122
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.SmallSampleWarning)
        (s,) = planner.select(["direct"], ["clams:en:simple_agrmt", "dust"], n_pairs=500)
    assert s.pairs.groupby("task").size().to_dict() == {"clams:en:simple_agrmt": 140, "dust": 500}


def test_a_sweep_file_refuses_a_size_above_its_tasks(data_dir, tmp_path, monkeypatch):
    """The same policy in a sweep file: refused when it is read, naming the field."""
    _no_model(monkeypatch)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"models": ["smollm2-135m-instruct"], "methods": ["direct"],
                                    "executor": "local", "store": str(tmp_path / "st"),
                                    "data": [{"tasks": ["blimp_anaphor"], "n_pairs": 10},
                                             {"tasks": ["bmlama17:vi"],
                                              "n_pairs": 1000000000000}]}))
    r = CliRunner().invoke(cli.main, ["sweep", str(path), "--dry-run"])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == (
        f"Error: {path}: the 'data[1].n_pairs' parameter must be an integer from 1 to 59,143 (the "
        f"pairs bmlama17:vi holds) or None (every one); got 1000000000000")
    from xcomps_utils.runs import sweep as SW

    with pytest.raises(tasks.SizeError, match=r"the 'data\[0\]\.items_per_language' parameter "
                                              r"must be an integer from 1 to 30 \(the items "
                                              r"XCOMPS' sample holds per language\) or None "
                                              r"\(every one\); got 31$"):
        SW.parse_sweep({"models": ["smollm2-135m-instruct"], "methods": ["direct"],
                        "data": [{"languages": ["en"], "items_per_language": 31}]})
