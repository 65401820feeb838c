"""The one scored-pairs table (xcomps_utils.analysis.scored): every chapter's pair table is it."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import bmlama_study, grammar_study, scored, xcomps_paper


def _long(n=60, seed=0):
    """A Direct and a Meta run's long measures over ``n`` pairs in two tasks and languages, with
    rows that are not per pair (a Neuro layer, a perplexity order) beside them."""
    rng = np.random.default_rng(seed)
    pairs = pd.DataFrame({"dataset": "x", "task": np.where(np.arange(n) % 2, "t1", "t2"),
                          "lang": np.array(["en", "de", "fr"])[np.arange(n) % 3],
                          "pair_id": np.arange(n) // 6, "good": "a", "bad": "b",
                          "fact": np.arange(n), "candidate": "c", "candidate_index": 1,
                          "gold_index": 0})
    # pair ids repeat across (task, lang): only the three keys name a pair
    assert not pairs.duplicated(["task", "lang", "pair_id"]).any()
    assert pairs.duplicated(["lang", "pair_id"]).any()
    lp_g, lp_b = -rng.uniform(5, 30, n), -rng.uniform(5, 30, n)
    lp_b[:5] = lp_g[:5]                      # exact ties
    lp_b[5:10] = lp_g[5:10] + 1e-5           # near ties (below the tolerance)
    d = lp_g - lp_b
    per_pair = {"logprob_good": lp_g, "logprob_bad": lp_b, "correct": (d > 0) * 1.0,
                "tie": (d == 0) * 1.0, "near_tie": ((d != 0) & (abs(d) < 1e-3)) * 1.0,
                "near_tie_tolerance": np.full(n, 1e-3), "n_tokens_good": rng.integers(2, 9, n),
                "n_tokens_bad": rng.integers(2, 9, n)}
    per_pair["logprob_mean_good"] = lp_g / per_pair["n_tokens_good"]
    per_pair["logprob_mean_bad"] = lp_b / per_pair["n_tokens_bad"]
    ids = pairs[["dataset", "task", "lang", "pair_id"]].assign(pair_id=pairs.pair_id.astype(str))
    rows = [ids.assign(method="direct", measure=k, value=np.asarray(v, float), order="", layer=-1)
            for k, v in per_pair.items()]
    rows.append(ids.assign(method="meta", measure="correct", value=rng.integers(0, 2, n) * 1.0,
                           order="", layer=-1))
    rows.append(ids.assign(method="direct", measure="correct", value=9.0, order="ab", layer=-1))
    rows.append(ids.assign(method="direct", measure="correct", value=9.0, order="", layer=3))
    return pairs, pd.concat(rows, ignore_index=True), d


def test_every_chapter_table_is_the_one_table():
    pairs, measures, d = _long()
    one = scored.scored_pairs(measures, pairs)
    assert len(one) == len(pairs) and set(one.direct_correct) == {0.0, 1.0}  # no order/layer row
    want = np.where(d == 0, "tie", np.where(abs(d) < 1e-3, "near_tie",
                                            np.where(d > 0, "right", "wrong")))
    assert list(one.direct_decision) == list(want)
    assert one.meta_decision.isin(["right", "wrong"]).all()
    cols = ["task", "lang", "pair_id", "direct_logprob_good", "direct_decision",
            "direct_mean_decision"]
    for table in (xcomps_paper.pair_table(measures, pairs),
                  grammar_study.pair_table(measures, pairs),
                  bmlama_study.scored_pairs(measures, pairs)):
        pd.testing.assert_frame_equal(table[cols].reset_index(drop=True), one[cols])


def test_a_pair_scored_twice_is_an_error_not_a_silent_first():
    pairs, measures, _ = _long()
    twice = pd.concat([measures, measures[measures.method == "direct"]])
    with pytest.raises(ValueError, match="repeat a pair and measure"):
        scored.scored_pairs(twice, pairs)


def test_inner_keeps_the_scored_pairs_left_keeps_all():
    pairs, measures, _ = _long()
    half = measures[measures.pair_id.astype(int) < 5]
    assert len(scored.scored_pairs(half, pairs, methods=("direct",), how="inner")) < len(pairs)
    left = scored.scored_pairs(half, pairs, methods=("direct",))
    assert len(left) == len(pairs) and left.direct_decision.isna().any()


def test_decided_rows_reads_one_rule_for_every_judge():
    pairs, measures, d = _long()
    one = scored.scored_pairs(measures, pairs)
    kept = scored.decided_rows(one, "direct_correct")
    assert len(kept) == len(one) - 10          # 5 ties and 5 near ties left out
    # the same rule without the decision column (flags only), and for the unnamed judge
    flags = one.drop(columns=["direct_decision"])
    assert scored.decided_rows(flags, "direct_correct").index.equals(kept.index)
    bare = flags.rename(columns={"direct_correct": "correct", "direct_tie": "tie",
                                 "direct_near_tie": "near_tie"})
    assert scored.decided_rows(bare, "correct").index.equals(kept.index)
    # a column not named as a judge's: its NaN is the no-decision
    top1 = one.assign(top1_sum=np.where(np.arange(len(one)) < 7, np.nan, 1.0))
    assert len(scored.decided_rows(top1, "top1_sum")) == len(one) - 7
    with pytest.raises(ValueError, match="'correct' parameter must be a column of the table; got 'cond_correct'"):
        scored.decided_rows(one, "cond_correct")


def test_the_token_level_accuracy_table_reads_the_one_rule():
    """Direct and conditional Direct by language and type leave out each judge's own ties and
    near ties (the table once averaged ``delta > 0`` over every pair, a tie counted wrong)."""
    from xcomps_utils.analysis import concept_prior

    rng = np.random.default_rng(3)
    n = 80
    d = pd.DataFrame({"lang": np.where(np.arange(n) % 2, "en", "de"),
                      "negative_sample_type": np.where(np.arange(n) % 4 < 2, "random", "overlap"),
                      "direct_correct": rng.integers(0, 2, n) * 1.0,
                      "cond_correct": rng.integers(0, 2, n) * 1.0, "cond_tie": 0.0})
    d["direct_decision"] = np.where(d.direct_correct == 1, "right", "wrong")
    d.loc[:9, "direct_decision"] = "near_tie"          # the run's near ties
    d.loc[:9, "direct_correct"] = 0.0                  # counted wrong by a plain mean
    d.loc[10:14, "cond_tie"], d.loc[10:14, "cond_correct"] = 1.0, 0.0
    got = concept_prior.accuracy_by_type(d, ["en", "de"])
    keep = d.iloc[10:]
    want = keep[keep.lang == "en"].groupby("negative_sample_type").direct_correct.mean()
    assert got.loc["en", "Direct: random"] == pytest.approx(want["random"])
    keep = d.drop(index=range(10, 15))
    want = keep[keep.lang == "de"].groupby("negative_sample_type").cond_correct.mean()
    assert got.loc["de", "conditional: overlap"] == pytest.approx(want["overlap"])
    assert list(got.index) == ["en", "de"] and got.shape == (2, 4)


def test_accuracy_table_and_decided_rows_decide_every_pair_alike():
    """Issue 43 item 6: stats.accuracy_table counts its ties, near ties and decided pairs through
    the one entry point (scored.decision_labels), whichever columns a table carries: a decision
    column, or tie/near-tie flags; the rows it counts as decided are decided_rows'."""
    from xcomps_utils.analysis import stats

    rng = np.random.default_rng(3)
    n = 200
    correct = rng.integers(0, 2, n).astype(float)
    tie, near = np.zeros(n), np.zeros(n)
    tie[:7], near[5:20] = 1, 1           # 2 pairs flagged both: a tie wins
    correct[-4:] = np.nan                 # no decision at all
    flags = pd.DataFrame({"task": "t", "correct": correct, "tie": tie, "near_tie": near})
    from xcomps_utils.lm.precision import decisions
    labelled = flags.assign(decision=decisions(flags.rename(columns={
        "correct": "j_correct", "tie": "j_tie", "near_tie": "j_near_tie"}), "j"))
    for table in (flags, labelled[["task", "correct", "decision"]]):
        row = stats.accuracy_table(table, by="task").iloc[0]
        kept = scored.decided_rows(table, "correct")
        assert (row.ties, row.near_ties, row.decided) == (7, 13, n - 4 - 20)
        assert row.decided == len(kept) and row.correct == kept["correct"].sum()


def test_conditional_direct_leaves_its_near_ties_out_as_direct_does():
    """Issue 43 item 6: conditional Direct is decided by the one rule (precision.decide with the
    run's bound), so a near tie of it is left out of its accuracy instead of counted by its sign
    (concept_prior.accuracy_by_type read the bare sign before)."""
    from xcomps_utils.analysis import concept_prior, decompose

    d = pd.DataFrame({"lang": "en", "negative_sample_type": "random",
                      "cond_delta": [2.0, -1.5, 3e-5, -2e-5, 0.0, 0.4],
                      "direct_near_tie_tolerance": 1e-4})
    d = d.assign(cond_correct=(d.cond_delta > 0) * 1.0, cond_tie=(d.cond_delta == 0) * 1.0,
                 direct_correct=1.0, direct_decision="right")
    judged = decompose.conditional_decisions(d)
    assert list(judged.cond_decision) == ["right", "wrong", "near_tie", "near_tie", "tie", "right"]
    acc = concept_prior.accuracy_by_type(judged, ["en"])
    assert acc.loc["en", "conditional: random"] == pytest.approx(2 / 3)
    before = concept_prior.accuracy_by_type(d, ["en"])  # signs only: the two near ties counted
    assert before.loc["en", "conditional: random"] == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="'pairs' parameter must hold 'cond_delta'"):
        decompose.conditional_decisions(d.drop(columns="cond_delta"))


def test_one_slope_for_every_trend():
    from xcomps_utils.analysis import bmlama_study, claims, xcomps_paper

    assert not hasattr(xcomps_paper, "_slope") and not hasattr(bmlama_study, "_slope")
    x, v = np.array([0, 1, 2, np.nan, 2]), np.array([1.0, 2.5, 5.0, 9.0, np.nan])
    assert claims.slope(v, x) == pytest.approx(2.0)
    assert np.isnan(claims.slope(v, np.ones(5)))
