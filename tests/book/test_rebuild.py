"""`make book` and `make smoke` execute again only the chapters whose inputs changed (the
Makefile's per-chapter stamps, xcomps_utils/pages/stamp.py), and the findings page whenever
another chapter was executed.

The Makefile's own rules run here (`make notebooks`), on a copy of the checkout's inputs of three
chapters (first_token, direct_scoring, findings), with stand-ins for jupytext and papermill
(``JUPYTEXT=``, ``PAPERMILL=``) that copy the notebook and, for papermill, log the chapter and
write the verdicts and the reads a chapter would: no kernel starts, a build takes about a second.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = "first_token direct_scoring findings"

FAKE_PAPERMILL = """\
import json, os, shutil, sys
from pathlib import Path
src, out = sys.argv[-2:]
chapter = os.environ["XCOMPS_CHAPTER"]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(chapter + "\\n")
shutil.copy(src, out)
verdicts, reads = Path(os.environ["XCOMPS_VERDICTS"]), Path(os.environ["XCOMPS_READS"])
verdicts.mkdir(parents=True, exist_ok=True)
(verdicts / f"{chapter}.csv").write_text("claim,verdict\\n" + chapter + ",supported\\n")
if chapter == "direct_scoring":
    reads.mkdir(parents=True, exist_ok=True)
    with open(reads / f"{chapter}.jsonl", "a") as f:
        f.write(json.dumps({"store": os.environ["FAKE_STORE"], "run": "direct-m-aaa",
                            "folder": "measures"}) + "\\n")
if chapter == os.environ.get("FAKE_FAIL"):
    sys.exit("a cell raised")
"""


@pytest.fixture
def book(tmp_path):
    """A copy of the checkout's inputs of three chapters, a fake papermill, a store of one run."""
    root = tmp_path / "checkout"
    (root / "notebooks").mkdir(parents=True)
    for c in CHAPTERS.split():
        shutil.copy(REPO / "notebooks" / f"{c}.md", root / "notebooks")
    shutil.copytree(REPO / "xcomps_utils", root / "xcomps_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "data", root / "data", ignore=lambda d, names: [
        n for n in names if (Path(d) / n).is_dir() and n != "sample"])
    for f in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / f, root)
    store = tmp_path / "store"
    (store / "runs" / "direct-m-aaa").mkdir(parents=True)
    (store / "runs" / "direct-m-aaa" / "run.json").write_text("{}")
    (store / "measures" / "run=direct-m-aaa").mkdir(parents=True)
    (store / "measures" / "run=direct-m-aaa" / "shard-00000.parquet").write_bytes(b"1")
    (tmp_path / "papermill.py").write_text(FAKE_PAPERMILL)
    (tmp_path / "jupytext.py").write_text("import shutil, sys\n"
                                          "shutil.copy(sys.argv[-1], sys.argv[-2])\n")
    return root


def _build(root: Path, *extra: str, chapters: str = CHAPTERS, fail: str = "",
           ok: bool = True) -> list[str]:
    """The chapters `make notebooks` executes into build/executed, in the order executed (the
    set-up, STAMP and MATHJAX, is left out: it is this checkout's .venv)."""
    log = root.parent / "executed.log"
    log.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(FAKE_LOG=str(log), FAKE_STORE=str((root.parent / "store").resolve()),
               FAKE_FAIL=fail)
    r = subprocess.run(
        ["make", "--no-print-directory", f"VENV={REPO / '.venv'}", "STAMP=", "MATHJAX=",
         f"CHAPTERS={chapters}", f"PAPERMILL={sys.executable} {root.parent / 'papermill.py'}",
         f"JUPYTEXT={sys.executable} {root.parent / 'jupytext.py'}",
         "SIZE=smoke", "EXECUTED=build/executed", "STORE=results", *extra, "notebooks"],
        cwd=root, env=env, capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stdout[-3000:] + r.stderr[-3000:]
    executed = log.read_text().split()
    if ok:
        n = len(chapters.split())
        reused = " ".join(sorted(set(chapters.split()) - set(executed)))
        assert (f"[smoke] {n} chapters: {len(executed)} executed in ") in r.stdout, r.stdout
        assert (f"{n - len(executed)} reused" + (f" (inputs unchanged: {reused})" if reused
                                                 else "")) in r.stdout, r.stdout
    return executed


@pytest.mark.slow  # make book's stand-ins run make 4-7 times: 4-16 s
def test_only_what_changed_is_executed_again(book):
    executed = book / "build" / "executed"
    assert _build(book) == ["first_token", "direct_scoring", "findings"]
    verdicts = (executed / "verdicts" / "first_token.csv").read_text()
    assert _build(book) == []  # nothing changed: every chapter reused
    assert (executed / "verdicts" / "first_token.csv").read_text() == verdicts  # kept
    assert len((executed / "reads" / "direct_scoring.jsonl").read_text().splitlines()) == 1

    source = book / "notebooks" / "first_token.md"
    os.utime(source)  # touched, not changed
    assert _build(book) == []
    source.write_text(source.read_text() + "\n")  # one blank line
    assert _build(book) == ["first_token", "findings"]
    assert _build(book) == []

    assert _build(book, "chapter_args=-p n_pairs 7") == ["first_token", "direct_scoring",
                                                          "findings"]
    plots = book / "xcomps_utils" / "pages" / "plots.py"
    plots.write_text(plots.read_text() + "\n# edited\n")
    assert _build(book, "chapter_args=-p n_pairs 7") == ["first_token", "direct_scoring",
                                                          "findings"]

    store = book.parent / "store"
    shutil.copytree(store / "runs" / "direct-m-aaa", store / "runs" / "direct-m-bbb")
    assert _build(book, "chapter_args=-p n_pairs 7") == []  # a run no chapter read
    (store / "measures" / "run=direct-m-aaa" / "shard-00000.parquet").write_bytes(b"2")
    # the run direct_scoring read, changed
    assert _build(book, "chapter_args=-p n_pairs 7") == ["direct_scoring", "findings"]


@pytest.mark.slow  # make book's stand-ins run make 4-7 times: 4-16 s
def test_a_failed_chapter_leaves_no_stamp_and_is_executed_again(book):
    executed = book / "build" / "executed"
    _build(book)
    source = book / "notebooks" / "direct_scoring.md"
    source.write_text(source.read_text() + "\n")
    assert _build(book, fail="direct_scoring", ok=False) == ["direct_scoring"]  # findings waits
    assert not (executed / "direct_scoring.ipynb").exists()  # .DELETE_ON_ERROR
    assert not (executed / ".stamps" / "direct_scoring").exists()
    assert not list((executed / ".stamps").glob("*.new"))
    assert _build(book) == ["direct_scoring", "findings"]
    assert _build(book) == []


@pytest.mark.slow  # make book's stand-ins run make 4-7 times: 4-16 s
def test_a_chapter_no_longer_in_the_book_leaves_nothing(book):
    """What a chapter left is removed when it is no longer in the book (the findings page
    would show its verdicts, make ship its reads), and the findings page executed again."""
    executed = book / "build" / "executed"
    _build(book)
    assert _build(book, chapters="first_token findings") == ["findings"]
    left = {p.relative_to(executed).as_posix() for p in executed.rglob("*") if p.is_file()}
    assert left == {"first_token.ipynb", "findings.ipynb", ".stamps/first_token",
                    ".stamps/findings", "verdicts/first_token.csv", "verdicts/findings.csv"}
