"""Figures for the book: labelled axes, units and the model's name on every plot."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .scoring import TokenScores

__all__ = ["plot_accuracy", "plot_delta_distribution", "plot_token_surprisal"]


def plot_accuracy(table: pd.DataFrame, model: str, label: str = "task", chance: float | None = 0.5,
                  ax=None, title: str | None = None):
    """Horizontal bars of accuracy with their interval (``ci_low``/``ci_high``) per ``label``."""
    ax = ax or plt.subplots(figsize=(6.5, 0.55 * len(table) + 1.2))[1]
    y = np.arange(len(table))
    acc = table["accuracy"].to_numpy()
    err = np.vstack([acc - table["ci_low"].to_numpy(), table["ci_high"].to_numpy() - acc])
    ax.barh(y, acc, xerr=err, color="#4c72b0", capsize=4)
    for yi, a, n in zip(y, acc, table["n"]):
        ax.text(0.01, yi, f"{a:.1%} (n={n})", va="center", ha="left", color="white", fontsize=9)
    if chance is not None:
        ax.axvline(chance, color="0.3", ls="--", lw=1, label=f"chance ({chance:.0%})")
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
