"""The study of one's own models: every run the chapters need for them, planned without loading a
model, and computed by executing the chapters (issue 44).

* :func:`requests`: per chapter, the run calls it makes (:class:`Request`: a model, pairs,
  methods and the settings the call adds), as a function of the chapter's parameters
  (:data:`REQUESTS`), the pairs loaded by the package functions the chapter itself calls
  (``tasks.sample``, ``xcomps.load_languages``, ``bmlama_scoring.sample_facts``,
  ``grammar_study.sample_pairs``, ...). ``tests/pages/test_study.py`` holds them to the runs the
  chapters read: every run the shipped store holds at the publish sizes, and the runs each chapter
  read in a real study of two models;
* :func:`plan`: those requests at a size for some models as runs (the specs of
  :func:`xcomps_utils.runs.execute.specs`, the one planning :func:`~xcomps_utils.runs.execute.run`
  does, and their ids from the model's identity, hashed from its files without loading it),
  whether the store holds each, and the compute each would take (:func:`expected_seconds`);
* :func:`rates`: the measured compute, pairs a second per model, method, dataset and device kind,
  from the done markers of results stores (each shard records its seconds); a model or device the
  stores never ran is an *estimate*: another model's rate scaled by parameter count
  (:func:`shape`), on a GPU the throughput measured on one H200 (:data:`GPU_THROUGHPUT`);
* the ``xcomps-study study`` command (:func:`study_command`; :data:`main` is the console script,
  the command line of :mod:`xcomps_utils.runs.cli` with it added): ``--dry-run`` prints the plan
  (:func:`plan_text`); otherwise ``make book MODELS=...`` in the checkout executes the chapters
  with their ``models`` set, which computes the runs into the store, and renders the study's own
  book (:func:`book_folder`).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

import click
import pandas as pd

from .. import declare
from ..errors import InputError
from ..runs import execute, planner
from ..runs.cli import Declared, DEVICE, main, STORE_HELP
from ..runs.store import Store
from . import chapters, params

__all__ = ["Request", "REQUESTS", "requests", "chapter_values", "plan", "rates", "Shape", "shape",
           "SHAPES", "PAPERS", "GPU_THROUGHPUT", "expected_seconds", "summary", "per_chapter", "weights_gb",
           "plan_text", "name",
           "book_folder", "checkout", "study_command", "main"]

#: The sizes a study runs at (the declared sizes of :mod:`xcomps_utils.pages.params`).
SIZES = ("smoke", "publish")
#: The chapters' exercises that score a task of their own (the same literals the exercises use).
EXERCISE_BLIMP = "blimp:determiner_noun_agreement_1"
EXERCISE_RUBLIMP = "subj_predicate_agreement_number_attractor"  # else the first one left out


@dataclass(frozen=True)
class Request:
    """One run call a chapter makes: ``run(model, pairs, methods, **settings)`` with its runner's
    settings (:func:`xcomps_utils.pages.chapters.run_settings`) under ``settings``.

    Attributes:
        what: what the page computes with it, in words.
        model: the model's name.
        pairs: the pairs (``[n, pair columns]``).
        methods: the methods of the call.
        settings: what the call sets besides the runner's (``bos_policy``, ``probe_by``, ...).
    """

    what: str
    model: str
    pairs: pd.DataFrame = field(repr=False)
    methods: tuple
    settings: dict = field(default_factory=dict)


# --- each chapter's run calls ----------------------------------------------------------------------

def _direct_scoring(p: dict) -> list[Request]:
    from ..pairs import tasks

    pairs = tasks.sample(p["tasks"], p["n_pairs"], seed=p["seed"])
    first, others = p["models"][0], p["models"][1:]
    blimp = [t for t in p["tasks"] if t.startswith("blimp")]
    out = [Request("Direct, every task", first, pairs, ("direct",))]
    out += [Request("Direct, the BLiMP pairs", m, pairs[pairs.task.isin(blimp)], ("direct",))
            for m in (others if blimp else [])]
    extra = tasks.sample([EXERCISE_BLIMP], p["n_pairs"], seed=p["seed"])
    return out + [Request("exercise: Direct on another BLiMP phenomenon", first, extra,
                          ("direct",))]


def _first_token(p: dict) -> list[Request]:
    from ..pairs import tasks

    conv = tasks.sample([p["convention_task"]], p["convention_pairs"], seed=p["seed"])
    return [Request(f"Direct, first-token convention {b}", m, conv, ("direct",),
                    {"bos_policy": b}) for m in p["models"] for b in declare.BOS_POLICIES]


def _token_perplexity_method(p: dict) -> list[Request]:
    from ..pairs import tasks

    pairs = tasks.load(p["task"]).iloc[[p["pair_index"]]]
    first = p["models"][0]
    return [Request("token-level perplexity, one pair, the page's wording", first, pairs,
                    ("token_ppl",), {"wordings": [p["wording"]]}),
            Request("exercise: the same pair in every wording", first, pairs, ("token_ppl",))]


def _token_perplexity_results(p: dict) -> list[Request]:
    from ..pairs import tasks

    pairs = tasks.sample(p["tasks"], p["items_per_task"], seed=p["seed"], selection=True)
    new = tasks.sample([EXERCISE_BLIMP], p["items_per_task"], seed=p["seed"], selection=True)
    first = p["models"][0]
    return [Request("token-level perplexity", first, pairs, ("token_ppl",)),
            Request("exercise: another BLiMP phenomenon", first, new, ("token_ppl",))]


def _xcomps_pairs(p: dict) -> pd.DataFrame:
    from ..pairs import xcomps

    return xcomps.load_languages(p["languages"], source=p["source"],
                                 items_per_language=p["items_per_language"], seed=p["seed"])


def _xcomps_results(p: dict) -> list[Request]:
    from .exercises import leaking_pairs

    pairs, methods = _xcomps_pairs(p), tuple(p["methods"])
    first, others = p["models"][0], p["models"][1:]
    out = [Request("the page's methods", first, pairs, methods)]
    out += [Request("Direct, beside the first model", m, pairs, ("direct",))
            for m in (others if "direct" in methods else [])]
    if p.get("controls"):
        out += [Request("the untrained control of each model", f"random:{m}", pairs,
                        methods if m == first else ("direct",))
                for m in [first] + (others if "direct" in methods else [])]
    if "neuro" in methods:
        out.append(Request("exercise: Neuro under leaking folds", first,
                           leaking_pairs(pairs, p["languages"][0]), ("neuro",)))
    return out


def _xcomps_token_level(p: dict) -> list[Request]:
    from ..analysis.decompose import mismatched_pairs

    pairs = _xcomps_pairs(p)
    out = [Request("Direct (the split, the concept-prior share)", m, pairs, ("direct",))
           for m in p["models"]]
    control = mismatched_pairs(pairs, seed=p["seed"])
    return out[:1] + [Request("Direct, the control (another item's continuation)",
                              p["models"][0], control, ("direct",))] + out[1:]


def _xcomps_token_level_agreement(p: dict) -> list[Request]:
    pairs = _xcomps_pairs(p)
    return [Request("Direct (agreement across languages)", m, pairs, ("direct",))
            for m in p["models"]]


def _bmlama_languages(p: dict) -> list[Request]:
    from ..analysis import bmlama_scoring
    from ..pairs import bmlama

    first = p["models"][0]
    controls = [f"random:{m}" for m in p["models"]] if p.get("controls") else []
    sampled = {b: bmlama_scoring.sample_facts(b, p[f"languages{n}"] or bmlama.languages(b),
                                              p[f"facts{n}"], p["seed"])
               for b, n in (("bmlama17", "17"), ("bmlama53", "53"))}
    methods = bmlama_scoring.method_pairs(sampled["bmlama17"][0], p["methods_facts"], p["seed"])

    def direct(models, what=""):
        return [r for b, (pairs, control) in sampled.items() for m in models
                for r in (Request(f"{what}Direct, {b}", m, pairs, ("direct",)),
                          Request(f"{what}Direct, {b} control frames", m, control, ("direct",)))]

    def meta_neuro(model, what=""):
        return [Request(f"{what}Meta and Neuro, bmlama17", model, methods, ("meta", "neuro"),
                        {"probe_by": [["lang"]]})]
    out = direct(p["models"]) + meta_neuro(first)
    return out + (direct(controls, "the untrained control, ") +
                  meta_neuro(controls[0], "the untrained control, ") if controls else [])


def _grammar_across_languages(p: dict) -> list[Request]:
    from ..analysis import grammar_study
    from ..pairs import grammar, xcomps

    names = grammar_study.chapter_tasks(p["clams_languages"], p["constructions"], p["turblimp"],
                                        p["sling"], p["blimp"], p["rublimp"], p["multiblimp"])
    pairs = grammar_study.sample_pairs(names, p["items_per_task"], p["seed"])
    first = p["models"][0]
    out = [Request("Direct", m, pairs, ("direct",)) for m in p["models"]]
    he = grammar.join_article_pairs(pairs[pairs.lang == "he"])
    if len(he):
        out.append(Request("Direct, Hebrew with the article joined", first, he, ("direct",)))
    npairs = grammar_study.neuro_pairs(pairs, p["neuro_languages"],
                                       p["neuro_pairs_per_language"])
    out.append(Request("Neuro", first, npairs, ("neuro",), {
        "probe_by": [["lang"]], "n_splits": p["neuro_splits"],
        "inner_splits": min(p["neuro_splits"] - 1, 3)}))
    xpairs = xcomps.load_languages(p["xcomps_languages"], items_per_language=p["xcomps_items"],
                                   seed=p["seed"])
    out += [Request("Direct, the XCOMPS sample", m, xpairs, ("direct",)) for m in p["models"]]
    added = next(x for x in [EXERCISE_RUBLIMP, *grammar.rublimp_phenomena()]
                 if x not in p["rublimp"])
    new = grammar_study.sample_pairs([f"rublimp:{added}"], p["items_per_task"], p["seed"])
    return out + [Request("exercise: Direct on another RuBLiMP phenomenon", first, new,
                          ("direct",))]


def _none(p: dict) -> list[Request]:
    return []


#: Each chapter's run calls, by chapter (in the order ``make book`` executes them: the longest
#: first, the models and findings pages last). The dataset, models and findings pages run none;
#: the reproducibility page's command-line exercise runs into the shipped store or a temporary
#: one, never the study's.
REQUESTS: dict[str, Callable[[dict], list[Request]]] = {
    "xcomps_results": _xcomps_results, "bmlama_languages": _bmlama_languages,
    "grammar_across_languages": _grammar_across_languages, "direct_scoring": _direct_scoring,
    "first_token": _first_token, "reproducibility": _none,
    "token_perplexity_method": _token_perplexity_method,
    "token_perplexity_results": _token_perplexity_results, "xcomps_dataset": _none,
    "xcomps_token_level": _xcomps_token_level,
    "xcomps_token_level_agreement": _xcomps_token_level_agreement, "models": _none,
    "findings": _none,
}


def chapter_values(chapter: str, size: str, models: list[str] | None = None,
                   device: str | None = None, dtype: str | None = None,
                   store: str | None = None) -> dict:
    """The parameters ``chapter`` runs with in ``make book MODELS=...`` at ``size``: its
    declared defaults and what make passes papermill
    (:func:`xcomps_utils.pages.params.papermill_parameters`, ``models`` set where it declares
    them), checked as the chapter checks them on entry.

    Raises:
        ParameterError: a value the chapter refuses (one line naming it).
    """
    values = {**params.sizes(chapter), **params.papermill_parameters(
        chapter, size, store, models=models, device=device, dtype=dtype)}
    params.check(values, chapter)
    return values


def requests(chapter: str, values: dict) -> list[Request]:
    """The run calls ``chapter`` makes with these parameters (:data:`REQUESTS`), in the order
    it makes them.

    Raises:
        KeyError: no such chapter (with the nearest).
    """
    params.declaration(chapter)
    with warnings.catch_warnings():  # a sample smaller than asked: the chapter says so itself
        warnings.simplefilter("ignore", UserWarning)
        return REQUESTS[chapter](values)


# --- the rates ---------------------------------------------------------------------------------------

def rates(stores) -> pd.DataFrame:
    """The compute the complete runs of ``stores`` took, per model, method, device kind and
    dataset: each shard's recorded seconds (its done marker) shared over its pairs' datasets, and
    a run's finishing step (Neuro's probes: CPU work) apart. A run two stores hold is counted
    once. Reads ``run.json``, the done markers and each run's pairs' ``dataset`` column.

    Returns:
        one row per ``model``, ``method``, ``device``, ``dataset``: ``pairs``, ``seconds`` (the
        shards), ``finish_seconds``, ``runs``, ``per_pair`` (seconds a pair, both) and ``store``
        (the first store that holds such a run).
    """
    rows, seen = [], set()
    for root in stores:
        st = Store(root)
        for rid in st.ids():
            run = st.run(rid)
            try:
                rec = run.record
                data = pd.read_parquet(run.folder / "pairs.parquet", columns=["dataset"])["dataset"]
            except Exception:  # noqa: BLE001 - a damaged run measures nothing
                continue
            if rid in seen or rec.get("status") != "complete":
                continue
            seen.add(rid)
            key, size = rec["key"], rec["shard_size"]
            base = {"model": key.get("model"), "method": key.get("method"),
                    "device": key.get("device"), "store": str(root)}
            share = data.value_counts(normalize=True)
            for name in run.done():
                try:
                    sec = json.loads((run.folder / "done" / name).read_text()).get("seconds")
                except (OSError, ValueError, AttributeError):
                    sec = None
                if sec is None:
                    continue
                if name.startswith("shard-"):
                    i = int(name.removeprefix("shard-"))
                    counts = data.iloc[i * size:(i + 1) * size].value_counts()
                    rows += [{**base, "dataset": d, "pairs": int(n), "seconds": sec * n /
                              counts.sum(), "finish_seconds": 0.0, "run": rid}
                             for d, n in counts.items()]
                else:  # the run's finishing step, over all its pairs
                    rows += [{**base, "dataset": d, "pairs": 0, "seconds": 0.0,
                              "finish_seconds": sec * f, "run": rid} for d, f in share.items()]
    cols = ["model", "method", "device", "dataset", "pairs", "seconds", "finish_seconds", "runs",
            "per_pair", "store"]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(rows)
    out = df.groupby(["model", "method", "device", "dataset"], sort=True).agg(
        pairs=("pairs", "sum"), seconds=("seconds", "sum"),
        finish_seconds=("finish_seconds", "sum"), runs=("run", "nunique"),
        store=("store", "first")).reset_index()
    out = out[out["pairs"] > 0]
    out["per_pair"] = (out["seconds"] + out["finish_seconds"]) / out["pairs"]
    return out[cols].reset_index(drop=True)


@dataclass(frozen=True)
class Shape:
    """What the compute of a decoder scales with: its parameters, layers and hidden size."""

    parameters: int
    layers: int
    hidden: int

    @classmethod
    def of_config(cls, config: dict) -> "Shape":
        """From a ``config.json`` (its ``text_config`` for a multimodal model): embeddings (twice
        when untied), attention with grouped key/value heads, a gated MLP; norms and biases left
        out (under 0.1% of a transformer's parameters).

        Raises:
            KeyError: the config lacks ``hidden_size``, ``num_hidden_layers``,
                ``num_attention_heads`` or ``vocab_size``.
        """
        c = config.get("text_config") or config
        h, n_layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
        kv = c.get("num_key_value_heads") or heads
        d = c.get("head_dim") or h // heads
        attention = h * d * (heads + 2 * kv) + heads * d * h
        mlp = 3 * h * c.get("intermediate_size", 4 * h)
        tied = c.get("tie_word_embeddings", config.get("tie_word_embeddings", True))
        embeddings = c["vocab_size"] * h * (1 if tied else 2)
        return cls(n_layers * (attention + mlp) + embeddings, n_layers, h)


def _config(hidden, layers, intermediate, heads, kv, vocab, tied, head_dim=None) -> dict:
    return {"hidden_size": hidden, "num_hidden_layers": layers, "intermediate_size": intermediate,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
            "tie_word_embeddings": tied, "head_dim": head_dim}


#: The shapes of models the study plans for without their files, from their ``config.json``
#: (the embedded models' converted folders; the hub's for the papers' models: Llama-3.1-8B-Instruct
#: for XCOMPS, Llama-3.2-3B for token-level perplexity, and Gemma-3-4B, Mistral-7B, Qwen2.5-7B).
SHAPES = {name: Shape.of_config(c) for name, c in {
    "smollm2-135m-instruct": _config(576, 30, 1536, 9, 3, 49152, True, 64),
    "gemma-3-270m": _config(640, 18, 2048, 4, 1, 262144, True, 256),
    "meta-llama/Llama-3.1-8B-Instruct": _config(4096, 32, 14336, 32, 8, 128256, False),
    "meta-llama/Llama-3.2-3B": _config(3072, 28, 8192, 24, 8, 128256, True),
    "google/gemma-3-4b-it": _config(2560, 34, 10240, 8, 4, 262208, True, 256),
    "mistralai/Mistral-7B-Instruct-v0.3": _config(4096, 32, 14336, 32, 8, 32768, False),
    "Qwen/Qwen2.5-7B-Instruct": _config(3584, 28, 18944, 28, 4, 152064, False),
}.items()}


#: The papers' models: XCOMPS's (Llama-3.1-8B-Instruct, Gemma-3-4B, Mistral-7B, Qwen2.5-7B), then
#: the token-level perplexity paper's (Llama-3.2-3B); the first runs every method of every page.
PAPERS = ("meta-llama/Llama-3.1-8B-Instruct", "google/gemma-3-4b-it",
          "mistralai/Mistral-7B-Instruct-v0.3", "Qwen/Qwen2.5-7B-Instruct",
          "meta-llama/Llama-3.2-3B")


def _base(model: str) -> str:
    """The model whose weights an untrained control ``random:<base>[@seed=N]`` has the shape of."""
    if model.startswith("random:"):
        return re.sub(r"@seed=\d+$", "", model.removeprefix("random:"))
    return model


def shape(model: str) -> Shape | None:
    """A model's :class:`Shape`, without loading it: from its folder's ``config.json``, the
    Hugging Face cache's copy of a hub id's, else :data:`SHAPES`; ``None`` when none of them
    knows it (a hub model not downloaded and not declared)."""
    base = _base(model)
    folder = Path(base).expanduser()
    found = folder / "config.json" if folder.is_dir() else None
    if found is None and base.count("/") == 1 and base not in SHAPES:
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(base, "config.json")
            found = Path(cached) if isinstance(cached, str) else None
        except Exception:  # noqa: BLE001 - not in the cache
            found = None
    if found is not None and found.is_file():
        try:
            return Shape.of_config(json.loads(found.read_text(encoding="utf-8")))
        except (KeyError, TypeError, ValueError):
            return None
    return SHAPES.get(base)


#: Scoring throughput measured on one H200 with Llama-3.1-8B's shapes in bfloat16 (random
#: weights, a 16k-token budget; ``benchmarks/gpu_check.py``, issue 11, the *Sweeps* page):
#: sentences of 8-24 tokens and prompts of 40-96 tokens a second. A GPU estimate scales them by
#: parameter count (the forward pass is compute-bound there: 41% and 47% of the H200's peak).
GPU_THROUGHPUT = {"sentences_per_s": 1581.0, "prompts_per_s": 429.0,
                  "model": "meta-llama/Llama-3.1-8B-Instruct", "device": "one H200, bfloat16"}


def _gpu_units(method: str, pairs: pd.DataFrame, p: dict) -> tuple[float, str]:
    """What one run's forward passes are, in the units :data:`GPU_THROUGHPUT` counts: distinct
    sentences (Direct, Neuro), or prompts (Meta: two option orders a pair; token-level
    perplexity: two prompts, two label orders and each kept wording a pair)."""
    if method in ("direct", "neuro"):
        cols = [c for c in ("good", "bad") if c in pairs]
        texts = pd.unique(pairs[cols].to_numpy().ravel()) if cols else range(2 * len(pairs))
        return float(len(texts)), "sentences_per_s"
    if method == "token_ppl":
        from ..methods import perplexity

        per_task = {}
        for task in pairs["task"].unique():
            try:
                per_task[task] = len(perplexity.wordings_of(
                    perplexity.wording_family(task), p.get("wordings", "all")))
            except Exception:  # noqa: BLE001 - the run itself would say why
                per_task[task] = 4
        return float(4 * pairs["task"].map(per_task).sum()), "prompts_per_s"
    return 2.0 * len(pairs), "prompts_per_s"


def expected_seconds(model: str, method: str, device: str, pairs: pd.DataFrame, p: dict,
                     measured: pd.DataFrame) -> tuple[float, str]:
    """The compute seconds a run of ``model`` would take, and where the number comes from.

    * ``measured``: this model's rate for this method and each dataset of ``pairs`` on this
      device kind (:func:`rates`); ``measured (pooled)`` where a dataset has none but the method
      has;
    * ``estimate``: another model's measured rate on the same device kind (the nearest in
      parameters), its forward passes scaled by the parameter count and a finishing step (Neuro's
      probes) by layers x hidden size (:func:`shape`); on a GPU never measured,
      :data:`GPU_THROUGHPUT` scaled by the parameter count, with Neuro's probes from a CPU rate;
    * ``unknown`` (NaN): no rate, or no shape to scale one by.

    Args:
        device: the device kind the run computes on (``cpu``, ``cuda``, ``mps``).
        pairs: the run's pairs (``dataset``; ``good``/``bad``, ``task`` for GPU units).
        p: the run's parameters (``wordings``).
        measured: :func:`rates`.
    """
    n = pairs["dataset"].value_counts()
    mine = measured[(measured["model"] == model) & (measured["method"] == method)
                    & (measured["device"] == device)].set_index("dataset")
    if len(mine):
        if set(n.index) <= set(mine.index):
            return float((n * mine["per_pair"].reindex(n.index)).sum()), "measured"
        pooled = (mine["seconds"].sum() + mine["finish_seconds"].sum()) / mine["pairs"].sum()
        return float(n.sum() * pooled), "measured (pooled over its other datasets)"
    target = shape(model)
    if target is None:
        return float("nan"), "unknown (no shape to scale a rate by)"
    same = measured[(measured["method"] == method) & (measured["device"] == device)]
    if len(same):
        sizes = {m: shape(m) for m in same["model"].unique()}
        known = [m for m, s in sizes.items() if s is not None]
        if known:
            ref = min(known, key=lambda m: abs(math.log(sizes[m].parameters / target.parameters)))
            r, s = same[same["model"] == ref].set_index("dataset"), sizes[ref]
            fwd = target.parameters / s.parameters
            fin = (target.layers + 1) * target.hidden / ((s.layers + 1) * s.hidden)
            per = (r["seconds"] * fwd + r["finish_seconds"] * fin) / r["pairs"]
            pooled = (r["seconds"].sum() * fwd + r["finish_seconds"].sum() * fin) / r["pairs"].sum()
            secs = float(sum(k * per.get(d, pooled) for d, k in n.items()))
            return secs, f"estimate ({ref}'s rate x {fwd:.3g} in parameters)"
    if device == "cuda":
        units, kind = _gpu_units(method, pairs, p)
        ref = SHAPES[GPU_THROUGHPUT["model"]]
        secs = units / GPU_THROUGHPUT[kind] * target.parameters / ref.parameters
        probes = ""
        if method == "neuro":  # the probes are CPU work whatever the device
            cpu_rows = measured[(measured["method"] == "neuro") & (measured["device"] == "cpu")]
            if len(cpu_rows):
                sizes = {m: shape(m) for m in cpu_rows["model"].unique()}
                known = [m for m, s in sizes.items() if s is not None]
                if known:
                    s = sizes[known[0]]
                    r = cpu_rows[cpu_rows["model"] == known[0]]
                    fin = (target.layers + 1) * target.hidden / ((s.layers + 1) * s.hidden)
                    secs += float(r["finish_seconds"].sum() / r["pairs"].sum() * fin * n.sum())
                    probes = f"; probes: {known[0]}'s CPU rate x {fin:.3g}"
        return secs, (f"estimate ({GPU_THROUGHPUT['device']} at {GPU_THROUGHPUT['model']}'s "
                      f"throughput x {target.parameters / ref.parameters:.3g}{probes})")
    return float("nan"), "unknown (no rate measured for this method on this device)"


# --- the plan ----------------------------------------------------------------------------------------

_SPEC_SETTINGS = {"progress", "truncate"}  # settings of methods.run that plan nothing


def _device_kind(device: str) -> str:
    if device == "auto":
        from ..lm.models import resolve_device_dtype

        return resolve_device_dtype("auto", "auto")[0].type
    return device.split(":")[0]


def plan(models: list[str] | None, size: str, store: str, device: str | None = None,
         dtype: str | None = None, chapters_: list[str] | None = None,
         measured: pd.DataFrame | None = None, specs: list | None = None) -> pd.DataFrame:
    """Every run the chapters need for ``models`` at ``size``, without loading a model.

    Args:
        models: the models of every chapter that declares ``models`` (``None``: each chapter's
            declared models at that size, what ``make book`` and ``make smoke`` run).
        size: ``"smoke"`` or ``"publish"``.
        store: the results store the runs go to (read, never written).
        device, dtype: as the chapters take them (``None``: theirs, ``"auto"``).
        chapters_: the chapters (default: every one, in :data:`REQUESTS`' order).
        measured: :func:`rates` (default: those of ``store`` and, in a checkout, the shipped
            ``store/``).
        specs: a list that receives the run spec of each row with something left to compute
            (:class:`~xcomps_utils.runs.planner.RunSpec`, the pairs with it), for an executor.

    Returns:
        one row per chapter, run call and method, in the order the chapters make them:
        ``chapter``, ``model``, ``method``, ``what``, ``pairs``, ``run`` (its id; None where
        only loading the model tells it: a hub model not in the local cache), ``status``
        (``stored``; ``computed by <chapter>``, the same run planned by a chapter before;
        ``partial k/n`` shards; ``new``), ``todo`` (pairs left to compute), ``seconds`` (their
        expected compute, 0 when nothing is left) and ``source`` (:func:`expected_seconds`).

    Raises:
        ParameterError: a parameter a chapter refuses (one line naming it); KeyError: an
            unknown chapter.
    """
    declare.out_of("size", size, SIZES)
    names = list(REQUESTS) if chapters_ is None else list(chapters_)
    st = Store(store)
    if measured is None:
        shipped = checkout()
        measured = rates([store] + ([shipped / "store"] if shipped is not None else []))
    where = _device_kind(device or "auto")  # what "auto" is where the study runs
    idents, seen, rows = {}, {}, []
    for chapter in names:
        if REQUESTS[chapter] is _none:  # no run (the models page reads what the others wrote)
            continue
        values = chapter_values(chapter, size, models, device, dtype, store)
        base = {k: v for k, v in chapters.run_settings(values, chapter).items()
                if k not in _SPEC_SETTINGS}
        for req in requests(chapter, values):
            settings = {**base, **req.settings, "store": store}
            for spec in execute.specs(req.model, req.pairs, req.methods, **settings):
                k = (spec.model, spec.device, spec.dtype)
                if k not in idents:
                    idents[k] = planner.identity(spec, where)
                ident = idents[k]
                rid = spec.run_id(ident) if ident is not None else None
                same = rid or json.dumps([*k, spec.key_rest], sort_keys=True)  # id unknown yet
                status, todo = "new", len(spec.used)
                if same in seen:
                    status, todo = f"computed by {seen[same]}", 0
                elif rid is not None and rid in st.ids():
                    run = st.run(rid)
                    done = sum(d.startswith("shard-") for d in run.done())
                    n = run.record["n_shards"]
                    status = "stored" if run.complete else f"partial {done}/{n}"
                    left = spec.used.iloc[done * run.record["shard_size"]:]
                    todo = 0 if run.complete else len(left)
                seen.setdefault(same, chapter)
                if todo and specs is not None:
                    specs.append(spec)
                kind = ident["device"] if ident else (
                    where if spec.device == "auto" else _device_kind(spec.device))
                secs, source = expected_seconds(spec.model, spec.method, kind,
                                                spec.used, spec.p, measured)
                secs = 0.0 if todo == 0 else secs * todo / max(len(spec.used), 1)
                rows.append({"chapter": chapter, "model": spec.model, "method": spec.method,
                             "what": req.what, "pairs": len(spec.used), "run": rid,
                             "status": status, "todo": todo, "seconds": secs,
                             "source": source})
    out = pd.DataFrame(rows, columns=["chapter", "model", "method", "what", "pairs", "run",
                                      "status", "todo", "seconds", "source"])
    out.attrs["rates"] = measured
    return out


def summary(planned: pd.DataFrame) -> pd.DataFrame:
    """:func:`plan` per chapter, model and method: the pairs of its runs, how many runs it
    computes (anything left) and reads (stored, or computed by a chapter before), the expected
    minutes, and the rate's source (the
    least certain of its runs': unknown, estimate, measured)."""
    def source(s):
        for word in ("unknown", "estimate", "measured"):
            if any(x.startswith(word) for x in s):
                return word
        return ""

    g = planned.assign(new=planned["todo"] > 0).groupby(["chapter", "model", "method"],
                                                       sort=False)
    out = g.agg(pairs=("pairs", "sum"), new=("new", "sum"), runs=("run", "size"),
                minutes=("seconds", lambda s: s.sum(min_count=1) / 60),
                rate=("source", source)).reset_index()
    out["runs (compute/read)"] = [f"{n}/{r - n}" for n, r in zip(out["new"], out["runs"])]
    out.loc[out["new"] == 0, "rate"] = ""
    return out[["chapter", "model", "method", "pairs", "runs (compute/read)", "minutes", "rate"]]


def _minutes(x: float) -> str:
    return "<0.1" if 0 < x < 0.05 else f"{x:.1f}"


def per_chapter(planned: pd.DataFrame) -> pd.DataFrame:
    """:func:`plan` per chapter: the runs it computes and the expected minutes of compute (one
    chapter at a time; loading the models not counted), and the least certain rate it rests on
    (:func:`summary`'s ``rate``). Indexed by chapter, in the plan's order."""
    table = summary(planned)
    g = table.groupby("chapter", sort=False)
    out = pd.DataFrame({
        "runs to compute": g["runs (compute/read)"].agg(
            lambda s: sum(int(x.split("/")[0]) for x in s)),
        "minutes": g["minutes"].sum(min_count=1).round(2),
        "rate": g["rate"].agg(lambda s: next((w for w in ("unknown", "estimate", "measured")
                                              if w in set(s)), ""))})
    return out


def weights_gb(model: str, dtype: str) -> float | None:
    """A model's weights in ``dtype``, in GB (10^9 bytes), from its :func:`shape` (``None``:
    no shape known)."""
    s = shape(model)
    width = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}.get(dtype, 4)
    return None if s is None else s.parameters * width / 1e9


def plan_text(planned: pd.DataFrame, models: list[str], size: str, store: str,
              device: str = "auto", dtype: str = "auto") -> str:
    """The plan as ``--dry-run`` prints it: a line on the study, the table per chapter, model
    and method (:func:`summary`), the totals, every run (id, whether the store has it), and
    where the rates come from; on a GPU, each model's weights in memory and the dtype's
    tolerance (:data:`xcomps_utils.lm.precision.BF16_PAIR_TOLERANCE`)."""
    from ..lm import precision

    kind = _device_kind(device)
    run_dtype = dtype if dtype != "auto" else ("bfloat16" if kind == "cuda" else "float32")
    table = summary(planned)
    minutes = table["minutes"].sum(min_count=1)
    left = planned[planned["todo"] > 0]
    unknown = left["seconds"].isna().sum()
    lines = [f"study of {', '.join(models)} at {size} size on {kind} ({run_dtype}), results "
             f"store {store}: {len(planned)} runs, {len(left)} to compute",
             "", table.to_string(index=False, na_rep="?", float_format=_minutes), "",
             "per chapter:", per_chapter(planned).to_string(na_rep="?", float_format=_minutes),
             "",
             f"expected compute: {0 if pd.isna(minutes) else minutes:.1f} min"
             + (f" (+ {unknown} run(s) of unknown cost)" if unknown else "")
             + f" on {kind}, one chapter after the other (loading the models not counted; "
               "make book executes two chapters at once)", "", "runs:"]
    runs = planned.drop_duplicates("run") if planned["run"].notna().all() else planned
    for r in runs.itertuples():
        lines.append(f"  {r.chapter}: {r.run or '(id known once the model is downloaded)'} "
                     f"{r.status}, {r.pairs} pairs ({r.what})")
    measured = planned.attrs.get("rates")
    used = left[left["source"].str.startswith("measured")][["model", "method"]].drop_duplicates()
    if measured is not None and len(used):
        lines += ["", "measured rates (pairs a second, from the shards' done markers):"]
        m = measured.merge(used, on=["model", "method"])
        for (model, method, dev), g in m.groupby(["model", "method", "device"], sort=False):
            rate = g["pairs"].sum() / (g["seconds"].sum() + g["finish_seconds"].sum())
            lines.append(f"  {model} {method} on {dev}: {rate:.3g} over {g['pairs'].sum()} pairs "
                         f"({', '.join(g['dataset'])}; {', '.join(sorted(set(g['store'])))})")
    estimates = sorted(x for x in set(left["source"]) if not x.startswith("measured"))
    if estimates:
        lines += ["", "estimates:"] + [f"  {x}" for x in estimates]
    if kind == "cuda":
        for m in models:
            gb = weights_gb(m, run_dtype)
            lines.append(f"memory: {m}: " + ("unknown (no shape)" if gb is None else
                         f"{gb:.1f} GB of weights in {run_dtype}") + ", then the token budget "
                         "('auto': a quarter of the memory left)")
    if run_dtype in ("bfloat16", "float16"):
        lines.append(f"dtype {run_dtype}: a pair's difference within "
                     f"{precision.BF16_PAIR_TOLERANCE} nat is a near tie "
                     "(xcomps_utils.lm.precision.BF16_PAIR_TOLERANCE, measured on the embedded "
                     "models; re-measure a new model with benchmarks/bf16_tolerance.py)")
    return "\n".join(lines)


# --- the study: its name, its checkout, its command --------------------------------------------------

def name(models: list[str], size: str) -> str:
    """The study's folder name under ``build/study/``: the models (a folder by its last part, a
    hub id with ``--`` for ``/``, ``random:`` as ``random-``), ``+`` between them, then the size;
    a name over 80 characters keeps the first model and a hash of all."""
    import hashlib

    def slug(m: str) -> str:
        base = _base(m)
        path = Path(base).expanduser()
        part = path.name if path.is_dir() or base.startswith((".", "/", "~")) else base
        part = part.replace("/", "--")
        if m.startswith("random:"):
            seed = re.search(r"@seed=(\d+)$", m)
            part = "random-" + part + (f"-seed{seed.group(1)}" if seed else "")
        return re.sub(r"[^A-Za-z0-9._+-]", "_", part) or "model"

    out = "+".join(slug(m) for m in models) + f"-{size}"
    if len(out) > 80:
        digest = hashlib.sha256("\0".join(models).encode()).hexdigest()[:8]
        out = f"{slug(models[0])[:40]}+{len(models) - 1}-more-{digest}-{size}"
    return out


def checkout(start: str | os.PathLike | None = None) -> Path | None:
    """The repository checkout the study runs in (it needs ``notebooks/`` and the
    ``Makefile``): the one this package is installed from (an editable install), else ``start``
    (default: the working directory) or a folder above it; ``None`` when there is none."""
    here = Path(__file__).resolve().parents[2]
    places = [here, *([Path(start or os.getcwd()).resolve()] + list(
        Path(start or os.getcwd()).resolve().parents))]
    for d in places:
        if (d / "Makefile").is_file() and (d / "notebooks").is_dir():
            return d
    return None


def book_folder(root: Path, models: list[str], size: str) -> Path:
    """Where ``make book MODELS=...`` renders the study's book: ``build/study/<name>/_build/html``
    of the checkout (:func:`name`)."""
    return root / "build" / "study" / name(models, size) / "_build" / "html"


def _absolute(model: str) -> str:
    """A model given as a folder, made absolute (the chapters run in the checkout, not where the
    command was typed); names and hub ids as given."""
    prefix = "random:" if model.startswith("random:") else ""
    base = model.removeprefix(prefix)
    seed = re.search(r"@seed=\d+$", base)
    folder = base[:seed.start()] if seed else base
    path = Path(folder).expanduser()
    if folder.startswith((".", "/", "~")) or path.is_dir():
        folder = str(path.resolve())
    return prefix + folder + (seed.group(0) if seed else "")


@click.command("study")
@click.option("--model", "models", multiple=True, required=True,
              type=Declared(declare.Model, "NAME|FOLDER|random:NAME"),
              help="a model of the study (repeat for several): an embedded name, a local folder, "
                   "a Hugging Face id or random:<model>; the first is each page's first model")
@click.option("--device", type=DEVICE, default="auto", show_default=True,
              help="where the models run (cuda is bfloat16 unless --dtype)")
@click.option("--dtype", type=Declared(declare.Dtype, "DTYPE", declare.DTYPES), default="auto",
              show_default=True, help="precision: auto is bfloat16 on CUDA, float32 on CPU")
@click.option("--store", default="results", show_default=True, help=STORE_HELP)
@click.option("--size", type=Declared(Literal[SIZES], "SIZE", SIZES), default="publish",
              show_default=True, help="the chapters' declared sizes: smoke (minutes on a CPU) or "
                                      "publish (the sizes that decide)")
@click.option("--executor", type=Declared(Literal["local", "ray"], "EXECUTOR", ("local", "ray")),
              default="local", show_default=True,
              help="ray: compute the planned runs on Ray first (one model replica per GPU), then "
                   "execute the chapters, which read them; local: the chapters compute them")
@click.option("--address", default=None,
              help="the Ray cluster to join (auto, ray://head:10001; default: a local Ray)")
@click.option("--chapter", "only", multiple=True, metavar="CHAPTER",
              help="only this chapter (repeat for several) and the models page, not rendered: "
                   "a part of the study (default: every chapter, and the book rendered)")
@click.option("--dry-run", is_flag=True,
              help="print the runs, whether the store has them and the expected compute; "
                   "load no model, compute nothing")
def study_command(models, device, dtype, store, size, executor, address, only, dry_run):
    """The whole study for your models: every run every chapter needs, computed into the store
    (what it holds is read; a killed study goes on from its shards), then the book rendered into
    build/study/<name>/_build/html with the models page showing every model of the store.

    \b
    Examples:
      xcomps-study study --model ./my-model --model smollm2-135m-instruct --size smoke --dry-run
      xcomps-study study --model meta-llama/Llama-3.1-8B-Instruct --device cuda --store results
      xcomps-study study --model meta-llama/Llama-3.1-8B-Instruct --device cuda \
          --executor ray --address auto --store /shared/results
    """
    models = list(dict.fromkeys(_absolute(m) for m in models))
    only = list(dict.fromkeys(only)) or None
    declare.out_of("chapter", only, [c for c in REQUESTS if c not in ("models", "findings")])
    root = checkout()
    if root is None:
        raise InputError(f"xcomps-study study runs in a checkout of the repository (it executes "
                         f"notebooks/ through the Makefile): none holds {Path(__file__).parent} "
                         f"or {os.getcwd()}; clone the repository and run it there")
    store = str(Path(store).expanduser().resolve())
    click.echo(f"checkout {root}", err=True)
    given = (None if device == "auto" else device, None if dtype == "auto" else dtype)
    if dry_run:
        click.echo(plan_text(plan(models, size, store, *given, chapters_=only), models, size,
                             store, device, dtype))
        return
    from ..lm.models import check_model

    for m in models:  # before any chapter: each model loadable (a hub id cached or reachable)
        check_model(m)
        planner.check_model_folder(m)
    Store(store)
    if executor == "ray":
        _on_ray(models, size, store, given, address, only)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", "--no-print-directory", "-C", str(root), "book", f"MODELS={' '.join(models)}",
           f"STORE={store}", f"SIZE={size}", f"STUDY={name(models, size)}",
           *([f"DEVICE={device}"] if device != "auto" else []),
           *([f"DTYPE={dtype}"] if dtype != "auto" else []),
           *([f"ONLY={' '.join(only)}"] if only else [])]
    rc = subprocess.run(cmd, env=env).returncode
    if rc:
        raise click.exceptions.Exit(rc)
    if only:
        click.echo(f"the study's chapters: {book_folder(root, models, size).parents[1] / 'book'}"
                   f"/executed (a part of the study: not rendered)")
    else:
        click.echo(f"the study's book: {book_folder(root, models, size) / 'index.html'}")


def _on_ray(models, size, store, given, address, only=None) -> None:
    """The study's runs computed on Ray (:func:`xcomps_utils.runs.ray_executor.execute`, the
    sweep's executor, with a sweep's default ``ray`` settings: one replica per GPU)."""
    from ..methods.config import Ray
    from ..runs import ray_executor

    try:
        import ray
    except ImportError:
        raise InputError("the 'executor' parameter must be 'local' when Ray is not installed "
                         "(pip install '.[ray]' from the checkout); got 'ray'") from None
    todo: list = []
    plan(models, size, store, *given, chapters_=only, specs=todo)
    click.echo(f"{len(todo)} run(s) to compute on Ray", err=True)
    if todo:
        ray_executor.execute(ray, todo, Ray().model_dump(), address)


main.add_command(study_command)


if __name__ == "__main__":
    if sys.argv[1:2] == ["name"]:  # the Makefile's default STUDY: name SIZE MODEL...
        print(name([_absolute(m) for m in sys.argv[3:]], sys.argv[2]))
    else:
        main()
