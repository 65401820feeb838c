"""Sweeps (models x data x methods) on a local Ray and in one process: the same runs as
`xcomps-study run`, every shard written once however workers die, resumable, validated."""

import os
import sys
import threading

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from xcomps_utils.declare import ParameterError
from xcomps_utils.pairs import xcomps
from xcomps_utils.runs import (cli, execute as methods, planner, ray_executor as RE, store as S,
                               sweep as SW)

ID = ["run", "method", "dataset", "task", "lang", "subset", "pair_id", "item", "wording", "order",
      "layer", "measure"]
LANGS = ["en", "de"]
ITEMS = 2          # 2 concept-property items x 4 negatives x 2 languages = 16 pairs
SHARD = 4          # 4 shards a run


def _file(tmp_path, name="sweep.yaml", **fields):
    sweep = {"models": ["smollm2-135m-instruct"], "methods": ["direct"], "dtype": "float32",
             "device": "cpu", "shard_size": SHARD,
             "data": [{"languages": LANGS, "items_per_language": ITEMS}]}
    sweep.update(fields)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(sweep))
    return path


def _sorted(m):
    return m.sort_values(ID).reset_index(drop=True)


def _assert_same(a, b):
    """Same rows, same float32-model values (nothing lost, nothing twice)."""
    assert not a.duplicated(ID).any() and not b.duplicated(ID).any()
    pd.testing.assert_frame_equal(_sorted(a[b.columns]), _sorted(b))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread, as each replica of the local Ray has (``num_cpus: 1``): float32
    log-probabilities then agree bit for bit between processes (with 1 vs 2 threads they differ
    by up to 3.7e-5 nats per token on SmolLM2: the matrix products sum in another order)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray for the module (start-up: a few seconds)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def pairs():
    return xcomps.load_languages(LANGS, items_per_language=ITEMS, seed=0)


@pytest.fixture(scope="module")
def reference(lm, pairs, tmp_path_factory):
    """The single-process run (methods.run, as `xcomps-study run`) of direct and meta."""
    return methods.run(lm, pairs, ["direct", "meta"], store=tmp_path_factory.mktemp("ref"),
                       shard_size=SHARD, progress=False)


# --- the sweep file ------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, message", [
    ({"methods": ["direkt"]}, "the 'methods[0]' parameter must be one of the 4 methods ('direct', "
                              "'meta', 'neuro', 'token_ppl'); got 'direkt'; did you mean "
                              "'direct'?"),
    ({"modles": ["x"]}, "'modles' is not a parameter (the parameters: bos_policy, token_budget, "
                        "batch_size, use_chat_template, wordings, probe_by, n_splits, "
                        "inner_splits, seed, store, models, methods, data, device, dtype, "
                        "revision, shard_size, executor, ray); did you mean 'models'?"),
    ({"data": [{"tasks": ["blimp_anaphor"]}], "methods": ["meta"]},
     "the 'methods' parameter must be methods a pair set of tasks can run ('direct', 'neuro', "
     "'token_ppl'); got 'meta'; Meta needs XCOMPS or BMLAMA pairs (its question names a "
     "concept's property or a fact's candidates) (a pair set with 'languages'); give data[0] "
     "its own 'methods' list"),
    ({"data": [{"languages": ["en", "xx"]}]}, "the 'data[0].languages[1]' parameter must be one "
                                              "of the 7 XCOMPS sample languages ('en', 'de', "
                                              "'fr', 'zh', 'vi', 'tr', 'hu'); got 'xx'"),
    ({"data": [{"tasks": ["blimp_anaphora"]}]}, "the 'data[0].tasks[0]' parameter must be a task "
                                                "name (`xcomps-study tasks` lists them); got "
                                                "'blimp_anaphora'; unknown task 'blimp_anaphora'; "
                                                "did you mean 'blimp_anaphor', 'blimp_animacy'? "),
    ({"data": [{"languages": ["en"], "tasks": ["dust"]}]},
     "the 'data[0]' parameter must be a pair set with either 'languages' (XCOMPS) or 'tasks': "),
    ({"data": [{"languages": ["en"], "n_pairs": 3}]}, "'data[0].n_pairs' is not a parameter (the "
                                                      "parameters: languages, source, "
                                                      "items_per_language, methods)"),
    ({"shard_size": 0}, "the 'shard_size' parameter must be an integer >= 1, a mapping of "
                        "methods to integers >= 1 ({direct: 1000, meta: 200}) or None (each "
                        "method's default); got 0"),
    ({"shard_size": {"direct": 5, "neuroo": 2}}, "the 'shard_size.neuroo' parameter must be one "
                                                 "of the 4 methods ('direct', 'meta', 'neuro', "
                                                 "'token_ppl'); got 'neuroo'; did you mean "
                                                 "'neuro'?"),
    ({"dtype": "float64"}, "the 'dtype' parameter must be one of 'auto', 'float32', 'bfloat16', "
                           "'float16' (or 'fp32', 'bf16', 'fp16'); got 'float64'"),
    ({"ray": {"replicas": "many"}}, "the 'ray.replicas' parameter must be 'auto' or an integer "
                                    ">= 1; got 'many'"),
    ({"ray": {"num_gpu": 1}}, "'ray.num_gpu' is not a parameter (the parameters: address, "
                              "replicas, num_gpus, num_cpus, probe_cpus, max_retries); did you "
                              "mean 'num_gpus'?"),
    ({"executor": "dask"}, "the 'executor' parameter must be one of 'auto', 'ray', 'local'; got "
                           "'dask'"),
    ({"models": []}, "the 'models' parameter must be a non-empty list, each a model: an embedded "
                     "name (`xcomps-study tasks` lists them), a local folder or a Hugging Face "
                     "id; got []"),
])
def test_sweep_file_errors_name_file_field_and_what_is_allowed(tmp_path, fields, message):
    """In the one form of :mod:`xcomps_utils.declare`, prefixed with the file."""
    path = _file(tmp_path, **fields)
    with pytest.raises(ParameterError) as err:
        SW.load_sweep(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)
    assert "\n" not in str(err.value)


def test_a_short_dtype_name_is_the_long_one(tmp_path):
    assert SW.load_sweep(_file(tmp_path, dtype="bf16")).dtype == "bfloat16"


def test_meta_runs_on_bmlama_tasks_in_a_sweep_file(tmp_path):
    s = SW.load_sweep(_file(tmp_path, data=[{"tasks": ["bmlama17:vi", "bmlama53:de"],
                                          "n_pairs": 18}], methods=["direct", "meta"]))
    assert s.methods == ["direct", "meta"]


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("models: [smollm2-135m-instruct\nmethods: [direct]\n")
    with pytest.raises(SW.SweepError, match=r"broken\.yaml: line \d+, column \d+ not valid YAML"):
        SW.load_sweep(path)
    r = CliRunner().invoke(cli.main, ["sweep", str(path)])
    assert r.exit_code == 1 and "not valid YAML" in r.output


def test_plan_selects_the_pairs_xcomps_study_run_selects(tmp_path, data_dir):
    sweep = SW.load_sweep(_file(tmp_path, models=["smollm2-135m-instruct", "gemma-3-270m"],
                                methods=["direct", "token_ppl"], shard_size={"token_ppl": 2},
                                data=[{"tasks": ["blimp_anaphor"], "n_pairs": 5}]))
    specs = SW.plan(sweep, tmp_path / "store")
    assert [(s.model, s.method, s.n_shards) for s in specs] == [
        ("smollm2-135m-instruct", "direct", 1), ("smollm2-135m-instruct", "token_ppl", 3),
        ("gemma-3-270m", "direct", 1), ("gemma-3-270m", "token_ppl", 3)]
    sets = planner.select(["direct", "token_ppl"], ["blimp_anaphor"], n_pairs=5)
    same = planner.plan(["smollm2-135m-instruct"], sets, store=tmp_path / "store",
                        shard_size={"token_ppl": 2})
    for a, b in zip(same, specs):
        assert a.key_rest == b.key_rest and a.datasets == b.datasets  # one key, one provenance
        assert a.used.pair_id.tolist() == b.used.pair_id.tolist()
    assert specs[0].datasets == {"blimp/anaphor_gender_agreement.jsonl": specs[0].datasets[
        "blimp/anaphor_gender_agreement.jsonl"]}  # derived from the pairs' task
    out = CliRunner().invoke(cli.main, ["sweep", str(_file(tmp_path)), "--dry-run"])
    assert out.exit_code == 0 and "1 runs, 4 shards" in out.output


# --- writing a shard exactly once ----------------------------------------------------------------

def test_racing_attempts_of_a_shard_one_writes_the_other_is_a_no_op(tmp_path):
    st = S.Store(tmp_path)
    pairs = pd.DataFrame({"dataset": ["x"], "pair_id": ["1"], "good": ["a"], "bad": ["b"]})
    run = st.open_run({"method": "direct", "model": "m"}, pairs, 1, {})
    n, barrier, won = 8, threading.Barrier(8), {}

    def attempt(k):
        rows = pd.DataFrame([{c: "" for c in S.MEASURE_COLUMNS}]).assign(layer=-1, value=k)
        big = {"direct_tokens": pd.DataFrame({"x": np.arange(200_000) + k})}  # a slow write
        barrier.wait()
        won[k] = run.commit_shard(0, rows, big)

    threads = [threading.Thread(target=attempt, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [k for k, w in won.items() if w]
    assert len(won) == n and len(winners) == 1  # exactly one wins, the others write nothing
    m = st.measures([run.id])
    assert m.value.tolist() == [winners[0]]
    assert st.detail(run.id, "direct_tokens").x.iloc[0] == winners[0]  # files of the winner
    assert run.done() == {"shard-00000"}
    assert not run.commit_shard(0, m.drop(columns="run"))  # later: a no-op, no StoreError


# --- Ray ------------------------------------------------------------------------------------------

def test_ray_sweep_equals_the_single_process_run(ray_local, reference, tmp_path):
    path = _file(tmp_path, methods=["direct", "meta"], store=str(tmp_path / "store"))
    r = CliRunner().invoke(cli.main, ["sweep", str(path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "on ray (2 replica(s))" in r.output and r.output.count("computed 4 shard(s)") == 2
    st = S.Store(tmp_path / "store")
    runs = st.runs()
    assert sorted(runs.run) == sorted(reference.runs.values())  # the same runs (keys, ids)
    assert set(runs.status) == {"complete"} and set(runs.shards) == {"4/4"}
    _assert_same(st.measures(list(runs.run)), reference.measures)
    assert st.run(reference.runs["meta"]).record["provenance"]["sweep"] == str(path)
    assert all(st.run(r).compute_seconds() > 0 for r in runs.run)  # the replicas timed shards
    listed = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path / "store")])
    assert listed.exit_code == 0 and reference.runs["direct"] in listed.output
    assert "complete" in listed.output and "float32" in listed.output
    again = CliRunner().invoke(cli.main, ["sweep", str(path), "--quiet"])  # read, not recomputed
    assert again.exit_code == 0 and again.output.count("read from the store") == 2


class _FilesThenExit(RE.Replica):
    """A replica whose shard ``shard`` writes its files, not its done marker, then dies (as a
    worker killed between them would), once: while the file ``once`` exists."""

    def __init__(self, *args, shard=1, once="", **kw):
        super().__init__(*args, **kw)
        from xcomps_utils.runs import store as S_

        write = S_.Run.write_shard

        def faulty(run, i, measures=None, details=None, seconds=None):
            write(run, i, measures, details, seconds)
            if i == shard and os.path.exists(once):
                os.unlink(once)
                (run.folder / "done" / S_._shard_name(i)).unlink()
                os._exit(17)

        S_.Run.write_shard = faulty


def test_killed_worker_loses_nothing_and_duplicates_nothing(ray_local, reference, tmp_path,
                                                            monkeypatch):
    """The replica computing shard 1 dies (os._exit) mid-shard: after writing the shard's files,
    before its done marker. Ray restarts it and retries the shard, which is written once."""
    import functools

    import ray

    once = tmp_path / "kill-once"
    once.touch()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    faulty = type("Faulty", (_FilesThenExit,), {"__init__": functools.partialmethod(
        _FilesThenExit.__init__, shard=1, once=str(once))})
    monkeypatch.setattr(RE, "Replica", faulty)
    res = SW.run_sweep(SW.load_sweep(_file(tmp_path, ray={"max_retries": 2})),
                       store=tmp_path / "store", progress=False)
    assert not once.exists()  # the worker was killed
    assert res.executor == "ray" and res.runs.status.tolist() == ["complete"]
    assert res.runs.run.tolist() == [reference.runs["direct"]]
    files = sorted(p.name for p in (tmp_path / "store" / "measures").rglob("*.parquet"))
    assert files == [f"shard-0000{i}.parquet" for i in range(4)]
    _assert_same(res.measures().drop(columns="model"),
                 reference.measures[reference.measures.method == "direct"])


@pytest.mark.slow  # the replicas load the model
def test_two_replicas_racing_on_one_shard_write_it_once(ray_local, tmp_path):
    ray = ray_local
    (spec,) = SW.plan(SW.load_sweep(_file(tmp_path)), tmp_path / "store")
    st = S.Store(spec.store)
    info = RE.Replica(st).open(spec, spec.used)
    actors = [ray.remote(RE.Replica).options(num_cpus=1).remote(st) for _ in range(2)]
    ref = [ray.put(spec.used)]
    outcome = ray.get([a.shard.remote(spec.light(), info["run"], 0, ref) for a in actors])
    assert sorted(outcome) == ["done", "written"]
    assert st.run(info["run"]).done() == {"shard-00000"}
    assert not st.measures([info["run"]]).duplicated(ID).any()
    for a in actors:
        ray.kill(a)


def test_neuro_probes_run_once_after_the_state_shards(ray_local, lm, tmp_path):
    pairs = xcomps.load_languages(LANGS, items_per_language=5, seed=0)
    ref = methods.run(lm, pairs, "neuro", store=tmp_path / "ref", shard_size=16,
                      probe_by=[[]], n_splits=3, inner_splits=2, progress=False)
    path = _file(tmp_path, methods=["neuro"], shard_size=16, probe_by=[[]], n_splits=3,
                 inner_splits=2,
                 data=[{"languages": LANGS, "items_per_language": 5}])
    res = SW.run_sweep(SW.load_sweep(path), store=tmp_path / "store", progress=False)
    (rid,) = res.runs.run
    assert rid == ref.runs["neuro"] and res.runs.computed.tolist() == [3]
    st = S.Store(tmp_path / "store")
    assert st.run(rid).done() == {"shard-00000", "shard-00001", "shard-00002", "probes"}
    for a, b in zip(st.arrays(rid), S.Store(tmp_path / "ref").arrays(rid)):
        np.testing.assert_array_equal(a, b)
    m = res.measures().drop(columns="model")
    assert set(m.measure) >= {"f1", "n_sentences"} and set(m.lang) == {"all"}  # one probe
    _assert_same(m, ref.measures)


# --- interrupted sweeps, and no Ray -------------------------------------------------------------

@pytest.mark.parametrize("stage", ["open", "compute", "files", "finish"])
def test_interrupted_sweep_resumes_from_finished_shards(lm, reference, tmp_path, stage,
                                                        monkeypatch):
    """Interrupted after opening the run, while computing shard 2, between shard 2's files and
    its marker, or after the last shard: the next sweep computes only what is missing. The
    interruptions are injected by monkeypatching the steps of a run."""
    sweep = SW.load_sweep(_file(tmp_path, executor="local"))

    def interrupt(*args, **kw):
        raise KeyboardInterrupt(f"test: interrupted at {stage}")

    if stage == "open":
        opened = methods.open_run
        monkeypatch.setattr(methods, "open_run", lambda *a: (opened(*a), interrupt())[0])
    elif stage == "compute":
        compute, calls = methods.SHARD["direct"], []

        def third_interrupted(lm, shard, p):  # shards 0 and 1 computed, 2 interrupted
            calls.append(1)
            return interrupt() if len(calls) == 3 else compute(lm, shard, p)
        monkeypatch.setitem(methods.SHARD, "direct", third_interrupted)
    elif stage == "files":
        write = S.Run.write_shard

        def files_only(run, i, *a, **kw):
            write(run, i, *a, **kw)
            if i == 2:
                (run.folder / "done" / S._shard_name(i)).unlink()
                interrupt()
        monkeypatch.setattr(S.Run, "write_shard", files_only)
    else:
        monkeypatch.setattr(methods, "finish", interrupt)
    with pytest.raises(KeyboardInterrupt):
        SW.run_sweep(sweep, store=tmp_path / "store", progress=False)
    monkeypatch.undo()
    st = S.Store(tmp_path / "store")
    (rid,) = st.runs().run
    assert st.runs().status.tolist() == ["running"]
    before = len(st.run(rid).done())
    assert before == {"open": 0, "compute": 2, "files": 2, "finish": 4}[stage]
    res = SW.run_sweep(sweep, store=tmp_path / "store", progress=False)
    assert res.runs.computed.tolist() == [4 - before] and res.runs.status.tolist() == ["complete"]
    _assert_same(res.measures().drop(columns="model"),
                 reference.measures[reference.measures.method == "direct"])


def test_without_ray_the_same_sweep_runs_in_one_process(lm, reference, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    sweep = SW.load_sweep(_file(tmp_path, methods=["direct", "meta"]))
    with pytest.raises(SW.SweepError, match=r"executor: ray is not installed; pip install "
                                            r"'xcomps-study\[ray\]'"):
        SW.run_sweep(sweep, executor="ray", store=tmp_path / "store")
    with pytest.warns(UserWarning, match="Ray is not installed"):
        res = SW.run_sweep(sweep, store=tmp_path / "store", progress=False)
    assert res.executor == "local" and res.runs.computed.tolist() == [4, 4]
    assert sorted(res.runs.run) == sorted(reference.runs.values())
    _assert_same(res.measures().drop(columns="model"), reference.measures)
