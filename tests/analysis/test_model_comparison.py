"""Every model of a store side by side (xcomps_utils.analysis.model_comparison), on small stores
made here of real runs copied from the shipped store (store/): the run used per model and task,
the accuracy a row prints against the run's own decided pairs, the drawn chance level, a model
added to the store, Neuro's groups and the verdicts per model."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import model_comparison as mc
from xcomps_utils.analysis import stats
from xcomps_utils.analysis.scored import decided_rows, scored_pairs
from xcomps_utils.runs.store import Store

SMOL, GEMMA = "direct-smollm2-135m-instruct", "direct-gemma-3-270m"
MAIN = f"{SMOL}-b5ff17343d00"          # direct_scoring: blimp_anaphor, blimp_animacy, crows, dust
ANAPHOR_BOS = f"{SMOL}-2fcc8a5d9f2e"   # first_token: blimp_anaphor, 1,000 pairs, bos
ANAPHOR_DROP = f"{SMOL}-0fb152d4d339"  # first_token: blimp_anaphor, 1,000 pairs, drop_first
FIVE = f"{SMOL}-9bee6de7d6bd"          # reproducibility: 5 pairs of blimp_anaphor, bos
GEMMA_BLIMP = f"{GEMMA}-0592382cf16c"  # direct_scoring's second model: blimp_anaphor, animacy
XCOMPS_CONTROL = f"{GEMMA}-d665815409aa"  # xcomps_token_level's mismatched continuations
XCOMPS_FIVE = f"{GEMMA}-69e96aeb6c9c"  # XCOMPS, 5 languages (LANGS), 120 pairs each
LANGS = ("de", "en", "fr", "tr", "zh")


def _chosen(st: Store) -> pd.DataFrame:
    runs = st.runs()
    pairs = pd.concat([st.run(r).pairs().assign(run=r) for r in runs["run"]], ignore_index=True)
    return mc.choose_runs(runs, pairs)


def _direct(st: Store) -> pd.DataFrame:
    chosen = _chosen(st)
    return mc.scored_by_model(st.measures(list(chosen["run"].unique())), chosen, "direct")


def test_the_run_used_is_the_books_convention_then_the_most_pairs_then_the_larger_run(tmp_path,
                                                                                     store_of):
    st = store_of(tmp_path, [MAIN, ANAPHOR_BOS, ANAPHOR_DROP, FIVE])
    anaphor = _chosen(st).set_index("task").loc["blimp:anaphor_gender_agreement"]
    # three runs hold its 1,000 pairs: the larger run (4,000 pairs) is taken
    assert anaphor["run"] == MAIN and anaphor["pairs"] == 1000
    assert anaphor["other_runs"] == (f"{ANAPHOR_BOS} (1,000), {FIVE} (5), {ANAPHOR_DROP} (1,000)")
    # of two runs of as many pairs, the one under the book's convention
    st = store_of(tmp_path / "b", [ANAPHOR_DROP, ANAPHOR_BOS])
    assert _chosen(st)["run"].tolist() == [ANAPHOR_BOS]
    # the convention first: 5 pairs under bos before 1,000 under drop_first
    st = store_of(tmp_path / "c", [ANAPHOR_DROP, FIVE])
    assert _chosen(st)["run"].tolist() == [FIVE]


def test_control_pairs_are_not_the_tasks(tmp_path, store_of):
    """The token-level page's mismatched continuations (ids ``<own>|cont:<other>``) hold as many
    pairs of each XCOMPS language as the task's own run: they are not XCOMPS' pairs."""
    st = store_of(tmp_path, [XCOMPS_CONTROL, XCOMPS_FIVE])
    chosen = _chosen(st)
    assert set(chosen["run"]) == {XCOMPS_FIVE} and not chosen["other_runs"].any()
    assert sorted(chosen["task"]) == [f"xcomps:{x}" for x in LANGS]
    assert (chosen["pairs"] == 120).all() and (chosen["benchmark"] == "xcomps").all()
    assert _chosen(store_of(tmp_path / "b", [XCOMPS_CONTROL])).empty


def test_a_rows_accuracy_is_its_runs_decided_pair_mean_and_its_chance_is_drawn(tmp_path,
                                                                              store_of):
    st = store_of(tmp_path, [MAIN])
    table = mc.accuracy(_direct(st), ["benchmark", "lang"], n_boot=200).set_index("benchmark")
    # the run's own decided pairs, read without the module
    m = st.measures([MAIN])
    own = scored_pairs(m, st.run(MAIN).pairs())
    decided = decided_rows(own, "direct_correct")
    for dataset in ("blimp", "crows_pairs", "dust"):
        d = decided[decided["dataset"] == dataset]
        row = table.loc[dataset]
        assert row["lang"] == "en" and row["n"] == (own["dataset"] == dataset).sum()
        assert row["decided"] == len(d) and row["left_out"] == 0
        assert row["accuracy"] == pytest.approx(d["direct_correct"].mean(), abs=1e-12)
        k = int(d["direct_correct"].sum())
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(stats.wilson_interval(k, len(d)))
    # DUST's acceptable sentence is the shorter one in most pairs: its chance level is drawn
    dust = own[own["dataset"] == "dust"]
    diff = dust["direct_n_tokens_bad"] - dust["direct_n_tokens_good"]
    level = ((diff > 0) + 0.5 * (diff == 0)).mean()
    assert table.loc["dust", "chance"] == pytest.approx(level) and level > 0.6
    assert table.loc["dust", "chance_low"] < level < table.loc["dust", "chance_high"]


def test_a_model_added_to_the_store_is_a_new_column_on_the_same_pairs(tmp_path, store_of):
    st = store_of(tmp_path, [FIVE])
    one = mc.side_by_side(mc.accuracy(_direct(st), n_boot=100))
    assert list(one.columns) == ["benchmark", "lang", "pairs", "smollm2-135m-instruct",
                                 "smollm2-135m-instruct: chance"]
    st = store_of(tmp_path, [GEMMA_BLIMP])
    direct = _direct(st)
    table = mc.accuracy(direct, n_boot=100)
    two = mc.side_by_side(table)
    assert list(two.columns)[3:] == ["gemma-3-270m", "gemma-3-270m: chance",
                                     "smollm2-135m-instruct", "smollm2-135m-instruct: chance",
                                     "most accurate", "apart"]
    # the row compares both models on the 5 pairs SmolLM2 scored; Gemma's other 1,995 are out
    gemma = table[table["model"] == "gemma-3-270m"].iloc[0]
    assert gemma["n"] == 5 and gemma["left_out"] == 1995 and two["pairs"].tolist() == [5]
    ids = set(Store(st.root).run(FIVE).pairs()["pair_id"])
    m = Store(st.root).measures([GEMMA_BLIMP])
    own = decided_rows(scored_pairs(m, Store(st.root).run(GEMMA_BLIMP).pairs()), "direct_correct")
    own = own[(own["task"] == "blimp_anaphor") & own["pair_id"].isin(ids)]
    assert gemma["accuracy"] == pytest.approx(own["direct_correct"].mean())
    words = mc.summary_markdown(table)
    assert "**2 models**" in words and "1 row (a benchmark in a language); 1 of them" in words
    assert "1,995 pairs that only some of a row's models scored are left out of 1 row" in words


def test_most_accurate_and_apart_read_the_intervals():
    table = pd.DataFrame({"benchmark": ["b"] * 3, "lang": ["en"] * 3, "model": ["x", "y", "z"],
                          "n": [100] * 3, "accuracy": [0.9, 0.6, 0.5],
                          "ci_low": [0.85, 0.5, 0.4], "ci_high": [0.95, 0.7, 0.6],
                          "chance": [0.5] * 3, "left_out": [0] * 3})
    wide = mc.side_by_side(table)
    assert wide.loc[0, "most accurate"] == "x" and wide.loc[0, "apart"] == "yes"
    assert wide.loc[0, "x"] == "0.900 [0.850, 0.950]"
    close = table.assign(ci_low=[0.55, 0.5, 0.4])  # x's interval now overlaps y's
    assert mc.side_by_side(close).loc[0, "apart"] == "no"
    assert "`x` is the most accurate on **1 of the 1**, its interval above every other " \
           "model's on 0 of them" in mc.summary_markdown(close)


def test_neuro_groups_come_from_the_run_with_the_most_sentences(tmp_path, store_of):
    small, large = "neuro-gemma-3-270m-edac27d1ce96", "neuro-gemma-3-270m-f0fc82dc90c0"
    st = store_of(tmp_path, [small])
    alone = mc.neuro_scores(st.measures([small]), st.runs())
    m = st.measures([small])
    en = m[(m["lang"] == "en") & (m["subset"] == "all")]
    row = alone[(alone["lang"] == "en") & (alone["subset"] == "all")].iloc[0]
    assert row["probe"] == en.loc[en["measure"] == "nested_balanced_accuracy", "value"].item()
    by_layer = en[(en["measure"] == "balanced_accuracy") & (en["layer"] >= 0)]
    assert row["best_layer"] == by_layer.loc[by_layer["value"].idxmax(), "layer"]
    assert row["best_layer_score"] == by_layer["value"].max() and row["benchmark"] == "xcomps"
    st = store_of(tmp_path, [large])
    both = mc.neuro_scores(st.measures([small, large]), st.runs())
    # as many sentences in English: the larger run; its other languages are its own
    assert set(both["run"]) == {large} and both["lang"].nunique() == 7
    assert not np.isclose(both.set_index(["lang", "subset"]).loc[("en", "all"), "probe"],
                          row["probe"])


def test_verdicts_per_model_are_the_confirmatory_ones():
    rows = pd.DataFrame({"page": ["p", "p", "p", "q"], "claim": ["c", "c", "d", "e"],
                         "scope": ["s"] * 4, "model": ["x", "y", "x", ""],
                         "verdict": ["supported", "inconclusive", "contradicted", "supported"],
                         "role": ["confirmatory", "confirmatory", "exploratory",
                                  "confirmatory"]})
    out = mc.verdicts_by_model(rows)
    assert out.to_dict("records") == [
        {"page": "p", "claim": "c", "scope": "s", "(not named)": "—", "x": "supported",
         "y": "inconclusive"},
        {"page": "q", "claim": "e", "scope": "s", "(not named)": "supported", "x": "—",
         "y": "—"}]
    assert mc.verdicts_markdown(rows) == ("`x`: 1 supported (of 1 tests); `y`: 1 inconclusive "
                                          "(of 1 tests); `(not named)`: 1 supported (of 1 "
                                          "tests).")


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"^the 'scored' parameter must be a table with the "
                                         r"columns .*without \['nope'\]$"):
        mc.accuracy(pd.DataFrame(columns=["task", "pair_id", "model", "item", "correct",
                                          "decision", "run"]), "nope")
    scored = pd.DataFrame(columns=["benchmark", "lang", "task", "pair_id", "model", "item",
                                   "correct", "decision", "run"])
    with pytest.raises(ValueError, match=r"^the 'n_boot' parameter must be an integer >= 1; "
                                         r"got 0$"):
        mc.accuracy(scored, n_boot=0)
    with pytest.raises(ValueError, match="the 'runs' parameter must be a table"):
        mc.choose_runs(pd.DataFrame({"run": []}), pd.DataFrame())
