"""BMLAMA (Qi, Fernández & Bisazza, EMNLP 2023) as minimal pairs, and its no-fact control frame.

BMLAMA is a parallel factual-knowledge probe: ``BMLAMA17/<lang>.tsv`` holds the same 6,792 facts in
17 languages, ``BMLAMA53/<lang>.tsv`` 3,070 facts in 53 (manifest ``data/bmlama.json``). A row is
a prompt with one ``<mask>``, the gold answer, 2 to 10 candidates (``", "``-separated, the gold
among them) and the subject. The files are CSV-quoted TSV (Hebrew abbreviations such as נאט"ו are
written ``"נאט""ו"``); read as CSV every row is well formed, whereas splitting lines on tabs, as
upstream's ``main.py`` does, leaves quotes in 134 Hebrew rows of BMLAMA17 (16 of BMLAMA53) whose
gold then misses its candidates. ``BMLAMA17/zh.tsv`` names 5 columns in its header
(``Candidate<TAB>Ans``) over rows of 4: the columns are read by position.

**Pairs.** A row with ``k`` candidates gives ``k - 1`` pairs: ``good`` is the prompt with the gold
filled in, ``bad`` the prompt with one distractor; the pivots are the filled-in candidate's
character span. Columns: :data:`xcomps_utils.pairs.data.PAIR_COLUMNS` and

================  ==============================================================================
``lang``          the file's language code (ISO 639-1; ``ceb`` for Cebuano)
``item``          ``<benchmark>:<fact>``: the same fact in every language of the benchmark
``fact``          the row's 0-based index (the files are parallel: row ``i`` is one fact)
``relation``      ``<benchmark>:r<first fact>``: the facts of one English prompt template, named
                  by the first, the same in every language (a language's own templates may
                  merge two relations, ja ``<subject>は<mask>です。``, or split one)
``prompt``        the row's prompt (with ``<mask>``); ``subject`` its subject
``template``      the prompt with its subject replaced by ``<subject>`` (``""`` where the subject
                  does not occur verbatim)
``gold``          the gold answer; ``candidate`` the distractor in ``bad``
``gold_index``    the gold's index in the candidate list; ``candidate_index`` the distractor's
``n_candidates``  candidates of the row (the gold's rank among them needs the fact's pairs)
``candidates``    the row's candidate list, in the file's order (what Meta's question lists)
``distractor_true``  the distractor is the gold of another row with the same prompt (relations with
                  several true answers: the official languages of NATO): a pair whose ``bad`` is
                  also true
================  ==============================================================================

``pair_id`` is ``<fact>:<candidate_index>`` (unique within a language), ``subset`` the relation,
``dataset`` ``bmlama``, ``source_row`` the 1-based data row and ``extra`` a JSON object with the
benchmark and the row's ``candidates`` (a list, in the file's order). The gold's score is the same
in every pair of its fact, so the fact's pairs hold its rank among the candidates.

**Validation.** A wrong number of fields, a header of neither known form, a prompt without exactly
one ``<mask>``, an empty field or candidate, repeated candidates and a gold not among its candidates
raise :class:`~xcomps_utils.pairs.data.DataError` naming the file, row and field: none occurs in the
pinned files. A row with a single candidate (34 in every BMLAMA53 file) has no distractor and
gives no pair: counted in ``attrs["excluded"]`` of the loaded frame.

**Control** (:func:`control_pairs`): the same candidates in a frame that carries no fact about
them, the subject swapped for another fact's subject of the same template.
"""

from __future__ import annotations

import csv
import gc
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from . import data
from .data import DataError

__all__ = ["BENCHMARKS", "MASK", "SUBJECT", "BMLAMA_COLUMNS", "languages", "read_facts",
           "load_bmlama", "control_pairs", "sample", "validation_counts"]

#: task family -> the upstream folder
BENCHMARKS = {"bmlama17": "BMLAMA17", "bmlama53": "BMLAMA53"}
MASK = "<mask>"
SUBJECT = "<subject>"
_HEADERS = (["Prompt", "Ans", "Candidate Ans", "Subject"],
            ["Prompt", "Ans", "Candidate", "Ans", "Subject"])  # the second: BMLAMA17/zh.tsv
_FIELDS = ("Prompt", "Ans", "Candidate Ans", "Subject")
_EXTRA_COLUMNS = ["lang", "item", "fact", "relation", "prompt", "subject", "template", "gold",
                  "candidate", "gold_index", "candidate_index", "n_candidates", "distractor_true",
                  "candidates"]
BMLAMA_COLUMNS = data.PAIR_COLUMNS + _EXTRA_COLUMNS


def _benchmark(benchmark: str) -> str:
    if benchmark not in BENCHMARKS:
        raise DataError(f"unknown BMLAMA benchmark {benchmark!r}; known: {list(BENCHMARKS)}")
    return BENCHMARKS[benchmark]


def languages(benchmark: str) -> list[str]:
    """The language codes of ``bmlama17`` (17) or ``bmlama53`` (53), from the manifest.

    Raises:
        DataError: unknown benchmark.
    """
    folder = _benchmark(benchmark)
    return [f.split("/")[1].removesuffix(".tsv") for f in data.manifest("bmlama")["files"]
            if f.startswith(folder + "/")]


def _template(prompt: str, subject: str) -> str:
    return prompt.replace(subject, SUBJECT) if subject and subject in prompt else ""


def _read(benchmark: str, lang: str, data_dir, verify: bool) -> pd.DataFrame:
    folder = _benchmark(benchmark)
    if lang not in languages(benchmark):
        raise DataError(f"unknown {benchmark} language {lang!r}; known: {languages(benchmark)}")
    path = data.dataset_file("bmlama", f"{folder}/{lang}.tsv", data_dir, verify)
    ref = None if lang == "en" else _read(benchmark, "en", data_dir, verify)
    stat = path.stat()
    return _parse(str(path), stat.st_mtime_ns, stat.st_size, benchmark, lang, ref)


def _parse(path, mtime, size, benchmark, lang, ref) -> pd.DataFrame:
    key = (path, mtime, size, benchmark, lang)
    if key not in _PARSED:
        _PARSED[key] = _parse_file(Path(path), benchmark, lang, ref)
    return _PARSED[key]


_PARSED: dict = {}  # parsed files by path, modification time and size


def _parse_file(path: Path, benchmark: str, lang: str, ref: pd.DataFrame | None) -> pd.DataFrame:
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", strict=True)
        try:
            header = next(reader, None)
            if header not in [list(h) for h in _HEADERS]:
                raise DataError(f"{path}, row 0 (header): {header!r} is neither of the known "
                                f"headers {[list(h) for h in _HEADERS]}")
            for no, cells in enumerate(reader, start=1):
                if not cells:
                    continue
                if len(cells) != 4:
                    raise DataError(f"{path}, row {no}: {len(cells)} fields, expected 4 "
                                    f"({', '.join(_FIELDS)})")
                for name, cell in zip(_FIELDS, cells):
                    if not cell.strip():
                        raise DataError(f"{path}, row {no}, field {name!r}: empty")
                prompt, gold, cand, subject = (c.strip() for c in cells)
                if prompt.count(MASK) != 1:
                    raise DataError(f"{path}, row {no}, field 'Prompt': {prompt.count(MASK)} "
                                    f"{MASK} in {prompt!r}, expected exactly one")
                cands = [c.strip() for c in cand.split(", ")]
                if not all(cands):
                    raise DataError(f"{path}, row {no}, field 'Candidate Ans': an empty "
                                    f"candidate in {cand!r}")
                if len(set(cands)) != len(cands):
                    dup = sorted({c for c in cands if cands.count(c) > 1})
                    raise DataError(f"{path}, row {no}, field 'Candidate Ans': repeated "
                                    f"candidate(s) {dup}")
                if gold not in cands:
                    raise DataError(f"{path}, row {no}, field 'Ans': the gold {gold!r} is not "
                                    f"among the candidates {cands}")
                rows.append({"fact": no - 1, "source_row": no, "prompt": prompt, "gold": gold,
                             "candidates": cands, "subject": subject,
                             "template": _template(prompt, subject)})
        except csv.Error as exc:
            raise DataError(f"{path}, row {reader.line_num}: malformed quoting ({exc})") from exc
    if not rows:
        raise DataError(f"{path}: no rows")
    facts = pd.DataFrame(rows)
    if lang == "en":
        first = facts.groupby("template", sort=False)["fact"].transform("min")
        facts["relation"] = [f"{benchmark}:r{r}" for r in first]
    else:  # the English file's templates name the relations of every language
        if len(ref) != len(facts):
            raise DataError(f"{path}: {len(facts)} rows where {benchmark}/en.tsv has "
                            f"{len(ref)}; the files are parallel (row i is fact i)")
        facts["relation"] = ref["relation"].to_numpy()
    return facts


def read_facts(benchmark: str, lang: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """One row per fact of ``<benchmark>/<lang>.tsv``: ``fact`` (0-based row index),
    ``source_row``, ``prompt``, ``gold``, ``candidates`` (list), ``subject``, ``template``,
    ``relation`` (see the module docstring). A file is parsed once per process (again when it
    changes); its checksum is verified on every call.

    Raises:
        DataError: unknown benchmark or language, a malformed row (file, row and field named).
        ChecksumError: the file differs from the manifest.
    """
    return _read(benchmark, lang, None if data_dir is None else str(data_dir), verify).copy()


def _pairs(facts: pd.DataFrame, benchmark: str, lang: str, task: str, golds: dict | None = None
           ) -> pd.DataFrame:
    # a file makes up to half a million small lists and strings: the cyclic garbage collector,
    # which they would trigger hundreds of times for nothing (none is garbage), waits (2x faster)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_pairs(facts, benchmark, lang, task, golds)
    finally:
        if enabled:
            gc.enable()


def _golds(facts: pd.DataFrame) -> dict[str, set]:
    """prompt -> the golds of its rows (a distractor among them is true)."""
    golds: dict[str, set] = {}
    for prompt, gold in zip(facts["prompt"].tolist(), facts["gold"].tolist()):
        golds.setdefault(prompt, set()).add(gold)
    return golds


def _build_pairs(facts: pd.DataFrame, benchmark: str, lang: str, task: str,
                 golds: dict | None = None) -> pd.DataFrame:
    golds = _golds(facts) if golds is None else golds
    cols = {c: [] for c in BMLAMA_COLUMNS if c not in ("identical", "duplicate")}
    for fact, row, relation, prompt, subject, template, gold, cands in zip(
            *(facts[c].tolist() for c in ("fact", "source_row", "relation", "prompt", "subject",
                                          "template", "gold", "candidates"))):
        at, g = prompt.index(MASK), cands.index(gold)
        js = [j for j in range(len(cands)) if j != g]
        bads = [cands[j] for j in js]
        extra = json.dumps({"benchmark": BENCHMARKS[benchmark], "candidates": cands},
                           ensure_ascii=False)
        # one fact's pairs at once: the columns that vary by distractor, then the fact's own
        for c, v in (("pair_id", [f"{fact}:{j}" for j in js]),
                     ("bad", [prompt.replace(MASK, b) for b in bads]),
                     ("good_pivots", [[[at, at + len(gold)]] for _ in js]),
                     ("bad_pivots", [[[at, at + len(b)]] for b in bads]),
                     ("candidate", bads), ("candidate_index", js),
                     ("distractor_true", [b in golds[prompt] for b in bads])):
            cols[c].extend(v)
        for c, v in (("dataset", "bmlama"), ("subset", relation),
                     ("good", prompt.replace(MASK, gold)), ("source_row", row), ("extra", extra),
                     ("lang", lang), ("item", f"{benchmark}:{fact}"), ("fact", fact),
                     ("relation", relation), ("prompt", prompt), ("subject", subject),
                     ("template", template), ("gold", gold), ("gold_index", g),
                     ("n_candidates", len(cands)), ("candidates", cands)):
            cols[c].extend([v] * len(js))
    df = pd.DataFrame(cols)
    df["identical"] = df["good"] == df["bad"]
    df["duplicate"] = df.duplicated(subset=["good", "bad"], keep="first")
    return df[BMLAMA_COLUMNS].assign(task=task)


def load_bmlama(benchmark: str, lang: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """The minimal pairs of one BMLAMA file (``benchmark`` ``bmlama17`` or ``bmlama53``), task
    ``<benchmark>:<lang>``: :data:`BMLAMA_COLUMNS` plus ``task``, described in the module
    docstring. Duplicate pairs (two facts giving the same two sentences) are flagged, not dropped,
    as in every loader. ``attrs["excluded"]`` counts the rows that give no pair
    (``single_candidate``).

    Raises:
        DataError / ChecksumError: as :func:`read_facts`.
    """
    facts = _read(benchmark, lang, None if data_dir is None else str(data_dir), verify)
    if _LAST_PAIRS and _LAST_PAIRS[0] is facts:
        out = _LAST_PAIRS[1]
    else:
        single = facts["candidates"].map(len) < 2
        out = _pairs(facts[~single], benchmark, lang, f"{benchmark}:{lang}")
        out.attrs["excluded"] = {"single_candidate": int(single.sum())}
        _LAST_PAIRS[:] = [facts, out]
    res = out.copy()
    res.attrs = {"excluded": dict(out.attrs["excluded"])}
    return res


# the last file's pairs, by its parsed facts (the same object while the file is unchanged): a
# file's control task loads the pairs its real task has just loaded (a chapter samples both)
_LAST_PAIRS: list = []


def control_pairs(pairs: pd.DataFrame, seed: int = 0, data_dir=None) -> pd.DataFrame:
    """The pairs' candidates in a frame that carries no fact about them: the same template with
    the subject swapped for another fact's subject (a *donor* of the same template, language and
    benchmark, with another subject), the candidates kept. A baseline for Direct's candidate
    length and frequency confound: accuracy on these pairs is what the candidates alone earn.

    Donors come from the whole file (``pairs`` may be a sample); among them those whose gold is
    not one of the fact's candidates are preferred (then the frame says nothing true about any
    candidate); the donor of a fact is drawn with ``numpy.random.default_rng([seed, fact])``, so
    it does not depend on which facts were sampled. Facts whose subject does not occur verbatim
    in the prompt, or whose template has no other subject, get no control pair: counted in
    ``attrs["excluded"]`` (``subject_not_in_prompt``, ``no_donor``, in facts).

    Returns:
        The pairs' rows with ``good``/``bad``/pivots rewritten, ``task``
        ``<benchmark>_control:<lang>``, and ``control_fact`` (the donor's fact),
        ``control_subject`` and ``control_gold_in_candidates`` (no donor without it was left).
        ``pair_id`` and ``item`` are kept, so a control pair joins its original.

    Raises:
        InputError: pairs without the BMLAMA columns.
    """
    missing = [c for c in ("item", "fact", "lang", "template", "candidate") if c not in pairs]
    if missing:
        raise InputError(f"control_pairs needs BMLAMA pairs (xcomps_utils.pairs.bmlama.load_bmlama); "
                         f"these lack {missing}")
    enabled = gc.isenabled()  # as in _pairs: many small lists, none of them garbage
    gc.disable()
    try:
        return _control_pairs(pairs, seed, data_dir)
    finally:
        if enabled:
            gc.enable()


def _donor_table(benchmark: str, lang: str, data_dir) -> tuple[dict, dict]:
    """A file's facts (fact -> template, subject, gold, candidates) and, per template, its facts
    as an array with, for each subject and each gold, the positions among them that hold it:
    what :func:`_donors` draws from."""
    facts = read_facts(benchmark, lang, data_dir)
    rec = dict(zip(facts["fact"].tolist(), zip(facts["template"].tolist(),
                                               facts["subject"].tolist(),
                                               facts["gold"].tolist(),
                                               facts["candidates"].tolist())))
    by_template: dict[str, list[int]] = {}
    for fact, (template, *_) in rec.items():
        if template:
            by_template.setdefault(template, []).append(fact)
    # each template's facts (in file order) and where each subject and each gold sits among
    # them: a fact's donors are the positions left when its own subject's and its candidates'
    # are taken out, found without a scan of the template
    arrays = {}
    for t, fs in by_template.items():
        at_subject: dict[str, list[int]] = {}
        at_gold: dict[str, list[int]] = {}
        for k, d in enumerate(fs):
            at_subject.setdefault(rec[d][1], []).append(k)
            at_gold.setdefault(rec[d][2], []).append(k)
        arrays[t] = (np.array(fs), at_subject, at_gold)
    return rec, arrays


def _nth_left(taken: list[int], k: int) -> int:
    """The ``k``-th (0-based) position, in order, that is not in ``taken`` (sorted, distinct)."""
    return k + int(np.searchsorted(np.asarray(taken) - np.arange(len(taken)), k, side="right"))


def _donors(rec: dict, arrays: dict, facts, seed: int, excluded: dict) -> dict:
    """fact -> (donor fact, donor subject, whether no donor without a candidate as gold was
    left) for each of ``facts`` that has one (:func:`control_pairs`' rule: a fact of the same
    template with another subject, drawn with the fact's own seed, among those whose gold is not
    one of the fact's candidates when there are any); the others counted in ``excluded``."""
    chosen = {}
    for fact in facts:
        template, subject, _, cands = rec[fact]
        if not template:
            excluded["subject_not_in_prompt"] += 1
            continue
        fs, at_subject, at_gold = arrays[template]
        own = at_subject[subject]
        if len(own) == len(fs):
            excluded["no_donor"] += 1
            continue
        taken = set(own)
        for c in cands:
            taken.update(at_gold.get(c, ()))
        clean = len(taken) < len(fs)
        taken = sorted(taken) if clean else own
        k = int(np.random.default_rng([seed, fact]).integers(len(fs) - len(taken)))
        d = int(fs[_nth_left(taken, k)])
        chosen[fact] = (d, rec[d][1], not clean)
    return chosen


def _control_pairs(pairs: pd.DataFrame, seed: int, data_dir) -> pd.DataFrame:
    out, excluded = [], {"subject_not_in_prompt": 0, "no_donor": 0}
    for (benchmark, lang), sub in pairs.groupby([pairs["item"].str.partition(":")[0],
                                                 pairs["lang"]], sort=False):
        rec, arrays = _donor_table(benchmark, lang, data_dir)
        chosen = _donors(rec, arrays, pd.unique(sub["fact"]).tolist(), seed, excluded)
        keep = sub[sub["fact"].isin(list(chosen))].copy()
        picks = [chosen[f] for f in keep["fact"].tolist()]
        frames = [t.replace(SUBJECT, c[1]) for t, c in zip(keep["template"].tolist(), picks)]
        ats = [fr.index(MASK) for fr in frames]
        golds, cands = keep["gold"].tolist(), keep["candidate"].tolist()
        keep["good"] = [fr.replace(MASK, g) for fr, g in zip(frames, golds)]
        keep["bad"] = [fr.replace(MASK, c) for fr, c in zip(frames, cands)]
        keep["good_pivots"] = [[[a, a + len(g)]] for a, g in zip(ats, golds)]
        keep["bad_pivots"] = [[[a, a + len(c)]] for a, c in zip(ats, cands)]
        keep["control_fact"] = [c[0] for c in picks]
        keep["control_subject"] = [c[1] for c in picks]
        keep["control_gold_in_candidates"] = [c[2] for c in picks]
        keep["task"] = f"{benchmark}_control:{lang}"
        out.append(keep)
    res = (pd.concat(out, ignore_index=True) if out else
           pairs.iloc[:0].assign(control_fact=[], control_subject=[],
                                 control_gold_in_candidates=[]))
    res["identical"] = res["good"] == res["bad"]
    res["duplicate"] = res.duplicated(subset=["task", "good", "bad"], keep="first")
    res.attrs["excluded"] = excluded
    return res


def sample(benchmark: str, lang: str, control: bool, n: int, seed: int = 0, data_dir=None,
           verify: bool = True) -> pd.DataFrame:
    """What :func:`xcomps_utils.pairs.tasks.sample_units` draws from the whole task
    (``<benchmark>:<lang>``, or its ``_control`` with ``control``; ``n`` pairs of whole facts,
    ``seed``), equal to it column by column, without building the rows of the facts it leaves:
    every fact's ``(good, bad)`` sentences are formed, in file order, to find the identical and
    duplicate pairs and so each fact's pairs left in the pool; the rows are built for the facts
    taken alone. 3 to 5 times faster on a whole benchmark (a BMLAMA-53 sample: most of a
    minute, a chapter's and the study plan's sampling, to seconds).

    Raises:
        DataError / ChecksumError: as :func:`read_facts`. Warns
        :class:`~xcomps_utils.pairs.data.SmallSampleWarning` as ``sample_units`` does.
    """
    import hashlib
    import warnings

    dd = None if data_dir is None else str(data_dir)
    facts = _read(benchmark, lang, dd, verify)
    single = facts["candidates"].map(len) < 2
    usable = facts[~single]
    ids, prompts, golds, cands = (usable[c].tolist() for c in ("fact", "prompt", "gold",
                                                                "candidates"))
    if control:
        rec, arrays = _donor_table(benchmark, lang, dd)
        excluded = {"subject_not_in_prompt": 0, "no_donor": 0}
        chosen = _donors(rec, arrays, ids, seed, excluded)
        frames = {f: rec[f][0].replace(SUBJECT, c[1]) for f, c in chosen.items()}
    else:
        excluded = {"single_candidate": int(single.sum())}
        frames = dict(zip(ids, prompts))
    # the identical and duplicate pairs of the whole task, as load_bmlama / control_pairs flag
    # them (over the task's good and bad sentences, the first occurrence kept)
    seen, flagged, sizes = set(), {}, {}
    for fact, gold, cs in zip(ids, golds, cands):
        frame = frames.get(fact)
        if frame is None:
            continue
        good, left = frame.replace(MASK, gold), 0
        for j, c in enumerate(cs):
            if c == gold:
                continue
            key = (good, frame.replace(MASK, c))
            bad = key[0] == key[1] or key in seen
            seen.add(key)
            flagged[f"{fact}:{j}"] = bad
            left += not bad
        if left:
            sizes[f"{benchmark}:{fact}"] = left
    units = sorted(sizes, key=lambda u: hashlib.sha256(f"{seed}|{u}".encode()).digest())
    take = int(np.searchsorted(np.cumsum([sizes[u] for u in units]), n)) + 1
    if take > len(units):
        warnings.warn(f"asked for {n} pairs, returning {sum(sizes.values())}: every item of the "
                      "task", data.SmallSampleWarning, stacklevel=4)
    keep = {int(u.partition(":")[2]) for u in units[:take]}
    rows = _pairs(usable[usable["fact"].isin(keep)], benchmark, lang, f"{benchmark}:{lang}",
                  _golds(usable))
    if control:
        rows = control_pairs(rows, seed, dd)
    flags = rows["pair_id"].map(flagged).astype(bool)
    rows["identical"] = rows["good"] == rows["bad"]
    rows["duplicate"] = flags & ~rows["identical"]
    out = rows[~flags].reset_index(drop=True)
    out.attrs = {"excluded": excluded}
    return out


def validation_counts(benchmark: str, data_dir=None) -> pd.DataFrame:
    """Per language of a benchmark: rows, rows giving no pair (single candidate), pairs,
    duplicate pairs, pairs whose distractor is true (``distractor_true``), facts whose subject is
    not in the prompt, and facts without a control donor (what the data note reports).

    Raises:
        DataError / ChecksumError: as :func:`read_facts`.
    """
    out = []
    for lang in languages(benchmark):
        pairs = load_bmlama(benchmark, lang, data_dir)
        ctrl = control_pairs(pairs, 0, data_dir)
        out.append({"lang": lang, "rows": len(read_facts(benchmark, lang, data_dir)),
                    **pairs.attrs["excluded"], "pairs": len(pairs),
                    "duplicate_pairs": int(pairs["duplicate"].sum()),
                    "distractor_true_pairs": int(pairs["distractor_true"].sum()),
                    **ctrl.attrs["excluded"], "control_pairs": len(ctrl),
                    "control_gold_in_candidates": int(ctrl["control_gold_in_candidates"].sum())})
    return pd.DataFrame(out).set_index("lang")
