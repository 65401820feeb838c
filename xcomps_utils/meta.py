"""*Meta*: metalinguistic prompting (Hu & Levy, 2023; as used by XCOMPS, He et al., 2025).

The model is asked, in the pair's own language, which of the two concepts has the property, and
the log-probabilities of the two answers are compared as continuations of the prompt::

    Question: Which one can fly: a robin or a penguin?
    Answer: a robin        <- log p(" a robin" | prompt)   vs   log p(" a penguin" | prompt)

Both option orders are presented and each answer's log-probability is averaged over the two,
cancelling position bias. Answer tokens come from encoding prompt + answer together
(:func:`xcomps_utils.scoring.continuation_scores`). The probability mass the two answers take of
the whole vocabulary, ``p(good) + p(bad)``, is reported: a low mass means the model would rather
say something else, and the comparison then means little.

The templates, one per language of the language table (17 XCOMPS languages and English), are
package data, ``data/meta_templates.json``: question, answer cue, whether a
space separates cue and answer, and the option rule (which determiners may stand before the
concept in a sentence's subject prefix, how its sentence-initial capital is undone). Each names
its source and review status; all are the project's own wording, not reviewed by native
speakers (the XCOMPS paper's Figure 2 prompts are not in the stored paper text).
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

from .data import DataError
from .paths import resources_dir
from .scoring import continuation_scores

__all__ = ["TEMPLATE_FIELDS", "PLACEHOLDERS", "LOWERCASE_RULES", "meta_templates_file",
           "load_meta_templates", "meta_templates_sha256", "meta_template_table", "option_text",
           "build_meta_prompts", "score_meta", "meta_template"]

from .config import Invalid, MetaTemplate, nested  # noqa: E402 - the template's declaration

#: Fields of a template (their types: :class:`xcomps_utils.config.MetaTemplate`).
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
    (:class:`xcomps_utils.config.MetaTemplate`), then the placeholders, braces and rules.

    Raises:
        DataError: names the file, the language and the field.
    """
    where = f"{path}, language {lang!r}"
    try:
        nested(MetaTemplate, t)
    except Invalid as err:
        raise DataError(f"{where}, field {err.field!r}: {err.problem}" if err.field
                        else f"{where}: {err.problem}") from None
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


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DataError(f"no metalinguistic template file {path}") from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("templates"), dict):
        raise DataError(f"{path}: expected an object with a 'templates' object "
                        f"(language code -> template)")
    from .xcomps import languages

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
    from .xcomps import languages

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
        raise ValueError("use_chat_template=True but the tokenizer has no chat template")
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
    and the two answer continuations (``answer_good``, ``answer_bad``).

    Raises:
        DataError: no template for a language, or an invalid template file (see
            :func:`load_meta_templates`); ValueError: chat template requested but missing.
    """
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
    """The Meta method on XCOMPS pairs (from :func:`xcomps_utils.xcomps.load_xcomps`).

    Each prompt is computed once for its two answers (shared prefix, see
    :func:`xcomps_utils.scoring.continuation_scores`, which takes the keyword arguments:
    ``batch_size``, ``token_budget``, ``progress``; resuming is the results store's job).

    Returns:
        ``pairs`` plus ``meta_good``/``meta_bad`` (answer log-probabilities in nats, mean over the
        two option orders), ``meta_delta``, ``meta_correct`` (delta > 0; ties are not correct),
        ``meta_tie``, ``meta_mass`` (mean over orders of p(good) + p(bad)), and per-order
        ``meta_good_0``/``meta_bad_0``/``meta_good_1``/``meta_bad_1``.
    """
    prompts = build_meta_prompts(pairs, use_chat_template, lm.tokenizer)
    contexts = list(prompts["context"]) * 2
    answers = list(prompts["answer_good"]) + list(prompts["answer_bad"])
    scores = continuation_scores(lm, contexts, answers, **kwargs)
    n = len(prompts)
    prompts["lp_good"] = [s.total for s in scores[:n]]
    prompts["lp_bad"] = [s.total for s in scores[n:]]
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
