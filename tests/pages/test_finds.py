"""A chapter's "What this chapter finds" box (xcomps_utils.pages.finds): an admonition glued into
the place its page keeps right under its title, said from the verdicts the chapter recorded
(verdicts.recorded, kept also when no folder is installed); and every chapter has that place,
one cell that fills it, and at least two exercises (fast: the sources, nothing executed)."""

from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import families, perplexity_paper
from xcomps_utils.pages import finds, verdicts

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (REPO / "notebooks").glob("*.md"))


@pytest.fixture(autouse=True)
def _nothing_installed():
    verdicts.install(None)
    yield
    verdicts.install(None)


def _tests():
    items = pd.DataFrame({"pair_id": np.arange(60).astype(str), "task": "t",
                          "accuracy": np.r_[np.ones(50), np.zeros(10)]})
    return families.correct([perplexity_paper.above_chance(items, "t", n_boot=200)],
                            "token-level perplexity, per task")


def test_recorded_rows_are_kept_without_a_folder_and_cleared_by_a_new_entry(tmp_path):
    tests = _tests()
    verdicts.record(tests, "token_perplexity_results", "smollm2", main="smollm2")
    kept = verdicts.recorded("token_perplexity_results")
    assert list(kept.columns) == verdicts.VERDICT_COLUMNS and len(kept) == 1
    assert kept.verdict[0] == tests[0].verdict and kept.model[0] == "smollm2"
    assert not list(tmp_path.iterdir())  # nothing written
    verdicts.install(tmp_path)  # the chapter's entry again: a new execution
    assert verdicts.recorded("token_perplexity_results").empty
    verdicts.record(tests, "token_perplexity_results", "smollm2", main="smollm2")
    back, _ = verdicts.read_verdicts(tmp_path)
    pd.testing.assert_frame_equal(verdicts.recorded("token_perplexity_results"), back)


def test_a_box_is_an_admonition_glued_under_its_key(monkeypatch):
    import myst_nb

    glued = []
    monkeypatch.setattr(myst_nb, "glue", lambda k, v, display: glued.append((k, v, display)))
    finds.show("Direct scores **0.9** on BLiMP.")
    ((key, value, display),) = glued
    assert key == finds.KEY == "finds" and display is False
    assert value.data == ("::::{admonition} What this chapter finds\n:class: tip xcomps-finds\n\n"
                          "Direct scores **0.9** on BLiMP.\n::::")
    with pytest.raises(ValueError, match="the 'text' parameter"):
        finds.box("  ")


def test_a_chapters_box_says_its_recorded_verdicts(data_dir):
    with pytest.raises(ValueError, match="'token_perplexity_results' recorded none"):
        finds.claims("token_perplexity_results")
    tests = _tests()
    verdicts.record(tests, "token_perplexity_results", "smollm2", main="smollm2")
    said = finds.claims("token_perplexity_results")
    assert said.startswith("1 test, each with its verdict")
    assert "* **smollm2**: " in said and "above the drawn chance" in said
    assert f"{tests[0].effect:+.2f} accuracy above the drawn chance" in said


def _cells(chapter):
    return jupytext.read(REPO / "notebooks" / f"{chapter}.md").cells


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_opens_with_its_box_and_fills_it_once(chapter):
    """The box's place is the first thing under the chapter's title (myst-nb pastes a glued value
    anywhere in its notebook), and one cell fills it: a chapter that tests claims says its own
    verdicts (finds.claims)."""
    cells = _cells(chapter)
    first = next(i for i, c in enumerate(cells) if c.cell_type == "markdown"
                 and c.source.lstrip().startswith("# "))
    title, _, after = cells[first].source.lstrip().partition("\n\n")
    assert after.startswith("```{glue:md} finds\n:format: myst\n```"), (
        f"{chapter}: the box is not the first thing under the title {title!r}")
    places = [c for c in cells if c.cell_type == "markdown" and "{glue:md} finds" in c.source]
    assert len(places) == 1, f"{chapter}: the box is placed {len(places)} times"
    fill = [c for c in cells if c.cell_type == "code" and "finds.show(" in c.source]
    assert len(fill) == 1, f"{chapter}: {len(fill)} cells fill the box"
    if chapter in families.chapters_with_claims():  # it says its own verdicts
        assert f'finds.claims("{chapter}")' in fill[0].source


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_two_exercises_with_solutions(chapter):
    text = (REPO / "notebooks" / f"{chapter}.md").read_text(encoding="utf-8")
    exercises = text.count("```{exercise}")
    assert exercises >= 2, f"{chapter}: {exercises} exercise(s)"
    assert text.count("```{solution-start}") == exercises
