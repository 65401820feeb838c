"""BMLAMA as tasks: the manifest against the shared checksums, the pairs of real files (pivots,
ids, parallel facts), validation by file, row and field on malformed copies, the no-fact
control frame, and sampling whole facts."""

from __future__ import annotations

import json
import shutil
import warnings

import pandas as pd
import pytest

from xcomps_utils.pairs import bmlama, data, tasks
from xcomps_utils.pairs.data import ChecksumError, DataError


def _load(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)
        return tasks.load(name, **kw)


def test_manifest_pins_commit_licence_and_the_shared_checksums(data_dir):
    meta = data.manifest("bmlama")
    assert len(meta["commit"]) == 40 and meta["license"] == "Apache-2.0" and meta["citation"]
    sums = dict(reversed(line.split(None, 1)) for line in
                (data_dir / "bmlama" / "SHA256SUMS").read_text().splitlines())
    assert meta["files"] == {f: sums[f] for f in sums if f.endswith(".tsv")}
    assert len(bmlama.languages("bmlama17")) == 17 and len(bmlama.languages("bmlama53")) == 53
    assert "de" not in bmlama.languages("bmlama17") and "de" in bmlama.languages("bmlama53")
    assert tasks.checksums(["bmlama17:vi"]) == {
        "bmlama/BMLAMA17/vi.tsv": meta["files"]["BMLAMA17/vi.tsv"]}
    url = meta["url_template"].format(commit=meta["commit"], path="BMLAMA17/vi.tsv")
    assert url.endswith(f"{meta['commit']}/1_easyrun/BMLAMA17/vi.tsv")


def test_pairs_of_a_real_file_fill_the_gold_and_each_distractor(data_dir):
    pairs = _load("bmlama17:vi")
    facts = bmlama.read_facts("bmlama17", "vi")
    assert len(facts) == 6792
    assert len(pairs) == int((facts["candidates"].map(len) - 1).sum())  # k - 1 pairs a fact
    assert pairs["pair_id"].is_unique and (pairs["task"] == "bmlama17:vi").all()
    assert (pairs.groupby("item")["good"].nunique() == 1).all()
    for r in pairs.sample(200, random_state=0).itertuples():
        (g0, g1), = r.good_pivots
        (b0, b1), = r.bad_pivots
        assert r.good[g0:g1] == r.gold and r.bad[b0:b1] == r.candidate
        assert r.good[:g0] == r.bad[:b0] == r.prompt[:r.prompt.index("<mask>")]
        cands = json.loads(r.extra)["candidates"]
        assert cands[r.gold_index] == r.gold and cands[r.candidate_index] == r.candidate
        assert r.candidate != r.gold and r.n_candidates == len(cands)
        assert r.item == f"bmlama17:{r.fact}" and r.pair_id == f"{r.fact}:{r.candidate_index}"


def test_files_are_parallel_and_relations_agree_across_languages(data_dir):
    ref = bmlama.read_facts("bmlama17", "en")
    for lang in bmlama.languages("bmlama17"):
        facts = bmlama.read_facts("bmlama17", lang)
        assert facts["candidates"].map(len).tolist() == ref["candidates"].map(len).tolist(), lang
        assert facts["gold"].tolist() != ref["gold"].tolist() or lang == "en"  # translated
        assert (facts["relation"] == ref["relation"]).all(), lang
    assert ref["relation"].nunique() == ref["template"].nunique() == 38
    ref53 = bmlama.read_facts("bmlama53", "en")
    for lang in ("de", "he", "zh", "ceb"):
        facts = bmlama.read_facts("bmlama53", lang)
        assert facts["candidates"].map(len).tolist() == ref53["candidates"].map(len).tolist()


def test_quoted_hebrew_and_the_zh_header_are_read(data_dir):
    raw = (data_dir / "bmlama" / "BMLAMA17" / "he.tsv").read_bytes().decode("utf-8")
    assert '""' in raw  # CSV quoting: a tab split would keep the quotes
    he = bmlama.read_facts("bmlama17", "he")
    nato = he[he["prompt"].str.contains('נאט"ו', regex=False)]
    assert len(nato) >= 2 and not nato["prompt"].str.startswith('"').any()
    assert he.apply(lambda r: r.gold in r.candidates, axis=1).all()
    first = (data_dir / "bmlama" / "BMLAMA17" / "zh.tsv").read_bytes().decode("utf-8")
    assert first.split("\r\n", 1)[0].count("\t") == 4  # the quirk is still there
    assert len(bmlama.read_facts("bmlama17", "zh")) == 6792


def test_single_candidate_rows_are_counted_not_paired(data_dir):
    pairs = _load("bmlama53:en")
    facts = bmlama.read_facts("bmlama53", "en")
    assert pairs.attrs["excluded"] == {"single_candidate": 34}
    assert pairs["fact"].nunique() == len(facts) - 34 == 3036


def test_distractor_true_marks_another_rows_gold_of_the_same_prompt(data_dir):
    pairs = _load("bmlama17:en")
    flagged = pairs[pairs["distractor_true"]]
    assert 0 < len(flagged) < len(pairs) * 0.1
    golds = pairs.groupby("prompt")["gold"].agg(set)
    assert all(c in golds[p] for p, c in zip(flagged["prompt"], flagged["candidate"]))
    clean = pairs[~pairs["distractor_true"]].head(2000)
    assert not any(c in golds[p] for p, c in zip(clean["prompt"], clean["candidate"]))


ROWS = ["Prompt\tAns\tCandidate Ans\tSubject",
        "A was born in <mask>.\tParis\tRome, Paris, Oslo\tA",
        "B was born in <mask>.\tOslo\tRome, Oslo\tB"]


@pytest.mark.parametrize("row,match", [
    ("C was born in Paris.\tOslo\tRome, Oslo\tC", r"row 2, field 'Prompt': 0 <mask>"),
    ("C <mask> born in <mask>.\tOslo\tRome, Oslo\tC", r"row 2, field 'Prompt': 2 <mask>"),
    ("C was born in <mask>.\tOslo\tRome, Paris\tC", r"row 2, field 'Ans': the gold 'Oslo'"),
    ("C was born in <mask>.\tOslo\tRome, , Oslo\tC", r"row 2, field 'Candidate Ans': an empty"),
    ("C was born in <mask>.\tOslo\tRome, Oslo, Rome\tC", r"row 2, .*repeated .*\['Rome'\]"),
    ("C was born in <mask>.\tOslo\tRome, Oslo", r"row 2: 3 fields, expected 4"),
    ("C was born in <mask>.\t \tRome, Oslo\tC", r"row 2, field 'Ans': empty"),
])
def test_malformed_rows_name_file_row_and_field(data_dir, tmp_path, row, match):
    target = tmp_path / "bmlama" / "BMLAMA53" / "en.tsv"
    target.parent.mkdir(parents=True)
    target.write_text("\r\n".join(ROWS[:2] + [row]) + "\r\n", encoding="utf-8")
    with pytest.raises(ChecksumError):
        bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path)
    with pytest.raises(DataError, match=r"en\.tsv, " + match):
        bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path, verify=False)
    target.write_text("\r\n".join(ROWS) + "\r\n", encoding="utf-8")  # the well-formed copy
    pairs = bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path, verify=False)
    assert pairs["pair_id"].tolist() == ["0:0", "0:2", "1:0"]
    assert pairs["bad"].tolist()[1] == "A was born in Oslo."
    target.write_text("Prompt\tAnswer\tCandidates\tSubject\r\n" + ROWS[1], encoding="utf-8")
    with pytest.raises(DataError, match=r"row 0 \(header\)"):
        bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path, verify=False)


def test_a_file_loaded_again_gives_its_pairs_afresh(data_dir, tmp_path):
    # the control task reuses the pairs its real task has just loaded: a caller's changes to
    # one copy never reach the next, and a changed file is read again
    first = bmlama.load_bmlama("bmlama17", "vi")
    built = bmlama._pairs(bmlama.read_facts("bmlama17", "vi").query("candidates.str.len() > 1"),
                          "bmlama17", "vi", "bmlama17:vi")
    first["good"] = "changed"
    first.attrs["excluded"]["single_candidate"] = -1
    again = bmlama.load_bmlama("bmlama17", "vi")
    assert again is not first
    assert again.equals(built.reset_index(drop=True)) and again.attrs["excluded"] == {
        "single_candidate": 0}
    target = tmp_path / "bmlama" / "BMLAMA53" / "en.tsv"
    target.parent.mkdir(parents=True)
    target.write_text("\r\n".join(ROWS) + "\r\n", encoding="utf-8")
    assert len(bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path, verify=False)) == 3
    target.write_text("\r\n".join(ROWS[:2]) + "\r\n", encoding="utf-8")
    assert len(bmlama.load_bmlama("bmlama53", "en", data_dir=tmp_path, verify=False)) == 2


def test_control_keeps_candidates_and_template_and_swaps_the_subject(data_dir):
    pairs = _load("bmlama17:vi")
    sample = pairs[pairs["fact"] < 300]
    ctrl = bmlama.control_pairs(sample, seed=1)
    assert ctrl.attrs["excluded"] == {"subject_not_in_prompt": 0, "no_donor": 0}
    assert len(ctrl) == len(sample) and (ctrl["task"] == "bmlama17_control:vi").all()
    facts = bmlama.read_facts("bmlama17", "vi").set_index("fact")
    for r in ctrl.sample(200, random_state=0).itertuples():
        donor = facts.loc[r.control_fact]
        assert donor["template"] == r.template and donor["subject"] == r.control_subject
        assert r.control_subject != r.subject and r.control_fact != r.fact
        frame = r.template.replace("<subject>", r.control_subject)
        assert r.good == frame.replace("<mask>", r.gold)
        assert r.bad == frame.replace("<mask>", r.candidate)
        (b0, b1), = r.bad_pivots
        assert r.bad[b0:b1] == r.candidate
        assert r.control_gold_in_candidates == (donor["gold"] in facts.loc[r.fact, "candidates"])
    assert ctrl["control_gold_in_candidates"].mean() < 0.2  # donors without a candidate preferred
    again = bmlama.control_pairs(sample, seed=1)
    assert again["control_fact"].tolist() == ctrl["control_fact"].tolist()
    other = bmlama.control_pairs(sample, seed=2)
    assert (other["control_fact"] != ctrl["control_fact"]).mean() > 0.5
    # a fact's donor does not depend on which facts were sampled
    few = bmlama.control_pairs(sample[sample["fact"] == 7], seed=1)
    assert set(few["control_fact"]) == set(ctrl.loc[ctrl["fact"] == 7, "control_fact"])
    assert len(_load("bmlama17_control:vi", seed=1)) == len(pairs)


def test_a_donor_is_the_drawn_one_among_the_templates_other_subjects(data_dir):
    """The rule of ``_donors``, written out over the file (every fact of the template scanned):
    the facts of the same template with another subject, those whose gold is one of the fact's
    candidates left out unless no other is left, in file order; the fact's own seeded draw picks
    one of them."""
    import numpy as np

    rec, arrays = bmlama._donor_table("bmlama17", "vi", None)
    every = bmlama._donors(rec, arrays, list(rec), 3, {"subject_not_in_prompt": 0,
                                                       "no_donor": 0})
    # the first 300 facts, and every fact left with a donor whose gold is a candidate
    facts = list(dict.fromkeys([f for f in list(rec)[:300] if rec[f][0]]
                               + [f for f, c in every.items() if c[2]]))
    excluded = {"subject_not_in_prompt": 0, "no_donor": 0}
    got = bmlama._donors(rec, arrays, facts, 3, excluded)
    flagged = 0
    for fact in facts:
        template, subject, _, cands = rec[fact]
        same = [d for d in rec if rec[d][0] == template]
        pool = [d for d in same if rec[d][1] != subject]
        clean = [d for d in pool if rec[d][2] not in cands]
        pick = clean or pool
        d = pick[int(np.random.default_rng([3, fact]).integers(len(pick)))]
        assert got[fact] == (d, rec[d][1], not clean), fact
        flagged += not clean
    assert len(got) == len(facts) and flagged > 0
    for taken, k, want in (([], 0, 0), ([0, 1, 5], 0, 2), ([0, 1, 5], 3, 6), ([2], 2, 3)):
        assert bmlama._nth_left(taken, k) == want


def test_a_subject_missing_from_its_prompt_is_counted(data_dir):
    pairs = _load("bmlama53:de")
    ctrl = bmlama.control_pairs(pairs, seed=0)
    assert ctrl.attrs["excluded"]["subject_not_in_prompt"] == 1
    missing = pairs.loc[pairs["template"] == "", "fact"].unique().tolist()
    assert len(missing) == 1 and not ctrl["fact"].isin(missing).any()
    with pytest.raises(ValueError, match="BMLAMA pairs"):
        bmlama.control_pairs(pairs[["good", "bad"]])


def test_sampling_keeps_facts_whole_and_the_same_across_languages(data_dir):
    s = tasks.sample(["bmlama17:vi", "bmlama17:fr"], 18, seed=3)
    for task, sub in s.groupby("task"):
        assert len(sub) >= 18
        assert (sub.groupby("fact").size() == sub.groupby("fact")["n_candidates"].first() - 1).all()
        assert len(sub) - sub.groupby("fact").size().iloc[-1] < 18  # the last fact reached n
    vi, fr = (set(s.loc[s["task"] == t, "item"]) for t in ("bmlama17:vi", "bmlama17:fr"))
    assert vi == fr
    assert set(tasks.sample(["bmlama17:vi"], 18, seed=4)["item"]) != vi
    with pytest.raises(DataError, match="unknown bmlama17 language 'de'"):
        tasks.get("bmlama17:de")
    assert tasks.get("bmlama53:de").unit == "item"


@pytest.mark.parametrize("name, n, seed", [
    ("bmlama17:he", 9 * 70, 0), ("bmlama53_control:ceb", 9 * 20, 3),
    ("bmlama53_control:ja", 9 * 4000, 0)])
def test_a_sample_equals_the_whole_tasks_sample_without_building_it(data_dir, name, n, seed):
    """``bmlama.sample`` (what ``tasks.sample`` uses) draws the facts ``sample_units`` draws from
    the whole task, and their rows equal, column by column (a run's pairs, so its id); the
    duplicates and true distractors decided over the whole file. Every language of both
    benchmarks at the chapters' sizes was compared when it was written."""
    whole = _load(name, seed=seed)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        want = tasks.sample_units(whole, n, seed, "item")
        got = tasks.sample([name], n, seed)
    assert want["duplicate"].sum() == 0 and whole["duplicate"].any() or "control" in name
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    small = [str(x.message) for x in w if issubclass(x.category, data.SmallSampleWarning)]
    assert len(small) == (2 if n > len(whole) else 0), small  # each way warns alike


def test_download_url_of_a_missing_file(monkeypatch, tmp_path):
    monkeypatch.delenv("XCOMPS_DATA_DIR", raising=False)
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path))
    seen = []
    def fake(url, target):
        seen.append(url)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(__file__, target)

    monkeypatch.setattr(data, "download", fake)
    with pytest.raises(ChecksumError):
        data.dataset_file("bmlama", "BMLAMA53/ceb.tsv")
    assert seen == [f"https://raw.githubusercontent.com/Betswish/Cross-Lingual-Consistency/"
                    f"{data.manifest('bmlama')['commit']}/1_easyrun/BMLAMA53/ceb.tsv"]
