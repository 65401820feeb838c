"""CLAMS, TurBLiMP and SLING as tasks: loaders on the shared files and on malformed copies,
pivotal spans in every script, the sentence-level decomposition, and a planted pivotal share."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import grammar_study
from xcomps_utils.lm.token_scores import TokenScores, token_table
from xcomps_utils.pairs import data, grammar, tasks
from xcomps_utils.pairs.data import ChecksumError, DataError


def _load(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)
        return tasks.load(name, **kw)


def _copy(data_dir, tmp_path, dataset, filename):
    target = tmp_path / dataset / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir / dataset / filename, target)
    return target


# ------------------------------------------------------------------------------ registry

def test_every_grammar_task_is_registered_with_a_manifest_file():
    names = grammar.task_names()
    assert len(grammar.task_names("clams")) == 35
    assert len(grammar.task_names("turblimp")) == 16
    assert len(grammar.task_names("sling")) == 54
    assert len(grammar.task_names("rublimp")) == 45
    assert grammar.task_names("multiblimp") == [f"multiblimp:{x}" for x in ("eng", "ell", "nld",
                                                                           "tur")]
    for name in names:
        task = tasks.get(name)
        (dataset, file), = task.files
        assert file in data.manifest(dataset)["files"], name
    assert tasks.checksums(["clams:de:prep_anim"]) == {
        "clams/de/prep_anim.txt": data.manifest("clams")["files"]["de/prep_anim.txt"]}


@pytest.mark.parametrize("dataset", ["clams", "turblimp", "sling", "rublimp", "multiblimp"])
def test_manifests_pin_commit_licence_citation_and_shared_checksums(dataset, data_dir):
    meta = data.manifest(dataset)
    assert len(meta["commit"]) == 40 and meta["license"] and meta["citation"]
    sums = {}
    for line in (data_dir / dataset / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split(None, 1)
        sums[path.strip().removeprefix("./")] = digest
    for f, digest in meta["files"].items():
        assert sums[f] == digest, f
    url = meta["url_template"].format(commit=meta["commit"], file="x",
                                      path=meta.get("upstream_paths", {}).get(
                                          next(iter(meta["files"])), "x"))
    assert meta["commit"] in url and url.startswith("https://raw.githubusercontent.com/")


def test_unknown_names_are_refused_with_a_hint():
    with pytest.raises(DataError, match="did you mean"):
        tasks.get("clams:de:prep_anin")
    with pytest.raises(DataError, match="clams:<lang>:<construction>"):
        tasks.get("clams:xx:prep_anim")
    with pytest.raises(DataError, match="did you mean"):
        tasks.get("turblimp:subject_verb_agrement")
    with pytest.raises(DataError, match="sling"):
        tasks.get("sling:zai_lee")


# ------------------------------------------------------------------------------ loaders

@pytest.mark.parametrize("name,n,lang", [
    ("clams:en:simple_agrmt", 140, "en"), ("clams:de:prep_anim", 12600, "de"),
    ("clams:fr:vp_coord", 980, "fr"), ("clams:he:subj_rel", None, "he"),
    ("clams:ru:obj_rel_within_anim", 11200, "ru"),
    ("turblimp:subject_verb_agreement", 1000, "tr"),
    ("turblimp:argument_structure_transitive", 1000, "tr"), ("sling:zai_le", 1000, "zh"),
    ("sling:cl_self_male", None, "zh"), ("rublimp:add_new_suffix", 1000, "ru"),
    ("multiblimp:eng", 770, "en"), ("multiblimp:tur", 1742, "tr")])
def test_loader_on_the_shared_files(data_dir, name, n, lang):
    pairs = _load(name)
    if n is not None:
        assert len(pairs) == n
    assert (pairs["lang"] == lang).all() and (pairs["task"] == name).all()
    assert pairs["item"].is_unique and pairs["item"].str.startswith(name + ":").all()
    assert pairs[["good", "bad"]].map(lambda s: isinstance(s, str) and s == s.strip()).all().all()
    sample = data.sample_pairs(pairs, 5)
    assert len(sample) == 5


def test_rublimp_pivots_land_on_the_marked_words(data_dir):
    for name in ("rublimp:add_new_suffix", "rublimp:genitive_subj_predicate_agreement_gender"):
        pairs = _load(name)
        assert (pairs["subset"] != "").all() and pairs["pair_id"].is_unique
        for r in pairs.itertuples():
            e = json.loads(r.extra)
            assert e["pivot_source"] == "cue"
            (g0, g1), = r.good_pivots
            (b0, b1), = r.bad_pivots
            assert r.good[g0:g1].lower() == e["source_word"].replace("\u00ad", "").lower()
            assert r.bad[b0:b1].lower() == e["target_word"].replace("\u00ad", "").lower()
    row = _load("rublimp:add_new_suffix").iloc[0]  # the file's first row
    assert (row["pair_id"], row["good"][slice(*row["good_pivots"][0])],
            row["bad"][slice(*row["bad_pivots"][0])]) == ("132968", "плечи", "плечники")


@pytest.mark.parametrize("lang", list(grammar.MULTIBLIMP_LANGUAGES))
def test_multiblimp_pivots_land_on_the_swapped_word(data_dir, lang):
    pairs = _load(f"multiblimp:{lang}")
    cue = pairs["extra"].map(lambda e: json.loads(e)["pivot_source"]) == "cue"
    assert cue.mean() > 0.97
    for r in pairs[cue].itertuples():
        e = json.loads(r.extra)
        (g0, g1), = r.good_pivots
        (b0, b1), = r.bad_pivots
        assert r.good[g0:g1] == (e["cop"] or e["verb"]) and r.bad[b0:b1] == e["swap_head"]
        assert r.good[:g0] == r.bad[:b0]  # the same prefix: the swapped word is the difference
        assert r.good[g1:] == r.bad[b1:] or lang == "tur"


def test_rublimp_and_multiblimp_malformed_copies_name_file_row_and_field(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "rublimp", "datasets/add_new_suffix.csv")
    lines = target.read_text(encoding="utf-8").split("\n")
    target.write_text("\n".join(lines[:3] + [lines[3] + ",x"]) + "\n", encoding="utf-8")
    with pytest.raises(ChecksumError):
        grammar.load_rublimp("add_new_suffix", data_dir=tmp_path)
    with pytest.raises(DataError, match=r"add_new_suffix\.csv, row 3: 12 cells"):
        grammar.load_rublimp("add_new_suffix", data_dir=tmp_path, verify=False)
    target.write_text("\n".join(lines[:2] + [",".join(["1", ""] + lines[2].split(",")[2:])]),
                      encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2, field 'source_sentence'"):
        grammar.load_rublimp("add_new_suffix", data_dir=tmp_path, verify=False)
    target = _copy(data_dir, tmp_path, "multiblimp", "nld/data.tsv")
    lines = target.read_text(encoding="utf-8").split("\n")
    target.write_text("\n".join([lines[0].replace("wrong_sen", "wrong")] + lines[1:3]),
                      encoding="utf-8")
    with pytest.raises(DataError, match=r"data\.tsv, row 0 \(header\): lacks .*'wrong_sen'"):
        grammar.load_multiblimp("nld", data_dir=tmp_path, verify=False)
    with pytest.raises(DataError, match="unknown MultiBLiMP language 'nl'"):
        grammar.load_multiblimp("nl")
    with pytest.raises(DataError, match="unknown rublimp task"):
        tasks.get("rublimp:add_new_sufix")


def test_clams_malformed_copies_name_file_row_and_field(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "clams", "de/simple_agrmt.txt")
    assert len(tasks.load("clams:de:simple_agrmt", data_dir=tmp_path)) == 140
    lines = target.read_text(encoding="utf-8").split("\n")
    bad = lines.copy()
    bad[2] = bad[2].replace("True", "Wahr", 1)
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(ChecksumError):  # verified first
        tasks.load("clams:de:simple_agrmt", data_dir=tmp_path)
    with pytest.raises(DataError, match=r"simple_agrmt\.txt, row 3, field 'label'"):
        grammar.load_clams("de", "simple_agrmt", data_dir=tmp_path, verify=False)
    bad = lines.copy()
    bad[5] = bad[5].replace("\t", " ")
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"row 6: no tab .*'sentence'"):
        grammar.load_clams("de", "simple_agrmt", data_dir=tmp_path, verify=False)
    target.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 3, field 'label': a True line without"):
        grammar.load_clams("de", "simple_agrmt", data_dir=tmp_path, verify=False)


def test_turblimp_malformed_copies_name_file_row_and_field(data_dir, tmp_path):
    name = "augmented_binding.csv"
    target = _copy(data_dir, tmp_path, "turblimp", name)
    lines = target.read_text(encoding="utf-8").split("\n")
    bad = lines.copy()
    bad[4] = bad[4] + ";extra"
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"augmented_binding\.csv, row 4: 7 cells"):
        grammar.load_turblimp("binding", data_dir=tmp_path, verify=False)
    bad = lines.copy()
    bad[7] = ";" + bad[7].split(";", 1)[1]
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"row 7, field 'good_sentence'"):
        grammar.load_turblimp("binding", data_dir=tmp_path, verify=False)
    target.write_text("\n".join([lines[0].replace("good_cue", "cue")] + lines[1:]),
                      encoding="utf-8")
    with pytest.raises(DataError, match=r"header.*good_cue"):
        grammar.load_turblimp("binding", data_dir=tmp_path, verify=False)


def test_sling_malformed_copies_name_file_row_and_field(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "sling", "Aspect/zai_le.jsonl")
    lines = target.read_text(encoding="utf-8").split("\n")
    bad = lines.copy()
    bad[9] = bad[9][:-3]
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"zai_le\.jsonl, row 10: malformed JSON"):
        grammar.load_sling("zai_le", data_dir=tmp_path, verify=False)
    rec = json.loads(lines[19])
    del rec["sentence_bad"]
    bad = lines.copy()
    bad[19] = json.dumps(rec, ensure_ascii=False)
    target.write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(DataError, match=r"row 20: missing field 'sentence_bad'"):
        grammar.load_sling("zai_le", data_dir=tmp_path, verify=False)


# ------------------------------------------------------------------------------ pivots

SAMPLE = ["clams:en:prep_anim", "clams:de:subj_rel", "clams:fr:simple_agrmt", "clams:he:vp_coord",
          "clams:ru:obj_rel_across_anim", "turblimp:subject_verb_agreement",
          "turblimp:determiners", "sling:zai_le", "sling:cl_simple_noun", "sling:any"]


@pytest.mark.parametrize("name", SAMPLE)
def test_pivotal_spans_for_every_pair_of_a_sample(data_dir, name):
    pairs = tasks.sample([name], 40, seed=3)
    for r in pairs.itertuples():
        assert r.good_pivots or r.bad_pivots, (name, r.good, r.bad)
        if len(r.good) == len(r.bad) or name.startswith("clams"):  # not an insertion
            assert r.good_pivots and r.bad_pivots, (name, r.good, r.bad)
        for text, spans in ((r.good, r.good_pivots), (r.bad, r.bad_pivots)):
            for s, e in spans:
                assert 0 <= s < e <= len(text) and text[s:e].strip() == text[s:e]
        outside_g = "".join(c for i, c in enumerate(r.good)
                            if not any(s <= i < e for s, e in r.good_pivots))
        outside_b = "".join(c for i, c in enumerate(r.bad)
                            if not any(s <= i < e for s, e in r.bad_pivots))
        if name.startswith("clams"):  # the verb is the difference: the rest is the same text
            assert outside_g == outside_b, (r.good, r.bad)
            assert all(" " not in r.good[s:e] or name.startswith("clams:fr")
                       for s, e in r.good_pivots)
    if name.startswith("sling"):  # characters, no spaces
        assert not any(" " in r.good[s:e] for r in pairs.itertuples() for s, e in r.good_pivots)


def test_turblimp_pivots_are_the_cues_where_the_sentence_has_them(data_dir):
    pairs = _load("turblimp:binding")
    extra = pairs["extra"].map(json.loads)
    cue = extra.map(lambda e: e["pivot_source"] == "cue")
    assert cue.mean() > 0.5
    det = _load("turblimp:determiners")
    assert det.bad_pivots.map(len).eq(0).all() and det.good_pivots.map(len).eq(1).all()
    assert det.extra.map(lambda e: json.loads(e)["pivot_source"]).eq("cue+difference").all()
    r, e = pairs[cue].iloc[0], extra[cue].iloc[0]
    (s, t), = r.good_pivots
    assert r.good[s:t].lower() == e["good_cue"].lower()


def test_hebrew_article_join(data_dir):
    assert grammar.join_hebrew_article("ה מלצר ליד ה שחקנים רוקד") == "המלצר ליד השחקנים רוקד"
    assert grammar.join_hebrew_article("הם רוקדים") == "הם רוקדים"
    pairs = tasks.sample(["clams:he:prep_anim", "clams:en:prep_anim"], 5)
    joined = grammar.join_article_pairs(pairs)
    he = joined[joined.lang == "he"]
    assert not he.good.str.contains("ה ", regex=False).any()
    assert (joined[joined.lang == "en"].good == pairs[pairs.lang == "en"].good).all()
    for r in he.itertuples():
        assert r.good[slice(*r.good_pivots[0])] != r.bad[slice(*r.bad_pivots[0])]
        assert r.good[:r.good_pivots[0][0]] == r.bad[:r.bad_pivots[0][0]]


# ------------------------------------------------------------------------------ decomposition

def _scores(text, pieces, logprobs):
    offsets, start = [], 0
    for p in pieces:
        start = text.index(p, start)
        offsets.append([start, start + len(p)])
        start += len(p)
    return TokenScores(text, np.arange(len(pieces)), list(pieces), np.array(offsets),
                       np.array(logprobs, dtype=float), "bos")


def _tokens(*scores):
    """The store's token table of these scores (``direct_tokens``: a ``text`` column)."""
    table = token_table(list(scores))
    return table.assign(text=table.text_index.map({i: s.text for i, s in enumerate(scores)}))


def test_planted_pivotal_share():
    """Only the verb's token differs: the pivot carries all of Δ (share 1, plain 1, normalized
    1); then a planted half on the continuation."""
    good = _scores("the authors laugh today", ["the", " authors", " laugh", " today"],
                   [-2.0, -3.0, -1.0, -4.0])
    bad = _scores("the authors laughs today", ["the", " authors", " laughs", " today"],
                  [-2.0, -3.0, -3.0, -4.0])
    pairs = pd.DataFrame({"task": ["t"], "lang": ["en"], "subset": ["s"], "pair_id": ["0"],
                          "good": [good.text], "bad": [bad.text], "good_pivots": [[[12, 17]]],
                          "bad_pivots": [[[12, 18]]]})
    d = grammar_study.decompose(pairs, _tokens(good, bad)).iloc[0]
    assert d.delta == pytest.approx(2.0) and d.delta_pivot == pytest.approx(2.0)
    assert d.pivot_share == pytest.approx(1.0) and d.plain_pivot_s == pytest.approx(1.0)
    assert d.norm_pivot_s == pytest.approx(1.0)
    assert (d.pivot_good, d.pivot_bad) == (" laugh", " laughs")
    bad2 = _scores(bad.text, bad.tokens, [-2.0, -3.0, -3.0, -6.0])
    d = grammar_study.decompose(pairs, _tokens(good, bad2)).iloc[0]
    assert d.delta == pytest.approx(4.0) and d.pivot_share == pytest.approx(0.5)
    assert d.delta_after == pytest.approx(2.0) and d.plain_pivot_s == pytest.approx(0.5)
    s = grammar_study.pivot_summary(pd.concat([grammar_study.decompose(pairs, _tokens(good, bad)),
                                         grammar_study.decompose(pairs, _tokens(good, bad2))]))
    assert s.share_of_sum.iloc[0] == pytest.approx(4 / 6)


@pytest.mark.parametrize("names", [["clams:he:simple_agrmt", "clams:ru:vp_coord",
                                    "sling:zai_le", "sling:cl_comp_noun",
                                    "turblimp:passives", "clams:de:prep_anim"],
                                   ["rublimp:np_agreement_case", "multiblimp:ell",
                                    "multiblimp:tur", "multiblimp:nld"]])
def test_decomposition_sums_to_the_total_in_every_script(lm, names):
    from xcomps_utils.runs.execute import run

    pairs = tasks.sample(names, 4, seed=0)
    res = run(lm, pairs, ["direct"], progress=False)
    d = grammar_study.decompose(pairs, res.detail("direct_tokens"))
    assert len(d) == len(pairs)
    parts = d[["delta_prefix", "delta_pivot", "delta_after", "delta_period"]].sum(axis=1)
    np.testing.assert_allclose(parts, d["delta"], atol=1e-6)
    direct = res.wide("direct")
    np.testing.assert_allclose(np.sort(d["delta"]), np.sort(direct["direct_delta"]
                                                            if "direct_delta" in direct
                                                            else direct["delta"]), atol=1e-6)
    assert (d["pivot_good"].str.len() > 0).all()
    assert d["plain_pivot_s"].between(0, 1).all()
    assert d["tok_share_pivot_s"].dropna().between(0, 1).all()
    assert d["influence_pivot_s"].dropna().between(-0.5, 0.5).all()
    if d["family"].isin(["RuBLiMP", "MultiBLiMP"]).all():  # the marked word is the pivot
        assert (d["pivot_source"] == "cue").mean() > 0.9
        assert d["tok_share_pivot_s"].notna().all()


def test_accuracy_cells_and_claims_on_planted_cells():
    rng = np.random.default_rng(0)
    rows = []
    hard = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.3, "e": 0.2, "f": 0.8, "g": 0.6}
    for lang in ["en", "de", "fr", "he", "ru"]:
        for c, p in hard.items():
            for k in range(40):
                rows.append({"lang": lang, "subset": c, "item": f"{lang}{c}{k}",
                             "direct_correct": float(rng.random() < p), "direct_tie": 0.0,
                             "direct_near_tie": 0.0})
    cells = grammar_study.accuracy_cells(pd.DataFrame(rows), n_boot=200)
    assert len(cells) == 35 and cells["ci_low"].le(cells["accuracy"]).all()
    t = grammar_study.construction_agreement(cells, n_perm=999)
    assert t.effect > 0.6 and t.verdict == "supported" and "cell" in t.unit
    g = pd.Series([0.9, 0.8, 0.7, 0.6, 0.5], index=["en", "de", "fr", "zh", "tr"])
    t = grammar_study.grammar_vs_concepts(g, g * 0.5 + 0.1)
    assert t.unit == "language" and t.n_items == 5 and t.effect == pytest.approx(1.0)
