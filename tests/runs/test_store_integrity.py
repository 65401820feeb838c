"""Issue 20: the store verifies what it serves (repro 1), concurrent runs share shards (repro 4),
`xcomps-study verify [--repair]`, and the store's one-line errors (repro 6)."""

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from xcomps_utils.pairs import tasks
from xcomps_utils.runs import cli, execute as methods, store as S

CLI = [sys.executable, "-m", "xcomps_utils.runs.cli"]


def _rows(k, value):
    return pd.DataFrame([{c: "" for c in S.MEASURE_COLUMNS}] * k).assign(layer=-1, value=value)


def _fake_run(root, n_shards=3):
    """A complete run of ``n_shards`` shards of 2 rows each, written as methods.run writes."""
    st = S.Store(root)
    pairs = pd.DataFrame({"dataset": ["x"] * n_shards, "pair_id": list(map(str, range(n_shards))),
                          "good": ["a"] * n_shards, "bad": ["b"] * n_shards})
    run = st.open_run({"method": "direct", "model": "m"}, pairs, 1, {})
    for i in range(n_shards):
        run.write_shard(i, _rows(2, float(i)), {"direct_tokens": pd.DataFrame({"x": [i] * 5})})
    run.finish()
    return st, run


def _digests(root):
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "quarantine" not in p.parts
            and "locks" not in p.parts}


def test_done_marker_records_every_file_with_rows_and_sha256(tmp_path):
    st, run = _fake_run(tmp_path, 1)
    files = json.loads((run.folder / "done" / "shard-00000").read_text())["files"]
    rel = f"measures/run={run.id}/shard-00000.parquet"
    assert set(files) == {rel, f"direct_tokens/run={run.id}/shard-00000.parquet"}
    assert files[rel]["rows"] == 2
    assert files[rel]["sha256"] == hashlib.sha256((tmp_path / rel).read_bytes()).hexdigest()
    assert st.verify() == []
    meta = pq.ParquetFile(tmp_path / rel).metadata
    assert meta.row_group(0).column(0).compression == S.PARQUET_COMPRESSION.upper()


def test_the_shipped_store_stays_within_50_mb_in_the_stores_codec():
    """Issue 44: the shipped store (``store/``) holds at most 50 MB (decimal), every Parquet
    file of it in the codec the store writes (``benchmarks/zstd_store.py`` re-encoded it)."""
    root = Path(__file__).resolve().parents[2] / "store"
    if not (root / "runs").is_dir():
        pytest.skip("no shipped store in this checkout")
    files = [p for p in root.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 50e6
    assert {pq.ParquetFile(p).metadata.row_group(0).column(0).compression
            for p in files if p.suffix == ".parquet"} == {S.PARQUET_COMPRESSION.upper()}, \
        "a run shipped from an older results store: re-encode with benchmarks/zstd_store.py"


def test_a_complete_run_with_a_missing_shard_is_not_served_as_whole(tmp_path):
    """Repro 1: a deleted shard file made a 30-pair run read back as 20 pairs."""
    st, run = _fake_run(tmp_path, 3)
    assert len(st.measures([run.id])) == 6
    (tmp_path / "measures" / f"run={run.id}" / "shard-00001.parquet").unlink()
    with pytest.raises(S.StoreError) as err:
        S.Store(tmp_path).measures([run.id])
    msg = str(err.value)
    assert run.id in msg and "shard-00001" in msg and "missing" in msg
    assert f"xcomps-study verify --store {tmp_path} --repair" in msg
    with pytest.raises(S.StoreError, match="shard-00001"):
        S.Store(tmp_path).detail(run.id, "direct_tokens")  # every read checks


def test_deleted_marker_altered_rows_and_garbage_are_each_named(tmp_path):
    st, run = _fake_run(tmp_path, 3)
    m0 = tmp_path / "measures" / f"run={run.id}" / "shard-00000.parquet"
    m0.write_bytes(m0.read_bytes()[:-1] + b"\0")  # one byte altered, same size
    (run.folder / "done" / "shard-00002").unlink()
    problems = {(p["shard"], p["problem"].split(" ")[0]) for p in S.Store(tmp_path).verify()}
    assert problems == {("shard-00000", "altered"), ("shard-00002", "done")}


def test_garbage_run_json_is_a_one_line_error_under_ls(tmp_path):
    st, run = _fake_run(tmp_path, 1)
    (run.folder / "run.json").write_text("{not json")
    r = subprocess.run(CLI + ["ls", "--store", str(tmp_path)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "run.json is not a readable run record" in r.stderr and run.id in r.stderr


def test_store_pointing_at_a_file_is_an_error_not_no_runs(tmp_path):
    f = tmp_path / "store.txt"
    f.write_text("x")
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(f)])
    assert r.exit_code == 1 and "is a file, not a folder" in r.output and "no runs" not in r.output
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                                      "--store", str(f)])
    assert r.exit_code == 1 and "is a file, not a folder" in r.output


def _read_only(tmp_path):
    if os.geteuid() == 0:  # root writes anywhere but on a read-only file system
        return "/sys/xcomps-store"
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return str(d)


def test_read_only_store_fails_before_the_model_loads(data_dir, tmp_path, guard):
    store = _read_only(tmp_path)
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--device", "cpu", "--store", store], capture_output=True,
                       text=True, env=guard.env(), timeout=600)  # a hang guard
    assert guard.loads() == []  # no model was loaded (the guard refuses and records it)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "is not writable" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cooperating_runs_skip_a_shard_another_process_holds_or_finished(lm, data_dir, tmp_path):
    """Repro 4: a second identical run redid the first one's shards and ended in StoreError.
    Here another holder has shard 1 locked while this run starts; it commits the shard, and
    this run skips it (its values are the other holder's) and ends complete."""
    pairs = tasks.sample(["blimp_anaphor"], 4, 0)
    ref = methods.run(lm, pairs, "direct", store=tmp_path / "ref", shard_size=1, progress=False)
    rid = ref.runs["direct"]
    st = S.Store(tmp_path / "store")
    key = ref.provenance("direct")["key"]
    run = st.open_run(key, S.Store(tmp_path / "ref").run(rid).pairs(), 1, {})
    assert run.id == rid
    lock, held = run.lock(1), threading.Event()
    other = ref.measures[ref.measures.pair_id == pairs.pair_id.iloc[1]].drop(columns="run")

    def other_process():
        with lock:
            held.set()
            time.sleep(3)
            run.write_shard(1, other.assign(value=-7.0))

    t = threading.Thread(target=other_process)
    t.start()
    held.wait()
    res = methods.run(lm, pairs, "direct", store=st, shard_size=1, progress=False)
    t.join()
    assert res.computed["direct"] == 3  # shards 0, 2, 3; shard 1 was the other's
    assert st.run(rid).complete and st.verify() == []
    mine = res.measures.set_index(["pair_id", "measure"]).value
    assert (mine.loc[pairs.pair_id.iloc[1]] == -7.0).all()
    again = methods.run(lm, pairs, "direct", store=st, shard_size=1, progress=False)
    assert again.computed["direct"] == 0  # and a finished run is read, not an error


def test_two_identical_cli_runs_at_once_both_end_rc_0_with_one_result(lm, data_dir, tmp_path):
    args = CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "12", "--shard-size",
                  "1", "--device", "cpu", "--dtype", "float32", "--store", str(tmp_path),
                  "--quiet"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    tables = [o.split("\n", 1)[1] for o, _ in outs]
    assert tables[0] == tables[1]  # the same accuracy table
    rid = outs[0][0].split(":")[0]
    written = sum(int(o.split("computed ")[1].split(" ")[0]) if "computed" in o else 0
                  for o, _ in outs)
    assert written == 12  # every shard computed once, by one of them
    assert S.Store(tmp_path).run(rid).done() == {f"shard-{i:05d}" for i in range(12)}
    assert S.Store(tmp_path).verify() == []


def test_verify_names_deleted_truncated_and_garbage_shards_and_repair_restores_them(
        lm, data_dir, tmp_path):
    pairs = tasks.sample(["blimp_anaphor"], 5, 0)
    res = methods.run(lm, pairs, "direct", store=tmp_path, shard_size=1, progress=False)
    rid = res.runs["direct"]
    before = _digests(tmp_path)
    d = tmp_path / "measures" / f"run={rid}"
    (d / "shard-00001.parquet").unlink()
    t = tmp_path / "direct_tokens" / f"run={rid}" / "shard-00002.parquet"
    t.write_bytes(t.read_bytes()[:100])
    g = d / "shard-00003.parquet"
    g.write_bytes(os.urandom(g.stat().st_size + 10))
    untouched = {k: v for k, v in _digests(tmp_path).items()
                 if not any(f"shard-0000{i}" in k for i in (1, 2, 3))}

    r = CliRunner().invoke(cli.main, ["verify", "--store", str(tmp_path)])
    assert r.exit_code == 1
    assert f"{rid}: shard-00001: measures/run={rid}/shard-00001.parquet missing" in r.output
    assert f"shard-00002: direct_tokens/run={rid}/shard-00002.parquet truncated" in r.output
    assert f"shard-00003: measures/run={rid}/shard-00003.parquet altered" in r.output
    assert "3 damaged shard(s) in 1 run(s)" in r.output and "--repair" in r.output

    r = CliRunner().invoke(cli.main, ["verify", "--store", str(tmp_path), "--repair",
                                      "--quiet"])
    assert r.exit_code == 0, r.output
    assert "repaired 3 shard(s)" in r.output
    after = _digests(tmp_path)
    assert {k: after[k] for k in untouched} == untouched  # nothing else touched
    for k in before:  # the recomputed files equal the originals (markers carry a time)
        if "/done/" not in k:
            assert after[k] == before[k], k
    quarantine = {p.name for p in (tmp_path / "quarantine").rglob("*") if p.is_file()}
    assert {"shard-00001", "shard-00002", "shard-00003"} <= quarantine  # moved, not deleted
    assert S.Store(tmp_path).verify() == []
    again = methods.run(lm, pairs, "direct", store=tmp_path, shard_size=1, progress=False)
    assert again.computed["direct"] == 0
    pd.testing.assert_frame_equal(again.measures, res.measures)


def test_repair_of_a_neuro_run_recomputes_a_state_shard_and_the_probes(lm, tmp_path):
    from xcomps_utils.pairs import xcomps

    pairs = xcomps.load_languages(["en"], source="sample", items_per_language=6, seed=0)
    res = methods.run(lm, pairs, ["neuro"], store=tmp_path, probe_by=[["lang"]], shard_size=12,
                      progress=False)
    rid = res.runs["neuro"]
    assert S.Store(tmp_path).run(rid).done() == {"shard-00000", "shard-00001", "probes"}
    (tmp_path / "states" / f"run={rid}" / "shard-00001.npy").unlink()
    (tmp_path / "measures" / f"run={rid}" / "probes.parquet").write_bytes(b"garbage")
    st = S.Store(tmp_path)
    assert {p["shard"] for p in st.verify()} == {"shard-00001", "probes"}
    assert [r["shard"] for r in methods.repair(st)] == ["shard-00001", "probes"]
    assert S.Store(tmp_path).verify() == []
    again = methods.run(lm, pairs, ["neuro"], store=tmp_path, probe_by=[["lang"]],
                        shard_size=12, progress=False)
    assert again.computed["neuro"] == 0
    pd.testing.assert_frame_equal(again.measures, res.measures)


def test_neuro_probes_do_not_depend_on_the_number_of_workers(lm, tmp_path, monkeypatch):
    """neuro.probes runs the groups' probes in worker processes: one worker and two give the
    same frame, equal to what the run stored (every fit is single-threaded and seeded)."""
    from xcomps_utils.methods.neuro import probes
    from xcomps_utils.pairs import xcomps
    from xcomps_utils.runs import planner

    pairs = xcomps.load_languages(["en", "de"], source="sample", items_per_language=6, seed=0)
    res = methods.run(lm, pairs, ["neuro"], store=tmp_path, progress=False)
    rid = res.runs["neuro"]
    run = S.Store(tmp_path).run(rid)
    p = planner.parameters_of(run.record["key"])
    out = {}
    for jobs in (1, 2):
        monkeypatch.setenv("XCOMPS_PROBE_JOBS", str(jobs))
        out[jobs] = probes(S.Store(tmp_path), rid, run.pairs(), p)
    pd.testing.assert_frame_equal(out[1], out[2])
    stored = S.Store(tmp_path).measures([rid])
    assert len(out[2]) == len(stored) and len(out[2]) > 0
    assert {"en", "de"} <= set(out[2]["lang"])
    np.testing.assert_array_equal(
        np.sort(out[2]["value"].to_numpy()), np.sort(stored["value"].to_numpy()))


def test_a_run_names_the_chapter_that_computed_it(monkeypatch):
    """The provenance names ``$XCOMPS_CHAPTER`` (the Makefile's chapter rule sets it), so the
    chapters' tests tell which page computed a run when make smoke executes two at once."""
    from xcomps_utils.runs.results import provenance

    monkeypatch.setenv("XCOMPS_CHAPTER", "xcomps_token_level")
    assert provenance()["chapter"] == "xcomps_token_level"
    monkeypatch.delenv("XCOMPS_CHAPTER")
    assert "chapter" not in provenance()
