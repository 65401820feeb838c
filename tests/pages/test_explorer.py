"""The token explorer is one self-contained HTML fragment: no network at view time."""

import re

import numpy as np
import pytest

from xcomps_utils.analysis import decompose as D
from xcomps_utils.lm.scoring import TokenScores
from xcomps_utils.pages.explorer import explorer_data, token_explorer_html

pytest.importorskip("bokeh")


def _decomposition():
    import pandas as pd

    pairs, toks = [], []
    for lang, good, bad, go, bo in [
            ("en", "A robin can fly.", "A penguin can fly.",
             [(0, 1), (1, 7), (7, 11), (11, 15), (15, 16)], [(0, 1), (1, 9), (9, 13), (13, 17), (17, 18)]),
            ("zh", "知更鸟会飞。", "企鹅会飞。", [(0, 3), (3, 4), (4, 5), (5, 6)],
             [(0, 2), (2, 3), (3, 4), (4, 5)])]:
        g = TokenScores(good, np.arange(len(go)), [good[a:b] for a, b in go], np.array(go),
                        -np.linspace(1, 3, len(go)), "bos")
        b = TokenScores(bad, np.arange(len(bo)) + 9, [bad[a:b] for a, b in bo], np.array(bo),
                        -np.linspace(2, 5, len(bo)), "bos")
        s, grp, t = D.split_pair(g, b)
        pairs.append({"lang": lang, "pair_id": "0", "good": good, "bad": bad,
                      "negative_sample_type": "taxonomic", **s})
        toks.append(t.merge(grp[["group", "delta_s"]], on="group").assign(lang=lang, pair_id="0"))
    return pd.DataFrame(pairs), pd.concat(toks, ignore_index=True)


def test_explorer_lays_out_every_token_of_both_sentences():
    pairs, tokens = _decomposition()
    rows, summaries = explorer_data(tokens, pairs)
    assert len(rows) == len(tokens) and set(rows.y) == {0.0, 1.0}
    assert sorted(summaries) == ["en", "zh"] and summaries["zh"][0][1] == "0: 知更鸟 / 企鹅"
    en = rows[(rows.key == "en/0") & (rows.y == 1)]
    assert list(en.label) == ["A", " robin", " can", " fly", "."]
    assert (np.diff(en.x) > 0).all()


def test_explorer_html_is_self_contained():
    pairs, tokens = _decomposition()
    html = token_explorer_html(tokens, pairs, "test-model")
    # Bokeh's own JavaScript is inline; no script or stylesheet is fetched from anywhere
    assert re.search(r"<script[^>]+src=", html) is None
    assert re.search(r"<link[^>]+href=", html) is None
    assert "bokeh.min.js" in html and "bokeh-widgets" in html and len(html) < 2_500_000
    assert "知更鸟" in html or r"\\u77e5\\u66f4\\u9e1f" in html  # JSON in a JS string
