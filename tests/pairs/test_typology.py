"""xcomps_utils.pairs.typology on the real pinned files: values checked against the sources by an
independent path, coverage of BMLAMA-17 and BMLAMA-53, gaps NaN with a reason, errors."""

from __future__ import annotations

import csv
import unicodedata
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.pairs import typology
from xcomps_utils.pairs.data import DataError


def _codes(data_dir, collection):
    return sorted(p.stem for p in (data_dir / "bmlama" / collection).glob("*.tsv"))


@pytest.fixture(scope="module")
def tables(data_dir):
    return {n: typology.language_table(_codes(data_dir, f"BMLAMA{n}"), data_dir)
            for n in (17, 53)}


def _wals_label(data_dir, value_id):
    """The label of WALS value ``value_id`` (e.g. 26A-tur) read straight from the raw tables."""
    raw = data_dir / "wals" / "raw"
    with open(raw / "value.csv", encoding="utf-8") as f:
        pk = next(r["domainelement_pk"] for r in csv.DictReader(f) if r["id"] == value_id)
    with open(raw / "domainelement.csv", encoding="utf-8") as f:
        return next(r["name"] for r in csv.DictReader(f) if r["pk"] == pk)


def test_values_against_the_sources(tables, data_dir):
    t = tables[53]
    assert t.loc["tr", "wals_26A"] == "Strongly suffixing" == _wals_label(data_dir, "26A-tur")
    assert t.loc["vi", "wals_22A"] == "0-1 category per word" == _wals_label(data_dir, "22A-vie")
    assert t.loc["vi", "wals_22A_value"] == 1 and t.loc["tr", "wals_22A_value"] == 4
    assert t.loc["ru", "wals_21A"] == "Case + number" == _wals_label(data_dir, "21A-rus")
    assert t.loc["zh", "wals_20A"] == _wals_label(data_dir, "20A-mnd")
    # macrolanguages resolved through CLDR to the Glottolog language
    assert t.loc["ar", ["iso639_3", "glottocode", "family"]].tolist() == [
        "arb", "stan1318", "Afro-Asiatic"]
    assert t.loc["zh", ["iso639_3", "glottocode"]].tolist() == ["cmn", "mand1415"]
    assert t.loc["eu", "family_id"] == t.loc["eu", "glottocode"] == "basq1248"  # isolate
    assert t.loc["ceb", "macroarea"] == "Papunesia"
    # several WALS codes: German's dialect codes carry none of the four features
    assert t.loc["de", "wals_codes"] == "ger"
    # a Glottolog dialect is looked up as its language (Serbian-Croatian)
    assert t.loc["sr", "wals_codes"] == t.loc["hr", "wals_codes"] == "scr"
    assert t.loc["sr", "script"] == "Cyrl" and t.loc["ja", "script"] == "Jpan"
    # Grambank bound inflection: none in Vietnamese, 17 of 20 in Turkish
    assert t.loc["vi", "grambank_bound"] == 0 and t.loc["vi", "grambank_items"] == 19
    assert t.loc["tr", "grambank_bound"] == pytest.approx(0.85)
    assert t.loc["zh", "grambank_bound"] < t.loc["en", "grambank_bound"] < t.loc["tr",
                                                                                  "grambank_bound"]


def test_paper_columns_are_the_projects(tables):
    paper = pd.read_csv(typology.resources_dir() / "languages.csv").set_index("iso")
    t = tables[17]
    assert (t["paper_type"] == paper.loc[t.index, "morphological_type"]).all()
    assert (t["paper_resource"] == paper.loc[t.index, "resource_level"]).all()
    assert t.loc["en", "type_disagreement"].startswith("20A Exclusively concatenative")
    assert t.loc["vi", "type_disagreement"] == "" and t.loc["zh", "type_disagreement"] == ""
    assert t.loc["ko", "resource_disagreement"] == "paper high, urielplus medium"
    assert tables[53]["paper_type"].isna().sum() == 53 - 18  # 17 + de


def test_coverage_17_and_53(tables):
    c17, c53 = typology.coverage(tables[17]), typology.coverage(tables[53])
    print("\nBMLAMA-17\n", c17.to_string(), "\nBMLAMA-53\n", c53.to_string())
    assert c17[["languages", "glottocode", "family", "macroarea", "script",
                "resource_tier", "paper_type"]].eq(17).all()
    assert c17[["wals_20A", "wals_21A", "wals_22A", "wals_26A", "grambank_bound"]].tolist() == [
        13, 13, 13, 16, 16]
    assert c53[["languages", "glottocode", "script", "resource_tier"]].eq(53).all()
    assert c53[["wals_20A", "wals_21A", "wals_22A", "wals_26A", "grambank_bound"]].tolist() == [
        20, 20, 21, 44, 45]
    assert set(tables[17].index[tables[17]["resource_tier"] == "high"]) == {
        "ar", "en", "es", "fr", "ja", "zh"}
    assert tables[53]["resource_tier"].value_counts().to_dict() == {
        "medium": 40, "high": 7, "low": 6}


def test_gaps_stay_nan_with_a_reason(tables):
    t = tables[53]
    for col in ["glottocode", "macroarea", "script", "wals_20A", "wals_21A", "wals_22A",
                "wals_26A", "grambank_bound", "resource_tier", "paper_type"]:
        has_reason = t["missing"].str.contains(f"{col}:", regex=False)
        assert (t[col].isna() == has_reason).all(), col
    assert t.loc["ca", ["wals_20A", "wals_26A", "wals_26A_value"]].isna().all()
    assert "WALS 20A has no value for ams" in t.loc["ar", "missing"]
    assert np.isnan(t.loc["es", "grambank_bound"]) and t.loc["es", "grambank_items"] == 0


def test_wals_codes_that_disagree_are_a_gap(monkeypatch):
    langs = pd.DataFrame({"ID": ["aa1", "aa2"], "Glottocode": ["xxxx1234"] * 2,
                          "ISO639P3code": ["xxx"] * 2})

    def values(labels):
        return pd.DataFrame({"wals": ["aa1", "aa2"], "param": "26A", "label": labels,
                             "number": [2, 3]})
    monkeypatch.setattr(typology, "_wals", lambda d: (langs, values(["A", "B"])))
    out, why = typology._wals_values(["xxxx1234"], ["xxx"], None)
    assert np.isnan(out["wals_26A"]) and why["wals_26A"].startswith("WALS codes disagree")
    monkeypatch.setattr(typology, "_wals", lambda d: (langs, values(["A", "A"])))
    out, why = typology._wals_values(["xxxx1234"], ["xxx"], None)
    assert out["wals_26A"] == "A" and out["wals_codes"] == "aa1 aa2" and "wals_26A" not in why
    assert "no WALS language" in why["wals_20A"] or "has no value" in why["wals_20A"]


def test_type_rules_reach_each_outcome():
    base = {"wals_20A": "Exclusively isolating", "wals_21A": "No case", "wals_22A": "0-1",
            "wals_22A_value": 1, "grambank_bound": 0.1, "paper_type": "analytic"}
    med = {"analytic": 0.1, "inflected": 0.6, "agglutinative": 0.8}
    assert typology._type_disagreement(pd.Series(base), med) == ""
    bad = dict(base, wals_20A="Exclusively concatenative", grambank_bound=0.7)
    got = typology._type_disagreement(pd.Series(bad), med)
    assert "20A" in got and "> inflected median" in got
    none = dict(base, wals_20A=np.nan, wals_22A_value=np.nan, grambank_bound=np.nan)
    assert np.isnan(typology._type_disagreement(pd.Series(none), med))
    infl = dict(base, paper_type="inflected", wals_21A="Monoexponential case",
                grambank_bound=0.6)
    assert "cumulative" in typology._type_disagreement(pd.Series(infl), med)
    assert np.isnan(typology._type_disagreement(pd.Series(dict(base, paper_type=np.nan)), med))


def test_unknown_and_duplicate_codes_named(data_dir):
    with pytest.raises(DataError, match="'qq'"):
        typology.language_table(["tr", "qq"], data_dir)
    with pytest.raises(DataError, match=r"\['tr'\]"):
        typology.language_table(["tr", "tr"], data_dir)


def test_urielplus_file_of_another_version_refused(monkeypatch):
    monkeypatch.setitem(typology.URIELPLUS_FILES, "resource_languages.json", "0" * 64)
    with pytest.raises(DataError, match="another version"):
        typology._urielplus_file("resource_languages.json")


_UNICODE = {"Latn": {"LATIN"}, "Cyrl": {"CYRILLIC"}, "Arab": {"ARABIC"}, "Hebr": {"HEBREW"},
            "Grek": {"GREEK"}, "Deva": {"DEVANAGARI"}, "Beng": {"BENGALI"}, "Taml": {"TAMIL"},
            "Thai": {"THAI"}, "Geor": {"GEORGIAN"}, "Armn": {"ARMENIAN"}, "Hans": {"CJK"},
            "Kore": {"HANGUL"}, "Jpan": {"CJK", "HIRAGANA", "KATAKANA"}}


def test_cldr_script_is_the_script_of_the_bmlama_prompts(tables, data_dir):
    """The script column (CLDR) against the Unicode names of the letters the models read."""
    for code, script in tables[53]["script"].items():
        with open(data_dir / "bmlama" / "BMLAMA53" / f"{code}.tsv", encoding="utf-8") as f:
            text = "".join(line.split("\t")[0].replace("<mask>", "") for line in f)
        letters = Counter(unicodedata.name(ch, "?").split()[0] for ch in text if ch.isalpha())
        top = {s for s, n in letters.items() if n >= 0.1 * sum(letters.values())}
        assert top <= _UNICODE[script] and top, (code, script, letters.most_common(3))
