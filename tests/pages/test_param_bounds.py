"""Issue 41 item 6: a chapter's sizes and names are checked against what the data holds, before
any data are scored: a size above what its tasks hold is refused (the one policy of the command
line, the sweep files and the chapters, :func:`xcomps_utils.pairs.tasks.check_size`), every
list parameter is checked against the registry or the benchmark's languages, naming the
parameter, and so are relations between parameters; each in one line, before any model is
loaded or any pair scored (held by making both fail here, not by a clock: a timed assertion failed
on a busy machine)."""

import urllib.error

import pytest

from xcomps_utils.pages import params
from xcomps_utils.pairs import data


@pytest.fixture(autouse=True)
def _no_work(monkeypatch):
    """A check that loads a model or scores a pair fails here."""
    from xcomps_utils.lm import models
    from xcomps_utils.runs import execute

    def refuse(*_, **__):
        raise AssertionError("the check loaded a model or scored pairs")
    monkeypatch.setattr(models, "load_model", refuse)
    monkeypatch.setattr(execute, "run", refuse)
    monkeypatch.setattr(execute, "execute", refuse)


def _refused(chapter: str, **given) -> str:
    with pytest.raises(params.ParameterError) as err:
        params.check({**params.sizes(chapter), **given}, chapter)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{chapter}: the '")
    return message


def test_facts17_above_what_bmlama17_holds_is_refused(data_dir):
    assert _refused("bmlama_languages", facts17=100000) == (
        "bmlama_languages: the 'facts17' parameter must be an integer from 2 to 6,792 (the facts "
        "BMLAMA-17 holds per language); got 100000")
    assert "from 2 to 3,036 (the facts BMLAMA-53 holds" in _refused("bmlama_languages",
                                                                    facts53=3037)
    params.check({**params.sizes("bmlama_languages"), "facts17": 6792}, "bmlama_languages")


def test_methods_facts_above_facts17_is_refused(data_dir):
    assert _refused("bmlama_languages", methods_facts=50) == (
        "bmlama_languages: the 'methods_facts' parameter must be an integer from 2 to facts17 "
        "(10) or None; got 50; Meta and Neuro run on the first methods_facts of the facts17 "
        "facts")
    params.check({**params.sizes("bmlama_languages"), "methods_facts": 10}, "bmlama_languages")


def test_bmlama_languages_are_the_benchmarks(data_dir):
    """`languages17: [xx]` failed in CLDR, naming neither the parameter nor the benchmark."""
    message = _refused("bmlama_languages", languages17=["xx"])
    assert message.startswith("bmlama_languages: the 'languages17[0]' parameter must be one of "
                              "the 17 BMLAMA-17 languages ('ar', 'ca', ")
    assert message.endswith(", 'zh'); got 'xx'")
    assert _refused("bmlama_languages", languages53=["en", "dee"]).endswith(
        "the 'languages53[1]' parameter must be one of the 53 BMLAMA-53 languages ('af', 'ar', "
        "'az', ...); got 'dee'; did you mean 'de'?")


def test_grammar_items_per_task_above_every_task_is_refused(data_dir):
    assert _refused("grammar_across_languages", items_per_task=100000) == (
        "grammar_across_languages: the 'items_per_task' parameter must be an integer from 1 to "
        "16,800 (the pairs the largest of its 27 tasks, clams:en:prep_anim, holds) or None "
        "(every one); got 100000")
    # up to n per task: a task holding fewer (clams simple_agrmt: 140) gives all its pairs
    params.check({**params.sizes("grammar_across_languages"), "items_per_task": 16800},
                 "grammar_across_languages")


@pytest.mark.parametrize("name, value, words", [
    ("neuro_languages", ["xx"], "[0]' parameter must be one of the 9 languages of the chapter's "
                                "pairs ('en', 'de', 'fr', 'he', 'ru', 'tr', 'zh', 'el', 'nl'); "
                                "got 'xx'"),
    ("xcomps_languages", ["en", "xx"], "[1]' parameter must be one of the 7 languages of XCOMPS' "
                                       "sample files ('en', 'de', 'fr', 'zh', 'vi', 'tr', 'hu'); "
                                       "got 'xx'"),
    ("xcomps_items", 31, "' parameter must be an integer from 1 to 30 (the items XCOMPS' sample "
                         "holds per language) or None (every one); got 31"),
])
def test_grammar_languages_are_checked_before_anything_is_scored(name, value, words, data_dir):
    """`neuro_languages: [xx]` and `xcomps_languages: [en, xx]` ran for minutes (scoring every
    task) before failing."""
    assert _refused("grammar_across_languages", **{name: value}) == (
        f"grammar_across_languages: the '{name}{words}")


@pytest.mark.parametrize("name, value, what", [
    ("clams_languages", ["en", "es"], "the 5 CLAMS languages"),
    ("constructions", ["prep_anm"], "the 7 CLAMS constructions"),
    ("turblimp", ["bindng"], "the 16 TurBLiMP phenomena"),
    ("sling", ["zai_l"], "the 54 SLING paradigms"),
    ("blimp", ["regular_plural"], "the 67 BLiMP phenomena"),
    ("rublimp", ["np_agreement_cas"], "the 45 RuBLiMP phenomena"),
    ("multiblimp", ["deu"], "the 4 MultiBLiMP languages"),
])
def test_every_grammar_list_is_checked_against_the_registry(name, value, what, data_dir):
    message = _refused("grammar_across_languages", **{name: value})
    at = f"{name}[{len(value) - 1}]"
    assert message.startswith(f"grammar_across_languages: the {at!r} parameter must be one of "
                              f"{what} (")
    assert f"); got {value[-1]!r}" in message


@pytest.mark.parametrize("chapter, name, value, words", [
    ("direct_scoring", "n_pairs", 5000, "an integer from 1 to 2,122 (the pairs the largest of "
                                        "its 4 tasks, dust, holds) or None (every one)"),
    ("first_token", "convention_pairs", 1001, "an integer from 1 to 1,000 (the pairs "
                                              "blimp_anaphor holds)"),
    ("token_perplexity_results", "items_per_task", 5000,
     "an integer from 1 to 2,114 (the pairs the largest of its 5 tasks, dust, holds after "
     "token-level perplexity's selection) or None (every one)"),
    ("xcomps_results", "items_per_language", 31, "an integer from 1 to 30 (the items XCOMPS' "
                                                 "sample holds per language) or None (every one)"),
])
def test_every_chapter_size_has_the_same_bound(chapter, name, value, words, data_dir):
    assert _refused(chapter, **{name: value}) == (
        f"{chapter}: the {name!r} parameter must be {words}; got {value}")


@pytest.mark.parametrize("data_dir_set", [True, False])
def test_offline_the_data_error_shows_not_an_index_error(tmp_path, monkeypatch, data_dir_set):
    """Offline, `token_perplexity_method`'s check raised `IndexError: tuple index out of range`
    (a whole-chapter check with no field in pydantic's error, issue 43); the data error shows,
    naming XCOMPS_DATA_DIR: with the variable pointing to an empty folder, and with it unset
    while nothing can be downloaded (as ``tests/pairs/test_data_check.py`` simulates)."""
    def offline(*a, **k):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    if data_dir_set:
        monkeypatch.setenv("XCOMPS_DATA_DIR", str(tmp_path))
    else:
        monkeypatch.delenv("XCOMPS_DATA_DIR", raising=False)
        monkeypatch.setattr(data, "data_home", lambda: tmp_path)
    with pytest.raises(data.DataError) as err:
        params.check(params.sizes("token_perplexity_method"), "token_perplexity_method")
    message = str(err.value)
    assert "anaphor_gender_agreement" in message and "XCOMPS_DATA_DIR" in message
