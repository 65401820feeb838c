"""The models page (notebooks/models.md) and what it reads and draws: the store read without a
model (chapters.stored_models), the sortable table and the accuracy figure's drawn chance level
(pages.live), its parameters; and, slow, the page executed by papermill on a store of real runs
copied from the shipped one."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import model_comparison as mc
from xcomps_utils.pages import chapters, live, params

REPO = Path(__file__).resolve().parents[2]
SMOL_MAIN = "direct-smollm2-135m-instruct-b5ff17343d00"  # blimp x2, crows_pairs, dust
SMOL_FIVE = "direct-smollm2-135m-instruct-9bee6de7d6bd"  # 5 pairs of blimp_anaphor
GEMMA_BLIMP = "direct-gemma-3-270m-0592382cf16c"  # blimp_anaphor, blimp_animacy
NEURO = "neuro-gemma-3-270m-ddcf2519efae"  # CLAMS and SLING


def test_stored_models_reads_the_chosen_runs_and_every_neuro_run(tmp_path, store_of):
    store_of(tmp_path, [SMOL_MAIN, SMOL_FIVE, GEMMA_BLIMP, NEURO])
    stored = chapters.stored_models(str(tmp_path))
    assert set(stored.runs["run"]) == {SMOL_MAIN, SMOL_FIVE, GEMMA_BLIMP, NEURO}
    assert set(stored.chosen["run"]) == {SMOL_MAIN, GEMMA_BLIMP}  # 5 pairs passed over
    assert set(stored.measures["run"]) == {SMOL_MAIN, GEMMA_BLIMP, NEURO}
    assert stored.chosen.groupby("model").size().to_dict() == {"gemma-3-270m": 2,
                                                               "smollm2-135m-instruct": 4}


def test_sortable_table_carries_every_cell_and_loads_nothing():
    table = pd.DataFrame({"benchmark": ["dust", "blimp"], "acc": ["0.866 [0.843, 0.885]", "—"],
                          "n": [1000, 2400]})
    html = live.sortable_html(table, "t-1")
    assert re.search(r"<script[^>]+src=", html) is None and 'id="t-1"' in html
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells == ["dust", "0.866 [0.843, 0.885]", "1000", "blimp", "—", "2400"]
    assert 'getElementById("t-1")' in html and "parseFloat" in html
    with pytest.raises(ValueError, match=r"^the 'name' parameter must be an HTML id .*got "
                                         r"'two words'$"):
        live.sortable_html(table, "two words")


def test_accuracy_figure_marks_each_cells_drawn_chance():
    cells = pd.DataFrame({"benchmark": ["dust", "dust", "blimp"], "model": ["a", "b", "a"],
                          "accuracy": [0.87, 0.80, 0.73], "ci_low": [0.84, 0.77, 0.71],
                          "ci_high": [0.89, 0.83, 0.75], "decided": [997, 990, 2395],
                          "n": [1000, 1000, 2400], "chance": [0.93, 0.91, 0.50]})
    html = live.accuracy_html(cells, "a, b", rows="benchmark", groups="model", drawn="chance",
                              standalone=True)
    doc = json.loads(re.search(r"const docs_json = '(.*?)';\n", html, re.S).group(1)
                     .replace("\\'", "'"))
    drawn = {}

    def walk(o):
        if isinstance(o, dict):
            data = o.get("attributes", {}).get("data", {}) if o.get("name") == \
                "ColumnDataSource" or o.get("type") == "ColumnDataSource" else {}
            data = dict(data.get("entries", [])) if isinstance(data, dict) and "entries" in \
                data else data
            if "drawn" in data:
                drawn.update({(r, g): d for r, g, d in zip(data["row"], data["group"],
                                                           data["drawn"])})
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    assert drawn == {("dust", "a"): 0.93, ("dust", "b"): 0.91, ("blimp", "a"): 0.50}
    assert "drawn chance (tick)" in html
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['level'\]"):
        live.accuracy_html(cells, "a", rows="benchmark", groups="model", drawn="level")


def test_the_store_parameter_must_be_a_results_store(tmp_path):
    values = {**params.sizes("models"), "store": str(tmp_path / "none")}
    with pytest.raises(params.ParameterError) as err:
        params.check(values, "models")
    assert str(err.value) == (f"models: the 'store' parameter must be a results store folder (one "
                              f"holding runs/: `xcomps-study ls --store` lists it); got "
                              f"{str(tmp_path / 'none')!r}; {str(tmp_path / 'none')!r} "
                              f"holds no runs/")


@pytest.mark.slow
def test_models_page_puts_every_model_of_its_store_side_by_side(tmp_path, store_of):
    """The page executed as make executes it (papermill, the store and a verdict folder as
    parameters) on a store of three real runs: both models are columns of its table, a row's
    accuracy is the analysis module's, the Neuro groups are listed, and its opening words are
    made of those numbers."""
    import jupytext
    import papermill

    store_of(tmp_path / "store", [SMOL_MAIN, GEMMA_BLIMP, NEURO])
    src, out = tmp_path / "models.ipynb", tmp_path / "out.ipynb"
    jupytext.write(jupytext.read(REPO / "notebooks" / "models.md"), src)
    papermill.execute_notebook(str(src), str(out), cwd=str(REPO), kernel_name="python3",
                               progress_bar=False,
                               parameters={"store": str(tmp_path / "store"), "n_boot": 200,
                                           "verdicts": str(tmp_path / "verdicts")})
    nb = json.loads(out.read_text())
    # the page's opening words are its box, glued (xcomps_utils.pages.finds) from a later cell
    texts = ["".join(o.get("data", {}).get("text/markdown", ""))
             + "".join(o.get("data", {}).get("application/papermill.record/text/markdown", ""))
             + "".join(o.get("data", {}).get("text/html", ""))
             for c in nb["cells"] for o in c.get("outputs", [])]
    page = "\n".join(texts)
    direct = next(t for t in texts if 'id="models-direct"' in t)
    header = re.findall(r"<th>(.*?)</th>", direct)
    assert header[3:7] == ["gemma-3-270m", "gemma-3-270m: chance", "smollm2-135m-instruct",
                           "smollm2-135m-instruct: chance"]
    stored = chapters.stored_models(str(tmp_path / "store"))
    table = mc.accuracy(mc.scored_by_model(stored.measures, stored.chosen), n_boot=200)
    blimp = table[(table["benchmark"] == "blimp")].set_index("model")
    for model in ("gemma-3-270m", "smollm2-135m-instruct"):
        a = blimp.loc[model]
        assert f"{a['accuracy']:.2f} [{a['ci_low']:.2f}, {a['ci_high']:.2f}]" in direct
    assert mc.summary_markdown(table) in page and "**2 models**" in page
    assert 'id="models-neuro"' in page and "`gemma-3-270m`: 2 probe groups" in page
    assert "No chapter wrote a confirmatory verdict in this build." in page
    assert np.isclose(blimp["n"], 2000).all()
