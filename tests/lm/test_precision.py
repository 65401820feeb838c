"""bfloat16 you can trust: the float32 LM head, the fast-head check, near ties, batch invariance.

Random-weight models built from a transformers config (no download) test arithmetic; the
measured tolerance is tested on SmolLM2 in bfloat16 with real BLiMP pairs (slow).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from xcomps_utils.lm import precision, scoring
from xcomps_utils.lm.models import LanguageModel
from xcomps_utils.runs import execute as methods


class _Words:
    """A word-level tokenizer stand-in for random models: each word is an id by CRC-32."""

    bos_token_id, eos_token_id, pad_token_id = 1, 2, 2

    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, texts, add_special_tokens=False, return_offsets_mapping=False):
        import zlib

        one = isinstance(texts, str)
        ids, offs = [], []
        for t in [texts] if one else texts:
            words, pos, o = t.split(" "), 0, []
            for w in words:
                o.append((pos, pos + len(w)))
                pos += len(w) + 1
            ids.append([3 + zlib.crc32(w.encode()) % (self.vocab - 3) for w in words])
            offs.append(o)
        out = {"input_ids": ids[0] if one else ids}
        if return_offsets_mapping:
            out["offset_mapping"] = offs[0] if one else offs
        return out

    def convert_ids_to_tokens(self, ids):
        return [str(i) for i in ids]


def _random_lm(dtype, arch="llama", **extra):
    from transformers import GraniteConfig, GraniteForCausalLM, LlamaConfig, LlamaForCausalLM

    shapes = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                  tie_word_embeddings=False, **extra)
    cls, cfg = ((LlamaForCausalLM, LlamaConfig) if arch == "llama"
                else (GraniteForCausalLM, GraniteConfig))
    torch.manual_seed(0)
    model = cls(cfg(**shapes)).eval()
    with torch.no_grad():
        model.lm_head.weight.normal_(0, 0.5)  # logits of a few units: bf16 rounding shows
    model = model.to(dtype)
    return LanguageModel(model, _Words(1000), f"random-{arch}", None, torch.device("cpu"), dtype)


TEXTS = ["the cat sat on the mat", "a robin can fly over the house", "colourless green ideas"]


def test_head_is_float32_and_beats_bf16_logits():
    """In bfloat16 the head's logits are the float32 product of the bf16 hidden state and weight
    (equal to float64 within float32 rounding); the model's own logits are rounded to bf16."""
    lm = _random_lm(torch.bfloat16)
    ids = torch.tensor([[1] + lm.tokenizer(TEXTS[0])["input_ids"]])
    with torch.no_grad():
        hidden = lm.model.get_decoder()(input_ids=ids).last_hidden_state[0]
        own = lm.model(input_ids=ids).logits[0]
    fast = scoring._head(lm, hidden)
    exact = hidden.double() @ lm.model.lm_head.weight.double().T
    assert fast.dtype == torch.float32 and own.dtype == torch.bfloat16
    ours_err = (fast.double() - exact).abs().max().item()
    bf16_err = (own.double() - exact).abs().max().item()
    assert ours_err < 1e-5 < 1e-3 < bf16_err


def test_bf16_fast_head_check_passes_at_the_dtype_tolerance():
    """float32 head vs the model's bf16 logits differ by bf16 rounding: more than the old fixed
    1e-3, within head_tolerance(bfloat16); no warning, fast head and prefix sharing stay on."""
    lm = _random_lm(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scoring._head_matches(lm) is True
    assert scoring.head_tolerance(torch.bfloat16) == pytest.approx(2 * 2 ** -7)
    assert scoring.head_tolerance(torch.float32) == 1e-4


def test_fast_head_fallback_warns_and_still_scores_right():
    """Granite divides its logits by ``logits_scaling``, which the fast head does not know: the
    check fails, a UserWarning names the model, and scores come from the full forward pass."""
    lm = _random_lm(torch.float32, arch="granite", logits_scaling=4.0)
    with pytest.warns(UserWarning, match="random-granite.*falls back"):
        got = scoring.token_scores(lm, TEXTS)
    assert lm.fast_head is False
    for s, text in zip(got, TEXTS):
        ids = [1] + lm.tokenizer(text)["input_ids"]
        with torch.no_grad():
            lp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
        want = lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()
        np.testing.assert_allclose(s.logprobs, want, atol=1e-5, rtol=0)


def test_pair_tolerance_and_near_ties():
    n = np.array([10, 10, 10, 20])
    delta = np.array([0.0, 5e-5, 2e-4, 1.5e-4])
    np.testing.assert_allclose(precision.pair_tolerance("float64", n), 1e-5 * n)
    # float64: 1e-5 nats per token of the pair; exact ties are ties, not near ties
    assert precision.near_ties(delta, torch.float64, n).tolist() == [False, True, False, True]
    # float32: the model's measured float32 gap per token (SmolLM2: 5.4e-4), unmeasured
    # models the largest measured gap
    np.testing.assert_allclose(precision.pair_tolerance("float32", n, "smollm2-135m-instruct"),
                               5.4e-4 * n)
    assert precision.near_ties([5e-3, 6e-3], "float32", [10, 10], "other").tolist() == \
        [True, False]
    tol = precision.BF16_PAIR_TOLERANCE
    assert precision.near_ties([0.0, tol / 2, -tol / 2, tol * 2], "bf16", [5] * 4).tolist() == \
        [False, True, True, False]
    assert (precision.pair_tolerance(torch.float16, n) == tol).all()
    with pytest.raises(ValueError, match=r"^the 'dtype' parameter must be a dtype with a "
                                         r"tolerance: .*; got 'int8'$"):
        precision.pair_tolerance("int8", n)


@pytest.fixture(scope="module")
def smollm_bf16():
    from xcomps_utils.lm.models import load_model

    return load_model("smollm2-135m-instruct", device="cpu", dtype="bfloat16")


@pytest.mark.slow
def test_bf16_batch_shape_invariance_within_tolerance(smollm_bf16, data_dir):
    """Real BLiMP pairs in bfloat16: alone, in full token-budget batches and in small batches,
    every sentence and every pair difference within the documented tolerance."""
    from xcomps_utils.pairs import tasks

    pairs = tasks.load("blimp_anaphor").head(40)
    texts = list(pairs.good) + list(pairs.bad)
    runs = [np.array([s.total for s in scoring.token_scores(smollm_bf16, texts, **kw)])
            for kw in ({"batch_size": 1, "shared_prefix": False}, {}, {"token_budget": 48})]
    n = len(pairs)
    for other in runs[1:]:
        assert np.abs(other - runs[0]).max() < precision.BF16_PAIR_TOLERANCE
        deltas = [r[:n] - r[n:] for r in (runs[0], other)]
        assert np.abs(deltas[1] - deltas[0]).max() < precision.BF16_PAIR_TOLERANCE


@pytest.mark.slow
def test_direct_and_meta_report_near_ties(smollm_bf16, data_dir):
    from xcomps_utils.pairs import tasks, xcomps

    blimp = tasks.load("blimp_anaphor").head(30)
    res = methods.run(smollm_bf16, blimp, "direct", progress=False)
    w = res.wide("direct")
    tol = precision.BF16_PAIR_TOLERANCE
    assert (w["near_tie_tolerance"] == tol).all()
    want = (w["delta"].abs() < tol) & (w["delta"] != 0)
    assert (w["near_tie"].astype(bool) == want).all() and not (w["near_tie"].astype(bool) & w["tie"].astype(bool)).any()
    assert res.provenance("direct")["key"]["dtype"] == "bfloat16"
    meta = methods.run(smollm_bf16, xcomps.load_xcomps("en").head(3), "meta", progress=False)
    m = meta.wide("meta")
    m = m[m["order"] == ""]
    assert set(m["near_tie"]) <= {0.0, 1.0} and (m["near_tie_tolerance"] == tol).all()


def test_direct_near_tie_float32_uses_tokens(lm, data_dir):
    """float32: the tolerance is the model's measured float32 gap (nats per token) x the pair's
    scored tokens; an identical pair is a tie, not a near tie."""
    pairs = pd.DataFrame({"dataset": "t", "pair_id": ["a", "b"],
                          "good": ["The cat sat.", "The cat sat."],
                          "bad": ["The cat sat.", "The cat sit."]})
    w = methods.run(lm, pairs, "direct", progress=False).wide("direct").set_index("pair_id")
    assert w.loc["a", "tie"] == 1 and w.loc["a", "near_tie"] == 0
    n = w["n_tokens_good"] + w["n_tokens_bad"]
    gap = precision.FLOAT32_GAP_BY_MODEL.get(lm.name, precision.FLOAT32_GAP_DEFAULT)
    np.testing.assert_allclose(w["near_tie_tolerance"], gap * n)
    assert w.loc["b", "near_tie"] == float(abs(w.loc["b", "delta"]) < gap * n["b"])


def test_one_decision_per_pair():
    t = pd.DataFrame({"direct_correct": [1.0, 0.0, 0.0, 1.0, np.nan],
                      "direct_tie": [0.0, 0.0, 1.0, 0.0, 0.0],
                      "direct_near_tie": [0.0, 0.0, 0.0, 1.0, 0.0]})
    got = precision.decisions(t, "direct").tolist()
    assert got[:4] == ["right", "wrong", "tie", "near_tie"] and pd.isna(got[4])


def test_one_decision_rule_for_the_per_token_mean_in_every_table():
    """The XCOMPS tables (``direct_mean_decision``), BMLAMA's ``pair_decisions(..., "mean")`` and
    the grammar chapter's ``mean`` convention decide every pair alike, ties and near ties
    included (they once used two different tolerances for the same difference)."""
    import pandas as pd

    from xcomps_utils.analysis import bmlama_study, grammar_study, xcomps_paper
    from xcomps_utils.lm.precision import decide, per_unit_tolerance

    rng = np.random.default_rng(0)
    n = 400
    ng, nb = rng.integers(3, 12, n), rng.integers(3, 12, n)
    tol = 5.4e-4 * (ng + nb)
    mean_b = -rng.uniform(1, 5, n)
    # a third decided, a third within the per-token bound (near ties), a third exact ties
    gap = np.r_[rng.uniform(0.01, 1, n // 3), rng.uniform(-1, 1, n // 3) * 1e-5,
                np.zeros(n - 2 * (n // 3))]
    mean_g = mean_b + gap
    m = pd.DataFrame({"direct_logprob_mean_good": mean_g, "direct_logprob_mean_bad": mean_b,
                      "direct_logprob_good": mean_g * ng, "direct_logprob_bad": mean_b * nb,
                      "direct_n_tokens_good": ng, "direct_n_tokens_bad": nb,
                      "direct_near_tie_tolerance": tol, "good": "a", "bad": "b",
                      "direct_correct": (mean_g * ng > mean_b * nb).astype(float),
                      "direct_tie": 0.0, "direct_near_tie": 0.0})
    want = decide(gap, per_unit_tolerance(tol, ng, nb))
    assert {"right", "near_tie", "tie"} <= set(want)
    assert list(bmlama_study.pair_decisions(m, "mean")) == list(want)
    assert list(grammar_study.convention_decisions(m)["decision_mean"]) == list(want)
    long = m.reset_index().rename(columns={"index": "pair_id"})
    measures = long.melt(id_vars=["pair_id"], value_vars=[c for c in m if c.startswith("direct_")],
                         var_name="measure", value_name="value")
    measures = measures.assign(method="direct", order="", lang="en",
                               measure=measures.measure.str.removeprefix("direct_"),
                               pair_id=measures.pair_id.astype(str))
    table = xcomps_paper.pair_table(measures, long[["pair_id"]].assign(lang="en"))
    assert list(table["direct_mean_decision"]) == list(want)
