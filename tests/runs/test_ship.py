"""Shipping a store (Store.ship, `xcomps-study ship`): complete runs copied without the folders
no page reads, what was left out recorded, and every other file still verified."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from xcomps_utils.runs import cli, execute, store as S


@pytest.fixture(autouse=True)
def _no_read_log():
    """Each test leaves the process with no read log installed."""
    yield
    S.log_reads(None)


def _rows(k, value):
    return pd.DataFrame([{c: "" for c in S.MEASURE_COLUMNS}] * k).assign(layer=-1, value=value)


def _store(root, n_shards=3, model="m"):
    """A complete run with measures, a token detail and states, written as a run writes them."""
    import numpy as np

    st = S.Store(root)
    pairs = pd.DataFrame({"dataset": ["x"] * n_shards, "pair_id": list(map(str, range(n_shards))),
                          "good": ["a"] * n_shards, "bad": ["b"] * n_shards})
    run = st.open_run({"method": "direct", "model": model}, pairs, 1, {})
    for i in range(n_shards):
        run.write_shard(i, _rows(2, float(i)), {"direct_tokens": pd.DataFrame({"x": [i] * 5}),
                                                "states": np.full((1, 2, 3), float(i),
                                                                  dtype=np.float32)})
    run.finish()
    return st, run.id


def test_a_shipped_run_verifies_reads_its_measures_and_says_what_it_lacks(tmp_path):
    src, rid = _store(tmp_path / "src")
    table = src.ship(tmp_path / "dest", omit=("states", "direct_tokens"))
    assert list(table.shipped) == ["copied"] and table.omitted.item() == ["direct_tokens", "states"]
    dest = S.Store(tmp_path / "dest")
    assert not (tmp_path / "dest" / "states").exists()
    assert not (tmp_path / "dest" / "direct_tokens").exists()
    assert execute.verify(dest) == []
    pd.testing.assert_frame_equal(dest.measures([rid]), src.measures([rid]))
    assert json.loads((tmp_path / "dest" / "shipped.json").read_text()) == {
        "omitted": {rid: ["direct_tokens", "states"]}}
    with pytest.raises(S.StoreError, match=r"direct_tokens were not shipped with this store"):
        dest.detail(rid, "direct_tokens")
    with pytest.raises(S.StoreError, match=r"states were not shipped"):
        dest.arrays(rid, "states")
    # again: nothing copied, nothing overwritten
    again = src.ship(tmp_path / "dest", omit=("states", "direct_tokens"))
    assert list(again.shipped) == ["already there"] and again.bytes.sum() == 0


def test_leaving_folders_out_hides_no_damage(tmp_path):
    src, rid = _store(tmp_path / "src")
    src.ship(tmp_path / "dest")  # states left out by default, tokens shipped
    dest = tmp_path / "dest"
    assert len(S.Store(dest).detail(rid, "direct_tokens")) == 15
    (dest / "direct_tokens" / f"run={rid}" / "shard-00001.parquet").unlink()
    m = dest / "measures" / f"run={rid}" / "shard-00002.parquet"
    m.write_bytes(m.read_bytes()[:-10])
    found = {(p["file"].split("/")[0], p["problem"].split(" ")[0])
             for p in execute.verify(S.Store(dest))}
    assert found == {("direct_tokens", "missing"), ("measures", "truncated")}


def test_a_store_holding_another_version_of_a_run_is_not_overwritten(tmp_path):
    src, rid = _store(tmp_path / "src")
    src.ship(tmp_path / "dest")
    marker = tmp_path / "dest" / "runs" / rid / "done" / "shard-00000"
    marker.write_text(marker.read_text().replace('"seconds"', '"Seconds"'))
    with pytest.raises(S.StoreError, match="holds another version of run"):
        src.ship(tmp_path / "dest")
    with pytest.raises(S.StoreError, match="measures are what a shipped run is"):
        src.ship(tmp_path / "other", omit=("measures",))


def test_ship_command_leaves_out_per_run_and_the_copy_verifies(tmp_path):
    src, rid = _store(tmp_path / "src")
    _, other = _store(tmp_path / "src", model="n")
    out = CliRunner().invoke(cli.main, ["ship", "--no-check", str(tmp_path / "dest"), "--store",
                                        str(tmp_path / "src"), "--omit", "states",
                                        "--omit", f"direct_tokens:{rid}"])
    assert out.exit_code == 0, out.output
    assert f"{rid}: copied, without direct_tokens, states" in out.output
    assert f"{other}: copied, without states" in out.output
    assert "2 run(s)" in out.output
    ok = CliRunner().invoke(cli.main, ["verify", "--store", str(tmp_path / "dest")])
    assert ok.exit_code == 0 and "every shard as recorded" in ok.output


def test_ship_reads_ships_what_the_chapters_read_and_nothing_else(tmp_path, monkeypatch):
    """Reads logged as a chapter's entry installs the log (S.log_reads): the run a page read is
    shipped with the detail it read; the run no page read, and the folders none read, stay."""
    src, read_run = _store(tmp_path / "src")
    _, unread_run = _store(tmp_path / "src", model="n")
    # the environment alone logs nothing: the store reads no variable, a chapter's entry does
    monkeypatch.setenv("XCOMPS_READS", str(tmp_path / "reads"))
    monkeypatch.setenv("XCOMPS_CHAPTER", "a_page")
    S.Store(tmp_path / "src").measures([read_run])
    assert not (tmp_path / "reads").exists()
    assert S.log_reads(tmp_path / "reads" / "a_page.jsonl") is None
    S.Store(tmp_path / "src").measures([read_run])
    S.Store(tmp_path / "src").detail(read_run, "direct_tokens")
    assert S.log_reads(None) == tmp_path / "reads" / "a_page.jsonl"
    S.Store(tmp_path / "src").detail(unread_run, "direct_tokens")  # not logged any more
    assert S.reads(tmp_path / "reads") == {read_run: {"measures", "direct_tokens"}}
    out = CliRunner().invoke(cli.main, ["ship", "--no-check", str(tmp_path / "dest"), "--store",
                                        str(tmp_path / "src"), "--reads", str(tmp_path / "reads")])
    assert out.exit_code == 0, out.output
    dest = S.Store(tmp_path / "dest")
    assert dest.ids() == [read_run] and unread_run not in out.output
    assert dest.omitted(read_run) == {"states"} and len(dest.detail(read_run, "direct_tokens"))
    (tmp_path / "reads" / "bad.jsonl").write_text('{"run": "x"}\n')
    with pytest.raises(S.StoreError, match=r"bad.jsonl, line 1: not a read record"):
        S.reads(tmp_path / "reads")


def test_an_interrupted_ship_is_finished_and_a_reshipped_store_keeps_what_it_lacked(tmp_path):
    src, rid = _store(tmp_path / "src")
    src.ship(tmp_path / "dest", omit=("states",))
    markers = sorted((tmp_path / "dest" / "runs" / rid / "done").iterdir())
    markers[-1].unlink()  # stopped while its done markers were copied (they come last)
    again = src.ship(tmp_path / "dest")
    assert list(again.shipped) == ["completed"] and execute.verify(S.Store(tmp_path / "dest")) == []
    # shipping the shipped store on: the states it lacks stay declared, so it still verifies
    table = S.Store(tmp_path / "dest").ship(tmp_path / "third", omit=())
    assert table.omitted.item() == ["states"]
    assert execute.verify(S.Store(tmp_path / "third")) == []


def test_the_audit_still_fails_a_damaged_run_shipped_without_states(tmp_path):
    from xcomps_utils.runs import audit as A

    src, rid = _store(tmp_path / "src")
    src.ship(tmp_path / "dest")
    assert A._check(S.Store(tmp_path / "dest")) == {rid}  # the states declared left out
    m = tmp_path / "dest" / "measures" / f"run={rid}" / "shard-00000.parquet"
    m.write_bytes(m.read_bytes()[:-8])
    with pytest.raises(A.AuditError, match=rf"run {rid}: shard shard-00000: .*truncated"):
        A._check(S.Store(tmp_path / "dest"))


def test_reads_of_another_store_and_unknown_folders_are_refused(tmp_path):
    src, rid = _store(tmp_path / "src")
    other, other_rid = _store(tmp_path / "elsewhere", model="n")
    S.log_reads(tmp_path / "reads" / "a_page.jsonl")
    src.measures([rid])
    other.measures([other_rid])  # e.g. an exercise's temporary store
    S.log_reads(None)
    assert S.reads(tmp_path / "reads", tmp_path / "src") == {rid: {"measures"}}
    assert set(S.reads(tmp_path / "reads")) == {rid, other_rid}
    out = CliRunner().invoke(cli.main, ["ship", "--no-check", str(tmp_path / "dest"), "--store",
                                        str(tmp_path / "src"), "--reads", str(tmp_path / "reads")])
    assert out.exit_code == 0 and S.Store(tmp_path / "dest").ids() == [rid], out.output
    bad = CliRunner().invoke(cli.main, ["ship", "--no-check", str(tmp_path / "d2"), "--store",
                                        str(tmp_path / "src"), "--omit", "state"])
    assert bad.exit_code == 1 and "--omit state: no run shipped has such a folder" in bad.output


def test_the_command_line_run_inside_a_chapters_build_logs_its_reads_with_the_chapters(
        tmp_path, monkeypatch):
    """A command a chapter runs (the reproducibility page's ``xcomps-study run``) logs what it
    reads where the chapter's reads go ($XCOMPS_READS/$XCOMPS_CHAPTER.jsonl); outside a build,
    nothing."""
    src, rid = _store(tmp_path / "src")
    assert CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path / "src")]).exit_code == 0
    assert S.log_reads(None) is None
    monkeypatch.setenv("XCOMPS_READS", str(tmp_path / "reads"))
    monkeypatch.setenv("XCOMPS_CHAPTER", "reproducibility")
    assert CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path / "src")]).exit_code == 0
    src.measures([rid])
    assert S.reads(tmp_path / "reads") == {rid: {"measures"}}
    assert (tmp_path / "reads" / "reproducibility.jsonl").is_file()
