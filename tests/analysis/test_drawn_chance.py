"""The drawn chance level of a Direct task (issue 42, item 7): a decision by length alone, read from
the model's own tokenization, beside every accuracy; DUST's is far from 0.5."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import stats


def _pairs(good, bad, task="t"):
    return pd.DataFrame({"task": task, "n_tokens_good": good, "n_tokens_bad": bad})


def test_length_only_counts_shorter_right_and_equal_as_a_coin():
    d = _pairs([3, 3, 5, 4], [4, 3, 4, 6])  # shorter, equal, longer, shorter
    row = stats.length_baseline(d, n_boot=200).iloc[0]
    assert (row.shorter, row.equal, row.longer) == (0.5, 0.25, 0.25)
    assert row.length_only == pytest.approx(0.625)
    assert row.ci_low <= 0.625 <= row.ci_high


def test_the_interval_is_a_pair_bootstraps():
    """Drawing how many pairs of each kind (shorter, as long, longer) a replicate holds is
    resampling the pairs: the interval equals a pair bootstrap's up to Monte Carlo error."""
    from xcomps_utils.analysis.claims import bootstrap_means

    rng = np.random.default_rng(1)
    d = _pairs(rng.integers(3, 7, 300), rng.integers(3, 7, 300))
    row = stats.length_baseline(d, n_boot=4000, seed=2).iloc[0]
    diff = d["n_tokens_bad"] - d["n_tokens_good"]
    v = pd.DataFrame({"p": range(len(d)), "v": (diff > 0) + 0.5 * (diff == 0)})
    est, lo, hi, _ = bootstrap_means(v, "v", "p", None, lambda m, _: m[:, 0], n_boot=4000,
                                     seed=2)
    assert row.length_only == pytest.approx(est, abs=1e-12)
    assert (row.ci_low, row.ci_high) == pytest.approx((lo, hi), abs=0.01)
    assert hi - lo > 0.05  # an interval, not a point: 300 pairs


def test_far_from_chance_reads_the_interval_not_the_point():
    rng = np.random.default_rng(0)
    short = _pairs(np.full(400, 3), np.where(rng.random(400) < 0.8, 5, 3), "short")
    even = _pairs(rng.integers(3, 6, 400), rng.integers(3, 6, 400), "even")
    tiny = _pairs([3, 3, 3, 3, 4], [4, 4, 4, 4, 3], "tiny")  # 0.8 from 5 pairs: not decided
    out = stats.length_baseline(pd.concat([short, even, tiny]), n_boot=500).set_index("task")
    assert out.loc["short", "length_only"] == pytest.approx(0.9, abs=0.03)
    assert out.loc["short", "far_from_chance"]
    assert not out.loc["even", "far_from_chance"]
    assert not out.loc["tiny", "far_from_chance"]
    with pytest.raises(KeyError, match="n_tokens_bad"):
        stats.length_baseline(short.drop(columns="n_tokens_bad"))


@pytest.mark.usefixtures("data_dir")
def test_dust_is_read_against_its_drawn_level_in_the_shipped_store(monkeypatch):
    from xcomps_utils.lm import models
    from xcomps_utils.pages import chapters, params
    from xcomps_utils.pairs import tasks

    def refuse(*a, **k):
        raise AssertionError("the direct-scoring page's run must be read from store/, not computed")
    monkeypatch.setattr(models, "load_model", refuse)
    page = params.sizes("direct_scoring", "publish")  # the run the book reads
    pairs = tasks.sample(page["tasks"], page["n_pairs"], seed=page["seed"])
    run = chapters.runner(store="store", device="auto", dtype="auto", bos_policy="bos",
                          token_budget="auto")
    res = run(page["models"][0], pairs, "direct")
    out = stats.length_baseline(res.wide(), seed=0).set_index("task")
    # SmolLM2's tokenizer: the acceptable DUST sentence is the shorter in most pairs
    assert out.loc["dust", "shorter"] > 0.6 and out.loc["dust", "far_from_chance"]
    assert out.loc["dust", "length_only"] > 0.75
    # BLiMP anaphor's pairs differ in one pronoun: mostly the same length
    assert out.loc["blimp_anaphor", "equal"] > 0.5
