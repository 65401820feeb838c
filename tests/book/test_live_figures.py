"""The live figures as a reader uses them: the rendered pages opened in headless Chromium
(Playwright, Debian's /usr/bin/chromium, never a downloaded browser).

On every page of the smoke build that draws a live figure (xcomps_utils.pages.live, the token
explorer), for each figure: every point it hovers is drawn inside the plot; the mouse over one of
its glyphs shows a tooltip whose every line is that glyph's own value (its row, group, claim or
token and its numbers, formatted as the figure's hover tool declares them, compared with the
figure's data), the values it is drawn at included (a dot's accuracy or effect and its row); a
click on a legend entry hides that entry's glyphs (their renderers' ``visible``, read from the
page's Bokeh objects, and the plot drawn otherwise) and leaves the others, a second click shows
them again. No page loads
anything but local files: every request is routed, anything other than ``file://`` is refused
and fails the test. No script of the page fails (an error in its console fails the test). A figure built without its hover tool fails the same check.

The pages are `make smoke`'s (build/smoke/_build/html), which `make test` renders before the slow
tier; without them the test fails naming the command.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # a browser, and the smoke build's rendered pages

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "build" / "smoke" / "_build" / "html"  # SMOKE_DIR's render in the Makefile
#: A cell that draws a live figure (as tests/book/test_book.py finds them).
LIVE_CALL = re.compile(r"display\(HTML\((live\.\w+_html|token_explorer_html)\(")
LIVE_CHAPTERS = sorted(p.stem for p in (REPO / "notebooks").glob("*.md")
                       if LIVE_CALL.search(p.read_text(encoding="utf-8")))

# Every figure of the page, once its view is drawn; for figure k: its title, hover tools, the
# glyph to hover (of the Scatter, Rect and Line glyphs its hover tool names, the first one's
# middle point within the plot's frame: that point's data, the fields that place it, a Scatter's
# or a Line's x and y, and its place on the screen), the points of those glyphs drawn outside the
# frame, its click-to-hide legends' entries (label, renderers, box) and its frame's box.
_FIGURES = """() => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models) if (m.type === "Figure") out.push(m);
  return out;
}"""
_READY = f"""() => {{
  if (!window.Bokeh || !Bokeh.documents || Bokeh.documents.length === 0) return false;
  const figs = ({_FIGURES})();
  return figs.length > 0 && figs.every(m => {{
    const v = Bokeh.index.find_one(m); return v != null && v.has_finished(); }});
}}"""
_DESCRIBE = f"""(k) => {{
  const m = ({_FIGURES})()[k], pv = Bokeh.index.find_one(m);
  pv.el.scrollIntoView({{block: "center"}});
  const canvas = pv.canvas_view.el.getBoundingClientRect(), frame = pv.frame.bbox;
  const glyphs = m.renderers.filter(r => r.type === "GlyphRenderer");
  const hovers = m.toolbar.tools.filter(t => t.type === "HoverTool");
  const value = (v) => (typeof v === "number" || typeof v === "string") ? v : String(v);
  let target = null;
  const outside = [];
  for (const h of hovers) {{
    const named = h.renderers === "auto" ? glyphs : h.renderers;
    for (const r of named) {{
      if (!["Scatter", "Rect", "Line"].includes(r.glyph.type) || !r.visible) continue;
      const gv = pv.views.find_one(r).glyph, inside = [];
      for (let i = 0; i < gv.sx.length; i++) {{
        const x = gv.sx[i], y = gv.sy[i];
        if (!isFinite(x) || !isFinite(y)) continue;
        if (frame.contains(x, y)) inside.push(i);
        else outside.push({{glyph: r.glyph.type, index: i, x: x, y: y}});
      }}
      if (target != null || inside.length === 0) continue;
      const i = inside[Math.floor(inside.length / 2)], row = {{}};
      for (const [f, col] of Object.entries(r.data_source.data)) row[f] = value(col[i]);
      const drawn = r.glyph.type === "Rect" ? [] :  // a Rect's place is the explorer's layout
        [r.glyph.properties.x.get_value(), r.glyph.properties.y.get_value()]
          .filter(v => v != null && v.field != null).map(v => v.field);
      target = {{renderer: r.id, glyph: r.glyph.type, index: i, row: row, drawn: drawn,
                x: canvas.x + gv.sx[i], y: canvas.y + gv.sy[i], tooltips: h.tooltips}};
    }}
  }}
  const legends = m.center.concat(m.right, m.left, m.above, m.below)
    .filter(a => a.type === "Legend" && a.click_policy === "hide")
    .map(l => pv.views.find_one(l).entries.map(e => {{
      const b = e.el.getBoundingClientRect();
      return {{label: e.label, renderers: e.item.renderers.map(r => r.id),
              x: b.x + b.width / 2, y: b.y + b.height / 2}}; }}));
  return {{title: m.title.text, hovers: hovers.length, target: target, outside: outside,
          legends: legends, frame: {{x: canvas.x + frame.left, y: canvas.y + frame.top,
                                     width: frame.width, height: frame.height}}}};
}}"""
_VISIBLE = f"""(k) => {{
  const m = ({_FIGURES})()[k], out = {{}};
  for (const r of m.renderers) out[r.id] = r.visible;
  return out;
}}"""


def _formatted(value, fmt: str | None) -> str:
    """A value as Bokeh's tooltip writes it: ``{0.000}``/``{+0.000}`` (numbro: fixed decimals,
    a sign when asked), else its default for numbers (integers as they are, 0.1 < |x| < 1000
    with 3 decimals, others in 3-decimal scientific notation); NaN as ``NaN``."""
    if isinstance(value, str):
        return value
    if value is None or math.isnan(value):
        return "NaN"
    if fmt:
        m = re.fullmatch(r"(\+?)0\.(0+)", fmt)
        assert m, f"a tooltip format this check does not know: {{{fmt}}}"
        return f"{value:{m.group(1)}.{len(m.group(2))}f}"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}" if 0.1 < abs(value) < 1000 else f"{value:.3e}"


_FIELD = r"@(\w+|\{[^}]+\})"  # a data field in a tooltip's template


def _expected(tooltips, row: dict) -> list[tuple[str, str]]:
    """The lines a hover tool's tooltip shows for one data row: ``[(label, text)]``."""
    field = re.compile(_FIELD + r"(?:\{([^}]*)\})?")
    return [(label, field.sub(lambda m: _formatted(row[m.group(1).strip("{}")], m.group(2)),
                              template)) for label, template in tooltips]


def _same(want: str, got: str) -> bool:
    """Equal text, numbers within one unit of their last decimal (JavaScript and Python round
    a half differently)."""
    number = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
    if re.sub(number, "#", want) != re.sub(number, "#", got):
        return False
    for w, g in zip(re.findall(number, want), re.findall(number, got)):
        unit = 10.0 ** -len(w.split(".")[1].split("e")[0]) if "." in w else 0.0
        if "e" in w or abs(float(w) - float(g)) > 1.01 * unit:
            if w != g:
                return False
    return True


def _entries(text: str, n: int) -> list[list[tuple[str, str]]]:
    """A tooltip's text (``label:\\tvalue`` lines) as its entries of ``n`` lines each."""
    lines = [tuple(s.strip() for s in line.split(":\t", 1)) for line in text.splitlines()
             if ":\t" in line]
    return [lines[i:i + n] for i in range(0, len(lines), n)]


def check_live_figures(page) -> list[dict]:
    """Hover a glyph and click a legend entry of every live (Bokeh) figure of ``page``, an open
    Playwright page.

    Returns:
        one dict per figure: ``title``, ``hovered`` (the tooltip's ``{label: text}`` of the
        glyph hovered) and ``hidden`` (the legend entry clicked, None without a legend).

    Raises:
        AssertionError: naming the figure: no figure, no hover tool, a point it hovers drawn
            outside the plot, a tooltip that leaves out where its glyph is drawn, no tooltip or a
            tooltip that is not the glyph's values, a legend
            click that does not hide its glyphs (or hides others, or does not show them again)
            or leaves the plot drawn as it was.
    """
    page.wait_for_function(_READY, timeout=60_000)
    n = len(page.evaluate(_FIGURES))
    assert n > 0, f"{page.url}: no live figure"
    report = []
    for k in range(n):
        fig = page.evaluate(_DESCRIBE, k)
        name = f"{page.url.rsplit('/', 1)[-1]}: figure {k + 1} of {n} ({fig['title']!r})"
        assert fig["hovers"] > 0, f"{name}: no hover tool (a reader hovering gets nothing)"
        assert not fig["outside"], (f"{name}: points drawn outside the plot, where no reader "
                                    f"sees or hovers them: {fig['outside'][:5]}")
        target = fig["target"]
        assert target is not None, f"{name}: its hover tool names no Scatter, Rect or Line glyph"
        shown = {f.strip("{}") for _, t in target["tooltips"] for f in re.findall(_FIELD, t)}
        assert set(target["drawn"]) <= shown, (
            f"{name}: its tooltip does not show {sorted(set(target['drawn']) - shown)}, where "
            f"its {target['glyph']} is drawn (it shows {sorted(shown)})")
        want = _expected(target["tooltips"], target["row"])
        page.mouse.move(1, 1)
        page.mouse.move(target["x"], target["y"], steps=4)
        seen = []
        for _ in range(50):  # up to 5 s
            seen = [t for t in page.locator(".bk-tooltip-content").all() if t.is_visible()]
            seen = [t.inner_text() for t in seen]
            if any(all(_same(w[1], g[1]) and w[0] == g[0] for w, g in zip(want, e))
                   and len(e) == len(want) for text in seen for e in _entries(text, len(want))):
                break
            page.wait_for_timeout(100)
        else:
            raise AssertionError(f"{name}: hovering its {target['glyph']} at row "
                                 f"{target['index']} shows {seen or 'no tooltip'}; want {want}")
        entry = None
        for legend in fig["legends"]:
            before = page.evaluate(_VISIBLE, k)
            entry = next(e for e in legend if all(before[r] for r in e["renderers"]))
            page.mouse.move(entry["x"], entry["y"], steps=4)  # the tooltip goes
            page.locator(".bk-tooltip-content:visible").first.wait_for(state="hidden")
            shot = page.screenshot(clip=fig["frame"])  # the plot alone, not its legend
            page.mouse.click(entry["x"], entry["y"])
            after = page.evaluate(_VISIBLE, k)
            assert not any(after[r] for r in entry["renderers"]), (
                f"{name}: a click on legend entry {entry['label']} left its glyphs visible")
            assert {r: v for r, v in after.items() if r not in entry["renderers"]} == {
                r: v for r, v in before.items() if r not in entry["renderers"]}, (
                f"{name}: a click on legend entry {entry['label']} changed other glyphs")
            assert page.screenshot(clip=fig["frame"]) != shot, (
                f"{name}: the plot is drawn the same after hiding {entry['label']}")
            page.mouse.click(entry["x"], entry["y"])
            assert page.evaluate(_VISIBLE, k) == before, (
                f"{name}: a second click on {entry['label']} does not show it again")
        report.append({"title": fig["title"], "hovered": dict(want),
                       "hidden": entry and entry["label"]})
    return report


def _open(browser, path: Path):
    """``path`` opened in a fresh page whose every request but ``file://`` is refused;
    returns ``(page, refused URLs)``; the page's script errors are in ``page.script_errors``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    refused, page.script_errors = [], []
    page.on("pageerror", lambda e: page.script_errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.goto(path.as_uri(), wait_until="load")
    return page, refused


def test_the_pages_name_their_live_figures():
    assert len(LIVE_CHAPTERS) >= 4, LIVE_CHAPTERS  # the check below is not of an empty list


@pytest.mark.parametrize("chapter", LIVE_CHAPTERS)
def test_live_figures_hover_hide_and_load_nothing(browser, chapter):
    path = HTML / "executed" / f"{chapter}.html"
    assert path.is_file(), (f"{path.relative_to(REPO)} is absent: `make smoke` renders it "
                            f"(`make test` does before the slow tier)")
    page, refused = _open(browser, path)
    try:
        report = check_live_figures(page)
        page.wait_for_load_state("networkidle")
    finally:
        page.close()
    assert not refused, f"{chapter}: the page asked the network for {refused}"
    # a script the build listed twice (``const THEBE_JS_URL``) was a SyntaxError here
    assert not page.script_errors, f"{chapter}: script errors {page.script_errors}"
    assert all(r["hovered"] for r in report)


def _cells() -> pd.DataFrame:
    return pd.DataFrame([{"lang": lang, "negative_sample_type": t, "accuracy": a,
                          "ci_low": a - 0.1, "ci_high": a + 0.05, "decided": 28, "n": 30}
                         for lang, t, a in [("en", "taxonomic", 0.812), ("en", "random", 0.934),
                                            ("de", "taxonomic", 0.571),
                                            ("de", "random", 0.688)]])


def _figures():
    from xcomps_utils.pages import live

    probe = pd.DataFrame([{"lang": lang, "layer": k, "balanced_accuracy": b + 0.02 * k,
                           "n_sentences": 40, "null_q95": 0.61}
                          for lang, b in (("en", 0.55), ("de", 0.5)) for k in range(6)])
    claims = pd.DataFrame({  # the third cannot be decided: an effect, no interval
        "claim": ["a_gap", "b_gap", "c_rank"], "scope": ["Direct", "Meta", ""],
        "hypothesis": ["h1", "h2", "h3"],
        "verdict": ["supported", "inconclusive", "cannot be decided"],
        "effect": [0.21, 0.013, -0.667], "ci_low": [0.1, -0.1, np.nan],
        "ci_high": [0.3, 0.12, np.nan], "null": [0.0, 0.0, 0.0], "n_items": [30, 17, 5],
        "unit": ["item", "language", "language"], "family": ["F", "F", "F"],
        "p_adjusted": [0.0123, 0.8, np.nan], "measure": ["accuracy"] * 3})
    return {"accuracy": lambda: live.accuracy_html(_cells(), "m", standalone=True),
            "probe": lambda: live.probe_layers_html(probe, "m", standalone=True),
            "claims": lambda: live.claims_html(claims, "m", standalone=True)}


@pytest.mark.parametrize("kind", ["accuracy", "probe", "claims"])
def test_the_check_fails_a_figure_without_its_hover_tool(browser, tmp_path, monkeypatch, kind):
    """The same check, on a figure of live.py written to a file as it is and with its hover tool
    left out: the first passes, with the glyph's own numbers, the second fails."""
    from bokeh.models import HoverTool, Plot
    from bokeh.plotting import figure

    pages = {"with": tmp_path / "with.html", "without": tmp_path / "without.html"}
    pages["with"].write_text(f"<!doctype html><meta charset='utf-8'>{_figures()[kind]()}")
    monkeypatch.setattr(figure, "add_tools", lambda self, *tools: Plot.add_tools(
        self, *[t for t in tools if not isinstance(t, HoverTool)]))
    pages["without"].write_text(f"<!doctype html><meta charset='utf-8'>{_figures()[kind]()}")

    page, refused = _open(browser, pages["with"])
    (fig,) = check_live_figures(page)
    page.close()
    assert not refused and fig["hidden"]
    hovered = fig["hovered"]
    if kind == "accuracy":  # the figure's middle point, of the frame it was given
        cell = _cells().set_index(["lang", "negative_sample_type"]).loc[
            (hovered["lang"], hovered["group"])]
        assert hovered["accuracy"] == f"{cell.accuracy:.3f}" and hovered["pairs"] == "30"
    elif kind == "probe":
        assert hovered["lang"] in ("en", "de") and hovered["null, 95th pct."] == "0.610"
        base = 0.55 if hovered["lang"] == "en" else 0.5
        assert float(hovered["balanced accuracy"]) == pytest.approx(
            base + 0.02 * int(hovered["layer"]), abs=1e-3)
    else:
        claims = {"1. a gap (Direct)": ("supported", "0.210 [0.100, 0.300]", "0.0123"),
                  "2. b gap (Meta)": ("inconclusive", "0.013 [-0.100, 0.120]", "0.8000"),
                  "3. c rank": ("cannot be decided", "-0.667 [NaN, NaN]", "NaN")}
        assert (hovered["verdict"], hovered["effect"], hovered["Holm-adjusted p"]) == claims[
            hovered["claim"]]

    page, refused = _open(browser, pages["without"])
    with pytest.raises(AssertionError, match="no hover tool"):
        check_live_figures(page)
    page.close()
    assert not refused
