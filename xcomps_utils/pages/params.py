"""Each chapter's parameters, declared once, and the one check a chapter runs on entry.

A chapter's parameters are a pydantic model in :data:`CHAPTERS`: each field's type (those of
:mod:`xcomps_utils.declare`, which the command line, the sweep files and ``methods.run`` take
too: ``Seed``, ``SampleSize``, ``Device``, ...; ``Literal[...]`` for a chapter's own choices),
default, what it does (``description``) and its values at the Makefile's sizes (``publish``,
``smoke``: where they differ from the default). Everything else is derived from that declaration:

* :func:`check`, the chapter's first call (``params.check(globals(), "direct_scoring")``),
  validates every declared parameter, refuses a name papermill injected that no field declares
  (``-p n_pair 5``), and checks the values only known once data is read (a task name, a wording of
  the task's family, an XCOMPS language of the source, a pair index in range, every list against
  the registry or the benchmark's languages, a size at most what its tasks hold, as the command
  line and the sweep files refuse it: :func:`xcomps_utils.pairs.tasks.check_size`; relations such
  as ``methods_facts <= facts17``), before any data are scored, each failure one
  :class:`~xcomps_utils.declare.ParameterError` of one line;
* :func:`table`, the chapter's visible parameter table (name, value, what it does, publish value)
  under a sentence saying at which sizes the page runs.

* :func:`papermill_parameters` and ``python -m xcomps_utils.pages.params papermill CHAPTER SIZE``,
  what ``make smoke``, ``make book`` and ``make publish`` pass to papermill (``-f``), with the
  chapter's one-line description (``computes``) for make's progress line.

A chapter's ``parameters`` cell repeats the defaults as literals (for the reader, for papermill,
which injects its values after that cell); ``tests/pages/test_params.py`` holds the cell and the
commands the pages print to this declaration.
"""

import ast
import copy
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..declare import (at_least, BosPolicy, Device, Dtype, Flag, MISSING, Models, Names,
                       out_of, ParameterError, SampleSize, Seed, Source, Text, TokenBudget,
                       validate, Wordings, words)
from ..errors import did_you_mean, NotFound
from ..pairs.tasks import TaskName, TaskNames

__all__ = ["ParameterError", "Chapter", "CHAPTERS", "BOOK_STORE", "param", "declaration", "sizes", "check",
           "table", "ParameterTable", "papermill_parameters", "main"]

# The types a chapter's parameters take: those of xcomps_utils.declare (the command line, the
# sweep files and methods.run take the same), and the registry's task names.
Task = TaskName
Tasks = TaskNames
Budget = TokenBudget


def _size(name: str, value, low: int, names: list[str], selection: bool = False,
          every: bool = True) -> None:
    """A size (pairs per task) at most what the largest task of ``names`` holds (the one policy
    of the command line, sweep files and chapters: :func:`xcomps_utils.pairs.tasks.check_size`),
    else its :class:`~xcomps_utils.pairs.tasks.SizeError` (``every``: None allowed)."""
    from ..pairs import tasks

    try:
        tasks.check_size(names, value, name, selection=selection)
    except tasks.SizeError as err:
        raise tasks.SizeError(name, value, err.limit, err.holds, low, every) from None


def _items(name: str, value, languages, source: str = "sample") -> None:
    """XCOMPS items per language at most what ``languages`` of ``source`` hold."""
    from ..pairs import tasks

    tasks.check_items(list(languages), value, source, name)


_SAME = object()


def param(default, what: str, *, publish=_SAME, smoke=_SAME):
    """A parameter's declaration: its default, what it does (the table's words), and its values
    at ``make publish`` and ``make smoke`` where they differ from the default."""
    extra = {k: v for k, v in (("publish", publish), ("smoke", smoke)) if v is not _SAME}
    return Field(default, description=what, **({"json_schema_extra": extra} if extra else {}))


#: What ``models`` is on every page that runs a model (the one model parameter of the book;
#: ``tests/pages/test_params.py`` holds that no chapter declares another); each page adds its
#: rule, where not every method of the page runs on every model.
MODELS = ("the models this page computes and compares (embedded names, local folders or "
          "Hugging Face ids; `xcomps-study study --model` sets it on every page)")
DEVICE = "where it runs: 'auto' is CUDA if available, else CPU"
DTYPE = "precision: 'auto' is bfloat16 on CUDA, float32 on CPU"
BUDGET = "tokens per forward pass: 'auto' from the device's free memory"
STORE = "the results store: a run it holds is read, not recomputed"
N_BOOT = "bootstrap replicates of every interval"
SEED = "seed of the samples drawn (and of Neuro's folds where it runs)"
SMOL, GEMMA = "smollm2-135m-instruct", "gemma-3-270m"
SEVEN = ["en", "de", "fr", "zh", "vi", "tr", "hu"]


class Chapter(BaseModel):
    """A chapter's parameters (strict: papermill's ``-p n 5`` is an int, ``-p n abc`` a string
    that no integer field accepts)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    #: what the chapter computes, in one line (the progress line of make book / smoke / publish)
    computes: ClassVar[str] = ""


class _XcompsLanguages(Chapter):
    """``languages`` out of those the XCOMPS ``source`` has."""

    @model_validator(mode="after")
    def _languages_of_source(self):
        from .choices import xcomps_languages

        allowed, where = xcomps_languages(self.source)
        try:
            out_of("languages", self.languages, allowed)
        except ParameterError as err:
            raise ParameterError(err.name, f"{err.must} ({where})", err.got, err.hint) from None
        if self.source == "sample" and "items_per_language" in type(self).model_fields:
            _items("items_per_language", self.items_per_language, self.languages)
        return self


# --- the chapters ----------------------------------------------------------------------------------

class DirectScoring(Chapter):
    """``notebooks/direct_scoring.md``."""

    computes: ClassVar[str] = "Direct scoring of BLiMP, CrowS-pairs and DUST pairs, each model of `models`"

    models: Models = param([SMOL, GEMMA], MODELS + ": the first scores every task, each other "
                           "the BLiMP pairs beside it", smoke=[SMOL])
    tasks: Tasks = param(["blimp_anaphor", "blimp_animacy", "crows_pairs", "dust"],
                         "the tasks scored (`xcomps-study tasks` lists them)")
    n_pairs: SampleSize = param(150, "pairs per task, a seeded sample (None: all)",
                                         publish=1000, smoke=6)
    token_budget: Budget = param("auto", BUDGET)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    seed: Seed = param(0, SEED)
    bos_policy: BosPolicy = param("bos", "first-token convention (the next chapter compares them)")
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        _size("n_pairs", self.n_pairs, 1, self.tasks)
        return self


class FirstToken(Chapter):
    """``notebooks/first_token.md``."""

    computes: ClassVar[str] = "Direct scoring of one BLiMP task under 3 first-token conventions"

    models: Models = param([SMOL], MODELS + ": each under the three conventions")
    convention_task: Task = param("blimp_anaphor", "the task scored under the three conventions")
    convention_pairs: at_least(1) = param(300, "pairs scored under each convention",
                                           publish=1000, smoke=12)
    token_budget: Budget = param("auto", BUDGET)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    seed: Seed = param(0, SEED)
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        # no None here: the pairs are scored three times each
        _size("convention_pairs", self.convention_pairs, 1, [self.convention_task], every=False)
        return self


class TokenPerplexityMethod(Chapter):
    """``notebooks/token_perplexity_method.md``."""

    computes: ClassVar[str] = "token-level perplexity of one pair by hand (4 wordings x 2 orders)"

    models: Models = param([SMOL], MODELS + ": the pair is worked through with the first")
    task: Task = param("blimp_anaphor", "the task the pair comes from")
    pair_index: at_least(0) = param(0, "which pair of the task file (0: the first)")
    wording: Text = param("grammatical", "the prompts' wording, one of the task family's")
    order: Literal["good_first", "bad_first"] = param("good_first",
                                                      "which label comes first in the prompt")
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        from ..pairs import tasks
        from .choices import wording_ids

        allowed, where = wording_ids(self.task)
        if self.wording not in allowed:
            raise ParameterError("wording", f"one of {', '.join(map(repr, allowed))} ({where})",
                                 self.wording, did_you_mean(self.wording, allowed))
        n = len(tasks.load(self.task))
        if self.pair_index >= n:
            raise ParameterError("pair_index", f"an integer from 0 to {n - 1} (the task "
                                               f"{self.task!r} has {n:,} pairs)", self.pair_index)
        return self


class TokenPerplexityResults(Chapter):
    """``notebooks/token_perplexity_results.md``."""

    computes: ClassVar[str] = "token-level perplexity of 5 tasks x 8 prompt pairs per item, bootstrap claims"

    models: Models = param([SMOL], MODELS + ": the page's figures and claims of the first")
    tasks: Tasks = param(["blimp_anaphor", "blimp_animacy", "dust", "crows_pairs", "nonsense"],
                         "the tasks (`xcomps-study tasks` lists them)")
    items_per_task: SampleSize = param(20, "items per task (None: every selected item, "
                                                    "the paper's size)", publish=200, smoke=2)
    wordings: Wordings = param(
        "all", "the prompt wordings kept ('all', or a list of wording ids)",
        smoke=["grammatical", "specified", "stereotypical", "invented"])
    seed: Seed = param(0, SEED)
    token_budget: Budget = param("auto", BUDGET)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    n_boot: at_least(1) = param(2000, N_BOOT, smoke=200)
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        _size("items_per_task", self.items_per_task, 1, self.tasks, selection=True)
        return self


class XcompsDataset(_XcompsLanguages):
    """``notebooks/xcomps_dataset.md``."""

    computes: ClassVar[str] = "XCOMPS items, languages and Meta templates (no model)"

    source: Source = param("sample", "'sample' (offline, the project's own) or 'upstream' "
                                     "(the real XCOMPS files)")
    languages: Names = param(SEVEN, "the languages shown", smoke=["en", "de"])


SOURCE = "'sample' (offline, the project's own) or 'upstream' (the real XCOMPS files)"
ITEMS = "concept-property items per language (x 4 negative types), of 30 (None: all)"


class XcompsResults(_XcompsLanguages):
    """``notebooks/xcomps_results.md``."""

    computes: ClassVar[str] = "Meta, Direct and Neuro (probe per layer) on XCOMPS, bootstrap claims"

    models: Models = param([GEMMA, SMOL], MODELS + ": `methods` on the first, Direct on each "
                           "other (the claims compare the first two)", smoke=[SMOL])
    source: Source = param("sample", SOURCE)
    languages: Names = param(SEVEN, "the XCOMPS languages scored", smoke=["en", "de"])
    items_per_language: SampleSize = param(24, ITEMS, publish=None, smoke=5)
    methods: Annotated[list[Literal["meta", "direct", "neuro"]], Field(min_length=1)] = param(
        ["meta", "direct", "neuro"], "the methods run")
    controls: Flag = param(True, "beside each model, its untrained control `random:<model>` "
                                 "(the same architecture and tokenizer, the initialiser's "
                                 "weights) by the same methods", smoke=False)
    use_chat_template: Flag = param(False, "Meta's prompt through the tokenizer's chat template")
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    token_budget: Budget = param("auto", BUDGET)
    n_boot: at_least(1) = param(2000, N_BOOT, smoke=200)
    seed: Seed = param(0, SEED)
    store: Text = param("results", STORE)


class XcompsTokenLevel(_XcompsLanguages):
    """``notebooks/xcomps_token_level.md``."""

    computes: ClassVar[str] = "concept vs property tokens of XCOMPS pairs, conditional Direct, each model of `models`"

    models: Models = param([GEMMA, SMOL], MODELS + ": the split, its control and the explorer "
                           "of the first, the concept-prior share of each", smoke=[SMOL])
    source: Source = param("sample", SOURCE)
    languages: Names = param(SEVEN, "the XCOMPS languages scored", smoke=["en", "de"])
    items_per_language: SampleSize = param(24, ITEMS, publish=None, smoke=5)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    token_budget: Budget = param("auto", BUDGET)
    n_boot: at_least(100) = param(1000, N_BOOT, publish=2000, smoke=200)
    seed: Seed = param(0, SEED)
    store: Text = param("results", STORE)


class XcompsTokenLevelAgreement(_XcompsLanguages):
    """``notebooks/xcomps_token_level_agreement.md``."""

    computes: ClassVar[str] = "which XCOMPS items each model knows in every language (reads the Direct run of the token-level page)"

    models: Models = param([GEMMA, SMOL], MODELS + ": the agreement claims of each, the tables "
                           "and figure of the first", smoke=[SMOL])
    source: Source = param("sample", SOURCE)
    languages: Names = param(SEVEN, "the XCOMPS languages compared", smoke=["en", "de"])
    items_per_language: SampleSize = param(24, ITEMS, publish=None, smoke=5)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    token_budget: Budget = param("auto", BUDGET)
    n_boot: at_least(100) = param(1000, N_BOOT, publish=2000, smoke=200)
    seed: Seed = param(0, SEED)
    store: Text = param("results", STORE)


class BmlamaLanguages(Chapter):
    """``notebooks/bmlama_languages.md``."""

    computes: ClassVar[str] = "Direct on BMLAMA-17 and -53 facts and their control frames, each model of `models`; typology; language-level claims"

    models: Models = param([GEMMA, SMOL], MODELS + ": Direct on both benchmarks on each, Meta "
                           "and Neuro on BMLAMA-17 on the first", smoke=[SMOL])
    languages17: Names | None = param(None, "BMLAMA-17 languages (None: all 17)",
                                      smoke=["en", "fr", "vi", "zh", "ja"])
    languages53: Names | None = param(None, "BMLAMA-53 languages (None: all 53)",
                                      smoke=["en", "de", "fr", "vi", "zh"])
    facts17: at_least(2) = param(10, "facts a language on BMLAMA-17 (9 pairs a fact, the same "
                                      "facts in every language)", publish=70, smoke=2)
    facts53: at_least(2) = param(5, "facts a language on BMLAMA-53", publish=20, smoke=2)
    methods_facts: at_least(2) | None = param(
        None, "Meta and Neuro on the first this many of the BMLAMA-17 facts (None: all facts17; "
              "Meta and Neuro cost about a minute a fact on 2 CPU cores)", publish=10)
    controls: Flag = param(True, "beside each model, its untrained control `random:<model>` "
                                 "(the same architecture and tokenizer, the initialiser's "
                                 "weights): Direct on both benchmarks, and the first's Meta and "
                                 "Neuro", smoke=False)
    reduction: Literal["mean", "sum"] = param("mean", "Direct's ranking: 'mean' per token (the "
                                                      "BMLAMA authors') or 'sum' (the project's)")
    value: Literal["pairwise_beyond", "beyond"] = param(
        "pairwise_beyond", "what the claims read: pairwise or top-1 accuracy beyond the control")
    n_boot: at_least(1) = param(2000, N_BOOT, smoke=200)
    n_perm: at_least(1) = param(9999, "permutations of every language-level test", smoke=999)
    seed: Seed = param(0, SEED)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        from ..pairs import bmlama, tasks

        for b, n in (("bmlama17", "17"), ("bmlama53", "53")):
            known = bmlama.languages(b)
            out_of(f"languages{n}", getattr(self, f"languages{n}"), known,
                   f"BMLAMA-{n} languages")
        for b, n in (("bmlama17", "17"), ("bmlama53", "53")):
            facts = getattr(self, f"facts{n}")
            # the files are parallel (data/bmlama.md): the same facts in every language
            most = tasks.units(f"{b}:en")
            if facts > most:
                raise ParameterError(f"facts{n}", f"an integer from 2 to {most:,} (the facts "
                                                  f"BMLAMA-{n} holds per language)", facts)
        if self.methods_facts is not None and self.methods_facts > self.facts17:
            raise ParameterError("methods_facts", f"an integer from 2 to facts17 "
                                                  f"({self.facts17}) or None", self.methods_facts,
                                 "Meta and Neuro run on the first methods_facts of the facts17 "
                                 "facts")
        return self


class GrammarAcrossLanguages(Chapter):
    """``notebooks/grammar_across_languages.md``."""

    computes: ClassVar[str] = "Direct (sum, mean, per byte), pivot share and Neuro on CLAMS, TurBLiMP, SLING, RuBLiMP, MultiBLiMP and BLiMP, each model of `models`"

    models: Models = param([GEMMA, SMOL], MODELS + ": Direct on each, Neuro on the first")
    clams_languages: Names = param(["en", "de", "fr", "he", "ru"], "CLAMS languages",
                                   smoke=["en", "he"])
    constructions: Names = param(
        ["simple_agrmt", "prep_anim", "obj_rel_across_anim"], "CLAMS constructions",
        smoke=["simple_agrmt", "prep_anim"],
        publish=["simple_agrmt", "vp_coord", "long_vp_coord", "prep_anim", "subj_rel",
                 "obj_rel_across_anim", "obj_rel_within_anim"])
    turblimp: Names = param(
        ["binding", "subject_verb_agreement"], "TurBLiMP phenomena", smoke=["binding"],
        publish=["anaphor_agreement", "argument_structure_transitive", "binding", "determiners",
                 "subject_verb_agreement", "suspended_affixation"])
    sling: Names = param(["zai_le", "cl_simple_noun"], "SLING paradigms", smoke=["zai_le"],
                         publish=["zai_le", "cl_simple_noun", "self_male", "any",
                                  "rc_resumptive_noun", "bare_wh"])
    blimp: Names = param(["regular_plural_subject_verb_agreement_1"], "BLiMP phenomena",
                         publish=["regular_plural_subject_verb_agreement_1",
                                  "distractor_agreement_relative_clause"])
    rublimp: Names = param(
        ["noun_subj_predicate_agreement_number", "adposition_government", "np_agreement_case"],
        "RuBLiMP phenomena", smoke=["np_agreement_case"],
        publish=["noun_subj_predicate_agreement_number",
                 "subj_predicate_agreement_number_attractor", "adposition_government",
                 "np_agreement_case", "anaphor_agreement_gender", "negative_concord"])
    multiblimp: Names = param(["eng", "ell", "nld", "tur"], "MultiBLiMP languages",
                              smoke=["eng", "ell"])
    items_per_task: SampleSize = param(20, "pairs per task, each its own item "
                                                    "(None: all)", publish=200, smoke=2)
    xcomps_items: SampleSize = param(2, "XCOMPS sample items per language (x 4 negative "
                                                 "types; None: all 30)", publish=None)
    neuro_pairs_per_language: at_least(4) | None = param(12, "pairs probed per language "
                                                              "(None: all)", publish=200, smoke=6)
    neuro_splits: at_least(2) = param(3, "Neuro's outer folds (inner: 2)", publish=5)
    neuro_languages: Names = param(["en", "zh"], "Neuro's languages", smoke=["en", "he"])
    xcomps_languages: Names = param(["en", "de", "fr", "zh", "tr"], "the XCOMPS sample's "
                                    "languages set beside these tasks", smoke=["en", "de", "zh"])
    n_boot: at_least(100) = param(1000, N_BOOT, publish=2000, smoke=200)
    seed: Seed = param(0, SEED)
    device: Device = param("auto", DEVICE)
    dtype: Dtype = param("auto", DTYPE)
    store: Text = param("results", STORE)

    @model_validator(mode="after")
    def _in_data(self):
        from ..analysis.grammar_study import chapter_tasks
        from ..pairs import data, grammar, xcomps

        lists = {"clams_languages": (grammar.CLAMS_LANGUAGES, "CLAMS languages"),
                 "constructions": (grammar.CLAMS_CONSTRUCTIONS, "CLAMS constructions"),
                 "turblimp": (grammar.turblimp_phenomena(), "TurBLiMP phenomena"),
                 "sling": (grammar.sling_paradigms(), "SLING paradigms"),
                 "blimp": (data.blimp_phenomena(), "BLiMP phenomena"),
                 "rublimp": (grammar.rublimp_phenomena(), "RuBLiMP phenomena"),
                 "multiblimp": (grammar.MULTIBLIMP_LANGUAGES, "MultiBLiMP languages")}
        for name, (known, what) in lists.items():
            known = list(known)
            out_of(name, getattr(self, name), known, what)
        # the languages of the chapter's pairs: what Neuro can probe
        langs = list(dict.fromkeys(
            [*self.clams_languages, grammar.DATASET_LANGUAGES["turblimp"],
             grammar.DATASET_LANGUAGES["sling"], grammar.DATASET_LANGUAGES["blimp"],
             grammar.DATASET_LANGUAGES["rublimp"],
             *(grammar.MULTIBLIMP_LANGUAGES[x] for x in self.multiblimp)]))
        out_of("neuro_languages", self.neuro_languages, langs,
               "languages of the chapter's pairs")
        out_of("xcomps_languages", self.xcomps_languages, xcomps.SAMPLE_LANGUAGES,
               "languages of XCOMPS' sample files")
        names = chapter_tasks(self.clams_languages, self.constructions, self.turblimp,
                              self.sling, self.blimp, self.rublimp, self.multiblimp)
        _size("items_per_task", self.items_per_task, 1, names)
        _items("xcomps_items", self.xcomps_items, self.xcomps_languages)
        return self


class Findings(Chapter):
    """``notebooks/findings.md``."""

    computes: ClassVar[str] = "every claim x model the other chapters printed, in one table (no model; executed last)"

    verdicts: Text | None = param(None, "the folder of the verdicts the chapters wrote (None: "
                                        "`$XCOMPS_VERDICTS`, else book/executed/verdicts)")


class ModelsPage(Chapter):
    """``notebooks/models.md``."""

    computes: ClassVar[str] = ("every model of the store side by side: Direct, Meta, Neuro, the "
                               "verdicts (no model; after the chapters whose verdicts it reads)")

    store: Text = param("store", "the results store read (its complete runs; nothing is computed)")
    verdicts: Text | None = param(None, "the folder of the verdicts the chapters wrote (None: "
                                        "`$XCOMPS_VERDICTS`, else book/executed/verdicts)")
    n_boot: at_least(100) = param(1000, N_BOOT, publish=2000, smoke=200)
    seed: Seed = param(0, "seed of the bootstrap intervals")

    @model_validator(mode="after")
    def _a_store(self):
        from pathlib import Path

        if not (Path(self.store) / "runs").is_dir():
            raise ParameterError("store", "a results store folder (one holding runs/: "
                                 "`xcomps-study ls --store` lists it)", self.store,
                                 f"{self.store!r} holds no runs/")
        return self


class Reproducibility(Chapter):
    """``notebooks/reproducibility.md``."""

    computes: ClassVar[str] = ("build environment, data checksums, the command line twice on 5 "
                               "pairs, the study's plan for the papers' models on one GPU (no "
                               "model)")

    study_size: Literal["smoke", "publish"] = param(
        "smoke", "the chapters' sizes the plan of the papers' models is made at",
        publish="publish")


#: Every chapter's parameters, by the name of its notebook (``notebooks/<name>.md``).
CHAPTERS: dict[str, type[Chapter]] = {
    "bmlama_languages": BmlamaLanguages, "direct_scoring": DirectScoring,
    "findings": Findings, "first_token": FirstToken,
    "grammar_across_languages": GrammarAcrossLanguages, "models": ModelsPage,
    "reproducibility": Reproducibility, "token_perplexity_method": TokenPerplexityMethod,
    "token_perplexity_results": TokenPerplexityResults, "xcomps_dataset": XcompsDataset,
    "xcomps_results": XcompsResults, "xcomps_token_level": XcompsTokenLevel,
    "xcomps_token_level_agreement": XcompsTokenLevelAgreement,
}

#: Where a page writes its runs, not what it computes: left out when sizes are compared.
_NOT_A_SIZE = ("store",)

#: The results store ``make book`` reads (the Makefile's ``SHIP_STORE``, the store the repository
#: ships): the publish column of a parameter table shows it as ``store``'s value.
BOOK_STORE = "store"


def declaration(chapter: str) -> type[Chapter]:
    """The parameter model of ``chapter`` (a notebook's name).

    Raises:
        NotFound: (a ``KeyError``) no chapter has that name (with a did-you-mean).
    """
    if chapter not in CHAPTERS:
        close = did_you_mean(chapter, CHAPTERS)
        raise NotFound(f"no chapter {chapter!r} declares parameters; the chapters: "
                       f"{', '.join(CHAPTERS)}" + (f"; {close}" if close else ""))
    return CHAPTERS[chapter]


def sizes(chapter: str, which: str = "default") -> dict[str, Any]:
    """A chapter's declared parameter values at ``which`` size: ``"default"`` (the parameters
    cell), ``"publish"`` (``make book`` and ``make publish``) or ``"smoke"`` (``make smoke``).

    Raises:
        ParameterError: another ``which``.
    """
    if which not in ("default", "publish", "smoke"):
        raise ParameterError("which", "'default', 'publish' or 'smoke'", which)
    out = {}
    for name, field in declaration(chapter).model_fields.items():
        extra = field.json_schema_extra or {}
        out[name] = copy.deepcopy(extra.get(which, field.default))
    return out


# --- the one check ---------------------------------------------------------------------------------

def _injected(values: dict) -> list[str]:
    """The names papermill injected: the assignments of the kernel's input cells that start
    with papermill's ``# Parameters`` comment (IPython keeps the inputs in ``In``)."""
    names = []
    for source in values.get("In") or []:
        if isinstance(source, str) and source.startswith("# Parameters\n"):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            names += [t.id for node in tree.body if isinstance(node, ast.Assign)
                      for t in node.targets if isinstance(t, ast.Name)]
    return names


def check(values: dict, chapter: str) -> None:
    """Check a chapter's parameters against its declaration in :data:`CHAPTERS`, once, on entry.

    Every declared parameter is checked (its type, and the values only known once data is read:
    task names, a wording of the task's family, XCOMPS languages of the source, a pair index in
    range); a name papermill injected (``-p``, ``-y``) that the chapter does not declare is an
    error too, with a did-you-mean.

    Args:
        values: where the parameters live (a chapter passes ``globals()``).
        chapter: the chapter's name (its notebook, ``notebooks/<chapter>.md``).

    Raises:
        ParameterError: the first wrong parameter, in one line (the form of
            :mod:`xcomps_utils.declare`, where the command line and the sweep files say the
            same), e.g. ``direct_scoring: the 'n_pairs' parameter must be an integer >= 1 or
            None (every one); got 'abc'``; ``direct_scoring: 'n_pair' is not a parameter (the
            chapter's parameters: model, tasks, n_pairs, ...); did you mean 'n_pairs'?``
        DataError: the data a check reads is missing (offline, ``XCOMPS_DATA_DIR`` unset or
            wrong), as :mod:`xcomps_utils.pairs.data` raises it.
    """
    model = declaration(chapter)
    fields = list(model.model_fields)
    for name in _injected(values):
        if name not in model.model_fields:
            raise ParameterError(name, None, hint=did_you_mean(name, fields), where=chapter,
                                 known=f"the chapter's parameters: {', '.join(fields) or 'none'}")
    for name in fields:
        if name not in values:
            raise ParameterError(name, words(model.model_json_schema()["properties"][name]),
                                 MISSING, "the chapter's parameters cell assigns it", chapter)
    try:  # nothing returned: a chapter's cell shows no output for it
        validate(model, {name: values[name] for name in fields}, chapter)
    except ParameterError as err:
        if err.hint.startswith("pass a list: "):  # as papermill takes one
            err.hint = f"pass a list: -y '{{{err.name}: {err.hint.removeprefix('pass a list: ')}}}'"
            err.args = (err.line(),)
        raise


# --- the visible table ------------------------------------------------------------------------------

_SIZES = {"default": "its **default sizes** (the parameters cell, as a notebook run by hand; the "
                     "book is built at the last column, `make book`)",
          "publish": "its **publish sizes** (`make book`, read from the shipped results store "
                     "`store/`), the sizes its verdicts are read at",
          "smoke": "its **smoke sizes** (`make smoke`): a check that the page runs, too small "
                   "for any verdict to mean much"}


@dataclass(frozen=True)
class ParameterTable:
    """A chapter's parameters as a page shows them (Jupyter renders it as Markdown).

    Attributes:
        chapter: the chapter's name.
        size: the declared size the values are closest to: ``"default"``, ``"publish"`` or
            ``"smoke"``.
        differences: the parameters whose value differs from that size's, with the declared
            value (``store`` apart: where runs go, not what they compute).
        rows: ``(name, value, what it does, publish value)`` per parameter, in declared order.
    """

    chapter: str
    size: str
    differences: dict
    rows: tuple

    def sentence(self) -> str:
        """Which sizes the page runs at, in one sentence."""
        text = f"This page runs at {_SIZES[self.size]}"
        if self.differences:
            text += ", except " + ", ".join(f"`{n} = {v!r}` (at {self.size} size: `{d!r}`)"
                                            for n, (v, d) in self.differences.items())
        return text + "."

    def markdown(self) -> str:
        """The sentence and the table, as Markdown."""
        def cell(text) -> str:
            return str(text).replace("|", "\\|")

        lines = [f"**Parameters.** {self.sentence()}"]
        if self.rows:
            lines += ["", "| parameter | value | what it does | publish (`make book`) |",
                      "| --- | --- | --- | --- |"]
            lines += [f"| `{n}` | `{cell(repr(v))}` | {cell(what)} | `{cell(repr(p))}` |"
                      for n, v, what, p in self.rows]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __repr__(self) -> str:  # what a plain-text display shows
        return self.markdown()


def table(values: dict, chapter: str) -> ParameterTable:
    """The chapter's parameters as a table (name, value, what it does, publish value) under a
    sentence saying at which declared size (default, publish, smoke) the page runs and which
    values differ from it; the last expression of a cell, it shows as Markdown.

    Args:
        values: where the parameters live (a chapter passes ``globals()``, after :func:`check`).
        chapter: the chapter's name.
    """
    model = declaration(chapter)
    now = {name: values[name] for name in model.model_fields}
    publish = {**sizes(chapter, "publish"),
               **{n: BOOK_STORE for n in _NOT_A_SIZE if n in model.model_fields}}

    def differences(which):
        declared = sizes(chapter, which)
        return {n: (v, declared[n]) for n, v in now.items()
                if n not in _NOT_A_SIZE and v != declared[n]}

    size = min(("default", "publish", "smoke"), key=lambda w: len(differences(w)))
    rows = tuple((n, v, f.description, publish[n]) for (n, v), f in
                 zip(now.items(), model.model_fields.values()))
    return ParameterTable(chapter, size, differences(size), rows)


# --- what make passes to papermill ------------------------------------------------------------------

def papermill_parameters(chapter: str, which: str, store: str | None = None,
                         **given) -> dict[str, Any]:
    """The parameters ``make`` passes to papermill for ``chapter`` at size ``which``: the declared
    values at that size that differ from the defaults (the parameters cell holds the rest), and
    ``store`` where the chapter declares one and ``store`` is given (where runs go is make's
    ``STORE``, not a size). ``"default"``: none but the store.

    Args:
        given: values that replace the declared ones where the chapter declares the parameter
            and the value is not None (make's ``MODELS``, ``DEVICE``, ``DTYPE``: ``models=[...]``
            sets :data:`MODELS` on every page that runs a model, the study of
            :mod:`xcomps_utils.pages.study`); a chapter that does not declare it is left as it is.

    Raises:
        KeyError: an unknown chapter; ValueError: an unknown size.
    """
    default, at = sizes(chapter), sizes(chapter, which)
    out = {n: v for n, v in at.items() if n not in _NOT_A_SIZE and v != default[n]}
    fields = declaration(chapter).model_fields
    if store is not None and "store" in fields:
        out["store"] = store
    for name, value in given.items():
        if value is not None and name in fields:
            out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m xcomps_utils.pages.params papermill CHAPTER SIZE [--store DIR] [--models NAME
    ...] [--device D] [--dtype T] --out FILE``: write the chapter's papermill parameters at SIZE
    (``default``, ``publish``, ``smoke``) to FILE as YAML (``papermill -f FILE``), ``--models``
    (and ``--device``, ``--dtype``) set where the chapter declares them, and print, in one line,
    what the chapter computes and with which parameters (make's progress line). ``chapters``: the
    declared chapters, one a line.
    """
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m xcomps_utils.pages.params")
    sub = parser.add_subparsers(dest="command", required=True)
    pm = sub.add_parser("papermill", help="a chapter's papermill parameters at a size")
    pm.add_argument("chapter", choices=list(CHAPTERS))
    pm.add_argument("size", choices=["default", "publish", "smoke"])
    pm.add_argument("--store", default=None)
    pm.add_argument("--models", nargs="+", default=None, metavar="NAME",
                    help="the models of every chapter that declares `models`")
    pm.add_argument("--device", default=None)
    pm.add_argument("--dtype", default=None)
    pm.add_argument("--out", required=True)
    sub.add_parser("chapters", help="the declared chapters")
    args = parser.parse_args(argv)
    if args.command == "chapters":
        print("\n".join(CHAPTERS))
        return 0
    values = papermill_parameters(args.chapter, args.size, args.store, models=args.models,
                                  device=args.device, dtype=args.dtype)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(values, f)  # JSON is YAML: papermill -f reads it
        f.write("\n")
    shown = ", ".join(f"{n}={v!r}" for n, v in values.items()) or "the chapter's defaults"
    print(f"{declaration(args.chapter).computes}; parameters: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
