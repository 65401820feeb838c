"""XCOMPS (He et al., 2025, arXiv 2502.19737): conceptual minimal pairs in 17 languages + English.

A record pairs a concept that has a property with one that lacks it (``"A robin can fly."`` /
``"A penguin can fly."``); the negative concept is one of four *negative-sample types*:
``taxonomic`` (same category), ``overlap`` (shares many property norms), ``co-occurrence``
(appears with the concept in text) and ``random``.

Two sources, one schema:

* ``source="sample"``: the project's own sample,
  ``xcomps_utils/resources/sample/xcomps/comps_<lang>.json`` (30 concept-property items x 4
  negative types in English and six other languages, written for this project; results on it
  are *not* comparable with the paper);
* ``source="upstream"``: the real files, ``data/comps_<lang>.json`` of github.com/LinyangHe/XCOMPS
  at the commit pinned in ``xcomps_utils/resources/xcomps.json``, read from
  ``$XCOMPS_DATA_DIR/xcomps/`` or downloaded into the user cache, and refused unless their git
  blob id equals the manifest's. English is COMPS ``comps_base.jsonl`` (Misra et al., 2023),
  whose sentences are ``prefix + " " + property_phrase + "."``.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .data import (PAIR_COLUMNS, ChecksumError, DataError, SmallSampleWarning, download,
                   manifest, pivotal_spans, read_jsonl)
from .paths import data_home, resources_dir

__all__ = ["XCOMPS_LANGUAGES", "SAMPLE_LANGUAGES", "NEGATIVE_TYPES", "REQUIRED_FIELDS",
           "languages", "git_blob_id", "xcomps_file", "load_xcomps", "load_languages",
           "meta_template", "pair_table", "method_tables", "claim_tests"]

XCOMPS_LANGUAGES = ["ar", "ca", "de", "el", "es", "fa", "fr", "he", "hu", "ja", "ko", "nl", "ru",
                    "tr", "uk", "vi", "zh"]
SAMPLE_LANGUAGES = ["en", "de", "fr", "zh", "vi", "tr", "hu"]
NEGATIVE_TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]
REQUIRED_FIELDS = ["acceptable_sent", "unacceptable_sent", "negative_sample_type",
                   "acceptable_concept", "unacceptable_concept", "property_phrase"]
_SAMPLE_DIR = Path("sample") / "xcomps"  # under resources_dir()


def languages() -> pd.DataFrame:
    """The language table ``xcomps_utils/resources/languages.csv``: ISO code, name, family,
    script, morphological type (analytic, inflected, agglutinative), resource level, who
    classified it, sources."""
    return pd.read_csv(resources_dir() / "languages.csv", keep_default_na=False)


def git_blob_id(path: str | os.PathLike) -> str:
    """Git's blob id of a file (``git hash-object``): SHA-1 of ``b"blob <size>\\0" + content``."""
    content = Path(path).read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def xcomps_file(lang: str, source: str = "sample", data_dir=None, verify: bool = True) -> Path:
    """Path of one language's file.

    Raises:
        DataError: unknown language or source, or a missing file.
        ChecksumError: an upstream file whose git blob id differs from
            ``xcomps_utils/resources/xcomps.json``.
    """
    if source == "sample":
        if lang not in SAMPLE_LANGUAGES:
            raise DataError(f"the sample has no language {lang!r}; it has {SAMPLE_LANGUAGES} "
                            f"(use source='upstream' for the 17 XCOMPS languages)")
        return resources_dir() / _SAMPLE_DIR / f"comps_{lang}.json"
    if source != "upstream":
        raise DataError(f"source must be 'sample' or 'upstream', got {source!r}")
    meta = manifest("xcomps")
    if lang == "en":
        name, url, want = "comps_base.jsonl", meta["english"]["url"], None
    elif lang in XCOMPS_LANGUAGES:
        name = f"comps_{lang}.json"
        url = meta["url_template"].format(commit=meta["commit"], file=name)
        want = meta["files"][name]
    else:
        raise DataError(f"XCOMPS has no language {lang!r}; it has {XCOMPS_LANGUAGES} and 'en'")
    root = data_dir if data_dir is not None else os.environ.get("XCOMPS_DATA_DIR")
    path = Path(root) / meta["folder"] / name if root else None
    if path is None or not path.exists():
        path = data_home() / meta["folder"] / name
        if not path.exists():
            download(url, path)
    if verify and want is not None:
        got = git_blob_id(path)
        if got != want:
            raise ChecksumError(f"{path}: git blob id {got} differs from the manifest's {want} "
                                f"(xcomps_utils/resources/xcomps.json, commit {meta['commit']}); "
                                f"refusing it")
    return path


def _records(path: Path) -> list[tuple[str, dict]]:
    if path.suffix == ".jsonl":
        out = []
        for line_no, rec in read_jsonl(path):
            for side in ("acceptable", "unacceptable"):  # COMPS stores prefix + property phrase
                if f"{side}_sent" not in rec and f"prefix_{side}" in rec and "property_phrase" in rec:
                    rec[f"{side}_sent"] = f"{rec[f'prefix_{side}']} {rec['property_phrase']}."
            out.append((str(rec.get("id", line_no - 1)), rec))
        return out
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from exc
    if isinstance(data, dict):
        return [(str(k), v) for k, v in data.items()]
    if isinstance(data, list):
        return [(str(r.get("id", i)), r) for i, r in enumerate(data)]
    raise DataError(f"{path}: expected a JSON object (id -> record) or a list of records")


def load_xcomps(lang: str, source: str = "sample", data_dir=None, verify: bool = True
                ) -> pd.DataFrame:
    """One language's minimal pairs in the project's pair schema, plus XCOMPS columns.

    ``good``/``bad`` are ``acceptable_sent``/``unacceptable_sent``; ``subset`` and
    ``negative_sample_type`` the negative type; extra columns ``lang``, ``item`` (the
    concept-property item a pair belongs to: pairs of one item share their acceptable sentence),
    ``property``, ``property_phrase``, ``acceptable_concept``, ``unacceptable_concept``,
    ``prefix_acceptable``, ``prefix_unacceptable``.

    Raises:
        DataError: a record lacks a required field (names file, record id and field), a field is
            empty, or a negative-sample type is unknown.
        ChecksumError: see :func:`xcomps_file`.
    """
    path = xcomps_file(lang, source, data_dir, verify)
    rows = []
    for rid, rec in _records(path):
        if not isinstance(rec, dict):
            raise DataError(f"{path}, record {rid!r}: expected an object, got {type(rec).__name__}")
        for field in REQUIRED_FIELDS:
            if field not in rec:
                raise DataError(f"{path}, record {rid!r}: missing field {field!r} "
                                f"(required: {REQUIRED_FIELDS})")
            if not isinstance(rec[field], str) or not rec[field].strip():
                raise DataError(f"{path}, record {rid!r}, field {field!r}: empty or not text")
        neg = rec["negative_sample_type"].strip().lower().replace("_", "-")
        if neg not in NEGATIVE_TYPES:
            raise DataError(f"{path}, record {rid!r}, field 'negative_sample_type': {neg!r} "
                            f"is not one of {NEGATIVE_TYPES}")
        good, bad = rec["acceptable_sent"].strip(), rec["unacceptable_sent"].strip()
        gp, bp = pivotal_spans(good, bad)
        prop = rec.get("property", rec["property_phrase"])
        rows.append({
            "pair_id": rid, "dataset": "xcomps" if lang != "en" or source == "sample" else "comps",
            "subset": neg, "good": good, "bad": bad, "good_pivots": gp, "bad_pivots": bp,
            "identical": good == bad, "duplicate": False, "source_row": len(rows) + 1,
            "extra": json.dumps({"similarity": rec.get("similarity")}),
            "lang": lang, "item": f"{prop}|{rec['acceptable_concept']}",
            "negative_sample_type": neg, "property": prop,
            "property_phrase": rec["property_phrase"],
            "acceptable_concept": rec["acceptable_concept"],
            "unacceptable_concept": rec["unacceptable_concept"],
            "prefix_acceptable": rec.get("prefix_acceptable", ""),
            "prefix_unacceptable": rec.get("prefix_unacceptable", ""),
        })
    if not rows:
        raise DataError(f"{path}: no records")
    df = pd.DataFrame(rows)
    df["duplicate"] = df.duplicated(subset=["good", "bad"], keep="first")
    return df[PAIR_COLUMNS + [c for c in df.columns if c not in PAIR_COLUMNS]]


def load_languages(langs: list[str], source: str = "sample", data_dir=None,
                   items_per_language: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Several languages, each from its own file, optionally ``items_per_language``
    concept-property items per language (all four negatives of a chosen item are kept; the same
    items in every language when the ids match).

    Raises:
        DataError: two languages loaded identical sentences (a file or hub split read for the
            wrong language), and everything :func:`load_xcomps` raises.
    """
    frames, seen = [], {}
    for lang in langs:
        df = load_xcomps(lang, source, data_dir)
        key = hashlib.sha1("\n".join(df["good"] + "\t" + df["bad"]).encode()).hexdigest()
        if key in seen:
            raise DataError(f"languages {seen[key]!r} and {lang!r} loaded identical rows: the "
                            f"file or split of one was read for the other")
        seen[key] = lang
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    if items_per_language is not None:
        props = sorted(set(out["property"]))
        if items_per_language > len(props):
            warnings.warn(f"asked for {items_per_language} items per language, the data has "
                          f"{len(props)}: using all of them", SmallSampleWarning, stacklevel=2)
        rng = np.random.default_rng(seed)
        keep = set(rng.choice(props, size=min(items_per_language, len(props)), replace=False))
        out = out[out["property"].isin(keep)].reset_index(drop=True)
    return out


def meta_template(lang: str, path=None) -> dict:
    """The metalinguistic (Meta) template of a language, from the one template file
    ``xcomps_utils/resources/meta_templates.json`` (validated on load, see
    :func:`xcomps_utils.meta.load_meta_templates`): ``question`` with ``{property_phrase}``,
    ``{option_1}``, ``{option_2}``; ``answer`` (the answer cue); ``space`` (whether a space
    separates the cue from the option); the option rule ``determiners``, ``lowercase``,
    ``lowercase_map`` (see :func:`xcomps_utils.meta.option_text`); ``options``, ``source``,
    ``review``.

    Raises:
        DataError: no template for the language (names the file), or an invalid template file.
    """
    from .meta import load_meta_templates, meta_templates_file

    templates = load_meta_templates(path)
    if lang not in templates:
        raise DataError(f"{path or meta_templates_file()}: no metalinguistic template for "
                        f"language {lang!r}; it has {sorted(templates)}")
    return templates[lang]


# --- tables of the XCOMPS chapter -------------------------------------------------------------

def pair_table(measures: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` with one column per Direct and Meta measure of a pair (``direct_correct``,
    ``meta_delta``, ``meta_answer_mass``, ...; booleans as 0/1), ``direct_mean_correct`` (the
    per-token-mean variant of Direct) and ``morphology`` (from :func:`languages`).

    Args:
        measures: long results of :func:`xcomps_utils.methods.run` on these pairs.
    """
    m = measures[measures["method"].isin(["direct", "meta"]) & (measures["order"] == "")]
    out = pairs.copy()
    out["pair_id"] = out["pair_id"].astype(str)
    if len(m):
        w = m.assign(column=m["method"] + "_" + m["measure"]).pivot_table(
            index=["lang", "pair_id"], columns="column", values="value", aggfunc="first")
        out = out.merge(w.reset_index(), on=["lang", "pair_id"], how="left")
    if "direct_logprob_mean_good" in out:
        out["direct_mean_correct"] = (out["direct_logprob_mean_good"]
                                      > out["direct_logprob_mean_bad"]).astype(float)
    from .precision import decisions

    for m in ("direct", "meta"):
        if f"{m}_correct" in out:
            out[f"{m}_decision"] = decisions(out, m)
    table = languages().set_index("iso")
    out["morphology"] = out["lang"].map(table["morphological_type"])
    out["resource_level"] = out["lang"].map(table["resource_level"])
    return out


def method_tables(scored: pd.DataFrame, probe_groups: pd.DataFrame, langs: list[str]) -> dict:
    """Language x negative-type tables (the paper's Figure 1): Meta and Direct accuracy over the
    decided pairs (ties and near ties left out; from :func:`pair_table`), and each cell's probe
    balanced accuracy at the layer chosen by nested cross-validation (from the second table of
    :func:`xcomps_utils.probing.probe_tables`; not the maximum over layers, which is biased)."""
    from .claims import decided_rows

    tables = {}
    for name, col in (("Meta", "meta_correct"), ("Direct", "direct_correct")):
        if col in scored:
            d = decided_rows(scored, col)
            tables[name] = d.pivot_table(index="lang", columns="negative_sample_type",
                                         values=col, aggfunc="mean").reindex(langs)[NEGATIVE_TYPES]
    if len(probe_groups) and "nested_balanced_accuracy" in probe_groups:
        cells = probe_groups[probe_groups["subset"] != "all"]
        tables["Neuro (balanced accuracy, nested)"] = cells.pivot_table(
            index="lang", columns="subset", values="nested_balanced_accuracy"
        ).reindex(langs).reindex(columns=NEGATIVE_TYPES)
    return tables


def claim_tests(scored: pd.DataFrame, probe_groups: pd.DataFrame | None = None,
                n_boot: int = 2000, seed: int = 0, scored_other: pd.DataFrame | None = None,
                other_model: str = "") -> list:
    """The XCOMPS paper's claims tested on one run (:mod:`xcomps_utils.claims`), in families:

    * **confirmatory** (the paper's primary claims, Direct, Holm over the family): the English
      advantage and subtle negatives being harder (items); the morphological and resource-level
      trends (languages, permutation; "cannot be decided" with too few languages); Direct
      tracking Neuro within negative types (languages), given the probe groups;
    * **exploratory** (Holm over the family): the same claims for Meta, and for Direct with a
      second model (``scored_other``, named ``other_model``).

    A claim the run cannot test (one language, one type) is left out.

    Returns:
        a list of :class:`xcomps_utils.claims.ClaimTest`, confirmatory first.
    """
    from dataclasses import replace

    from . import claims

    def method_tests(sc, col):
        out = []
        if col not in sc or sc[col].isna().all():
            return out
        if "en" in set(sc["lang"]) and sc["lang"].nunique() > 1:
            out.append(claims.english_advantage(sc, col, n_boot=n_boot, seed=seed))
        out.append(claims.subtle_negatives_harder(sc, col, n_boot=n_boot, seed=seed))
        for fn in (claims.morphology_trend, claims.resource_trend):
            try:
                out.append(fn(sc, col, n_boot=n_boot, seed=seed))
            except ValueError:  # one type only in this run
                pass
        return out

    primary = method_tests(scored, "direct_correct")
    if probe_groups is not None and len(probe_groups) and "direct_correct" in scored:
        cells = neuro_cells(scored, probe_groups)
        try:
            primary.append(claims.direct_tracks_neuro(cells, n_boot=n_boot, seed=seed,
                                                      probe_caveat=probe_caveat(probe_groups)))
        except ValueError:  # fewer than 3 languages with every cell (a probe group failed)
            pass
    explore = method_tests(scored, "meta_correct")
    if scored_other is not None:
        explore += [replace(t, scope=f"{t.scope}, {other_model}")
                    for t in method_tests(scored_other, "direct_correct")]
    return (claims.correct(primary, "XCOMPS, primary claims (Direct)", "confirmatory")
            + claims.correct(explore, "XCOMPS, Meta and second model", "exploratory"))


def neuro_cells(scored: pd.DataFrame, probe_groups: pd.DataFrame) -> pd.DataFrame:
    """Direct accuracy (decided pairs) and the probe's nested balanced accuracy per language x
    negative-type cell: columns ``lang``, ``subset``, ``direct``, ``neuro``."""
    from .claims import decided_rows

    d = decided_rows(scored, "direct_correct")
    direct = d.groupby(["lang", "negative_sample_type"])["direct_correct"].mean()
    cells = probe_groups[probe_groups["subset"] != "all"][
        ["lang", "subset", "nested_balanced_accuracy"]].rename(
        columns={"nested_balanced_accuracy": "neuro"})
    cells["direct"] = direct.reindex(list(zip(cells["lang"], cells["subset"]))).to_numpy()
    return cells.dropna().reset_index(drop=True)


def probe_caveat(probe_groups: pd.DataFrame) -> str:
    """What the probes' permutation nulls say, as a sentence for a claim built on the probe
    ("" when the groups carry no null)."""
    g = probe_groups[probe_groups["subset"] == "all"]
    if "p_permutation" not in g or g["p_permutation"].isna().all():
        return ""
    above = int((g["p_permutation"] <= 0.025).sum())
    return (f"the probe of all types is beyond its label-permutation null (one-sided p <= 0.025, "
            f"uncorrected) in {above} of {len(g)} languages; elsewhere it is not "
            f"distinguishable from its null at this resolution, and neither is its part of the "
            f"correlation with Direct.")


def probe_verdict(probe_groups: pd.DataFrame, langs: list[str]) -> str:
    """One Markdown paragraph on the probes over all negative types against their
    label-permutation nulls.

    The decision is pooled over languages: the languages' permutation p-values (independent:
    each language has its own sentences and states) are combined by Fisher's method
    (``scipy.stats.combine_pvalues``), one test at one-sided level 0.025. Per language, the
    smallest p that ``n`` permutations give is ``1 / (n + 1)`` (0.05 with the default 19),
    which Holm over the languages can never bring to 0.025: per-language p-values are printed
    uncorrected, as a description, and a per-language verdict needs about ``40 x languages``
    permutations. Probes at or within their null are named: nothing read off them (layer
    curves, a correlation with Direct) is signal.
    """
    from scipy.stats import combine_pvalues

    g = probe_groups[probe_groups["subset"] == "all"].set_index("lang").reindex(langs).dropna(
        subset=["nested_balanced_accuracy"])
    if not len(g) or "p_permutation" not in g or g["p_permutation"].isna().all():
        return ""
    p = g["p_permutation"].to_numpy(float)
    pooled = float(combine_pvalues(p, method="fisher").pvalue)
    n_perm = int(g["n_permutations"].max())
    verdict = ("supported" if pooled <= 0.025 else "inconclusive")
    nominal = [f"{l} (p {q:.3f})" for l, q in zip(g.index, p) if q <= 0.025]
    null = [f"{l} ({b:.2f}, p {q:.2f})" for l, b, q in
            zip(g.index, g["nested_balanced_accuracy"], p) if q > 0.025]
    text = (f"**The probe against its null.** Pooled over the {len(g)} languages (Fisher's "
            f"combination of their permutation p-values; one test, one-sided level 0.025), the "
            f"hypothesis *in at least one language the probe finds acceptability beyond "
            f"shuffled labels* is **{verdict}** (p = {pooled:.2g}). Per language the smallest p "
            f"of {n_perm} "
            f"permutations is {1 / (n_perm + 1):.3f}, which a correction over {len(g)} languages "
            f"cannot bring under 0.025: per-language p-values are descriptions. ")
    if nominal:
        text += f"Nominally beyond the null (uncorrected): {', '.join(nominal)}. "
    if null:
        text += (f"Not distinguishable from the null at this resolution: {', '.join(null)} "
                 f"(nested balanced accuracy, p). There this run finds nothing the shuffled "
                 f"labels do not: read those layer curves, and those languages' part of the "
                 f"correlation with Direct below, as noise unless more items show otherwise. "
                 f"(The nested score is compared with the null of the best layer, which is "
                 f"conservative.)")
    return text
