"""The registry of minimal-pair tasks: what each one reads, how it is loaded and selected.

One table for every consumer (the chapters, the command line, the methods layer): a
:class:`Task` names its data files (for checksums and provenance), its loader, the prompt
wordings of token-level perplexity, and the selection rule that method applies. XCOMPS is here
too, one task per language (``xcomps:<lang>``); a chapter that wants several languages with their
Meta columns loads them with :func:`xcomps_utils.pairs.xcomps.load_languages`.

=================  ===========================================================================
name               pairs
=================  ===========================================================================
``blimp_anaphor``  BLiMP ``anaphor_gender_agreement`` (1,000)
``blimp_animacy``  BLiMP ``animate_subject_passive`` (1,000)
``crows_pairs``    CrowS-pairs, ``good`` = the more stereotypical sentence (1,508)
``dust``           DUST experiment 1, underspecified vs control (2,123)
``nonsense``       generated pseudo-word lists, one with a real word (250, seeded)
``blimp:<name>``   any of the 67 BLiMP phenomena
``clams:<l>:<c>``  CLAMS subject-verb agreement, language ``l`` (en de fr he ru) x construction
                   ``c`` (:data:`xcomps_utils.pairs.grammar.CLAMS_CONSTRUCTIONS`)
``turblimp:<p>``   any of the 16 TurBLiMP phenomena (Turkish, 1,000 pairs each)
``sling:<p>``      any of the 54 SLING paradigms (Mandarin Chinese)
``rublimp:<p>``    any of the 45 RuBLiMP phenomena (Russian, 1,000 pairs each)
``multiblimp:<l>`` MultiBLiMP 1.0 agreement pairs, ``l`` one of ``eng ell nld tur``
``bmlama17:<l>``   BMLAMA-17 facts of one of 17 languages as minimal pairs (6,792 facts, up to 9
                   pairs each: gold vs each distractor; :mod:`xcomps_utils.pairs.bmlama`)
``bmlama53:<l>``   BMLAMA-53, one of 53 languages (3,070 facts)
``bmlama17_control:<l>``  the same candidates in a frame whose subject is another fact's
                   (:func:`xcomps_utils.pairs.bmlama.control_pairs`, seeded by ``seed``); also
                   ``bmlama53_control:<l>``
``xcomps:<lang>``  XCOMPS (COMPS for ``en``) of one language: the sample's 7 languages, else
                   upstream's 17 (:mod:`xcomps_utils.pairs.xcomps`)
=================  ===========================================================================

The grammar tasks (:mod:`xcomps_utils.pairs.grammar`) set ``lang`` on every pair and use BLiMP's
token-level perplexity wordings (English prompts around the pair's sentences); so do the BMLAMA
tasks. A BMLAMA task samples whole facts (:attr:`Task.unit` ``item``): a fact's pairs share its
gold sentence, and its rank among the candidates needs all of them.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Annotated, Callable

import numpy as np
import pandas as pd

from pydantic import AfterValidator

from ..declare import check, Name, Names, ParameterError, Size
from ..errors import did_you_mean
from . import data

__all__ = ["Task", "TASKS", "get", "names", "load", "select", "sample", "sample_units",
           "checksums", "provenance", "counts", "SizeError", "size", "units", "largest",
           "check_size", "xcomps_items", "check_items", "FAMILIES", "family_members", "TaskName",
           "TaskNames"]


@dataclass(frozen=True)
class Task:
    """One minimal-pair task.

    Attributes:
        name: registry name (the ``task`` column of its pairs).
        dataset: the dataset family (``blimp``, ``crows_pairs``, ``dust``, ``nonsense``).
        files: ``(dataset, file name)`` of the data files it reads (none for generated tasks).
        wordings: family of prompt wordings for token-level perplexity
            (``xcomps_utils/methods/wordings.json``).
        selection: the token-level perplexity selection rule, in words.
        description: one line for listings.
        unit: a column whose values :func:`sample` keeps whole (``item``: a BMLAMA fact);
            ``""``: pairs are sampled one by one.
        per_line: the most pairs one line of its files can give (BMLAMA: 9, a row's distractors;
            CLAMS: 0.5, a pair is two lines; else 1), so that the files' lines bound its pairs
            without parsing them (:func:`largest`); ``0``: no such bound (generated tasks,
            XCOMPS' JSON).
        sampler: ``sampler(n, seed, data_dir, verify)``, what :func:`sample_units` draws from
            the unflagged pairs of :func:`load` (``n`` pairs of whole units), computed without
            building the rows it leaves (BMLAMA: :func:`xcomps_utils.pairs.bmlama.sample`);
            ``None``: :func:`sample` loads the task.
    """

    name: str
    dataset: str
    files: tuple[tuple[str, str], ...]
    wordings: str
    selection: str
    description: str
    loader: Callable = None
    selector: Callable = None
    unit: str = ""
    per_line: float = 0
    sampler: Callable = None


def _unflagged(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[~(pairs["identical"] | pairs["duplicate"])].reset_index(drop=True)


def _select_dust(pairs: pd.DataFrame, max_blocks: int = 3) -> pd.DataFrame:
    blocks = np.maximum(pairs["good_pivots"].map(len), pairs["bad_pivots"].map(len))
    keep = ~(pairs["identical"] | pairs["duplicate"]) & (blocks >= 1) & (blocks <= max_blocks)
    return pairs[keep].reset_index(drop=True)


def _select_crows(pairs: pd.DataFrame) -> pd.DataFrame:
    stereo = pairs["extra"].map(lambda e: json.loads(e)["stereo_antistereo"] == "stereo")
    one = (pairs["good_pivots"].map(len) == 1) & (pairs["bad_pivots"].map(len) == 1)
    return pairs[~(pairs["identical"] | pairs["duplicate"]) & stereo & one].reset_index(drop=True)


def _nonsense(seed: int = 0, **_):
    from .nonsense import generate_nonsense

    return generate_nonsense(250, seed=seed)


def _blimp(phenomenon: str, name: str | None = None, description: str | None = None) -> Task:
    return Task(name or f"blimp:{phenomenon}", "blimp", (("blimp", f"{phenomenon}.jsonl"),),
                "blimp", f"all pairs of {phenomenon} without identical or duplicate pairs",
                description or f"BLiMP {phenomenon}",
                lambda data_dir=None, verify=True, **_: data.load_blimp(phenomenon, data_dir, verify),
                _unflagged, per_line=1)


def _require_known(family: str, rest: str, known: list[str]) -> None:
    """Refuse a task name of ``family`` whose part after the colon is not in ``known``."""
    if rest not in known:
        close = did_you_mean(rest, known, n=3)
        raise data.DataError(f"unknown {family} task {rest!r}; "
                             + (f"{close} " if close else "")
                             + f"known: {known[:6]}{' ...' if len(known) > 6 else ''} "
                             f"(`xcomps-study tasks` lists them)")


def _grammar(name: str) -> Task:
    """The :class:`Task` of a CLAMS, TurBLiMP, SLING, RuBLiMP or MultiBLiMP task name (see
    :mod:`.grammar`)."""
    from . import grammar

    family, _, rest = name.partition(":")
    if family == "clams":
        lang, _, construction = rest.partition(":")
        if lang not in grammar.CLAMS_LANGUAGES or construction not in grammar.CLAMS_CONSTRUCTIONS:
            known = grammar.CLAMS_CONSTRUCTIONS
            close = did_you_mean(construction, known, n=2)
            raise data.DataError(
                f"unknown CLAMS task {name!r}: use clams:<lang>:<construction> with lang in "
                f"{list(grammar.CLAMS_LANGUAGES)} and construction in {list(known)}"
                + (f"; {close}" if close else ""))
        files = (("clams", f"{lang}/{construction}.txt"),)
        description = f"CLAMS {lang} {construction} (subject-verb agreement)"
        loader = lambda data_dir=None, verify=True, **_: grammar.load_clams(  # noqa: E731
            lang, construction, data_dir, verify)
    elif family in ("rublimp", "multiblimp"):
        known = (grammar.rublimp_phenomena() if family == "rublimp"
                 else list(grammar.MULTIBLIMP_LANGUAGES))
        _require_known(family, rest, known)
        if family == "rublimp":
            files = (("rublimp", f"datasets/{rest}.csv"),)
            description = f"RuBLiMP {rest} (Russian)"
            load = grammar.load_rublimp
        else:
            files = (("multiblimp", f"{rest}/data.tsv"),)
            description = f"MultiBLiMP {rest} (subject-verb agreement)"
            load = grammar.load_multiblimp
        loader = lambda data_dir=None, verify=True, **_: load(rest, data_dir, verify)  # noqa: E731
    else:
        known = grammar.turblimp_phenomena() if family == "turblimp" else grammar.sling_paradigms()
        _require_known(family, rest, known)
        if family == "turblimp":
            files = (("turblimp", f"augmented_{rest}.csv"),)
            description = f"TurBLiMP {rest} (Turkish)"
            loader = lambda data_dir=None, verify=True, **_: grammar.load_turblimp(  # noqa: E731
                rest, data_dir, verify)
        else:
            files = (("sling", grammar.sling_files()[rest]),)
            description = f"SLING {rest} (Mandarin Chinese)"
            loader = lambda data_dir=None, verify=True, **_: grammar.load_sling(  # noqa: E731
                rest, data_dir, verify)
    return Task(name, family, files, "blimp",
                f"all pairs of {name} without identical or duplicate pairs", description,
                loader, _unflagged, per_line=0.5 if family == "clams" else 1)


def _xcomps(name: str) -> Task:
    """The :class:`Task` ``xcomps:<lang>``: the sample's file where the sample has the
    language, else the pinned upstream file."""
    from . import xcomps

    lang = name.partition(":")[2]
    known = list(dict.fromkeys(xcomps.SAMPLE_LANGUAGES + ["en"] + xcomps.XCOMPS_LANGUAGES))
    if lang not in known:
        close = did_you_mean(lang, known, n=2)
        raise data.DataError(f"unknown XCOMPS language {lang!r} in task {name!r}; "
                             + (f"{close} " if close else "")
                             + f"known: {known}")
    source = "sample" if lang in xcomps.SAMPLE_LANGUAGES else "upstream"
    files = (("xcomps", f"comps_{lang}.json"),) if source == "upstream" and lang != "en" else ()
    return Task(name, "xcomps", files, "", "no token-level perplexity for XCOMPS",
                f"XCOMPS {lang} ({source})",
                lambda data_dir=None, verify=True, **_: xcomps.load_xcomps(  # noqa: E731
                    lang, source, data_dir, verify), _unflagged)


def _bmlama(name: str) -> Task:
    """The :class:`Task` ``bmlama17:<lang>``, ``bmlama53:<lang>`` or their ``_control``."""
    from . import bmlama

    family, _, lang = name.partition(":")
    benchmark = family.removesuffix("_control")
    known = bmlama.languages(benchmark)
    if lang not in known:
        close = did_you_mean(lang, known, n=2)
        raise data.DataError(f"unknown {benchmark} language {lang!r} in task {name!r}; "
                             + (f"{close} " if close else "") + f"known: {known}")
    files = (("bmlama", f"{bmlama.BENCHMARKS[benchmark]}/{lang}.tsv"),)
    if family.endswith("_control"):
        def loader(data_dir=None, verify=True, seed=0, **_):
            return bmlama.control_pairs(bmlama.load_bmlama(benchmark, lang, data_dir, verify),
                                        seed, data_dir)
        what = (f"BMLAMA {benchmark[6:]} {lang}, control: the subject swapped for another "
                f"fact's of the same template (seeded)")
    else:
        def loader(data_dir=None, verify=True, **_):
            return bmlama.load_bmlama(benchmark, lang, data_dir, verify)
        what = f"BMLAMA {benchmark[6:]} {lang}: gold vs each distractor of a fact"
    def sampler(n, seed=0, data_dir=None, verify=True):
        return bmlama.sample(benchmark, lang, family.endswith("_control"), n, seed, data_dir,
                             verify)

    return Task(name, "bmlama", files, "blimp",
                f"all pairs of {name} without identical or duplicate pairs", what, loader,
                _unflagged, unit="item", per_line=9, sampler=sampler)


GRAMMAR_FAMILIES = ("clams", "turblimp", "sling", "rublimp", "multiblimp")
BMLAMA_FAMILIES = ("bmlama17", "bmlama53", "bmlama17_control", "bmlama53_control")

TASKS: dict[str, Task] = {
    "blimp_anaphor": _blimp("anaphor_gender_agreement", "blimp_anaphor",
                            "BLiMP anaphor gender agreement (herself / himself)"),
    "blimp_animacy": _blimp("animate_subject_passive", "blimp_animacy",
                            "BLiMP animate subject, passive (waitresses / picture)"),
    "crows_pairs": Task(
        "crows_pairs", "crows_pairs", (("crows_pairs", "crows_pairs_anonymized.csv"),),
        "crows_pairs",
        "stereo rows only, no duplicates, sentences differing in exactly one contiguous span of "
        "words", "CrowS-pairs: more vs less stereotypical (offensive by design)",
        lambda data_dir=None, verify=True, **_: data.load_crows_pairs(data_dir, verify),
        _select_crows, per_line=1),
    "dust": Task(
        "dust", "dust", (("dust", "experiment_1_data.csv"),), "dust",
        "experiment 1, stripped, no identical/duplicate pairs, sentences differing in 1 to 3 "
        "contiguous blocks of words", "DUST experiment 1: underspecified vs control sentence",
        lambda data_dir=None, verify=True, **_: data.load_dust(data_dir, verify),
        _select_dust, per_line=1),
    "nonsense": Task(
        "nonsense", "nonsense", (), "nonsense",
        "generated: 250 lists of 6 pseudo-words (seeded), one real word swapped in",
        "nonsense control: pseudo-word lists, one with a real word", _nonsense, _unflagged),
}


def names() -> list[str]:
    """The registered task names (``blimp:<phenomenon>``, ``clams:<lang>:<construction>``,
    ``turblimp:<phenomenon>``, ``sling:<paradigm>``, ``rublimp:<phenomenon>``,
    ``multiblimp:<lang>``, ``bmlama17:<lang>``, ``bmlama53:<lang>`` and their ``_control`` are
    accepted besides them)."""
    return list(TASKS)


def get(name: str) -> Task:
    """The :class:`Task` of a name.

    Raises:
        DataError: unknown name (with close matches and the list of names).
    """
    if not isinstance(name, str):
        raise data.DataError(f"a task name must be a string, got {name!r}")
    if name in TASKS:
        return TASKS[name]
    if name.startswith("blimp:"):
        phenomenon = name.split(":", 1)[1]
        if phenomenon not in data.blimp_phenomena():
            known = data.blimp_phenomena()
            hint = (did_you_mean(phenomenon, known, n=3) or
                    f"the {len(known)} phenomena include {', '.join(map(repr, known[:3]))}, ...")
            raise data.DataError(f"unknown BLiMP phenomenon {phenomenon!r}; {hint} "
                                 f"(`xcomps-study tasks` lists the tasks)")
        return _blimp(phenomenon)
    if name.partition(":")[0] in GRAMMAR_FAMILIES:
        return _grammar(name)
    if name.startswith("xcomps:"):
        return _xcomps(name)
    if name.partition(":")[0] in BMLAMA_FAMILIES:
        return _bmlama(name)
    close = did_you_mean(name, names(), n=2)
    raise data.DataError(f"unknown task {name!r}{f'; {close}' if close else ''} "
                         f"Known: {names()} or 'blimp:<phenomenon>', "
                         f"'clams:<lang>:<construction>', 'turblimp:<phenomenon>', "
                         f"'sling:<paradigm>', 'rublimp:<phenomenon>', 'multiblimp:<lang>', "
                         f"'bmlama17:<lang>', 'bmlama53:<lang>', 'xcomps:<lang>'")


def _known(name: str) -> str:
    try:
        get(name)
    except data.DataError as err:
        raise ParameterError("", "a task name (`xcomps-study tasks` lists them)", name,
                             str(err)) from None
    return name


def _each_known(names_: list[str]) -> list[str]:
    for i, name in enumerate(names_):
        try:
            _known(name)
        except ParameterError as err:
            raise err.moved(under=f"[{i}]") from None
    return names_


#: The declared type of a task name (:data:`xcomps_utils.declare.Name` that :func:`get` knows).
TaskName = Annotated[Name, AfterValidator(_known)]
#: The declared type of a list of task names (:data:`xcomps_utils.declare.Names`, each known).
TaskNames = Annotated[Names, AfterValidator(_each_known)]


#: every name family :func:`get` accepts besides :data:`TASKS`: family -> (pattern, what it is)
FAMILIES: dict[str, tuple[str, str]] = {
    "blimp": ("blimp:<phenomenon>", "BLiMP (English)"),
    "clams": ("clams:<lang>:<construction>", "CLAMS subject-verb agreement"),
    "turblimp": ("turblimp:<phenomenon>", "TurBLiMP (Turkish)"),
    "sling": ("sling:<paradigm>", "SLING (Mandarin Chinese)"),
    "rublimp": ("rublimp:<phenomenon>", "RuBLiMP (Russian)"),
    "multiblimp": ("multiblimp:<lang>", "MultiBLiMP 1.0 agreement"),
    "bmlama17": ("bmlama17:<lang>", "BMLAMA-17 facts, gold vs distractor"),
    "bmlama53": ("bmlama53:<lang>", "BMLAMA-53 facts, gold vs distractor"),
    "bmlama17_control": ("bmlama17_control:<lang>", "BMLAMA-17, another fact's subject"),
    "bmlama53_control": ("bmlama53_control:<lang>", "BMLAMA-53, another fact's subject"),
    "xcomps": ("xcomps:<lang>", "XCOMPS (COMPS for en)"),
}


def family_members(family: str) -> list[str]:
    """What a name of ``family`` (a key of :data:`FAMILIES`) may hold after ``<family>:``, from
    the lists :func:`get` checks names against (the manifests in ``data/``; no data file is
    read): ``family_members("bmlama17")[:2] == ["ar", "ca"]``; CLAMS' are ``<lang>:<construction>``.

    Raises:
        DataError: unknown family, or a manifest the list comes from is absent.
    """
    from . import bmlama, grammar, xcomps

    if family == "blimp":
        return data.blimp_phenomena()
    if family == "clams":
        return [f"{lang}:{c}" for lang in grammar.CLAMS_LANGUAGES
                for c in grammar.CLAMS_CONSTRUCTIONS]
    grammatical = {"turblimp": grammar.turblimp_phenomena, "sling": grammar.sling_paradigms,
                   "rublimp": grammar.rublimp_phenomena,
                   "multiblimp": lambda: list(grammar.MULTIBLIMP_LANGUAGES)}
    if family in grammatical:  # what _grammar checks a name against
        return grammatical[family]()
    if family in BMLAMA_FAMILIES:
        return bmlama.languages(family.removesuffix("_control"))
    if family == "xcomps":
        return list(dict.fromkeys(xcomps.SAMPLE_LANGUAGES + ["en"] + xcomps.XCOMPS_LANGUAGES))
    raise data.DataError(f"unknown task family {family!r}; known: {list(FAMILIES)}")


def load(name: str, data_dir=None, verify: bool = True, seed: int = 0) -> pd.DataFrame:
    """Every pair of a task (flagged pairs included, see the ``identical``/``duplicate``
    columns), with a ``task`` column. ``seed`` is used by generated tasks only.

    Raises:
        DataError / ChecksumError: unknown task, missing or altered data file, malformed row.
    """
    task = get(name)
    return task.loader(data_dir=data_dir, verify=verify, seed=seed).assign(task=task.name)


def select(name: str, data_dir=None, verify: bool = True, seed: int = 0) -> pd.DataFrame:
    """The pairs token-level perplexity uses (the task's :attr:`Task.selection` rule; flagged
    pairs are always left out), with a ``task`` column."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)  # flagged pairs are dropped
        pairs = load(name, data_dir, verify, seed)
    return get(name).selector(pairs)


def sample(names_: list[str], n: int | None, seed: int = 0, selection: bool = False,
           data_dir=None) -> pd.DataFrame:
    """``n`` seeded whole pairs of each task, concatenated (see
    :func:`xcomps_utils.pairs.data.sample_pairs`); ``selection=True`` samples from :func:`select`
    (token-level perplexity) instead of every unflagged pair (Direct).

    A task with a :attr:`Task.unit` (BMLAMA: ``item``, a fact) is sampled by whole units: the
    units in a seeded order, up to the first whose pairs bring the total to ``n`` or more (so a
    BMLAMA sample of ``n`` pairs holds at most 8 more than ``n``, and ``n=18`` two facts of 9
    pairs), every unflagged pair of each. A unit's place in the order is a SHA-256 of the seed
    and its id, so the same seed samples the same facts in every language. ``n=None`` keeps
    every pair.

    Raises:
        DataError: unknown task; ValueError: ``n < 1``.
    """
    frames = []
    for name in names_:
        task = get(name)
        if task.sampler is not None and n is not None and (not selection
                                                           or task.selector is _unflagged):
            frames.append(task.sampler(check(Size, n, "n"), seed, data_dir))
            continue
        if selection:
            pool = select(name, data_dir, seed=seed)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", data.DataQualityWarning)
                pool = load(name, data_dir, seed=seed)
        unit = get(name).unit
        frames.append(sample_units(pool, n, seed, unit) if unit and n is not None
                      else data.sample_pairs(pool, n, seed=seed))
    return pd.concat(frames, ignore_index=True)


def sample_units(pool: pd.DataFrame, n: int, seed: int, unit: str) -> pd.DataFrame:
    """Whole units (``unit``: a column, BMLAMA's ``item``, one fact) of ``pool`` in the seeded
    order of :func:`sample`, up to the first whose pairs bring the total to ``n`` or more; the
    pool's identical and duplicate pairs left out. A sample of a sample gives the same units as
    one of the whole pool when ``n`` is within it (the order and each unit's pairs are the same).

    Raises:
        ParameterError: ``n < 1``. Warns :class:`~xcomps_utils.pairs.data.SmallSampleWarning`
        when the pool holds fewer than ``n`` pairs (all of them are returned).
    """
    n = check(Size, n, "n")
    pool = pool[~(pool["identical"] | pool["duplicate"])]
    # the order of a unit depends on its id and the seed alone: the same facts in every language
    units = sorted(pd.unique(pool[unit]).tolist(),
                   key=lambda u: hashlib.sha256(f"{seed}|{u}".encode()).digest())
    sizes = pool[unit].value_counts().reindex(units).to_numpy()
    take = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    keep = set(units[:take])
    if take > len(units):
        warnings.warn(f"asked for {n} pairs, returning {len(pool)}: every {unit} of the task",
                      data.SmallSampleWarning, stacklevel=3)
    return pool[pool[unit].isin(keep)].reset_index(drop=True)


def checksums(names_: list[str]) -> dict[str, str]:
    """``{"<dataset>/<file>": sha256}`` of the manifest entries the tasks read (provenance)."""
    out = {}
    for name in names_:
        for d, f in get(name).files:
            out[f"{d}/{f}"] = data.manifest(d)["files"][f]
    return out


def provenance(pairs: pd.DataFrame) -> dict[str, str]:
    """:func:`checksums` of the tasks a pair set was loaded from (its ``task`` column): what a
    run records of its data. Tasks that are not in the registry (hand-made pairs, XCOMPS pairs
    of :func:`xcomps_utils.pairs.xcomps.load_languages`) name no file."""
    names_ = []
    for name in pd.unique(pairs["task"]) if "task" in pairs else []:
        try:
            get(str(name))
        except data.DataError:
            continue
        names_.append(str(name))
    return checksums(names_)


def counts(sampled: pd.DataFrame, data_dir=None) -> pd.DataFrame:
    """Per task of ``sampled`` (with a ``task`` column): pairs in the file, identical and
    duplicate pairs flagged by the loader, pairs in the sample."""
    rows = []
    for name, sub in sampled.groupby("task", sort=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", data.DataQualityWarning)
            full = load(name, data_dir)
        rows.append({"task": name, "pairs in file": len(full),
                     "identical": int(full["identical"].sum()),
                     "duplicate": int(full["duplicate"].sum()), "sampled": len(sub)})
    return pd.DataFrame(rows).set_index("task")


# --- what a task holds: the bound of a requested size ----------------------------------------------

class SizeError(ParameterError):
    """A requested size (pairs, items, facts) above what the selection holds: the
    :class:`~xcomps_utils.declare.ParameterError` of the parameter, with its bound and why::

        the 'n_pairs' parameter must be an integer from 1 to 59,143 (the pairs bmlama17:vi
        holds) or None (every one); got 1000000000000

    Attributes (besides ``ParameterError``'s): ``parameter`` (its name as given), ``limit``
    (the most allowed), ``holds`` (why, in words).
    """

    def __init__(self, parameter: str, got, limit: int, holds: str, low: int = 1,
                 every: bool = True):
        self.parameter, self.limit, self.holds = parameter, limit, holds
        super().__init__(parameter, f"an integer from {low} to {limit:,} ({holds})"
                         + (" or None (every one)" if every else ""), got)


def _pool(name: str, selection: bool, data_dir, seed: int) -> pd.DataFrame:
    """The pairs :func:`sample` draws from (flagged pairs left out)."""
    if selection:
        return select(name, data_dir, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.DataQualityWarning)
        pool = load(name, data_dir, seed=seed)
    return pool[~(pool["identical"] | pool["duplicate"])]


def size(name: str, selection: bool = False, data_dir=None, seed: int = 0) -> int:
    """The pairs a sample of the task draws from: its unflagged pairs (``selection``: those of
    :func:`select`, token-level perplexity's rule), read through the task's checksummed loader.

    Raises:
        DataError / ChecksumError: as :func:`load`.
    """
    return len(_pool(name, selection, data_dir, seed))


def units(name: str, data_dir=None, seed: int = 0) -> int:
    """The units (:attr:`Task.unit`: a BMLAMA fact) of a task that give at least one unflagged
    pair: the most whole units :func:`sample` can draw (a task without units: :func:`size`)."""
    unit = get(name).unit
    pool = _pool(name, False, data_dir, seed)
    return int(pool[unit].nunique()) if unit else len(pool)


def _most(task: Task, data_dir) -> int | None:
    """An upper bound of a task's pairs from its files' line counts (each file checksummed as
    its loader checks it, none parsed); ``None`` where lines bound nothing (``per_line`` 0)."""
    if not task.per_line or not task.files:
        return None
    lines = 0
    for d, f in task.files:
        lines += data.dataset_file(d, f, data_dir).read_bytes().count(b"\n") + 1
    return int(lines * task.per_line) + 1


def largest(names_: list[str], selection: bool = False, data_dir=None, seed: int = 0,
            enough: int | None = None) -> tuple[str, int]:
    """The task of ``names_`` whose sample pool (:func:`size`) is largest, and that size.

    Only the tasks whose line counts could beat the largest pool found so far are loaded (most
    often one), and no other once a task holds ``enough`` pairs (that task is returned then,
    not always the largest): the check of a chapter's size over dozens of tasks takes about a
    second.
    """
    names_ = list(dict.fromkeys(names_))
    bounds = {n: _most(get(n), data_dir) for n in names_}
    order = ([n for n in names_ if bounds[n] is None]
             + sorted((n for n in names_ if bounds[n] is not None), key=lambda n: -bounds[n]))
    best_name, best = names_[0], -1
    for n in order:
        if bounds[n] is not None and bounds[n] <= best:
            break
        got = size(n, selection, data_dir, seed)
        if got > best:
            best_name, best = n, got
        if enough is not None and best >= enough:
            break
    return best_name, best


def check_size(names_: list[str], n: int | None, parameter: str = "n_pairs", *,
               selection: bool = False, data_dir=None, seed: int = 0) -> None:
    """Refuse ``n`` pairs per task when no task of ``names_`` holds that many (the size asks
    then for nothing that ``None``, every pair, does not say). A task holding fewer than ``n``
    while another of the selection holds ``n`` gives all its pairs: ``n`` is "up to ``n`` per
    task", as every size is.

    Raises:
        SizeError: e.g. ``the 'n_pairs' parameter must be an integer from 1 to 59,143 (the pairs
            bmlama17:vi holds) or None (every one); got 1000000000000``.
    """
    if n is None:
        return
    name, most = largest(names_, selection, data_dir, seed, enough=n)
    if n > most:
        count = len(dict.fromkeys(names_))
        which = name if count == 1 else f"the largest of its {count} tasks, {name},"
        rule = " after token-level perplexity's selection" if selection else ""
        raise SizeError(parameter, n, most, f"the pairs {which} holds{rule}")


def xcomps_items(languages: list[str], source: str = "sample", data_dir=None) -> int:
    """The concept-property items the XCOMPS ``languages`` of ``source`` hold together (what
    :func:`xcomps_utils.pairs.xcomps.load_languages` samples ``items_per_language`` from).

    Raises:
        DataError: an unknown language, a missing or altered file.
    """
    from . import xcomps

    props: set = set()
    for lang in dict.fromkeys(languages):
        props |= set(xcomps.load_xcomps(lang, source, data_dir)["property"])
    return len(props)


def check_items(languages: list[str], n: int | None, source: str = "sample",
                parameter: str = "items_per_language", data_dir=None) -> None:
    """Refuse ``n`` XCOMPS items per language above what the languages hold.

    Raises:
        SizeError: ``the 'items_per_language' parameter must be an integer from 1 to 30 (the
            items XCOMPS' sample holds per language) or None (every one); got 31``.
    """
    if n is None:
        return
    most = xcomps_items(languages, source, data_dir)
    if n > most:
        raise SizeError(parameter, n, most, f"the items XCOMPS' {source} holds per language")
