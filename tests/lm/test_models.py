import socket
import threading
import types
from pathlib import Path

import pytest
import torch

from xcomps_utils.lm import models


def test_converted_cache_scores_exactly_like_the_gguf_model(lm):
    """The cached safetensors copy must be the GGUF model, bit for bit, and its tokenizer the
    GGUF's (the conversion reads the file once, :func:`models._one_gguf_reader`; transformers
    alone, here, reads it for each part)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = models._embedded_gguf(models.EMBEDDED_MODELS["smollm2-135m-instruct"])
    direct = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    for text in ("Amanda was respected by some waitresses.", "Él no sabía qué hacer 2024.",
                 "Москва — столица России.", "北京是中国的首都。"):
        assert tok(text).input_ids == lm.tokenizer(text).input_ids, text
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
    assert models.resolve_device_dtype(torch.device("cpu"), torch.float16)[1] == torch.float16
    with pytest.raises(ValueError, match=r"^the 'dtype' parameter must be one of 'auto', "
                                         r"'float32', .*; got 'float8'$"):
        models.resolve_device_dtype("cpu", "float8")


def test_missing_embedded_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(models.EMBEDDED_MODELS, "nope",
                        models._Embedded("no_such_package_xyz", "pip install nope", "x.gguf"))
    with pytest.raises(ModuleNotFoundError, match="pip install nope"):
        models.load_model("nope")


# --- bad names fail at once -------------------------------------------------------------------

def _fails_fast(name, monkeypatch, hub_checks=1, **kwargs) -> str:
    """The message of the ``ModelNotFoundError`` of ``load_model(name, **kwargs)``, checked to
    come after exactly ``hub_checks`` checks of the hub's reachability (0 or 1: no retry) and
    without transformers unless that check found the hub reachable (then transformers is asked
    once): transformers' hub client is what retries an unreachable hub for 50 s. The check's own
    bound is the hanging hub's test."""
    import transformers

    checks, asked = [], []
    check = models._hub_unreachable

    def counted(*a, **k):
        checks.append(check(*a, **k))
        return checks[-1]

    def guarded(original):
        def from_pretrained(*a, **k):
            asked.append(a[:1])
            if checks[-1:] != [None]:
                pytest.fail(f"transformers asked for {a[:1]} without a reachable hub: "
                            f"checks {checks}")
            return original(*a, **k)
        return from_pretrained

    monkeypatch.setattr(models, "_hub_unreachable", counted)
    for auto in (transformers.AutoTokenizer, transformers.AutoConfig,
                 transformers.AutoModelForCausalLM):
        monkeypatch.setattr(auto, "from_pretrained", guarded(auto.from_pretrained))
    with pytest.raises(models.ModelNotFoundError) as info:
        models.load_model(name, device="cpu", **kwargs)
    assert len(checks) == hub_checks and len(asked) <= 1, (checks, asked)
    return str(info.value)


def _lists_embedded(message: str) -> None:
    for embedded in models.EMBEDDED_MODELS:
        assert repr(embedded) in message
    assert "folder" in message and "config.json" in message
    assert "random:<model> is the untrained control" in message


def test_misspelt_embedded_name_fails_fast_here(monkeypatch):
    """In this environment as it is (hub unreachable or not), a typo never hangs 50 s on retries."""
    message = _fails_fast("smollm2-135m", monkeypatch)
    assert "did you mean 'smollm2-135m-instruct'?" in message.lower()
    _lists_embedded(message)
    assert issubclass(models.ModelNotFoundError, ValueError)


def test_unreachable_hub_lists_embedded_models_closest_first(no_hub, monkeypatch):
    message = _fails_fast("gemma3-270m", monkeypatch)
    assert "did you mean 'gemma-3-270m'?" in message.lower()
    assert "not reachable" in message and "127.0.0.1:9" in message
    assert message.index("'gemma-3-270m'") < message.index("'smollm2-135m-instruct'")
    _lists_embedded(message)


def test_hf_hub_offline_counts_as_unreachable(no_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models.socket, "create_connection",
                        lambda *a, **k: pytest.fail("offline mode must not open connections"))
    message = _fails_fast("HuggingFaceTB/SmolLM2-135M", monkeypatch)
    assert "HF_HUB_OFFLINE" in message and "not reachable" in message
    _lists_embedded(message)


def test_hanging_hub_is_bounded(no_hub, monkeypatch):
    """A connect that never answers is cut off after HUB_TIMEOUT_S (plus a little): the error
    comes while the connect still hangs (it is given the bound too)."""
    release, ended, bounds = threading.Event(), threading.Event(), []

    def hang(address, timeout=None):
        bounds.append(timeout)
        try:
            if not release.wait(60):  # the test releases it; a load_model that waits fails
                raise TimeoutError("never released")
            raise ConnectionRefusedError("released by the test")
        finally:
            ended.set()

    monkeypatch.setattr(models, "HUB_TIMEOUT_S", 0.5)
    monkeypatch.setattr(models.socket, "create_connection", hang)
    try:
        message = _fails_fast("someone/some-model", monkeypatch)
        assert not ended.is_set(), "load_model waited for the hanging connect to end"
    finally:
        release.set()
    assert "within 0.5 s" in message and bounds == [0.5]


def test_reachability_goes_through_the_https_proxy(no_hub, monkeypatch):
    monkeypatch.setattr(models.socket, "create_connection", lambda address, timeout=None: (
        pytest.fail(f"connected to {address}") if address != ("127.0.0.1", 1) else
        (_ for _ in ()).throw(ConnectionRefusedError("refused"))))
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "https://hub.invalid")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:1")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert "cannot connect to 127.0.0.1:1" in _fails_fast("someone/some-model", monkeypatch)


def test_local_files_only_fails_without_network(no_hub, monkeypatch):
    monkeypatch.setattr(models.socket, "create_connection",
                        lambda *a, **k: pytest.fail("local_files_only must not open connections"))
    message = _fails_fast("someone/some-model", monkeypatch, hub_checks=0,
                          local_files_only=True)
    assert "local Hugging Face cache" in message


@pytest.mark.parametrize("kind", ["relative", "absolute", "home", "file", "no-config"])
def test_missing_or_bad_folder_names_the_path(kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights.gguf").write_bytes(b"GGUF")
    (tmp_path / "empty").mkdir()
    name = {"relative": "./no/such/folder", "absolute": str(tmp_path / "missing"),
            "home": "~/no-such-xcomps-model-folder", "file": "weights.gguf",
            "no-config": str(tmp_path / "empty")}[kind]
    message = _fails_fast(name, monkeypatch, hub_checks=0)
    assert repr(name) in message
    assert {"relative": "does not exist", "absolute": "does not exist", "home": "does not exist",
            "file": "is not a folder", "no-config": "config.json"}[kind] in message


def test_invalid_hub_id_lists_embedded_models(no_hub, monkeypatch):
    message = _fails_fast("smollm2 135m instruct", monkeypatch, hub_checks=0)
    assert "not a valid hub id" in message
    assert "did you mean 'smollm2-135m-instruct'?" in message.lower()
    _lists_embedded(message)


@pytest.mark.parametrize("gated", [False, True])
def test_repository_not_found_on_reachable_hub(no_hub, monkeypatch, gated):
    """transformers' OSError caused by RepositoryNotFoundError becomes ModelNotFoundError; a gated
    repository's error (a subclass) is left alone."""
    import transformers
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    error = (GatedRepoError if gated else RepositoryNotFoundError)(
        "404", response=types.SimpleNamespace(headers={}, request=None))

    def from_pretrained(path, **kwargs):  # transformers' wording (utils/hub.py, cached_files)
        if gated:
            raise OSError("You are trying to access a gated repo.") from error
        raise OSError(f"{path} is not a local folder and is not a valid model identifier listed on "
                      "'https://huggingface.co/models'") from error

    monkeypatch.setattr(models, "_hub_unreachable", lambda timeout=None: None)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_pretrained)
    if gated:
        with pytest.raises(OSError) as info:
            models.load_model("someone/gated", device="cpu")
        assert not isinstance(info.value, models.ModelNotFoundError)
        return
    message = _fails_fast("smollm2-135m", monkeypatch)
    assert "no such repository" in message
    assert "did you mean 'smollm2-135m-instruct'?" in message.lower()
    _lists_embedded(message)


# --- identity without loading -----------------------------------------------------------------

def test_identity_of_embedded_model_without_loading(lm):
    assert models.model_identity("smollm2-135m-instruct", device="cpu") == lm.identity() == {
        "model": "smollm2-135m-instruct", "model_revision": lm.source["gguf_sha256"],
        "device": "cpu", "dtype": "float32"}
    p = lm.provenance()
    assert {k: p[k] for k in ("model", "model_revision", "dtype")} == {
        k: lm.identity()[k] for k in ("model", "model_revision", "dtype")}


@pytest.mark.slow
def test_identity_of_local_folder_matches_loaded_model(lm):
    folder = lm.source["converted_to"]
    expected = models.model_identity(folder, device="cpu", dtype="float32")
    assert expected["model_revision"].startswith("files:")
    assert len(expected["model_revision"]) == len("files:") + 64
    loaded = models.load_model(folder, device="cpu", dtype="float32")
    assert loaded.identity() == expected and loaded.revision == expected["model_revision"]
    ids = lm.tokenizer("The cat sat.", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, lm.model(ids).logits)


def test_folder_fingerprint_tracks_weights_and_config(tmp_path):
    folder = tmp_path / "m"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"a": 1}')
    big = folder / "model.safetensors"
    big.write_bytes(bytes(3 << 20))
    (folder / "sub" / "extra.bin").write_bytes(b"x" * 10)
    (folder / "README.md").write_text("ignored")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "partial.safetensors").write_bytes(b"ignored")

    def fp():
        return models.model_identity(str(folder), device="cpu")["model_revision"]

    first = fp()
    assert first.startswith("files:") and fp() == first
    (folder / "README.md").write_text("still ignored")
    (folder / ".cache" / "partial.safetensors").write_bytes(b"still ignored")
    assert fp() == first
    with open(big, "r+b") as f:  # last byte of the last MiB
        f.seek(-1, 2)
        f.write(b"\x01")
    second = fp()
    assert second != first
    (folder / "config.json").write_text('{"a": 2}')
    third = fp()
    assert third not in (first, second)
    (folder / "sub" / "extra.bin").rename(folder / "sub" / "other.bin")
    assert fp() != third


def test_identity_of_hub_ids_without_network(no_hub, monkeypatch):
    monkeypatch.setattr(models.socket, "create_connection",
                        lambda *a, **k: pytest.fail("model_identity must not open connections"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert models.model_identity("someone/model", revision=commit, device="cuda:1") == {
        "model": "someone/model", "model_revision": commit, "device": "cuda", "dtype": "bfloat16"}
    assert models.model_identity("someone/model", device="cpu", dtype="fp16") == {
        "model": "someone/model", "model_revision": None, "device": "cpu", "dtype": "float16"}
    with pytest.raises(models.ModelNotFoundError):
        models.model_identity("./no/such/folder")


def _fake_hub_cache(converted: str, tmp_path, commit: str) -> str:
    """A Hugging Face cache holding ``xcomps-test/tiny`` at ``commit`` (refs/main) as symlinks."""
    repo = tmp_path / "hf-cache" / "models--xcomps-test--tiny"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    for f in Path(converted).iterdir():
        (snapshot / f.name).symlink_to(f)
    return "xcomps-test/tiny"


@pytest.mark.slow
def test_cached_hub_id_loads_offline_with_its_commit(lm, no_hub, monkeypatch, tmp_path):
    import transformers

    commit = "89abcdef0123456789abcdef0123456789abcdef"
    name = _fake_hub_cache(lm.source["converted_to"], tmp_path, commit)
    seen = {}
    original = transformers.AutoModelForCausalLM.from_pretrained

    def spy(path, **kwargs):
        seen.update(kwargs)
        return original(path, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", spy)
    expected = models.model_identity(name, device="cpu", dtype="float32")
    assert expected["model_revision"] == commit
    # huggingface_hub may still fetch its agent registry once (3 s bound); the model files come
    # from the cache only (local_files_only=True, no 50 s of retries): at most one host asked.
    hosts, resolve = [], socket.getaddrinfo

    def resolving(host, port, *a, **k):  # every TCP connection's first step
        hosts.append(f"{host}:{port}")
        return resolve(host, port, *a, **k)

    monkeypatch.setattr(socket, "getaddrinfo", resolving)
    loaded = models.load_model(name, device="cpu", dtype="float32")
    assert seen["local_files_only"] is True and len(hosts) <= 1, hosts
    assert loaded.identity() == expected
    assert models.model_identity(name, revision="no-such-branch")["model_revision"] is None
