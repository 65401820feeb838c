"""The untrained control ``random:<model>`` (issue 44, item 3): the model's architecture,
tokenizer, chat template and BOS with the weights its initialiser draws from a seed; the same spec
gives the same bits; its identity follows the base model, the seed and the initialiser."""

import importlib.metadata
import json
import math
import shutil

import numpy as np
import pytest
import torch

from xcomps_utils.lm import models
from xcomps_utils.lm.scoring import token_scores

TEXTS = ["Amanda was respected by some waitresses.", "The cat sat on the mat.",
         "Der Hund, 猫 ärgert sich!"]


def _load(name, **kwargs):
    return models.load_model(name, device="cpu", dtype="float32", **kwargs)


def _same_weights(a, b) -> bool:
    sa, sb = a.model.state_dict(), b.model.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _same_tokenizer(a, b) -> None:
    assert a.tokenizer.get_vocab() == b.tokenizer.get_vocab()
    assert a.tokenizer.chat_template == b.tokenizer.chat_template
    assert (a.tokenizer.bos_token_id, a.tokenizer.eos_token_id) == (
        b.tokenizer.bos_token_id, b.tokenizer.eos_token_id)
    for text in TEXTS:
        assert a.tokenizer(text).input_ids == b.tokenizer(text).input_ids


def _mean_logprob_per_token(lm) -> np.ndarray:
    return np.array([s.logprobs.mean() for s in token_scores(lm, TEXTS)])


# --- the spec -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, base, seed, canonical", [
    ("random:smollm2-135m-instruct", "smollm2-135m-instruct", 0, "random:smollm2-135m-instruct"),
    ("random:smollm2-135m-instruct@seed=0", "smollm2-135m-instruct", 0,
     "random:smollm2-135m-instruct"),
    ("random:gemma-3-270m@seed=007", "gemma-3-270m", 7, "random:gemma-3-270m@seed=7"),
    ("random:org/model@seed=2147483647", "org/model", 2**31 - 1,
     "random:org/model@seed=2147483647"),
    ("random:./models/a@b", "./models/a@b", 0, "random:./models/a@b"),
])
def test_a_spec_is_its_base_its_seed_and_one_canonical_name(name, base, seed, canonical):
    u = models.parse_untrained(name)
    assert (u.base, u.seed, u.name) == (base, seed, canonical)
    assert models.parse_untrained(canonical) == u
    assert models.parse_untrained(base) is None


@pytest.mark.parametrize("name, says", [
    ("random:smollm2-135m-instruct@seed=abc", "must be an integer from 0 to 2147483647"),
    ("random:smollm2-135m-instruct@seed=-1", "got '-1'"),
    ("random:smollm2-135m-instruct@seed=", "got ''"),
    ("random:smollm2-135m-instruct@seed=1.5", "got '1.5'"),
    ("random:smollm2-135m-instruct@seed=2147483648", "got '2147483648'"),
    ("random:smollm2-135m-instruct@seed=\u0661", "the seed of model"),  # an Arabic-Indic one
    ("random:", "got no model"),
    ("random:@seed=1", "got no model"),
    ("random:random:smollm2-135m-instruct", "got 'random:smollm2-135m-instruct'"),
    ("random:smollm2-135m-instruct@seed=1@seed=2", "got 'smollm2-135m-instruct@seed=1'"),
])
def test_a_bad_spec_fails_in_one_line_before_any_work(name, says, no_hub, monkeypatch):
    """Before: a bad seed or an empty base fell through to the hub id check ("not a valid hub
    id"), naming neither the seed nor the spec's form."""
    monkeypatch.setattr(models.socket, "create_connection",
                        lambda *a, **k: pytest.fail("a bad spec must not reach the hub"))
    for call in (models.load_model, models.check_model, models.model_identity):
        with pytest.raises(models.ModelNotFoundError) as info:
            call(name)
        message = str(info.value)
        assert "\n" not in message and says in message and repr(name) in message
        assert "random:<model>@seed=N" in message


def _not_found(name, call=models.load_model) -> str:
    with pytest.raises(models.ModelNotFoundError) as info:
        call(name)
    return str(info.value)


def test_an_unknown_base_is_named_with_the_control_it_may_mean(no_hub):
    for call in (models.load_model, models.check_model):
        message = _not_found("random:smollm2-135m", call)
        assert message.startswith("model 'random:smollm2-135m' not found: 'smollm2-135m' is not "
                                  "an embedded model")
        assert "did you mean 'random:smollm2-135m-instruct'?" in message.lower()
        assert "random:<model> is the untrained control" in message
        for embedded in models.EMBEDDED_MODELS:
            assert repr(embedded) in message
    message = _not_found("random-smollm2-135m-instruct")  # a hub id of that name
    assert "did you mean 'random:smollm2-135m-instruct'?" in message.lower()
    assert "Did you mean 'smollm2-135m-instruct'?" in _not_found("smollm2-135m")
    assert "does not exist" in _not_found("random:./no/such/folder")


# --- a tiny model folder: weights, tokenizer, identity ------------------------------------------

def test_the_control_is_the_architecture_with_its_initialisers_draw(tiny_folder):
    state = torch.get_rng_state()
    control = _load(f"random:{tiny_folder}")
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random state is untouched
    torch.manual_seed(123)  # the draw is the seed's, whatever the global state
    again = _load(f"random:{tiny_folder}@seed=0")
    other = _load(f"random:{tiny_folder}@seed=1")
    trained = _load(str(tiny_folder))
    assert _same_weights(control, again)
    assert not _same_weights(control, other) and not _same_weights(control, trained)
    assert type(control.model) is type(trained.model)
    shape = ("num_hidden_layers", "hidden_size", "vocab_size", "num_key_value_heads")
    assert ({k: getattr(control.model.config, k) for k in shape}
            == {k: getattr(trained.model.config, k) for k in shape})
    _same_tokenizer(control, trained)
    # what LlamaPreTrainedModel._init_weights draws: N(0, initializer_range) weights, unit norms
    # (the stand-in trained weights were drawn with a standard deviation of 0.3)
    std = control.model.config.initializer_range
    up = control.model.model.layers[0].mlp.up_proj.weight
    assert abs(up.std().item() - std) < 0.1 * std
    assert torch.equal(control.model.model.norm.weight, torch.ones(32))
    assert not torch.equal(trained.model.model.norm.weight, torch.ones(32))
    assert control.weights.startswith("none (random:") and control.model.training is False


def test_identity_follows_the_base_the_seed_and_the_initialiser(tiny_folder, tmp_path,
                                                                  monkeypatch):
    name = f"random:{tiny_folder}"
    ident = models.model_identity(name + "@seed=0", device="cpu")
    lm = _load(name)
    assert lm.identity() == ident and ident["model"] == lm.name == name
    base = models.model_identity(str(tiny_folder), device="cpu")["model_revision"]
    assert ident["model_revision"] == models.untrained_revision(base, 0)
    assert ident["model_revision"].startswith("random:") and len(ident["model_revision"]) == 71
    assert lm.source == {"untrained": {"base": str(tiny_folder), "base_revision": base, "seed": 0,
                                       "initialiser": models.INITIALISER,
                                       "config_from": str(tiny_folder)}}
    assert importlib.metadata.version("transformers") in models.INITIALISER
    assert torch.__version__.split("+")[0] in models.INITIALISER

    copy = tmp_path / "copy"
    shutil.copytree(tiny_folder, copy)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "rms_norm_eps": 1e-5}))
    revisions = {ident["model_revision"],
                 models.model_identity(name + "@seed=1", device="cpu")["model_revision"],
                 models.model_identity(f"random:{copy}", device="cpu")["model_revision"]}
    monkeypatch.setattr(models, "INITIALISER", models.INITIALISER + "; another release")
    revisions.add(models.model_identity(name, device="cpu")["model_revision"])
    assert len(revisions) == 4
    assert models.untrained_revision(None, 0) is None  # a hub model not in the cache


def test_identity_of_an_embedded_control_reads_and_writes_nothing_more(monkeypatch, tmp_path):
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    for base in models.EMBEDDED_MODELS:
        trained = models.model_identity(base, device="cpu")
        control = models.model_identity(f"random:{base}@seed=3", device="cpu")
        assert control == {**trained, "model": f"random:{base}@seed=3",
                           "model_revision": models.untrained_revision(
                               trained["model_revision"], 3)}
        models.check_model(f"random:{base}")
    assert not (tmp_path / "cache").exists()


# --- the real SmolLM2 and Gemma -------------------------------------------------------------------

@pytest.fixture(scope="module")
def control(lm):
    """random:smollm2-135m-instruct, after the trained model (so its converted folder is there)."""
    return _load("random:smollm2-135m-instruct")


def test_untrained_smollm2_keeps_the_tokenizer_and_predicts_about_uniformly(control, lm):
    assert control.identity() == models.model_identity("random:smollm2-135m-instruct",
                                                        device="cpu")
    assert control.source["untrained"]["config_from"] == lm.source["converted_to"]
    _same_tokenizer(control, lm)
    assert type(control.model) is type(lm.model)
    assert control.model.config.num_hidden_layers == lm.model.config.num_hidden_layers == 30
    uniform = -math.log(len(control.tokenizer))  # -10.80 nats
    untrained, trained = _mean_logprob_per_token(control), _mean_logprob_per_token(lm)
    assert np.all(np.abs(untrained - uniform) < 0.5), (untrained, uniform)
    assert np.all(trained > untrained + 3), (trained, untrained)


@pytest.mark.slow
def test_without_the_converted_folder_the_control_reads_the_gguf_alike(control, monkeypatch,
                                                                       tmp_path):
    """An empty cache: the config and tokenizer come from the GGUF's metadata, nothing is
    converted (no trained tensor read), and the weights are the same bits, drawn under another
    number of threads."""
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1 if threads > 1 else 2)
    try:
        other = _load("random:smollm2-135m-instruct")
    finally:
        torch.set_num_threads(threads)
    assert other.source["untrained"]["config_from"].endswith(".gguf")
    assert not (tmp_path / "cache" / "models").exists()
    assert other.identity() == control.identity()
    assert _same_weights(other, control)
    _same_tokenizer(other, control)


def test_untrained_gemma_keeps_the_tokenizer_and_predicts_about_uniformly(gemma):
    control = _load("random:gemma-3-270m")
    assert control.identity() == models.model_identity("random:gemma-3-270m", device="cpu")
    _same_tokenizer(control, gemma)
    assert type(control.model) is type(gemma.model)
    uniform = -math.log(len(control.tokenizer))  # -12.48 nats
    untrained, trained = _mean_logprob_per_token(control), _mean_logprob_per_token(gemma)
    assert np.all(np.abs(untrained - uniform) < 0.5), (untrained, uniform)
    assert np.all(trained > untrained + 3), (trained, untrained)
