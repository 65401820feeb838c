import pandas as pd
import pytest

from xcomps_utils import results, stats


def test_wilson_interval_known_values():
    lo, hi = stats.wilson_interval(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = stats.wilson_interval(76, 100)
    assert (lo, hi) == (pytest.approx(0.6677, abs=1e-4), pytest.approx(0.8331, abs=1e-4))
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 2)


def test_accuracy_table_counts_ties_as_wrong():
    df = pd.DataFrame({"task": ["a"] * 4 + ["b"] * 2,
                       "correct": [True, True, False, False, True, False],
                       "tie": [False, False, True, False, False, False]})
    t = stats.accuracy_table(df).set_index("task")
    assert t.loc["a", "accuracy"] == 0.5 and t.loc["a", "ties"] == 1 and t.loc["b", "n"] == 2


def test_results_round_trip_with_provenance(tmp_path):
    df = pd.DataFrame({"pair_id": ["1", "2"], "delta": [0.5, -1.0], "good_pivots": [[[0, 3]], []]})
    prov = results.provenance(None, datasets={"blimp/x.jsonl": "abc"}, bos_policy="bos", seed=1)
    path = results.write_results(df, tmp_path / "r" / "out.parquet", prov)
    back, meta = results.read_results(path)
    assert back["delta"].tolist() == [0.5, -1.0]
    assert meta["parameters"] == {"bos_policy": "bos", "seed": 1}
    assert meta["data_sha256"] == {"blimp/x.jsonl": "abc"} and meta["package"] == "xcomps_utils"
    df.to_parquet(tmp_path / "plain.parquet")
    with pytest.raises(ValueError, match="no xcomps_provenance"):
        results.read_results(tmp_path / "plain.parquet")


def test_environment_names_versions_and_provenance_uses_it():
    import torch

    env = results.environment()
    assert env["torch"] == torch.__version__ and env["xcomps_utils"] == results.__version__
    assert isinstance(env["CUDA available"], bool) and env["CPU threads"] >= 1
    prov = results.provenance(None, seed=3)
    assert prov["torch"] == env["torch"] and prov["parameters"] == {"seed": 3}
