"""End to end: the chapters at smoke sizes, executed once per `make test`.

`make smoke` executes every chapter (papermill, the smoke sizes declared in xcomps_utils/pages/params.py)
into build/smoke/book/executed/, with its own results store build/smoke/results; `make test` runs
it before the slow tier, and these tests read those executed notebooks and that store instead of
executing the chapters again. Run without it (pytest alone, or after a change to a chapter's
inputs), a test first has make execute the chapters it reads exactly as `make
smoke` does (`make smoke-chapters ONLY=...`): it never skips, and reads what the chapter's current
source prints. A chapter is executed again when its inputs changed (its source, its parameters,
the package, the runs it read: the Makefile's stamps), so an edit to xcomps_utils makes every
executed copy stale.

Papermill runs here only for what a smoke build cannot show: a chapter rendered a second time from
the store of its first run, without loading a model (on a copy of the smoke store). A bad
parameter named under papermill is tests/runs/test_adversarial.py's (five chapters).
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # every test here reads or executes chapters

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "build" / "smoke"  # SMOKE_DIR in the Makefile
EXECUTED = SMOKE / "book" / "executed"
STORE = SMOKE / "results"


def _make(*args: str) -> None:
    # MAKEFLAGS of a `make test` above (-n, -k, a jobserver) are not this make's
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, f"make {' '.join(args)}:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"


def _executed(*chapters: str) -> list[dict]:
    """The smoke build's executed chapters, in the order given (the order `make smoke` runs them
    in, where one chapter reads another's runs), executed first where absent or stale."""
    _make("smoke-chapters", "ONLY=" + " ".join(chapters))
    return [json.loads((EXECUTED / f"{c}.ipynb").read_text()) for c in chapters]


def _errors(nb):
    return [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _parameters(nb) -> dict:
    """What papermill injected (the chapter's smoke sizes, pages/params.py)."""
    return nb["metadata"]["papermill"]["parameters"]


def _runs_created_by(nb, store=STORE) -> pd.DataFrame:
    """The runs of ``store`` that ``nb``'s chapter computed and read: their provenance names the
    chapter (``XCOMPS_CHAPTER``, set by the Makefile's rule), which holds when two chapters are
    executed at once, as make smoke does, and the chapter's reads log (``reads/<chapter>.jsonl``)
    names them (the smoke store is kept between builds: it may hold runs an earlier version of
    the chapter computed)."""
    from xcomps_utils.runs.store import Store

    output = REPO / nb["metadata"]["papermill"]["output_path"]  # absolute stays absolute
    chapter = output.stem
    root = Path(store)
    runs = Store(store).runs()
    by = [json.loads((root / "runs" / r / "run.json").read_text()).get("provenance", {})
          .get("chapter") for r in runs.run]
    log = output.parent / "reads" / f"{chapter}.jsonl"
    read = {rec["run"] for rec in map(json.loads, log.read_text().splitlines())
            if rec["store"] == str(root.resolve())} if log.is_file() else set()
    return runs[[b == chapter and r in read for b, r in zip(by, runs.run)]]


def _xcomps_direct_runs() -> pd.DataFrame:
    """The Direct runs the two XCOMPS pages (results, token level) computed, with the page that
    computed each (``chapter``) and ``control``: its pairs are the token-level page's control
    (continuations shuffled, ``|cont:`` ids)."""
    pages = _executed("xcomps_results", "xcomps_token_level")
    runs = pd.concat([_runs_created_by(nb).assign(chapter=c)
                      for nb, c in zip(pages, ("xcomps_results", "xcomps_token_level"))])
    runs = runs[runs.method == "direct"].reset_index(drop=True)
    runs["control"] = [pd.read_parquet(Path(STORE) / "runs" / r / "pairs.parquet").pair_id
                       .str.contains("|cont:", regex=False).all() for r in runs.run]
    return runs


def test_parameters_cell_survives_jupytext():
    import jupytext

    nb = jupytext.read(REPO / "notebooks" / "direct_scoring.md")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "n_pairs = 150" in tagged[0].source


def test_direct_scoring_and_first_token_chapters(data_dir):
    from xcomps_utils.runs.store import Store

    direct, first = _executed("direct_scoring", "first_token")
    assert not _errors(direct) and "image/png" in json.dumps(direct)  # figures were drawn
    assert not _errors(first) and "a spread of" in json.dumps(first)
    n_pairs = _parameters(direct)["n_pairs"]
    runs = _runs_created_by(direct)  # the page's runs and what its exercises run
    main = runs[(runs.method == "direct") & (runs.pairs == 4 * n_pairs)].run.item()
    measures = Store(STORE).measures([main])
    assert set(measures.task) == {"blimp_anaphor", "blimp_animacy", "crows_pairs", "dust"}
    record = Store(STORE).run(main).record
    assert "crows_pairs/crows_pairs_anonymized.csv" in record["provenance"]["data_sha256"]
    conventions = _runs_created_by(first)  # the next page's three first-token conventions
    assert {"bos", "drop_first", "lm_eval"} <= set(conventions.bos_policy)


def test_pages_render_again_from_their_store(data_dir, tmp_path):
    """The second time, every run is in the store: the direct-scoring, first-token and XCOMPS
    token-level pages render without loading a model and nothing is recomputed beside
    (papermill, through the Makefile's rule, on a copy of the smoke store)."""
    from xcomps_utils.runs.store import Store

    pages = ("direct_scoring", "first_token", "xcomps_token_level")
    _executed(*pages)
    store, out = tmp_path / "results", tmp_path / "executed"
    shutil.copytree(STORE, store)
    out.mkdir()
    before = len(Store(store).runs())
    _make("SIZE=smoke", f"EXECUTED={out}", f"STORE={store}",
          *(str(out / f"{c}.ipynb") for c in pages))
    again = {c: json.loads((out / f"{c}.ipynb").read_text()) for c in pages}
    for c in ("direct_scoring", "xcomps_token_level"):
        text = json.dumps(again[c])
        assert not _errors(again[c]) and "read from the results store" in text, c
        assert "image/png" in text, c
    assert not _errors(again["first_token"])
    assert len(Store(store).runs()) == before  # nothing recomputed beside


def test_xcomps_token_level_chapter():
    """The token-level page: its explorer and figures drawn, its claims printed, and its two
    Direct runs (the pairs and their mismatched control), per model it scores."""
    (nb,) = _executed("xcomps_token_level")
    text = json.dumps(nb)
    assert not _errors(nb)
    assert "bokeh.min.js" in text and "image/png" in text
    assert any(v in text for v in ("**Supported**", "**Inconclusive**", "**Contradicted**",
                                   "**Cannot be decided"))
    assert set(_runs_created_by(nb).method) == {"direct"}
    models = _parameters(nb)["models"]
    # per model, the pairs' Direct run and its control (continuations shuffled); the pairs' run
    # is shared with the XCOMPS results page, and whichever of the two pages make executes
    # first computes it
    runs = _xcomps_direct_runs()
    mine = runs[runs.model.isin(models)]
    assert sorted(mine.control) == [False] * len(models) + [True] * len(models)
    assert (mine[mine.control].chapter == "xcomps_token_level").all()
    # what the page read from the store, logged for `make ship`: both runs' measures and token
    # tables (each is decomposed)
    log = [json.loads(x) for x in (EXECUTED / "reads" / "xcomps_token_level.jsonl")
           .read_text().splitlines()]
    read = {(r["run"], r["folder"]) for r in log}
    assert {(r, "measures") for r in mine.run} <= read
    assert {r for r, f in read if f == "direct_tokens"} == set(mine.run)


def test_reproducibility_chapter(data_dir):
    (nb,) = _executed("reproducibility")
    assert not _errors(nb) and "verified" in json.dumps(nb)


def test_token_perplexity_chapters(data_dir):
    from xcomps_utils.runs.store import Store

    method, results = _executed("token_perplexity_method", "token_perplexity_results")
    assert not _errors(method) and not _errors(results)
    runs = _runs_created_by(results)  # the chapter's run (its exercises may add runs of their own)
    (rid,) = runs[(runs.method == "token_ppl") & (runs.pairs == runs.pairs.max())].run
    n = runs.set_index("run").pairs[rid]
    prompts = Store(STORE).measures([rid])[["task", "pair_id", "wording", "order"]].drop_duplicates()
    assert len(prompts[["task", "pair_id"]].drop_duplicates()) == n  # every pair of the run
    # each of its task's wordings kept by the page (a wording belongs to one task family) in
    # both label orders
    assert set(prompts.wording) == set(_parameters(results)["wordings"])
    assert (prompts.groupby(["task", "pair_id", "wording"]).order.nunique() == 2).all()
    groups = Store(STORE).detail(rid, "ppl_groups")
    assert set(groups.category) == {"pivotal", "period", "other"}


def test_xcomps_chapters():
    from xcomps_utils.runs.store import Store

    ds, res, agree = _executed("xcomps_dataset", "xcomps_results", "xcomps_token_level_agreement")
    assert not _errors(ds) and "not comparable" in json.dumps(ds)
    assert not _errors(res) and "not comparable" in json.dumps(res)  # the sample notice
    p = _parameters(res)
    n_lang = len(p["languages"])
    n = n_lang * p["items_per_language"] * 4  # x 4 negative types
    created = _runs_created_by(res)
    # The leaking-folds exercise's Neuro run (exercises.compare_fold_runs): the first language's
    # pairs with items and concepts hidden, named in the exercise's table beside the chapter's
    # Neuro run, and read through the chapter's store, so the read log `make ship` ships from
    # names it (the shipped store then holds it and `make book` loads no model for it).
    (table,) = [o["data"]["text/plain"] for c in res["cells"] if c["cell_type"] == "code"
                and "compare_fold_runs" in "".join(c["source"]) for o in c.get("outputs", [])
                if "text/plain" in o.get("data", {})]
    named = set(re.findall(r"neuro-[\w.-]+?-[0-9a-f]{12}", "".join(table)))
    (leaky,) = named - set(created[created.method == "neuro"].query("pairs == @n").run)
    assert len(named) == 2 and leaky in set(created.run)
    mine = Store(STORE).runs().set_index("run").loc[leaky]
    assert mine.method == "neuro" and mine.pairs == p["items_per_language"] * 4  # one language
    hidden = pd.read_parquet(Path(STORE) / "runs" / leaky / "pairs.parquet")
    assert set(hidden.lang) == {p["languages"][0]} and "acceptable_concept" not in hidden
    assert (hidden.property == hidden.pair_id.astype(str)).all()  # each pair its own item
    log = [json.loads(x) for x in (EXECUTED / "reads" / "xcomps_results.jsonl")
           .read_text().splitlines()]
    assert (leaky, "measures") in {(r["run"], r["folder"]) for r in log}
    # the chapter's own runs: n pairs each, one per method
    runs = created[created.run != leaky].set_index("method")
    # The token-level page needs the same Direct run: with two chapters executed at once, either
    # page may be the one that computes it, and the other reads it from the store.
    direct = _xcomps_direct_runs()
    direct = direct[(direct.model == p["models"][0]) & ~direct.control]
    assert len(direct) == 1 and direct.pairs.item() == n
    assert {"meta", "neuro"} <= set(runs.index) <= {"meta", "direct", "neuro"}
    assert runs.index.is_unique and set(runs.pairs) == {n}
    probes = Store(STORE).measures([runs.loc["neuro", "run"]])
    assert probes.layer.max() == 30
    assert probes[["lang", "subset"]].drop_duplicates().shape[0] == n_lang * 4 + n_lang
    # the agreement page reads the Direct run of the same pairs instead of computing its own
    assert not _errors(agree) and "image/png" in json.dumps(agree)
    assert _runs_created_by(agree).empty
