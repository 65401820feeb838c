"""Issue 30: a store that serves only what it recorded, inputs refused before work, chapters that
check every parameter. One test per case of the issue (the case table: README, "Reliability")."""

import errno
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from xcomps_utils.declare import ParameterError
from xcomps_utils.pages import params
from xcomps_utils.runs import cli, execute as methods, planner, store as S, sweep as SW

REPO = Path(__file__).resolve().parents[2]


def _rows(k, value):
    return pd.DataFrame([{c: "" for c in S.MEASURE_COLUMNS}] * k).assign(layer=-1, value=value)


def _fake_run(root, n_shards=3, model="m", complete=True):
    """A run of ``n_shards`` shards of 2 rows (values 0.0, 1.0, ...), keyed as planner keys
    (its pairs' SHA-256 in the key)."""
    st = S.Store(root)
    pairs = planner.prepare_pairs(pd.DataFrame({
        "dataset": ["x"] * n_shards, "pair_id": [str(i) for i in range(n_shards)],
        "good": ["a"] * n_shards, "bad": ["b"] * n_shards}))
    used = pairs[planner.ID + ["good", "bad"]]
    key = {"method": "direct", "model": model,
           "pairs_sha256": planner.pairs_sha256(used, ("good", "bad"))}
    run = st.open_run(key, used, 1, {})
    for i in range(n_shards):
        run.write_shard(i, _rows(2, float(i)), {"direct_tokens": pd.DataFrame({"x": [i] * 5})})
    if complete:
        run.finish()
    return st, run


def _no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr(planner, "load", refuse)
    from xcomps_utils.lm import models
    monkeypatch.setattr(models, "load_model", refuse)


def _verify(root, *extra):
    return CliRunner().invoke(cli.main, ["verify", "--store", str(root), *extra])


# --- 1. a run is exactly what its records say ------------------------------------------------

def test_a_planted_copy_of_a_shard_is_foreign_never_read_and_moved_by_repair(tmp_path):
    st, run = _fake_run(tmp_path)
    d = tmp_path / "measures" / f"run={run.id}"
    shutil.copy(d / "shard-00001.parquet", d / "shard-00001 (copy).parquet")
    S.pq.write_table(S.pa.Table.from_pandas(_rows(2, 999.0)), d / "planted.parquet")
    with pytest.raises(S.StoreError, match="foreign"):
        S.Store(tmp_path).measures([run.id])
    problems = S.Store(tmp_path).verify()
    assert {p["file"].rsplit("/", 1)[1] for p in problems} == {"shard-00001 (copy).parquet",
                                                                 "planted.parquet"}
    assert all(p["repair"] == "move" and "foreign" in p["problem"] for p in problems)
    r = _verify(tmp_path)
    assert r.exit_code == 1 and "2 foreign file(s)" in r.output and "--repair" in r.output
    r = _verify(tmp_path, "--repair")
    assert r.exit_code == 0, r.output
    m = S.Store(tmp_path).measures([run.id])
    assert len(m) == 6 and m.value.max() == 2.0  # the 30-pair run reads 30 pairs, no 999


def test_reads_follow_the_markers_not_the_folder(tmp_path):
    st, run = _fake_run(tmp_path)
    assert [p.name for p in run.recorded("measures", ".parquet")] == [
        f"shard-0000{i}.parquet" for i in range(3)]
    (run.folder / "done" / "shard-00042").write_text(json.dumps({"files": {
        f"measures/run={run.id}/x.parquet": {"bytes": 1, "rows": 1, "sha256": "0"}}}))
    assert len(run.recorded("measures", ".parquet")) == 3  # a planted marker is not a shard
    assert [p["file"] for p in S.Store(tmp_path).verify()] == [f"runs/{run.id}/done/shard-00042"]


def test_tampered_pairs_file_stops_repair_before_a_model_loads(tmp_path, monkeypatch):
    st, run = _fake_run(tmp_path)
    pairs = run.pairs()
    pairs.loc[0, "good"] = "z"  # one letter for another, in the store's codec: the same size
    pairs.to_parquet(run.folder / "pairs.parquet", index=False, compression=S.PARQUET_COMPRESSION)
    (tmp_path / "measures" / f"run={run.id}" / "shard-00000.parquet").unlink()
    _no_model(monkeypatch)
    with pytest.raises(S.StoreError, match=r"pairs\.parquet altered"):
        methods.repair(S.Store(tmp_path))
    r = _verify(tmp_path, "--repair")
    assert r.exit_code == 1 and "pairs.parquet" in r.output and "rerun the run" in r.output
    assert "no repair can fix" in r.output


def test_pairs_checked_against_the_key_when_the_record_is_older(tmp_path, monkeypatch):
    """A run written before pairs.parquet was recorded: its pairs are checked against the key's
    pairs_sha256."""
    st, run = _fake_run(tmp_path)
    rec = run.record
    del rec["pairs_file"]
    (run.folder / "run.json").write_text(json.dumps(rec))
    assert methods.pairs_problem(run) is None
    pairs = run.pairs()
    pairs.loc[1, "bad"] = "y"
    pairs.to_parquet(run.folder / "pairs.parquet", index=False)
    assert "pairs_sha256" in methods.pairs_problem(S.Store(tmp_path).run(run.id))
    assert [p["file"] for p in methods.verify(S.Store(tmp_path))] == [
        f"runs/{run.id}/pairs.parquet"]


def test_deleted_pairs_file_is_named_and_repair_refuses_before_a_model_loads(tmp_path,
                                                                              monkeypatch):
    st, run = _fake_run(tmp_path)
    (run.folder / "pairs.parquet").unlink()
    r = _verify(tmp_path)
    assert r.exit_code == 1 and f"runs/{run.id}/pairs.parquet missing" in r.output
    (tmp_path / "measures" / f"run={run.id}" / "shard-00002.parquet").unlink()
    _no_model(monkeypatch)
    with pytest.raises(S.StoreError, match=r"pairs\.parquet missing"):
        methods.repair(S.Store(tmp_path))


def test_renamed_run_folder_is_named_by_verify_ls_and_a_rerun(tmp_path):
    st, run = _fake_run(tmp_path)
    _fake_run(tmp_path, 2, model="other")
    moved = run.folder.with_name("direct-renamed")
    run.folder.rename(moved)
    r = _verify(tmp_path)
    assert r.exit_code == 1 and "direct-renamed" in r.output and f"records run {run.id}" in r.output
    assert f"measures/run={run.id}/ no run record owns it" in r.output
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path)])
    assert r.exit_code == 1 and "direct-m" not in r.output.split("Error")[0]
    assert "direct-other" in r.output and "direct-renamed" in r.output
    with pytest.raises(S.StoreError, match="records run"):
        S.Store(tmp_path).measures(["direct-renamed"])
    with pytest.raises(S.StoreError, match="a renamed or deleted run folder"):
        _fake_run(tmp_path)  # the rerun of the original key does not recompute beside


def test_deleted_run_json_is_not_zero_runs(tmp_path):
    st, run = _fake_run(tmp_path)
    (run.folder / "run.json").unlink()
    r = _verify(tmp_path)
    assert r.exit_code == 1 and "0 run(s)" not in r.output
    assert f"runs/{run.id}/run.json missing" in r.output and "no run record owns it" in r.output


# --- 2. verify knows what a store is ---------------------------------------------------------

def test_verify_and_ls_refuse_what_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "src").mkdir()
    for cmd in ("verify", "ls"):
        r = CliRunner().invoke(cli.main, [cmd, "--store", str(tmp_path)])
        assert r.exit_code == 1 and "is not a results store" in r.output, r.output
        r = CliRunner().invoke(cli.main, [cmd, "--store", str(tmp_path / "missing")])
        assert r.exit_code == 1 and "no results store at" in r.output and "no runs" not in r.output
        r = CliRunner().invoke(cli.main, [cmd, "--store", str(tmp_path / "notes.txt")])
        assert r.exit_code == 1 and "is a file, not a folder" in r.output
    r = CliRunner().invoke(cli.main, ["verify", "--store", str(REPO)])
    assert r.exit_code == 1 and "is not a results store" in r.output


def test_one_garbage_run_json_among_six_hides_none_of_the_others(tmp_path):
    runs = [_fake_run(tmp_path, 1, model=f"m{i}")[1] for i in range(6)]
    (runs[2].folder / "run.json").write_text("{garbage")
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path)])
    assert r.exit_code == 1
    listed = r.output.split("Error")[0]
    assert all(x.id in listed for k, x in enumerate(runs) if k != 2)
    assert f"{runs[2].folder}/run.json is not a readable run record" in r.output
    r = _verify(tmp_path)
    assert r.exit_code == 1 and "no repair can fix" in r.output and "--repair\n" not in r.output


def test_a_damaged_unfinished_run_is_refused_before_a_model_loads_and_stays_running(
        data_dir, tmp_path, monkeypatch):
    from xcomps_utils.lm import models
    from xcomps_utils.pairs import tasks

    pairs = tasks.sample(["blimp_anaphor"], 3, 0)
    (spec,) = planner.plan("smollm2-135m-instruct", pairs, ["direct"], {}, store=tmp_path,
                           shard_size=1, device="cpu", dtype="float32")
    ident = models.model_identity("smollm2-135m-instruct", device="cpu", dtype="float32")
    st = S.Store(tmp_path)
    run = st.open_run(spec.key(ident), spec.used, 1, {})
    for i in range(2):
        run.write_shard(i, _rows(2, 1.0))
    (tmp_path / "measures" / f"run={run.id}" / "shard-00000.parquet").unlink()
    _no_model(monkeypatch)
    with pytest.raises(S.StoreError, match=r"shard shard-00000: .* missing; repair"):
        methods.execute([spec], progress=False)
    with pytest.raises(S.StoreError, match="missing"):
        run.write_shard(2, _rows(2, 1.0)) or run.finish()
    assert S.Store(tmp_path).run(run.id).record["status"] == "running"


# --- 3. inputs checked before work -----------------------------------------------------------

def _pairs(good, bad="The cat sleeps.", pair_id="p7"):
    # object columns: pandas' string inference refuses a lone surrogate itself
    return pd.DataFrame({"dataset": ["t"], "task": ["t"], "pair_id": [pair_id], "good": [good],
                         "bad": [bad]}, dtype=object)


@pytest.mark.parametrize("good, why", [
    ("The <|endoftext|> cat sleeps.", "special-token string '<|endoftext|>'"),
    ("<|im_start|>user The cats sleep.", "special-token string '<|im_start|>'"),
    ("\u0301\u0302\u0303", "without any letter or digit"),
    ("The cat\x00 sleeps.", "control character (U+0000 unnamed, at character 7)"),
    ("The cat \ud800 sleeps.", "lone surrogate, U+D800, at character 8"),
    ("!!! ...", "without any letter or digit")])
def test_bad_texts_are_refused_before_any_work_naming_pair_and_field(good, why, tmp_path,
                                                                    monkeypatch):
    _no_model(monkeypatch)
    with pytest.raises(ValueError) as err:
        methods.run("smollm2-135m-instruct", _pairs(good), "direct", store=tmp_path / "s")
    msg = str(err.value)
    assert why in msg and "pair t/p7 (row 0): 'good'" in msg and "\n" not in msg
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("pair_id", [None, float("nan"), "  "])
def test_missing_pair_ids_are_refused(pair_id, tmp_path):
    with pytest.raises(ValueError, match=r"pair \(row 0\): 'pair_id' is missing"):
        methods.run("smollm2-135m-instruct", _pairs("A cat.", pair_id=pair_id), "direct",
                    store=tmp_path)


def test_a_special_token_of_the_loaded_tokenizer_is_refused(lm, tmp_path):
    """Strings outside the <|...|> pattern that the tokenizer holds as special (SmolLM2's
    <filename>) are refused once the model is loaded, before any shard."""
    special = next(str(t) for t in lm.tokenizer.added_tokens_decoder.values()
                   if t.special and not str(t).startswith("<|"))
    assert special == "<repo_name>"
    with pytest.raises(ValueError, match=f"'bad' holds {special!r}, a special token"):
        methods.run(lm, _pairs("A cat.", f"A {special} dog."), "direct", store=tmp_path)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args, expect", [
    (["--store", ""], "results store is '', not a folder name"),
    (["--store", "  "], "not a folder name"),
    (["--wordings", "grammatical"], "--wordings is read only by token_ppl"),
    (["--use-chat-template"], "--use-chat-template is read only by meta"),
    (["--seed", "-1"], "the 'seed' parameter must be an integer from 0 to 4294967295; got -1"),
])
def test_cli_inputs_are_one_line_errors_before_work(args, expect, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor", "--n-pairs",
                                      "2", *args])
    assert r.exit_code == 1 and expect in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_wordings_that_select_nothing_and_flags_of_other_methods(tmp_path):
    base = ["run", "--task", "blimp_anaphor", "--n-pairs", "2", "--store", str(tmp_path)]
    r = CliRunner().invoke(cli.main, base[:1] + ["token_ppl"] + base[1:] + ["--wordings", ","])
    assert r.exit_code == 1 and "--wordings ',' names no wording" in r.output
    r = CliRunner().invoke(cli.main, base[:1] + ["token_ppl"] + base[1:] + ["--bos-policy",
                                                                            "lm_eval"])
    assert r.exit_code == 1 and "--bos-policy is read only by direct" in r.output
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path), "--method", "bogus"])
    assert r.exit_code == 1 and r.output.strip() == (
        "Error: the 'method' parameter must be one of the 4 methods ('direct', 'meta', 'neuro', "
        "'token_ppl'); got 'bogus'")
    assert not (tmp_path / "runs").exists()


def test_model_folder_with_an_empty_config_is_named(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("")
    with pytest.raises(ValueError, match=f"model folder {folder}: config.json has no 'model_type'"):
        planner.check_model_folder(str(folder))
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor", "--model",
                                      str(folder), "--store", str(tmp_path / "s")])
    assert r.exit_code == 1 and str(folder) in r.output and not (tmp_path / "s").exists()


def test_sweep_device_and_duplicate_keys_name_file_and_field(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("models: [smollm2-135m-instruct]\nmethods: [direct]\ndevice: bogus\n"
                 "data: [{tasks: [blimp_anaphor], n_pairs: 2}]\n")
    with pytest.raises(ParameterError, match=f"^{f}: the 'device' parameter must be one of "
                                             f"'auto', 'cpu', 'mps', 'cuda' or 'cuda:N' .*; "
                                             f"got 'bogus'$"):
        SW.load_sweep(f)
    f.write_text("models: [smollm2-135m-instruct]\nmethods: [direct]\nseed: 1\nseed: 2\n"
                 "data: [{tasks: [blimp_anaphor], n_pairs: 2}]\n")
    with pytest.raises(SW.SweepError, match=r"line 4, .*duplicate key 'seed' \(first on line 3\)"):
        SW.load_sweep(f)


def test_read_only_store_stops_repair_before_a_model_loads(tmp_path, monkeypatch):
    st, run = _fake_run(tmp_path)
    (tmp_path / "measures" / f"run={run.id}" / "shard-00000.parquet").unlink()

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(S.tempfile, "mkstemp", read_only)
    _no_model(monkeypatch)
    with pytest.raises(S.StoreError, match=f"results store '{tmp_path}' is not writable"):
        methods.repair(S.Store(tmp_path))
    assert (run.folder / "done" / "shard-00000").exists()  # nothing moved


def test_full_disk_is_named_with_the_store_and_file(tmp_path, monkeypatch):
    st, run = _fake_run(tmp_path, complete=False)
    monkeypatch.setattr(S.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 0))
    with pytest.raises(S.StoreError, match=f"results store '{tmp_path}' is on a full disk"):
        st.check_writable()

    other = S.Store(tmp_path).open_run({"method": "direct", "model": "n"}, run.pairs(), 1, {})

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(S.pq, "write_table", full)
    with pytest.raises(S.StoreError) as err:
        other.write_shard(0, _rows(2, 0.0))
    assert f"cannot write {tmp_path}/measures/run={other.id}/shard-00000.parquet" in str(err.value)
    assert "No space left on device" in str(err.value)
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind


# --- 4. chapters check every parameter they declare ------------------------------------------

CHAPTERS = ["direct_scoring", "first_token", "grammar_across_languages",
            "token_perplexity_method", "xcomps_dataset"]


def _cells(chapter):
    import jupytext

    nb = jupytext.read(REPO / "notebooks" / f"{chapter}.md")
    return [c for c in nb.cells if c.cell_type == "code"]


def _enter(chapter, **values):
    """Run a chapter's cells, with ``values`` injected after its parameters cell as papermill
    injects them, up to its last parameter check (no model runs there)."""
    cells = _cells(chapter)
    last = max(i for i, c in enumerate(cells[:5]) if "chapters.open" in c.source)
    ns = {}
    for cell in cells[:last + 1]:
        exec(compile(cell.source, chapter, "exec"), ns)  # noqa: S102 - the chapter's own code
        if "parameters" in cell.metadata.get("tags", []):
            ns.update(values)


WRONG = {  # chapter: (a wrong type, an unknown value, an out-of-range value)
    "direct_scoring": ({"n_pairs": "abc"}, {"bos_policy": "first"}, {"seed": -1}),
    "first_token": ({"convention_pairs": "12"}, {"dtype": "float13"}, {"convention_pairs": 0}),
    "grammar_across_languages": ({"neuro_languages": "en"}, {"device": "gpu"},
                                 {"neuro_splits": 1}),
    "token_perplexity_method": ({"pair_index": "abc"}, {"wording": "nope"},
                                {"pair_index": 10**9}),
    "xcomps_dataset": ({"languages": "en"}, {"languages": ["en", "xx"]}, {"languages": []}),
}


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("case", [0, 1, 2], ids=["type", "unknown", "range"])
def test_chapter_wrong_parameter_is_one_error_naming_it(chapter, case, data_dir):
    (name, value), = WRONG[chapter][case].items()
    with pytest.raises(params.ParameterError) as err:
        _enter(chapter, **{name: value})
    assert str(err.value).startswith(f"{chapter}: the '{name}")
    assert "' parameter must be " in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_wrong_type_under_papermill(chapter, data_dir, tmp_path):
    import jupytext
    import papermill

    (name, value), = WRONG[chapter][0].items()
    src = tmp_path / f"{chapter}.ipynb"
    jupytext.write(jupytext.read(REPO / "notebooks" / f"{chapter}.md"), src)
    with pytest.raises(papermill.PapermillExecutionError,
                       match=f"the '{name}' parameter must be"):
        papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"),
                                   parameters={name: value}, cwd=str(tmp_path),
                                   kernel_name="python3", progress_bar=False)


# --- 5. issue 41: verify holds shipped.json to ship's rules; every task keeps its rows; ls ----

def _shipped(tmp_path, omit=("direct_tokens",)):
    """A fake run shipped (Store.ship) from ``src`` into ``dest`` without ``omit``."""
    src, run = _fake_run(tmp_path / "src")
    src.ship(tmp_path / "dest", omit=omit)
    return tmp_path / "dest", run.id


def _edit_shipped(dest, rid, folders):
    rec = json.loads((dest / S.SHIPPED).read_text())
    rec["omitted"][rid] = folders
    (dest / S.SHIPPED).write_text(json.dumps(rec))


def test_a_shipped_json_omitting_measures_is_refused_as_ship_refuses_it(tmp_path):
    dest, rid = _shipped(tmp_path)
    assert _verify(dest).exit_code == 0
    _edit_shipped(dest, rid, ["direct_tokens", "measures"])
    shutil.rmtree(dest / "measures" / f"run={rid}")
    r = _verify(dest)
    assert r.exit_code == 1 and "every shard as recorded" not in r.output, r.output
    assert f"{rid}: shipped.json lists measures among the folders run {rid} was shipped " \
           f"without" in r.output
    assert f"measures/run={rid}/shard-00000.parquet missing" in r.output  # damage, not omission
    assert "no repair can fix" in r.output
    assert S.Store(dest).omitted(rid) == {"direct_tokens"}
    with pytest.raises(S.StoreError, match="shipped.json lists measures"):
        S.Store(dest).measures([rid])
    with pytest.raises(S.StoreError, match="measures are what a shipped run is"):
        S.Store(tmp_path / "src").ship(tmp_path / "other", omit=("measures",))


def test_an_omission_claimed_for_present_or_unrecorded_files_is_named(tmp_path):
    dest, rid = _shipped(tmp_path)
    shutil.copytree(tmp_path / "src" / "direct_tokens", dest / "direct_tokens")
    r = _verify(dest)
    assert r.exit_code == 1, r.output
    assert f"{rid}: shipped.json lists direct_tokens among the folders run {rid} was shipped " \
           f"without, yet direct_tokens/run={rid}/ holds 3 file(s)" in r.output
    assert len(r.output.strip().splitlines()) == 2  # that line and the error: one line each
    shutil.rmtree(dest / "direct_tokens")
    _edit_shipped(dest, rid, ["direct_tokens", "ppl_tokens"])
    r = _verify(dest)
    assert r.exit_code == 1 and "lists ppl_tokens among the folders" in r.output
    assert "no done marker of the run records a file in ppl_tokens/" in r.output
    _edit_shipped(dest, "direct-gone-000000000000", ["states"])
    _edit_shipped(dest, rid, ["direct_tokens"])
    r = _verify(dest)
    assert r.exit_code == 1 and "shipped.json lists run direct-gone-000000000000, which the " \
                                "store does not hold" in r.output
    _edit_shipped(dest, rid, "direct_tokens")  # a string, not a list of folders
    r = _verify(dest)
    assert r.exit_code == 1 and "shipped.json: unreadable" in r.output


def test_a_stray_file_is_foreign_at_every_level_and_moved_by_repair(tmp_path):
    st, run = _fake_run(tmp_path)
    (tmp_path / "README.md").write_text("# a store")  # documents are part of the layout
    (tmp_path / "LICENSE").write_text("MIT")
    (tmp_path / ".gitattributes").write_text("*.parquet binary")
    assert _verify(tmp_path).exit_code == 0
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "measures" / "stray.parquet").write_bytes(b"x")
    (tmp_path / "measures" / "old").mkdir()
    (tmp_path / "measures" / "old" / "x.parquet").write_bytes(b"x")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "y.csv").write_text("y")
    (run.folder / "locks").mkdir(exist_ok=True)
    (run.folder / "locks" / "note.txt").write_text("z")
    problems = S.Store(tmp_path).verify()
    assert {p["file"] for p in problems} == {
        "notes.txt", "measures/stray.parquet", "measures/old/x.parquet", "scratch/y.csv",
        f"runs/{run.id}/locks/note.txt"}
    assert all(p["repair"] == "move" and "foreign" in p["problem"] for p in problems)
    r = _verify(tmp_path)
    assert r.exit_code == 1 and "5 foreign file(s)" in r.output
    assert f"{tmp_path}: notes.txt foreign (never read)" in r.output
    r = _verify(tmp_path, "--repair")
    assert r.exit_code == 0 and "moved 5 foreign file(s)" in r.output, r.output
    assert (tmp_path / "README.md").exists() and (tmp_path / "LICENSE").exists()
    assert len(S.Store(tmp_path).measures([run.id])) == 6


def test_the_shipped_store_of_the_repository_still_verifies_clean():
    r = _verify(REPO / "store")
    assert r.exit_code == 0 and "every shard as recorded" in r.output, r.output


def _measures(kinds):
    """Measures of one pair set mixing tasks with a language (``vi``) and without one (the
    missing ``lang`` a store hands back for DUST, NaN or None, or an empty one)."""
    langs = {"with": ["vi"], "without": [None, float("nan"), ""]}
    rows = []
    for kind in kinds:
        for k, lang in enumerate(langs[kind]):
            task = f"bmlama17:{lang}" if kind == "with" else ["dust", "crows_pairs", "nonsense"][k]
            rows += [{**{c: "" for c in S.MEASURE_COLUMNS}, "method": "direct", "task": task,
                      "lang": lang, "pair_id": str(i), "layer": -1, "measure": "correct",
                      "value": float(i % 2)} for i in range(4)]
    return pd.DataFrame(rows)


KINDS = {"language only": ["with"], "without only": ["without"], "mixed": ["with", "without"]}


@pytest.mark.parametrize("kinds", list(KINDS.values()), ids=list(KINDS))
def test_the_run_summary_keeps_a_row_per_task_with_or_without_a_language(kinds):
    m = _measures(kinds)
    summary = planner.summary(m)
    assert list(summary.task) == list(m.task.unique())
    assert list(summary.n) == [4] * m.task.nunique()
    with_lang = summary.task.str.startswith("bmlama17:")
    assert set(summary.lang[with_lang]) <= {"vi"} and set(summary.lang[~with_lang]) <= {"—"}


def test_run_prints_a_row_per_task_of_a_mixed_pair_set(tmp_path, monkeypatch):
    """`xcomps-study run direct --task bmlama17:vi,dust`: the DUST row is printed beside the
    BMLAMA one (no model: the selection and the run replaced)."""
    from types import SimpleNamespace

    _no_model(monkeypatch)
    m = _measures(["with", "without"])
    pairs = m.drop_duplicates(["task", "pair_id"])
    monkeypatch.setattr(planner, "select", lambda *a, **k: [SimpleNamespace(
        pairs=pairs, methods=["direct"])])
    monkeypatch.setattr(methods, "run", lambda *a, **k: SimpleNamespace(
        computed={"direct": 1}, runs={"direct": "direct-x"}, measures=m))
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "bmlama17:vi,dust", "--n-pairs",
                                      "10", "--store", str(tmp_path), "--device", "cpu"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"direct-x: {len(pairs)} pairs, computed 1 shard(s)"
    assert lines[1].split() == ["method", "task", "lang", "n", "accuracy"]
    assert [ln.split()[1:3] for ln in lines[2:]] == [["bmlama17:vi", "vi"], ["dust", "—"],
                                                     ["crows_pairs", "—"], ["nonsense", "—"]]


def test_ls_names_a_run_folder_without_its_record(tmp_path):
    _, kept = _fake_run(tmp_path, 2, model="kept")
    _, run = _fake_run(tmp_path)
    (run.folder / "run.json").unlink()
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path)])
    assert r.exit_code == 1 and "no runs" not in r.output, r.output
    assert kept.id in r.output.split("Error")[0]  # the other run is listed
    assert f"runs/{run.id}/run.json missing: nothing records this run folder" in r.output
    assert len(r.output.split("Error")[1].strip().splitlines()) == 1
    shutil.rmtree(kept.folder)  # a deleted run folder: its results no record owns
    shutil.rmtree(run.folder)
    r = CliRunner().invoke(cli.main, ["ls", "--store", str(tmp_path)])
    assert r.exit_code == 1 and "no runs" not in r.output, r.output
    assert f"direct_tokens/run={kept.id}/ no run record owns it" in r.output
    assert f"measures/run={kept.id}/" in r.output
