"""Grammar across languages: CLAMS, TurBLiMP and SLING minimal pairs, and where their difference
sits.

Three licensed benchmarks of grammatical minimal pairs outside English, read from the files of a
pinned upstream commit (manifests ``xcomps_utils/resources/{clams,turblimp,sling}.json``, every
file's SHA-256 checked before a row is read, as for BLiMP; :func:`xcomps_utils.data.dataset_file`):

=======================  ===============================================================  ======
task                     pairs                                                            lang
=======================  ===============================================================  ======
``clams:<lang>:<c>``     CLAMS (Mueller et al., 2020): subject-verb agreement in 7             en de
                         constructions ``c`` (:data:`CLAMS_CONSTRUCTIONS`), the same in     fr he
                         5 languages; the pair differs in the verb                          ru
``turblimp:<p>``         TurBLiMP (Başar et al., 2025): 16 phenomena × 1,000 pairs          tr
``sling:<paradigm>``     SLING (Song et al., 2022): 54 paradigms in 9 phenomena             zh
=======================  ===============================================================  ======

Each loader returns the pair schema of :mod:`xcomps_utils.data` plus ``lang`` (ISO 639-1),
``item`` (``<task>:<pair_id>``: a pair is its own item, and item ids never repeat across tasks)
and ``task``. ``subset`` is the CLAMS construction, the TurBLiMP phenomenon, or the SLING
phenomenon (the paradigm is the task). Malformed files raise :class:`~xcomps_utils.data.DataError`
naming the file, the row (1-based line, or CSV data row) and the field.

**Pivotal spans** (``good_pivots``/``bad_pivots``, character offsets, end exclusive):

* CLAMS: the whitespace words that differ between the two sentences, a span per run of adjacent
  differing words (the verb; the copula and its adjective in French ``sont jeunes``/``est jeune``).
* TurBLiMP: the dataset's ``good_cue``/``bad_cue`` where the cue is a word of its sentence
  (case-insensitive, whole word, the occurrence nearest the words that differ); where it is not
  (the subject-agreement cues ``Onlar``/``O`` name a pronoun the sentence lacks; the determiners'
  bad cue is ``∅``) the differing words, side by side. ``extra.pivot_source`` says which
  (``cue``, ``difference`` or ``cue+difference``).
* A pair that differs by an insertion (``bir`` in TurBLiMP determiners, 不 in SLING ``any``) has
  pivots on the longer side only, as in :func:`xcomps_utils.data.pivotal_spans`.
* SLING: the differing characters (Han characters are words of their own; Chinese has no spaces),
  by :func:`xcomps_utils.data.pivotal_spans`.

**Hebrew.** CLAMS writes the definite article ה as a word of its own (``ה מלצר רוקד``), which no
Hebrew text does. The pairs are scored **as published** (the benchmark's own texts, comparable with
its paper); :func:`join_hebrew_article` writes them as Hebrew is written (``המלצר רוקד``), and the
chapter measures how much that changes Direct accuracy.

**Where the difference sits** (:func:`decompose`): a sentence-level pair is two texts that differ
in one region, so :func:`xcomps_utils.decompose.split_pair` splits its ``Δ = log p(good) - log
p(bad)`` exactly into the shared prefix, the **pivot** region (from the first to the last
differing character, widened to whole words and to a token boundary both sentences share, and to
the pivotal span when given), the shared continuation after it and a final period; the parts sum
to ``Δ``. The pivot's share of ``Δ`` is ``delta_pivot / delta``, and the plain and normalized
proportions of Prins et al. (2026) are computed over the aligned token groups
(:func:`xcomps_utils.perplexity.plain_proportion`, :func:`~xcomps_utils.perplexity.normalized_proportion`).
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from . import data
from .data import DataError

__all__ = ["CLAMS_LANGUAGES", "CLAMS_CONSTRUCTIONS", "DATASET_LANGUAGES", "turblimp_phenomena",
           "sling_paradigms", "task_names", "load_clams", "load_turblimp", "load_sling",
           "join_hebrew_article", "join_article_pairs", "word_difference_spans", "decompose",
           "pivot_summary", "accuracy_cells", "construction_agreement", "grammar_vs_concepts",
           "chapter_tasks", "sample_pairs", "pair_table", "hebrew_join_effect", "language_accuracy",
           "across_language_claims"]

CLAMS_LANGUAGES = ("en", "de", "fr", "he", "ru")
CLAMS_CONSTRUCTIONS = ("simple_agrmt", "vp_coord", "long_vp_coord", "prep_anim", "subj_rel",
                       "obj_rel_across_anim", "obj_rel_within_anim")
#: the language of each dataset's pairs (CLAMS: per file)
DATASET_LANGUAGES = {"turblimp": "tr", "sling": "zh", "blimp": "en"}

GRAMMAR_COLUMNS = data.PAIR_COLUMNS + ["lang", "item"]


def turblimp_phenomena() -> list[str]:
    """The 16 TurBLiMP phenomena (file stems without ``augmented_``)."""
    return [f.removeprefix("augmented_").removesuffix(".csv")
            for f in data.manifest("turblimp")["files"]]


@lru_cache(maxsize=None)
def _sling_files() -> dict[str, str]:
    return {Path(f).stem: f for f in data.manifest("sling")["files"]}


def sling_paradigms() -> list[str]:
    """The 54 SLING paradigms (file stems; unique across phenomenon folders)."""
    return list(_sling_files())


def task_names(dataset: str | None = None) -> list[str]:
    """Every grammar task name (``clams:<lang>:<construction>``, ``turblimp:<p>``,
    ``sling:<paradigm>``), or those of one dataset."""
    out = {"clams": [f"clams:{lang}:{c}" for lang in CLAMS_LANGUAGES for c in CLAMS_CONSTRUCTIONS],
           "turblimp": [f"turblimp:{p}" for p in turblimp_phenomena()],
           "sling": [f"sling:{p}" for p in sling_paradigms()]}
    if dataset is None:
        return [n for names in out.values() for n in names]
    return out[dataset]


# --------------------------------------------------------------------------- pivots

def word_difference_spans(a: str, b: str) -> tuple[list[list[int]], list[list[int]]]:
    """Spans of the whitespace words that differ between two sentences of the same length in
    words, one span per run of adjacent differing words (position by position: fast for the
    hundreds of thousands of CLAMS pairs); other pairs go to
    :func:`xcomps_utils.data.pivotal_spans` (an alignment)."""
    wa = [(m.start(), m.end()) for m in re.finditer(r"\S+", a)]
    wb = [(m.start(), m.end()) for m in re.finditer(r"\S+", b)]
    if len(wa) != len(wb):
        return data.pivotal_spans(a, b)
    sa, sb, prev = [], [], False
    for (x0, x1), (y0, y1) in zip(wa, wb):
        diff = a[x0:x1] != b[y0:y1]
        if diff and prev:
            sa[-1][1], sb[-1][1] = x1, y1
        elif diff:
            sa.append([x0, x1])
            sb.append([y0, y1])
        prev = diff
    return sa, sb


def _cue_span(text: str, cue: str, near: list[list[int]]) -> list[int] | None:
    cue = cue.strip()
    if not cue:
        return None
    hits = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(cue)}(?!\w)", text, re.IGNORECASE)]
    if not hits:
        return None
    mid = np.mean([(s + e) / 2 for s, e in near]) if near else 0.0
    return list(min(hits, key=lambda h: abs((h[0] + h[1]) / 2 - mid)))


# --------------------------------------------------------------------------- loaders

def _frame(rows: list[dict], path: Path, task: str) -> pd.DataFrame:
    if not rows:
        raise DataError(f"{path}: no rows")
    df = pd.DataFrame(rows)
    df["identical"] = df["good"] == df["bad"]
    df["duplicate"] = df.duplicated(subset=["good", "bad"], keep="first")
    n_ident, n_dup = int(df["identical"].sum()), int(df["duplicate"].sum())
    if n_ident or n_dup:
        warnings.warn(f"{path}: {n_ident} identical and {n_dup} duplicate pairs flagged "
                      f"(columns 'identical', 'duplicate'; sample_pairs leaves them out)",
                      data.DataQualityWarning, stacklevel=3)
    df["item"] = task + ":" + df["pair_id"].astype(str)
    return df[GRAMMAR_COLUMNS]


def load_clams(lang: str, construction: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """One CLAMS file (Mueller et al., 2020) as minimal pairs: ``<lang>/<construction>.txt``.

    Each line is ``True``/``False``, a tab and a sentence; a pair is a ``True`` line followed by
    its ``False`` line. ``pair_id`` is the pair's index in the file, ``source_row`` the line of
    its good sentence.

    Raises:
        DataError: unknown language or construction, a line without a tab or with another label,
            a ``True`` line without its ``False`` line (file, row and field named), an empty
            sentence. ChecksumError: the file differs from the manifest.
    """
    if lang not in CLAMS_LANGUAGES or construction not in CLAMS_CONSTRUCTIONS:
        raise DataError(f"unknown CLAMS set {lang}:{construction}; languages "
                        f"{list(CLAMS_LANGUAGES)}, constructions {list(CLAMS_CONSTRUCTIONS)}")
    path = data.dataset_file("clams", f"{lang}/{construction}.txt", data_dir, verify)
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parsed = []
    for no, line in enumerate(lines, start=1):
        label, tab, sentence = line.partition("\t")
        want = "True" if len(parsed) % 2 == 0 else "False"
        if not tab:
            raise DataError(f"{path}, row {no}: no tab between the fields 'label' and 'sentence'")
        if label != want:
            raise DataError(f"{path}, row {no}, field 'label': expected {want!r} (pairs are a "
                            f"True line then its False line), got {label!r}")
        if not sentence.strip():
            raise DataError(f"{path}, row {no}, field 'sentence': empty")
        parsed.append((no, sentence.strip()))
    if len(parsed) % 2:
        raise DataError(f"{path}, row {parsed[-1][0]}, field 'label': a True line without its "
                        f"False line (the file ends)")
    rows = []
    task = f"clams:{lang}:{construction}"
    for k in range(0, len(parsed), 2):
        (no, good), (_, bad) = parsed[k], parsed[k + 1]
        gp, bp = word_difference_spans(good, bad)
        rows.append({"pair_id": str(k // 2), "dataset": "clams", "subset": construction,
                     "good": good, "bad": bad, "good_pivots": gp, "bad_pivots": bp,
                     "source_row": no, "lang": lang, "extra": "{}"})
    return _frame(rows, path, task)


_TURBLIMP_FIELDS = ["good_sentence", "bad_sentence", "good_cue", "bad_cue", "critical_region",
                    "phenomenon"]


def load_turblimp(phenomenon: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """One TurBLiMP phenomenon (Başar et al., 2025), 1,000 pairs, ``;``-separated with a header.

    Pivots are the cues where found in their sentence, else the differing words (module
    docstring); ``extra`` holds ``good_cue``, ``bad_cue``, ``critical_region``, ``subtype`` and
    ``pivot_source``.

    Raises:
        DataError: unknown phenomenon, a header without the fields, a row with another number of
            cells, an empty sentence (file, row and field named). ChecksumError: as BLiMP.
    """
    if phenomenon not in turblimp_phenomena():
        raise DataError(f"unknown TurBLiMP phenomenon {phenomenon!r}; known: "
                        f"{turblimp_phenomena()}")
    path = data.dataset_file("turblimp", f"augmented_{phenomenon}.csv", data_dir, verify)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter=";")
        header = next(reader, None) or []
        missing = [c for c in _TURBLIMP_FIELDS if c not in header]
        if missing:
            raise DataError(f"{path}, row 0 (header): lacks field(s) {missing}; has {header}")
        rows = []
        for no, cells in enumerate(reader, start=1):
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise DataError(f"{path}, row {no}: {len(cells)} cells, the header has "
                                f"{len(header)} ({';'.join(header)})")
            rec = dict(zip(header, cells))
            good = data.require(rec, "good_sentence", path, no)
            bad = data.require(rec, "bad_sentence", path, no)
            gp, bp = data.pivotal_spans(good, bad)
            gc, bc = _cue_span(good, rec["good_cue"], gp), _cue_span(bad, rec["bad_cue"], bp)
            # per side: the cue where found, else the differing words (none on the shorter side
            # of an insertion: determiners' bad cue is "∅")
            source = {(True, True): "cue", (False, False): "difference"}.get(
                (gc is not None, bc is not None), "cue+difference")
            gp, bp = ([gc] if gc else gp), ([bc] if bc else bp)
            extra = {k: rec.get(k, "") for k in ("good_cue", "bad_cue", "critical_region",
                                                 "subtype")}
            rows.append({"pair_id": str(no - 1), "dataset": "turblimp", "subset": phenomenon,
                         "good": good, "bad": bad, "good_pivots": gp, "bad_pivots": bp,
                         "source_row": no, "lang": "tr",
                         "extra": json.dumps({**extra, "pivot_source": source},
                                             ensure_ascii=False)})
    return _frame(rows, path, f"turblimp:{phenomenon}")


def load_sling(paradigm: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """One SLING paradigm (Song et al., 2022) as minimal pairs (JSON lines,
    ``sentence_good``/``sentence_bad``). ``subset`` is the phenomenon (the paradigm's top
    folder); ``extra`` holds the file's ``pair_ID``, ``paradigm`` and ``field``.

    Raises:
        DataError: unknown paradigm, malformed JSON, a missing or empty sentence (file, row and
            field named). ChecksumError: as BLiMP.
    """
    files = _sling_files()
    if paradigm not in files:
        raise DataError(f"unknown SLING paradigm {paradigm!r}; known: {sorted(files)}")
    name = files[paradigm]
    path = data.dataset_file("sling", name, data_dir, verify)
    phenomenon = name.split("/")[0]
    rows = []
    for no, rec in data.read_jsonl(path):
        if not isinstance(rec, dict):
            raise DataError(f"{path}, row {no}: expected a JSON object, got {type(rec).__name__}")
        good = data.require(rec, "sentence_good", path, no)
        bad = data.require(rec, "sentence_bad", path, no)
        gp, bp = data.pivotal_spans(good, bad)
        rows.append({"pair_id": str(no - 1), "dataset": "sling", "subset": phenomenon,
                     "good": good, "bad": bad, "good_pivots": gp, "bad_pivots": bp,
                     "source_row": no, "lang": "zh",
                     "extra": json.dumps({"pair_ID": rec.get("pair_ID"), "paradigm": paradigm,
                                          "field": rec.get("field")}, ensure_ascii=False)})
    return _frame(rows, path, f"sling:{paradigm}")


# --------------------------------------------------------------------------- Hebrew article

_HE_ARTICLE = re.compile(r"(?<!\S)\u05d4 (?=[\u05d0-\u05ea])")


def join_hebrew_article(text: str) -> str:
    """Write CLAMS' split definite article as Hebrew is written: ``"ה מלצר רוקד"`` ->
    ``"המלצר רוקד"`` (a standalone ה followed by a space and a Hebrew letter is joined to the next
    word; nothing else changes).

    >>> join_hebrew_article("ה מלצר ליד ה שחקנים רוקד")
    'המלצר ליד השחקנים רוקד'
    """
    return _HE_ARTICLE.sub("\u05d4", text)


def join_article_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Hebrew pairs with the article joined (:func:`join_hebrew_article`), pivots recomputed;
    other languages' rows unchanged. ``extra`` gains ``"article": "joined"``."""
    out = pairs.copy()
    he = out["lang"] == "he"
    out.loc[he, "good"] = out.loc[he, "good"].map(join_hebrew_article)
    out.loc[he, "bad"] = out.loc[he, "bad"].map(join_hebrew_article)
    spans = [word_difference_spans(g, b) for g, b in zip(out.loc[he, "good"], out.loc[he, "bad"])]
    out.loc[he, "good_pivots"] = pd.Series([s[0] for s in spans], index=out.index[he],
                                           dtype=object)
    out.loc[he, "bad_pivots"] = pd.Series([s[1] for s in spans], index=out.index[he],
                                          dtype=object)
    out.loc[he, "extra"] = out.loc[he, "extra"].map(
        lambda e: json.dumps({**json.loads(e or "{}"), "article": "joined"}, ensure_ascii=False))
    return out


# --------------------------------------------------------------------------- where Δ sits

_PARTS = {"prefix": "prefix", "concept": "pivot", "property": "after", "period": "period"}


def decompose(pairs: pd.DataFrame, tokens: pd.DataFrame, bos_policy: str = "bos"
              ) -> pd.DataFrame:
    """Where each pair's ``Δ = log p(good) - log p(bad)`` sits (module docstring).

    Args:
        pairs: grammar (or BLiMP) pairs with ``task``, ``pair_id``, ``good``, ``bad`` and
            ``good_pivots``/``bad_pivots``; ``lang`` and ``subset`` are kept.
        tokens: the ``direct_tokens`` detail of a Direct run over them
            (``Results.detail("direct_tokens")``).

    Returns:
        one row per pair (identical pairs left out): ``task``, ``lang``, ``subset``,
        ``pair_id``, ``delta``; ``delta_prefix``, ``delta_pivot``, ``delta_after``,
        ``delta_period`` (nats; they sum to ``delta``); ``pivot_share`` (``delta_pivot /
        delta``, NaN when ``delta`` is 0); ``plain_pivot_s``, ``norm_pivot_s`` (proportions on
        surprisal differences of aligned groups), ``plain_pivot_ppl``, ``norm_pivot_ppl`` (on
        perplexity differences); ``pivot_good``, ``pivot_bad`` (the region's texts);
        ``n_groups``.

    Raises:
        KeyError: a sentence without scored tokens (tokens of another run?).
    """
    from .decompose import split_pair
    from .scoring import TokenScores

    by_text = {t: g for t, g in tokens.drop_duplicates(["text", "position"]).groupby("text")}
    cache: dict = {}

    def scores(text):
        if text not in by_text:
            raise KeyError(f"no scored tokens for {text!r}: are the tokens from a Direct run "
                           f"over these pairs?")
        if text not in cache:
            cache[text] = TokenScores.from_table(by_text[text], text, bos_policy)
        return cache[text]

    rows = []
    for r in pairs.itertuples(index=False):
        if r.good == r.bad:
            continue
        gp = [r.good[s:e] for s, e in r.good_pivots]
        bp = [r.bad[s:e] for s, e in r.bad_pivots]
        s, _, _ = split_pair(scores(r.good), scores(r.bad), gp[0] if len(gp) == 1 else None,
                             bp[0] if len(bp) == 1 else None)
        row = {"task": r.task, "lang": getattr(r, "lang", ""), "subset": r.subset,
               "pair_id": str(r.pair_id), "delta": s["delta"]}
        for old, new in _PARTS.items():
            row[f"delta_{new}"] = s[f"delta_{old}"]
        row["pivot_share"] = s["delta_concept"] / s["delta"] if s["delta"] != 0 else np.nan
        for unit in ("s", "ppl"):
            row[f"plain_pivot_{unit}"] = s[f"plain_concept_{unit}"]
            row[f"norm_pivot_{unit}"] = s[f"norm_concept_{unit}"]
        row.update(pivot_good=s["concept_good"], pivot_bad=s["concept_bad"],
                   n_groups=s["n_groups"])
        rows.append(row)
    return pd.DataFrame(rows)


def pivot_summary(decomposed: pd.DataFrame, by=("lang",), unit: str = "s") -> pd.DataFrame:
    """Per group: pairs, mean ``delta`` and ``delta_pivot`` (nats), the pivot's share of the
    summed ``delta`` (``Σ delta_pivot / Σ delta``), and the mean plain and normalized proportions
    (``unit``: ``s`` nats, ``ppl`` perplexity)."""
    g = decomposed.groupby(list(by), sort=False)
    out = pd.DataFrame({
        "pairs": g.size(), "delta": g["delta"].mean(), "delta_pivot": g["delta_pivot"].mean(),
        "share_of_sum": g["delta_pivot"].sum() / g["delta"].sum(),
        "plain": g[f"plain_pivot_{unit}"].mean(), "normalized": g[f"norm_pivot_{unit}"].mean()})
    return out.reset_index()


# --------------------------------------------------------------------------- across languages

def accuracy_cells(scored: pd.DataFrame, by=("lang", "subset"), item: str = "item",
                   n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Direct accuracy per cell with an item-bootstrap interval, ties and near ties apart
    (:func:`xcomps_utils.stats.accuracy_table` over the ``decision`` column of
    :func:`xcomps_utils.precision.decisions`).

    Args:
        scored: one row per pair with ``direct_correct`` (and ``direct_tie``,
            ``direct_near_tie``), the ``by`` columns and ``item``.
    """
    from .precision import decisions
    from .stats import accuracy_table

    d = scored.assign(decision=decisions(scored, "direct"), correct=scored["direct_correct"])
    return accuracy_table(d, list(by), item=item, n_boot=n_boot, seed=seed)


def _concordance(values: np.ndarray, labels: np.ndarray, langs: np.ndarray) -> float:
    """Mean Spearman correlation, over pairs of languages, of accuracy by construction (numpy:
    it runs once per permutation)."""
    cons, lang_codes = np.unique(labels.astype(str)), pd.factorize(langs)[0]
    table = np.full((len(cons), lang_codes.max() + 1), np.nan)
    table[np.searchsorted(cons, labels.astype(str)), lang_codes] = values
    ranks = pd.DataFrame(table).rank().to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (ranks - ranks.mean(0)) / ranks.std(0)
        r = (z.T @ z) / len(cons)
    iu = np.triu_indices(r.shape[0], 1)
    return float(np.nanmean(r[iu])) if np.isfinite(r[iu]).any() else float("nan")


def construction_agreement(cells: pd.DataFrame, scope: str = "", n_perm: int = 9999,
                           seed: int = 0):
    """Is a construction that is hard in one CLAMS language hard in the others?

    Effect: the mean Spearman correlation over pairs of languages of Direct accuracy across the
    constructions (cells ``lang`` × ``subset``). Null: construction labels exchangeable within
    each language (each language's accuracies shuffled over its constructions independently).
    Unit: the cell (language × construction); with 7 constructions a random permutation test
    can decide. Tested with :func:`xcomps_utils.claims.language_claim` (labels permuted within
    the language strata).

    Args:
        cells: :func:`accuracy_cells` by ``("lang", "subset")`` (CLAMS tasks only).

    Returns:
        a :class:`~xcomps_utils.claims.ClaimTest`, or None with fewer than 3 constructions or 2
        languages in every construction, or accuracies constant within every language.
    """
    from dataclasses import replace

    from .claims import language_claim

    c = cells.dropna(subset=["accuracy"])
    c = c[c.groupby("subset")["lang"].transform("nunique") == c["lang"].nunique()]
    idx = c["lang"] + ":" + c["subset"]
    values = pd.Series(c["accuracy"].to_numpy(), index=idx)
    labels = pd.Series(c["subset"].to_numpy(), index=idx)
    strata = pd.Series(c["lang"].to_numpy(), index=idx, name="language")
    langs = strata.to_numpy()
    if c["subset"].nunique() < 3 or c["lang"].nunique() < 2 or not np.isfinite(
            _concordance(values.to_numpy(), labels.to_numpy(), langs)):
        return None  # no correlation to test (too few cells, or constant accuracies)
    t = language_claim(
        "construction_agreement", "a construction hard in one language is hard in the others",
        "mean Spearman r over language pairs of Direct accuracy across constructions", values,
        labels, lambda v, lab: _concordance(v, lab, langs), +1, strata=strata, scope=scope,
        null_hypothesis="within each language, accuracy is unrelated to which construction it "
        "is (construction labels exchangeable within languages)", n_obs=int(c["n"].sum()),
        n_perm=n_perm, seed=seed,
        caveat="each cell's accuracy rests on few pairs: noise in the cells pulls r toward 0")
    return replace(t, unit="language × construction cell")


def grammar_vs_concepts(grammar: pd.Series, concepts: pd.Series, scope: str = "",
                        seed: int = 0):
    """Do the languages where the model knows grammar (Direct accuracy on grammar pairs) tend to
    be those where it knows concepts (Direct accuracy on XCOMPS)? Pearson r across languages,
    languages permuted (:func:`xcomps_utils.claims.language_claim`; unit: the language).

    Args:
        grammar, concepts: one accuracy per language (index: language codes); languages in both
            are used.

    Returns:
        a :class:`~xcomps_utils.claims.ClaimTest`, or None with fewer than 3 shared languages.
    """
    from .claims import language_claim

    langs = grammar.index.intersection(concepts.index)
    if len(langs) < 3:
        return None
    g, c = grammar.loc[langs].astype(float), concepts.loc[langs].astype(float)
    return language_claim(
        "grammar_tracks_concepts", "languages where the model knows grammar are those where it "
        "knows concepts", "Pearson r across languages of grammar and XCOMPS Direct accuracy",
        g, c, lambda v, lab: float(np.corrcoef(v, lab.astype(float))[0, 1]), +1, scope=scope,
        null_hypothesis="a language's XCOMPS accuracy is unrelated to its grammar accuracy "
        "(languages exchangeable)", n_obs=len(langs), seed=seed,
        caveat="grammar and concepts come from different benchmarks, built differently in each "
        "language; the XCOMPS numbers are the project's own sample")


# --------------------------------------------------------------------------- the chapter's tables

def chapter_tasks(clams_languages, constructions, turblimp, sling, blimp) -> list[str]:
    """The task names of the chapter's parameters (CLAMS languages × constructions, TurBLiMP
    phenomena, SLING paradigms, BLiMP phenomena for the English reference)."""
    return ([f"clams:{lang}:{c}" for lang in clams_languages for c in constructions]
            + [f"turblimp:{p}" for p in turblimp] + [f"sling:{p}" for p in sling]
            + [f"blimp:{p}" for p in blimp])


def sample_pairs(names: list[str], n: int | None, seed: int = 0) -> pd.DataFrame:
    """``n`` seeded pairs of each task (:func:`xcomps_utils.tasks.sample`), with ``lang`` (BLiMP:
    ``en``) and ``item`` set for every row."""
    from . import tasks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.SmallSampleWarning)
        pairs = tasks.sample(names, n, seed=seed)
    blimp = pairs["dataset"] == "blimp"
    pairs.loc[blimp, "lang"] = "en"
    pairs.loc[blimp, "item"] = pairs.loc[blimp, "task"] + ":" + pairs.loc[blimp, "pair_id"]
    return pairs


def pair_table(measures: pd.DataFrame, pairs: pd.DataFrame, method: str = "direct"
               ) -> pd.DataFrame:
    """The pairs with one ``<method>_<measure>`` column per measure of a run (long store rows
    keyed by ``task`` and ``pair_id``)."""
    m = measures[measures["method"] == method]
    wide = m.pivot_table(index=["task", "pair_id"], columns="measure", values="value",
                         aggfunc="first")
    wide.columns = [f"{method}_{c}" for c in wide.columns]
    out = pairs.assign(pair_id=pairs["pair_id"].astype(str)).merge(
        wide.reset_index(), on=["task", "pair_id"], how="inner")
    return out.assign(family=out["dataset"].map(
        {"clams": "CLAMS", "turblimp": "TurBLiMP", "sling": "SLING", "blimp": "BLiMP"}))


def hebrew_join_effect(joined: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Direct accuracy of the Hebrew pairs as published and with the article joined (decided
    pairs of both; :func:`xcomps_utils.precision.decisions`), the change, and the pairs whose
    decision flips."""
    from .precision import decisions

    a = published[published["lang"] == "he"].set_index(["task", "pair_id"])
    b = joined.set_index(["task", "pair_id"]).reindex(a.index)
    da, db = decisions(a, "direct"), decisions(b, "direct")
    ok = da.isin(["right", "wrong"]) & db.isin(["right", "wrong"])
    acc_a, acc_b = (da[ok] == "right").mean(), (db[ok] == "right").mean()
    return pd.DataFrame({"pairs": [int(ok.sum())], "accuracy as published": [acc_a],
                         "accuracy, article joined": [acc_b], "change": [acc_b - acc_a],
                         "decisions flipped": [int((da[ok] != db[ok]).sum())]})


def language_accuracy(scored: pd.DataFrame) -> pd.Series:
    """Mean over a language's tasks of Direct accuracy on decided pairs (each task weighs the
    same)."""
    from .precision import decisions

    d = scored.assign(decision=decisions(scored, "direct"))
    d = d[d["decision"].isin(["right", "wrong"])]
    return (d.assign(ok=d["decision"] == "right").groupby(["lang", "task"])["ok"].mean()
            .groupby("lang").mean())


def across_language_claims(scored: pd.DataFrame, xcomps_scored: pd.DataFrame, model: str,
                           n_boot: int = 2000, seed: int = 0) -> list:
    """The chapter's two claims across languages for one model, Holm-corrected as one family:
    :func:`construction_agreement` on the CLAMS cells of ``scored`` and
    :func:`grammar_vs_concepts` (grammar accuracy of ``scored`` per language against the Direct
    accuracy of ``xcomps_scored``, XCOMPS pairs with ``direct_*`` columns and ``lang``). Tests
    the data cannot support (too few cells or languages) are left out."""
    from .claims import correct

    cells = accuracy_cells(scored[scored["dataset"] == "clams"], n_boot=n_boot, seed=seed)
    concepts = language_accuracy(xcomps_scored.assign(task=xcomps_scored.get("task", "xcomps")))
    tests = [construction_agreement(cells, scope=model, seed=seed),
             grammar_vs_concepts(language_accuracy(scored), concepts, scope=model, seed=seed)]
    return correct([t for t in tests if t is not None], f"across languages ({model})")
