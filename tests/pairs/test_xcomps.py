import functools
import http.server
import json
import shutil
import threading

import numpy as np
import pytest
import torch

from xcomps_utils.lm import encoding
from xcomps_utils.methods import meta, neuro
from xcomps_utils.pairs import data, xcomps
from xcomps_utils.pairs.data import ChecksumError, DataError


@pytest.mark.parametrize("lang", xcomps.SAMPLE_LANGUAGES)
def test_each_sample_language_loads_its_own_rows(lang):
    df = xcomps.load_xcomps(lang)
    assert len(df) == 120 and (df.lang == lang).all()
    assert df.groupby("property").size().eq(4).all()  # 30 items x 4 negative types
    assert set(df.negative_sample_type) == set(xcomps.NEGATIVE_TYPES)
    assert not df.identical.any()
    en = xcomps.load_xcomps("en")
    assert list(df.pair_id) == list(en.pair_id)
    if lang != "en":
        assert (df.good != en.good).all()  # really this language's sentences
    script = {"zh": r"[\u4e00-\u9fff]", "de": r"\b(?:Ein|Eine)\b", "fr": r"\b(?:Un|Une)\b",
              "tr": r"\bBir\b", "hu": r"\bEgy\b", "vi": r"[^\x00-\x7f]",
              "en": r"\b(?:A|An)\b"}[lang]
    assert df.good.str.contains(script).mean() > 0.9


def test_identical_languages_are_refused(monkeypatch):
    real = xcomps.xcomps_file
    monkeypatch.setattr(xcomps, "xcomps_file", lambda lang, *a, **k: real("de"))
    with pytest.raises(DataError, match="loaded identical rows"):
        xcomps.load_languages(["de", "fr"])


def test_items_per_language_keeps_whole_items():
    df = xcomps.load_languages(["en", "de"], items_per_language=5, seed=1)
    assert df.groupby("lang").size().eq(20).all()
    assert set(df[df.lang == "en"].property) == set(df[df.lang == "de"].property)


def test_language_table():
    t = xcomps.languages()
    assert set(xcomps.XCOMPS_LANGUAGES + ["en"]) == set(t.iso)
    assert set(t.morphological_type) == {"analytic", "inflected", "agglutinative"}
    assert (t.classified_by != "").all() and (t.sources != "").all()


def test_the_language_table_is_read_once_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    first = xcomps.languages()
    first.loc[0, "iso"] = "xx"  # a caller's edit stays its own
    assert xcomps.languages().iso.iloc[0] != "xx"
    copy = tmp_path / "languages.csv"  # another file (or the file changed): read afresh
    copy.write_text((xcomps.resources_dir() / "languages.csv").read_text().replace(
        "agglutinative", "agglutinating"))
    monkeypatch.setattr(xcomps, "resources_dir", lambda: tmp_path)
    assert "agglutinating" in set(xcomps.languages().morphological_type)


@pytest.fixture
def served_upstream(tmp_path, monkeypatch):
    """A locally served copy of a file in the upstream format (our German sample)."""
    root = tmp_path / "served"
    root.mkdir()
    shutil.copy(xcomps.xcomps_file("de"), root / "comps_de.json")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    meta_ = json.loads(json.dumps(data.manifest("xcomps")))
    meta_["url_template"] = f"http://127.0.0.1:{server.server_port}/{{file}}"
    meta_["files"]["comps_de.json"] = xcomps.git_blob_id(root / "comps_de.json")
    monkeypatch.setattr(xcomps, "manifest", lambda name: meta_)
    monkeypatch.delenv("XCOMPS_DATA_DIR", raising=False)
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    yield root, meta_
    server.shutdown()


def test_upstream_loader_downloads_and_verifies_blob_id(served_upstream, tmp_path):
    root, meta_ = served_upstream
    df = xcomps.load_xcomps("de", source="upstream")
    assert len(df) == 120 and (tmp_path / "cache" / "data" / "xcomps" / "comps_de.json").exists()
    meta_["files"]["comps_de.json"] = "0" * 40  # a wrong blob id is refused
    with pytest.raises(ChecksumError, match="git blob id"):
        xcomps.load_xcomps("de", source="upstream")


def test_upstream_schema_errors_name_record_and_field(served_upstream, tmp_path):
    root, meta_ = served_upstream
    records = json.loads((root / "comps_de.json").read_text())
    del records["05_overlap"]["unacceptable_sent"]
    (root / "comps_de.json").write_text(json.dumps(records, ensure_ascii=False))
    meta_["files"]["comps_de.json"] = xcomps.git_blob_id(root / "comps_de.json")
    with pytest.raises(DataError, match=r"record '05_overlap': missing field 'unacceptable_sent'"):
        xcomps.load_xcomps("de", source="upstream")


def test_git_blob_id_matches_git(tmp_path):
    import subprocess

    f = tmp_path / "x.txt"
    f.write_text("hello\n")
    want = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True).stdout.strip()
    assert xcomps.git_blob_id(f) == want


# ---------------------------------------------------------------- Meta

def _plain_continuation(lm, context, answer):
    tok = lm.tokenizer
    ids = [tok.bos_token_id] + tok(context + answer, add_special_tokens=False)["input_ids"]
    offs = tok(context + answer, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    first = 1 + next(i for i, (a, b) in enumerate(offs) if b > len(context))
    with torch.no_grad():
        lp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return sum(lp[t - 1, ids[t]].item() for t in range(first, len(ids))), len(ids) - first


def test_meta_answer_tokens_without_a_space(lm):
    """Chinese: the prompt ends with '：' and the answer follows with no space."""
    from xcomps_utils.lm.scoring import continuation_scores

    context, answer = "问题：哪一个会飞，知更鸟还是企鹅？\n答案：", "知更鸟"
    s = continuation_scores(lm, [context, context], [answer, "企鹅"], batch_size=2)
    total, n = _plain_continuation(lm, context, answer)
    assert s[0].total == pytest.approx(total, abs=1e-5) and len(s[0].logprobs) == n
    assert "".join(answer[a:b] for a, b in s[0].offsets).startswith(answer[:1])
    # the answer alone tokenizes differently from the answer after the prompt: never used
    alone = lm.tokenizer(answer, add_special_tokens=False)["input_ids"]
    joint = lm.tokenizer(context + answer, add_special_tokens=False)["input_ids"]
    assert joint[-len(s[0].token_ids):] == list(s[0].token_ids)
    assert alone == list(s[0].token_ids) or alone != joint[-len(alone):]


def test_meta_prompts_with_chat_template_have_one_bos(lm):
    pairs = xcomps.load_xcomps("en").head(2)
    prompts = meta.build_meta_prompts(pairs, use_chat_template=True, tokenizer=lm.tokenizer)
    ctx = prompts.context[0]
    assert ctx.count("<|im_start|>user") == 1 and ctx.endswith("assistant\nAnswer:")
    assert not ctx.startswith(lm.tokenizer.bos_token)  # scoring adds the one BOS
    ids = encoding.encode(lm.tokenizer, [ctx], "bos")[0].ids
    # the scored ids are exactly the chat template's own tokens (one leading BOS, not two)
    question = ctx.split("<|im_start|>user\n")[1].split("<|im_end|>")[0]
    templ = lm.tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                             tokenize=False, add_generation_prompt=True)
    want = lm.tokenizer(templ + "Answer:", add_special_tokens=False)["input_ids"]
    assert ids == want and ids[0] == lm.tokenizer.bos_token_id and ids[1] != ids[0]


def test_score_meta_averages_both_orders(lm):
    pairs = xcomps.load_xcomps("en").head(4)
    out = meta.score_meta(lm, pairs, batch_size=4)
    assert np.allclose(out.meta_good, (out.meta_good_0 + out.meta_good_1) / 2)
    assert ((out.meta_mass > 0) & (out.meta_mass <= 1)).all()
    assert (out.meta_correct == (out.meta_good > out.meta_bad)).all()


# ---------------------------------------------------------------- Neuro

TEXTS = ["A robin can fly.", "Ein Pinguin kann fliegen.", "知更鸟会飞。", "x",
         "A hedgehog has sharp spines and lives in the garden behind the house."]


def test_last_token_states_equal_unbatched(lm):
    single = np.stack([neuro.last_token_states(lm, [t])[0] for t in TEXTS])
    texts = TEXTS + ["A robin can swim."] + TEXTS  # batches of 2-3 texts of one length
    for budget in (None, 24):
        batched = neuro.last_token_states(lm, texts, token_budget=budget)
        np.testing.assert_allclose(batched[:5], single, atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(batched[6:], single, atol=1e-4, rtol=1e-4)
        assert batched.shape == (
            11, lm.model.config.num_hidden_layers + 1, lm.model.config.hidden_size)


def test_last_state_is_after_the_final_norm(lm):
    states = neuro.last_token_states(lm, [TEXTS[0]])
    ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(TEXTS[0], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0, -1]
        from_state = lm.model.lm_head(torch.tensor(states[0, -1]))
    torch.testing.assert_close(from_state, logits, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("model", ["lm", "gemma"])
def test_hooked_states_equal_output_hidden_states(model, request):
    """Hooks give transformers' hidden_states (embedding output, scaled for Gemma; blocks; norm)."""
    lm = request.getfixturevalue(model)
    for text in TEXTS:
        ids = encoding.encode(lm.tokenizer, [text], "bos")[0].ids
        with torch.no_grad():
            hs = lm.model.get_decoder()(torch.tensor([ids]), output_hidden_states=True)
        want = torch.stack([h[0, -1] for h in hs.hidden_states]).numpy()
        np.testing.assert_allclose(neuro.last_token_states(lm, [text])[0], want, atol=1e-5, rtol=0)


def test_probe_separable_and_refusals():
    from xcomps_utils.methods import probing

    rng = np.random.default_rng(0)
    labels = np.array([1, 0] * 30)
    items, concepts = np.repeat(np.arange(30), 2), np.arange(60)
    states = rng.normal(size=(60, 3, 8)).astype(np.float32)
    states[:, 1, 0] += 10 * labels  # layer 1 is linearly separable
    folds, info = probing.make_folds(labels, items, concepts)
    assert info["grouping"] == "item+concept" and info["leaked_concepts"] == 0
    for train, test in folds:  # an item never spans two folds
        assert not set(items[train]) & set(items[test])
    res = probing.probe_layers(states, labels, folds)
    assert res.loc[1, "f1"] == 1.0 and res.loc[1, "mcc"] == 1.0 and res.loc[0, "f1"] < 0.9
    with pytest.raises(probing.ProbeError, match="only one class"):
        probing.make_folds(np.ones(60), items, concepts)
    with pytest.raises(probing.ProbeError, match="fewer than the 5 folds"):
        probing.make_folds(np.r_[np.ones(3), np.zeros(30)], np.arange(33), np.arange(33))


def test_upstream_english_comps_jsonl_builds_sentences(tmp_path, monkeypatch):
    """COMPS stores prefix + property phrase; the sentence is 'prefix property_phrase.'."""
    (tmp_path / "xcomps").mkdir()
    recs = [{"id": i, "property": "can fly", "acceptable_concept": "robin",
             "unacceptable_concept": neg, "prefix_acceptable": "A robin",
             "prefix_unacceptable": f"A {neg}", "property_phrase": "can fly",
             "negative_sample_type": t, "similarity": 0.5}
            for i, (neg, t) in enumerate([("penguin", "taxonomic"), ("stone", "random")])]
    (tmp_path / "xcomps" / "comps_base.jsonl").write_text("\n".join(map(json.dumps, recs)) + "\n")
    monkeypatch.setenv("XCOMPS_DATA_DIR", str(tmp_path))
    df = xcomps.load_xcomps("en", source="upstream")
    assert list(df.good) == ["A robin can fly."] * 2 and list(df.bad) == ["A penguin can fly.", "A stone can fly."]
    assert (df.dataset == "comps").all()
