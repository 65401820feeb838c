"""A token explorer for XCOMPS pairs that works offline: self-contained HTML written with Bokeh.

Pick a language and a pair; both sentences are drawn as rows of tokens, each coloured by the
surprisal difference of its aligned group (``delta_s = s_bad - s_good``, nats; blue: the group
prefers the acceptable sentence, red: the unacceptable one), with the token's own surprisal,
its group's difference and its category (prefix, concept, property, period;
:mod:`xcomps_utils.analysis.decompose`) on hover, and the pair's decomposition under the plot.

Bokeh (a well-kept plotting library with client-side callbacks, ``CustomJS``) writes the figure,
the two drop-down menus and its own JavaScript inline (``Resources(mode="inline")``, only the
``bokeh`` and ``bokeh-widgets`` bundles): the page needs no server, no CDN and no network at view
time. Those bundles (~1.7 MB for Bokeh 3.9) are lighter than plotly.js (~4.6 MB) and, unlike
plotly's update menus, Bokeh's ``Select`` widgets combine two choices (language, then pair).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["explorer_data", "token_explorer_html"]

_NEEDED = ["lang", "pair_id", "side", "position", "token", "start", "end", "surprisal",
           "category", "group", "delta_s"]


def explorer_data(tokens: pd.DataFrame, pairs: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The explorer's token rows (``x``, ``width``, ``y`` laid out) and per-pair summaries.

    Args:
        tokens: :class:`~xcomps_utils.analysis.decompose.Decomposition` ``.tokens``.
        pairs: :class:`~xcomps_utils.analysis.decompose.Decomposition` ``.pairs`` (``good``, ``bad``,
            ``delta``, ``delta_<category>``, ``cond_delta``, ``concept_good``, ``concept_bad``,
            ``negative_sample_type`` when present).

    Returns:
        ``(rows, summaries)``: ``rows`` one per token with ``key`` (``lang/pair_id``), ``label``
        (the token's characters), ``x``, ``width``, ``y`` (1 acceptable, 0 unacceptable) and the
        hover fields; ``summaries`` ``{lang: [[key, menu label, html summary], ...]}``.

    Raises:
        ValueError: a missing column.
    """
    need = [c for c in _NEEDED if c not in tokens]
    if need:
        raise InputError(f"tokens lack column(s) {need}: pass Decomposition.tokens")
    text = {(r.lang, str(r.pair_id)): {"good": r.good, "bad": r.bad}
            for r in pairs.itertuples(index=False)}
    t = tokens.copy()
    t["pair_id"] = t["pair_id"].astype(str)
    t = t.sort_values(["lang", "pair_id", "side", "position"], kind="stable")
    labels, xs, widths = [], [], []
    for (lang, pid, side), g in t.groupby(["lang", "pair_id", "side"], sort=False):
        s = text[(lang, pid)][side]
        x = 0.0
        for a, b in zip(g["start"], g["end"]):
            lab = s[int(a):int(b)] if b > a else "·"
            w = max(1.0, len(lab.strip()) * (2.0 if any(ord(c) > 0x2E80 for c in lab) else 1.0))
            labels.append(lab)
            xs.append(x + w / 2)
            widths.append(w)
            x += w + 0.3
    t["label"], t["x"], t["width"] = labels, xs, widths
    t["y"] = np.where(t["side"] == "good", 1.0, 0.0)
    t["key"] = t["lang"] + "/" + t["pair_id"]
    summaries: dict = {}
    for r in pairs.itertuples(index=False):  # languages in the pairs' order
        key = f"{r.lang}/{r.pair_id}"
        neg = getattr(r, "negative_sample_type", "")
        label = f"{r.pair_id}: {r.concept_good.strip()} / {r.concept_bad.strip()}"
        html = (f"<b>{r.good}</b> vs <b>{r.bad}</b> ({neg}): Δ = log p(good) − log p(bad) = "
                f"{r.delta:+.2f} nats = prefix {r.delta_prefix:+.2f} + concept "
                f"{r.delta_concept:+.2f} + property {r.delta_property:+.2f} + period "
                f"{r.delta_period:+.2f}. Conditional Direct (after the concept): "
                f"{r.cond_delta:+.2f} nats, {'right' if r.cond_delta > 0 else 'wrong'}; full "
                f"Direct {'right' if r.delta > 0 else 'wrong'}.")
        summaries.setdefault(r.lang, []).append([key, label, html])
    keep = ["key", "label", "x", "width", "y", "token", "surprisal", "delta_s", "category"]
    return t[keep].reset_index(drop=True), summaries


def token_explorer_html(tokens: pd.DataFrame, pairs: pd.DataFrame, model: str = "",
                        width: int = 720, height: int = 260) -> str:
    """The explorer as one self-contained HTML fragment (Bokeh's JavaScript inline).

    Display it with ``IPython.display.HTML(...)`` (a rendered book page runs it as it is) or
    write it to a file and open it in a browser, with the network off.

    Args:
        tokens, pairs: as :func:`explorer_data`.
        model: the model's name, for the title.

    Returns:
        HTML: Bokeh's inline JS/CSS, the plot's ``<div>`` and its ``<script>``.
    """
    from bokeh.embed import components
    from bokeh.layouts import column, row
    from bokeh.models import (ColorBar, ColumnDataSource, CustomJS, Div, HoverTool,
                              LinearColorMapper, Select)
    from bokeh.palettes import RdBu11
    from bokeh.plotting import figure
    from bokeh.resources import Resources

    rows, summaries = explorer_data(tokens, pairs)
    lim = float(np.nanquantile(np.abs(rows["delta_s"]), 0.98)) or 1.0
    # blue: the group prefers the acceptable sentence (s_bad > s_good), red: the unacceptable one
    mapper = LinearColorMapper(palette=list(RdBu11)[::-1], low=-lim, high=lim)
    data = {c: rows[c].round(3).tolist() if rows[c].dtype.kind == "f" else rows[c].tolist()
            for c in rows.columns}
    everything = ColumnDataSource(data)
    langs = list(summaries)
    first = summaries[langs[0]][0][0]
    shown = ColumnDataSource({c: [v for v, k in zip(data[c], data["key"]) if k == first]
                              for c in data})
    p = figure(width=width, height=height, title=f"Surprisal difference by token ({model})",
               y_range=(-0.6, 1.6), tools="", toolbar_location=None,
               x_axis_label="tokens, left to right (width ∝ characters)")
    p.yaxis.ticker = [0, 1]
    p.yaxis.major_label_overrides = {0: "unacceptable", 1: "acceptable"}
    p.rect("x", "y", "width", 0.8, source=shown, line_color="black",
           fill_color={"field": "delta_s", "transform": mapper})
    p.text("x", "y", text="label", source=shown, text_align="center", text_baseline="middle",
           text_font_size="13px")
    p.add_tools(HoverTool(tooltips=[("token", "@token"), ("surprisal", "@surprisal{0.000} nats"),
                                    ("group s_bad − s_good", "@delta_s{+0.000} nats"),
                                    ("category", "@category")]))
    p.add_layout(ColorBar(color_mapper=mapper, title="s_bad − s_good (nats)"), "right")
    lang_menu = Select(title="language", value=langs[0], options=langs, name="language")
    pair_menu = Select(title="pair", value=first, name="pair",
                       options=[(k, lab) for k, lab, _ in summaries[langs[0]]])
    info = Div(text=summaries[langs[0]][0][2], width=width)
    show = CustomJS(args=dict(all=everything, shown=shown, menu=pair_menu, info=info,
                              summaries=json.loads(json.dumps(summaries))), code="""
        const key = menu.value, d = all.data, out = {};
        for (const c of Object.keys(d)) out[c] = [];
        for (let i = 0; i < d.key.length; i++)
            if (d.key[i] === key) for (const c of Object.keys(d)) out[c].push(d[c][i]);
        shown.data = out;
        for (const l of Object.keys(summaries))
            for (const s of summaries[l]) if (s[0] === key) info.text = s[2];
    """)
    pair_menu.js_on_change("value", show)
    lang_menu.js_on_change("value", CustomJS(args=dict(menu=pair_menu, summaries=summaries,
                                                       show=show), code="""
        const items = summaries[cb_obj.value];
        menu.options = items.map(s => [s[0], s[1]]);
        menu.value = items[0][0];
    """))
    script, div = components(column(row(lang_menu, pair_menu), p, info))
    inline = Resources(mode="inline", components=["bokeh", "bokeh-widgets"])
    return inline.render_js() + inline.render_css() + div + script
