"""Issue 43, item 5: one results store per execute, a run's pairs restored once (when it is
opened), and a read path that writes nothing into the store."""

import hashlib
import json

import pandas as pd
import pytest
from click.testing import CliRunner

from xcomps_utils.runs import cli, execute as methods, planner, store as S

MODEL = "smollm2-135m-instruct"


def _rows(pair, delta):
    """Direct's ``delta`` and ``correct`` of one pair (a row of a spec's pairs)."""
    ids = {c: pair[c] for c in planner.ID}
    return pd.DataFrame([{**ids, "method": "direct", "wording": "", "order": "", "layer": -1,
                          "measure": m, "value": v}
                         for m, v in (("delta", delta), ("correct", float(delta > 0)))])


def _snapshot(root):
    """Every path under ``root``: a folder as ``"folder"``, a file as (size, mtime in ns,
    SHA-256). The tests run as root, so a store's permission bits stop no write: the snapshot,
    taken before and compared after, is the check that nothing was written."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            out[rel] = "folder"
        else:
            st = p.stat()
            out[rel] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture
def stored_run(data_dir, tmp_path):
    """A complete Direct run of 3 BLiMP pairs as the planner keys it for SmolLM2 on the CPU in
    float32 (its model identity from the package's files: no model loads), 3 shards of fake
    numbers; returns (store folder, spec, model identity, run)."""
    from xcomps_utils.lm import models
    from xcomps_utils.pairs import tasks

    pairs = tasks.sample(["blimp_anaphor"], 3, 0)
    (spec,) = planner.plan(MODEL, pairs, ["direct"], {}, store=tmp_path, shard_size=1,
                           device="cpu", dtype="float32")
    ident = models.model_identity(MODEL, device="cpu", dtype="float32")
    run = S.Store(tmp_path).open_run(spec.key(ident), spec.used, 1, {})
    for i in range(3):
        run.write_shard(i, _rows(spec.used.iloc[i], i - 1.0),
                        {"direct_tokens": pd.DataFrame({"x": [i] * 5})}, seconds=1.0)
    run.finish()
    return tmp_path, spec, ident, run


def _no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr(planner, "load", refuse)
    from xcomps_utils.lm import models
    monkeypatch.setattr(models, "load_model", refuse)


def _damage(run, damage):
    """``pairs missing``: pairs.parquet deleted; ``pairs altered, older record``: a run.json from
    before pairs.parquet was recorded, and a pair's text changed (caught by the key's
    pairs_sha256)."""
    if damage == "pairs missing":
        (run.folder / "pairs.parquet").unlink()
    elif damage == "pairs altered, older record":
        rec = run.record
        del rec["pairs_file"]
        (run.folder / "run.json").write_text(json.dumps(rec))
        pairs = run.pairs()
        pairs.loc[1, "bad"] = "Someone else."
        pairs.to_parquet(run.folder / "pairs.parquet", index=False)


@pytest.mark.parametrize("damage", ["none", "pairs missing", "pairs altered, older record"])
def test_reading_a_stored_run_writes_nothing_into_the_store(stored_run, damage, monkeypatch):
    """stored(), Results' reads, `ls` and `verify` (no --repair) leave every file of the store
    as it was (path, size, mtime, SHA-256), a run whose pairs.parquet is missing or altered
    included: restoring it is the rerun's job (open_run), not a read's."""
    root, spec, ident, run = stored_run
    _damage(run, damage)
    _no_model(monkeypatch)
    before = _snapshot(root)
    store = S.Store(root)
    found = methods.stored(store, spec, ident=ident)
    assert _snapshot(root) == before
    if damage == "none":
        assert found["run"] == run.id and found["computed"] == 0 and not found["opened"]
        res = methods.run(MODEL, spec.used, "direct", store=store, device="cpu",
                          dtype="float32", shard_size=1, progress=False)
        assert res.runs == {"direct": run.id} and res.computed == {"direct": 0}
        wide = res.wide("direct").set_index("pair_id").loc[spec.used.pair_id]
        assert wide.delta.tolist() == [-1.0, 0.0, 1.0] and wide.correct.tolist() == [0, 0, 1]
        assert len(res.detail("direct_tokens")) == 15
        assert res.provenance("direct")["status"] == "complete"
        assert res.compute_seconds() == {"direct": 3.0}
        assert "read from the results store" in res.describe_model()
        assert len(run.pairs()) == 3
    else:  # not served as it is: the rerun (open_run) restores the pairs
        assert found is None
        assert [p["file"] for p in methods.verify(store)] == [f"runs/{run.id}/pairs.parquet"]
    listed = CliRunner().invoke(cli.main, ["ls", "--store", str(root)])
    assert listed.exit_code == 0 and run.id in listed.output
    checked = CliRunner().invoke(cli.main, ["verify", "--store", str(root)])
    assert checked.exit_code == (0 if damage == "none" else 1), checked.output
    assert _snapshot(root) == before


def test_one_store_per_execute_and_the_pairs_restored_once_when_the_run_opens(
        lm, data_dir, tmp_path, monkeypatch):
    """One execute of a small real run (4 BLiMP pairs, SmolLM2 on the CPU, 2 shards) builds one
    Store, whether it resumes a killed run, reads a complete one, or restores a deleted
    pairs.parquet; run() builds one in all. The restore is one write, when the run opens
    (open_run): the same run, nothing recomputed, the same numbers."""
    from xcomps_utils.pairs import tasks

    pairs = tasks.sample(["blimp_anaphor"], 4, 0)
    (spec,) = planner.plan(MODEL, pairs, ["direct"], {}, store=tmp_path, shard_size=2,
                           device="cpu", dtype="float32")
    # a run killed after its first shard
    run = methods.open_run(S.Store(tmp_path), spec, lm, spec.used)
    assert methods.compute_shard(run, 0, lm, spec.used, spec.p) == "written"

    built, writes = [], []
    init, write_pairs = S.Store.__init__, S.Run.write_pairs
    monkeypatch.setattr(S.Store, "__init__", lambda self, *a, **k: (built.append(a or k),
                                                                     init(self, *a, **k))[1])
    monkeypatch.setattr(S.Run, "write_pairs", lambda self, p: (writes.append(self.id),
                                                               write_pairs(self, p))[1])

    def execute():
        built.clear()
        (row,) = methods.execute([spec], lm=lm, progress=False)
        assert len(built) == 1, built
        return row

    resumed = execute()
    assert resumed["run"] == run.id and resumed["computed"] == 1 and resumed["opened"]
    read = execute()
    assert read["computed"] == 0 and not read["opened"]
    built.clear()
    res = methods.run(lm, pairs, "direct", store=tmp_path, shard_size=2, progress=False)
    assert len(built) == 1 and res.runs == {"direct": run.id} and res.computed == {"direct": 0}
    assert writes == []  # the pairs were written once, when the run was created

    (run.folder / "pairs.parquet").unlink()
    assert methods.stored(S.Store(tmp_path), spec, ident=lm.identity()) is None
    restored = execute()
    assert restored["computed"] == 0 and restored["opened"] and writes == [run.id]
    store = S.Store(tmp_path)
    assert methods.verify(store) == [] and store.run(run.id).pairs().equals(
        spec.used.reset_index(drop=True))
    pd.testing.assert_frame_equal(store.measures([run.id]), res.measures)
    assert methods.execute([spec], lm=lm, progress=False)[0]["opened"] is False


def test_specs_of_two_stores_are_refused_before_any_work(stored_run, tmp_path, monkeypatch):
    root, spec, ident, run = stored_run
    (other,) = planner.plan(MODEL, spec.used, ["direct"], {}, store=tmp_path / "other",
                            device="cpu", dtype="float32")
    _no_model(monkeypatch)
    with pytest.raises(ValueError, match=r"the 'specs' parameter must name one results store"):
        methods.execute([spec, other], progress=False)
    with pytest.raises(ValueError, match=r"must name one results store \(that of 'store'"):
        methods.execute([spec], store=S.Store(tmp_path / "other"), progress=False)
    assert not (tmp_path / "other").exists()
