import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _data_dir() -> Path | None:
    """$XCOMPS_DATA_DIR, else ../shared/data beside the checkout, unless $XCOMPS_NO_SHARED_DATA is
    set (tests only: it stands for a fresh clone without a data folder, where every test that
    reads the datasets must skip through the `data_dir` fixture; issue 43)."""
    env = os.environ.get("XCOMPS_DATA_DIR")
    if env:
        return Path(env)
    if os.environ.get("XCOMPS_NO_SHARED_DATA"):
        return None
    beside = REPO.parent / "shared" / "data"
    return beside if beside.is_dir() else None


# Tests that load a real model (the `lm` or `gemma` fixture, directly, through another fixture, or
# by name: a parameter "lm"/"gemma" passed to request.getfixturevalue) take seconds to minutes:
# they are marked `slow` here, by that rule, so `pytest -m "not slow"` (make check) runs the quick
# ones and plain `pytest` still runs everything (make test: the fast tier, then the slow). The
# other slow tests carry `@pytest.mark.slow` themselves: the chapters (tests/book/test_notebooks.py,
# a module-level mark) and the simulations of a decision rule over many generated data sets (null
# rates and power of the claims' tests, 100 to 300 simulated studies each, 7 to 95 CPU seconds;
# issue 29, measured with --durations; README, "Developing"), in tests/analysis/.
SLOW_FIXTURES = {"lm", "gemma"}


def _is_slow(item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and v in SLOW_FIXTURES for v in params.values())


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The offline data folder (XCOMPS_DATA_DIR, else ../shared/data beside the checkout)."""
    d = _data_dir()
    if d is None or not (d / "blimp").is_dir():
        pytest.skip("no offline data: set XCOMPS_DATA_DIR (see README)")
    return d


@pytest.fixture(autouse=True)
def _data_env(monkeypatch):
    d = _data_dir()
    if d is not None:
        monkeypatch.setenv("XCOMPS_DATA_DIR", str(d))


@pytest.fixture(scope="session")
def lm():
    from xcomps_utils.lm.models import load_model

    return load_model("smollm2-135m-instruct", device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def gemma():
    """Gemma-3-270M (embedded, cached after its first conversion); skipped if not installed."""
    from xcomps_utils.lm.models import load_model

    try:
        return load_model("gemma-3-270m", device="cpu", dtype="float32")
    except ModuleNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture
def store_of():
    """Results stores made of real runs of the shipped store (``store/``): ``store_of(root,
    runs)`` copies the runs' records, pairs and measures into ``root`` (beside what it holds),
    ``shipped.json`` naming the folders they were copied without, and returns the
    :class:`~xcomps_utils.runs.store.Store`."""
    import json
    import shutil

    from xcomps_utils.runs.store import SHIPPED, Store

    shipped_store = REPO / "store"

    def copy(root: Path, runs: list[str]):
        root = Path(root)
        record = json.loads((shipped_store / SHIPPED).read_text())
        omitted = (json.loads((root / SHIPPED).read_text())["omitted"]
                   if (root / SHIPPED).exists() else {})
        for r in runs:
            shutil.copytree(shipped_store / "runs" / r, root / "runs" / r)
            shutil.copytree(shipped_store / "measures" / f"run={r}", root / "measures" / f"run={r}")
            omitted[r] = sorted({*record["omitted"].get(r, []), *(
                p.name for p in shipped_store.iterdir()
                if p.name != "measures" and (p / f"run={r}").is_dir())})
        (root / SHIPPED).write_text(json.dumps({**record, "omitted": omitted}))
        return Store(root)

    return copy
