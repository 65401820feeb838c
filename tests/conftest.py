import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _data_dir() -> Path | None:
    env = os.environ.get("XCOMPS_DATA_DIR")
    if env:
        return Path(env)
    beside = REPO.parent / "shared" / "data"
    return beside if beside.is_dir() else None


# Tests that load a real model (the `lm` or `gemma` fixture, directly, through another fixture, or
# by name: a parameter "lm"/"gemma" passed to request.getfixturevalue), read or execute chapters
# (test_notebooks.py) or simulate a decision rule over many generated data sets (SLOW_SIMULATIONS)
# take seconds to minutes: they are marked `slow`, so `pytest -m "not slow"` (make check) runs the
# quick ones and plain `pytest` still runs everything (make test: the fast tier, then the slow).
SLOW_FIXTURES = {"lm", "gemma"}
SLOW_FILES = {"test_notebooks.py"}
# Null rates and power of the claims' tests, each over 100 to 300 simulated studies: 7 to 95 CPU
# seconds each, 340 s of the fast tier's 615 (issue 29, measured with --durations; README,
# "Developing"). By name (their files are edited elsewhere); the quicker simulations stay fast.
SLOW_SIMULATIONS = {
    "test_pivot_claims_rarely_decide_a_true_null",  # test_grammar_study.py
    "test_resource_trend_over_eighteen_languages",  # test_claims.py, and the six below
    "test_holm_keeps_the_family_wise_error_at_nominal",
    "test_the_bootstrap_minimum_is_where_the_percentile_interval_holds_its_size",
    "test_english_rank_is_a_claim_about_languages",
    "test_morphology_trend_over_eighteen_languages",
    "test_subtle_negatives_harder",
    "test_english_advantage",
    "test_direct_tracks_neuro_within_types",
    "test_agreement_follows_type_is_a_language_level_test_over_eighteen_languages",  # consistency
    "test_resource_trend_null_rate_power_and_the_family_trap",  # test_bmlama_study.py
    "test_resource_trend_equivalence_is_reachable_and_rarely_wrong_at_the_margin",  # same
    "test_morphology_trend_over_a_share_falls_into_no_family_trap",  # same
    "test_methods_track_null_with_shared_family_effects_and_power",  # test_bmlama_study.py
}


def _is_slow(item) -> bool:
    if item.path.name in SLOW_FILES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if getattr(item, "originalname", item.name) in SLOW_SIMULATIONS:
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
