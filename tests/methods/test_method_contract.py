"""The contract every registered method keeps (as scikit-learn's common estimator checks do):
each method of :data:`xcomps_utils.methods.registry.METHODS` declares itself consistently,
computes one shard of real pairs with the real small model, resumes (a second call computes
nothing new), reads back from the store what it computed, and refuses a bad input with an
:class:`~xcomps_utils.declare.ParameterError` naming the parameter. A new method is checked by adding its
pairs and its bad input below (a test fails until it does)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.declare import ParameterError
from xcomps_utils.errors import XcompsError
from xcomps_utils.methods import base, config
from xcomps_utils.methods.registry import METHODS, register
from xcomps_utils.pairs import tasks, xcomps
from xcomps_utils.runs import cli, execute, planner, store as S

NAMES = list(METHODS)
MODEL = "smollm2-135m-instruct"

#: Per method: a few real pairs it runs on, and the run parameters of the checks (Neuro's probes
#: on one small group, so that the run-level step stays quick).
PAIRS = {
    "direct": lambda: tasks.sample(["blimp_anaphor"], 4, seed=0),
    "meta": lambda: xcomps.load_languages(["en"], items_per_language=1, seed=0),
    "neuro": lambda: xcomps.load_languages(["en"], items_per_language=3, seed=0),
    "token_ppl": lambda: tasks.sample(["blimp_anaphor"], 3, seed=0, selection=True),
}
PARAMS = {"neuro": {"probe_by": [["lang"]], "n_splits": 3, "inner_splits": 2}}
#: Per method: run() arguments that are a bad input for it, and the parameter its error names.
BAD = {
    "direct": ("direct", {"bos_policy": "bos2"}, "bos_policy"),
    "meta": ("direct", {}, "pairs"),  # BLiMP pairs: no XCOMPS or BMLAMA columns
    "neuro": ("direct", {"probe_by": [["lang", "no_such_column"]]}, "probe_by"),
    "token_ppl": ("direct", {"wordings": ["no_such_wording"]}, "wordings"),
}


def _params(name: str) -> dict:
    return {"bos_policy": "bos", "token_budget": "auto", "batch_size": None,
            "use_chat_template": False, "wordings": "all",
            "probe_by": [["lang", "subset"], ["lang"]], "n_splits": 5, "inner_splits": 3,
            "seed": 0, **PARAMS.get(name, {})}


def test_every_registered_method_has_its_cases():
    assert set(PAIRS) == set(BAD) == set(METHODS)


def test_the_registry_is_what_the_command_line_offers():
    run = cli.main.commands["run"]
    choices = {p.name: list(p.type.choices) for p in run.params if hasattr(p.type, "choices")}
    assert choices["methods"] == NAMES == list(config.METHODS) == list(execute.METHODS)
    assert config.METHODS is METHODS  # one registry, however it is reached
    options = {o for p in run.params for o in getattr(p, "opts", ())}
    flags = cli.method_flags()
    assert flags == {"bos_policy": ("--bos-policy", ("direct",), "bos"),
                     "use_chat_template": ("--use-chat-template", ("meta",), False),
                     "wordings": ("--wordings", ("token_ppl",), ())}
    for parameter, (flag, readers, default) in flags.items():
        assert flag in options and parameter in config.RunParameters.model_fields
        assert all(parameter in METHODS[r].flags for r in readers)


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="registered already"):
        register(type(METHODS["direct"])())


@pytest.mark.parametrize("name", NAMES)
def test_declaration(name):
    m = METHODS[name]
    assert isinstance(m, base.Method) and m.name == name
    assert m.shard_size >= 1 and m.uses[:2] == ("good", "bad")
    assert m.needs in ("", "xcomps", "tasks") and bool(m.why) == bool(m.needs)
    assert set(m.parameters) <= set(config.RunParameters.model_fields)
    assert set(m.flags) <= set(config.RunParameters.model_fields)
    assert m.audit_tolerance in ("sentence_tokens", "answer_tokens", "proportions", "probe",
                                 "equal")
    assert set(m.audit_details.values()) <= {"token_logprobs", "prompt_groups"}
    assert m.finish_shard is None or not m.finish_shard.startswith("shard-")
    assert re.fullmatch(r"\d+\.\d+\.\d+", m.version)
    for key, function in m.fingerprints:
        assert re.fullmatch(r"[0-9a-f]{64}", function()), key
    for column, key, function in m.pair_fingerprints:
        assert column in m.uses and re.fullmatch(r"[0-9a-f]{64}", function()), key
    # the key's parameters: only what the declaration names
    p = _params(name)
    keyed = m.key_parameters(p, columns=m.uses)
    assert set(keyed) == (set(m.parameters) | {k for k, _ in m.fingerprints}
                          | {k for _, k, _ in m.pair_fingerprints} | {k for k, _ in m.protocol})


def test_the_measure_columns_are_the_stores():
    assert base.MEASURE_COLUMNS == S.MEASURE_COLUMNS and base.ID == planner.ID


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_input_names_its_field(name, data_dir):
    pairs_of, kwargs, field = BAD[name]
    pairs = PAIRS[pairs_of]()
    # no model loads: the inputs are checked first
    with pytest.raises(XcompsError) as err:
        execute.run(MODEL, pairs, [name], device="cpu", dtype="float32", progress=False, **kwargs)
    assert isinstance(err.value, ParameterError) and isinstance(err.value, ValueError)
    assert err.value.name == field and f"the {field!r} parameter must be " in str(err.value)


def check_shard(m: base.Method, lm, shard: pd.DataFrame, p: dict):
    """One shard of ``m``: long measures of every pair of the shard and no other, finite, with
    0/1 decisions; details as declared for the audit. Returns ``(measures, details)``."""
    measures, details = m.compute_shard(lm, shard, p)
    assert isinstance(details, dict)
    assert set(m.audit_details) <= set(details)  # the audit's rules name tables it writes
    arrays = [d for d, v in details.items() if isinstance(v, np.ndarray)]
    if arrays:  # their rows are named by a table of texts, one per row
        assert len(details[m.array_rows]["text"]) == len(details[arrays[0]])
    if measures is not None:
        assert list(measures.columns) == base.MEASURE_COLUMNS
        assert set(measures["method"]) == {m.name}
        assert set(measures["pair_id"]) == set(shard["pair_id"])  # every pair, no other
        assert np.isfinite(measures["value"]).all()
        decided = measures[measures.measure == "correct"]["value"]
        assert len(decided) and set(decided) <= {0.0, 1.0}
    else:
        assert details and m.finish_shard  # what it computes is kept for its finishing step
    return measures, details


def test_the_shard_check_finds_a_planted_fault(lm, data_dir):
    """A method whose shard loses a pair, or labels its rows as another method's, fails the
    check."""
    direct = METHODS["direct"]
    shard = planner.prepare_pairs(PAIRS["direct"]())[planner.ID + list(direct.uses)]
    p = _params("direct")
    check_shard(direct, lm, shard, p)

    class LosesAPair(type(direct)):
        def compute_shard(self, lm, pairs, params):
            measures, details = super().compute_shard(lm, pairs, params)
            return measures[measures.pair_id != pairs.pair_id.iat[-1]], details

    class Mislabels(type(direct)):
        def compute_shard(self, lm, pairs, params):
            measures, details = super().compute_shard(lm, pairs, params)
            return measures.assign(method="other"), details

    for broken in (LosesAPair(), Mislabels()):
        with pytest.raises(AssertionError):
            check_shard(broken, lm, shard, p)


@pytest.mark.parametrize("name", NAMES)
def test_one_shard_resume_and_round_trip(name, lm, data_dir, tmp_path):
    m = METHODS[name]
    pairs = planner.prepare_pairs(PAIRS[name]())
    p = _params(name)
    size = -(-len(pairs) // 2)  # two shards
    spec, = planner.plan(MODEL, pairs, [name], p, store=tmp_path, shard_size=size,
                         device="cpu", dtype="float32")
    assert spec.n_shards == 2

    # one shard, computed by the method object
    shard = spec.used.iloc[:size].reset_index(drop=True)
    measures, details = check_shard(m, lm, shard, p)

    # resume: the first shard written through the run's steps, then run() computes the rest
    run = execute.open_run(S.Store(tmp_path), spec, lm, spec.used)
    assert execute.compute_shard(run, 0, lm, spec.used, p) == "written"
    kwargs = {k: p[k] for k in ("bos_policy", "use_chat_template", "wordings", "probe_by",
                                "n_splits", "inner_splits", "seed")}
    res = execute.run(lm, pairs, name, store=tmp_path, shard_size=size, progress=False, **kwargs)
    assert res.runs[name] == run.id and res.computed == {name: 1}
    again = execute.run(lm, pairs, name, store=tmp_path, shard_size=size, progress=False, **kwargs)
    assert again.computed == {name: 0}
    pd.testing.assert_frame_equal(res.measures, again.measures)
    st = S.Store(tmp_path)
    assert st.run(run.id).complete and execute.verify(st, [run.id]) == []
    assert st.run(run.id).shard_names() == st.run(run.id).shards()

    # round trip: what the store holds of shard 0 is what compute_shard returned
    stored = res.measures.drop(columns="run")
    if measures is not None:
        back = stored[stored.pair_id.isin(shard.pair_id)].reset_index(drop=True)
        key = [c for c in base.MEASURE_COLUMNS if c != "value"]
        back = back.sort_values(key).reset_index(drop=True)
        mine = measures.sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(back[key].astype(str), mine[key].astype(str))
        np.testing.assert_allclose(back["value"], mine["value"], rtol=0, atol=1e-6)
    for detail, value in details.items():
        if isinstance(value, pd.DataFrame):
            got = st.detail(run.id, detail)
            got = got[[c for c in value.columns]].iloc[:len(value)].reset_index(drop=True)
            pd.testing.assert_frame_equal(got, value.reset_index(drop=True), check_dtype=False,
                                          atol=1e-6)
        else:
            np.testing.assert_allclose(st.arrays(run.id, detail)[0], value, rtol=0, atol=1e-6)
    if m.finish_shard:  # the run-level step's measures are stored and are the method's
        assert st.run(run.id).is_done(m.finish_shard)
        assert len(stored) and set(stored["method"]) == {name}
