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
    r = CliRunner().invoke(cli.main, ["run", "direct", "--task", "blimp_anaphor",
                                      "--n-pairs", "abc"])
    assert r.exit_code == 2 and "--n-pairs" in r.output and "abc" in r.output
    r = CliRunner().invoke(cli.main, ["run", "direct"])
    assert r.exit_code == 2 and "either --task or --languages" in r.output
    r = CliRunner().invoke(cli.main, ["run", "meta", "--task", "blimp_anaphor"])
    assert r.exit_code == 2 and "--languages" in r.output and "bmlama17:<lang>" in r.output
    # BMLAMA tasks pass the check (it then fails on the model name, before any data is read)
    r = CliRunner().invoke(cli.main, ["run", "meta", "--task", "bmlama17:vi", "--model",
                                      "no-such-model-xyz"])
    assert "meta:" not in r.output and r.exit_code != 0


def test_unknown_model_fails_at_once_listing_the_embedded_ones(data_dir, tmp_path):
    start = time.monotonic()
    r = subprocess.run(CLI + ["run", "direct", "--task", "blimp_anaphor", "--n-pairs", "2",
                              "--model", "smollm2-135m", "--store", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "smollm2-135m-instruct" in r.stderr and "not reachable" in r.stderr
    assert time.monotonic() - start < 60
    assert not (tmp_path / "runs").exists()  # nothing half-written


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
