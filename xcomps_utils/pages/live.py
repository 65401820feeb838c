"""Live figures: the ones a reader filters and hovers, as self-contained HTML written with Bokeh.

Accuracy by cell with its interval and sample size (:func:`accuracy_html`), a probe's curve by
layer against its permutation null (:func:`probe_layers_html`), the verdicts of a page's claims
(:func:`claims_html`) and a table a click on a column's header sorts (:func:`sortable_html`). A click on a legend entry hides
or shows that group, hovering a point gives its numbers, and the figures pan and zoom. Like the
token explorer (:mod:`xcomps_utils.pages.explorer`), they need no server and no network: Bokeh's
JavaScript is written into the page (:func:`bokeh_js`, once per page). Elsewhere the book's
figures are static PNGs (matplotlib, :mod:`xcomps_utils.pages.plots`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["accuracy_html", "probe_layers_html", "claims_html", "sortable_html", "bokeh_js"]

_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"]
_WRITTEN = False


def bokeh_js(again: bool = False) -> str:
    """Bokeh's JavaScript and CSS, inline (the ``bokeh`` bundle, about 1 MB). When the book's
    build executes a chapter (:func:`xcomps_utils.paths.chapter` is set), only the first time the
    process asks, since the page is one document, else ``""``; anywhere else every time, since
    Colab, VS Code and a re-run cell show each output on its own. ``again=True`` writes it
    anyway (a figure written to a file)."""
    global _WRITTEN
    from bokeh.resources import Resources

    from .. import paths

    if _WRITTEN and not again and paths.chapter() is not None:
        return ""
    _WRITTEN = True
    inline = Resources(mode="inline", components=["bokeh"])
    return inline.render_js() + inline.render_css()


def _html(layout, standalone: bool) -> str:
    from bokeh.embed import components

    script, div = components(layout)
    return bokeh_js(again=standalone) + div + script


def _subtitle(p, model: str) -> None:
    """The model(s) on a second title line."""
    from bokeh.models import Title

    p.add_layout(Title(text=model, text_font_style="italic", text_font_size="11px"), "above")


def _legend_outside(p, title: str) -> None:
    """The legend right of the plot (it never covers a point), a click hiding its group."""
    if not p.legend:
        return
    legend = p.legend[0]
    legend.click_policy, legend.title = "hide", title
    legend.label_text_font_size = legend.title_text_font_size = "11px"
    p.add_layout(legend, "right")


def _need(frame: pd.DataFrame, cols: list[str], what: str) -> None:
    missing = [c for c in cols if c not in frame]
    if missing:
        raise InputError(f"{what} lacks column(s) {missing} (have {list(frame.columns)})")


def accuracy_html(cells: pd.DataFrame, model: str, rows: str = "lang",
                  groups: str | None = "negative_sample_type", chance: float | None = 0.5,
                  title: str = "Accuracy", width: int = 680, standalone: bool = False,
                  drawn: str | None = None) -> str:
    """Accuracy per cell with its interval, one row per ``rows`` value, one colour per ``groups``
    value (a legend click hides a group), the cell's numbers on hover.

    Args:
        cells: one row per cell, as :func:`xcomps_utils.analysis.stats.accuracy_table` returns
            (``accuracy``, ``ci_low``, ``ci_high``, ``decided``, ``n``; ``ties``,
            ``near_ties`` when present), with the ``rows`` and ``groups`` columns.
        model: the model's name, for the title.
        chance: the level drawn as a vertical line (None: none).
        standalone: write Bokeh's JavaScript even if this process already did.
        drawn: a column of each cell's own chance level (a drawn one:
            :func:`xcomps_utils.analysis.stats.length_baseline`), marked by a tick of the cell's
            colour on its row and given on hover (None: none).

    Returns:
        HTML: the figure's ``<div>`` and ``<script>`` (and Bokeh's JavaScript the first time).

    Raises:
        ValueError: a missing column.
    """
    from bokeh.models import ColumnDataSource, HoverTool, Span
    from bokeh.plotting import figure
    from bokeh.transform import dodge

    _need(cells, [rows, "accuracy", "ci_low", "ci_high", "decided", "n"]
          + ([groups] if groups else []) + ([drawn] if drawn else []), "cells")
    d = cells.reset_index(drop=True).copy()
    d[rows] = d[rows].astype(str)
    levels = list(dict.fromkeys(d[rows]))[::-1]
    kinds = list(dict.fromkeys(d[groups].astype(str))) if groups else [""]
    height = max(220, 40 + 22 * len(levels) * max(1, len(kinds)) ** 0.5 * 2)
    p = figure(y_range=levels, x_range=(-0.02, 1.02), width=width, height=int(height),
               title=f"{title}: dot = accuracy, bar = 95% interval",
               x_axis_label="accuracy (fraction of decided pairs)",
               y_axis_label=rows, tools="pan,wheel_zoom,box_zoom,reset,save",
               toolbar_location="above")
    step = 0.8 / max(1, len(kinds))
    renderers = []
    for k, kind in enumerate(kinds):
        sub = d[d[groups].astype(str) == kind] if groups else d
        src = ColumnDataSource({
            "row": sub[rows].tolist(), "group": [kind] * len(sub),
            "accuracy": sub["accuracy"].astype(float).tolist(),
            "low": sub["ci_low"].astype(float).tolist(),
            "high": sub["ci_high"].astype(float).tolist(),
            "decided": sub["decided"].fillna(0).astype(int).tolist(),
            "n": sub["n"].fillna(0).astype(int).tolist(),
            "ties": (sub["ties"] + sub["near_ties"]).fillna(0).astype(int).tolist()
            if {"ties", "near_ties"} <= set(sub) else [0] * len(sub),
            "drawn": sub[drawn].astype(float).tolist() if drawn else [np.nan] * len(sub)})
        y = dodge("row", -0.4 + step * (k + 0.5), range=p.y_range)
        color = _PALETTE[k % len(_PALETTE)]
        label = kind or "accuracy"
        bar = p.hbar(y=y, left="low", right="high", height=0.12, source=src, color=color,
                     alpha=0.6, legend_label=label)
        dot = p.scatter(x="accuracy", y=y, size=8, source=src, color=color, legend_label=label)
        renderers += [bar, dot]
        if drawn:
            p.scatter(x="drawn", y=y, source=src, marker="dash", angle=np.pi / 2, size=12,
                      line_width=2, color=color, alpha=0.9, legend_label=label)
    if chance is not None:
        p.add_layout(Span(location=chance, dimension="height", line_color="#666666",
                          line_dash="dashed", line_width=1))
    p.add_tools(HoverTool(renderers=renderers, tooltips=[
        (rows, "@row"), ("group", "@group"), ("accuracy", "@accuracy{0.000}"),
        ("95% interval", "[@low{0.000}, @high{0.000}]"), ("decided pairs", "@decided"),
        ("pairs", "@n"), ("ties and near ties", "@ties")]
        + ([("drawn chance (tick)", "@drawn{0.000}")] if drawn else [])))
    _subtitle(p, model)
    _legend_outside(p, groups or "")
    return _html(p, standalone)


def probe_layers_html(by_layer: pd.DataFrame, model: str, by: str = "lang", width: int = 680,
                      height: int = 330, standalone: bool = False) -> str:
    """The probe's balanced accuracy by layer, one line per ``by`` group, with its
    label-permutation null's 95th percentile dashed (when the table has ``null_q95``); a legend
    click hides a group, hover gives the layer's numbers.

    Args:
        by_layer: the first table of :func:`xcomps_utils.methods.probing.probe_tables`
            (``layer``, ``balanced_accuracy``, ``n_sentences``, ``null_q95`` when the run drew
            its null, and the ``by`` column).
        model: the model's name, for the title.
        standalone: write Bokeh's JavaScript even if this process already did.

    Raises:
        ValueError: a missing column.
    """
    from bokeh.models import ColumnDataSource, HoverTool, Span
    from bokeh.plotting import figure

    _need(by_layer, [by, "layer", "balanced_accuracy", "n_sentences"], "by_layer")
    has_null = "null_q95" in by_layer and by_layer["null_q95"].notna().any()
    p = figure(width=width, height=height, y_range=(0.2, 1.02),
               title="Neuro probe by layer: solid = probe, dashed = null's 95th percentile",
               x_axis_label="layer (0 = embeddings)", y_axis_label="balanced accuracy (chance 0.5)",
               tools="pan,wheel_zoom,box_zoom,reset,save", toolbar_location="above")
    lines = []
    for k, (key, g) in enumerate(by_layer.sort_values("layer").groupby(by, sort=False)):
        color = _PALETTE[k % len(_PALETTE)]
        label = f"{key} (n={int(g['n_sentences'].iat[0])})"
        null = g["null_q95"].astype(float) if has_null else pd.Series(np.nan, index=g.index)
        src = ColumnDataSource({"layer": g["layer"].astype(int).tolist(),
                                "ba": g["balanced_accuracy"].astype(float).tolist(),
                                "null": null.tolist(), "beyond": (g["balanced_accuracy"]
                                                                  - null).astype(float).tolist(),
                                "group": [str(key)] * len(g)})
        lines.append(p.line("layer", "ba", source=src, color=color, line_width=2,
                            legend_label=label))
        p.scatter("layer", "ba", source=src, color=color, size=4, legend_label=label)
        if has_null:
            p.line("layer", "null", source=src, color=color, line_dash="dashed",
                   legend_label=label)
    p.add_layout(Span(location=0.5, dimension="width", line_color="#666666", line_width=1))
    p.add_tools(HoverTool(renderers=lines, mode="vline", tooltips=[
        (by, "@group"), ("layer", "@layer"), ("balanced accuracy", "@ba{0.000}"),
        ("null, 95th pct.", "@null{0.000}"), ("beyond the null", "@beyond{+0.000}")]))
    _subtitle(p, model)
    _legend_outside(p, f"{by} (sentences)")
    return _html(p, standalone)


def claims_html(table: pd.DataFrame, model: str, title: str = "Claims tested", width: int = 680,
                standalone: bool = False) -> str:
    """A forest plot of claim tests, live: each effect with its 95% interval, coloured by
    verdict (a legend click hides a verdict), the value of no effect as a grey tick; hover gives
    the hypothesis, the verdict, the effect and interval, the units behind it, the null, the
    family and its Holm-adjusted p.

    Args:
        table: :func:`xcomps_utils.analysis.report.claims_table` (``claim``, ``scope``,
            ``hypothesis``, ``verdict``, ``effect``, ``ci_low``, ``ci_high``, ``null``,
            ``n_items``, ``unit``, ``family``, ``p_adjusted``, ``measure``).
        model: the model(s), for the title.
        standalone: write Bokeh's JavaScript even if this process already did.

    Raises:
        ValueError: a missing column.
    """
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    from .plots import VERDICT_COLORS

    need = ["claim", "scope", "hypothesis", "verdict", "effect", "ci_low", "ci_high", "null",
            "n_items", "unit", "family", "p_adjusted", "measure"]
    _need(table, need, "table")
    d = table.reset_index(drop=True)
    labels = [f"{i + 1}. {c.replace('_', ' ')}" + (f" ({s})" if s else "")
              for i, (c, s) in enumerate(zip(d["claim"], d["scope"].fillna("")))]
    d = d.assign(label=labels)
    # every effect in range, also one without an interval (a claim that cannot be decided)
    ends = np.r_[d["ci_low"], d["ci_high"], d["effect"], d["null"], 0.0].astype(float)
    lo, hi = np.nanmin(ends), np.nanmax(ends)
    pad = 0.05 * (hi - lo or 1.0)
    p = figure(y_range=labels[::-1], x_range=(lo - pad, hi + pad), width=width,
               height=int(90 + 26 * len(d)), toolbar_location="above",
               tools="pan,wheel_zoom,box_zoom,reset,save",
               title=f"{title}: dot = effect, bar = 95% interval, tick = no effect",
               x_axis_label="effect, in each claim's own unit (hover)")
    p.scatter("null", "label", source=ColumnDataSource(d[["null", "label"]]), marker="dash",
              angle=np.pi / 2, size=14, color="#666666")
    shown = []
    for verdict, color in VERDICT_COLORS.items():
        sub = d[d["verdict"] == verdict]
        if not len(sub):
            continue
        src = ColumnDataSource({
            "label": sub["label"].tolist(), "hypothesis": sub["hypothesis"].tolist(),
            "verdict": sub["verdict"].tolist(), "effect": sub["effect"].astype(float).tolist(),
            "low": sub["ci_low"].astype(float).tolist(),
            "high": sub["ci_high"].astype(float).tolist(),
            "null": sub["null"].astype(float).tolist(), "n": sub["n_items"].fillna(0).astype(int).tolist(),
            "unit": sub["unit"].tolist(), "family": sub["family"].fillna("").tolist(),
            "p_adj": sub["p_adjusted"].astype(float).tolist(), "measure": sub["measure"].tolist()})
        shown.append(p.hbar(y="label", left="low", right="high", height=0.18, source=src,
                            color=color, legend_label=verdict))
        shown.append(p.scatter("effect", "label", size=8, source=src, color=color,
                               legend_label=verdict))
    p.add_tools(HoverTool(renderers=shown, tooltips=[
        ("claim", "@label"), ("hypothesis", "@hypothesis"), ("verdict", "@verdict"),
        ("effect", "@effect{0.000} [@low{0.000}, @high{0.000}]"), ("measure", "@measure"),
        ("no effect", "@null"), ("units", "@n @unit"), ("family", "@family"),
        ("Holm-adjusted p", "@p_adj{0.0000}")]))
    _subtitle(p, model)
    _legend_outside(p, "verdict")
    p.yaxis.major_label_text_font_size = "10px"
    return _html(p, standalone)


# Sorts the table of its id on a click on a header: by a cell's leading number, else its text,
# a second click reversing; cells without a number ("—") stay after those with one.
_SORT_JS = """(function () {
  var t = document.getElementById("%s");
  t.querySelectorAll("thead th").forEach(function (th, i) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("data-order") !== "up", body = t.tBodies[0];
      t.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("data-order"); });
      th.setAttribute("data-order", up ? "up" : "down");
      var key = function (r) { var s = r.cells[i].textContent.trim(), x = parseFloat(s);
                               return isNaN(x) ? [1, s] : [0, x]; };
      Array.from(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b), c = x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
        return x[0] - y[0] || (up ? c : -c);
      }).forEach(function (r) { body.appendChild(r); });
    });
  });
})();"""

_SORT_CSS = """<style>
div.xcomps-sortable-box { max-height: %dpx; overflow: auto; border: 1px solid #ddd; }
div.xcomps-sortable-box table.xcomps-sortable { border-collapse: collapse; font-size: 12px;
  margin: 0; width: auto; }
div.xcomps-sortable-box table.xcomps-sortable td, div.xcomps-sortable-box table.xcomps-sortable th {
  padding: 2px 4px; border: 0; border-bottom: 1px solid #eee; text-align: left; }
div.xcomps-sortable-box table.xcomps-sortable td { white-space: nowrap; }
div.xcomps-sortable-box table.xcomps-sortable th { position: sticky; top: 0; z-index: 1;
  background: #f6f6f6; cursor: pointer; vertical-align: bottom; white-space: normal; }
div.xcomps-sortable-box table.xcomps-sortable th[data-order="up"]::after { content: " \\25B2"; }
div.xcomps-sortable-box table.xcomps-sortable th[data-order="down"]::after { content: " \\25BC"; }
</style>"""


def sortable_html(table: pd.DataFrame, name: str, height: int = 480) -> str:
    """A table a click on a column's header sorts (by the cell's leading number, else its text;
    a second click reverses; cells without a number stay last), in a box ``height`` pixels high
    that scrolls under a fixed header: plain HTML, a few lines of inline script, nothing loaded.

    Args:
        table: what to show (its index is left out; missing values show as ``"—"``).
        name: the table's HTML id (letters, digits, ``-``, ``_``: unique on its page).

    Raises:
        ValueError: ``name`` is not such an id.
    """
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][\w-]*", name):
        raise InputError(f"the 'name' parameter must be an HTML id (a letter, then letters, "
                         f"digits, '-' or '_'); got {name!r}")
    html = table.to_html(index=False, table_id=name, classes="xcomps-sortable", border=0,
                         na_rep="—", escape=True)
    return (_SORT_CSS % height + f'<div class="xcomps-sortable-box">{html}</div>'
            + f"<script>{_SORT_JS % name}</script>")
