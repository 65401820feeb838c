"""Grade every assignment's reference solution and planted wrong solution offline (make grade).

For each assignment folder ``assignments/<name>/`` holding a master notebook ``<name>.md``
(jupytext MyST in otter-grader's assign format: questions, solutions, public and ``# HIDDEN``
tests) and ``planted_wrong.py`` (edits of the reference solution that plant mistakes):

1. ``otter assign`` splits the master into ``build/<name>/dist/student/`` (the notebook students
   get, with the public checks) and ``build/<name>/dist/autograder/`` (the reference solution and
   the autograder zip with every test, hidden ones included);
2. ``otter run`` grades the reference solution: it must score full marks;
3. ``otter run`` grades the planted wrong solution: it must score less than full marks;
4. every written question (``manual: true``, graded by hand, no tests) carries a rubric in its
   hidden solution (a paragraph starting ``**Rubric``), so the autograder copy tells a grader
   what full and partial credit look like.

Exits non-zero if any expectation breaks for any assignment. Usage:
``python assignments/grade.py [--jobs N] [name ...]`` (default: every assignment, one at a time;
e.g. ``.venv/bin/python assignments/grade.py a6_languages`` grades one).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupytext
import nbformat
import yaml

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
BIN = Path(sys.executable).parent


def _otter(*args: str, cwd: Path) -> None:
    proc = subprocess.run([str(BIN / "otter"), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"otter {args[0]} failed in {cwd}")


def questions(name: str) -> list[dict]:
    """The questions of a master notebook in order: ``name``, ``points``, ``manual`` and, for a
    written one, ``rubric`` (whether its solution holds a ``**Rubric`` paragraph)."""
    text = (HERE / name / f"{name}.md").read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"```otter\n# BEGIN QUESTION\n(.*?)```(.*?)# END QUESTION", text, re.S):
        cfg = yaml.safe_load(m.group(1)) or {}
        out.append({"name": cfg.get("name", "?"), "points": cfg.get("points", 0),
                    "manual": bool(cfg.get("manual")), "rubric": "**Rubric" in m.group(2)})
    return out


def assign(name: str) -> Path:
    """Master notebook -> dist/student and dist/autograder; returns the dist folder."""
    work = BUILD / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    nb = jupytext.read(HERE / name / f"{name}.md")
    nbformat.write(nb, work / f"{name}.ipynb")
    _otter("assign", "--no-pdfs", f"{name}.ipynb", "dist", cwd=work)
    return work / "dist"


def planted_wrong(name: str, solution: Path, target: Path) -> None:
    """The reference solution with the edits of planted_wrong.py (each must apply)."""
    spec = importlib.util.spec_from_file_location(f"{name}_wrong", HERE / name / "planted_wrong.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    nb = nbformat.read(solution, as_version=4)
    for old, new in mod.REPLACEMENTS:
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        if len(hits) != 1:
            raise SystemExit(f"{name}: planted edit {old[:60]!r} matches {len(hits)} cells, not 1")
        hits[0].source = hits[0].source.replace(old, new)
    nbformat.write(nb, target)


def run(name: str, autograder_zip: Path, submission: Path, out: Path) -> dict:
    """otter run; returns {"score", "possible", "failed": [test names]}."""
    out.mkdir(parents=True, exist_ok=True)
    _otter("run", "--no-logo", "-a", str(autograder_zip), "-o", str(out), str(submission),
           cwd=submission.parent)
    results = json.loads((out / "results.json").read_text())
    tests = results.get("tests", [])
    score = sum(t.get("score", 0) or 0 for t in tests)
    possible = sum(t.get("max_score", 0) or 0 for t in tests)
    failed = [t.get("name", "?") for t in tests if (t.get("score") or 0) < (t.get("max_score") or 0)]
    return {"score": score, "possible": possible, "failed": failed}


def _cpu(since: os.times_result) -> float:
    """CPU seconds of the child processes (otter and its kernels) since ``since``."""
    now = os.times()
    return (now.children_user - since.children_user) + (now.children_system - since.children_system)


def grade(name: str) -> bool:
    t0 = time.time()
    dist = assign(name)
    zips = sorted((dist / "autograder").glob(f"{name}-autograder_*.zip"))
    if not zips:
        raise SystemExit(f"{name}: otter assign made no autograder zip in {dist / 'autograder'}")
    solution = dist / "autograder" / f"{name}.ipynb"
    wrong = BUILD / name / "planted_wrong" / f"{name}.ipynb"
    wrong.parent.mkdir(parents=True)
    planted_wrong(name, solution, wrong)
    ref = run(name, zips[-1], solution, BUILD / name / "results-reference")
    bad = run(name, zips[-1], wrong, BUILD / name / "results-planted-wrong")
    ok_ref = ref["possible"] > 0 and ref["score"] == ref["possible"]
    ok_bad = bad["score"] < bad["possible"]
    written = [q for q in questions(name) if q["manual"]]
    no_rubric = [q["name"] for q in written if not q["rubric"]]
    print(f"[grade] {name}: reference {ref['score']:g}/{ref['possible']:g} "
          f"({'full marks' if ok_ref else 'NOT full marks: ' + ', '.join(ref['failed'])}); "
          f"planted wrong {bad['score']:g}/{bad['possible']:g} "
          f"({'fails ' + ', '.join(bad['failed']) if ok_bad else 'NOT caught: full marks'}); "
          f"written {', '.join(q['name'] for q in written) or 'none'} "
          f"({sum(q['points'] for q in written)} points by hand"
          + (f"; NO RUBRIC: {', '.join(no_rubric)}" if no_rubric else ", each with a rubric")
          + f"); {time.time() - t0:.0f} s wall", flush=True)
    return ok_ref and ok_bad and not no_rubric


def main(argv: list[str]) -> int:
    jobs = 1
    if argv[:1] == ["--jobs"]:
        jobs, argv = int(argv[1]), argv[2:]
    names = argv or sorted(p.name for p in HERE.iterdir()
                           if p.is_dir() and (p / f"{p.name}.md").exists())
    t0, c0 = time.time(), os.times()
    # jobs > 1: that many assignments at once, each in its own build folder (make grade: 2, each
    # kernel on one core through OMP_NUM_THREADS=1, which otter's kernels inherit)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(grade, names))
    print(f"[grade] {sum(results)} of {len(results)} assignments graded as expected, "
          f"{jobs} at a time: {time.time() - t0:.0f} s wall, {_cpu(c0):.0f} s CPU")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
