"""`make book` loads no model (issue 41): the three chapters whose exercises used to load one, the
direct-scoring page (its surprisal-by-hand solution converted SmolLM2), the XCOMPS results
page (its leaking-folds solution converted Gemma and computed a Neuro run into ``results/``) and
the reproducibility page (its command-line solution computed 5 pairs into a fresh store),
executed at their publish parameters (declared in ``pages/params.py``; the shipped ``store/``) as
`make book` executes them: papermill, the project's kernel, the chapter's ``store`` parameter.

They run with an empty user cache (``XCOMPS_CACHE_DIR`` and ``HOME`` in a temporary folder) in a
temporary working directory (a stray write to the default store ``results`` lands there), and
with ``xcomps_utils.lm.models.load_model`` replaced in the kernel (the ``sitecustomize`` of the
``guard`` fixture, ``tests/conftest.py``, on the kernel's path) by one that logs its call and
raises. Then no loader was called, no model was converted into the cache, nothing was written to
``results/``, and ``store/`` is as it was.

The embedded models' identities (the SHA-256 of their weights, part of every run's key) are
hashed from the installed packages without writing anything, so the cache stays empty.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIP_STORE = REPO / "store"
CHAPTERS = ("direct_scoring", "xcomps_results", "reproducibility")

def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _make_value(expr: str, *args: str) -> list[str]:
    """What the Makefile expands ``expr`` to (GNU make's ``--eval``), as words."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(
        ["make", "--no-print-directory", *args, "--eval", f"print-value: ; @echo {expr}",
         "print-value"], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout.split()


def _publish_parameters(chapter: str) -> dict:
    """What `make book` passes to papermill for ``chapter`` (``SIZE=publish``,
    ``STORE=$(SHIP_STORE)``): the declared publish sizes (:func:`params.papermill_parameters`)."""
    from xcomps_utils.pages import params

    (ship,) = _make_value("$(SHIP_STORE)")
    return params.papermill_parameters(chapter, "publish", ship)


@pytest.mark.slow
def test_book_chapters_load_no_model(data_dir, tmp_path, guard):
    import jupytext
    import nbformat
    import papermill

    home, cache, work = tmp_path / "home", tmp_path / "cache", tmp_path / "work"
    for d in (home, cache, work):
        d.mkdir()
    before = _files(SHIP_STORE)
    env = guard.env({k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
                    HOME=str(home), XCOMPS_CACHE_DIR=str(cache), XCOMPS_DATA_DIR=str(data_dir),
                    OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", XCOMPS_PROBE_JOBS="1",
                    CUDA_VISIBLE_DEVICES="")  # the store's runs are CPU's
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for chapter in CHAPTERS:
            params = _publish_parameters(chapter)
            if chapter != "reproducibility":  # it has no store: its CLI exercise finds store/
                assert params.get("store") == "store", params  # make book reads the shipped store
                params["store"] = str(SHIP_STORE)  # the same store, from the temporary cwd
            nb = jupytext.read(REPO / "notebooks" / f"{chapter}.md")
            src, out = work / f"{chapter}.ipynb", work / f"{chapter}.out.ipynb"
            nbformat.write(nb, src)
            papermill.execute_notebook(str(src), str(out), parameters=params,
                                       kernel_name="xcomps-study", cwd=str(work),
                                       progress_bar=False, execution_timeout=1200)
            text = json.dumps(json.loads(out.read_text()))
            assert "no model loaded" in text or chapter != "direct_scoring"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert not guard.loads(), "a model loader was called:\n" + "\n".join(guard.loads())
    assert not (work / "results").exists(), sorted(_files(work / "results"))
    cached = _files(cache)
    assert not cached, sorted(cached)  # no model converted, no GGUF assembled
    assert not any((home / ".cache").glob("*/models")), sorted(_files(home))
    assert _files(SHIP_STORE) == before  # nothing added to the shipped store


def test_sitecustomize_refuses_the_loader(guard):
    """The guard the test above relies on: in a fresh interpreter with the ``sitecustomize``,
    ``load_model`` logs its call and raises (and importing the module loads nothing)."""
    code = ("from xcomps_utils.lm.models import load_model\n"
            "try:\n    load_model('smollm2-135m-instruct')\nexcept RuntimeError as e:\n"
            "    print('refused', e)\n")
    r = subprocess.run([sys.executable, "-c", code], env=guard.env(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "refused" in r.stdout, r.stderr
    (load,) = guard.loads()
    assert "smollm2-135m-instruct" in load
