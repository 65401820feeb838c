import pytest
import torch

from xcomps_utils import models


def test_converted_cache_scores_exactly_like_the_gguf_model(lm):
    """The cached safetensors copy must be the GGUF model, bit for bit."""
    from transformers import AutoModelForCausalLM

    gguf = models._embedded_gguf(models.EMBEDDED_MODELS["smollm2-135m-instruct"])
    direct = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=torch.float32).eval()
    ids = lm.tokenizer("Amanda was respected by some waitresses.", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(direct(ids).logits, lm.model(ids).logits)
    assert lm.revision == lm.source["gguf_sha256"] and len(lm.revision) == 64
    assert "quantization_config" not in lm.model.config.to_dict()


def test_provenance_names_model_and_precision(lm):
    p = lm.provenance()
    assert p["model"] == "smollm2-135m-instruct" and p["dtype"] == "float32" and p["device"] == "cpu"


def test_device_dtype_defaults():
    assert models.resolve_device_dtype("cpu", "auto") == (torch.device("cpu"), torch.float32)
    assert models.resolve_device_dtype("cuda", "auto") == (torch.device("cuda"), torch.bfloat16)
    assert models.resolve_device_dtype("cpu", "bf16")[1] == torch.bfloat16
    with pytest.raises(ValueError, match="unknown dtype"):
        models.resolve_device_dtype("cpu", "float8")


def test_missing_embedded_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(models.EMBEDDED_MODELS, "nope",
                        models._Embedded("no_such_package_xyz", "pip install nope", "x.gguf"))
    with pytest.raises(ModuleNotFoundError, match="pip install nope"):
        models.load_model("nope")
