"""Live figures (xcomps_utils.pages.live): self-contained Bokeh HTML carrying the numbers shown."""

import json
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("bokeh")

from xcomps_utils.pages import live  # noqa: E402


def _data(html: str) -> list[dict]:
    """The data sources Bokeh embedded (its JSON document), as column dicts."""
    doc = re.search(r"const docs_json = '(.*?)';\n", html, re.S)
    found = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("name") == "ColumnDataSource" or o.get("type") == "ColumnDataSource":
                data = o.get("attributes", {}).get("data", {})
                entries = data.get("entries") if isinstance(data, dict) else None
                found.append(dict(entries) if entries else data)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(json.loads(doc.group(1).replace("\\'", "'")))
    return found


def _cells():
    rng = np.random.default_rng(1)
    rows = []
    for lang in ("en", "de", "zh"):
        for t in ("taxonomic", "random"):
            a = rng.uniform(0.3, 0.9)
            rows.append({"lang": lang, "negative_sample_type": t, "accuracy": a,
                         "ci_low": a - 0.1, "ci_high": a + 0.05, "decided": 28, "n": 30,
                         "ties": 1, "near_ties": 1})
    return pd.DataFrame(rows)


def test_accuracy_figure_carries_every_cell_and_loads_nothing():
    cells = _cells()
    html = live.accuracy_html(cells, "m", standalone=True)
    assert re.search(r"<script[^>]+src=", html) is None and "bokeh" in html[:5000].lower()
    sources = [s for s in _data(html) if "accuracy" in s]
    got = {(r, g): (a, lo, hi) for s in sources
           for r, g, a, lo, hi in zip(s["row"], s["group"], s["accuracy"], s["low"], s["high"])}
    want = {(r.lang, r.negative_sample_type): (r.accuracy, r.ci_low, r.ci_high)
            for r in cells.itertuples()}
    assert got.keys() == want.keys()
    for k in want:
        assert np.allclose(got[k], want[k])
    assert {d for s in sources for d in s["ties"]} == {2}  # ties and near ties shown on hover


def test_bokeh_js_is_written_once_per_page_in_the_book_and_always_elsewhere(monkeypatch):
    monkeypatch.setenv("XCOMPS_CHAPTER", "a_page")  # the book's build executes a chapter
    live.bokeh_js(again=True)  # this process has now written it
    second = live.accuracy_html(_cells(), "m")
    assert len(second) < 100_000 and "Bokeh" in second  # the figure only
    assert len(live.accuracy_html(_cells(), "m", standalone=True)) > 500_000
    monkeypatch.delenv("XCOMPS_CHAPTER")  # Colab, VS Code, a re-run cell: each output alone
    assert len(live.accuracy_html(_cells(), "m")) > 500_000


def test_claims_figure_colours_each_verdict_and_hovers_its_family():
    table = pd.DataFrame({
        "claim": ["a", "b", "c"], "scope": ["Direct", "", "Meta"],
        "hypothesis": ["h1", "h2", "h3"], "verdict": ["supported", "inconclusive", "supported"],
        "effect": [0.2, 0.01, -0.3], "ci_low": [0.1, -0.1, -0.5], "ci_high": [0.3, 0.1, -0.1],
        "null": [0.0, 0.0, 0.0], "n_items": [30, 30, 17], "unit": ["item", "item", "language"],
        "family": ["F", "F", "G"], "p_adjusted": [0.01, 0.8, 0.03], "measure": ["m"] * 3})
    sources = [s for s in _data(live.claims_html(table, "m", standalone=True)) if "verdict" in s]
    by = {s["verdict"][0]: s for s in sources}
    assert sorted(by) == ["inconclusive", "supported"]
    assert by["supported"]["label"] == ["1. a (Direct)", "3. c (Meta)"]
    assert by["supported"]["family"] == ["F", "G"] and by["inconclusive"]["n"] == [30]
    with pytest.raises(ValueError, match="lacks column"):
        live.claims_html(table.drop(columns="family"), "m")


def test_claims_figure_shows_an_effect_without_an_interval():
    """A claim that cannot be decided has an effect but no interval: its dot is inside the
    plot's x range (it was drawn far off it, where no reader sees it: the BMLAMA page)."""
    table = pd.DataFrame({
        "claim": ["a", "b"], "scope": ["", ""], "hypothesis": ["h1", "h2"],
        "verdict": ["supported", "cannot be decided"], "effect": [0.2, -0.667],
        "ci_low": [0.1, np.nan], "ci_high": [0.3, np.nan], "null": [0.0, 0.0],
        "n_items": [30, 5], "unit": ["item", "language"], "family": ["F", "F"],
        "p_adjusted": [0.01, np.nan], "measure": ["m"] * 2})
    html = live.claims_html(table, "m", standalone=True)
    doc = json.loads(re.search(r"const docs_json = '(.*?)';\n", html, re.S).group(1))
    ranges = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("name") == "Range1d":
                ranges.append(o["attributes"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    (x,) = ranges
    assert x["start"] < -0.667 < 0.3 < x["end"]


def test_probe_figure_draws_each_language_and_its_null():
    rows = [{"lang": lang, "layer": k, "balanced_accuracy": 0.5 + 0.01 * k * (lang == "en"),
             "n_sentences": 40, "null_q95": 0.6} for lang in ("en", "de") for k in range(5)]
    sources = [s for s in _data(live.probe_layers_html(pd.DataFrame(rows), "m", standalone=True))
               if "ba" in s]
    assert sorted(s["group"][0] for s in sources) == ["de", "en"]
    en = next(s for s in sources if s["group"][0] == "en")
    assert np.allclose(en["beyond"], np.array(en["ba"]) - 0.6)
