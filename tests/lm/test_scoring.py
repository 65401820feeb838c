import numpy as np
import pandas as pd
import pytest
import torch

from xcomps_utils.lm import encoding, scoring
from xcomps_utils.lm.scoring import BOS_POLICIES, sequence_scores, token_scores
from xcomps_utils.runs import execute as methods

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

# Batches hold texts of one length (never padded), so a text's forward pass is the same whatever
# its batch: measured differences from one-at-a-time scoring are at most ~3e-6 nats per token.
# With padding they reached 1.9e-4 ("Roger could annoy itself.", see encoding.length_batches).
# Tolerance: 1e-5 nats plus float32 relative precision (2e-6) of the log-probability.
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


# Same token length as a text above (checked): they share its batch.
TWINS = ["Katherine can't help himself.", "Karla could listen to herself.", "Roger could annoy itself.",
         "Roger could annoy himself.", "x", "y"]


@pytest.fixture(scope="module")
def reference(lm):
    ref = {p: [plain_loop(lm, t, p) for t in TEXTS] for p in BOS_POLICIES}
    ref.update({p + "_twins": [plain_loop(lm, t, p) for t in TWINS] for p in BOS_POLICIES})
    return ref


def test_batches_hold_one_length_and_are_never_padded(lm):
    lengths = [len(e.ids) for e in encoding.encode(lm.tokenizer, TEXTS + TWINS, "bos")]
    batches = encoding.length_batches(lengths, None, 4096)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len({lengths[i] for i in b}) == 1 for b in batches)
    assert max(len(b) for b in batches) >= 3  # the test above does batch


@pytest.mark.parametrize("policy", list(BOS_POLICIES))
@pytest.mark.parametrize("batch_size", [1, 3, None])
def test_batched_equals_plain_loop(lm, reference, policy, batch_size):
    texts = TEXTS + TWINS  # texts of one length share a batch
    got = token_scores(lm, texts, bos_policy=policy, batch_size=batch_size)
    for text, s, ref in zip(texts, got, reference[policy] + reference[policy + "_twins"]):
        assert s.text == text  # input order
        np.testing.assert_allclose(s.logprobs, ref, rtol=RTOL, atol=ATOL, err_msg=text)
        assert abs(s.total - ref.sum()) <= ATOL + RTOL * abs(ref.sum()) * 2


def test_token_budget_batches_give_same_scores(lm, reference):
    got = token_scores(lm, TEXTS, batch_size=64, token_budget=40)
    for s, ref in zip(got, reference["bos"]):
        np.testing.assert_allclose(s.logprobs, ref, rtol=RTOL, atol=ATOL)


def test_batches_respect_token_budget():
    lengths = [5, 30, 7, 12, 12, 3, 25]
    batches = encoding.length_batches(lengths, batch_size=100, token_budget=40)
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
    pairs = pd.DataFrame({"dataset": ["handmade"], "pair_id": [0], "good": [TEXTS[4]],
                          "bad": [TEXTS[4]]})
    out = methods.run(lm, pairs, "direct", progress=False).wide()
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
    enc = encoding.encode(lm.tokenizer, ["Hi there."], "bos")[0]
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
    with pytest.raises(ValueError, match=r"^the 'texts\[1\]' parameter must be a non-empty "
                                         r"string; got ''$"):
        token_scores(lm, ["fine", ""])
    with pytest.raises(ValueError, match=r"^the 'bos_policy' parameter must be one of 'bos', "
                                         r"'drop_first', 'lm_eval'; got 'first'$"):
        token_scores(lm, ["fine"], bos_policy="first")


def test_bare_string_is_refused(lm):
    with pytest.raises(TypeError, match="list"):
        token_scores(lm, "hello")


def test_no_texts_give_empty_results(lm):
    assert token_scores(lm, []) == []
    df = sequence_scores(lm, [])
    assert len(df) == 0
    assert list(df.columns) == ["text", "logprob_sum", "logprob_mean", "n_scored", "bos_policy"]


def test_batch_size_zero_is_refused():
    with pytest.raises(ValueError, match="batch_size"):
        encoding.length_batches([3], batch_size=0, token_budget=None)


def test_token_scores_round_trip_through_the_token_table(lm):
    scores = token_scores(lm, TEXTS[:3])
    table = scoring.token_table(scores)
    table = table.assign(text=[scores[i].text for i in table["text_index"]])
    for s in scores:
        back = scoring.TokenScores.from_table(table, s.text)
        assert back.text == s.text and back.tokens == s.tokens
        np.testing.assert_array_equal(back.token_ids, s.token_ids)
        np.testing.assert_array_equal(back.offsets, s.offsets)
        np.testing.assert_array_equal(back.logprobs, s.logprobs)


def test_token_scores_of_every_text_equal_from_table_text_by_text():
    # a shuffled table, one sentence's rows twice (it sits in two pairs), texts sharing prefixes
    texts = ["The cat sleeps.", "The cat sleep.", "The cats sleep."]
    rng = np.random.default_rng(0)
    rows = []
    for t in texts + texts[:1]:
        cuts = [0, 3, 7, len(t) - 1, len(t)]
        for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
            rows.append({"text": t, "position": i, "token_id": 100 * len(t) + i, "token": t[a:b],
                         "start": a, "end": b, "logprob": -rng.random() * 5})
    table = pd.DataFrame(rows).drop_duplicates(["text", "position"], keep="first")
    table = pd.concat([table, table[table["text"] == texts[0]]]).sample(frac=1, random_state=1)
    every = scoring.TokenScores.of_texts(table)
    assert sorted(every) == sorted(texts)
    for t in texts:
        one = scoring.TokenScores.from_table(table.drop_duplicates(["text", "position"]), t)
        got = every[t]
        assert got.text == t and got.tokens == one.tokens and got.bos_policy == "bos"
        assert [got.text[a:b] for a, b in got.offsets] == got.tokens
        np.testing.assert_array_equal(got.token_ids, one.token_ids)
        np.testing.assert_array_equal(got.offsets, one.offsets)
        np.testing.assert_array_equal(got.logprobs, one.logprobs)
    assert scoring.TokenScores.of_texts(table.iloc[:0]) == {}


def test_sequence_scores_columns(lm):
    df = sequence_scores(lm, TEXTS[:3], bos_policy="lm_eval")
    assert list(df.columns) == ["text", "logprob_sum", "logprob_mean", "n_scored", "bos_policy"]
    assert np.allclose(df.logprob_mean * df.n_scored, df.logprob_sum)
    assert (df.bos_policy == "lm_eval").all()


def test_embedded_model_beats_chance_on_blimp_anaphor(lm, data_dir):
    from xcomps_utils.analysis import stats
    from xcomps_utils.pairs import data, tasks

    pairs = data.sample_pairs(tasks.load("blimp_anaphor"), 50, seed=0)
    scored = methods.run(lm, pairs, "direct", batch_size=16, progress=False).wide()
    assert np.isfinite(scored[["logprob_good", "logprob_bad"]].to_numpy()).all()
    row = stats.accuracy_table(scored).iloc[0]
    assert row.n == 50 and row.ci_low > 0.5, row


# Texts sharing prefixes the way the perplexity and Meta prompts do (one wording, both orders;
# a prompt with two answers), plus texts that share nothing.
WORDING = "This is an underspecified sentence: '{}'. This is its more specified counterpart: '{}'."
PROMPTS = [WORDING.format(a, b) for a, b in (
    (TEXTS[0], TEXTS[6]), (TEXTS[6], TEXTS[0]), (TEXTS[4], TEXTS[7]), (TEXTS[7], TEXTS[4]))] + [
    TEXTS[2], TEXTS[1], WORDING.format(TEXTS[5], TEXTS[5])]


@pytest.mark.parametrize("token_budget", ["auto", 60])
def test_shared_prefix_equals_scoring_full_texts(lm, token_budget):
    """Prefix reuse (issue 5) gives the plain loop's log-probabilities: per token within the
    batched tolerance doubled (two more GEMM shapes), per text within 1e-4 nats."""
    groups = scoring.prefix_groups([e.ids for e in encoding.encode(lm.tokenizer, PROMPTS, "bos")])
    assert any(p > 0 and len(m) > 2 for p, m in groups)  # the path under test is taken
    got = token_scores(lm, PROMPTS, token_budget=token_budget)
    for text, s in zip(PROMPTS, got):
        ref = plain_loop(lm, text, "bos")
        np.testing.assert_allclose(s.logprobs, ref, rtol=RTOL, atol=2 * ATOL, err_msg=text)
        assert abs(s.total - ref.sum()) < 1e-4


def test_shared_prefix_continuations_equal_full_texts(lm):
    ctx = ["Question: Which one can fly: a robin or a penguin?\nAnswer:",
           "Question: Which one can fly: a penguin or a robin?\nAnswer:"]
    contexts, answers = ctx * 2, [" a robin", " a robin", " a penguin", " a penguin"]
    shared = scoring.continuation_scores(lm, contexts, answers)
    full = scoring.continuation_scores(lm, contexts, answers, shared_prefix=False)
    for a, b in zip(shared, full):
        assert a.tokens == b.tokens and abs(a.total - b.total) < 1e-4


def test_prefix_groups_cover_every_text_once():
    seqs = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7], [1, 2, 3, 4, 5, 6], [1, 2, 3, 9], [8], [1, 2]]
    groups = scoring.prefix_groups(seqs, min_prefix=3)
    assert sorted(i for _, m in groups for i in m) == list(range(len(seqs)))
    for p, m in groups:
        assert (p == 0) == (len(m) == 1)
        assert all(len(seqs[i]) > p and seqs[i][:p] == seqs[m[0]][:p] for i in m)
    # the three sequences sharing 5 tokens form one group (identical ones keep a token each)
    assert (5, [0, 2, 1]) in [(p, m) for p, m in groups]


def test_shared_prefix_on_gemma_equals_plain_loop(gemma):
    """Gemma-3: another architecture, sliding-window layers and a 262k vocabulary."""
    for text, s in zip(PROMPTS, token_scores(gemma, PROMPTS)):
        ref = plain_loop(gemma, text, "bos")
        assert len(s.logprobs) == len(ref) and abs(s.total - ref.sum()) < 1e-4, text
