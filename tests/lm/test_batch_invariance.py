"""Issue 41: batching never moves a float32 log-probability, on the batch shapes real runs make.

The cause, and its minimal repro: MKL's AVX-512 ``sgemm`` rounds a row of a float32 product
differently for 16 or more rows than for fewer; SmolLM2-135M amplifies that at the first token after
BOS, where its layers build an activation of about 1,800 and later cancel it. *Roger had known
himself.* scored -11.25221 at its second token in a batch of 8 and -11.25871 alone (float64:
-11.25887), so a shipped shard did not reproduce. Importing ``xcomps_utils`` pins MKL's
reproducible mode (``MKL_CBWR=AVX2,STRICT``), under which a row's bits do not depend on the number
of rows or threads. These tests hold that on the real model: a repro that fails without the pin
(the subprocess test shows it does, on a CPU whose default kernels differ) and real run shapes.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from xcomps_utils import MKL_CBWR
from xcomps_utils.lm import encoding, precision
from xcomps_utils.lm.precision import FLOAT32_LENGTH_TOLERANCE
from xcomps_utils.lm.scoring import continuation_scores, token_scores
from xcomps_utils.pairs import tasks

ROGER = ["Roger had known himself.", "Roger had known herself."]


def test_importing_the_package_pins_mkl():
    """The test process imported xcomps_utils before torch computed: MKL is in the pinned mode
    (or the torch build has no MKL, where there is nothing to pin; or the CPU is not Intel's,
    where MKL declines the branch and keeps AUTO,STRICT: the batch tests below measure what that
    gives on this machine)."""
    assert os.environ.get("MKL_CBWR") == MKL_CBWR
    mode = precision.mkl_mode()
    if precision.cpu_vendor() == "GenuineIntel":
        assert mode == MKL_CBWR
    else:
        assert mode in (MKL_CBWR, "no MKL", "AUTO,STRICT")
        assert precision.mkl_declined() == (mode == "AUTO,STRICT")


def _forward_lp(model, ids, n):
    """Per-position log-probabilities of ``ids`` (one text) inside a batch of ``n`` copies."""
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids] * n)).logits[0].double()
    lp = logits.log_softmax(-1)
    return np.array([float(lp[t - 1, ids[t]]) for t in range(1, len(ids))])


def test_minimal_repro_a_batch_of_copies_gives_the_bits_of_one_text(lm):
    """The plain model forward (no scorer involved): one text alone, and as row 0 of batches of
    2 to 32 copies (the AVX-512 kernel switch is at 16 rows), with 1 and 2 threads."""
    ids = encoding.encode(lm.tokenizer, ROGER[:1], "bos")[0].ids
    threads = torch.get_num_threads()
    try:
        alone = None
        for t in (1, 2):
            torch.set_num_threads(t)
            for n in (1, 2, 8, 16, 32):
                lp = _forward_lp(lm.model, ids, n)
                alone = lp if alone is None else alone
                assert np.array_equal(lp, alone), (t, n, np.abs(lp - alone).max())
    finally:
        torch.set_num_threads(threads)
    assert abs(alone[1] - (-11.25887)) < 1e-3  # float64's value at the ill-conditioned token


def _lps(scores):
    return [s.logprobs for s in scores]


def _max_gap(a, b):
    return max(float(np.abs(x - y).max()) if len(x) else 0.0 for x, y in zip(a, b))


@pytest.fixture(scope="module")
def blimp_texts(data_dir):
    """Many short sentences of few lengths: 80 BLiMP anaphor pairs, as a Direct run scores
    them (the batches are dozens of texts of one length)."""
    p = tasks.sample(["blimp_anaphor"], 80, seed=0)
    return list(dict.fromkeys(list(p["good"]) + list(p["bad"])))


@pytest.fixture(scope="module")
def alone(lm, blimp_texts):
    """The reference: one text at a time, no prefix sharing."""
    return _lps(token_scores(lm, blimp_texts, batch_size=1, shared_prefix=False))


def _with_threads(n, fn):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return fn()
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("threads", [1, 2])
def test_real_batches_equal_one_text_at_a_time(lm, blimp_texts, alone, threads):
    """The scorer's own batches (token budget, one length a batch, the gathered head; and
    batches of 3) against ``batch_size=1``: the same bits, per token, whatever the thread
    count."""
    batched = _with_threads(threads, lambda: _lps(token_scores(lm, blimp_texts,
                                                               shared_prefix=False)))
    small = _with_threads(threads, lambda: _lps(token_scores(lm, blimp_texts, batch_size=3,
                                                             shared_prefix=False)))
    assert _max_gap(batched, alone) == 0.0
    assert _max_gap(small, alone) == 0.0


def test_shared_prefixes_stay_within_the_length_tolerance(lm, blimp_texts):
    """Texts sharing a prefix (an instruction; a Meta prompt scored with two answers) take the
    key/value-cache path: the prefix runs as a sequence of its own length, and attention's
    softmax sums a row over the keys in an order that depends on the sequence's length (on this
    CPU a prompt token moved by 1.5e-5 nats, the same as scoring a prefix inside sentences of
    other lengths), so it is held to ``FLOAT32_LENGTH_TOLERANCE`` against scoring every text
    alone and in full, not bit for bit; what it shares is computed once."""
    prompt = "Here are two English sentences. Which one is grammatical?\nAnswer: "
    texts = [prompt + t for t in blimp_texts[:40]]
    shared = _lps(token_scores(lm, texts, shared_prefix=True))
    full = _lps(token_scores(lm, texts, batch_size=1, shared_prefix=False))
    assert 0 < _max_gap(shared, full) <= FLOAT32_LENGTH_TOLERANCE
    ctx = ["Is it true that a robin can fly? Answer:"] * 2 + ["Is it true that a penguin can fly? Answer:"] * 2
    ans = [" Yes", " No"] * 2
    pairs = _lps(continuation_scores(lm, ctx, ans))
    single = _lps(continuation_scores(lm, ctx, ans, batch_size=1, shared_prefix=False))
    assert _max_gap(pairs, single) <= FLOAT32_LENGTH_TOLERANCE


_UNPINNED = """
import json, torch
torch.randn(4, 4) @ torch.randn(4, 4)   # MKL initialised before xcomps_utils: not pinned
import warnings
from xcomps_utils.lm import precision
from xcomps_utils.lm.models import load_model
from xcomps_utils.lm.scoring import token_scores
lm = load_model("smollm2-135m-instruct")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    token_scores(lm, ["Roger had known himself."])
print(json.dumps({"mode": precision.mkl_mode(), "warned": any("MKL" in str(x.message) for x in w)}))
"""


def test_mkl_initialised_before_the_package_is_named(lm):
    """MKL used before ``xcomps_utils`` was imported cannot be pinned any more: scoring says so
    in one warning naming the mode and the fix (and the run records the mode)."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    r = subprocess.run([sys.executable, "-c", _UNPINNED], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if got["mode"] == "no MKL":
        pytest.skip("torch without MKL")
    assert got["mode"] != MKL_CBWR and got["warned"]
