"""Claims as a page prints them: the verdicts table, its labels, the families as run, the
findings page's tables and what size decides each test.

Text and frames out of :class:`xcomps_utils.analysis.claims.ClaimTest` (or the rows of a verdict
file, :func:`xcomps_utils.pages.verdicts.read_verdicts`); nothing here reads the environment or
writes a file (``tests/test_layers.py`` holds every analysis module to that).

* :func:`claims_markdown`: a page's verdicts as one compact Markdown table (the hypothesis, the
  verdict, the effect and the interval the verdict reads, the units and the scope; the rest a
  click away); :func:`claims_table` the same tests as a frame, :func:`verdict_label` a verdict as
  printed;
* :func:`family_table`: the families as declared
  (:data:`xcomps_utils.analysis.families.FAMILIES`) and as run;
* :func:`findings_words`, :func:`findings_table`: every page's verdicts in words, per question
  and model, and in one compact table (a row per claim, a column per model, each cell linked to
  the test's row in its chapter, :func:`claim_anchor`), each claim named and its effect's unit
  said as its declaration says (:class:`xcomps_utils.analysis.families.Claim`);
  :func:`deciding_sizes`, :func:`deciding_sizes_markdown`: what size decides each test.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .claims import ALPHA, NEGLIGIBLE, ClaimTest, margin_verdicts
from .families import declared_family

__all__ = ["claims_markdown", "claims_table", "family_table", "verdict_label", "SHORT_CLAIM",
           "claim_anchor", "claim_rows", "findings_words", "findings_table", "MARKS",
           "MARK_LEGEND", "deciding_sizes", "deciding_sizes_markdown", "MOST_LANGUAGES",
           "SIZE_OUTCOMES"]


def claims_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """One row per test, the fields of :class:`ClaimTest` plus ``half_width``."""
    return pd.DataFrame([t.as_dict() for t in tests])


def family_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """The families of ``tests`` as declared (:data:`xcomps_utils.analysis.families.FAMILIES`)
    and as run: one row per test with ``chapter``, ``family``, ``claim``, ``scope``, ``role``,
    ``sesoi``, ``unit``, ``n`` and whether the test is decidable by design at this size
    (``decidable``: its smallest attainable p reaches the level within its family,
    :func:`xcomps_utils.analysis.families.testable`; else the reason)."""
    rows = []
    for t in tests:
        fam = declared_family(t.family)
        rows.append({"chapter": fam.chapter if fam else "", "family": t.family,
                     "claim": t.claim, "scope": t.scope, "role": t.role,
                     "sesoi": fam.claims[t.claim].sesoi if fam and t.claim in fam.claims else t.sesoi, "unit": t.unit,
                     "n": t.n_items, "family size": t.family_size,
                     "decidable at this size": "yes" if t.verdict != "cannot be decided"
                     else f"no: {t.reason}"})
    return pd.DataFrame(rows)


def _p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _interval_words(t: ClaimTest, digits: int) -> str:
    """The interval of a test, labelled by what it is."""
    if not (np.isfinite(t.ci_low) and np.isfinite(t.ci_high)):
        return ""
    iv = f"[{t.ci_low:.{digits}f}, {t.ci_high:.{digits}f}]"
    if t.verdict == "cannot be decided":
        how = ("items resampled, languages fixed" if t.unit == "language"
               else f"{t.unit}s resampled")
        return f", description ({how}; not a test) {iv}"
    text = f", {t.confidence:.0%} CI {iv}"
    if t.family_size > 1 and np.isfinite(t.adj_low):
        text += (f" (unadjusted; adjusted for the family, the interval the verdict reads: "
                 f"[{t.adj_low:.{digits}f}, {t.adj_high:.{digits}f}])")
    elif t.unit == "language" and not t.inverted:
        text = f", description (items resampled, languages fixed; not the test) {iv}"
    return text


def verdict_label(t: ClaimTest) -> str:
    """The verdict as printed: "Supported", "Equivalent within ±0.05", "Cannot be decided with
    7 languages", ..."""
    if t.verdict == "cannot be decided":
        return f"Cannot be decided with {t.n_items} {t.unit}s"
    if t.verdict == "equivalent":
        return f"Equivalent within ±{t.margin:g}"
    if t.verdict == "negligible":
        return f"Negligible: {NEGLIGIBLE} (±{t.sesoi:g})"
    return t.verdict.capitalize()


#: a hypothesis longer than this is shown without its closing parenthetical in a table's claim
#: column (the whole of it is in the claim's details)
SHORT_CLAIM = 90


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, ``|`` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _short(hypothesis: str) -> str:
    """The hypothesis without a closing parenthetical remark when it is long."""
    if len(hypothesis) > SHORT_CLAIM and hypothesis.endswith(")") and " (" in hypothesis:
        return hypothesis[:hypothesis.rindex(" (")]
    return hypothesis


def _effect_cell(t: ClaimTest, digits: int) -> str:
    """The effect and the interval the verdict reads: the family-adjusted one (*adj.*), else the
    95% one, or a *description* (not a test) for a test that cannot be decided or whose
    interval is not the test (languages fixed)."""
    if not np.isfinite(t.effect):
        return "cannot be computed"
    effect = f"{t.effect:.{digits}f}"
    if not (np.isfinite(t.ci_low) and np.isfinite(t.ci_high)):
        return effect
    iv = f"[{t.ci_low:.{digits}f}, {t.ci_high:.{digits}f}]"
    if t.verdict == "cannot be decided":
        return f"{effect} *description* {iv}"
    if t.family_size > 1 and np.isfinite(t.adj_low):
        return f"{effect} [{t.adj_low:.{digits}f}, {t.adj_high:.{digits}f}] *adj.*"
    return (f"{effect} *description* {iv}" if t.unit == "language" and not t.inverted
            else f"{effect} {iv}")


def _details(t: ClaimTest, digits: int) -> list[str]:
    """Everything the table row leaves out, one sentence each: the claim and its measure with
    both intervals (labelled), the null and the test, the family (role, size, Holm-adjusted p)
    or the uncorrected p, equivalence, the caveat, why it cannot be decided, and the size that
    would decide an inconclusive one."""
    effect = (f"{t.effect:.{digits}f}" if np.isfinite(t.effect)
              else "cannot be computed on this data")
    whole = f" *{t.hypothesis}*;" if _short(t.hypothesis) != t.hypothesis else ""
    out = [f"`{t.claim}`:{whole} {t.measure}: {effect}{_interval_words(t, digits)}, "
           f"{t.n_items:,} {t.unit}s.", f"Null: {t.null_hypothesis}; {t.test}."]
    if t.verdict == "cannot be decided":
        out += [f"Not a test: {t.reason}."] if t.reason else []
    elif t.family:
        out.append(f"Family: {t.family} ({t.role}, {t.family_size} test"
                   f"{'s' if t.family_size != 1 else ''} that can reach the level, Holm), "
                   f"adjusted two-sided p {_p(t.p_adjusted)} (level {ALPHA}).")
    else:
        out.append(f"Uncorrected p {_p(min(t.p_supported, t.p_contradicted))}.")
    if t.verdict == "negligible":
        out.append(f"A side is decided, but the interval the verdict reads lies inside ±{t.sesoi:g} "
                   f"of {t.null:g}, the smallest effect of interest: an effect is shown, and shown "
                   f"too small to be the one the claim is about.")
    if t.verdict == "equivalent":
        out.append(f"The effect is shown within ±{t.margin:g} of {t.null:g} (two one-sided "
                   f"tests, p {_p(t.p_equivalent)} uncorrected): no effect of the size that "
                   f"matters.")
    by_margin = margin_verdicts(t)
    if len(set(by_margin.values())) > 1:
        out.append("The verdict depends on the smallest effect of interest: " + ", ".join(
            f"{v} at ±{m:g}" for m, v in by_margin.items()) + ".")
    if t.caveat:
        out.append(f"*Caveat:* {t.caveat}")
    if t.verdict == "inconclusive":
        if t.items_needed and t.sesoi and not np.isfinite(t.p_equivalent):
            out.append(f"Not decided at this size: about {int(t.items_needed):,} {t.unit}s would "
                       f"decide it either way with an equivalence test within ±{t.sesoi:g}, which "
                       f"this test does not have: an effect below {t.sesoi:g}, the smallest of "
                       f"interest, stays undecided at any size.")
        elif t.items_needed and t.sesoi:
            out.append(f"Not decided at this size: about {int(t.items_needed):,} {t.unit}s would give "
                       f"an 80% chance of deciding it (an effect of at least {t.sesoi:g}, the "
                       f"smallest of interest, or equivalence within ±{t.sesoi:g}).")
        elif t.unit == "language" and np.isfinite(t.p_equivalent):
            out.append(f"Not decided with these {t.n_items} languages: neither a trend nor its "
                       f"absence (within ±{t.margin:g}) yet; more items per language measure "
                       f"each language more precisely, and the findings page says whether "
                       f"these languages can decide it either way.")
        elif t.unit == "language":
            out.append(f"Not decided with these {t.n_items} languages: a permutation over "
                       f"languages decides an effect but never its absence, and more items per "
                       f"language add no language (the findings page says what could decide "
                       f"it).")
        else:
            out.append("Not decided at this size.")
    return out


#: the book's table cells do not wrap (``book/_assets/xcomps.css``); those of a verdict table do,
#: so that it fits the text column: the table is framed by a ``<div>`` of this class
_FRAME = ('<div class="xcomps-verdicts"><style>div.cell_output div.xcomps-verdicts table td '
          '{white-space: normal} div.xcomps-verdicts td details {min-width: 14em}</style>')
#: the header of :func:`claims_markdown`'s table and the line under it
_HEADER = "| claim | verdict | effect [interval] | n | scope |\n| --- | --- | --- | --- | --- |"
_LEGEND = ("*Effect [interval]*: the interval the verdict reads, 95% (*adj.*: at the level "
           "Holm's correction gave the test in its family); *description*: an interval that is "
           "not the test. Click a claim for its measure, null, test, family, adjusted p and "
           "caveat.")


def claims_markdown(tests: list[ClaimTest], digits: int = 2) -> str:
    """The verdicts as one compact Markdown table, a row per test: the claim (its hypothesis,
    short), the verdict (:func:`verdict_label`), the effect and the interval the verdict reads
    (labelled *adj.* when adjusted for the family, *description* when it is not a test), the
    number of units and the scope. Everything else is one click away, in an HTML ``<details>``
    under the claim (:func:`_details`: the measure, the unadjusted 95% interval, the null and
    the test, the family, its role and size and the Holm-adjusted p, equivalence, the caveat,
    why an undecidable claim cannot be decided, the size that could decide an inconclusive
    one). The table is framed by a ``<div>`` whose cells wrap (:data:`_FRAME`); a legend
    follows it. No tests: ``""``. It writes nothing: a chapter records its verdicts for the
    findings page with :func:`xcomps_utils.pages.verdicts.record`.
    """
    if not tests:
        return ""
    rows = [f"| {_claim_cell(t, digits)} | **{_cell(verdict_label(t))}** | "
            f"{_effect_cell(t, digits)} | {t.n_items:,} {_cell(t.unit)}s | {_cell(t.scope)} |"
            for t in tests]
    return _framed([_HEADER, *rows]) + "\n\n" + _LEGEND


def _framed(lines: list[str], frame: str = _FRAME) -> str:
    """A Markdown table (its lines) inside the frame whose cells wrap."""
    return "\n\n".join([frame, "\n".join(lines), "</div>"])


#: the findings table's frame: the table as wide as the text column and never wider (its columns
#: fixed: the claim a third, the models the rest; a long word breaks), so it fits a laptop's page
_FINDINGS_FRAME = (
    '<div class="xcomps-findings"><style>div.cell_output div.xcomps-findings table {display: '
    'table; width: 100%; table-layout: fixed} div.xcomps-findings table td, div.xcomps-findings '
    'table th {white-space: normal; overflow-wrap: anywhere; vertical-align: top} '
    'div.xcomps-findings table th:first-child {width: 34%} div.xcomps-findings small '
    '{color: #5a5f66}</style>')


def claim_anchor(family: str, claim: str, scope: str) -> str:
    """The HTML id of a test's row in its chapter's verdict table (:func:`claims_markdown`), which
    the findings page links to: ``claim-`` and the family, claim and scope in lower case, each
    run of other characters one ``-`` (unique on a page: a page tests a claim once per family
    and scope)."""
    return "claim-" + re.sub(r"[^a-z0-9]+", "-", f"{family} {claim} {scope}".lower()).strip("-")


def _claim_cell(t: ClaimTest, digits: int) -> str:
    """The hypothesis (short), and a click away everything else (:func:`_details`); the cell
    carries the test's anchor (:func:`claim_anchor`)."""
    return (f'<details id="{claim_anchor(t.family, t.claim, t.scope)}">'
            f"<summary>{_cell(_short(t.hypothesis))}</summary>"
            f"{_cell('<br>'.join(_details(t, digits)))}</details>")


# --- the findings page: every page's verdicts ------------------------------------------------

#: the mark of each verdict in the findings table (:func:`findings_table`; :data:`MARK_LEGEND`)
MARKS = {"supported": "✓", "contradicted": "✗", "negligible": "≈", "equivalent": "≡",
         "inconclusive": "?", "cannot be decided": "∅"}
MARK_LEGEND = " · ".join(f"{m} {v}" for v, m in MARKS.items())
_SAID = {"holds": "Holds", "fails": "Fails", "undecided": "Not decided at this size",
         "undecidable": "No available data decides"}


def claim_rows(rows: pd.DataFrame, sizes: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of :func:`xcomps_utils.pages.verdicts.read_verdicts` with how the book says each
    test, from its claim's declaration (:class:`xcomps_utils.analysis.families.Claim`):
    ``question`` (:data:`~xcomps_utils.analysis.families.QUESTIONS`), ``short``,
    ``effect_unit``, ``reading`` (one of :data:`~xcomps_utils.analysis.families.READINGS`),
    ``meaning`` (the outcome in words), ``why`` (for a test not decided: what would decide it,
    or why nothing available does), ``anchor`` (:func:`claim_anchor`) and ``group`` (the scope
    without the model, or ``per <task|language>`` for a family declared ``per``).

    A claim of an undeclared family (a reader's own) is named by its claim and measured in its
    measure.

    Args:
        sizes: :func:`deciding_sizes` of the same rows, in their order (None: computed here
            without the data's sizes): an inconclusive test that no size of the available data
            decides reads "undecidable".
    """
    from .families import Claim, declared_claim, question_of

    sizes = deciding_sizes(rows) if sizes is None else sizes
    out = []
    for (_, row), (_, size) in zip(rows.iterrows(), sizes.iterrows()):
        claim = declared_claim(row["family"], row["claim"]) or Claim(
            None, row["claim"].replace("_", " "), row["measure"] or row["unit"])
        reading, meaning = claim.reading(row["verdict"])
        why = size["why"]
        if reading == "undecided" and size["outcome"] == "undecidable by design":
            reading = "undecidable"
        fam = declared_family(row["family"])
        per = fam.per if fam else ""
        scope = ", ".join(p for p in str(row["scope"]).split(", ") if p and p != row["model"])
        out.append({"question": question_of(row["page"]), "short": claim.short,
                    "effect_unit": claim.effect_unit, "reading": reading, "meaning": meaning,
                    "why": why, "anchor": claim_anchor(row["family"], row["claim"], row["scope"]),
                    "group": f"per {per}" if per else scope, "per": per, "scope_of": scope})
    return pd.concat([rows.reset_index(drop=True), pd.DataFrame(out, index=range(len(rows)))],
                     axis=1)


def _effect(row) -> str:
    """A test's effect with its unit: signed where its null is 0."""
    if not np.isfinite(row["effect"]):
        return "not computable"
    sign = "+" if float(row["null"]) == 0 else ""
    return f"{row['effect']:{sign}.2f} {row['effect_unit']}"


def _said(frame: pd.DataFrame) -> str:
    """One model's tests of one question in words, a sentence per reading: what holds (where it
    was tested, its effect and unit), what fails (what that means for the claim, and the
    effect), what is not decided at this size (and what size would decide it), and what no
    available data decides (and why), grouped by that why. A claim tested per task or language says in how many of them; a claim not decided is
    named once, with where it was tested only when it also reads otherwise (or is undecidable for
    another reason) for this model."""
    # a claim read more than one way (or undecidable for more than one reason) for this model
    mixed = (frame["reading"] + "|" + frame["why"]).groupby(frame["short"]).nunique() > 1
    parts = []
    for reading in ("holds", "fails", "undecided", "undecidable"):
        items, whys = {}, {}
        for (page, short, group), of in frame.groupby(["page", "short", "group"], sort=False):
            g = of[of["reading"] == reading]
            if g.empty:
                continue
            per = of["per"].iloc[0] if len(of) > 1 else ""
            if reading in ("undecided", "undecidable"):
                # said with what would decide it, or why nothing available does; the tests of a
                # claim per task or language not decided at this size are counted (their sizes
                # to decide differ)
                by = g.assign(why="") if per and reading == "undecided" else g
                for why, w in by.groupby("why", sort=False):
                    where = (f"{len(w)} of {len(of)} {per}s" if per
                             else w["scope_of"].iloc[0] if mixed[short] else "")
                    whys.setdefault(why, {}).setdefault(short, []).append(where)
                continue
            if per:
                detail = "; ".join(f"{len(m)} of {len(of)} {per}s"
                                   + (f": {meaning}" if reading == "fails" else "")
                                   for meaning, m in g.groupby("meaning", sort=False))
            else:
                r = g.iloc[0]
                effect = _effect(r) if reading == "holds" else f"{r['meaning']}: {_effect(r)}"
                detail = ": ".join(x for x in (r["scope_of"], effect) if x)
            items.setdefault(short, []).append(detail)
        said = [short + (f" ({'; '.join(d for d in details if d)})" if any(details) else "")
                for short, details in items.items()]
        said += [", ".join(short + (f" ({'; '.join(c for c in counts if c)})" if any(counts)
                                    else "") for short, counts in claims.items())
                 + (f": {why}" if why else "") for why, claims in whys.items()]
        if said:
            parts.append(f"*{_SAID[reading]}*: " + "; ".join(said))
    return ". ".join(parts) + "." if parts else "no test."


def findings_words(rows: pd.DataFrame, sizes: pd.DataFrame | None = None,
                   questions: bool = True) -> str:
    """The verdicts in words (the findings page's opening, a chapter's box): for each question
    (:data:`~xcomps_utils.analysis.families.QUESTIONS`: XCOMPS, token-level perplexity, the
    book's own) and each model it was asked of, one sentence per reading: what holds (with its
    effect and unit), what fails (and what that means for the claim, from its declaration: the
    outcome's own words or :attr:`~xcomps_utils.analysis.families.Claim.means`), what is not
    decided at this size, and what no available data decides, and why. A claim tested once per
    task or language says in how many of them.

    Args:
        rows: verdict rows (:func:`xcomps_utils.pages.verdicts.read_verdicts`).
        sizes: :func:`deciding_sizes` of the same rows (None: without the data's sizes).
        questions: a paragraph per question with its name, its citation and its chapters
            (False: the models' sentences alone, for one chapter's box).

    Returns:
        Markdown; ``""`` for no rows.
    """
    from .families import QUESTIONS

    if rows.empty:
        return ""
    frame = claim_rows(rows, sizes)
    frame["model"] = frame["model"].replace("", "(not named)")
    blocks = []
    for question in [*QUESTIONS, ""]:
        q = frame[frame["question"] == question]
        if q.empty:
            continue
        models = [f"* **{m}**: {_said(g)}" for m, g in q.groupby("model", sort=False)]
        if questions:
            key = QUESTIONS.get(question, ("", ()))[0]
            pages = ", ".join(f"{{doc}}`{p}`" for p in dict.fromkeys(q["page"]))
            head = (f"**{question or 'Other claims'}**"
                    + (f" {{cite:p}}`{key}`" if key else "") + f", tested in {pages}:")
            models = [head, "\n".join(models)]
        blocks.append("\n\n".join(models) if questions else "\n".join(models))
    return "\n\n".join(blocks)


def _cell_of(g: pd.DataFrame, here: bool) -> str:
    """One model's tests of one row of :func:`findings_table`: a mark and the effect with its
    unit, linked to the test; tests of a claim per task or language counted by verdict."""
    href = ("" if here else f"{g['page'].iloc[0]}.html") + f"#{g['anchor'].iloc[0]}"
    if len(g) == 1:
        r = g.iloc[0]
        return (f'<a href="{href}" title="{r["verdict"]}: {_cell(r["meaning"])}">'
                f"{MARKS[r['verdict']]} {_cell(_effect(r))}</a>")
    n = g["verdict"].value_counts()
    marks = " ".join(f"{MARKS[v]}{n[v]}" for v in MARKS if v in n)
    finite = g["effect"][np.isfinite(g["effect"].astype(float))]
    spread = (f"; {finite.min():+.2f} to {finite.max():+.2f} {g['effect_unit'].iloc[0]}"
              if len(finite) else "")
    return f'<a href="{href}">{marks} of {len(g)} {g["per"].iloc[0] or "test"}s</a>{_cell(spread)}'


def findings_table(rows: pd.DataFrame, sizes: pd.DataFrame | None = None,
                   here: bool = False) -> str:
    """The verdicts as one compact table that fits the page: a row per claim (its short name,
    the scope it was tested in, linked to its test in its chapter, :func:`claim_anchor`) under
    its question, a column per model; a cell holds the verdict's mark (:data:`MARKS`) and the
    effect with its unit, linked to the test, or, for a claim tested per task or language, how
    many of them got each verdict and the effects' range. A legend of the marks follows.

    Args:
        rows: verdict rows (:func:`xcomps_utils.pages.verdicts.read_verdicts`).
        sizes: :func:`deciding_sizes` of the same rows (None: without the data's sizes).
        here: the links point into the page that shows the table (a chapter's own), not to
            ``<page>.html``.

    Returns:
        Markdown (a table in a frame whose cells wrap); ``""`` for no rows.
    """
    from .families import QUESTIONS

    if rows.empty:
        return ""
    frame = claim_rows(rows, sizes)
    frame["model"] = frame["model"].replace("", "(not named)")
    models = list(dict.fromkeys(frame["model"]))
    lines = ["| claim | " + " | ".join(models) + " |", "| --- |" + " --- |" * len(models)]
    for question in [*QUESTIONS, ""]:
        q = frame[frame["question"] == question]
        if q.empty:
            continue
        lines.append(f"| **{question or 'Other claims'}** |" + " |" * len(models))
        for (page, short, group), g in q.groupby(["page", "short", "group"], sort=False):
            href = ("" if here else f"{page}.html") + f"#{g['anchor'].iloc[0]}"
            label = f'<a href="{href}">{_cell(short)}</a>' + (
                f" <small>{_cell(group)}</small>" if group else "")
            cells = [_cell_of(g[g["model"] == m], here) if (g["model"] == m).any() else "—"
                     for m in models]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return (_framed(lines, _FINDINGS_FRAME)
            + f"\n\n*Marks*: {MARK_LEGEND}; —: not tested on that model.")


def deciding_sizes_markdown(sizes: pd.DataFrame) -> str:
    """The rows of :func:`deciding_sizes` as one Markdown table whose cells wrap (the text
    column holds it): the claim linked to its page, the model, the verdict, the units behind it,
    and the outcome in bold with why. No rows: ``""``."""
    if sizes.empty:
        return ""
    lines = ["| claim | model | verdict | n | outcome: why |", "| --- | --- | --- | --- | --- |"]
    for _, r in sizes.iterrows():
        page = r["page"]
        lines.append(f"| {{doc}}`{_cell(r['claim'].replace('_', ' '))} </executed/{page}>` | "
                     f"{_cell(r['model'])} | {_cell(r['verdict'])} | {int(r['n']):,} "
                     f"{_cell(r['unit'])}s | **{_cell(r['outcome'])}**"
                     + ("" if r["to decide"] == r["outcome"] else f": {_cell(r['to decide'])}")
                     + " |")
    return _framed(lines)


#: the most languages any benchmark of this study holds (BMLAMA-53): a claim about languages that
#: needs more has no size of the available data that decides it
MOST_LANGUAGES = 53

#: what :func:`deciding_sizes` says of each test, in its ``outcome`` column
SIZE_OUTCOMES = ("decided", "more data decides it", "needs an equivalence test",
                 "undecidable by design")


def deciding_sizes(rows: pd.DataFrame, available: dict | None = None,
                   most_languages: int = MOST_LANGUAGES,
                   languages_to_decide: dict | None = None) -> pd.DataFrame:
    """What size decides each test of :func:`xcomps_utils.pages.verdicts.read_verdicts` (issue
    31's publish sizes): a row per test with ``page``, ``claim``, ``model``, ``verdict``, ``n``
    (units behind it now), ``unit``, ``outcome`` (one of :data:`SIZE_OUTCOMES`), ``to
    decide``, the sentence that says why, and ``why``, the same in a few words (``""`` for a
    decided test; what the findings in words say):

    * a supported, contradicted or equivalent verdict: "decided";
    * an inconclusive item claim with a smallest effect of interest: about how many items give
      an 80% chance of deciding it whatever the true effect (``items_needed``): "more data
      decides it", or undecidable by design when the data hold fewer ("no size of the available
      data decides it");
    * an inconclusive claim about languages: how many languages, each measured without error,
      would decide it either way at the book's smallest effect (``languages_to_decide``, from
      the design, not from this run's interval): undecidable by design when no benchmark here
      has that many; otherwise, for a permutation over languages (which decides an effect but
      never its absence), "needs an equivalence test";
    * "cannot be decided": undecidable by design, with why no outcome of the test can reach the
      level at any size of these units (its ``reason``).

    Args:
        available: page -> the items its data hold at most (the project's XCOMPS sample: 30).
            An item claim that read them all and needs more is undecidable by design.
        most_languages: the most languages any benchmark here holds (:data:`MOST_LANGUAGES`).
        languages_to_decide: ``(page, claim)`` (or ``claim``) -> about how many languages
            would decide it either way
            (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`).
    """
    available = available or {}
    languages_to_decide = languages_to_decide or {}
    out = []
    for _, row in rows.iterrows():
        v, unit, n = row["verdict"], row["unit"], int(row["n_items"])
        if v in ("supported", "contradicted", "negligible", "equivalent"):
            outcome, what, why = "decided", "decided", ""
        elif v == "inconclusive" and unit == "language":
            k = languages_to_decide.get((row["page"], row["claim"]),
                                        languages_to_decide.get(row["claim"]))
            k = int(k) if k is not None and np.isfinite(k) else None
            p_eq = pd.to_numeric(row.get("p_equivalent"), errors="coerce")
            how = (f"about {k:,} languages measured without error would decide it either way "
                   f"at the book's smallest effect (80% chance, with an equivalence test)"
                   if k is not None else "")
            if k is not None and k > most_languages:
                outcome = "undecidable by design"
                why = (f"more languages than any benchmark here holds ({most_languages}) would "
                       f"decide it")
                what = (f"{how}; no benchmark here has more than {most_languages} languages: no "
                        f"size of the available data decides it")
            elif np.isfinite(p_eq):
                outcome = "more data decides it"
                why = "more items per language would decide it"
                what = ((how + "; these languages do, with more items per language (the page's "
                         "size planning says how many)") if how else
                        "more items per language decide it (the page's size planning says how "
                        "many)")
            else:
                outcome = "needs an equivalence test"
                why = "a permutation over languages decides an effect, never its absence"
                what = ("a permutation over languages decides an effect but never its absence"
                        + (f"; {how}, within the {most_languages} languages a benchmark here "
                           f"has" if k is not None else
                           "; no smallest effect of interest is declared for this measure"))
        elif v == "inconclusive":
            need = pd.to_numeric(row.get("items_needed"), errors="coerce")
            cap = available.get(row["page"])
            if np.isfinite(need):
                what = f"about {int(need):,} {unit}s (80% chance of deciding it either way)"
                why = f"about {int(need):,} {unit}s would decide it"
                # said only of a test that already read all the data hold (not a smaller sample)
                if cap is not None and need > cap and n >= cap:
                    outcome = "undecidable by design"
                    what += f"; the data hold {int(cap):,}: no size of the available data decides it"
                    why = f"more {unit}s than the data hold ({int(cap):,}) would decide it"
                else:
                    outcome = "more data decides it"
            else:
                outcome = "needs an equivalence test"
                why = f"more {unit}s decide an effect, never its absence"
                what = (f"no smallest effect of interest declared: more {unit}s decide an "
                        f"effect, never its absence")
        else:
            outcome = "undecidable by design"
            reason = str(row.get("reason") or "too few units")
            what = f"not by more {unit}s of these: {reason}"
            # a test whose smallest attainable p cannot reach its level: said without the p's
            why = (f"with {n:,} {unit}s no outcome of the test reaches the level"
                   if "smallest p" in reason else reason.split(": ", 1)[0])
        out.append({"page": row["page"], "claim": row["claim"], "model": row["model"],
                    "verdict": v, "n": n, "unit": unit, "outcome": outcome, "to decide": what,
                    "why": why})
    return pd.DataFrame(out, columns=["page", "claim", "model", "verdict", "n", "unit",
                                      "outcome", "to decide", "why"])
