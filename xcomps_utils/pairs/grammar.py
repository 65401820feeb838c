"""Grammar across languages: CLAMS, TurBLiMP and SLING minimal pairs, and where their difference
sits.

Three licensed benchmarks of grammatical minimal pairs outside English, read from the files of a
pinned upstream commit (manifests ``data/{clams,turblimp,sling}.json``, every
file's SHA-256 checked before a row is read, as for BLiMP; :func:`xcomps_utils.pairs.data.dataset_file`):

=======================  ===============================================================  ======
task                     pairs                                                            lang
=======================  ===============================================================  ======
``clams:<lang>:<c>``     CLAMS (Mueller et al., 2020): subject-verb agreement in 7             en de
                         constructions ``c`` (:data:`CLAMS_CONSTRUCTIONS`), the same in     fr he
                         5 languages; the pair differs in the verb                          ru
``turblimp:<p>``         TurBLiMP (Başar et al., 2025): 16 phenomena × 1,000 pairs          tr
``sling:<paradigm>``     SLING (Song et al., 2022): 54 paradigms in 9 phenomena             zh
``rublimp:<p>``          RuBLiMP (Taktasheva et al., 2024): 45 phenomena × 1,000 pairs      ru
``multiblimp:<l>``       MultiBLiMP 1.0 (Jumelet et al., 2025): subject-verb (and           en el
                         subject-participle) agreement from Universal Dependencies,         nl tr
                         ``l`` one of ``eng ell nld tur`` (770 to 2,331 pairs)
=======================  ===============================================================  ======

Each loader returns the pair schema of :mod:`xcomps_utils.pairs.data` plus ``lang`` (ISO 639-1),
``item`` (``<task>:<pair_id>``: a pair is its own item, and item ids never repeat across tasks)
and ``task``. ``subset`` is the CLAMS construction, the TurBLiMP phenomenon, or the SLING
phenomenon (the paradigm is the task). Malformed files raise :class:`~xcomps_utils.pairs.data.DataError`
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
  pivots on the longer side only, as in :func:`xcomps_utils.pairs.data.pivotal_spans`.
* SLING: the differing characters (Han characters are words of their own; Chinese has no spaces),
  by :func:`xcomps_utils.pairs.data.pivotal_spans`.
* RuBLiMP: ``source_word`` in ``source_sentence`` and ``target_word`` in ``target_sentence`` (soft
  hyphens U+00AD, which 2 words carry, removed; case-insensitive, whole word, the occurrence
  nearest the words that differ); the differing words where the word is not found
  (``extra.pivot_source`` as for TurBLiMP).
* MultiBLiMP: the word that was swapped, right after the dataset's ``prefix``: in ``wrong_sen``
  its ``swap_head``; in ``sen`` the auxiliary or copula ``cop`` where the row has one, else the
  agreeing ``verb`` (``verb_idx``, a Universal Dependencies word index, names the lexical verb,
  which is not the changed word when an auxiliary agrees: ``are hurting`` / ``is hurting``); the
  differing words where the word is not there (``extra.pivot_source``).

**Hebrew.** CLAMS writes the definite article ה as a word of its own (``ה מלצר רוקד``), which no
Hebrew text does. The pairs are scored **as published** (the benchmark's own texts, comparable with
its paper); :func:`join_hebrew_article` writes them as Hebrew is written (``המלצר רוקד``), and the
chapter measures how much that changes Direct accuracy.

Where the difference sits, and the chapter's claims across languages, are the analysis layer:
:mod:`xcomps_utils.analysis.grammar_study`.
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
           "sling_paradigms", "sling_files", "task_names", "load_clams", "load_turblimp",
           "load_sling", "rublimp_phenomena", "load_rublimp", "MULTIBLIMP_LANGUAGES",
           "load_multiblimp", "join_hebrew_article", "join_article_pairs", "word_difference_spans",
           "chapter_tasks"]

CLAMS_LANGUAGES = ("en", "de", "fr", "he", "ru")
CLAMS_CONSTRUCTIONS = ("simple_agrmt", "vp_coord", "long_vp_coord", "prep_anim", "subj_rel",
                       "obj_rel_across_anim", "obj_rel_within_anim")
#: the language of each dataset's pairs (CLAMS: per file)
DATASET_LANGUAGES = {"turblimp": "tr", "sling": "zh", "blimp": "en", "rublimp": "ru"}
#: MultiBLiMP's ISO 639-3 file names -> ISO 639-1 (the ``lang`` column)
MULTIBLIMP_LANGUAGES = {"eng": "en", "ell": "el", "nld": "nl", "tur": "tr"}

GRAMMAR_COLUMNS = data.PAIR_COLUMNS + ["lang", "item"]


def turblimp_phenomena() -> list[str]:
    """The 16 TurBLiMP phenomena (file stems without ``augmented_``)."""
    return [f.removeprefix("augmented_").removesuffix(".csv")
            for f in data.manifest("turblimp")["files"]]


@lru_cache(maxsize=None)
def sling_files() -> dict[str, str]:
    """SLING paradigm -> its file in the manifest (``<phenomenon>/<paradigm>.jsonl``)."""
    return {Path(f).stem: f for f in data.manifest("sling")["files"]}


def rublimp_phenomena() -> list[str]:
    """The 45 RuBLiMP phenomena (file stems of ``datasets/<phenomenon>.csv``, the ``PID``)."""
    return [f.removeprefix("datasets/").removesuffix(".csv")
            for f in data.manifest("rublimp")["files"]]


def sling_paradigms() -> list[str]:
    """The 54 SLING paradigms (file stems; unique across phenomenon folders)."""
    return list(sling_files())


def task_names(dataset: str | None = None) -> list[str]:
    """Every grammar task name (``clams:<lang>:<construction>``, ``turblimp:<p>``,
    ``sling:<paradigm>``, ``rublimp:<p>``, ``multiblimp:<lang>``), or those of one dataset."""
    out = {"clams": [f"clams:{lang}:{c}" for lang in CLAMS_LANGUAGES for c in CLAMS_CONSTRUCTIONS],
           "turblimp": [f"turblimp:{p}" for p in turblimp_phenomena()],
           "sling": [f"sling:{p}" for p in sling_paradigms()],
           "rublimp": [f"rublimp:{p}" for p in rublimp_phenomena()],
           "multiblimp": [f"multiblimp:{lang}" for lang in MULTIBLIMP_LANGUAGES]}
    if dataset is None:
        return [n for names in out.values() for n in names]
    return out[dataset]


# --------------------------------------------------------------------------- pivots

def word_difference_spans(a: str, b: str) -> tuple[list[list[int]], list[list[int]]]:
    """Spans of the whitespace words that differ between two sentences of the same length in
    words, one span per run of adjacent differing words (position by position: fast for the
    hundreds of thousands of CLAMS pairs); other pairs go to
    :func:`xcomps_utils.pairs.data.pivotal_spans` (an alignment)."""
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
    files = sling_files()
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


def _pivot_source(found: tuple[bool, bool]) -> str:
    return {(True, True): "cue", (False, False): "difference"}.get(found, "cue+difference")


def _dict_rows(path: Path, fields: list[str], delimiter: str = ","):
    """``(data row, record)`` of a CSV/TSV file with a header holding ``fields``."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        missing = [c for c in fields if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}, row 0 (header): lacks field(s) {missing}; has "
                            f"{reader.fieldnames}")
        for no, rec in enumerate(reader, start=1):
            if None in rec or None in rec.values():
                cells = (len(reader.fieldnames) + len(rec[None]) if None in rec
                         else sum(v is not None for v in rec.values()))
                raise DataError(f"{path}, row {no}: {cells} cells where the header has "
                                f"{len(reader.fieldnames)}")
            yield no, rec


_RUBLIMP_FIELDS = ["id", "source_sentence", "target_sentence", "source_word", "target_word",
                   "phenomenon", "PID"]


def load_rublimp(phenomenon: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """One RuBLiMP phenomenon (Taktasheva et al., 2024), 1,000 pairs: ``good`` is
    ``source_sentence``, ``bad`` ``target_sentence``; pivots on ``source_word``/``target_word``
    (module docstring). ``pair_id`` is the file's ``id``, ``subset`` its ``phenomenon`` (the
    task is the ``PID``); ``extra`` holds ``source_word``, ``target_word``, ``level``,
    ``subtype``, ``domain``, ``tree_depth`` and ``pivot_source``.

    Raises:
        DataError: unknown phenomenon, a header without the fields, a row with another number of
            cells, an empty sentence or word (file, row and field named). ChecksumError: as BLiMP.
    """
    if phenomenon not in rublimp_phenomena():
        raise DataError(f"unknown RuBLiMP phenomenon {phenomenon!r}; known: "
                        f"{rublimp_phenomena()}")
    path = data.dataset_file("rublimp", f"datasets/{phenomenon}.csv", data_dir, verify)
    rows = []
    for no, rec in _dict_rows(path, _RUBLIMP_FIELDS):
        good = data.require(rec, "source_sentence", path, no)
        bad = data.require(rec, "target_sentence", path, no)
        sw = data.require(rec, "source_word", path, no).replace("\u00ad", "")
        tw = data.require(rec, "target_word", path, no).replace("\u00ad", "")
        gp, bp = data.pivotal_spans(good, bad)
        gc, bc = _cue_span(good, sw, gp), _cue_span(bad, tw, bp)
        extra = {k: rec.get(k, "") for k in ("source_word", "target_word", "level", "subtype",
                                             "domain", "tree_depth")}
        rows.append({"pair_id": data.require(rec, "id", path, no), "dataset": "rublimp",
                     "subset": rec["phenomenon"], "good": good, "bad": bad,
                     "good_pivots": [gc] if gc else gp, "bad_pivots": [bc] if bc else bp,
                     "source_row": no, "lang": "ru",
                     "extra": json.dumps({**extra, "pivot_source": _pivot_source(
                         (gc is not None, bc is not None))}, ensure_ascii=False)})
    return _frame(rows, path, f"rublimp:{phenomenon}")


_MULTIBLIMP_FIELDS = ["sen", "wrong_sen", "verb", "verb_idx", "cop", "swap_head", "prefix",
                      "phenomenon"]


def _after_prefix(text: str, prefix: str, word: str) -> list[int] | None:
    if not word or not text.startswith(prefix):
        return None
    start = len(prefix) + len(text[len(prefix):]) - len(text[len(prefix):].lstrip())
    end = start + len(word)
    if text[start:end] != word or (end < len(text) and (text[end].isalnum() or text[end] == "_")):
        return None
    return [start, end]


def load_multiblimp(lang: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """The MultiBLiMP 1.0 pairs (Jumelet et al., 2025) of one language, ``lang`` one of
    :data:`MULTIBLIMP_LANGUAGES` (``eng ell nld tur``; the ``lang`` column is ISO 639-1):
    ``good`` is ``sen``, ``bad`` ``wrong_sen``; pivots on the swapped word (module docstring).
    ``pair_id`` is the data row's 0-based index, ``subset`` the ``phenomenon`` (``SV-#`` number,
    ``SV-P`` person, ``SV-G`` gender agreement of subject and verb; ``SP-*`` subject and
    participle); ``extra`` holds ``verb``, ``verb_idx``, ``cop``, ``cop_idx``, ``swap_head``,
    ``child``, ``grammatical_feature``, ``ungrammatical_feature`` and ``pivot_source``. The
    official scorer sums token log-probabilities.

    Raises:
        DataError: unknown language, a header without the fields, a row with another number of
            cells, an empty sentence (file, row and field named). ChecksumError: as BLiMP.
    """
    if lang not in MULTIBLIMP_LANGUAGES:
        raise DataError(f"unknown MultiBLiMP language {lang!r}; known: "
                        f"{list(MULTIBLIMP_LANGUAGES)} (ISO 639-3, as the dataset names them)")
    path = data.dataset_file("multiblimp", f"{lang}/data.tsv", data_dir, verify)
    rows = []
    for no, rec in _dict_rows(path, _MULTIBLIMP_FIELDS, delimiter="\t"):
        good = data.require(rec, "sen", path, no)
        bad = data.require(rec, "wrong_sen", path, no)
        changed = rec["cop"].strip() or data.require(rec, "verb", path, no)
        gc = _after_prefix(good, rec["prefix"], changed)
        bc = _after_prefix(bad, rec["prefix"], rec["swap_head"].strip())
        gp, bp = ([gc], [bc]) if gc and bc else data.pivotal_spans(good, bad)
        extra = {k: rec.get(k, "") for k in ("verb", "verb_idx", "cop", "cop_idx", "swap_head",
                                             "child", "grammatical_feature",
                                             "ungrammatical_feature")}
        rows.append({"pair_id": str(no - 1), "dataset": "multiblimp",
                     "subset": rec["phenomenon"], "good": good, "bad": bad,
                     "good_pivots": gp, "bad_pivots": bp, "source_row": no,
                     "lang": MULTIBLIMP_LANGUAGES[lang],
                     "extra": json.dumps({**extra, "pivot_source": "cue" if gc and bc else
                                          "difference"}, ensure_ascii=False)})
    return _frame(rows, path, f"multiblimp:{lang}")


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


# --------------------------------------------------------------------------- the chapter's tables

def chapter_tasks(clams_languages, constructions, turblimp, sling, blimp) -> list[str]:
    """The task names of the chapter's parameters (CLAMS languages × constructions, TurBLiMP
    phenomena, SLING paradigms, BLiMP phenomena for the English reference)."""
    return ([f"clams:{lang}:{c}" for lang in clams_languages for c in constructions]
            + [f"turblimp:{p}" for p in turblimp] + [f"sling:{p}" for p in sling]
            + [f"blimp:{p}" for p in blimp])
