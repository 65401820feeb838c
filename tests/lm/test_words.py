"""Word-level surprisal: every token in exactly one word, words sum to the sentence."""

import numpy as np
import pytest

from xcomps_utils.lm import words as W
from xcomps_utils.lm.scoring import token_scores, TokenScores

# One sentence per script of the XCOMPS sample (Latin, Han, Vietnamese diacritics, Turkish and
# Hungarian suffixes), and the segmentation a caller would give for Chinese.
SENTENCES = {
    "en": "An elephant has a trunk.",
    "de": "Ein Rotkehlchen kann fliegen.",
    "fr": "Un éléphant a une trompe.",
    "zh": "知更鸟会飞。",
    "vi": "Con chim cổ đỏ biết bay.",
    "tr": "Bir şapka başa giyilir.",
    "hu": "Egy elefántnak van ormánya.",
}
ZH_WORDS = ["知更鸟", "会", "飞", "。"]


def _scores(text, offsets, logprobs=None, tokens=None):
    n = len(offsets)
    lp = np.asarray(logprobs if logprobs is not None else -np.arange(1, n + 1, dtype=float))
    return TokenScores(text, np.arange(n), tokens or [f"t{i}" for i in range(n)],
                       np.asarray(offsets), lp, "bos")


@pytest.mark.parametrize("model", ["lm", "gemma"])
def test_words_sum_to_the_sentence_on_real_tokenizations(model, request):
    lm = request.getfixturevalue(model)
    texts = list(SENTENCES.values())
    for s in token_scores(lm, texts):
        seg = ZH_WORDS if s.text == SENTENCES["zh"] else None
        w = W.word_surprisals(s, seg)
        assert w.n_tokens.sum() == len(s.logprobs)  # every token in exactly one word
        assert w.surprisal.sum() == pytest.approx(-s.total, abs=1e-9)
        assert (w.n_tokens >= 1).all() and (w.start.diff().dropna() > 0).all()
        _, index = W.token_word_index(s.text, s.offsets, seg)
        assert (np.diff(index) >= 0).all()  # words are contiguous runs of tokens
        if seg is None and (w.n_words == 1).all():  # whitespace words, none merged
            assert list(w.text) == s.text.split()
    # SmolLM2 spells Han in byte pieces: "知更鸟" still gets all its pieces
    zh = token_scores(lm, [SENTENCES["zh"]])[0]
    w = W.word_surprisals(zh, ZH_WORDS)
    assert w.text.iloc[0].startswith("知更鸟") and w.text.iloc[-1].endswith("。")


def test_hungarian_suffix_stays_with_its_word():
    # "elefántnak" as SmolLM2 cuts it: "Ġele" "f" "Ã¡" "nt" "nak"
    text = "Egy elefántnak van"
    offsets = [(0, 1), (1, 3), (3, 7), (7, 8), (8, 9), (9, 11), (11, 14), (14, 18)]
    w = W.word_surprisals(_scores(text, offsets))
    assert list(w.text) == ["Egy", "elefántnak", "van"]
    assert list(w.n_tokens) == [2, 5, 1]
    assert w.surprisal.tolist() == [3.0, 3 + 4 + 5 + 6 + 7, 8.0]


def test_byte_pieces_of_one_character_share_its_word():
    # SmolLM2 on "知更": two byte pieces per character, both with the character's offsets
    w = W.word_surprisals(_scores("知更", [(0, 1), (0, 1), (1, 2), (1, 2)]), "characters")
    assert list(w.text) == ["知", "更"] and list(w.n_tokens) == [2, 2]


def test_a_space_with_the_first_byte_of_the_next_character_goes_to_that_word():
    # "Bir şapka": "ĠÅ" has offsets (3, 5) (the space and the first byte of ş), "Ł" (4, 5)
    text = "Bir şapka"
    offsets = [(0, 1), (1, 3), (3, 5), (4, 5), (5, 9)]
    assert W.token_boundaries(offsets, len(text)) == [0, 1, 3, 5, 9]
    w = W.word_surprisals(_scores(text, offsets))
    assert list(w.text) == ["Bir", "şapka"] and list(w.n_tokens) == [2, 3]


def test_a_token_across_two_words_merges_them():
    # a tokenizer that fuses 鸟会 ("bird" + "can"): the two words cannot be separated
    w = W.word_surprisals(_scores("知更鸟会飞。", [(0, 2), (2, 4), (4, 5), (5, 6)]), ZH_WORDS)
    assert list(w.text) == ["知更鸟会", "飞", "。"] and list(w.n_words) == [2, 1, 1]
    assert w.surprisal.sum() == pytest.approx(1 + 2 + 3 + 4)


def test_whitespace_only_token_goes_to_the_next_word():
    text = "a  b"
    w = W.word_surprisals(_scores(text, [(0, 1), (1, 2), (2, 4)]))
    assert list(w.n_tokens) == [1, 2]


def test_segmentation_errors_name_the_problem():
    with pytest.raises(ValueError, match="word 1 '飞' .* character 3 .*found '会'"):
        W.word_spans("知更鸟会飞。", ["知更鸟", "飞", "会"])
    with pytest.raises(ValueError, match="leaves character 5"):
        W.word_spans("知更鸟会飞。", ["知更鸟", "会", "飞"])
    with pytest.raises(ValueError, match="overlap"):
        W.word_spans("abcd", [(0, 2), (1, 3)])
    with pytest.raises(ValueError, match="empty"):
        W.word_spans("  ")


def test_a_segmenter_function_and_spans_agree():
    text = "知更鸟会飞。"
    by_func = W.word_spans(text, lambda t: ZH_WORDS)
    assert by_func == W.word_spans(text, [(0, 3), (3, 4), (4, 5), (5, 6)]) == \
        [(0, 3), (3, 4), (4, 5), (5, 6)]


def _union_find_units(text, offsets, words=None):
    """The word units of the hand-written union-find ``token_word_index`` used before scipy's
    ``connected_components`` (kept here as the reference)."""
    spans = W.word_spans(text, words)
    word_of = np.full(len(text), -1, dtype=np.int64)
    for k, (a, b) in enumerate(spans):
        word_of[a:b] = k
    touched = [sorted({int(w) for w in word_of[min(s, int(a)):max(e, int(b))] if w >= 0})
               for (s, e), (a, b) in zip(W.token_spans(offsets, len(text)), np.asarray(offsets))]
    nxt = None
    for i in range(len(touched) - 1, -1, -1):
        if touched[i]:
            nxt = touched[i][0]
        elif nxt is not None:
            touched[i] = [nxt]
    prev = None
    for i in range(len(touched)):
        if touched[i]:
            prev = touched[i][-1]
        else:
            touched[i] = [prev]
    parent = list(range(len(spans)))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for ws in touched:
        for w in ws[1:]:
            ra, rb = find(ws[0]), find(w)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    roots = sorted({find(w) for ws in touched for w in ws})
    units = [(spans[min(k for k in range(len(spans)) if find(k) == r)][0],
              spans[max(k for k in range(len(spans)) if find(k) == r)][1]) for r in roots]
    return units, [roots.index(find(ws[0])) for ws in touched]


@pytest.mark.parametrize("mean_len", [1.5, 3, 8])
def test_units_equal_the_union_find_units_on_real_sentences(data_dir, mean_len):
    """scipy's connected components merge the words the hand-written union-find merged, on the
    real sentences of the XCOMPS sample (seven languages, four scripts; Chinese by character)
    under random tokenizations that often straddle words."""
    from xcomps_utils.pairs import xcomps

    rng = np.random.default_rng(int(mean_len * 10))
    xc = xcomps.load_languages(xcomps.SAMPLE_LANGUAGES).groupby("lang").head(4)
    for r in xc.itertuples():
        for text in (r.good, r.bad):
            cuts = np.flatnonzero(rng.random(len(text)) < 1 / mean_len)
            starts = np.unique(np.concatenate([[0], cuts]))
            offsets = np.stack([starts, np.append(starts[1:], len(text))], axis=1)
            words = (lambda t: [(i, i + 1) for i, ch in enumerate(t) if not ch.isspace()]
                     ) if r.lang == "zh" else None
            units, index = W.token_word_index(text, offsets, words)
            want_units, want_index = _union_find_units(text, offsets, words)
            assert units == want_units and index.tolist() == want_index
