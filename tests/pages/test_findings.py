"""The findings page (notebooks/findings.md) executed by papermill on a verdict folder made here:
what two pages printed (claims.claims_markdown with XCOMPS_VERDICTS set, as the Makefile's chapter
rule sets it), read back as one table per role, counted per model, the pages that printed nothing
named."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import claims, perplexity_paper

REPO = Path(__file__).resolve().parents[2]


def _verdict_folder(folder: Path, monkeypatch) -> dict:
    """Two pages' verdicts, as their chapters would write them: a confirmatory family of two
    decided tests (the page's model named by its namespace: none here) and a test of 5 items
    that cannot be decided."""
    monkeypatch.setenv("XCOMPS_VERDICTS", str(folder))
    monkeypatch.setattr(claims, "_STARTED", set())
    items = pd.DataFrame({"pair_id": np.arange(60).astype(str),
                          "accuracy": np.r_[np.ones(45), np.zeros(15)]})
    tests = {"token_perplexity_results": claims.correct(
        [perplexity_paper.above_chance(items.assign(task="blimp"), "blimp", n_boot=300),
         perplexity_paper.above_chance(items.assign(task="dust", accuracy=1 - items.accuracy),
                                       "dust", n_boot=300)], "two tasks", "confirmatory"),
        "xcomps_results": [perplexity_paper.above_chance(items.head(5).assign(task="crows"),
                                                         "crows", n_boot=300)]}
    for page, t in tests.items():
        monkeypatch.setenv("XCOMPS_CHAPTER", page)
        claims.claims_markdown(t)
    return tests


@pytest.mark.slow
def test_findings_page_shows_what_the_pages_printed(tmp_path, monkeypatch):
    import jupytext
    import papermill

    tests = _verdict_folder(tmp_path / "verdicts", monkeypatch)
    monkeypatch.delenv("XCOMPS_VERDICTS")  # the page reads its parameter, not the environment
    src, out = tmp_path / "findings.ipynb", tmp_path / "out.ipynb"
    jupytext.write(jupytext.read(REPO / "notebooks" / "findings.md"), src)
    papermill.execute_notebook(str(src), str(out), parameters={"verdicts": str(tmp_path / "verdicts")},
                               cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    nb = json.loads(out.read_text())
    texts = ["".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
             + "".join(o.get("data", {}).get("text/html", ""))
             for c in nb["cells"] for o in c.get("outputs", [])]
    page = "\n".join(texts)
    blimp, dust = tests["token_perplexity_results"]
    crows = tests["xcomps_results"][0]
    assert (blimp.verdict, dust.verdict, crows.verdict) == ("supported", "contradicted",
                                                            "cannot be decided")
    # the headline: 3 tests on 2 pages, counted by verdict; the pages that printed nothing named
    assert ("**3 tests** on 2 pages: 1 supported, 1 contradicted, 0 equivalent, 0 inconclusive, "
            "1 cannot be decided.") in page
    missing = [p for p in dict.fromkeys(f.chapter for f in claims.FAMILIES.values())
               if p not in tests]
    assert "No verdicts from " + ", ".join(f"`{p}`" for p in missing) in page
    # one row per test, in the confirmatory and the exploratory tables, linked to its page
    confirmatory = next(t for t in texts if "| blimp |" in t)
    rows = [r for r in confirmatory.splitlines() if r.startswith("| {doc}")]
    assert len(rows) == 2 and "| dust |" in rows[1] and "| crows |" not in confirmatory
    assert rows[0].startswith("| {doc}`token perplexity results "
                              "</executed/token_perplexity_results>` | <details><summary>the "
                              "correct prompt gets lower perplexity than the incorrect one")
    assert rows[0].endswith(f" | **Supported** | {blimp.effect:.2f} [{blimp.adj_low:.2f}, "
                            f"{blimp.adj_high:.2f}] *adj.* | 60 items | blimp |")
    assert "**Contradicted**" in rows[1]
    exploratory = next(t for t in texts if "| crows |" in t)
    (row,) = [r for r in exploratory.splitlines() if r.startswith("| {doc}")]
    assert row.startswith("| {doc}`xcomps results </executed/xcomps_results>` |")
    assert row.endswith(f"| **Cannot be decided with 5 items** | {crows.effect:.2f} *description* "
                        f"[{crows.ci_low:.2f}, {crows.ci_high:.2f}] | 5 items | crows |")
    # the counts per role and model (the pages named no model here)
    counts = next(t for t in texts if "<table" in t and "cannot be decided" in t)
    assert "confirmatory" in counts and "(not named)" in counts and not any(
        o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))


def test_deciding_sizes_say_decided_how_many_more_or_why_never(tmp_path, monkeypatch):
    """One row per test: a decided one says so; an inconclusive one the units for 80% power at
    its SESOI (its items_needed); one that cannot be decided its reason."""
    _verdict_folder(tmp_path / "verdicts", monkeypatch)
    items = pd.DataFrame({"pair_id": np.arange(40).astype(str),
                          "accuracy": np.r_[np.ones(21), np.zeros(19)]})
    monkeypatch.setenv("XCOMPS_CHAPTER", "direct_scoring")
    weak = perplexity_paper.above_chance(items.assign(task="dust"), "dust", n_boot=300)
    claims.claims_markdown([weak])
    rows, _ = claims.read_verdicts(tmp_path / "verdicts")
    sizes = claims.deciding_sizes(rows)
    got = dict(zip(sizes["verdict"] + ":" + sizes["n"].astype(str), sizes["to decide"]))
    assert got["supported:60"] == "decided" and got["contradicted:60"] == "decided"
    assert weak.verdict == "inconclusive" and weak.items_needed and weak.items_needed > 40
    assert got["inconclusive:40"] == f"about {weak.items_needed:,} items (80% power at the SESOI)"
    assert got["cannot be decided:5"].startswith("not by more items of these: ")
    # a page whose data hold fewer items than needed: no size of them decides it
    page = rows.loc[rows.verdict == "inconclusive", "page"].iloc[0]
    capped = claims.deciding_sizes(rows, available={page: 40})
    line = capped.loc[capped.verdict == "inconclusive", "to decide"].iloc[0]
    assert line.endswith("; the data hold 40: no size of the available data decides it")
    # no SESOI: a claim about languages says what more data per language does
    lang = rows[rows.verdict == "inconclusive"].assign(unit="language", n_items=17,
                                                      items_needed=np.nan)
    item = lang.assign(unit="item")
    said = claims.deciding_sizes(pd.concat([lang, item]))["to decide"].tolist()
    assert said[0].startswith("no smallest effect of interest declared: a claim about these 17 "
                              "languages, which more items per language")
    assert said[1] == "no smallest effect of interest declared"
    roomy = claims.deciding_sizes(rows, available={page: 10 ** 6})
    assert roomy.loc[roomy.verdict == "inconclusive", "to decide"].iloc[0] == got["inconclusive:40"]
