"""Helpers behind the book's exercise solutions (xcomps_utils.pages.exercises) and the Figure 2 layout."""

import pandas as pd
import pytest

from xcomps_utils.pages import exercises


def _policies():
    rows = []
    # pair 1: correct under bos only; pair 2: correct everywhere; pair 3: flips with a wide spread
    for pid, deltas in (("1", (0.4, -0.1, -0.2)), ("2", (1.0, 0.8, 0.9)), ("3", (-2.0, 1.5, 1.0))):
        for policy, d in zip(("bos", "drop_first", "lm_eval"), deltas):
            rows.append({"task": "blimp_anaphor", "pair_id": pid, "policy": policy, "delta": d,
                         "correct": float(d > 0)})
    return pd.DataFrame(rows)


def test_policy_flips_finds_and_orders_changed_decisions():
    flips = exercises.policy_flips(_policies())
    assert list(flips.pair_id) == ["3", "1"]  # spread 3.5 before spread 0.6; pair 2 never flips
    assert list(flips.columns) == ["task", "pair_id", "delta_bos", "delta_drop_first",
                                   "delta_lm_eval", "correct_bos", "correct_drop_first",
                                   "correct_lm_eval"]
    assert flips.loc[1, "delta_drop_first"] == -0.1 and flips.loc[1, "correct_bos"] == 1.0


def test_policy_flips_needs_two_policies():
    with pytest.raises(ValueError, match="at least two policies"):
        exercises.policy_flips(_policies().query("policy == 'bos'"))
    with pytest.raises(ValueError, match="lack column"):
        exercises.policy_flips(_policies().drop(columns="delta"))


def test_first_word_split_parts_sum_to_the_difference_and_follow_the_spans():
    from types import SimpleNamespace

    def table(text, spans, lps):
        return [{"text": text, "position": i, "token_id": i, "token": text[a:b], "start": a,
                 "end": b, "logprob": lp} for i, ((a, b), lp) in enumerate(zip(spans, lps))]
    good, bad = "Ann helped herself .", "Ann helped himself ."
    spans = [(0, 3), (3, 10), (10, 18), (18, 20)]
    tokens = pd.DataFrame(table(good, spans, [-5.0, -2.0, -1.0, -0.5])
                          + table(bad, spans, [-5.0, -2.5, -4.0, -0.25]))
    pair = SimpleNamespace(good=good, bad=bad, good_pivots=[[11, 18]], bad_pivots=[[11, 18]])
    parts = exercises.first_word_split(tokens, pair, "bos")
    assert parts == pytest.approx({"first word": 0.0, "pivotal": 3.0, "rest": 0.25})
    assert sum(parts.values()) == pytest.approx(-8.5 - -11.75)
    with pytest.raises(KeyError, match="no scored tokens"):
        exercises.first_word_split(tokens[tokens.text == good], pair, "bos")


def test_reprobe_reproduces_the_stored_probe_and_leaks_with_sentence_folds(lm, tmp_path):
    from xcomps_utils.pairs import xcomps
    from xcomps_utils.runs import execute as methods

    pairs = xcomps.load_languages(["en"], source="sample", items_per_language=6, seed=0)
    res = methods.run(lm, pairs, ["neuro"], store=tmp_path / "results", probe_by=[["lang"]],
                      progress=False)
    stored = res.wide("neuro").query("layer >= 0").sort_values("layer")
    fair = exercises.reprobe(res, pairs, folds="leak_free", lang="en")
    n_layers = lm.model.config.num_hidden_layers + 1
    assert len(fair.curve) == n_layers == len(stored)
    # the chapter's leak-free folds, recomputed from the stored states: the stored numbers
    assert fair.curve.balanced_accuracy.to_numpy() == pytest.approx(
        stored.balanced_accuracy.to_numpy(), abs=1e-12)
    assert fair.leaked_concepts == 0
    leaky = exercises.reprobe(res, pairs, folds="sentences", lang="en")
    # 6 items x 5 sentences in 5 plain folds: some item has sentences on both sides
    assert len(leaky.curve) == n_layers and leaky.leaked_items > 0
    assert not (leaky.curve.balanced_accuracy.to_numpy()
                == fair.curve.balanced_accuracy.to_numpy()).all()
    table, curves = exercises.compare_folds(res, pairs, "en")  # the chapter's exercise
    assert list(table.leaked_items) == [fair.leaked_items, leaky.leaked_items]
    assert table.best_balanced_accuracy.iloc[1] == leaky.curve.balanced_accuracy.max()
    assert curves["leak-free folds"].equals(fair.curve)
    # a shipped store has no states: the exercise recomputes the language's into a local store
    res.store.ship(tmp_path / "shipped")
    shipped = methods.run(lm, pairs, ["neuro"], store=tmp_path / "shipped", probe_by=[["lang"]],
                          progress=False)
    assert shipped.computed == {"neuro": 0}
    with pytest.raises(Exception, match="states were not shipped"):
        exercises.reprobe(shipped, pairs)
    asked = []

    def run(model, p, m, **kw):
        asked.append((model, sorted(set(p.lang)), m))
        return methods.run(lm, p, m, probe_by=[["lang"]], progress=False, **kw)
    assert exercises.with_states(res, pairs, "en", run) is res  # it has them: nothing computed
    local = exercises.with_states(shipped, pairs, "en", run, store=tmp_path / "local")
    assert asked == [(res.provenance("neuro")["key"]["model"], ["en"], ["neuro"])]
    again, _ = exercises.compare_folds(local, pairs, "en")
    pd.testing.assert_frame_equal(again, table, atol=1e-6)
    with pytest.raises(ValueError, match="the 'lang' parameter must be a language of the pairs; got 'xx'"):
        exercises.with_states(shipped, pairs, "xx", run)
    with pytest.raises(ValueError, match="the 'lang' parameter must be a language of the pairs; got 'xx'"):
        exercises.reprobe(res, pairs, lang="xx")
    with pytest.raises(ValueError, match="the 'folds' parameter must be 'leak_free' or 'sentences'; got 'items'"):
        exercises.reprobe(res, pairs, folds="items")
    with pytest.raises(KeyError, match="no Neuro run"):
        exercises.reprobe(methods.Results(res.measures, {}, res.store), pairs)


def test_pivotal_share_histograms_stay_legible_at_page_width():
    import matplotlib

    matplotlib.use("Agg")
    from xcomps_utils.pages import plots

    tasks = ["blimp_anaphor", "blimp_animacy", "dust", "crows_pairs", "nonsense"]
    metrics = pd.DataFrame({"task": [t for t in tasks for _ in range(4)],
                            "plain_pivotal_ppl": [0.1, 0.5, 0.9, 0.3] * 5,
                            "wording": "w", "order": "good_first"})
    fig = plots.plot_pivotal_share_histograms(metrics, "smollm2-135m-instruct")
    width, _ = fig.get_size_inches()
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert width <= 10 and len(visible) == 5  # 3 + 2 panels, not 5 in a row
    assert min(ax.title.get_fontsize() for ax in visible) >= 10
    assert all(ax.get_xlabel() for ax in visible)
    assert all(ax.get_ylim()[0] < 1 for ax in visible)  # a count of 1 is a visible bar on log


def _titles(fig):
    return " ".join([ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text()
                                                          if fig._suptitle else ""])


def test_chapter_figures_label_axes_and_name_the_model():
    """The figures the chapters used to draw by hand (issue 21), now in plots: labelled axes,
    units, the model in the title."""
    import matplotlib

    matplotlib.use("Agg")
    from xcomps_utils.pages import plots

    langs = ["en", "de", "zh"]
    summary = pd.DataFrame({"delta_concept": [1.0, 0.5, -0.2], "delta_property": [0.2, 0.1, 0.3],
                            "delta_period": [0.0, 0.1, 0.0], "delta": [1.2, 0.7, 0.1]},
                           index=langs)
    fig = plots.plot_delta_parts(summary, "m-135m")
    ax = fig.axes[0]
    assert "nats" in ax.get_ylabel() and ax.get_xlabel() == "language" and "m-135m" in _titles(fig)
    assert len(ax.patches) == 3 * 3  # a bar per language and part

    share = pd.DataFrame({"prior_share": [0.2, 0.3, 0.25], "ci_low": [0.1, 0.2, 0.2],
                          "ci_high": [0.3, 0.4, 0.3]}, index=["en", "de", "all"])
    fig = plots.plot_prior_shares({"m-135m": share, "g-270m": share})
    assert "m-135m" in _titles(fig) and "g-270m" in _titles(fig) and fig.axes[0].get_ylabel()

    table = pd.DataFrame({"lang_a": ["en", "en", "de"], "lang_b": ["de", "zh", "zh"],
                          "kappa": [0.2, -0.1, 0.4]})
    fig = plots.plot_kappa({"direct_correct": table, "cond_correct": table}, langs, "m-135m")
    heat = fig.axes[0].images[0].get_array()
    assert heat[0, 1] == heat[1, 0] == 0.2 and heat[1, 2] == 0.4  # symmetric, in language order
    assert "m-135m" in _titles(fig) and "Direct" in fig.axes[0].get_title()
    assert "conditional" in fig.axes[1].get_title()

    curve = pd.DataFrame({"balanced_accuracy": [0.5, 0.6, 0.7]})
    fig = plots.plot_reprobe({"leak-free": curve, "sentences": curve}, "en", "m-135m")
    assert "layer" in fig.axes[0].get_xlabel() and "m-135m" in _titles(fig)


def test_load_with_template_reports_what_the_loader_rejects():
    """The Meta-template exercise: a copy of the shipped file with one template added loads, or
    gives the loader's message naming the language and field."""
    from xcomps_utils.methods import meta

    fr = dict(meta.meta_template("fr"))
    assert exercises.load_with_template("fr", fr) == "the template file loads"
    got = exercises.load_with_template("it", fr)
    assert got.startswith("DataError: ") and "language 'it': not in the language table" in got
    assert "a copy of data/meta_templates.json" in got and "/tmp" not in got  # no build path
    broken = {**fr, "question": fr["question"].replace("{option_2}", "")}
    got = exercises.load_with_template("fr", broken)
    assert "language 'fr', field 'question': placeholders" in got
