import numpy as np
import pandas as pd
import pytest
import torch

from xcomps_utils import scoring
from xcomps_utils.scoring import BOS_POLICIES, score_pairs, sequence_scores, token_scores

# Mixed lengths: real BLiMP / CrowS / DUST sentences, a one-token text, a two-token text.
TEXTS = [
    "Katherine can't help herself.",
    "x",
    "The poor are really ignorant about how to handle the money they do have.",
    "Hi",
    "Amanda was respected by some waitresses.",
    "Mary tucked her daughter Anne into bed, so that she could work.",
    "Karla could listen to himself.",
    "This applies to every human being.",
    "He couldn't figure out the issue with the rope, but he tried not to get too down on himself.",
]

# float32 forward passes of different shapes round differently (the BLAS picks its kernel by
# matrix size): measured per-token differences between batched and one-at-a-time scoring are
# ~1e-6, at most 1.6e-5 on a 2-token text. Tolerance: 1e-5 nats plus float32 relative precision
# (2e-6) of the log-probability.
ATOL, RTOL = 1e-5, 2e-6


def plain_loop(lm, text, policy):
    """Independent reference: one text, no padding, full log-softmax (float64 normalisation)."""
    tok = lm.tokenizer
    ids = tok(" " + text if policy == "lm_eval" else text, add_special_tokens=False)["input_ids"]
    first = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if policy != "drop_first":
        ids = [first] + ids
    with torch.no_grad():
        logp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return np.array([logp[t - 1, ids[t]].item() for t in range(1, len(ids))])


@pytest.fixture(scope="module")
def reference(lm):
    return {p: [plain_loop(lm, t, p) for t in TEXTS] for p in BOS_POLICIES}


@pytest.mark.parametrize("policy", list(BOS_POLICIES))
@pytest.mark.parametrize("batch_size", [1, 3, 8])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_batched_equals_plain_loop(lm, reference, policy, batch_size, padding_side):
    got = token_scores(lm, TEXTS, bos_policy=policy, batch_size=batch_size,
                       padding_side=padding_side)
    for text, s, ref in zip(TEXTS, got, reference[policy]):
        assert s.text == text  # input order
        np.testing.assert_allclose(s.logprobs, ref, rtol=RTOL, atol=ATOL, err_msg=text)
        assert abs(s.total - ref.sum()) <= ATOL + RTOL * abs(ref.sum()) * 2


def test_token_budget_batches_give_same_scores(lm, reference):
    got = token_scores(lm, TEXTS, batch_size=64, token_budget=40)
    for s, ref in zip(got, reference["bos"]):
        np.testing.assert_allclose(s.logprobs, ref, rtol=RTOL, atol=ATOL)


def test_batches_respect_token_budget():
    lengths = [5, 30, 7, 12, 12, 3, 25]
    batches = scoring._batches(lengths, batch_size=100, token_budget=40)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 40


def test_one_token_text(lm):
    bos, drop = (token_scores(lm, ["x"], bos_policy=p)[0] for p in ("bos", "drop_first"))
    assert len(bos.logprobs) == 1 and np.isfinite(bos.total) and bos.total < 0
    assert bos.context_ids == [lm.tokenizer.bos_token_id]
    assert len(drop.logprobs) == 0 and drop.total == 0.0 and drop.mean == 0.0


def test_identical_texts_identical_scores(lm):
    a, b, c = token_scores(lm, [TEXTS[0], TEXTS[2], TEXTS[0]], batch_size=3)
    np.testing.assert_array_equal(a.logprobs, c.logprobs)
    pairs = pd.DataFrame({"good": [TEXTS[4]], "bad": [TEXTS[4]]})
    out = score_pairs(lm, pairs)
    assert out.loc[0, "delta"] == 0 and bool(out.loc[0, "tie"]) and not bool(out.loc[0, "correct"])


def test_offsets_point_into_the_original_text(lm):
    for policy in BOS_POLICIES:
        for s in token_scores(lm, TEXTS, bos_policy=policy):
            if len(s.offsets) == 0:  # drop_first on a one-token text
                continue
            assert (s.offsets[:, 0] <= s.offsets[:, 1]).all()
            assert (np.diff(s.offsets[:, 0]) >= 0).all() and s.offsets.max() <= len(s.text)
            covered = "".join(s.text[a:b] for a, b in s.offsets)
            tail = s.text[s.offsets[0, 0]:]
            assert covered.replace(" ", "") == tail.replace(" ", "")


def test_bos_is_not_doubled_for_tokenizers_that_add_one(lm):
    # Texts are encoded without special tokens and the BOS is prepended once, so a tokenizer that
    # adds its own BOS (Gemma) cannot double it; here: exactly one BOS, in first place.
    enc = scoring._encode(lm.tokenizer, ["Hi there."], "bos")[0]
    assert enc.ids.count(lm.tokenizer.bos_token_id) == 1 and enc.ids[0] == lm.tokenizer.bos_token_id


def test_nan_never_reaches_a_result(lm):
    def poison(module, inputs, output):
        output = output.clone()
        output[..., 2, :] = float("nan")  # position 2 ([B, T, V]) or scored row 2 ([n, V])
        return output

    handle = lm.model.get_output_embeddings().register_forward_hook(poison)
    try:
        with pytest.raises(FloatingPointError, match=r"text #\d+ .*log-probability nan"):
            token_scores(lm, [TEXTS[2]])
    finally:
        handle.remove()
    assert np.isfinite(token_scores(lm, [TEXTS[2]])[0].logprobs).all()


def test_bad_input_is_refused(lm):
    with pytest.raises(ValueError, match="text #1 is empty"):
        token_scores(lm, ["fine", ""])
    with pytest.raises(ValueError, match="unknown bos_policy"):
        token_scores(lm, ["fine"], bos_policy="first")
    with pytest.raises(ValueError, match="padding_side"):
        token_scores(lm, ["fine"], padding_side="middle")


def test_sequence_scores_columns(lm):
    df = sequence_scores(lm, TEXTS[:3], bos_policy="lm_eval")
    assert list(df.columns) == ["text", "logprob_sum", "logprob_mean", "n_scored", "bos_policy"]
    assert np.allclose(df.logprob_mean * df.n_scored, df.logprob_sum)
    assert (df.bos_policy == "lm_eval").all()


def test_embedded_model_beats_chance_on_blimp_anaphor(lm, data_dir):
    from xcomps_utils import data, stats

    pairs = data.sample_pairs(data.load_task("blimp_anaphor"), 50, seed=0)
    scored = score_pairs(lm, pairs, batch_size=16)
    assert np.isfinite(scored[["good_logprob", "bad_logprob"]].to_numpy()).all()
    row = stats.accuracy_table(scored).iloc[0]
    assert row.n == 50 and row.ci_low > 0.5, row
