"""Meta and Neuro on BMLAMA pairs (issue 28): Meta's question lists a fact's candidates (two
orders), with its own template file in the run key; Neuro keeps a prompt's facts whole across
folds and leaves out pairs whose distractor is true."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.lm import scoring
from xcomps_utils.methods import meta
from xcomps_utils.pairs import bmlama, data, tasks
from xcomps_utils.pairs.data import DataError
from xcomps_utils.runs import execute as methods, planner


@pytest.fixture(scope="module")
def en_pairs(data_dir):
    return tasks.sample(["bmlama17:en"], 18, 0, data_dir=data_dir)  # whole facts, >= 18 pairs


def test_meta_lists_every_candidate_in_both_orders(en_pairs):
    prompts = meta.build_meta_prompts(en_pairs)
    assert len(prompts) == 2 * len(en_pairs)
    for (pair, order), ctx in prompts.set_index(["pair", "order"])["context"].items():
        r = en_pairs.iloc[pair]
        cands = list(r.candidates) if order == 0 else list(r.candidates)[::-1]
        assert f"Options: {', '.join(cands)}." in ctx
        assert r.prompt.replace("<mask>", "___") in ctx and ctx.endswith("\nAnswer:")
    assert (prompts.answer_good == " " + en_pairs.gold.iloc[prompts.pair].to_numpy()).all()
    assert (prompts.answer_bad == " " + en_pairs.candidate.iloc[prompts.pair].to_numpy()).all()


def test_meta_on_bmlama_scores_the_gold_and_the_distractor_of_one_prompt(lm, en_pairs, tmp_path):
    res = methods.run(lm, en_pairs, "meta", store=tmp_path, progress=False)
    w = res.wide("meta")
    both = w[w.order == ""].set_index("pair_id").loc[en_pairs.pair_id]
    assert len(both) == len(en_pairs)
    np.testing.assert_array_equal(both.correct, (both.delta > 0).astype(float))
    # the gold answers the same two prompts in every pair of its fact: one value per fact
    per_fact = both.assign(fact=en_pairs.fact.to_numpy()).groupby("fact").logprob_good.nunique()
    assert (per_fact == 1).all()
    # against the scorer on the prompt built by hand (both orders averaged)
    r = en_pairs.iloc[0]
    ctx = [f'Question: Which option fills the blank in this sentence: '
           f'"{r.prompt.replace("<mask>", "___")}"? Options: {", ".join(c)}.\nAnswer:'
           for c in (list(r.candidates), list(r.candidates)[::-1])]
    s = scoring.continuation_scores(lm, ctx * 2, [" " + r.gold] * 2 + [" " + r.candidate] * 2,
                                    shared_prefix=False)
    assert abs(both.logprob_good.iloc[0] - (s[0].total + s[1].total) / 2) < 1e-4
    assert abs(both.logprob_bad.iloc[0] - (s[2].total + s[3].total) / 2) < 1e-4
    key = res.provenance("meta")["key"]
    assert key["parameters"]["bmlama_templates_sha256"] == meta.bmlama_meta_templates_sha256()
    assert key["parameters"]["templates_sha256"] == meta.meta_templates_sha256()


def test_meta_key_follows_the_bmlama_templates_only_for_bmlama_pairs(en_pairs, tmp_path,
                                                                      monkeypatch):
    def ids():
        sets = planner.select(["meta"], ["bmlama17:en"], n_pairs=18) + planner.select(
            ["meta"], languages=["en"], items_per_language=2)
        specs = planner.plan("smollm2-135m-instruct", sets, store=tmp_path, device="cpu",
                             dtype="float32")
        return [s.run_id(planner.identity(s)) for s in specs]

    before = ids()
    monkeypatch.setattr(meta, "bmlama_meta_templates_sha256", lambda path=None: "0" * 64)
    after = ids()
    assert before[0] != after[0] and before[1] == after[1]  # BMLAMA's id moves, XCOMPS' stays


def test_meta_refuses_a_language_without_template_naming_those_with_one(data_dir, monkeypatch):
    monkeypatch.setattr(planner, "load", lambda *a: pytest.fail("a model was loaded"))
    pairs = tasks.sample(["bmlama53:pl"], 5, 0, data_dir=data_dir)
    with pytest.raises(DataError, match=r"no template for language\(s\) \['pl'\].*templates "
                                        r"exist for \['ar', 'ca', 'de'"):
        methods.run("smollm2-135m-instruct", pairs, "meta", device="cpu")
    have = meta.load_bmlama_meta_templates()
    assert set(bmlama.languages("bmlama17")) <= set(have)
    assert all(t["review"].endswith("not reviewed by a native speaker") for t in have.values())


def test_bmlama_template_file_errors_name_language_and_field(tmp_path):
    good = json.loads(meta.bmlama_meta_templates_file().read_text(encoding="utf-8"))
    bad = json.loads(json.dumps(good))
    bad["templates"]["en"]["question"] = "Which one: {statement}?"
    (tmp_path / "t.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.json, language 'en', field 'question': "
                                        r"placeholders \['statement'\]"):
        meta.load_bmlama_meta_templates(tmp_path / "t.json")
    bad = json.loads(json.dumps(good))
    del bad["templates"]["ja"]["blank"]
    (tmp_path / "u.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"u\.json, language 'ja': the 'blank' field must be a "
                                        r"string that is not blank; it is missing"):
        meta.load_bmlama_meta_templates(tmp_path / "u.json")


@pytest.fixture(scope="module")
def shared_prompt_pairs(data_dir):
    """Seven facts of bmlama17:en: two sharing one prompt (several true answers, so a pair of
    one has the other's gold as its distractor), and five others."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)
        pairs = bmlama.load_bmlama("bmlama17", "en", data_dir)
    pairs = pairs.assign(task="bmlama17:en")
    true = pairs[pairs.distractor_true]
    prompt = true.prompt.iloc[0]
    two = pairs[pairs.prompt == prompt].fact.unique()[:2]
    others = pairs[~pairs.prompt.isin([prompt])].drop_duplicates("prompt").fact.iloc[:5]
    return pairs[pairs.fact.isin(list(two) + list(others))].reset_index(drop=True)


def test_neuro_on_bmlama_keeps_a_prompt_whole_and_leaves_out_true_distractors(
        lm, shared_prompt_pairs, tmp_path):
    pairs = shared_prompt_pairs
    assert pairs.distractor_true.any() and pairs.drop_duplicates("fact").prompt.duplicated().any()
    res = methods.run(lm, pairs, "neuro", store=tmp_path, progress=False, probe_by=[["lang"]])
    g = res.wide("neuro")
    g = g[g.layer == -1].iloc[0]
    kept = pairs[~pairs.distractor_true]
    assert g.n_true_distractors == pairs.distractor_true.sum()
    assert g.n_sentences == len(set(kept.good) | set(kept.bad))
    assert g.n_acceptable == kept.fact.nunique()
    assert g.n_groups == kept.prompt.nunique() == 6  # two facts, one prompt: one group
    assert g.leaked_items == 0 and g.items_whole == 1 and g.purged == 0
    assert 0 <= g.nested_balanced_accuracy <= 1 and g.n_permutations == 199
    # without the exclusion, a sentence would be true in one fact and false in the other
    assert set(pairs[pairs.distractor_true].bad) <= set(pairs.good)
    key = res.provenance("neuro")["key"]
    used = pd.read_parquet(tmp_path / "runs" / res.runs["neuro"] / "pairs.parquet")
    assert {"prompt", "distractor_true"} <= set(used) and key["n_pairs"] == len(pairs)


def test_the_chapters_meta_and_neuro_table_reads_the_runs(lm, data_dir, tmp_path):
    from xcomps_utils.analysis import bmlama_scoring
    from xcomps_utils.pages import chapters

    pairs = tasks.sample(["bmlama17:en", "bmlama17:vi"], 90, 0, data_dir=data_dir)
    run = chapters.runner(store=str(tmp_path), progress=False)
    t = bmlama_scoring.method_scores(lambda model, p, m, **kw: run(lm, p, m, **kw), "x", pairs)
    assert list(t.index) == ["en", "vi"]
    assert ((t.meta_low <= t.meta) & (t.meta <= t.meta_high)).all()
    assert (t.meta_pairs <= (~pairs.distractor_true).groupby(pairs.lang).sum()).all()
    assert t.neuro.between(0, 1).all() and t.neuro_p_adjusted.between(0, 1).all()
    assert (t.neuro_sentences > 50).all()
    res = run(lm, pairs, "meta")                       # read again: Meta's own per-pair decisions
    w = res.wide("meta")
    w = w[(w.order == "") & w.pair_id.isin(pairs[~pairs.distractor_true].pair_id + "")]
    assert t.meta_pairs.sum() <= len(w)


def test_the_chapters_untrained_control_table_pairs_the_same_facts_and_frames(lm, data_dir,
                                                                               tmp_path):
    """bmlama_scoring.control_gaps asks for ``random:<model>`` on the same facts and control
    frames as the model's table: served the trained model under that name (the same run ids,
    read from the store), every gap is exactly 0."""
    from xcomps_utils.analysis import bmlama_scoring, bmlama_study as B
    from xcomps_utils.pages import chapters

    runner, asked = chapters.runner(store=str(tmp_path), progress=False), []

    def run(model, p, m, **kw):
        asked.append(model)
        return runner(lm, p, m, **kw)
    langs, facts = {"bmlama17": ["en", "vi"]}, {"bmlama17": 2}
    s = bmlama_scoring.score(run, ["m"], "bmlama17", langs["bmlama17"], 2)
    tables = {"bmlama17": {"m": B.language_table(
        *(f[~f.distractor_true] for f in (s.scored["m"], s.scored_control["m"])), n_boot=200)}}
    asked.clear()
    g = bmlama_scoring.control_gaps(run, tables, langs, facts, n_boot=200)["bmlama17", "m"]
    assert asked == ["random:m", "random:m"]  # the facts, then their control frames
    assert list(g.index) == ["en", "vi", "mean"] and (g["gap"] == 0).all()
    assert np.allclose(g["trained_pairwise"], g["control_pairwise"])
    assert g.at["mean", "ci_low"] == g.at["mean", "ci_high"] == 0


def test_the_chapters_methods_read_the_first_facts_of_the_same_sample(data_dir):
    """methods_facts: Meta and Neuro on the first k of the sampled facts, the very pairs (and so
    the run key) a k-fact sample gives, a subset of the larger sample's facts."""
    from xcomps_utils.analysis import bmlama_scoring

    langs = ["en", "vi"]
    big = tasks.sample([f"bmlama17:{lang}" for lang in langs], 9 * 7, 0, data_dir=data_dir)
    seen = []
    bmlama_scoring.method_scores(lambda model, p, m, **kw: seen.append(p), "x", big, methods=(),
                                 facts=3)
    small = tasks.sample([f"bmlama17:{lang}" for lang in langs], 9 * 3, 0, data_dir=data_dir)
    pd.testing.assert_frame_equal(seen[0], small)
    assert set(small["item"]) < set(big["item"]) and len(small) < len(big)
    bmlama_scoring.method_scores(lambda model, p, m, **kw: seen.append(p), "x", big, methods=(),
                                 facts=None)   # every pair
    assert seen[1] is big
