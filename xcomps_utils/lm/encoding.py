"""Turning texts into model inputs, and model inputs into batches.

Shared by every method that runs a model over texts (:mod:`~xcomps_utils.lm.scoring` for Direct,
Meta and token-level perplexity; :mod:`~xcomps_utils.methods.neuro` for hidden states; the benchmarks).

* :func:`encode` tokenizes texts under a first-token convention (``bos_policy``) into
  :class:`Encoded` items: the full input ids, how many leading ids are context only, and the
  character span of every scored token.
* :func:`length_batches` groups items of one exact length up to a token budget, so nothing is
  ever padded (see its docstring for why this matters for exactness).
* :func:`default_token_budget` picks the budget for a device.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from dataclasses import dataclass

import numpy as np

from ..declare import (BatchSize, BOS_POLICIES, BosPolicy, check, ParameterError,
                       ParameterTypeError, TokenBudget)
from ..errors import InputError

__all__ = ["BOS_POLICIES", "Encoded", "check_texts", "check_pair_texts", "fit_context",
           "context_length", "context_token", "encode", "length_batches", "default_token_budget"]

@dataclass
class Encoded:
    """One text as model input.

    Attributes:
        ids: the full input, context ids then the text's token ids.
        n_context: leading ids that are not scored (a BOS, or the unscored first token).
        offsets: ``[n_scored, 2]`` character ``[start, end)`` of each scored token in the text.
    """

    ids: list[int]
    n_context: int
    offsets: np.ndarray


def check_texts(texts, what: str = "texts") -> list[str]:
    """``texts`` as a list of non-empty strings.

    Raises:
        ParameterTypeError: (a ``TypeError``) a bare string (which would otherwise be scored one
            character at a time), or not an iterable.
        ParameterError: an empty or non-string element (names its index).
    """
    if isinstance(texts, (str, bytes)):
        raise ParameterTypeError(what, "a list of strings", texts,
                                 "wrap a single text in a list: [text]")
    try:
        texts = list(texts)
    except TypeError:
        raise ParameterTypeError(what, "a list of strings", texts) from None
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t:
            raise ParameterError(f"{what}[{i}]", "a non-empty string", t)
    return texts


def _invisible(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zs", "Zl", "Zp")


#: Strings that chat and instruction tokenizers read as control tokens (``<|endoftext|>``,
#: ``<|im_start|>``, ``<|eot_id|>``, ...): refused anywhere in a text before any model loads.
#: Once the model is loaded, :func:`fit_context` refuses every special token of its tokenizer.
SPECIAL_TOKEN_PATTERN = re.compile(r"<\|[^<>|\s]{1,40}\|>")


#: what :func:`text_problem` refuses character by character: a control character other than
#: tab, newline and carriage return (Unicode category Cc: U+0000-001F, U+007F-009F) or a lone
#: surrogate (Cs); and a letter or digit (``str.isalnum``, which ``\\w`` is but ``_``)
_REFUSED_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_ALNUM = re.compile(r"[^\W_]")


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def text_problem(text) -> str | None:
    """Why a text cannot be scored as a sentence (``None`` if it can): not a string, empty,
    whitespace only, only invisible characters (zero-width spaces and joiners, BOM, other
    format characters), no letter or digit at all (e.g. only combining marks or punctuation),
    a control character other than tab and newline (NUL among them), a lone surrogate (not
    valid Unicode: no tokenizer encodes it), or a special-token string
    (:data:`SPECIAL_TOKEN_PATTERN`).

    Special tokens are refused, never escaped: a tokenizer reads ``<|endoftext|>`` inside a text
    as one control token, so the text scored would not be the sentence; there is no option to
    score it as literal characters (that would tokenize differently from every other text and
    change what the pair's checksum stands for). Remove or rewrite the string."""
    if not isinstance(text, str):
        return f"not a string ({type(text).__name__})"
    if (_ALNUM.search(text) and not _REFUSED_CHAR.search(text)
            and not SPECIAL_TOKEN_PATTERN.search(text)):
        return None  # a letter or digit, no refused character: the checks below all pass
    if not text:
        return "empty"
    if text.isspace():
        return "whitespace only"
    for i, c in enumerate(text):
        cat = unicodedata.category(c)
        if cat == "Cs":
            return f"not valid Unicode (a lone surrogate, U+{ord(c):04X}, at character {i})"
        if cat == "Cc" and c not in "\t\n\r":
            return f"holding a control character ({_char(c)}, at character {i})"
    if all(_invisible(c) for c in text):
        names = sorted({_char(c) for c in text if not c.isspace()})
        return f"only invisible characters ({', '.join(names[:3])})"
    if not any(c.isalnum() for c in text):
        names = sorted({_char(c) for c in text if not c.isspace()})
        return f"without any letter or digit ({', '.join(names[:3])})"
    special = SPECIAL_TOKEN_PATTERN.search(text)
    if special:
        return (f"holding the special-token string {special.group()!r} (a tokenizer reads it as "
                f"a control token; special tokens are refused, not escaped)")
    return None


def _pair_name(pairs, row) -> str:
    ids = [str(pairs[c].iat[row]) for c in ("task", "lang", "pair_id")
           if c in pairs and str(pairs[c].iat[row])]
    return f"pair {'/'.join(ids)} (row {row})"


def check_pair_texts(pairs, fields=("good", "bad")) -> None:
    """Check the texts of minimal pairs before any work (see :func:`text_problem`).

    Raises:
        InputError: the first bad text, naming the pair (task/lang/pair_id and row) and field.
    """
    for field in fields:
        if field not in pairs:
            continue
        passed = set()  # a text seen and passed (a BMLAMA fact's pairs share their good)
        for row, text in enumerate(pairs[field]):
            if text in passed:
                continue
            problem = text_problem(text)
            if problem is None:
                passed.add(text)
            if problem:
                shown = repr(text) if len(repr(text)) <= 80 else repr(text)[:77] + "..."
                raise InputError(f"{_pair_name(pairs, row)}: {field!r} is {problem}: {shown}; "
                                 f"fix or drop that pair")


def context_length(lm) -> int | None:
    """The model's context in tokens (``max_position_embeddings``; ``None`` if it has none)."""
    cfg = lm.model.config.get_text_config(decoder=True)
    n = getattr(cfg, "max_position_embeddings", None)
    return int(n) if n else None


def fit_context(lm, pairs, fields=("good", "bad"), together: bool = False,
                truncate: bool = False):
    """Check that the texts fit the model: none starts with the BOS (or EOS) string or holds
    any other special token of the tokenizer (refused, not escaped), and every
    scored input (BOS + tokens; ``together``: BOS + the tokens of all ``fields`` of a pair, as
    in the prompts of Meta and token-level perplexity) fits the model's context.

    A text that already starts with the BOS string is an error, not stripped: the scorer adds
    the one BOS itself, and stripping would change the text the pair's id and checksum stand for.

    Args:
        truncate: cut texts that are too long to fit (with a warning naming the pairs) instead
            of failing; a truncated text changes the pairs, so the run's key and id change too.

    Returns:
        the pairs (a copy with the cut texts if anything was truncated).

    Raises:
        InputError: a text starting with the BOS string or holding a special token, or too
            long for the context (names the pair, field, length and context, and
            ``truncate``).
    """
    tok = lm.tokenizer
    for special in {tok.bos_token, tok.eos_token} - {None, ""}:
        for field in fields:
            for row, text in enumerate(pairs[field]):
                if text.startswith(special):
                    raise InputError(
                        f"{_pair_name(pairs, row)}: {field!r} starts with the BOS string "
                        f"{special!r}; remove it (the scorer puts one BOS before every text)")
    found = _special_tokens(tok)
    for field in fields if found is not None else ():
        for row, text in enumerate(pairs[field]):
            hit = found.search(text)
            if hit:
                raise InputError(
                    f"{_pair_name(pairs, row)}: {field!r} holds {hit.group()!r}, a special token "
                    f"of the model's tokenizer, which would read it as a control token; remove "
                    f"it (special tokens are refused, not escaped)")
    ctx = context_length(lm)
    if ctx is None:
        return pairs
    enc = {f: tok(list(pairs[f]), add_special_tokens=False, return_offsets_mapping=True)
           for f in fields}
    lengths = {f: np.array([len(ids) for ids in enc[f]["input_ids"]]) for f in fields}
    total = sum(lengths.values()) if together else None
    limit = (ctx - 1) // len(fields) if together else ctx - 1
    cut = []
    for field in fields:
        for row in range(len(pairs)):
            need = (total[row] if together else lengths[field][row]) + 1
            if need <= ctx or (together and lengths[field][row] <= limit):
                continue
            if not truncate:
                raise InputError(
                    f"{_pair_name(pairs, row)}: {field!r} is {lengths[field][row]:,} tokens, "
                    f"{'with the other texts of its prompt ' if together else ''}{need:,} with "
                    f"BOS: longer than the model's context of {ctx:,} tokens; shorten it, or "
                    f"truncate=True (--truncate) to cut it to {limit:,} tokens")
            cut.append((field, row, int(enc[field]["offset_mapping"][row][limit - 1][1])))
    if not cut:
        return pairs
    pairs = pairs.copy()
    for field, row, end in cut:
        pairs.iloc[row, pairs.columns.get_loc(field)] = pairs[field].iat[row][:end]
    warnings.warn(f"{len(cut)} text(s) longer than the model's context of {ctx:,} tokens cut to "
                  f"{limit:,} tokens: {', '.join(f'{_pair_name(pairs, r)} {f!r}' for f, r, _ in cut[:3])}"
                  f"{' ...' if len(cut) > 3 else ''}", stacklevel=2)
    return pairs


def _special_tokens(tok):
    """One regex of the tokenizer's special tokens (and added tokens marked special)."""
    names = set(getattr(tok, "all_special_tokens", []) or [])
    for added in getattr(tok, "added_tokens_decoder", {}).values():
        if getattr(added, "special", False):
            names.add(str(added))
    names = sorted((n for n in names if n and n.strip()), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, names))) if names else None


def context_token(tokenizer) -> int:
    """The id put before a text: BOS, or EOS for tokenizers without BOS (GPT-2, Qwen).

    Raises:
        InputError: the tokenizer has neither.
    """
    tid = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if tid is None:
        raise InputError("the tokenizer has neither a BOS nor an EOS token; use bos_policy='drop_first'")
    return tid


def encode(tokenizer, texts: list[str], bos_policy: str = "bos") -> list[Encoded]:
    """Encode texts under a first-token convention (see :data:`BOS_POLICIES`).

    Texts are tokenized without special tokens, so there is exactly one BOS whatever the
    tokenizer adds by default.

    Returns:
        ``N`` :class:`Encoded`, input order.

    Raises:
        ParameterError: unknown policy, an empty text (see :func:`check_texts`).
        ParameterTypeError: a bare string instead of a list (see :func:`check_texts`).
        InputError: a text that encodes to no token.
    """
    bos_policy = check(BosPolicy, bos_policy, "bos_policy")
    texts = check_texts(texts)
    if not texts:
        return []
    shift = 1 if bos_policy == "lm_eval" else 0
    enc = tokenizer([" " + t if shift else t for t in texts], add_special_tokens=False,
                    return_offsets_mapping=True)
    out = []
    for i, (ids, offs) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
        if not ids:
            raise InputError(f"text #{i} {texts[i]!r} encodes to no token")
        offs = np.clip(np.asarray(offs, dtype=np.int64).reshape(-1, 2) - shift, 0, None)
        if bos_policy == "drop_first":
            out.append(Encoded(list(ids), 1, offs[1:]))
        else:
            out.append(Encoded([context_token(tokenizer)] + list(ids), 1, offs))
    return out


def length_batches(lengths: list[int], batch_size: int | None, token_budget: int | None
                   ) -> list[list[int]]:
    """Indices in batches of texts of one length, longest first: at most ``batch_size`` texts
    (``None``: no cap) and ``token_budget`` tokens (``None``: no cap; a text longer than the
    budget gets a batch of its own).

    No batch is ever padded. Besides wasting no work, this keeps scores independent of the
    batch: a padded text goes through a longer attention computation than it does alone, which
    rounds differently with or without an attention mask; measured on SmolLM2 in float32, up to
    1.9e-4 nats per token ("Roger could annoy itself.", padded to a longer sentence), against
    3e-6 without padding whatever the batch size (``tests/lm/test_scoring.py``).

    Raises:
        ParameterError: ``batch_size`` or ``token_budget`` not an integer >= 1 or None.
    """
    batch_size = check(BatchSize, batch_size, "batch_size")
    token_budget = check(BatchSize, token_budget, "token_budget")
    cap = batch_size or len(lengths) or 1
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n, []).append(i)
    batches = []
    for n in sorted(by_length, reverse=True):
        step = max(1, min(cap, token_budget // n if token_budget else cap))
        same = by_length[n]
        batches += [same[k:k + step] for k in range(0, len(same), step)]
    return batches


def default_token_budget(lm, held_per_text: int = 0) -> int:
    """Tokens per forward pass (``texts x length``) for a :class:`~xcomps_utils.lm.models.LanguageModel`.

    CPU: 2,048 (measured fastest on 2 cores among 1,024-4,096; ``benchmarks/cpu_scoring.py``).
    CUDA: a quarter of the device's free memory (``torch.cuda.mem_get_info``) divided by an
    estimate of one token's working memory in the model's precision: hidden state, attention
    projections and MLP intermediate of the current layer plus the key/value cache of every
    layer (kept for shared prefixes), clamped to [1,024, 131,072]. Logits do not count: they are
    taken a chunk at a time (:data:`xcomps_utils.lm.scoring.LOGIT_CHUNK_ELEMENTS`).

    Args:
        held_per_text: bytes a caller keeps for every text of a batch until the batch ends (the
            Neuro hooks' ``[L + 1, H]`` float32 last-token states,
            :func:`xcomps_utils.methods.neuro.last_token_states`). Counted per token as
            ``held_per_text / 2``: every text is at least two tokens (BOS and one), so a batch
            of ``budget`` tokens never holds more than ``budget / 2`` texts.
    """
    if lm.device.type != "cuda":
        return 2048
    cfg = lm.model.config.get_text_config(decoder=True)
    h, layers, heads = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads
    inter = getattr(cfg, "intermediate_size", None) or 4 * h
    kv = (getattr(cfg, "num_key_value_heads", None) or heads) * (
        getattr(cfg, "head_dim", None) or h // heads)
    per_token = lm.model.dtype.itemsize * (6 * h + 3 * inter + 2 * kv * (layers + 1))
    per_token += held_per_text // 2
    import torch

    free, _ = torch.cuda.mem_get_info(lm.device)
    return int(min(131072, max(1024, free // 4 // per_token)))


def resolve_token_budget(lm, token_budget, held_per_text: int = 0) -> int | None:
    """``"auto"`` -> :func:`default_token_budget` (``held_per_text`` passed on); an int or
    ``None`` as given.

    Raises:
        ParameterError: anything else (:data:`xcomps_utils.declare.TokenBudget`).
    """
    token_budget = check(TokenBudget, token_budget, "token_budget")
    return default_token_budget(lm, held_per_text) if token_budget == "auto" else token_budget
