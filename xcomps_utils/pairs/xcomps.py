"""XCOMPS (He et al., 2025, arXiv 2502.19737): conceptual minimal pairs in 17 languages + English.

A record pairs a concept that has a property with one that lacks it (``"A robin can fly."`` /
``"A penguin can fly."``); the negative concept is one of four *negative-sample types*:
``taxonomic`` (same category), ``overlap`` (shares many property norms), ``co-occurrence``
(appears with the concept in text) and ``random``.

Two sources, one schema:

* ``source="sample"``: the project's own sample,
  ``data/sample/xcomps/comps_<lang>.json`` (30 concept-property items x 4
  negative types in English and six other languages, written for this project; results on it
  are *not* comparable with the paper);
* ``source="upstream"``: the real files, ``data/comps_<lang>.json`` of github.com/LinyangHe/XCOMPS
  at the commit pinned in ``data/xcomps.json``, read from
  ``$XCOMPS_DATA_DIR/xcomps/`` or downloaded into the user cache, and refused unless their git
  blob id equals the manifest's. English is COMPS ``comps_base.jsonl`` (Misra et al., 2023),
  whose sentences are ``prefix + " " + property_phrase + "."``.

This module is the loader; the Meta templates are :func:`xcomps_utils.methods.meta.meta_template`, the
paper's tables and claims :mod:`xcomps_utils.analysis.xcomps_paper`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .data import (PAIR_COLUMNS, ChecksumError, DataError, SmallSampleWarning, download,
                   manifest, pivotal_spans, read_jsonl)
from .. import paths
from ..paths import data_home, resources_dir

__all__ = ["XCOMPS_LANGUAGES", "SAMPLE_LANGUAGES", "NEGATIVE_TYPES", "REQUIRED_FIELDS",
           "languages", "git_blob_id", "xcomps_file", "load_xcomps", "load_languages"]

XCOMPS_LANGUAGES = ["ar", "ca", "de", "el", "es", "fa", "fr", "he", "hu", "ja", "ko", "nl", "ru",
                    "tr", "uk", "vi", "zh"]
SAMPLE_LANGUAGES = ["en", "de", "fr", "zh", "vi", "tr", "hu"]
NEGATIVE_TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]
REQUIRED_FIELDS = ["acceptable_sent", "unacceptable_sent", "negative_sample_type",
                   "acceptable_concept", "unacceptable_concept", "property_phrase"]
_SAMPLE_DIR = Path("sample") / "xcomps"  # under resources_dir()


def languages() -> pd.DataFrame:
    """The language table ``data/languages.csv``: ISO code, name, family,
    script, morphological type (analytic, inflected, agglutinative), resource level, who
    classified it, sources. A copy each call (read once per file state: the claim contract's
    simulations ask for it thousands of times)."""
    path = resources_dir() / "languages.csv"
    st = path.stat()
    return _languages_csv(str(path), st.st_mtime_ns, st.st_size).copy()


@functools.lru_cache(maxsize=4)
def _languages_csv(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False)


def git_blob_id(path: str | os.PathLike) -> str:
    """Git's blob id of a file (``git hash-object``): SHA-1 of ``b"blob <size>\\0" + content``."""
    content = Path(path).read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def xcomps_file(lang: str, source: str = "sample", data_dir=None, verify: bool = True) -> Path:
    """Path of one language's file.

    Raises:
        DataError: unknown language or source, or a missing file.
        ChecksumError: an upstream file whose git blob id differs from
            ``data/xcomps.json``.
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
    root = data_dir if data_dir is not None else paths.data_dir()
    path = Path(root) / meta["folder"] / name if root else None
    if path is None or not path.exists():
        path = data_home() / meta["folder"] / name
        if not path.exists():
            download(url, path)
    if verify and want is not None:
        got = git_blob_id(path)
        if got != want:
            raise ChecksumError(f"{path}: git blob id {got} differs from the manifest's {want} "
                                f"(data/xcomps.json, commit {meta['commit']}); "
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
