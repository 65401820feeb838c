"""End to end: the chapters run through papermill with small parameters."""

import json
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parent.parent


def _run(tmp_path, name, **params):
    import jupytext
    import papermill

    nb = jupytext.read(REPO / "notebooks" / f"{name}.md")
    src = tmp_path / f"{name}.ipynb"
    jupytext.write(nb, src)
    out = tmp_path / f"{name}-out.ipynb"
    papermill.execute_notebook(str(src), str(out), parameters=params, cwd=str(tmp_path),
                               kernel_name="python3", progress_bar=False,
                               execution_timeout=900)
    return json.loads(out.read_text())


def test_parameters_cell_survives_jupytext():
    import jupytext

    nb = jupytext.read(REPO / "notebooks" / "direct_scoring.md")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "n_pairs = 150" in tagged[0].source


def _errors(nb):
    return [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_direct_scoring_notebook_renders_again_from_its_store(data_dir, tmp_path):
    from xcomps_utils.store import Store

    store = tmp_path / "results"
    nb = _run(tmp_path, "direct_scoring", n_pairs=6, store=str(store), compare_model=None)
    assert not _errors(nb) and "image/png" in json.dumps(nb)  # figures were drawn
    first = _run(tmp_path, "first_token", convention_pairs=12, store=str(store))
    assert not _errors(first) and "a spread of" in json.dumps(first)
    runs = Store(store).runs()
    # the page's run, the next page's three first-token conventions, and what exercises run
    assert len(runs) >= 4 and set(runs.bos_policy) == {"bos", "drop_first", "lm_eval"}
    main = runs[runs.pairs == 24].run.item()
    measures = Store(store).measures([main])
    assert set(measures.task) == {"blimp_anaphor", "blimp_animacy", "crows_pairs", "dust"}
    record = Store(store).run(main).record
    assert "crows_pairs/crows_pairs_anonymized.csv" in record["provenance"]["data_sha256"]
    # the second time, every run is in the store: the page renders without loading a model
    again = _run(tmp_path, "direct_scoring", n_pairs=6, store=str(store), compare_model=None)
    text = json.dumps(again)
    assert not _errors(again) and "read from the results store" in text and "image/png" in text
    again = _run(tmp_path, "first_token", convention_pairs=12, store=str(store))
    assert not _errors(again)
    assert len(Store(store).runs()) == len(runs)  # nothing recomputed beside


def test_bad_parameter_is_named(data_dir, tmp_path):
    import papermill

    with pytest.raises(papermill.PapermillExecutionError, match="parameter 'n_pairs' must be"):
        _run(tmp_path, "direct_scoring", n_pairs="abc", store=str(tmp_path / "results"))


def test_reproducibility_notebook_runs(data_dir, tmp_path):
    nb = _run(tmp_path, "reproducibility")
    assert "verified" in json.dumps(nb)


def test_token_perplexity_notebooks_small_run(data_dir, tmp_path):
    from xcomps_utils.store import Store

    store = tmp_path / "results"
    nb = _run(tmp_path, "token_perplexity_results", items_per_task=2,
              tasks=["blimp_anaphor", "crows_pairs", "nonsense"], store=str(store))
    assert not _errors(nb)
    runs = Store(store).runs()  # the chapter's run (its exercises may add runs of their own)
    (rid,) = runs[runs.pairs == 3 * 2].run
    metrics = Store(store).measures([rid])
    assert metrics[["task", "pair_id", "wording", "order"]].drop_duplicates().shape[0] == 3 * 2 * 8
    groups = Store(store).detail(rid, "ppl_groups")
    assert set(groups.category) == {"pivotal", "period", "other"}
    method = _run(tmp_path, "token_perplexity_method", store=str(store))
    assert not _errors(method)


def test_xcomps_notebooks_small_run(tmp_path):
    from xcomps_utils.store import Store

    store = tmp_path / "results"
    nb = _run(tmp_path, "xcomps_results", model="smollm2-135m-instruct", items_per_language=5,
              languages=["en", "de", "zh"], store=str(store))
    assert not _errors(nb)
    runs = Store(store).runs().set_index("method")
    assert set(runs.index) == {"meta", "direct", "neuro"} and set(runs.pairs) == {3 * 5 * 4}
    probes = Store(store).measures([runs.loc["neuro", "run"]])
    assert probes.layer.max() == 30 and probes[["lang", "subset"]].drop_duplicates().shape[0] == 3 * 4 + 3
    assert "not comparable" in json.dumps(nb)  # the sample notice is on the page
    # the agreement page reads the Direct run of the same pairs instead of computing its own
    agree = _run(tmp_path, "xcomps_token_level_agreement", model="smollm2-135m-instruct",
                 items_per_language=5, languages=["en", "de", "zh"], n_boot=100, store=str(store))
    assert not _errors(agree) and "image/png" in json.dumps(agree)
    assert len(Store(store).runs()) == len(runs)
    ds = _run(tmp_path, "xcomps_dataset", languages=["en", "de"])
    assert "not comparable" in json.dumps(ds)
