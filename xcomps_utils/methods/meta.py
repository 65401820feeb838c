"""*Meta*: metalinguistic prompting (Hu & Levy, 2023; as used by XCOMPS, He et al., 2025).

The model is asked, in the pair's own language, which of the two concepts has the property, and
the log-probabilities of the two answers are compared as continuations of the prompt::

    Question: Which one can fly: a robin or a penguin?
    Answer: a robin        <- log p(" a robin" | prompt)   vs   log p(" a penguin" | prompt)

Both option orders are presented and each answer's log-probability is averaged over the two,
cancelling position bias. Answer tokens come from encoding prompt + answer together
(:func:`xcomps_utils.lm.scoring.continuation_scores`). The probability mass the two answers take of
the whole vocabulary, ``p(good) + p(bad)``, is reported: a low mass means the model would rather
say something else, and the comparison then means little.

The templates, one per language of the language table (17 XCOMPS languages and English), are
package data, ``data/meta_templates.json``: question, answer cue, whether a
space separates cue and answer, and the option rule (which determiners may stand before the
concept in a sentence's subject prefix, how its sentence-initial capital is undone). Each names
its source and review status; all are the project's own wording, not reviewed by native
speakers (the XCOMPS paper's Figure 2 prompts are not in the stored paper text).

**BMLAMA facts** (tasks ``bmlama17:<lang>``, ``bmlama53:<lang>``; :mod:`xcomps_utils.pairs.bmlama`)
get a question of their own that lists *all* of the fact's candidates, the fact's prompt shown
with a blank for ``<mask>``; each candidate is scored as the answer::

    Question: Which option fills the blank in this sentence: "William Thomson, 1st Baron Kelvin
    was born in ___."? Options: Moscow, Geneva, Madrid, ..., Belfast.
    Answer: Belfast        <- log p(" Belfast" | prompt)   vs   log p(" Moscow" | prompt) ...

Why all candidates rather than gold vs one distractor: BMLAMA asks which of a fact's 2 to 10
candidates is true (its score is the gold's rank among them), and Direct's pairs of a fact hold
that rank; a question with the whole list keeps the same task, and a fact costs two prompts
instead of two per distractor. The list is given in the file's order and reversed (``order`` 0
and 1), and each answer's log-probability is averaged over the two, so every candidate's mean
position in the list is the same, ``(k - 1) / 2`` (the first-order position bias cancels, as
with XCOMPS' two orders). A pair's ``good`` answer is the gold, its ``bad`` the pair's
distractor, both continuations of the same prompt; so the per-pair measures are those of the
XCOMPS Meta, and a fact is answered right when all its pairs are. As in Direct, a longer
candidate pays for its extra tokens; pairs with ``distractor_true`` have two true options.

The templates are ``data/bmlama_meta_templates.json`` (:func:`load_bmlama_meta_templates`),
for the 17 BMLAMA-17 languages (ar ca el en es fa fr he hu ja ko nl ru tr uk vi zh) and de, it,
pt of BMLAMA-53; another language is refused before any model loads, naming those that have one
(:func:`check_bmlama_languages`). The answer cues are those of ``meta_templates.json``; the
wording is the project's own and **no template was reviewed by a native speaker**. The file's
SHA-256 enters the run key of BMLAMA Meta runs only (XCOMPS run keys are unchanged).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import string
from pathlib import Path

import numpy as np
import pandas as pd

from ..pairs.data import DataError
from ..paths import resources_dir

__all__ = ["TEMPLATE_FIELDS", "PLACEHOLDERS", "LOWERCASE_RULES", "meta_templates_file",
           "load_meta_templates", "meta_templates_sha256", "meta_template_table", "option_text",
           "build_meta_prompts", "score_meta", "meta_template", "META_COLUMNS",
           "BMLAMA_META_COLUMNS", "bmlama_meta_templates_file", "load_bmlama_meta_templates",
           "bmlama_meta_templates_sha256", "check_bmlama_languages", "build_bmlama_prompts",
           "bmlama_rows", "Meta"]

from dataclasses import dataclass  # noqa: E402

from typing import Annotated  # noqa: E402

from pydantic import Field, Strict, StringConstraints  # noqa: E402

from ..declare import Declared, Flag, ParameterError, validate  # noqa: E402
from .base import Method, long_measures  # noqa: E402


# --- Meta templates (data/meta_templates.json) ---------------------------------

#: A template's text: a string with a character other than whitespace.
Text = Annotated[str, Strict(), StringConstraints(pattern=r"\S"),
                 Field(json_schema_extra={"must": "a string that is not blank"})]


class MetaTemplate(Declared):
    """One language's metalinguistic prompt template (see
    :func:`xcomps_utils.methods.meta.load_meta_templates` for the fields' meaning); the loader's rules
    (placeholders, braces, lowercasing) run after these types."""

    question: Text
    answer: Text
    space: Flag
    determiners: Annotated[list, Strict()]
    lowercase: Text
    lowercase_map: Annotated[dict, Strict()]
    options: Text
    source: Text
    review: Text


def _checked(model, t, where: str) -> None:
    """``t`` validated by ``model``, else :class:`DataError` naming the file, the language and
    the field (:class:`~xcomps_utils.declare.ParameterError`'s form)."""
    try:
        validate(model, t, where, noun="field")
    except ParameterError as err:
        raise DataError(str(err)) from None


# --- Meta templates for BMLAMA (data/bmlama_meta_templates.json) -------------------------------

class BmlamaMetaTemplate(Declared):
    """One language's Meta template for BMLAMA facts (see
    :func:`xcomps_utils.methods.meta.load_bmlama_meta_templates`); the loader checks the placeholders
    after these types."""

    question: Text
    answer: Text
    space: Flag
    separator: Annotated[str, Strict()]
    blank: Text
    source: Text
    review: Text


#: The columns Meta reads of XCOMPS pairs (besides ``good``, ``bad``).
META_COLUMNS = ("property_phrase", "acceptable_concept", "unacceptable_concept",
                "prefix_acceptable", "prefix_unacceptable")
#: The columns Meta reads of BMLAMA pairs (:func:`xcomps_utils.pairs.bmlama.load_bmlama`).
BMLAMA_META_COLUMNS = ("prompt", "gold", "candidate", "candidates")

#: Fields of a template (their types: :class:`MetaTemplate`).
TEMPLATE_FIELDS = tuple(MetaTemplate.model_fields)
#: The placeholders of a question, each exactly once.
PLACEHOLDERS = ("property_phrase", "option_1", "option_2")
#: How a prefix's sentence-initial capital is undone.
LOWERCASE_RULES = ("first", "determiner", "none")


def meta_templates_file() -> Path:
    """``data/meta_templates.json``."""
    return resources_dir() / "meta_templates.json"


def meta_templates_sha256(path=None) -> str:
    """SHA-256 of the template file (for a run's key: new wording, new run)."""
    return hashlib.sha256(Path(path or meta_templates_file()).read_bytes()).hexdigest()


def _braces(text: str) -> bool:
    return "{" in text or "}" in text


def _validate(path, lang: str, t) -> dict:
    """The template ``t`` if it is valid: the declared fields and types
    (:class:`MetaTemplate`), then the placeholders, braces and rules.

    Raises:
        DataError: names the file, the language and the field.
    """
    where = f"{path}, language {lang!r}"
    _checked(MetaTemplate, t, where)
    q = t["question"]
    try:
        parsed = list(string.Formatter().parse(q))
    except ValueError as exc:
        raise DataError(f"{where}, field 'question': stray brace ({exc})") from exc
    names = [name for _, name, _, _ in parsed if name is not None]
    if any(_braces(lit) for lit, *_ in parsed):  # "{{" / "}}": a literal brace
        raise DataError(f"{where}, field 'question': stray brace (a literal '{{' or '}}')")
    if any(spec or conv for _, name, spec, conv in parsed if name is not None):
        raise DataError(f"{where}, field 'question': placeholders take no format spec or "
                        f"conversion")
    if sorted(names) != sorted(PLACEHOLDERS):
        want = ", ".join("{" + n + "}" for n in PLACEHOLDERS)
        raise DataError(f"{where}, field 'question': placeholders {names}, expected exactly "
                        f"{want}, each once")
    for field in ("question", "answer"):
        if t[field] != t[field].strip():
            raise DataError(f"{where}, field {field!r}: leading or trailing whitespace (the "
                            f"separator is the 'space' field)")
    if _braces(t["answer"]):
        raise DataError(f"{where}, field 'answer': stray brace in {t['answer']!r}")
    for d in t["determiners"]:
        if not isinstance(d, str) or not d.strip() or _braces(d) or d != d.lstrip():
            raise DataError(f"{where}, field 'determiners': {d!r} is not a determiner (text, "
                            f"no braces, no leading whitespace)")
    if t["lowercase"] not in LOWERCASE_RULES:
        raise DataError(f"{where}, field 'lowercase': {t['lowercase']!r} is not one of "
                        f"{list(LOWERCASE_RULES)}")
    if t["lowercase"] == "determiner" and not t["determiners"]:
        raise DataError(f"{where}, field 'lowercase': 'determiner' needs determiners")
    for k, v in t["lowercase_map"].items():
        if not k or not isinstance(v, str) or not v:
            raise DataError(f"{where}, field 'lowercase_map': {k!r} -> {v!r} is not a mapping "
                            f"of non-empty texts")
    return t


def _read_templates(path: str, what: str) -> dict:
    """A template file's JSON object, with its ``templates`` object checked (DataError naming the
    file otherwise)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DataError(f"no {what} file {path}") from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("templates"), dict):
        raise DataError(f"{path}: expected an object with a 'templates' object "
                        f"(language code -> template)")
    return data


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict:
    data = _read_templates(path, "metalinguistic template")
    from ..pairs.xcomps import languages

    known = set(languages()["iso"])
    out = {}
    for lang, t in data["templates"].items():
        if lang not in known:
            raise DataError(f"{path}, language {lang!r}: not in the language table "
                            f"data/languages.csv")
        out[lang] = _validate(path, lang, t)
    return out


def load_meta_templates(path=None) -> dict[str, dict]:
    """Every metalinguistic template, validated: ``{language code: template}``.

    A template has ``question`` (exactly the placeholders ``{property_phrase}``, ``{option_1}``,
    ``{option_2}``, each once, no other braces), ``answer`` (the answer cue), ``space`` (bool:
    a space between cue and option), ``determiners`` and ``lowercase``/``lowercase_map`` (the
    option rule, see :func:`option_text`), ``options`` (the rule in words), ``source`` and
    ``review``.

    Args:
        path: the template file (default :func:`meta_templates_file`).

    Raises:
        DataError: a missing or malformed file, a language not in the language table, or a
            template with a missing, empty, mistyped or unknown field, wrong placeholders or a
            stray brace (the message names the file, language and field).
    """
    path = Path(path or meta_templates_file())
    mtime = path.stat().st_mtime if path.exists() else 0.0
    return copy.deepcopy(_load(str(path), mtime))  # callers may edit their copy


def meta_template_table(path=None) -> pd.DataFrame:
    """The templates as a table for the book: one row per language (index ``lang``) with its
    name, question, answer cue, space, determiners, source and review."""
    from ..pairs.xcomps import languages

    names = languages().set_index("iso")["name"]
    rows = [{"lang": lang, "language": names.get(lang, ""), "question": t["question"],
             "answer cue": t["answer"], "space before answer": t["space"],
             "determiners": ", ".join(d.strip() for d in t["determiners"]) or "(none)",
             "source": t["source"], "review": t["review"]}
            for lang, t in sorted(load_meta_templates(path).items())]
    return pd.DataFrame(rows).set_index("lang")


def _lower_initial(text: str, t: dict) -> str:
    rule = t["lowercase"]
    if rule == "none":
        return text
    if rule == "determiner" and not any(text[:len(d)].lower() == d for d in t["determiners"]):
        return text
    for cap in sorted(t["lowercase_map"], key=len, reverse=True):
        if text.startswith(cap):
            return t["lowercase_map"][cap] + text[len(cap):]
    return text[:1].lower() + text[1:]


def option_text(prefix: str, concept: str, template: dict) -> str:
    """An answer option: the sentence's subject prefix, its sentence-initial capital undone by
    the template's ``lowercase`` rule (``lowercase_map`` first: Turkish ``I`` -> ``ı``), if it
    is the concept preceded by zero or more of the template's ``determiners``; otherwise, or
    when there is no prefix, the concept as written.

    ``"A robin"`` -> ``"a robin"``; German ``"Ein Rotkehlchen"`` -> ``"ein Rotkehlchen"``;
    Turkish ``"Bir kızılgerdanın"`` (genitive) -> the concept ``"kızılgerdan"``; Japanese
    ``"コマドリは"`` (topic particle) -> ``"コマドリ"``; Arabic ``"البطريق"`` -> ``"البطريق"``.

    Args:
        prefix: ``prefix_acceptable``/``prefix_unacceptable`` (may be empty).
        concept: ``acceptable_concept``/``unacceptable_concept``.
        template: from :func:`load_meta_templates`.
    """
    concept = concept.strip()
    prefix = prefix.strip() if isinstance(prefix, str) else ""
    if prefix:
        lowered = rest = _lower_initial(prefix, template)
        while True:
            if rest == concept:
                return lowered
            d = next((d for d in template["determiners"]
                      if rest.startswith(d) and len(rest) > len(d)), None)
            if d is None:
                break
            rest = rest[len(d):]
    return concept


def _chat_context(tokenizer, question: str, answer_cue: str) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise ParameterError("use_chat_template", "False for this model (its tokenizer has no "
                             "chat template)", True)
    text = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                         add_generation_prompt=True, tokenize=False)
    bos = tokenizer.bos_token
    if bos and text.startswith(bos):  # scoring adds exactly one BOS itself
        text = text[len(bos):]
    return text + answer_cue


def meta_template(lang: str, path=None) -> dict:
    """The metalinguistic (Meta) template of a language, from the one template file
    ``data/meta_templates.json`` (validated on load, see
    :func:`load_meta_templates`): ``question`` with ``{property_phrase}``, ``{option_1}``,
    ``{option_2}``; ``answer`` (the answer cue); ``space`` (whether a space separates the cue
    from the option); the option rule ``determiners``, ``lowercase``, ``lowercase_map`` (see
    :func:`option_text`); ``options``, ``source``, ``review``.

    Raises:
        DataError: no template for the language (names the file), or an invalid template file.
    """
    templates = load_meta_templates(path)
    if lang not in templates:
        raise DataError(f"{path or meta_templates_file()}: no metalinguistic template for "
                        f"language {lang!r}; it has {sorted(templates)}")
    return templates[lang]


def build_meta_prompts(pairs: pd.DataFrame, use_chat_template: bool = False,
                       tokenizer=None) -> pd.DataFrame:
    """Two prompts per pair (``order`` 0: acceptable option first, 1: second) with the context
    and the two answer continuations (``answer_good``, ``answer_bad``). BMLAMA pairs (with
    :data:`BMLAMA_META_COLUMNS`, without XCOMPS' :data:`META_COLUMNS`) get
    :func:`build_bmlama_prompts`.

    Raises:
        DataError: no template for a language, or an invalid template file (see
            :func:`load_meta_templates`); ValueError: chat template requested but missing.
    """
    bm = bmlama_rows(pairs)
    if bm.any():  # BMLAMA rows (all, or those of a frame concatenated with XCOMPS pairs)
        parts = [build_bmlama_prompts(pairs[bm], use_chat_template, tokenizer)]
        if not bm.all():
            parts.append(build_meta_prompts(pairs[~bm], use_chat_template, tokenizer))
        for part, rows in zip(parts, (np.flatnonzero(bm), np.flatnonzero(~bm))):
            part["pair"] = rows[part["pair"].to_numpy()]
        return pd.concat(parts).sort_values(["pair", "order"]).reset_index(drop=True)
    rows = []
    templates = {lang: meta_template(lang) for lang in pairs["lang"].unique()}
    for i, r in enumerate(pairs.itertuples(index=False)):
        t = templates[r.lang]
        good = option_text(getattr(r, "prefix_acceptable", ""), r.acceptable_concept, t)
        bad = option_text(getattr(r, "prefix_unacceptable", ""), r.unacceptable_concept, t)
        sep = " " if t["space"] else ""
        for order, (o1, o2) in enumerate(((good, bad), (bad, good))):
            question = t["question"].format(property_phrase=r.property_phrase, option_1=o1,
                                            option_2=o2)
            if use_chat_template:
                context = _chat_context(tokenizer, question, t["answer"])
            else:
                context = question + "\n" + t["answer"]
            rows.append({"pair": i, "order": order, "context": context,
                         "answer_good": sep + good, "answer_bad": sep + bad})
    return pd.DataFrame(rows)


def score_meta(lm, pairs: pd.DataFrame, use_chat_template: bool = False, **kwargs) -> pd.DataFrame:
    """The Meta method on XCOMPS pairs (from :func:`xcomps_utils.pairs.xcomps.load_xcomps`) or BMLAMA
    pairs (:func:`xcomps_utils.pairs.bmlama.load_bmlama`; prompts of :func:`build_bmlama_prompts`).

    Each prompt is computed once for its two answers (shared prefix, see
    :func:`xcomps_utils.lm.scoring.continuation_scores`, which takes the keyword arguments:
    ``batch_size``, ``token_budget``, ``progress``; resuming is the results store's job).

    Returns:
        ``pairs`` plus ``meta_good``/``meta_bad`` (answer log-probabilities in nats, mean over the
        two option orders), ``meta_delta``, ``meta_correct`` (delta > 0; ties are not correct),
        ``meta_tie``, ``meta_mass`` (mean over orders of p(good) + p(bad)), and per-order
        ``meta_good_0``/``meta_bad_0``/``meta_good_1``/``meta_bad_1``.
    """
    from ..lm.scoring import continuation_scores  # torch, only to compute

    prompts = build_meta_prompts(pairs, use_chat_template, lm.tokenizer)
    contexts = list(prompts["context"]) * 2
    answers = list(prompts["answer_good"]) + list(prompts["answer_bad"])
    # each (prompt, answer) once: a BMLAMA fact's gold answers every pair of the fact
    unique = list(dict.fromkeys(zip(contexts, answers)))
    scores = dict(zip(unique, continuation_scores(lm, [c for c, _ in unique],
                                                  [a for _, a in unique], **kwargs)))
    totals = [scores[k].total for k in zip(contexts, answers)]
    n = len(prompts)
    prompts["lp_good"] = totals[:n]
    prompts["lp_bad"] = totals[n:]
    out = pairs.copy()
    for order in (0, 1):
        sel = prompts[prompts["order"] == order].set_index("pair")
        out[f"meta_good_{order}"] = sel["lp_good"].reindex(range(len(out))).to_numpy()
        out[f"meta_bad_{order}"] = sel["lp_bad"].reindex(range(len(out))).to_numpy()
    out["meta_good"] = (out["meta_good_0"] + out["meta_good_1"]) / 2
    out["meta_bad"] = (out["meta_bad_0"] + out["meta_bad_1"]) / 2
    out["meta_delta"] = out["meta_good"] - out["meta_bad"]
    out["meta_correct"] = out["meta_delta"] > 0
    out["meta_tie"] = out["meta_delta"] == 0
    out["meta_mass"] = np.mean([np.exp(out[f"meta_good_{o}"]) + np.exp(out[f"meta_bad_{o}"])
                                for o in (0, 1)], axis=0)
    return out


# --- BMLAMA --------------------------------------------------------------------------------------

#: The placeholders of a BMLAMA question, each exactly once.
BMLAMA_PLACEHOLDERS = ("statement", "options")


def bmlama_meta_templates_file() -> Path:
    """``data/bmlama_meta_templates.json``."""
    return resources_dir() / "bmlama_meta_templates.json"


def bmlama_meta_templates_sha256(path=None) -> str:
    """SHA-256 of the BMLAMA template file (in the key of BMLAMA Meta runs)."""
    return hashlib.sha256(Path(path or bmlama_meta_templates_file()).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=4)
def _load_bmlama(path: str, mtime: float) -> dict:
    from ..pairs.bmlama import languages

    data = _read_templates(path, "BMLAMA Meta template")
    known = set(languages("bmlama17")) | set(languages("bmlama53"))
    for lang, t in data["templates"].items():
        where = f"{path}, language {lang!r}"
        if lang not in known:
            raise DataError(f"{where}: not a BMLAMA language ({sorted(known)})")
        _checked(BmlamaMetaTemplate, t, where)
        try:
            parsed = list(string.Formatter().parse(t["question"]))
        except ValueError as exc:
            raise DataError(f"{where}, field 'question': stray brace ({exc})") from exc
        names = sorted(n for _, n, _, _ in parsed if n is not None)
        if names != sorted(BMLAMA_PLACEHOLDERS) or any(_braces(lit) for lit, *_ in parsed):
            raise DataError(f"{where}, field 'question': placeholders {names}, expected exactly "
                            f"{{statement}} and {{options}}, each once, and no other brace")
        for field in ("answer", "separator", "blank"):
            if _braces(t[field]):
                raise DataError(f"{where}, field {field!r}: stray brace in {t[field]!r}")
        if not t["separator"]:
            raise DataError(f"{where}, field 'separator': empty")
    return data["templates"]


def load_bmlama_meta_templates(path=None) -> dict[str, dict]:
    """Every BMLAMA Meta template, validated: ``{language code: template}``.

    A template has ``question`` (exactly ``{statement}``, the fact's prompt with ``blank`` for
    ``<mask>``, and ``{options}``, the candidates joined by ``separator``), ``answer`` (the
    answer cue), ``space`` (a space between cue and answer), ``separator``, ``blank``,
    ``source`` and ``review``.

    Raises:
        DataError: a missing or malformed file, a language that is not a BMLAMA language, a
            missing, empty, mistyped or unknown field, wrong placeholders or a stray brace (the
            message names the file, language and field).
    """
    path = Path(path or bmlama_meta_templates_file())
    mtime = path.stat().st_mtime if path.exists() else 0.0
    return copy.deepcopy(_load_bmlama(str(path), mtime))


def check_bmlama_languages(langs, path=None) -> None:
    """Every language of ``langs`` has a BMLAMA Meta template.

    Raises:
        DataError: names the languages without one, the file, and the languages that have one.
    """
    have = load_bmlama_meta_templates(path)
    missing = sorted(set(map(str, langs)) - set(have))
    if missing:
        raise DataError(f"Meta on BMLAMA: no template for language(s) {missing} in "
                        f"{path or bmlama_meta_templates_file()}; templates exist for "
                        f"{sorted(have)} (run Direct or Neuro on the others)")


def bmlama_rows(pairs: pd.DataFrame) -> np.ndarray:
    """Which pairs Meta reads as BMLAMA pairs (``[N]`` bool): those with
    :data:`BMLAMA_META_COLUMNS` filled and no XCOMPS ``property_phrase``."""
    if not set(BMLAMA_META_COLUMNS) <= set(pairs):
        return np.zeros(len(pairs), dtype=bool)
    filled = pairs["candidates"].map(lambda c: isinstance(c, (list, tuple, np.ndarray)))
    if "property_phrase" in pairs:
        filled &= pairs["property_phrase"].isna()
    return filled.to_numpy(dtype=bool)


def build_bmlama_prompts(pairs: pd.DataFrame, use_chat_template: bool = False,
                         tokenizer=None) -> pd.DataFrame:
    """Two prompts per BMLAMA pair, as :func:`build_meta_prompts` returns them: the fact's
    question listing its ``candidates`` in the file's order (``order`` 0) and reversed (1), the
    answers the gold (``answer_good``) and the pair's distractor (``answer_bad``). The pairs of
    one fact share their two contexts (see the module docstring).

    Raises:
        DataError: a language without a template (:func:`check_bmlama_languages`), a pair whose
            gold or distractor is not among its candidates (names the pair); ValueError: chat
            template requested but missing.
    """
    from ..pairs.bmlama import MASK

    check_bmlama_languages(pairs["lang"].unique())
    templates = load_bmlama_meta_templates()
    rows = []
    for i, r in enumerate(pairs.itertuples(index=False)):
        t, cands = templates[r.lang], list(r.candidates)
        if r.gold not in cands or r.candidate not in cands:
            raise DataError(f"pair {r.pair_id} ({r.lang}): gold {r.gold!r} or distractor "
                            f"{r.candidate!r} is not among its candidates {cands}; reload the "
                            f"pairs with xcomps_utils.pairs.bmlama.load_bmlama")
        sep = " " if t["space"] else ""
        for order, listed in enumerate((cands, cands[::-1])):
            question = t["question"].format(statement=r.prompt.replace(MASK, t["blank"]),
                                            options=t["separator"].join(listed))
            context = (_chat_context(tokenizer, question, t["answer"]) if use_chat_template
                       else question + "\n" + t["answer"])
            rows.append({"pair": i, "order": order, "context": context,
                         "answer_good": sep + r.gold, "answer_bad": sep + r.candidate})
    return pd.DataFrame(rows)


# --- the method --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Meta(Method):
    """Meta: the pair as a question whose two answers are scored as continuations.

    Measures per pair and option order (``order`` ``good_first``/``bad_first``):
    ``logprob_good``, ``logprob_bad``; per pair (``order`` empty): their means over the two
    orders, ``delta``, ``correct``, ``tie``, ``near_tie``, ``near_tie_tolerance``,
    ``answer_mass`` (mean of p(good) + p(bad)). XCOMPS pairs, and BMLAMA pairs of the languages
    with a template (:func:`build_bmlama_prompts`).
    """

    shard_size: int = 500
    # XCOMPS pairs read the first seven columns, BMLAMA pairs good, bad and the last four
    # (a column the pairs lack is not in the key: XCOMPS keys are what they were)
    uses: tuple[str, ...] = ("good", "bad", "property_phrase", "acceptable_concept",
                             "unacceptable_concept", "prefix_acceptable", "prefix_unacceptable",
                             "prompt", "gold", "candidate", "candidates")
    needs: str = "xcomps"
    why: str = ("Meta needs XCOMPS or BMLAMA pairs (its question names a concept's property or "
                "a fact's candidates)")
    task_prefixes: tuple[str, ...] = ("xcomps:", "bmlama17:", "bmlama53:")
    parameters: tuple[str, ...] = ("use_chat_template",)
    # the module's functions, looked up when the key is made (as the key's files are read then)
    fingerprints: tuple = (("templates_sha256", lambda: meta_templates_sha256()),)
    pair_fingerprints: tuple = (("candidates", "bmlama_templates_sha256",
                                 lambda: bmlama_meta_templates_sha256()),)

    name = "meta"
    prompts = True
    flags = {"use_chat_template": ("--use-chat-template", False)}
    audit_tolerance = "answer_tokens"

    def check_inputs(self, pairs: pd.DataFrame, params: dict) -> None:
        """BMLAMA pairs have a template for their language; other pairs have
        :data:`META_COLUMNS` (:class:`~xcomps_utils.declare.ParameterError` naming the pairs and
        the first missing column; DataError for a language without a template)."""
        bm = bmlama_rows(pairs)
        if bm.any():
            check_bmlama_languages(pairs.loc[bm, "lang"].unique())
        if not bm.all():
            need = [c for c in META_COLUMNS if c not in pairs]
            if need:
                raise ParameterError("pairs", "XCOMPS pairs (xcomps_utils.pairs.xcomps."
                                     "load_languages) or BMLAMA pairs (tasks bmlama17:<lang>, "
                                     "bmlama53:<lang>) for Meta", hint=f"these lack {need}")

    def token_counts(self, lm, pairs: pd.DataFrame, params: dict):
        """Per pair, the tokens of each answer (tokenized alone, plus one: a token straddling
        the prompt/answer boundary is scored as part of the answer): ``(good, bad)`` arrays."""
        first = build_meta_prompts(pairs.reset_index(drop=True), params["use_chat_template"],
                                   lm.tokenizer).query("order == 0").set_index("pair")
        return tuple(np.array([len(lm.tokenizer(first.at[i, a], add_special_tokens=False)
                                   ["input_ids"]) + 1 for i in range(len(pairs))])
                     for a in ("answer_good", "answer_bad"))

    def compute_shard(self, lm, pairs: pd.DataFrame, params: dict) -> tuple[pd.DataFrame, dict]:
        """:func:`score_meta` of the pairs, as long measures (no details)."""
        from ..lm.precision import near_ties, pair_tolerance

        p = params
        m = score_meta(lm, pairs.reset_index(drop=True), use_chat_template=p["use_chat_template"],
                       token_budget=p["token_budget"], batch_size=p["batch_size"])
        # tokens in delta, for float32's per-token tolerance
        n_tokens = np.add(*self.token_counts(lm, pairs, p))
        name = getattr(lm, "name", None)
        frames = [long_measures(pairs, self.name, {"logprob_good": m[f"meta_good_{o}"],
                                                   "logprob_bad": m[f"meta_bad_{o}"]}, order=order)
                  for o, order in enumerate(("good_first", "bad_first"))]
        frames.append(long_measures(pairs, self.name, {
            "logprob_good": m["meta_good"], "logprob_bad": m["meta_bad"], "delta": m["meta_delta"],
            "correct": m["meta_correct"], "tie": m["meta_tie"], "answer_mass": m["meta_mass"],
            "near_tie": near_ties(m["meta_delta"], lm.dtype, n_tokens, name),
            "near_tie_tolerance": pair_tolerance(lm.dtype, n_tokens, name)}))
        return pd.concat(frames, ignore_index=True), {}
