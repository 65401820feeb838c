"""The methods layer and the results store: one schema, resume, never lose work."""

import json

import numpy as np
import pandas as pd
import pytest

from click.testing import CliRunner

from xcomps_utils.lm import scoring
from xcomps_utils.methods import config, probing
from xcomps_utils.pairs import tasks, xcomps
from xcomps_utils.runs import cli, execute as methods, planner, store as S, sweep as SW


@pytest.fixture(scope="module")
def blimp(data_dir):
    return tasks.sample(["blimp_anaphor"], 6, seed=0, data_dir=data_dir)


def test_direct_schema_and_values(lm, blimp, tmp_path):
    res = methods.run(lm, blimp, "direct", store=tmp_path, progress=False, shard_size=4)
    assert list(res.measures.columns) == S.MEASURE_COLUMNS + ["run"]
    w = res.wide().set_index("pair_id").loc[blimp.pair_id.astype(str)]
    assert len(w) == 6 and set(w.method) == {"direct"} and set(w.task) == {"blimp_anaphor"}
    good = scoring.token_scores(lm, list(blimp.good))
    # another batch shape: equal within the float32 guarantee, 1e-5 nats per token
    np.testing.assert_allclose(w.logprob_good, [s.total for s in good], rtol=0,
                               atol=1e-5 * max(len(s.logprobs) for s in good))
    assert not (w.tie.astype(bool) & w.near_tie.astype(bool)).any()
    assert (w.near_tie_tolerance > 0).all()
    np.testing.assert_array_equal(w.correct, (w.delta > 0).astype(float))
    np.testing.assert_allclose(w.delta, w.logprob_good - w.logprob_bad)
    tokens = res.detail("direct_tokens")  # rebuilds a sentence's token scores from the store
    back = scoring.TokenScores.from_table(tokens, blimp.good[0])
    np.testing.assert_allclose(back.logprobs, good[0].logprobs, rtol=0, atol=1e-5)
    assert res.computed == {"direct": 2}
    assert res.compute_seconds()["direct"] > 0  # recorded per shard, summed


def test_complete_run_is_read_without_loading_a_model(lm, blimp, tmp_path, monkeypatch):
    first = methods.run(lm, blimp, "direct", store=tmp_path, progress=False)

    def no_loading(*args):
        raise AssertionError("a model was loaded although the store holds the run")

    planner.load.cache_clear()
    monkeypatch.setattr(planner, "load", no_loading)
    again = methods.run("smollm2-135m-instruct", blimp, ["direct"], store=tmp_path,
                        device="cpu", dtype="float32", progress=False)
    assert again.computed == {"direct": 0} and again.model is None
    pd.testing.assert_frame_equal(first.measures, again.measures)
    assert "read from the results store" in again.describe_model()


def test_changed_parameter_writes_beside_and_keeps_earlier_results(lm, blimp, tmp_path):
    a = methods.run(lm, blimp, "direct", store=tmp_path, progress=False)
    files = sorted((tmp_path / "measures").rglob("*.parquet"))
    before = {p: p.read_bytes() for p in files}
    b = methods.run(lm, blimp, "direct", store=tmp_path, progress=False, bos_policy="drop_first")
    assert a.runs["direct"] != b.runs["direct"]
    assert all(p.read_bytes() == content for p, content in before.items())  # untouched
    runs = S.Store(tmp_path).runs()
    assert set(runs.bos_policy) == {"bos", "drop_first"} and set(runs.status) == {"complete"}
    # drop_first does not score the first token: the sentences' sums differ
    assert not np.allclose(a.wide().logprob_good, b.wide().logprob_good)
    # anyone reads the store with pandas alone; `run` comes from the folder names
    plain = pd.read_parquet(tmp_path / "measures")
    assert len(plain) == len(a.measures) + len(b.measures)
    assert set(plain["run"].astype(str)) == {a.runs["direct"], b.runs["direct"]}
    record = json.loads((tmp_path / "runs" / a.runs["direct"] / "run.json").read_text())
    assert record["key"]["bos_policy"] == "bos" and record["key"]["dtype"] == "float32"
    assert record["provenance"]["torch"] and record["key"]["model_revision"] == lm.revision


def test_finished_shards_are_never_overwritten(tmp_path):
    st = S.Store(tmp_path)
    pairs = pd.DataFrame({"dataset": ["x"], "pair_id": ["1"], "good": ["a"], "bad": ["b"]})
    run = st.open_run({"method": "direct", "model": "m"}, pairs, 1, {})
    rows = pd.DataFrame([{c: "" for c in S.MEASURE_COLUMNS}]).assign(layer=-1, value=1.0)
    run.write_shard(0, rows)
    assert run.compute_seconds() is None  # a shard written without its compute time
    with pytest.raises(S.StoreError, match="already done"):
        run.write_shard(0, rows)
    assert st.open_run({"method": "direct", "model": "m"}, pairs, 7, {}).record["shard_size"] == 1


def test_meta_and_neuro_in_one_call(lm, tmp_path):
    pairs = xcomps.load_languages(["en", "de"], items_per_language=5, seed=0)
    res = methods.run(lm, pairs, ["meta", "neuro"], store=tmp_path, progress=False,
                      shard_size=16)
    meta = res.wide("meta")
    both = meta[meta.order == ""]
    assert len(both) == len(pairs) and len(meta) == 3 * len(pairs)
    np.testing.assert_array_equal(both.correct, (both.delta > 0).astype(float))
    per_order = meta[meta.order != ""].groupby(["lang", "pair_id"]).logprob_good.mean()
    np.testing.assert_allclose(both.set_index(["lang", "pair_id"]).logprob_good,
                               per_order.reindex(both.set_index(["lang", "pair_id"]).index))
    assert ((both.answer_mass > 0) & (both.answer_mass <= 1)).all()
    by_layer, groups = probing.probe_tables(res.wide("neuro"))
    assert by_layer.layer.min() == 0
    assert by_layer.layer.max() == lm.model.config.num_hidden_layers
    cells = groups[["lang", "subset"]]
    assert len(cells) == 2 * 4 + 2 and (cells.subset == "all").sum() == 2  # + one per language
    for col in ("f1", "balanced_accuracy", "null_q95", "nested_f1", "p_permutation"):
        assert pd.concat([by_layer, groups])[col].dropna().between(0, 1).all()
    per_cell = groups.set_index(["lang", "subset"])
    cell_rows = groups[groups.subset != "all"]
    assert (cell_rows.n_sentences == 10).all() and (groups.n_acceptable == 5).all()
    assert (per_cell.loc[("en", "all"), "n_sentences"]
            == len(set(pairs[pairs.lang == "en"].good) | set(pairs[pairs.lang == "en"].bad)))
    assert (groups.leaked_concepts == 0).all() and (groups.leaked_items == 0).all()
    assert (groups.items_whole == 1).all()
    # the permutation null runs for the probes over all negative types only (one per language)
    alls = groups[groups.subset == "all"]
    assert (alls.n_permutations == 199).all() and alls.p_permutation.between(1 / 200, 1).all()
    assert alls.p_adjusted.between(1 / 200, 1).all() and (alls.n_pooled == 2).all()
    assert groups[groups.subset != "all"].p_permutation.isna().all()
    assert by_layer[by_layer.subset == "all"].null_q95.notna().all()
    assert (by_layer.n_sentences > 0).all()
    states = S.Store(tmp_path).arrays(res.runs["neuro"])
    assert len(states) == -(-len(pairs) // 16) and states[0].dtype == np.float32


def test_bad_input_is_refused_with_the_column_or_method_named(lm, blimp):
    with pytest.raises(ValueError, match=r"the 'pairs' parameter must be a pandas DataFrame .*; "
                                         r"these lack \['good'\]"):
        methods.run(lm, blimp.drop(columns="good"), "direct")
    with pytest.raises(ValueError, match=r"the 'methods\[0\]' parameter must be one of the 4 "
                                         r"methods .*; got 'surprisal'"):
        methods.run(lm, blimp, "surprisal")
    with pytest.raises(ValueError, match=r"the 'pairs' parameter must be XCOMPS pairs .* for "
                                         r"Meta; these lack \['property_phrase'"):
        methods.run(lm, blimp, "meta")
    with pytest.raises(ValueError, match="share"):
        methods.run(lm, pd.concat([blimp, blimp]), "direct")
    with pytest.raises(TypeError, match="DataFrame"):
        methods.run(lm, list(blimp.good), "direct")


# --- one planner: the run key is defined once, and stays what it was ---------------------------

#: Run ids recorded before the planner (commit 82df8a8) for these selections: SmolLM2-135M on a
#: CPU in float32, BLiMP anaphor 3 pairs (seed 0), XCOMPS sample en+de 2 items. The key (so the
#: id) must not change, so that existing stores are read, not recomputed.
RECORDED = {
    ("tasks", "direct"): "direct-smollm2-135m-instruct-992acc835242",
    # Neuro's protocol changed (issue 27: ridge probe, 199 permutations of the nested procedure,
    # joint max-T), and so did its numbers: a new id (was neuro-smollm2-135m-instruct-ed971281a746)
    ("tasks", "neuro"): "neuro-smollm2-135m-instruct-71a848eecdf7",
    ("tasks", "token_ppl"): "token_ppl-smollm2-135m-instruct-2045547f6bc3",
    ("languages", "direct"): "direct-smollm2-135m-instruct-4eab23867270",
    ("languages", "meta"): "meta-smollm2-135m-instruct-bd87f74ffb36",
}


def _ids(sets, tmp_path):
    specs = planner.plan("smollm2-135m-instruct", sets, store=tmp_path, device="cpu",
                         dtype="float32")
    return {s.method: s.run_id(planner.identity(s)) for s in specs}


def test_recorded_run_ids_are_kept_without_loading_a_model(data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(planner, "load", lambda *a: pytest.fail("a model was loaded"))
    got = _ids(planner.select(["direct", "neuro", "token_ppl"], ["blimp_anaphor"], n_pairs=3),
               tmp_path)
    got_x = _ids(planner.select(["direct", "meta"], languages=["en", "de"],
                                items_per_language=2), tmp_path)
    assert {("tasks", m): r for m, r in got.items()} | {
        ("languages", m): r for m, r in got_x.items()} == RECORDED


def test_a_release_keeps_run_ids_and_a_method_version_changes_only_its_own(data_dir, tmp_path,
                                                                         monkeypatch):
    """Run keys carry each method's computation version, not the package version: a release
    that changes no numbers keeps the shipped store's ids; bumping one method's version gives that
    method new ids and leaves the others'."""
    import dataclasses

    import xcomps_utils

    sets = planner.select(["direct", "token_ppl"], ["blimp_anaphor"], n_pairs=3)
    before = _ids(sets, tmp_path)
    monkeypatch.setattr(xcomps_utils, "__version__", "99.0.0")
    assert _ids(sets, tmp_path) == before
    monkeypatch.setitem(config.METHODS, "direct",
                        dataclasses.replace(config.METHODS["direct"], version="99.0.0"))
    after = _ids(sets, tmp_path)
    assert after["direct"] != before["direct"] and after["token_ppl"] == before["token_ppl"]


def test_methods_run_cli_and_sweep_give_the_same_run_id(lm, data_dir, tmp_path):
    """One definition of the key: the three entry points of one selection make one run."""
    pairs = tasks.sample(["blimp_anaphor"], 3, 0)
    res = methods.run(lm, pairs, "direct", store=tmp_path, progress=False)
    assert res.runs["direct"] == RECORDED[("tasks", "direct")]
    r = CliRunner().invoke(cli.main, ["run", "direct", "--tasks", "blimp_anaphor", "--n-pairs",
                                      "3", "--device", "cpu", "--dtype", "float32", "--store",
                                      str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert f"{RECORDED[('tasks', 'direct')]}: 3 pairs, read from the store" in r.output
    sweep = SW.parse_sweep({"models": ["smollm2-135m-instruct"], "methods": ["direct"],
                            "device": "cpu", "dtype": "float32",
                            "data": [{"tasks": ["blimp_anaphor"], "n_pairs": 3}]})
    res = SW.run_sweep(sweep, executor="local", store=tmp_path, progress=False)
    assert res.runs.run.tolist() == [RECORDED[("tasks", "direct")]]
    assert res.runs.computed.tolist() == [0]
    prov = S.Store(tmp_path).run(res.runs.run[0]).record["provenance"]["data_sha256"]
    assert prov == tasks.checksums(["blimp_anaphor"])  # no caller passed checksums


def test_xcomps_language_is_a_task(data_dir):
    de = tasks.sample(["xcomps:de"], 5, 0)
    assert len(de) == 5 and set(de.task) == {"xcomps:de"} and set(de.lang) == {"de"}
    assert {"property_phrase", "acceptable_concept"} <= set(de.columns)  # Meta can run
    with pytest.raises(Exception, match=r"unknown XCOMPS language 'dee'.*did you mean"):
        tasks.get("xcomps:dee")
    assert tasks.get("xcomps:ar").files == (("xcomps", "comps_ar.json"),)
    sets = planner.select(["direct", "meta"], ["xcomps:de"], n_pairs=4)
    assert [s.methods for s in sets] == [["direct", "meta"]]
    sweep = SW.parse_sweep({"models": ["smollm2-135m-instruct"], "methods": ["meta"],
                            "data": [{"tasks": ["xcomps:de"], "n_pairs": 4}]})
    assert sweep.data[0].tasks == ["xcomps:de"]


def test_declarations_drive_choices_and_messages():
    run = cli.main.commands["run"]
    choice = {p.name: p.type.choices for p in run.params if hasattr(p.type, "choices")}
    assert list(choice["methods"]) == list(config.METHODS) == list(methods.METHODS)
    assert list(choice["dtype"]) == list(config.DTYPES)
    assert list(choice["bos_policy"]) == list(config.bos_policies())
    assert list(choice["source"]) == list(config.SOURCES)
    sw = {p.name: p.type.choices for p in cli.main.commands["sweep"].params
          if hasattr(p.type, "choices")}
    assert list(sw["executor"]) == list(config.EXECUTORS)
    with pytest.raises(ValueError, match=r"^the 'n_splits' parameter must be an integer >= 2; "
                                         r"got 1$"):
        methods.run("smollm2-135m-instruct", pd.DataFrame(), "neuro", n_splits=1)
    with pytest.raises(ValueError, match=r"^the 'bos_policy' parameter must be one of 'bos', "
                                         r"'drop_first', 'lm_eval'; got 'bos2'$"):
        methods.run("smollm2-135m-instruct", pd.DataFrame(), "direct", bos_policy="bos2")
    with pytest.raises(ValueError, match=r"^x\.yaml: the 'wordings' parameter must be 'all' or a "
                                         r"non-empty list of strings; got 3$"):
        SW.parse_sweep({"models": ["m"], "methods": ["direct"], "wordings": 3,
                        "data": [{"tasks": ["dust"]}]}, file="x.yaml")
