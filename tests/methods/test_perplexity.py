import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis.perplexity_paper import item_summary
from xcomps_utils.lm import words as W
from xcomps_utils.methods import perplexity as P
from xcomps_utils.pairs import data, nonsense, tasks


def _pairs(good, bad):
    gp, bp = data.pivotal_spans(good, bad)
    return pd.DataFrame({"good": [good], "bad": [bad], "good_pivots": [gp], "bad_pivots": [bp]})


def _check_alignment(lm, pairs, wordings):
    pps = P.build_prompt_pairs(pairs, wordings)
    scored = P.score_prompt_pairs(lm, pps)
    metrics, groups = scored.metrics, scored.groups
    from xcomps_utils.lm.scoring import token_scores

    for k, pp in enumerate(pps):
        g = groups[(groups.wording == pp.wording) & (groups.order == pp.order) & (groups.item == pp.item)]
        sa, sb = token_scores(lm, [pp.correct, pp.incorrect])
        # every token of both prompts is in exactly one group: surprisal is conserved
        assert g.n_tokens_correct.sum() == len(sa.logprobs) and g.n_tokens_incorrect.sum() == len(sb.logprobs)
        # (scored in other batches, with other shared prefixes: equal within 1e-4, not bitwise)
        assert g.s_correct.sum() == pytest.approx(-sa.total, abs=1e-4)
        assert g.s_incorrect.sum() == pytest.approx(-sb.total, abs=1e-4)
        assert (g.n_tokens_correct >= 1).all() and (g.n_tokens_incorrect >= 1).all()
        # every character belongs to exactly one group (a group may be non-contiguous)
        assert sorted("".join(g.text)) == sorted(pp.correct)
    return metrics, groups


# A wording whose two slots are followed by different template text: "sleep.' and" tokenizes as
# ".'" (the sentence's period fused with the template's quote) but "sleep.'." as "." + "'.".
BOUNDARY_WORDING = {"id": "boundary", "good_first": "Good: '{s1}' and bad: '{s2}'.",
                    "bad_first": "Bad: '{s1}' and good: '{s2}'."}


def test_alignment_when_slot_boundaries_tokenize_differently(lm):
    text = "Good: 'sheep sleep.' and"
    enc = lm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert ".'" in [text[a:b] for a, b in enc["offset_mapping"]]  # the premise of this test
    pairs = _pairs("The sheep sleep.", "They sleep.")
    metrics, groups = _check_alignment(lm, pairs, [BOUNDARY_WORDING])
    straddling = groups[(groups.n_tokens_correct > 1) | (groups.n_tokens_incorrect > 1)]
    assert len(straddling) >= 1  # boundary tokens were grouped, not dropped
    assert straddling.text.str.contains(".'", regex=False).any()
    piv = groups[groups.category == "pivotal"]
    assert {"sheep", "They"} <= set(piv.text.str.strip())


def test_alignment_on_a_cjk_sentence(lm):
    pairs = _pairs("我喜欢猫。", "我喜欢狗。")
    metrics, groups = _check_alignment(lm, pairs, P.load_wordings("blimp")[:1])
    piv = groups[groups.category == "pivotal"]
    assert set(piv.text) <= {"猫", "狗", "'猫", "'狗", "猫。", "狗。"} and len(piv) == 4
    assert (groups[groups.text == "。"].category == "period").all()


def test_normalized_proportion_properties():
    mask = np.array([True, False, False, False, False])
    right = np.array([2.0, 0, 0, 0, 0])
    assert P.normalized_proportion(right, mask) == pytest.approx(1.0)
    assert P.normalized_proportion(-right, mask) == pytest.approx(-1.0)
    like_others = np.full(5, 0.7)
    assert P.normalized_proportion(like_others, mask) == pytest.approx(0.0, abs=1e-12)
    noisy = np.array([0.5, 0.6, 0.4, 0.55, 0.45])  # pivotal behaves like an average token
    assert abs(P.normalized_proportion(noisy, mask)) < 0.05


def test_plain_proportion_range_and_exactly_one():
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = rng.normal(size=12) * rng.lognormal(size=12)
        m = rng.random(12) < 0.3
        assert 0.0 <= P.plain_proportion(d, m) <= 1.0
    only = np.array([0.0, 3.0, 0.0, -1.0])
    assert P.plain_proportion(only, np.array([False, True, False, True])) == 1.0
    with pytest.raises(ValueError, match="undefined"):
        P.plain_proportion(np.zeros(3), np.array([True, False, False]))


def test_metrics_exactly_one_when_only_pivotal_groups_differ():
    groups = pd.DataFrame({"s_correct": [1.0, 2.0, 0.5, 3.0], "s_incorrect": [1.0, 2.0, 2.5, 3.0],
                           "category": ["other", "period", "pivotal", "other"]})
    m = P._metrics(groups)
    assert m["plain_pivotal_ppl"] == 1.0 and m["plain_pivotal_s"] == 1.0
    assert m["norm_pivotal_ppl"] == pytest.approx(1.0) and m["plain_period_ppl"] == 0.0


def test_accuracy_is_the_mean_over_eight_prompt_pairs(lm):
    pairs = data.sample_pairs(tasks.load("blimp_anaphor"), 2, seed=1)
    pps = P.build_prompt_pairs(pairs, P.load_wordings("blimp"))
    assert len(pps) == 2 * 8
    assert {(pp.wording, pp.order) for pp in pps if pp.item == 0} == {
        (w["id"], o) for w in P.load_wordings("blimp") for o in P.ORDERS}
    metrics = P.score_prompt_pairs(lm, pps).metrics
    summary = item_summary(metrics)
    assert (summary.prompt_pairs == 8).all()
    for item, row in summary.set_index("item").iterrows():
        assert row.accuracy == metrics[metrics.item == item].correct.mean()
        assert row.accuracy in {k / 8 for k in range(9)}


def test_prompts_swap_sentences_and_keep_labels():
    pairs = _pairs("Good one.", "Bad one.")
    w = P.load_wordings("dust")[0]
    pps = P.build_prompt_pairs(pairs, [w])
    first, second = pps
    assert first.correct == "This is an underspecified sentence: 'Good one.'. This is its more specified counterpart: 'Bad one.'."
    assert first.incorrect == "This is an underspecified sentence: 'Bad one.'. This is its more specified counterpart: 'Good one.'."
    assert second.correct.startswith("This is a more specified sentence: 'Bad one.'")
    assert sorted(first.correct) == sorted(first.incorrect)


def test_nonsense_generator_is_seeded():
    a, b = nonsense.generate_nonsense(20, seed=5), nonsense.generate_nonsense(20, seed=5)
    assert a.equals(b)
    assert not a.good.equals(nonsense.generate_nonsense(20, seed=6).good)
    for row in a.itertuples():
        words_good, words_bad = row.good.split(), row.bad.split()
        assert len(words_good) == 6 and sum(x != y for x, y in zip(words_good, words_bad)) == 1
        (s, e), = row.bad_pivots
        assert row.bad[s:e] in nonsense.REAL_WORDS
        assert not set(words_good) & set(nonsense.REAL_WORDS)


def test_selection_rules_keep_pairs_whole(data_dir):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)
        dust, crows = data.load_dust(), data.load_crows_pairs()
    sel_d, sel_c = tasks.select("dust"), tasks.select("crows_pairs")
    assert 0 < len(sel_d) < len(dust) and 0 < len(sel_c) < len(crows)
    for sel, full in ((sel_d, dust), (sel_c, crows)):
        merged = sel.merge(full, on="pair_id", suffixes=("", "_src"))
        assert (merged.good == merged.good_src).all() and (merged.bad == merged.bad_src).all()
    assert (sel_c.good_pivots.map(len) == 1).all()


def _union_find_groups(pp, sa, sb):
    """The groups of the hand-written union-find ``align_groups`` used before scipy's
    ``connected_components`` (kept here as the reference): the characters of each group, in
    the correct prompt's order, and the tokens of each side."""
    seg_len = {k: e - s for k, s, e in pp.segments_correct}
    ca = P._canonical(pp.segments_correct, seg_len)
    cb = P._canonical(pp.segments_incorrect, seg_len)
    parent = np.arange(len(ca))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    chars = []
    for scores, canon, text in ((sa, ca, pp.correct), (sb, cb, pp.incorrect)):
        side = [canon[s:e] for s, e in W.token_spans(scores.offsets, len(text))]
        for c in side:
            for x in c[1:]:
                ra, rb = find(c[0]), find(x)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        chars.append(side)
    roots_a = [find(c[0]) for c in chars[0]]
    roots_b = [find(c[0]) for c in chars[1]]
    return [(sorted(x for x in range(len(ca)) if find(x) == r),
             [i for i, x in enumerate(roots_a) if x == r],
             [i for i, x in enumerate(roots_b) if x == r])
            for r in dict.fromkeys(roots_a)]


def _random_tokens(text, rng, mean_len):
    """Scores of ``text`` cut into random tokens (about ``mean_len`` characters), each with a
    random log-probability: a tokenization that straddles words and slot boundaries often."""
    cuts = np.flatnonzero(rng.random(len(text)) < 1 / mean_len)
    starts = np.unique(np.concatenate([[0], cuts]))
    ends = np.append(starts[1:], len(text))
    offsets = np.stack([starts, ends], axis=1)
    from xcomps_utils.lm.scoring import TokenScores

    return TokenScores(text, np.arange(len(starts)), [text[a:b] for a, b in offsets], offsets,
                       -rng.random(len(starts)) * 5, "bos")


@pytest.mark.parametrize("mean_len", [1.5, 4, 12])
def test_groups_equal_the_union_find_groups_on_real_pairs(data_dir, mean_len):
    """scipy's connected components give the groups the hand-written union-find gave, on real
    pairs (BLiMP and the XCOMPS sample in seven languages and four scripts) under random
    tokenizations, in the same order with the same tokens."""
    from xcomps_utils.pairs import xcomps

    blimp = data.sample_pairs(tasks.load("blimp_anaphor"), 6, seed=2)
    xc = xcomps.load_languages(xcomps.SAMPLE_LANGUAGES).groupby("lang").head(3)
    rng = np.random.default_rng(int(mean_len * 10))
    n = 0
    for pairs in (blimp, xc):
        for pp in P.build_prompt_pairs(pairs, P.load_wordings("blimp"))[::3]:
            sa = _random_tokens(pp.correct, rng, mean_len)
            sb = _random_tokens(pp.incorrect, rng, mean_len)
            got = P.align_groups(pp, sa, sb)
            want = _union_find_groups(pp, sa, sb)
            assert len(got) == len(want)
            assert got.n_tokens_correct.tolist() == [len(a) for _, a, _ in want]
            assert got.n_tokens_incorrect.tolist() == [len(b) for _, _, b in want]
            assert got.s_correct.tolist() == pytest.approx(
                [float(-sa.logprobs[a].sum()) for _, a, _ in want])
            assert got.s_incorrect.tolist() == pytest.approx(
                [float(-sb.logprobs[b].sum()) for _, _, b in want])
            n += 1
    assert n > 20
