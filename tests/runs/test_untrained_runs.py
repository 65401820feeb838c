"""The untrained control ``random:<model>`` through the runs: every method, the results store
(content-addressed: the same spec twice is one run, read the second time), the command line."""

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from xcomps_utils.lm import models
from xcomps_utils.pairs import tasks, xcomps
from xcomps_utils.runs import cli, execute, store as S

CPU = {"device": "cpu", "dtype": "float32", "progress": False}


def test_a_control_is_one_run_of_the_store_and_read_back(tiny_folder, data_dir, tmp_path):
    pairs = tasks.sample(["blimp_anaphor"], 4, seed=0)
    name = f"random:{tiny_folder}"
    first = execute.run(name, pairs, ["direct"], store=tmp_path, **CPU)
    assert first.computed == {"direct": 1} and first.model.name == name
    record = first.provenance("direct")
    assert record["key"]["model"] == name
    assert record["key"]["model_revision"] == models.model_identity(
        name, device="cpu")["model_revision"]
    assert record["provenance"]["model_source"]["untrained"]["seed"] == 0

    again = execute.run(name + "@seed=0", pairs, ["direct"], store=tmp_path, **CPU)
    assert again.runs == first.runs and again.computed == {"direct": 0}
    assert again.model is None  # read from the store: nothing loaded
    pd.testing.assert_frame_equal(again.measures, first.measures)

    logprob = {}
    for other in (name, name + "@seed=1", str(tiny_folder)):
        res = execute.run(other, pairs, ["direct"], store=tmp_path, **CPU)
        logprob[other] = res.wide("direct").logprob_good.to_numpy()
        assert (res.runs == first.runs) == (other == name)
    assert not np.allclose(logprob[name], logprob[name + "@seed=1"])
    assert not np.allclose(logprob[name], logprob[str(tiny_folder)])


def test_meta_and_neuro_run_a_control(tiny_folder, data_dir, tmp_path):
    name = f"random:{tiny_folder}"
    meta = execute.run(name, xcomps.load_languages(["en"], items_per_language=1, seed=0),
                       ["meta"], store=tmp_path, **CPU)
    neuro = execute.run(name, xcomps.load_languages(["en"], items_per_language=3, seed=0),
                        ["neuro"], store=tmp_path, probe_by=[["lang"]], n_splits=3,
                        inner_splits=2, **CPU)
    for res, method in ((meta, "meta"), (neuro, "neuro")):
        assert res.computed[method] >= 1 and res.provenance(method)["key"]["model"] == name
    assert meta.measures.query("measure == 'correct'").value.notna().all()
    probe = neuro.measures.query("measure == 'nested_balanced_accuracy'")
    assert len(probe) == 1 and 0 <= probe.value.iat[0] <= 1


def test_the_command_line_names_the_control():
    r = CliRunner().invoke(cli.main, ["run", "--help"])
    assert r.exit_code == 0 and "random:<model>" in r.output
    r = CliRunner().invoke(cli.main, ["tasks"])
    assert r.exit_code == 0 and "random:<model>" in r.output


# --- the real SmolLM2 ------------------------------------------------------------------------------

def test_untrained_smollm2_decides_dust_pairs_by_their_length(lm, data_dir, tmp_path):
    """The control scores about -ln V nats a token, so it prefers the text of fewer tokens in
    every pair whose texts differ in length; the trained model does not always."""
    pairs = tasks.sample(["dust"], 40, seed=0)
    trained = execute.run(lm, pairs, "direct", store=tmp_path, progress=False).wide("direct")
    res = execute.run("random:smollm2-135m-instruct", pairs, "direct", store=tmp_path, **CPU)
    control = res.wide("direct")
    assert (control.pair_id.tolist() == trained.pair_id.tolist()
            and control.n_tokens_good.tolist() == trained.n_tokens_good.tolist())
    differ = (control.n_tokens_good != control.n_tokens_bad).to_numpy()
    shorter_good = (control.n_tokens_good < control.n_tokens_bad).to_numpy()
    assert differ.sum() >= 30

    def picks_shorter(w):
        return ((w.delta > 0).to_numpy() == shorter_good)[differ]

    assert picks_shorter(control).all() and not picks_shorter(trained).all()
    assert (control.correct != trained.correct).any()
    uniform = -math.log(len(lm.tokenizer))
    per_token = (control.logprob_good / control.n_tokens_good).to_numpy()
    assert np.all(np.abs(per_token - uniform) < 1.0)
    assert (trained.logprob_good / trained.n_tokens_good).mean() > per_token.mean() + 3

    again = execute.run("random:smollm2-135m-instruct@seed=0", pairs, "direct", store=tmp_path,
                        **CPU)
    assert again.runs == res.runs and again.computed == {"direct": 0} and again.model is None


@pytest.mark.slow
def test_every_method_runs_the_control_from_the_command_line(data_dir, tmp_path):
    args = ["run", "direct", "meta", "neuro", "--languages", "en", "--items-per-language", "5",
            "--model", "random:smollm2-135m-instruct", "--device", "cpu", "--dtype", "float32",
            "--store", str(tmp_path), "--quiet"]
    r = CliRunner().invoke(cli.main, args)
    assert r.exit_code == 0, r.output
    for method in ("direct", "meta", "neuro"):
        assert f"{method}-random--smollm2-135m-instruct-" in r.output
    assert r.output.count("computed") == 3
    store = S.Store(tmp_path)
    measures = store.measures(store.ids())
    probe = measures.query("method == 'neuro' and measure == 'nested_balanced_accuracy'")
    assert "all" in probe.subset.tolist()  # the probe over the language's pairs was fitted
    r = CliRunner().invoke(cli.main, args)
    assert r.exit_code == 0 and r.output.count("read from the store") == 3, r.output
