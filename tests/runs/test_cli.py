"""The `xcomps-study` command line: runs, resumes after kill -9, errors and exit codes."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
from click.testing import CliRunner

from xcomps_utils.pairs import tasks
from xcomps_utils.runs import cli, execute as methods, store as S

CLI = [sys.executable, "-m", "xcomps_utils.runs.cli"]


def test_usage_errors_exit_2_and_name_the_option():
    """A value its declared type refuses is the package's error (exit code 1, the line a sweep
    file and methods.run give); click's usage errors (options that do not go together, an
    unknown option) keep exit code 2."""
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor",
                                      "--n-pairs", "abc"])
    assert r.exit_code == 1 and r.output == ("Error: the 'n_pairs' parameter must be an integer "
                                             ">= 1; got 'abc'\n")
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor", "--nope"])
    assert r.exit_code == 2 and "No such option '--nope'" in r.output
    r = CliRunner().invoke(cli.main, ["run", "direct"])
    assert r.exit_code == 2 and "either --task or --languages" in r.output
    r = CliRunner().invoke(cli.main, ["run", "meta", "--task", "blimp_anaphor"])
    assert r.exit_code == 2 and "--languages" in r.output and "bmlama17:<lang>" in r.output
    # BMLAMA tasks pass the check (it then fails on the model name, before any data is read)
    r = CliRunner().invoke(cli.main, ["run", "meta", "--task", "bmlama17:vi", "--model",
                                      "no-such-model-xyz"])
    assert "meta:" not in r.output and r.exit_code != 0


def test_a_deliberate_error_is_one_line_and_a_bug_is_a_traceback(tmp_path, monkeypatch):
    """An ``XcompsError`` (raised on purpose: it says what is wrong and what to do) is one line
    on stderr and exit code 1; any other exception is a bug: its traceback, a line asking for a
    report, exit code ``cli.BUG`` (70). Before, both were one line and exit code 1, so a bug
    looked like bad input and lost its traceback."""
    from xcomps_utils.pairs import data
    from xcomps_utils.runs import planner

    def missing(*a, **k):
        raise data.DataError("missing data file x.jsonl; set XCOMPS_DATA_DIR")

    monkeypatch.setattr(planner, "select", missing)
    args = ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2", "--store",
            str(tmp_path / "s")]
    r = CliRunner().invoke(cli.main, args)
    assert (r.exit_code, r.stdout, r.stderr) == (
        1, "", "Error: missing data file x.jsonl; set XCOMPS_DATA_DIR\n")

    def bug(*a, **k):
        return {}["no such key"]  # a KeyError nobody raised on purpose

    monkeypatch.setattr(planner, "select", bug)
    r = CliRunner().invoke(cli.main, args)
    assert r.exit_code == cli.BUG == 70 and r.stdout == ""
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert "KeyError: 'no such key'" in r.stderr and "in bug" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("xcomps-study ") and "a bug" in r.stderr
    # --debug: the traceback of a deliberate error too, and still exit code 1
    monkeypatch.setattr(planner, "select", missing)
    r = CliRunner().invoke(cli.main, ["--debug", *args])
    assert r.exit_code == 1 and "Traceback" in r.stderr and "in missing" in r.stderr
    assert r.stderr.strip().splitlines()[-1] == ("Error: missing data file x.jsonl; set "
                                                 "XCOMPS_DATA_DIR")


def test_unknown_model_fails_at_once_listing_the_embedded_ones(data_dir, tmp_path, guard):
    """A name that is no embedded model, no folder and not in the Hugging Face cache, with the
    hub unreachable (a closed port), fails after one attempt to reach it: no model load (the
    guard refuses it), so no transformers and none of the hub client's retries (50 s), and
    nothing written."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "all_proxy", "hf_hub_offline")}
    env = guard.env(env, hosts=True, HF_ENDPOINT="https://127.0.0.1:9",
                    HF_HUB_CACHE=str(tmp_path / "hf-cache"))
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--model", "smollm2-135m", "--store", str(tmp_path / "s")],
                       capture_output=True, text=True, env=env, timeout=600)  # a hang guard
    assert r.returncode == 1, r.stderr
    assert "smollm2-135m-instruct" in r.stderr and "not reachable" in r.stderr
    assert "127.0.0.1:9" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert guard.loads() == [] and guard.hosts() == ["127.0.0.1:9"]  # one attempt, no retry
    assert not (tmp_path / "s").exists()  # nothing half-written


def test_unknown_task_is_an_error_with_exit_1(data_dir, tmp_path):
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphora",
                                      "--store", str(tmp_path)])
    assert r.exit_code == 1 and "blimp_anaphor" in r.output


def test_killed_run_resumes_and_equals_an_uninterrupted_one(lm, data_dir, tmp_path):
    store = tmp_path / "killed"
    args = CLI + ["run", "token_ppl", "--task", "blimp_anaphor", "--n-pairs", "4",
                  "--shard-size", "1", "--device", "cpu", "--dtype", "float32",
                  "--store", str(store), "--quiet"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        done = list(store.glob("runs/*/done/shard-*"))
        if done:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    (rid,) = [p.name for p in (store / "runs").iterdir()]
    n_before = len(S.Store(store).run(rid).done())
    assert 1 <= n_before < 4 and S.Store(store).runs().status.tolist() == ["running"]

    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"computed {4 - n_before} shard(s)" in r.stdout  # only the rest
    resumed = S.Store(store).measures([rid])

    pairs = tasks.sample(["blimp_anaphor"], 4, 0, selection=True)
    clean = methods.run(lm, pairs, "token_ppl", store=tmp_path / "clean", shard_size=1,
                        progress=False)
    assert clean.runs["token_ppl"] == rid  # the same key
    key = ["pair_id", "wording", "order", "measure"]
    a = resumed.sort_values(key).reset_index(drop=True)
    b = clean.measures.sort_values(key).reset_index(drop=True)
    assert len(a) == len(b) == 4 * 8 * len(set(b.measure))  # nothing lost, nothing twice
    pd.testing.assert_frame_equal(a, b)

    listed = CliRunner().invoke(cli.main, ["ls", "--store", str(store)])
    assert listed.exit_code == 0 and rid in listed.output and "complete" in listed.output
    assert "4/4" in listed.output and "float32" in listed.output


def test_readme_example_run_id_is_the_one_the_command_prints(data_dir):
    """Issue 20, repro 8: the README's example id was not the one the same command gives. The
    id is computed as `xcomps-study run` computes it on a CPU, without scoring."""
    import json
    import re
    from pathlib import Path

    from xcomps_utils.lm import models
    from xcomps_utils.runs import sweep as SW

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    cmd = re.search(r"xcomps-study run (direct) --task (\S+) --n-pairs (\d+)\n", readme)
    printed = re.search(r"(direct-smollm2-135m-instruct-[0-9a-f]{12}): (\d+) pairs", readme)
    method, task_list, n = cmd.group(1), cli._split([cmd.group(2)]), int(cmd.group(3))
    sweep = SW.parse_sweep({"models": ["smollm2-135m-instruct"], "methods": [method],
                            "data": [{"tasks": task_list, "n_pairs": n}]})
    (spec,) = SW.plan(sweep, "results")
    ident = models.model_identity("smollm2-135m-instruct", device="cpu")
    rid = S.run_id(json.loads(json.dumps({**ident, **spec.key_rest}, default=str)))
    assert printed.group(1) == rid and int(printed.group(2)) == n * len(task_list)


def test_xcomps_by_languages_and_as_tasks(lm, data_dir, tmp_path):
    """`--languages de` (whole items) and `--tasks xcomps:de` (sampled pairs) both run; the task
    form carries its task name into the results."""
    base = ["run", "direct", "--device", "cpu", "--dtype", "float32", "--store", str(tmp_path),
            "--quiet"]
    r = CliRunner().invoke(cli.main, base + ["--languages", "de", "--items-per-language", "1"])
    assert r.exit_code == 0, r.output
    assert "4 pairs, computed 1 shard(s)" in r.output and "xcomps" in r.output
    r = CliRunner().invoke(cli.main, base + ["--tasks", "xcomps:de", "--n-pairs", "3"])
    assert r.exit_code == 0, r.output
    assert "3 pairs, computed 1 shard(s)" in r.output and "xcomps:de" in r.output
    r = CliRunner().invoke(cli.main, ["run", "meta", "--task", "blimp_anaphor"])
    assert r.exit_code == 2 and "xcomps:<lang>" in r.output


def _family_blocks(output: str) -> dict[str, str]:
    """``xcomps-study tasks``' lines of each family: pattern -> its first line and those below."""
    blocks, current = {}, None
    for line in output.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and ":<" in line.split()[0]:
            current = line.split()[0]
            blocks[current] = line
        elif current and line.startswith("      "):
            blocks[current] += "\n" + line
        else:
            current = None
    return blocks


def test_tasks_lists_every_family_of_the_registry_with_its_members(monkeypatch, tmp_path):
    """Issue 45, item 4: `xcomps-study tasks` listed no bmlama17, bmlama53, rublimp or multiblimp
    family. The families are read from the registry (the prefixes `tasks.get` dispatches on), so a
    new family without a line fails here; offline, from the manifests alone."""
    import inspect
    import re

    from xcomps_utils.pairs import data

    monkeypatch.setenv("XCOMPS_DATA_DIR", str(tmp_path))  # no data file: manifests only
    dispatched = (set(tasks.GRAMMAR_FAMILIES) | set(tasks.BMLAMA_FAMILIES)
                  | set(re.findall(r'startswith\("(\w+):"\)', inspect.getsource(tasks.get))))
    assert {"blimp", "xcomps", "rublimp", "multiblimp", "bmlama17"} <= dispatched
    assert dispatched <= set(tasks.FAMILIES), dispatched - set(tasks.FAMILIES)
    r = CliRunner().invoke(cli.main, ["tasks"])
    assert r.exit_code == 0, r.output
    blocks = _family_blocks(r.output)
    for family, (pattern, _) in tasks.FAMILIES.items():
        members = tasks.family_members(family)
        assert members and pattern in blocks, (family, r.output)
        assert f" {len(members)} " in blocks[pattern].splitlines()[0]
        first = members[0].split(":")[0]  # CLAMS: its languages, then its constructions
        assert re.search(rf"[ :]{re.escape(first)}[, ]", blocks[pattern]), blocks[pattern]
        # the members are the names the registry accepts, and the family refuses others
        for member in members:
            assert tasks.get(f"{family}:{member}").name == f"{family}:{member}"
        try:
            tasks.get(f"{family}:zz_no_such_member")
            raise AssertionError(f"{family}: a name that is no member was accepted")
        except data.DataError as err:
            assert not str(err).startswith("unknown task "), err  # the family's own check
    assert re.search(r"\bar\b", blocks["bmlama17:<lang>"]) and "eng" in blocks["multiblimp:<lang>"]
    assert "rublimp:<phenomenon>" in blocks and "bmlama53:<lang>" in blocks
    # what the command printed before
    for name, t in tasks.TASKS.items():
        assert f"{name}" in r.output and t.description in r.output
    assert "XCOMPS languages (--languages)" in r.output and "embedded models (--model)" in r.output


def test_tasks_of_one_family_and_an_absent_manifest(monkeypatch):
    """`xcomps-study tasks FAMILY` prints every name of one family; an unknown family is a usage
    error; a family whose manifest is absent says so on its line, the others are listed."""
    from xcomps_utils.pairs import data

    r = CliRunner().invoke(cli.main, ["tasks", "multiblimp"])
    assert r.exit_code == 0 and r.output.split() == [f"multiblimp:{m}" for m in
                                                     ("eng", "ell", "nld", "tur")]
    r = CliRunner().invoke(cli.main, ["tasks", "bmlama53"])
    assert r.exit_code == 0 and len(r.output.split()) == 53 and "bmlama53:ar" in r.output.split()
    r = CliRunner().invoke(cli.main, ["tasks", "nope"])
    assert r.exit_code == 2 and "bmlama17" in r.output

    manifest = data.manifest

    def without_rublimp(dataset):
        if dataset == "rublimp":
            raise data.DataError("no dataset manifest rublimp.json")
        return manifest(dataset)

    monkeypatch.setattr(data, "manifest", without_rublimp)
    r = CliRunner().invoke(cli.main, ["tasks"])
    assert r.exit_code == 0, r.output
    blocks = _family_blocks(r.output)
    assert "members unknown here" in blocks["rublimp:<phenomenon>"]
    assert "no dataset manifest" in blocks["rublimp:<phenomenon>"]
    multi = blocks["multiblimp:<lang>"]
    assert "members unknown" not in multi and "eng" in multi
    r = CliRunner().invoke(cli.main, ["tasks", "rublimp"])
    assert r.exit_code == 1 and "no dataset manifest" in r.output
