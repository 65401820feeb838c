"""Figures for the book: labelled axes, units and the model's name on every plot."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..lm.token_scores import TokenScores

__all__ = ["plot_accuracy", "plot_delta_distribution", "plot_token_surprisal",
           "plot_accuracy_and_pivotal_share", "plot_pivotal_share_histograms",
           "plot_normalized_by_category", "html_delta_view", "plot_heatmaps", "plot_probe_layers",
           "VERDICT_COLORS", "plot_grammar_cells", "plot_grammar_cells_by_model",
           "plot_pivot_shares", "plot_pivot_shares_by_model", "plot_delta_parts",
           "plot_prior_shares", "plot_kappa", "plot_reprobe", "TIER_COLORS",
           "plot_language_accuracy", "plot_language_typology", "plot_rankc"]


def plot_accuracy(table: pd.DataFrame, model: str, label: str = "task", chance: float | None = 0.5,
                  ax=None, title: str | None = None, drawn: pd.Series | None = None):
    """Horizontal bars of accuracy with their interval (``ci_low``/``ci_high``) per ``label``;
    ``drawn``: a drawn chance level per label (e.g. the length-only decision,
    :func:`xcomps_utils.analysis.stats.length_baseline`), marked on each bar."""
    ax = ax or plt.subplots(figsize=(6.5, 0.55 * len(table) + 1.2))[1]
    y = np.arange(len(table))
    acc = table["accuracy"].to_numpy()
    err = np.vstack([acc - table["ci_low"].to_numpy(), table["ci_high"].to_numpy() - acc])
    ax.barh(y, acc, xerr=err, color="#4c72b0", capsize=4)
    for yi, a, n in zip(y, acc, table["n"]):
        ax.text(0.01, yi, f"{a:.1%} (n={n})", va="center", ha="left", color="white", fontsize=9)
    if drawn is not None:
        level = table[label].map(drawn).to_numpy(dtype=float)
        ax.scatter(level, y, marker="D", color="#dd8452", zorder=3, s=30,
                   label="length-only decision (drawn chance)")
    if chance is not None:
        ax.axvline(chance, color="0.3", ls="--", lw=1, label=f"chance ({chance:.0%})")
    if chance is not None or drawn is not None:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_yticks(y, table[label])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (share of pairs with log p(good) > log p(bad)), 95% Wilson interval")
    ax.set_title(title or f"Direct scoring accuracy: {model}")
    return ax


def plot_delta_distribution(scored: pd.DataFrame, model: str, by: str = "task", bins: int = 40,
                            axes=None):
    """One histogram per group of ``delta`` = log p(good) - log p(bad), in nats."""
    groups = list(dict.fromkeys(scored[by]))
    if axes is None:
        fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3), squeeze=False,
                                 sharey=False)
        axes = axes[0]
    for ax, g in zip(axes, groups):
        d = scored.loc[scored[by] == g, "delta"]
        ax.hist(d, bins=bins, color="#55a868", edgecolor="white")
        ax.axvline(0, color="#c44e52", lw=1.2)
        ax.set_title(f"{g} (n={len(d)})", fontsize=10)
        ax.set_xlabel("log p(good) − log p(bad) [nats]")
    axes[0].set_ylabel("pairs")
    axes[0].figure.suptitle(f"Good-minus-bad sentence log-probability: {model}", y=1.02)
    return axes


def plot_token_surprisal(scores: list[TokenScores], labels: list[str], model: str,
                         pivots: list[list[list[int]]] | None = None):
    """Per-token surprisal (nats) of a few texts, one row each; pivotal tokens in red.

    ``pivots[i]`` are character spans of text ``i``; a token overlapping one is highlighted.
    """
    fig, axes = plt.subplots(len(scores), 1, figsize=(9, 2.4 * len(scores)), squeeze=False)
    for k, (s, ax) in enumerate(zip(scores, axes[:, 0])):
        spans = pivots[k] if pivots else []
        piv = [any(a < e and st < b for st, e in spans) for a, b in s.offsets]
        x = np.arange(len(s.logprobs))
        ax.bar(x, s.surprisals, color=["#c44e52" if p else "#8c8c8c" for p in piv])
        ax.set_xticks(x, [s.text[a:b] or s.tokens[j] for j, (a, b) in enumerate(s.offsets)],
                      rotation=45, ha="right", fontsize=9)
        ax.set_ylabel("surprisal [nats]")
        ax.set_title(f"{labels[k]}: total log p = {s.total:.2f} nats", fontsize=10, loc="left")
    fig.suptitle(f"Per-token surprisal, {model} (red: pivotal words; policy {scores[0].bos_policy})",
                 y=1.0)
    fig.tight_layout()
    return fig


def plot_accuracy_and_pivotal_share(summary: pd.DataFrame, model: str):
    """Per task: item accuracy (mean over 8 prompt pairs) and the plain pivotal proportion
    (perplexity and surprisal versions), means with 95% normal intervals over items
    (the paper's Figure 1). ``summary``: :func:`~xcomps_utils.analysis.perplexity_paper.item_summary` rows with a
    ``task`` column."""
    tasks = list(dict.fromkeys(summary["task"]))
    cols = [("accuracy", "accuracy (correct prompt less perplexed)"),
            ("plain_pivotal_ppl", "plain proportion, pivotal (ΔPPL)"),
            ("plain_pivotal_s", "plain proportion, pivotal (Δ surprisal)")]
    # 8.5 inches wide with 10-11 point text: legible at the page's text column.
    fig, axes = plt.subplots(1, 3, figsize=(8.5, 0.55 * len(tasks) + 2.4), sharey=True)
    for ax, (col, label) in zip(axes, cols):
        g = summary.groupby("task", sort=False)[col]
        mean, se = g.mean().reindex(tasks), (g.std(ddof=1) / np.sqrt(g.size())).reindex(tasks)
        y = np.arange(len(tasks))
        ax.barh(y, mean, xerr=1.96 * se.fillna(0), color="#4c72b0", capsize=3)
        for yi, m in zip(y, mean):  # the mean at the right edge, clear of bars and intervals
            ax.text(0.99, yi, f"{m:.2f}", va="center", ha="right", color="black", fontsize=10,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
        ax.set_xlim(0, 1)
        ax.set_xlabel(label.replace(", ", ",\n", 1), fontsize=11)
        ax.tick_params(labelsize=10)
        if col == "accuracy":
            ax.axvline(0.5, color="0.3", ls="--", lw=1)
    axes[0].set_yticks(np.arange(len(tasks)), tasks)
    axes[0].invert_yaxis()
    fig.suptitle(f"Accuracy and share of the perplexity difference on pivotal tokens\n{model} "
                 f"(mean over items, 95% interval)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_pivotal_share_histograms(metrics: pd.DataFrame, model: str, bins: int = 20):
    """Histogram of the plain pivotal proportion (ΔPPL) per task, counts on a log axis, for the
    prompt pairs of one fixed wording and order (the paper's Figure 2)."""
    tasks = list(dict.fromkeys(metrics["task"]))
    # At most three panels a row, so that the figure keeps readable labels at page width
    # (about 9 inches: scaled to the text column, 11-point labels stay about 10 points).
    ncols = min(3, len(tasks))
    nrows = -(-len(tasks) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.9 * nrows + 0.6), sharey=True,
                             squeeze=False)
    for ax, t in zip(axes.flat, tasks):
        m = metrics[metrics["task"] == t]
        ax.hist(m["plain_pivotal_ppl"], bins=np.linspace(0, 1, bins + 1), color="#55a868",
                edgecolor="white")
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)  # a bin holding one prompt pair still shows as a bar
        ax.set_title(f"{t} (n={len(m)})", fontsize=11)
        ax.set_xlabel("plain proportion, pivotal", fontsize=11)
        ax.tick_params(labelsize=10)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("prompt pairs (log)", fontsize=11)
    w = metrics[["wording", "order"]].drop_duplicates()
    label = ", ".join(f"{a}/{b}" for a, b in w.itertuples(index=False)) if len(w) <= 3 else "fixed"
    fig.suptitle(f"Plain pivotal proportion per prompt pair, {model}\nprompt: {label}",
                 fontsize=11)
    fig.tight_layout()
    return fig


def plot_normalized_by_category(metrics: pd.DataFrame, model: str):
    """Mean normalized proportion of pivotal, period and other tokens per task, for ΔPPL and for
    Δ surprisal (the paper's Appendix D), with 95% normal intervals over prompt pairs."""
    tasks = list(dict.fromkeys(metrics["task"]))
    cats = ("pivotal", "period", "other")
    colors = {"pivotal": "#c44e52", "period": "#8172b2", "other": "#8c8c8c"}
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 4), sharey=True)
    x = np.arange(len(tasks))
    for ax, kind, title in ((axes[0], "ppl", "ΔPPL"), (axes[1], "s", "Δ surprisal [nats]")):
        for k, c in enumerate(cats):
            g = metrics.groupby("task", sort=False)[f"norm_{c}_{kind}"]
            mean = g.mean().reindex(tasks)
            se = (g.std(ddof=1) / np.sqrt(g.size())).reindex(tasks).fillna(0)
            ax.bar(x + (k - 1) * 0.27, mean, 0.27, yerr=1.96 * se, label=c, color=colors[c],
                   capsize=2)
        ax.axhline(0, color="0.2", lw=0.8)
        ax.set_xticks(x, tasks, rotation=25, ha="right", fontsize=10)
        ax.set_title(f"normalized proportion on {title}", fontsize=11)
    axes[0].set_ylabel("normalized proportion (−1 … +1)", fontsize=11)
    axes[0].legend(fontsize=10)
    fig.suptitle(f"Which tokens carry the difference: {model}", fontsize=11)
    fig.tight_layout()
    return fig


def html_delta_view(groups: pd.DataFrame, title: str) -> str:
    """HTML of one correct prompt, each aligned group coloured by ΔPPL (red: the group makes the
    incorrect prompt more perplexed, blue: less; intensity ~ log10(1 + |ΔPPL|)); pivotal groups
    underlined. Hover shows the numbers."""
    import html as _html

    mag = np.log10(1 + groups["delta_ppl"].abs().to_numpy())
    top = max(mag.max(), 1e-9)
    spans = []
    for (_, g), m in zip(groups.iterrows(), mag):
        alpha = 0.85 * m / top
        rgb = "196,78,82" if g["delta_ppl"] > 0 else "76,114,176"
        style = f"background: rgba({rgb},{alpha:.2f}); padding: 1px 0;"
        if g["category"] == "pivotal":
            style += " text-decoration: underline; font-weight: bold;"
        tip = (f"{g['category']}: s_correct={g['s_correct']:.2f}, s_incorrect={g['s_incorrect']:.2f}"
               f" nats, ΔPPL={g['delta_ppl']:.3g}")
        spans.append(f'<span style="{style}" title="{_html.escape(tip)}">'
                     f'{_html.escape(g["text"])}</span>')
    return (f'<div style="font-family: monospace; line-height: 1.9; margin: 0.5em 0;">'
            f'<b>{_html.escape(title)}</b><br>{"".join(spans)}</div>')


def plot_heatmaps(tables: dict[str, pd.DataFrame], model: str, vmin: float = 0.0,
                  vmax: float = 1.0):
    """One heatmap per method of a language x negative-type table of scores (the paper's Figure 1).
    ``tables``: method name -> DataFrame (rows languages, columns negative types)."""
    # constrained layout keeps the title, panel titles and colour bar apart; about 10 inches wide
    # so that 9-10 point text stays legible at the page's width.
    # at most two panels a row, 8 inches wide: the text column at about its own size
    ncols = min(2, len(tables))
    nrows = -(-len(tables) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(8, nrows * (0.45 * max(
        len(t) for t in tables.values()) + 2.2)), squeeze=False, layout="constrained")
    for ax in axes.flat[len(tables):]:
        ax.set_visible(False)
    for ax, (name, t) in zip(axes.flat, tables.items()):
        im = ax.imshow(t.to_numpy(dtype=float), vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
        ax.set_xticks(range(t.shape[1]), t.columns, rotation=30, ha="right", fontsize=10)
        ax.set_yticks(range(t.shape[0]), t.index, fontsize=10)
        for (i, j), v in np.ndenumerate(t.to_numpy(dtype=float)):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if v < (vmin + vmax) / 2 else "black")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("negative-sample type", fontsize=10)
    for ax in axes[:, 0]:
        ax.set_ylabel("language")
    fig.colorbar(im, ax=axes.flat[:len(tables)], shrink=0.8,
                 label="accuracy (Meta, Direct) / balanced accuracy (Neuro)")
    fig.suptitle(f"XCOMPS by language and negative type: {model}", fontsize=11)
    return fig


def plot_probe_layers(by_layer: pd.DataFrame, model: str, by: str = "lang"):
    """The probe by layer, read against baselines that hold under leak-free folds
    (:mod:`xcomps_utils.methods.probing`).

    Three panels, one line per ``by`` group (legend: the group and its number of sentences):
    balanced accuracy (chance 0.5) with the label-permutation null's 95th percentile dashed
    (when the table has ``null_q95``) and the embedding layer marked; the probe minus that null
    (above 0: beyond what shuffled labels reach at that layer); F1 with each group's
    always-"acceptable" baseline dotted.

    Args:
        by_layer: the first table of :func:`xcomps_utils.methods.probing.probe_tables` (rows of one probe
            group per ``by`` value).
    """
    # stacked, 7.5 inches wide: the page's text column at about its own size, so 9-10 point text
    # stays legible (three panels side by side were 13 inches, shrunk to half)
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 9.6), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    has_null = "null_q95" in by_layer and by_layer["null_q95"].notna().any()
    for k, (key, g) in enumerate(by_layer.groupby(by, sort=False)):
        c = colors[k % len(colors)]
        label = f"{key} (n={int(g['n_sentences'].iat[0])})"
        axes[0].plot(g["layer"], g["balanced_accuracy"], color=c, marker="o", ms=2.5, label=label)
        if has_null:
            axes[0].plot(g["layer"], g["null_q95"], color=c, ls="--", lw=0.9)
            axes[1].plot(g["layer"], g["balanced_accuracy"] - g["null_q95"], color=c,
                         marker="o", ms=2.5)
        axes[2].plot(g["layer"], g["f1"], color=c, marker="o", ms=2.5)
        axes[2].axhline(g["majority_f1"].iat[0], color=c, ls=":", lw=0.9)
    axes[0].axhline(0.5, color="0.4", lw=0.8)
    axes[0].axvline(0, color="0.7", lw=6, alpha=0.3, zorder=0)
    axes[0].set_ylabel("balanced accuracy (chance 0.5)")
    axes[0].set_title("probe (solid); permutation null, 95th pct. (dashed);\n"
                      "grey band: embedding layer", fontsize=9)
    axes[1].axhline(0.0, color="0.4", lw=0.8)
    axes[1].set_ylabel("probe − null 95th percentile")
    axes[1].set_title("above 0: beyond shuffled labels at that layer", fontsize=9)
    axes[2].set_ylabel("F1 (acceptable = positive)")
    axes[2].set_title("F1; dotted: always answer 'acceptable'", fontsize=9)
    axes[2].set_xlabel("layer (0 = embeddings)")
    axes[0].set_ylim(0.2, 1.02)
    axes[2].set_ylim(0, 1.02)
    axes[0].legend(fontsize=8, ncol=2, title=f"{by} (sentences)", title_fontsize=8)
    axes[2].xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle(f"Neuro: linear (ridge) probe by layer, {model}\nitem-whole, "
                 f"concept-disjoint cross-validation", fontsize=11)
    fig.tight_layout()
    return fig


VERDICT_COLORS = {"supported": "#2a9d8f", "contradicted": "#e76f51", "negligible": "#b5c99a",
                  "equivalent": "#e9c46a",
                  "inconclusive": "#8d99ae", "cannot be decided": "#c9ccd3"}


def plot_grammar_cells(cells: pd.DataFrame, model: str, rows: str = "lang",
                       cols: str = "subset", title: str = "Direct accuracy", ax=None):
    """A heatmap of Direct accuracy per ``rows`` × ``cols`` cell
    (:func:`xcomps_utils.analysis.grammar_study.accuracy_cells`), each cell labelled with its accuracy, its
    item-bootstrap 95% interval and its decided pairs; on ``ax`` when given (one figure for
    several models, so a numbered figure is one output)."""
    acc = cells.pivot(index=rows, columns=cols, values="accuracy")
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.45 * acc.shape[1] + 2, 0.75 * acc.shape[0] + 1.6))
    fig = ax.figure
    im = ax.imshow(acc.to_numpy(float), vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    for _, r in cells.iterrows():
        i, j = list(acc.index).index(r[rows]), list(acc.columns).index(r[cols])
        ax.text(j, i, f"{r['accuracy']:.2f}\n[{r['ci_low']:.2f}, {r['ci_high']:.2f}]\n"
                f"n={r['decided']}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(acc.shape[1]), acc.columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(acc.shape[0]), acc.index)
    fig.colorbar(im, ax=ax, label="accuracy (decided pairs; chance 0.5)")
    ax.set_title(f"{title}: {model} ({int(cells['decided'].sum())} decided pairs, "
                 f"{int(cells['n'].sum())} in all; 95% item-bootstrap intervals)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_pivot_shares(summary: pd.DataFrame, model: str, label: str = "lang",
                      unit: str = "nats", ax=None):
    """Bars of the pivot region's plain and normalized proportion of the pair's difference per
    group (:func:`xcomps_utils.analysis.grammar_study.pivot_summary`), with the number of pairs; on ``ax`` when
    given."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(summary) + 1.5))
    fig = ax.figure
    y = np.arange(len(summary))
    ax.barh(y - 0.2, summary["plain"], 0.4, color="#4c72b0", label="plain proportion")
    ax.barh(y + 0.2, summary["normalized"], 0.4, color="#dd8452", label="normalized proportion")
    ax.set_yticks(y, [f"{r[label]} (n={r['pairs']})" for _, r in summary.iterrows()],
                  fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_xlim(-1, 1)
    ax.set_xlabel(f"share of the pair's log-probability difference on the pivotal words "
                  f"(token groups, {unit}; 1: all of it)")
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"Where the difference sits: {model}", fontsize=10)
    fig.tight_layout()
    return fig


def plot_grammar_cells_by_model(cells: dict[str, pd.DataFrame], title: str = "Direct accuracy"):
    """:func:`plot_grammar_cells` for several models, one panel per model stacked in one figure
    (a numbered figure is one output). ``cells``: model name -> its accuracy cells."""
    fig, axes = plt.subplots(len(cells), 1, figsize=(9, 5.2 * len(cells)), squeeze=False)
    for ax, (model, c) in zip(axes[:, 0], cells.items()):
        plot_grammar_cells(c, model, title=title, ax=ax)
    return fig


def plot_pivot_shares_by_model(summary: pd.DataFrame, label: str = "label", note: str = "",
                               unit: str = "nats"):
    """:func:`plot_pivot_shares` for several models, stacked in one figure; ``summary`` has
    a ``model`` column (one panel per model, in order of appearance) and ``note`` follows each
    model's name in its panel title (e.g. the pairs per task)."""
    models = list(dict.fromkeys(summary["model"]))
    n_rows = summary.groupby("model").size().max()
    fig, axes = plt.subplots(len(models), 1, figsize=(7.5, len(models) * (0.45 * n_rows + 1.8)),
                             squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        plot_pivot_shares(summary[summary["model"] == model], f"{model}{note}", label=label,
                          unit=unit, ax=ax)
    return fig


def plot_delta_parts(summary: pd.DataFrame, model: str,
                     parts=("concept", "property", "period")):
    """Bars of the mean parts of Direct's difference Δ = log p(good) − log p(bad) (nats) per row
    of ``summary`` (:func:`xcomps_utils.analysis.decompose.proportion_summary`: columns ``delta_<part>``
    and ``delta``), with the whole Δ as a black tick."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    cols = summary[[f"delta_{p}" for p in parts]].rename(columns=lambda c: c.replace("delta_", ""))
    cols.plot.bar(ax=ax)
    ax.plot(range(len(summary)), summary["delta"], "k_", ms=18, mew=2, label="Δ (whole)")
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xlabel("language")
    ax.set_ylabel("mean part of Δ (nats)")
    ax.set_title(f"Where Direct's difference comes from, {model}")
    ax.legend(ncols=4, fontsize=8)
    return fig


def plot_prior_shares(shares: dict[str, pd.DataFrame], chance: float = 0.25):
    """The share of Direct-correct pairs right only with the concept prior, per row (language,
    then ``all``), with its 95% interval, one series per model. ``shares``: model name ->
    :func:`xcomps_utils.pages.chapters.prior_shares` (``prior_share``, ``ci_low``, ``ci_high``)."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for k, (model, s) in enumerate(shares.items()):
        x = np.arange(len(s)) + (k - (len(shares) - 1) / 2) * 0.2
        ax.errorbar(x, s.prior_share, yerr=[s.prior_share - s.ci_low, s.ci_high - s.prior_share],
                    fmt="o", capsize=3, label=model)
    ax.set_xticks(range(len(s)), s.index)
    ax.axhline(chance, color="0.4", ls="--", lw=1,
               label=f"no prior, no knowledge (about {chance:.2f})")
    ax.set_xlabel("language")
    ax.set_ylabel("Direct-correct pairs whose\nproperty tokens disagree (share)")
    ax.set_ylim(0, 1)
    ax.set_title(f"Gross share right only with the prior (95% item-bootstrap intervals): "
                 f"{', '.join(shares)}", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def plot_kappa(agree: dict[str, pd.DataFrame], languages: list[str], model: str):
    """One heatmap per judgement of Cohen's kappa between every two languages.

    Args:
        agree: judgement column (``direct_correct``, ``cond_correct``) -> its
            :func:`xcomps_utils.analysis.consistency.agreement_table` (``lang_a``, ``lang_b``, ``kappa``).
    """
    names = {"direct_correct": "Direct", "cond_correct": "conditional Direct"}
    fig, axes = plt.subplots(1, len(agree), figsize=(min(8.0, 4 * len(agree) + 0.8), 3.6),
                             squeeze=False)
    for ax, (col, t) in zip(axes[0], agree.items()):
        k = pd.DataFrame(np.nan, index=languages, columns=languages)
        for r in t.itertuples():
            k.loc[r.lang_a, r.lang_b] = k.loc[r.lang_b, r.lang_a] = r.kappa
        im = ax.imshow(k.to_numpy(float), vmin=-0.5, vmax=0.5, cmap="RdBu")
        ax.set_xticks(range(len(languages)), languages)
        ax.set_yticks(range(len(languages)), languages)
        ax.set_xlabel("language")
        ax.set_ylabel("language")
        ax.set_title(f"Cohen's kappa, {names.get(col, col)}")
    fig.colorbar(im, ax=axes[0].tolist(), label="kappa (0: chance agreement)")
    fig.suptitle(f"Do two languages know the same items? {model}")
    return fig


def plot_reprobe(curves: dict[str, pd.DataFrame], lang: str, model: str):
    """The Neuro probe's balanced accuracy by layer under several fold schemes.

    Args:
        curves: label -> the ``.curve`` of :func:`xcomps_utils.pages.exercises.reprobe`
            (``balanced_accuracy`` indexed by layer).
    """
    fig, ax = plt.subplots(figsize=(7, 3))
    pd.DataFrame({k: t.balanced_accuracy for k, t in curves.items()}).plot(ax=ax, marker=".")
    ax.axhline(0.5, color="0.3", ls="--", lw=1)
    ax.set_xlabel("layer (0: embeddings)")
    ax.set_ylabel("balanced accuracy (chance 0.5)")
    ax.set_title(f"Neuro probe, {lang}: {' vs '.join(curves)}, {model}")
    return fig


#: resource tiers (urielplus) as colours, low to high
TIER_COLORS = {"low": "#dd8452", "medium": "#4c72b0", "high": "#55a868"}


def plot_language_accuracy(tables: dict[str, pd.DataFrame], typology: pd.DataFrame,
                           title: str, measure: str = "pairwise"):
    """One panel per model: each language's accuracy (filled dot, 95% interval resampling facts)
    beside the control's (the same candidates in a frame with another subject: open circle), the
    languages sorted by the first model's accuracy beyond the control and coloured by resource
    tier; the y labels carry the facts behind each point.

    Args:
        tables: model -> :func:`xcomps_utils.analysis.bmlama_study.language_table` (index: language).
        typology: :func:`xcomps_utils.pairs.typology.language_table` (``name``, ``resource_tier``).
        measure: ``"pairwise"`` (share of gold-vs-distractor pairs won) or ``"accuracy"``
            (top-1: the gold above every distractor).
    """
    value, low, high, ctl, beyond = {
        "pairwise": ("pairwise", "pairwise_low", "pairwise_high", "control_pairwise",
                     "pairwise_beyond"),
        "accuracy": ("accuracy", "ci_low", "ci_high", "control_accuracy", "beyond")}[measure]
    first = next(iter(tables.values()))
    order = first[beyond if beyond in first else value].sort_values().index
    n = len(order)
    fig, axes = plt.subplots(1, len(tables), figsize=(4.2 * len(tables), 0.2 * n + 1.6),
                             sharey=True, squeeze=False)
    y = np.arange(n)
    for ax, (model, t) in zip(axes[0], tables.items()):
        t = t.reindex(order)
        tiers = typology["resource_tier"].reindex(order).fillna("unknown")
        colors = [TIER_COLORS.get(k, "0.5") for k in tiers]
        ax.hlines(y, t[low], t[high], colors=colors, lw=1.5)
        ax.scatter(t[value], y, c=colors, s=18, zorder=3)
        if ctl in t:
            ax.scatter(t[ctl], y, facecolors="none", edgecolors="0.35", s=18, zorder=3)
        ax.set_xlim(0, 1)
        ax.grid(axis="x", color="0.9")
        ax.set_xlabel("pairwise accuracy (gold above a distractor)" if measure == "pairwise"
                      else "top-1 accuracy (gold above every distractor)")
        ax.set_title(model, fontsize=9)
    labels = [f"{typology['name'].get(c, c)} ({c}, n={int(first.at[c, 'n_facts'])})"
              for c in order]
    axes[0][0].set_yticks(y, labels, fontsize=7)
    for k, c in TIER_COLORS.items():
        axes[0][-1].scatter([], [], color=c, s=18, label=f"{k} resource")
    axes[0][-1].scatter([], [], facecolors="none", edgecolors="0.35", s=18,
                        label="control (no fact)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_language_typology(tables: dict[str, pd.DataFrame], typology: pd.DataFrame,
                           title: str, value: str = "pairwise_beyond"):
    """Accuracy beyond the control per language against its resource tier (left; jittered) and
    its Grambank bound-inflection share (right: the morphology index), one colour per model, so
    the trends the language-level claims test can be seen.

    Args:
        tables: model -> :func:`xcomps_utils.analysis.bmlama_study.language_table`.
        typology: with ``resource_tier`` and ``grambank_bound``.
    """
    from ..analysis.bmlama_study import TIER_ORDER

    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
    rng = np.random.default_rng(0)
    for k, (model, t) in enumerate(tables.items()):
        d = t[[value]].join(typology[["resource_tier", "grambank_bound"]], how="left")
        x = d["resource_tier"].map(TIER_ORDER).astype(float)
        c = f"C{k}"
        a.scatter(x + rng.uniform(-0.12, 0.12, len(x)), d[value], s=14, color=c,
                  label=f"{model} ({len(d)} languages)")
        b.scatter(d["grambank_bound"], d[value], s=14, color=c)
    a.set_xticks([0, 1, 2], ["low", "medium", "high"])
    a.set_xlabel("resource tier (urielplus)")
    a.set_ylabel(f"accuracy beyond the control\n({value}; accuracy units)")
    b.set_xlabel("Grambank bound-inflection share (0-1)")
    for ax in (a, b):
        ax.axhline(0, color="0.5", lw=0.8, ls="--")
        ax.grid(color="0.92")
    a.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_rankc(table: pd.DataFrame, title: str, value: str = "rankc_beyond"):
    """RankC between language pairs (:func:`xcomps_utils.analysis.bmlama_study.rankc_table`) as a
    symmetric heatmap of ``value`` (RankC minus its fact-shuffled chance level, by default)."""
    langs = sorted(set(table["lang_a"]) | set(table["lang_b"]))
    m = pd.DataFrame(np.nan, index=langs, columns=langs)
    for _, r in table.iterrows():
        m.at[r["lang_a"], r["lang_b"]] = m.at[r["lang_b"], r["lang_a"]] = r[value]
    fig, ax = plt.subplots(figsize=(0.32 * len(langs) + 2.2, 0.32 * len(langs) + 1.2))
    lim = float(np.nanmax(np.abs(m.to_numpy()))) if m.notna().any().any() else 1.0
    im = ax.imshow(m.to_numpy(float), cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_xticks(range(len(langs)), langs, fontsize=7, rotation=90)
    ax.set_yticks(range(len(langs)), langs, fontsize=7)
    fig.colorbar(im, ax=ax, shrink=0.8, label="RankC minus its chance level" if
                 value == "rankc_beyond" else value)
    n = int(table["n_facts"].iloc[0]) if len(table) else 0
    ax.set_title(f"{title} ({n} facts scored in every language)", fontsize=9)
    fig.tight_layout()
    return fig
