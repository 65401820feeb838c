"""Issue 41 item 6: a chapter's sizes and names are checked against what the data holds, before
any data are scored: a size above what its tasks hold is refused (the one policy of the command
line, the sweep files and the chapters, :func:`xcomps_utils.pairs.tasks.check_size`), every
list parameter is checked against the registry or the benchmark's languages, naming the
parameter, and so are relations between parameters; each in one line, before any model is
loaded or any pair scored (held by making both fail here, not by a clock: a timed assertion failed
on a busy machine)."""

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
    assert "\n" not in message and message.startswith(f"{chapter}: parameter ")
    return message


def test_facts17_above_what_bmlama17_holds_is_refused(data_dir):
    assert _refused("bmlama_languages", facts17=100000) == (
        "bmlama_languages: parameter 'facts17' must be an integer from 2 to 6,792 (the facts "
        "BMLAMA-17 holds per language), got 100000 (int)")
    assert "from 2 to 3,036 (the facts BMLAMA-53 holds" in _refused("bmlama_languages",
                                                                    facts53=3037)
    params.check({**params.sizes("bmlama_languages"), "facts17": 6792}, "bmlama_languages")


def test_methods_facts_above_facts17_is_refused(data_dir):
    assert _refused("bmlama_languages", methods_facts=50) == (
        "bmlama_languages: parameter 'methods_facts' must be an integer from 2 to facts17 (10) "
        "or None, got 50 (int); Meta and Neuro run on the first methods_facts of the facts17 "
        "facts")
    params.check({**params.sizes("bmlama_languages"), "methods_facts": 10}, "bmlama_languages")


def test_bmlama_languages_are_the_benchmarks(data_dir):
    """`languages17: [xx]` failed in CLDR, naming neither the parameter nor the benchmark."""
    message = _refused("bmlama_languages", languages17=["xx"])
    assert message.startswith("bmlama_languages: parameter 'languages17' must be a list out of "
                              "the 17 BMLAMA-17 languages ('ar', 'ca', ")
    assert message.endswith("or None, got ['xx'] (list); 'xx' is not one of them")
    assert _refused("bmlama_languages", languages53=["en", "dee"]).endswith(
        "got ['en', 'dee'] (list); 'dee' is not one of them; did you mean 'de'?")


def test_grammar_items_per_task_above_every_task_is_refused(data_dir):
    assert _refused("grammar_across_languages", items_per_task=100000) == (
        "grammar_across_languages: parameter 'items_per_task' must be an integer from 1 to "
        "16,800 (the pairs the largest of its 27 tasks, clams:en:prep_anim, holds) or None "
        "(every one), got 100000 (int)")
    # up to n per task: a task holding fewer (clams simple_agrmt: 140) gives all its pairs
    params.check({**params.sizes("grammar_across_languages"), "items_per_task": 16800},
                 "grammar_across_languages")


@pytest.mark.parametrize("name, value, words", [
    ("neuro_languages", ["xx"], "a list out of the languages of the chapter's pairs ('en', 'de', "
                                "'fr', 'he', 'ru', 'tr', 'zh', 'el', 'nl'), got ['xx'] (list); "
                                "'xx' is not one of them"),
    ("xcomps_languages", ["en", "xx"], "a list out of the languages of XCOMPS' sample files "
                                       "('en', 'de', 'fr', 'zh', 'vi', 'tr', 'hu'), got "
                                       "['en', 'xx'] (list); 'xx' is not one of them"),
    ("xcomps_items", 31, "an integer from 1 to 30 (the items XCOMPS' sample holds per "
                         "language) or None (every one), got 31 (int)"),
])
def test_grammar_languages_are_checked_before_anything_is_scored(name, value, words, data_dir):
    """`neuro_languages: [xx]` and `xcomps_languages: [en, xx]` ran for minutes (scoring every
    task) before failing."""
    assert _refused("grammar_across_languages", **{name: value}) == (
        f"grammar_across_languages: parameter {name!r} must be {words}")


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
    assert message.startswith(f"grammar_across_languages: parameter {name!r} must be a list out "
                              f"of {what} (")
    assert f"got {value!r} (list); {value[-1]!r} is not one of them" in message


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
        f"{chapter}: parameter {name!r} must be {words}, got {value} (int)")


def test_offline_the_data_error_shows_not_an_index_error(tmp_path, monkeypatch):
    """Offline, `token_perplexity_method`'s check raised `IndexError: tuple index out of range`
    (a whole-chapter check with no field in pydantic's error); the real error now shows."""
    monkeypatch.setenv("XCOMPS_DATA_DIR", str(tmp_path))
    with pytest.raises(data.DataError, match="missing data file .*anaphor_gender_agreement"):
        params.check(params.sizes("token_perplexity_method"), "token_perplexity_method")
