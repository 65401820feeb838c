import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import stats
from xcomps_utils.runs import results


def test_wilson_interval_known_values():
    lo, hi = stats.wilson_interval(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = stats.wilson_interval(76, 100)
    assert (lo, hi) == (pytest.approx(0.6677, abs=1e-4), pytest.approx(0.8331, abs=1e-4))
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 2)


def test_accuracy_table_leaves_ties_and_near_ties_out_of_the_denominator():
    # The case: 20 pairs of principle_A_case_2, 5 of them identical (ties), 12 right.
    df = pd.DataFrame({"task": ["a"] * 20,
                       "correct": [True] * 12 + [False] * 3 + [False] * 5,
                       "tie": [False] * 15 + [True] * 5})
    row = stats.accuracy_table(df).iloc[0]
    assert (row["n"], row["ties"], row["decided"], row["correct"]) == (20, 5, 15, 12)
    assert row["accuracy"] == pytest.approx(0.8)  # was 12/20 = 0.60
    lo, hi = stats.wilson_interval(12, 15)
    assert (row["ci_low"], row["ci_high"]) == (lo, hi)
    # a near tie is apart too, and a pair both tie and near tie is counted once, as a tie
    df["near_tie"] = [True] + [False] * 13 + [True] + [True] * 5
    row = stats.accuracy_table(df).iloc[0]
    assert (row["ties"], row["near_ties"], row["decided"], row["correct"]) == (5, 2, 13, 11)
    # a group with no decided pair has no accuracy, not 0
    t = stats.accuracy_table(pd.DataFrame({"task": ["x"], "correct": [False], "tie": [True]}))
    assert t["decided"].iat[0] == 0 and t["accuracy"].isna().iat[0]


def test_sample_pairs_says_when_it_returns_fewer_than_asked():
    from xcomps_utils.pairs import data

    df = pd.DataFrame({"pair_id": [str(i) for i in range(10)], "identical": [False] * 8 + [True] * 2,
                       "duplicate": [False] * 10})
    with pytest.warns(data.SmallSampleWarning, match="asked for 10 pairs, returning 8.*2 are identical"):
        assert len(data.sample_pairs(df, 10)) == 8
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(data.sample_pairs(df, 8)) == 8 and len(data.sample_pairs(df, None)) == 8


def test_provenance_records_data_and_parameters():
    prov = results.provenance(None, datasets={"blimp/x.jsonl": "abc"}, bos_policy="bos", seed=1)
    assert prov["parameters"] == {"bos_policy": "bos", "seed": 1}
    assert prov["data_sha256"] == {"blimp/x.jsonl": "abc"} and prov["package"] == "xcomps_utils"


def test_environment_names_versions_and_provenance_uses_it():
    import torch

    env = results.environment()
    assert env["torch"] == torch.__version__ and env["xcomps_utils"] == results.__version__
    assert isinstance(env["CUDA available"], bool) and env["CPU threads"] >= 1
    prov = results.provenance(None, seed=3)
    assert prov["torch"] == env["torch"] and prov["parameters"] == {"seed": 3}


def test_accuracy_table_decisions_and_item_intervals():
    from xcomps_utils.analysis.stats import accuracy_table, wilson_interval

    t = pd.DataFrame({"task": "t", "correct": [1.0, 0.0, float("nan"), 1.0],
                      "decision": ["right", "wrong", None, "right"], "item": list("abcd")})
    row = accuracy_table(t, item="item").iloc[0]
    assert (row.decided, row.correct) == (3, 2)  # a pair without a decision is not decided
    # every pair its own item: Wilson's interval, not a bootstrap over 3 units
    assert (row.ci_low, row.ci_high) == pytest.approx(wilson_interval(2, 3))
    shared = pd.DataFrame({"task": "t", "correct": [1.0] * 8, "item": list("aabbccdd")})
    row = accuracy_table(shared, item="item").iloc[0]
    assert np.isnan(row.ci_low) and row.accuracy == 1.0  # 4 shared items: no interval
    many = pd.DataFrame({"task": "t", "item": np.repeat(np.arange(30), 4),
                         "correct": np.repeat(np.r_[np.ones(20), np.zeros(10)], 4)})
    row = accuracy_table(many, item="item", n_boot=2000).iloc[0]
    # items, not pairs, are the unit: as wide as 30 coin flips, wider than Wilson over 120
    lo, hi = wilson_interval(80, 120)
    assert row.ci_high - row.ci_low > 1.5 * (hi - lo)
