"""Typology of the study's languages, built in code from pinned sources (no hand-typed value).

:func:`language_table` gives one row per language code (ISO 639-1 as BMLAMA's file names use
them; a three-letter code such as ``ceb`` is taken as ISO 639-3). Every value comes from one of
these sources, each pinned:

==================  ==========================================================================
column              source and rule
==================  ==========================================================================
iso639_3            CLDR's language aliases (``babel`` 2.19.0, CLDR 49): the three-letter codes
                    CLDR maps to the code, kept where Glottolog has them; of several, the one
                    at Glottolog level *language* (else *dialect*, else *family*): ``ar`` ->
                    ``arb`` (Standard Arabic), ``zh`` -> ``cmn``, ``fa`` -> ``pes``, ``ms`` ->
                    ``zsm``, ``et`` -> ``ekk``, ``sq`` -> ``als``, ``lv`` -> ``lav``
glottocode, name,   Glottolog 5.1 ``cldf/languages.csv`` (``data/glottolog.json``): the
family, macroarea   languoid with that ISO 639-3 code; family = the name of its top-level
                    family (an isolate is its own family, ``family_id`` its own Glottocode)
script              CLDR likely subtags (babel): the ISO 15924 script CLDR expects for the
                    code (``ar`` -> Arab, ``ja`` -> Jpan, ``sr`` -> Cyrl); checked against the
                    Unicode scripts of the BMLAMA prompts in ``tests/pairs/test_typology.py``
wals_20A ... 26A    WALS v2020.4 (``data/wals.json``) rebuilt from ``raw/value.csv`` ->
                    ``valueset`` -> ``language``/``parameter``, label and number from
                    ``domainelement``; ``*_value`` is the value number (22A's is ordinal:
                    1 = 0-1 ... 7 = 12-13 categories per word)
grambank_bound      the share of :data:`GRAMBANK_BOUND`'s 20 inflectional categories that the
                    language marks with bound morphology (Grambank, as shipped by
                    ``urielplus`` 1.3.2); ``grambank_items`` how many of the 20 are known
resource_tier       ``urielplus`` 1.3.2 ``resource_languages.json`` (high/medium/low), by
                    Glottocode
paper_type,         the project's ``data/languages.csv`` (the paper's classification, as the
paper_resource      project recorded it), unchanged
==================  ==========================================================================

**WALS codes.** A language can have several WALS codes (German has ``ger`` and five dialect
codes). The WALS languages taken are those whose Glottocode equals the language's (for a
Glottolog dialect such as Serbian or Croatian, also its language's: Serbian-Croatian) or whose
ISO 639-3 code is one that CLDR maps to the code (Albanian ``sqi``); for each feature the values they give are pooled: one distinct value
is the value (``wals_codes`` lists the codes that gave any), several distinct values are a gap
("WALS codes disagree"), never a choice.

**Gaps.** A value no source gives is NaN, and ``missing`` says why (``column: reason``, ``;``
between columns). Nothing is imputed.

**Disagreement.** ``type_disagreement`` lists where the paper's type and the derived measures
disagree, by these rules (``""``: no rule fired; NaN: no paper type): *analytic* expects a 20A
value with "isolating" and 22A <= 2-3 categories per word; *agglutinative* expects 20A
"Exclusively concatenative" and, where there is case, 21A "Monoexponential case";
*inflected* expects, where there is case, cumulative case (21A "Case + ..."); and the paper's
order analytic < inflected < agglutinative expects a language's ``grambank_bound`` to be no
lower than the median of the type below it and no higher than the median of the type above it
(medians over the table's languages that have a paper type, so they depend on the codes
passed). NaN also where no rule could be checked (``missing`` says so). Grambank values are
looked up by Glottocode as WALS's are (a dialect also as its language). ``resource_disagreement`` says
where the paper's resource level and the urielplus tier differ.

The urielplus files are read as data (``importlib.resources``), not through its API; their
SHA-256 are :data:`URIELPLUS_FILES`.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from functools import lru_cache

import numpy as np
import pandas as pd

from ..paths import resources_dir
from .data import DataError, dataset_file, file_sha256

__all__ = ["language_table", "coverage", "GRAMBANK_BOUND", "WALS_FEATURES", "URIELPLUS_FILES"]

WALS_FEATURES = ("20A", "21A", "22A", "26A")

#: Grambank features of the bound-inflection index: one inflectional category per entry; a
#: category counts 1 if any of its features is 1 (present), 0 if all are 0, unknown otherwise.
GRAMBANK_BOUND = {
    "singular": ("GB042",), "dual": ("GB043",), "plural": ("GB044",),
    "case, core NP": ("GB070",), "case, core pronoun": ("GB071",),
    "case, oblique NP": ("GB072",), "case, oblique pronoun": ("GB073",),
    "possessor affix": ("GB430", "GB432"), "possessed-noun affix": ("GB431", "GB433"),
    "verb affix other than person": ("GB079", "GB080"),
    "present": ("GB082",), "past": ("GB083",), "future": ("GB084",),
    "perfective/imperfective": ("GB086",), "mood": ("GB312",),
    "S indexed by affix": ("GB089", "GB090"), "A indexed by affix": ("GB091", "GB092"),
    "P indexed by affix": ("GB093", "GB094"),
    "negation on the verb": ("GB107",), "morphological passive": ("GB147",),
}
#: fewer known categories than this: grambank_bound is a gap
GRAMBANK_MIN_ITEMS = 10

URIELPLUS_VERSION = "1.3.2"
URIELPLUS_FILES = {
    "grambank_data.csv": "da180cce560c7190f8e873cc4056b76644490c9a49228f02ff52b98b8b317f4a",
    "feature_mappings.json": "9f7876a5fbb9e41f36a5d97b87e3ff8e474086d39c565742ec0b0ca78cb36a68",
    "resource_languages.json": "8cd58f7707b9552c59f2de9b9ab40d7d3f12bf6fd7795993a0a8c0339949747d",
}
_TYPES = ("analytic", "inflected", "agglutinative")
_LEVELS = {"language": 0, "dialect": 1, "family": 2}


# --------------------------------------------------------------------------- sources

def _urielplus_file(name: str):
    try:
        path = importlib.resources.files("urielplus.database.urielplus_csvs") / name
    except ModuleNotFoundError as exc:
        raise DataError(f"urielplus is not installed (pip install urielplus=="
                        f"{URIELPLUS_VERSION}); xcomps_utils.pairs.typology reads its {name}") from exc
    got = file_sha256(path)
    if got != URIELPLUS_FILES[name]:
        raise DataError(f"urielplus {path}: SHA-256 {got} differs from {URIELPLUS_FILES[name]} "
                        f"(urielplus {URIELPLUS_VERSION}); another version is installed")
    return path


@lru_cache(maxsize=4)
def _glottolog(data_dir: str | None) -> pd.DataFrame:
    return pd.read_csv(dataset_file("glottolog", "cldf/languages.csv", data_dir),
                       keep_default_na=False, na_values=[""], low_memory=False)


@lru_cache(maxsize=4)
def _wals(data_dir: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(WALS languages of cldf/languages.csv, long values: wals, param, label, number)."""
    def read(name):
        return pd.read_csv(dataset_file("wals", name, data_dir), keep_default_na=False,
                           na_values=[""])
    value, valueset = read("raw/value.csv"), read("raw/valueset.csv")
    language, parameter = read("raw/language.csv"), read("raw/parameter.csv")
    element = read("raw/domainelement.csv")
    v = value[["valueset_pk", "domainelement_pk"]].merge(
        valueset[["pk", "language_pk", "parameter_pk"]], left_on="valueset_pk", right_on="pk")
    v = v.merge(language[["pk", "id"]].rename(columns={"pk": "language_pk", "id": "wals"}))
    v = v.merge(parameter[["pk", "id"]].rename(columns={"pk": "parameter_pk", "id": "param"}))
    v = v.merge(element[["pk", "name", "number"]].rename(
        columns={"pk": "domainelement_pk", "name": "label"}))
    v = v[v["param"].isin(WALS_FEATURES)][["wals", "param", "label", "number"]]
    return read("cldf/languages.csv"), v.reset_index(drop=True)


@lru_cache(maxsize=1)
def _grambank() -> pd.DataFrame:
    """Grambank values by Glottocode, columns = Grambank ids (1, 0; NaN unknown)."""
    mappings = json.loads(_urielplus_file("feature_mappings.json").read_text(encoding="utf-8"))
    column = {e["source_features"][0]["id"]: e["bundled_columns"][0] for e in mappings
              if e["database"] == "GRAMBANK" and e["relationship"] == "direct"
              and e["transformation"]["type"] == "grambank_binary_to_binary"}
    wanted = [gb for ids in GRAMBANK_BOUND.values() for gb in ids]
    lost = [gb for gb in wanted if gb not in column]
    if lost:
        raise DataError(f"urielplus feature_mappings.json maps no column to {lost}")
    table = pd.read_csv(_urielplus_file("grambank_data.csv")).set_index("language_id")
    out = table[[column[gb] for gb in wanted]].set_axis(wanted, axis=1)
    return out.where(out >= 0)  # urielplus codes unknown as -1


@lru_cache(maxsize=1)
def _tiers() -> dict[str, str]:
    tiers = json.loads(_urielplus_file("resource_languages.json").read_text(encoding="utf-8"))
    return {g: tier.removesuffix("-resource") for tier, codes in tiers.items() for g in codes}


def _paper() -> pd.DataFrame:
    return pd.read_csv(resources_dir() / "languages.csv").set_index("iso")


def _iso639_3(code: str) -> list[str]:
    """Three-letter codes CLDR (babel) maps to ``code``; ``code`` itself if it has three."""
    from babel.core import get_global
    if len(code) == 3:
        return [code]
    return sorted(k for k, v in get_global("language_aliases").items()
                  if v == code and len(k) == 3)


def _script(code: str):
    from babel.core import get_global
    likely = get_global("likely_subtags").get(code)
    parts = likely.split("_") if likely else []
    return parts[1] if len(parts) > 1 and len(parts[1]) == 4 else np.nan


# --------------------------------------------------------------------------- the table

def _grambank_bound(glottocodes: list[str]) -> tuple[float, int, str]:
    gb = _grambank()
    found = [g for g in glottocodes if g in gb.index]
    if not found:
        return np.nan, 0, f"no Grambank language {'/'.join(glottocodes)} in urielplus"
    row = gb.loc[found[0]]
    items = []
    for ids in GRAMBANK_BOUND.values():
        vals = row[list(ids)]
        items.append(1.0 if (vals == 1).any() else 0.0 if vals.notna().all() else np.nan)
    known = int(np.isfinite(items).sum())
    if known < GRAMBANK_MIN_ITEMS:
        return np.nan, known, (f"{known} of {len(GRAMBANK_BOUND)} categories known "
                               f"(< {GRAMBANK_MIN_ITEMS})")
    return float(np.nanmean(items)), known, ""


def _wals_values(glottocodes: list[str], isos: list[str], data_dir) -> tuple[dict, dict]:
    langs, values = _wals(data_dir)
    codes = langs.loc[langs["Glottocode"].isin(glottocodes) | langs["ISO639P3code"].isin(isos),
                      "ID"].tolist()
    out, why, used = {}, {}, set()
    for param in WALS_FEATURES:
        got = values[(values["param"] == param) & values["wals"].isin(codes)]
        out[f"wals_{param}"] = out[f"wals_{param}_value"] = np.nan
        if not codes:
            why[f"wals_{param}"] = "no WALS language with this Glottocode or ISO 639-3"
        elif got.empty:
            why[f"wals_{param}"] = f"WALS {param} has no value for {', '.join(codes)}"
        elif got["label"].nunique() > 1:
            why[f"wals_{param}"] = "WALS codes disagree: " + ", ".join(
                f"{w} {lab}" for w, lab in zip(got["wals"], got["label"]))
        else:
            out[f"wals_{param}"] = got["label"].iloc[0]
            out[f"wals_{param}_value"] = int(got["number"].iloc[0])
            used.update(got["wals"])
    out["wals_codes"] = " ".join(sorted(used)) if used else np.nan
    if not used:
        why["wals_codes"] = "no WALS value for these features"
    return out, why


def _row(code: str, data_dir) -> dict:
    candidates = _iso639_3(code)
    if not candidates:
        raise DataError(f"unknown language code {code!r}: CLDR (babel) maps no ISO 639-3 code "
                        f"to it; give an ISO 639-1 code as BMLAMA's file names do, or a "
                        f"three-letter ISO 639-3 code")
    row, why = {"code": code}, {}
    glotto = _glottolog(data_dir)
    hits = glotto[glotto["ISO639P3code"].isin(candidates)].copy()
    if hits.empty:
        for col in ("iso639_3", "glottocode", "name", "family", "family_id", "macroarea"):
            row[col] = np.nan
        why["glottocode"] = f"no Glottolog languoid with ISO 639-3 {'/'.join(candidates)}"
        hit = None
    else:
        hits["rank"] = hits["Level"].map(_LEVELS)
        best = hits[hits["rank"] == hits["rank"].min()]
        if len(best) > 1:
            raise DataError(f"language code {code!r}: several Glottolog languoids at level "
                            f"{best['Level'].iloc[0]}: {best['ID'].tolist()}")
        hit = best.iloc[0]
        fam_id = hit["Family_ID"] if isinstance(hit["Family_ID"], str) else hit["ID"]
        family = glotto.loc[glotto["ID"] == fam_id, "Name"]
        row.update(iso639_3=hit["ISO639P3code"], glottocode=hit["ID"], name=hit["Name"],
                   family=family.iloc[0], family_id=fam_id, macroarea=hit["Macroarea"])
        if not isinstance(hit["Macroarea"], str):
            parent = glotto.loc[glotto["ID"] == hit["Language_ID"], "Macroarea"]
            row["macroarea"] = parent.iloc[0] if len(parent) else np.nan
            if not isinstance(row["macroarea"], str):
                why["macroarea"] = "Glottolog gives no macroarea"
    row["script"] = _script(code)
    if not isinstance(row["script"], str):
        why["script"] = "CLDR has no likely script"
    if hit is None:
        for param in WALS_FEATURES:
            row[f"wals_{param}"] = row[f"wals_{param}_value"] = np.nan
        row["wals_codes"] = np.nan
        row["grambank_bound"], row["grambank_items"], row["resource_tier"] = np.nan, 0, np.nan
        why["wals_codes"] = why["grambank_bound"] = why["resource_tier"] = "no Glottocode"
    else:
        # a Glottolog dialect (sr, hr) is looked up as itself, then as its language
        lookup = [hit["ID"]] + ([hit["Language_ID"]] if hit["Level"] == "dialect" else [])
        vals, w = _wals_values(lookup, candidates, data_dir)
        row.update(vals)
        why.update(w)
        row["grambank_bound"], row["grambank_items"], reason = _grambank_bound(lookup)
        if reason:
            why["grambank_bound"] = reason
        row["resource_tier"] = _tiers().get(hit["ID"], np.nan)
        if not isinstance(row["resource_tier"], str):
            why["resource_tier"] = "Glottocode not in urielplus resource_languages.json"
    paper = _paper()
    if code in paper.index:
        row["paper_type"] = paper.at[code, "morphological_type"]
        row["paper_resource"] = paper.at[code, "resource_level"]
    else:
        row["paper_type"] = row["paper_resource"] = np.nan
        why["paper_type"] = "not a language of data/languages.csv"
    row["missing"] = "; ".join(f"{k}: {v}" for k, v in why.items())
    return row


def _type_disagreement(row, medians: dict) -> str | float:
    kind = row["paper_type"]
    if not isinstance(kind, str):
        return np.nan
    f20, f21, f22 = row["wals_20A"], row["wals_21A"], row["wals_22A_value"]
    has20, has21 = isinstance(f20, str), isinstance(f21, str) and f21 != "No case"
    out, checked = [], 0
    if kind == "analytic":
        checked += has20 + bool(np.isfinite(f22))
        if has20 and "isolating" not in f20.lower():
            out.append(f"20A {f20} (analytic expects isolating)")
        if np.isfinite(f22) and f22 > 2:
            out.append(f"22A {row['wals_22A']} (analytic expects <= 2-3)")
    if kind == "agglutinative":
        checked += has20 + has21
        if has20 and f20 != "Exclusively concatenative":
            out.append(f"20A {f20} (agglutinative expects exclusively concatenative)")
        if has21 and f21 != "Monoexponential case":
            out.append(f"21A {f21} (agglutinative expects monoexponential case)")
    checked += kind == "inflected" and has21
    if kind == "inflected" and has21 and not f21.startswith("Case +"):
        out.append(f"21A {f21} (inflected expects cumulative case)")
    g, i = row["grambank_bound"], _TYPES.index(kind)
    if np.isfinite(g):
        checked += 1
        lower = medians.get(_TYPES[i - 1]) if i > 0 else None
        upper = medians.get(_TYPES[i + 1]) if i < 2 else None
        if lower is not None and g < lower:
            out.append(f"Grambank bound {g:.2f} < {_TYPES[i - 1]} median {lower:.2f}")
        if upper is not None and g > upper:
            out.append(f"Grambank bound {g:.2f} > {_TYPES[i + 1]} median {upper:.2f}")
    return "; ".join(out) if checked else np.nan


def language_table(codes, data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per language code, every value from a pinned source (module docstring).

    Args:
        codes: language codes as BMLAMA's file names have them (ISO 639-1, or ISO 639-3 where a
            language has no two-letter code, e.g. ``ceb``); order kept, duplicates refused.
        data_dir: folder holding ``wals/`` and ``glottolog/`` (else ``$XCOMPS_DATA_DIR``, else the
            download place; see :func:`xcomps_utils.pairs.data.dataset_file`).

    Returns:
        DataFrame indexed by ``code`` with columns ``iso639_3, glottocode, name, family,
        family_id, macroarea, script, wals_codes, wals_20A, wals_20A_value, ..., wals_26A_value,
        grambank_bound`` (share in [0, 1]), ``grambank_items`` (known categories, 0-20),
        ``resource_tier, paper_type, paper_resource, type_disagreement,
        resource_disagreement, missing``. Gaps are NaN, their reasons in ``missing``.

    Raises:
        DataError: a code CLDR does not know (the message names it), a duplicate code, a
            source file that fails its checksum, or urielplus missing or of another version.
    """
    codes = [str(c) for c in codes]
    dup = sorted({c for c in codes if codes.count(c) > 1})
    if dup:
        raise DataError(f"duplicate language codes {dup}")
    key = None if data_dir is None else str(data_dir)
    table = pd.DataFrame([_row(c, key) for c in codes]).set_index("code")
    typed = table[table["paper_type"].isin(_TYPES)]
    medians = typed.groupby("paper_type")["grambank_bound"].median().dropna().to_dict()
    table["type_disagreement"] = table.apply(_type_disagreement, axis=1, medians=medians)
    unchecked = table["paper_type"].notna() & table["type_disagreement"].isna()
    table.loc[unchecked, "missing"] = table.loc[unchecked, "missing"].map(
        lambda m: "; ".join(filter(None, [m, "type_disagreement: no derived measure to check"])))
    def resource(row):
        if not (isinstance(row["paper_resource"], str) and isinstance(row["resource_tier"], str)):
            return np.nan
        if row["paper_resource"] == row["resource_tier"]:
            return ""
        return f"paper {row['paper_resource']}, urielplus {row['resource_tier']}"
    table["resource_disagreement"] = table.apply(resource, axis=1)
    last = ["type_disagreement", "resource_disagreement", "missing"]
    return table[[c for c in table.columns if c not in last] + last]


def coverage(table: pd.DataFrame) -> pd.Series:
    """Known values per column of a :func:`language_table` (``grambank_items`` counts a row
    only where ``grambank_bound`` is known); ``languages`` is the number of rows."""
    counts = table.drop(columns=["missing"]).notna().sum()
    counts["grambank_items"] = int(table["grambank_bound"].notna().sum())
    return pd.concat([pd.Series({"languages": len(table)}), counts]).astype(int)
