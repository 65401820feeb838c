"""Meta in every language: the template file, the option rule, and upstream-shaped files in all
18 languages through :func:`xcomps_utils.methods.meta.build_meta_prompts` and the methods layer."""

import json
import math

import numpy as np
import pytest
import torch

from xcomps_utils.methods import meta
from xcomps_utils.pairs import data, xcomps
from xcomps_utils.pairs.data import DataError
from xcomps_utils.runs.execute import run as run_methods

ALL_LANGUAGES = sorted(xcomps.XCOMPS_LANGUAGES + ["en"])


# --- synthetic upstream-shaped files -------------------------------------------------------------
# Two concept-property items per language, three pairs: "can fly" (robin; taxonomic: penguin;
# random: a stone, iron or lobster) and "lays eggs" (hen; overlap: cow). Shaped like the upstream
# files: data/comps_<lang>.json of XCOMPS, an object item id -> record; English is COMPS
# comps_base.jsonl, one record a line, prefix + property phrase and no sentences. Records of zh
# and ca carry no prefix fields (the concept is then the option); ja and ko prefixes carry the
# topic particle, ar and he prefixes the attached article, tr and nl capitals with their own
# lower-casing.

def _rec(prop, phrase, neg_type, acc, unacc, acc_sent, unacc_sent, acc_prefix=None,
         unacc_prefix=None, similarity=0.5):
    r = {"property": prop, "property_phrase": phrase, "acceptable_concept": acc,
         "unacceptable_concept": unacc}
    if acc_prefix is not None:
        r.update(prefix_acceptable=acc_prefix, prefix_unacceptable=unacc_prefix)
    r.update(acceptable_sent=acc_sent, unacceptable_sent=unacc_sent,
             negative_sample_type=neg_type, similarity=similarity)
    return r


def _three(fly, fly_concepts, fly_sents, eggs, egg_concepts, egg_sents, fly_prefixes=None,
           egg_prefixes=None):
    """{item id: record} for one language: (robin, penguin, random) can fly; (hen, cow) lay eggs."""
    fp = fly_prefixes or (None,) * 3
    ep = egg_prefixes or (None,) * 2
    return {
        "0_taxonomic": _rec("can_fly", fly, "taxonomic", fly_concepts[0], fly_concepts[1],
                            fly_sents[0], fly_sents[1], fp[0], fp[1]),
        "0_random": _rec("can_fly", fly, "random", fly_concepts[0], fly_concepts[2],
                         fly_sents[0], fly_sents[2], fp[0], fp[2]),
        "1_overlap": _rec("lays_eggs", eggs, "overlap", egg_concepts[0], egg_concepts[1],
                          egg_sents[0], egg_sents[1], ep[0], ep[1]),
    }


FILES = {
    "de": _three("kann fliegen", ("Rotkehlchen", "Pinguin", "Stein"),
                 ("Ein Rotkehlchen kann fliegen.", "Ein Pinguin kann fliegen.", "Ein Stein kann fliegen."),
                 "legt Eier", ("Huhn", "Kuh"), ("Ein Huhn legt Eier.", "Eine Kuh legt Eier."),
                 ("Ein Rotkehlchen", "Ein Pinguin", "Ein Stein"), ("Ein Huhn", "Eine Kuh")),
    "fr": _three("peut voler", ("rouge-gorge", "manchot", "pierre"),
                 ("Un rouge-gorge peut voler.", "Un manchot peut voler.", "Une pierre peut voler."),
                 "pond des œufs", ("poule", "vache"),
                 ("Une poule pond des œufs.", "Une vache pond des œufs."),
                 ("Un rouge-gorge", "Un manchot", "Une pierre"), ("Une poule", "Une vache")),
    "es": _three("puede volar", ("petirrojo", "pingüino", "piedra"),
                 ("Un petirrojo puede volar.", "Un pingüino puede volar.", "Una piedra puede volar."),
                 "pone huevos", ("gallina", "vaca"),
                 ("Una gallina pone huevos.", "Una vaca pone huevos."),
                 ("Un petirrojo", "Un pingüino", "Una piedra"), ("Una gallina", "Una vaca")),
    "ca": _three("pot volar", ("pit-roig", "pingüí", "pedra"),
                 ("Un pit-roig pot volar.", "Un pingüí pot volar.", "Una pedra pot volar."),
                 "pon ous", ("gallina", "vaca"), ("Una gallina pon ous.", "Una vaca pon ous.")),
    "nl": _three("kan vliegen", ("roodborstje", "pinguïn", "ijzer"),
                 ("Een roodborstje kan vliegen.", "Een pinguïn kan vliegen.", "IJzer kan vliegen."),
                 "legt eieren", ("kip", "koe"), ("Een kip legt eieren.", "Een koe legt eieren."),
                 ("Een roodborstje", "Een pinguïn", "IJzer"), ("Een kip", "Een koe")),
    "el": _three("μπορεί να πετάξει", ("κοκκινολαίμης", "πιγκουίνος", "πέτρα"),
                 ("Ένας κοκκινολαίμης μπορεί να πετάξει.", "Ένας πιγκουίνος μπορεί να πετάξει.",
                  "Μια πέτρα μπορεί να πετάξει."),
                 "γεννάει αυγά", ("κότα", "αγελάδα"),
                 ("Μια κότα γεννάει αυγά.", "Μια αγελάδα γεννάει αυγά."),
                 ("Ένας κοκκινολαίμης", "Ένας πιγκουίνος", "Μια πέτρα"), ("Μια κότα", "Μια αγελάδα")),
    "ru": _three("умеет летать", ("малиновка", "пингвин", "камень"),
                 ("Малиновка умеет летать.", "Пингвин умеет летать.", "Камень умеет летать."),
                 "несёт яйца", ("курица", "корова"), ("Курица несёт яйца.", "Корова несёт яйца."),
                 ("Малиновка", "Пингвин", "Камень"), ("Курица", "Корова")),
    "uk": _three("вміє літати", ("вільшанка", "пінгвін", "камінь"),
                 ("Вільшанка вміє літати.", "Пінгвін вміє літати.", "Камінь вміє літати."),
                 "несе яйця", ("курка", "корова"), ("Курка несе яйця.", "Корова несе яйця."),
                 ("Вільшанка", "Пінгвін", "Камінь"), ("Курка", "Корова")),
    "ar": _three("يستطيع الطيران", ("أبو الحناء", "بطريق", "حجر"),
                 ("أبو الحناء يستطيع الطيران.", "البطريق يستطيع الطيران.", "الحجر يستطيع الطيران."),
                 "تبيض", ("دجاجة", "بقرة"), ("الدجاجة تبيض.", "البقرة تبيض."),
                 ("أبو الحناء", "البطريق", "الحجر"), ("الدجاجة", "البقرة")),
    "he": _three("יכול לעוף", ("אדום החזה", "פינגווין", "סלע"),
                 ("אדום החזה יכול לעוף.", "הפינגווין יכול לעוף.", "הסלע יכול לעוף."),
                 "מטילה ביצים", ("תרנגולת", "פרה"), ("התרנגולת מטילה ביצים.", "הפרה מטילה ביצים."),
                 ("אדום החזה", "הפינגווין", "הסלע"), ("התרנגולת", "הפרה")),
    "fa": _three("می‌تواند پرواز کند", ("سینه‌سرخ", "پنگوئن", "سنگ"),
                 ("سینه‌سرخ می‌تواند پرواز کند.", "پنگوئن می‌تواند پرواز کند.",
                  "سنگ می‌تواند پرواز کند."),
                 "تخم می‌گذارد", ("مرغ", "گاو"), ("مرغ تخم می‌گذارد.", "گاو تخم می‌گذارد."),
                 ("سینه‌سرخ", "پنگوئن", "سنگ"), ("مرغ", "گاو")),
    "ja": _three("飛ぶことができる", ("コマドリ", "ペンギン", "石"),
                 ("コマドリは飛ぶことができる。", "ペンギンは飛ぶことができる。", "石は飛ぶことができる。"),
                 "卵を産む", ("ニワトリ", "ウシ"), ("ニワトリは卵を産む。", "ウシは卵を産む。"),
                 ("コマドリは", "ペンギンは", "石は"), ("ニワトリは", "ウシは")),
    "ko": _three("날 수 있다", ("울새", "펭귄", "돌"),
                 ("울새는 날 수 있다.", "펭귄은 날 수 있다.", "돌은 날 수 있다."),
                 "알을 낳는다", ("닭", "소"), ("닭은 알을 낳는다.", "소는 알을 낳는다."),
                 ("울새는", "펭귄은", "돌은"), ("닭은", "소는")),
    "zh": _three("会飞", ("知更鸟", "企鹅", "石头"), ("知更鸟会飞。", "企鹅会飞。", "石头会飞。"),
                 "会下蛋", ("母鸡", "奶牛"), ("母鸡会下蛋。", "奶牛会下蛋。")),
    "vi": _three("có thể bay", ("chim cổ đỏ", "chim cánh cụt", "đá"),
                 ("Chim cổ đỏ có thể bay.", "Chim cánh cụt có thể bay.", "Hòn đá có thể bay."),
                 "đẻ trứng", ("gà mái", "bò"), ("Con gà mái đẻ trứng.", "Con bò đẻ trứng."),
                 ("Chim cổ đỏ", "Chim cánh cụt", "Hòn đá"), ("Con gà mái", "Con bò")),
    "tr": _three("uçabilir", ("kızılgerdan", "penguen", "ıstakoz"),
                 ("Bir kızılgerdan uçabilir.", "Bir penguen uçabilir.", "Istakoz uçabilir."),
                 "yumurtlar", ("tavuk", "inek"), ("Bir tavuk yumurtlar.", "Bir inek yumurtlar."),
                 ("Bir kızılgerdan", "Bir penguen", "Istakoz"), ("Bir tavuk", "Bir inek")),
    "hu": _three("tud repülni", ("vörösbegy", "pingvin", "kő"),
                 ("Egy vörösbegy tud repülni.", "Egy pingvin tud repülni.", "Egy kő tud repülni."),
                 "tojást rak", ("tyúk", "tehén"), ("Egy tyúk tojást rak.", "Egy tehén tojást rak."),
                 ("Egy vörösbegy", "Egy pingvin", "Egy kő"), ("Egy tyúk", "Egy tehén")),
}
ENGLISH = [  # COMPS comps_base.jsonl: no sentences, prefix + property phrase
    {"id": 0, "property": "can fly", "acceptable_concept": "robin", "unacceptable_concept": "penguin",
     "prefix_acceptable": "A robin", "prefix_unacceptable": "A penguin", "property_phrase": "can fly",
     "negative_sample_type": "taxonomic", "similarity": 0.8},
    {"id": 1, "property": "can fly", "acceptable_concept": "robin", "unacceptable_concept": "stone",
     "prefix_acceptable": "A robin", "prefix_unacceptable": "A stone", "property_phrase": "can fly",
     "negative_sample_type": "random", "similarity": 0.1},
    {"id": 2, "property": "lays eggs", "acceptable_concept": "hen", "unacceptable_concept": "cow",
     "prefix_acceptable": "A hen", "prefix_unacceptable": "A cow", "property_phrase": "lays eggs",
     "negative_sample_type": "overlap", "similarity": 0.5},
]

#: The options (acceptable, unacceptable) the option rule must give for each language's three
#: pairs, in file order.
OPTIONS = {
    "en": [("a robin", "a penguin"), ("a robin", "a stone"), ("a hen", "a cow")],
    "de": [("ein Rotkehlchen", "ein Pinguin"), ("ein Rotkehlchen", "ein Stein"), ("ein Huhn", "eine Kuh")],
    "fr": [("un rouge-gorge", "un manchot"), ("un rouge-gorge", "une pierre"), ("une poule", "une vache")],
    "es": [("un petirrojo", "un pingüino"), ("un petirrojo", "una piedra"), ("una gallina", "una vaca")],
    "ca": [("pit-roig", "pingüí"), ("pit-roig", "pedra"), ("gallina", "vaca")],
    "nl": [("een roodborstje", "een pinguïn"), ("een roodborstje", "ijzer"), ("een kip", "een koe")],
    "el": [("ένας κοκκινολαίμης", "ένας πιγκουίνος"), ("ένας κοκκινολαίμης", "μια πέτρα"),
           ("μια κότα", "μια αγελάδα")],
    "ru": [("малиновка", "пингвин"), ("малиновка", "камень"), ("курица", "корова")],
    "uk": [("вільшанка", "пінгвін"), ("вільшанка", "камінь"), ("курка", "корова")],
    "ar": [("أبو الحناء", "البطريق"), ("أبو الحناء", "الحجر"), ("الدجاجة", "البقرة")],
    "he": [("אדום החזה", "הפינגווין"), ("אדום החזה", "הסלע"), ("התרנגולת", "הפרה")],
    "fa": [("سینه‌سرخ", "پنگوئن"), ("سینه‌سرخ", "سنگ"), ("مرغ", "گاو")],
    "ja": [("コマドリ", "ペンギン"), ("コマドリ", "石"), ("ニワトリ", "ウシ")],
    "ko": [("울새", "펭귄"), ("울새", "돌"), ("닭", "소")],
    "zh": [("知更鸟", "企鹅"), ("知更鸟", "石头"), ("母鸡", "奶牛")],
    "vi": [("chim cổ đỏ", "chim cánh cụt"), ("chim cổ đỏ", "hòn đá"), ("con gà mái", "con bò")],
    "tr": [("bir kızılgerdan", "bir penguen"), ("bir kızılgerdan", "ıstakoz"), ("bir tavuk", "bir inek")],
    "hu": [("egy vörösbegy", "egy pingvin"), ("egy vörösbegy", "egy kő"), ("egy tyúk", "egy tehén")],
}


@pytest.fixture
def upstream_pairs(tmp_path, monkeypatch):
    """The 18 synthetic files in an XCOMPS data folder, loaded through the upstream loader (git
    blob ids checked against a manifest naming them) as one pair table."""
    folder = tmp_path / "xcomps"
    folder.mkdir()
    manifest = json.loads(json.dumps(data.manifest("xcomps")))
    for lang, records in FILES.items():
        path = folder / f"comps_{lang}.json"
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
        manifest["files"][path.name] = xcomps.git_blob_id(path)
    (folder / "comps_base.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in ENGLISH), encoding="utf-8")
    monkeypatch.setattr(xcomps, "manifest", lambda name: manifest)
    return xcomps.load_languages(ALL_LANGUAGES, source="upstream", data_dir=tmp_path)


# --- the template file ---------------------------------------------------------------------------

def test_every_language_of_the_table_has_a_valid_template():
    templates = meta.load_meta_templates()
    assert set(templates) == set(xcomps.languages()["iso"]) == set(ALL_LANGUAGES)
    for lang, t in templates.items():
        assert set(t) == set(meta.TEMPLATE_FIELDS), lang
        assert t["question"].count("{") == 3, lang
        assert "native speaker" in t["review"] and "Hu & Levy (2023)" in t["source"], lang
        assert meta.meta_template(lang) == t
    assert [lang for lang, t in sorted(templates.items()) if not t["space"]] == ["ja", "zh"]
    table = meta.meta_template_table()
    assert len(table) == 18 and table.loc["ar", "language"] == "Arabic"


def _write(tmp_path, edit):
    doc = json.loads(meta.meta_templates_file().read_text(encoding="utf-8"))
    edit(doc["templates"])
    path = tmp_path / "meta_templates.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["ko"].pop("answer"), r"language 'ko': the 'answer' field must be a string that "
                                      r"is not blank; it is missing$"),
    (lambda t: t["de"].update(question="Frage: Welches {property_phrase}: {option_1}?"),
     r"language 'de', field 'question': placeholders \['property_phrase', 'option_1'\], expected "
     r"exactly \{property_phrase\}, \{option_1\}, \{option_2\}, each once"),
    (lambda t: t["fr"].update(question=t["fr"]["question"] + " {option_3}"),
     r"language 'fr', field 'question': placeholders"),
    (lambda t: t["ja"].update(question=t["ja"]["question"] + "}"),
     r"language 'ja', field 'question': stray brace"),
    (lambda t: t["he"].update(question=t["he"]["question"] + " {{x}}"),
     r"language 'he', field 'question': stray brace"),
    (lambda t: t["ar"].update(answer="{answer}"), r"language 'ar', field 'answer': stray brace"),
    (lambda t: t["en"].update(answer="Answer: "), r"language 'en', field 'answer': leading or trailing"),
    (lambda t: t["tr"].update(space="yes"), r"language 'tr': the 'space' field must be True or "
                                            r"False; got 'yes'$"),
    (lambda t: t["nl"].update(lowercase="upper"), r"language 'nl', field 'lowercase': 'upper'"),
    (lambda t: t["es"].update(note="x"), r"language 'es': 'note' is not a field \(the fields: "
                                         r"question, answer, space, "),
    (lambda t: t.update(xx=t["en"]), r"language 'xx': not in the language table"),
    (lambda t: t["vi"].update(review=" "), r"language 'vi': the 'review' field must be a string "
                                           r"that is not blank; got ' '$"),
])
def test_a_malformed_template_names_file_language_and_field(tmp_path, edit, message):
    path = _write(tmp_path, edit)
    with pytest.raises(DataError, match=message) as err:
        meta.load_meta_templates(path)
    assert str(path) in str(err.value)


def test_a_language_without_a_template_is_named(tmp_path):
    path = _write(tmp_path, lambda t: t.pop("uk"))
    assert "uk" not in meta.load_meta_templates(path)
    with pytest.raises(DataError, match=r"no metalinguistic template for language 'uk'"):
        meta.meta_template("uk", path)
    bad = tmp_path / "broken.json"
    bad.write_text('{"templates": {"en": ', encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.json: malformed JSON at line 1"):
        meta.load_meta_templates(bad)


# --- the option rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("lang, prefix, concept, want", [
    ("en", "An apple", "apple", "an apple"),
    ("de", "Eine Kuh", "Kuh", "eine Kuh"),
    ("de", "Rotkehlchen", "Rotkehlchen", "Rotkehlchen"),  # a noun keeps its capital
    ("fr", "L'abeille", "abeille", "l'abeille"),
    ("es", "A un petirrojo", "petirrojo", "petirrojo"),  # dative subject of 'gustar': not an option
    ("nl", "IJsbeer", "ijsbeer", "ijsbeer"),
    ("tr", "Istakoz", "ıstakoz", "ıstakoz"),
    ("tr", "İnek", "inek", "inek"),
    ("tr", "Bir kızılgerdanın", "kızılgerdan", "kızılgerdan"),  # genitive: the concept instead
    ("hu", "Egy vörösbegynek", "vörösbegy", "vörösbegy"),  # dative: the concept instead
    ("ru", "У малиновки", "малиновка", "малиновка"),  # 'у' + genitive: the concept instead
    ("ru", "У кенгуру", "кенгуру", "кенгуру"),  # indeclinable, still not the subject
    ("el", "Ένας κοκκινολαίμης", "κοκκινολαίμης", "ένας κοκκινολαίμης"),
    ("ar", "البطريق", "بطريق", "البطريق"),
    ("ar", "للبطريق", "بطريق", "بطريق"),  # preposition li- + article: the concept instead
    ("he", "לדבורה", "דבורה", "דבורה"),
    ("ja", "コマドリには", "コマドリ", "コマドリ"),
    ("ko", "울새가", "울새", "울새"),
    ("zh", "一只知更鸟", "知更鸟", "知更鸟"),
    ("vi", "Một con chim cổ đỏ", "chim cổ đỏ", "một con chim cổ đỏ"),
    ("vi", "Người nông dân", "người nông dân", "người nông dân"),
    ("fa", "یک سینه‌سرخ", "سینه‌سرخ", "یک سینه‌سرخ"),
    ("en", "", "robin", "robin"),
])
def test_option_text(lang, prefix, concept, want):
    assert meta.option_text(prefix, concept, meta.meta_template(lang)) == want


# --- upstream-shaped files in all 18 languages ---------------------------------------------------

def test_upstream_files_in_every_language_build_meta_prompts(upstream_pairs):
    pairs = upstream_pairs
    assert sorted(pairs.lang.unique()) == ALL_LANGUAGES and len(pairs) == 54
    prompts = meta.build_meta_prompts(pairs)
    assert len(prompts) == 108
    templates = meta.load_meta_templates()
    for i, r in enumerate(pairs.itertuples()):
        t = templates[r.lang]
        good, bad = OPTIONS[r.lang][int(r.source_row) - 1]
        sep = " " if t["space"] else ""
        p = prompts[prompts.pair == i].set_index("order")
        assert (p.answer_good == sep + good).all() and (p.answer_bad == sep + bad).all(), r.lang
        for order, (o1, o2) in enumerate(((good, bad), (bad, good))):
            want = t["question"].format(property_phrase=r.property_phrase, option_1=o1, option_2=o2)
            assert p.loc[order, "context"] == want + "\n" + t["answer"], r.lang
        assert "{" not in p.context.str.cat() and "}" not in p.context.str.cat()

    def context(lang, row, order=0):
        i = pairs.index[(pairs.lang == lang) & (pairs.source_row == row)][0]
        return prompts[(prompts.pair == i) & (prompts.order == order)].iloc[0]

    en = context("en", 1)
    assert en.context == "Question: Which one can fly: a robin or a penguin?\nAnswer:"
    assert (en.answer_good, en.answer_bad) == (" a robin", " a penguin")
    assert context("de", 3, 1).context == ("Frage: Welches von beiden legt Eier: eine Kuh oder "
                                           "ein Huhn?\nAntwort:")
    ja = context("ja", 1)
    assert ja.context == "質問：「飛ぶことができる」に当てはまるのは、コマドリとペンギンのどちらですか？\n答え："
    assert (ja.answer_good, ja.answer_bad) == ("コマドリ", "ペンギン")
    ar = context("ar", 1)
    assert ar.context == "سؤال: أيهما يستطيع الطيران: أبو الحناء أم البطريق؟\nالجواب:"
    assert (ar.answer_good, ar.answer_bad) == (" أبو الحناء", " البطريق")
    assert context("ko", 2).context == ("질문: 다음 중 '날 수 있다'에 해당하는 것은 어느 쪽입니까: "
                                        "울새 또는 돌?\n답:")
    assert context("tr", 2).context == "Soru: Hangisi uçabilir: bir kızılgerdan ya da ıstakoz?\nCevap:"


def _reference(lm, context, answer):
    """float64, one text at a time: log p(answer | context) in nats and its token count."""
    tok = lm.tokenizer
    enc = tok(context + answer, add_special_tokens=False, return_offsets_mapping=True)
    ids = [tok.bos_token_id] + enc["input_ids"]
    first = 1 + next(i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > len(context))
    with torch.no_grad():
        lp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return sum(lp[t - 1, ids[t]].item() for t in range(first, len(ids))), len(ids) - first


def test_meta_runs_on_upstream_files_in_all_18_languages(lm, upstream_pairs):
    pairs = upstream_pairs
    res = run_methods(lm, pairs, ["meta"], progress=False)
    w = res.wide("meta")
    assert sorted(w.lang.unique()) == ALL_LANGUAGES
    summary = w[w.order == ""]
    assert len(summary) == 54 and summary.groupby("lang").size().eq(3).all()
    for col in ("logprob_good", "logprob_bad", "delta", "answer_mass"):
        assert np.isfinite(summary[col]).all(), col
    assert (summary.logprob_good < 0).all() and (summary.logprob_bad < 0).all()
    assert ((summary.answer_mass > 0) & (summary.answer_mass <= 1)).all()
    per_order = w[w.order != ""]
    assert len(per_order) == 108 and np.isfinite(per_order[["logprob_good", "logprob_bad"]]).all().all()

    # the stored log-probabilities are the prompt's own continuation log-probabilities
    prompts = meta.build_meta_prompts(pairs)
    for lang in ("ar", "ja", "ko", "ru"):
        i = int(np.flatnonzero(pairs.lang.to_numpy() == lang)[0])
        p = prompts[(prompts.pair == i) & (prompts.order == 0)].iloc[0]
        want, n = _reference(lm, p.context, p.answer_good)
        got = per_order[(per_order.lang == lang) & (per_order.pair_id == pairs.pair_id.iloc[i])
                        & (per_order.order == "good_first")].logprob_good.iloc[0]
        assert math.isclose(got, want, abs_tol=1e-5 * n), (lang, got, want)
