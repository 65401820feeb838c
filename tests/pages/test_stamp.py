"""A chapter's stamp (xcomps_utils.pages.stamp): what `make book` compares before executing a
chapter again. It must change with each input a chapter's output depends on, and with nothing
else."""

import json
import shutil
from pathlib import Path

import pytest

from xcomps_utils.pages.stamp import chapter_stamp

REPO = Path(__file__).resolve().parents[2]
ARGS = ["-p", "convention_pairs", "12", "-y", "{languages: [en, de]}"]


@pytest.fixture
def checkout(tmp_path):
    """A copy of what a chapter's stamp reads: two chapters, the package, the data manifests."""
    root = tmp_path / "checkout"
    (root / "notebooks").mkdir(parents=True)
    for c in ("first_token", "direct_scoring"):
        shutil.copy(REPO / "notebooks" / f"{c}.md", root / "notebooks")
    shutil.copytree(REPO / "xcomps_utils", root / "xcomps_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "data", root / "data", ignore=lambda d, names: [
        n for n in names if (Path(d) / n).is_dir() and n != "sample"])
    for f in ("pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / f, root)
    return root


def _store(tmp_path, runs=("direct-m-aaa",)):
    """A results store holding ``runs``, each with a record, a done marker and a measures shard."""
    store = tmp_path / "store"
    for run in runs:
        (store / "runs" / run / "done").mkdir(parents=True)
        (store / "runs" / run / "run.json").write_text(json.dumps({"run": run}))
        (store / "runs" / run / "done" / "shard-00000").write_text("{}")
        (store / "measures" / f"run={run}").mkdir(parents=True)
        (store / "measures" / f"run={run}" / "shard-00000.parquet").write_bytes(b"PAR1 1")
    return store


def _parts(stamp: str) -> dict:
    return {line.split()[0]: line.split()[1] for line in stamp.splitlines()}


def test_stamp_changes_with_the_source_and_only_its_own(checkout):
    first = chapter_stamp("first_token", ARGS, root=checkout)
    assert chapter_stamp("first_token", ARGS, root=checkout) == first  # deterministic
    other = checkout / "notebooks" / "direct_scoring.md"
    other.write_text(other.read_text() + "\n")
    assert chapter_stamp("first_token", ARGS, root=checkout) == first  # another chapter's edit
    source = checkout / "notebooks" / "first_token.md"
    source.write_text(source.read_text() + "\n")  # one blank line
    again = chapter_stamp("first_token", ARGS, root=checkout)
    assert _parts(again)["source"] != _parts(first)["source"]
    assert {k for k in _parts(first) if _parts(first)[k] != _parts(again)[k]} == {"source"}


def test_stamp_changes_with_the_arguments(checkout):
    first = _parts(chapter_stamp("first_token", ARGS, root=checkout))
    for args in (ARGS[:2] + ["13"] + ARGS[3:], ARGS[:3], ["-p", "convention_pairs", "12 -y",
                                                           "{languages: [en, de]}"]):
        got = _parts(chapter_stamp("first_token", args, root=checkout))
        assert got["arguments"] != first["arguments"], args
        assert got["source"] == first["source"] and got["package"] == first["package"]


@pytest.mark.parametrize("path", ["xcomps_utils/pages/plots.py", "xcomps_utils/analysis/claims.py",
                                  "xcomps_utils/methods/wordings.json", "data/blimp.json",
                                  "data/languages.csv", "constraints.txt"])
def test_stamp_changes_with_the_package_and_the_manifests(checkout, path):
    first = _parts(chapter_stamp("first_token", ARGS, root=checkout))
    f = checkout / path
    f.write_bytes(f.read_bytes() + b"\n")
    assert _parts(chapter_stamp("first_token", ARGS, root=checkout))["package"] != first["package"]


def test_stamp_ignores_what_no_chapter_reads(checkout):
    first = chapter_stamp("first_token", ARGS, root=checkout)
    (checkout / "data" / "blimp.md").write_text("a dataset note, edited")
    (checkout / "xcomps_utils" / "pages" / "__pycache__").mkdir()
    (checkout / "xcomps_utils" / "pages" / "__pycache__" / "x.json").write_text("{}")
    (checkout / "data" / "blimp").mkdir()  # a download (its checksum is in the manifest)
    (checkout / "data" / "blimp" / "x.json").write_text("{}")
    assert chapter_stamp("first_token", ARGS, root=checkout) == first


def test_stamp_changes_with_the_runs_read_and_only_those(checkout, tmp_path):
    store = _store(tmp_path, ["direct-m-aaa", "direct-m-bbb"])
    reads = tmp_path / "reads" / "first_token.jsonl"
    reads.parent.mkdir()
    assert "0 runs read" in chapter_stamp("first_token", ARGS, reads, root=checkout)  # absent log
    line = {"store": str(store.resolve()), "run": "direct-m-aaa", "folder": "measures"}
    reads.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")  # read twice: one run
    first = chapter_stamp("first_token", ARGS, reads, root=checkout)
    assert "1 runs read" in first
    (store / "measures" / "run=direct-m-bbb" / "shard-00000.parquet").write_bytes(b"PAR1 2")
    shutil.copytree(store / "runs" / "direct-m-bbb", store / "runs" / "direct-m-ccc")
    assert chapter_stamp("first_token", ARGS, reads, root=checkout) == first  # runs not read
    shard = store / "measures" / "run=direct-m-aaa" / "shard-00000.parquet"
    shard.write_bytes(b"PAR1 2")  # the run read, recomputed (repaired)
    changed = _parts(chapter_stamp("first_token", ARGS, reads, root=checkout))
    assert changed["store"] != _parts(first)["store"]
    shutil.rmtree(store / "runs" / "direct-m-aaa")  # gone: differs from any content
    assert _parts(chapter_stamp("first_token", ARGS, reads, root=checkout))["store"] not in (
        changed["store"], _parts(first)["store"])


def test_bad_chapter_is_named(checkout):
    with pytest.raises(ValueError, match=r"the 'chapter' parameter must name a notebook .*"
                                         r"first_token.*got 'first_tokens'"):
        chapter_stamp("first_tokens", ARGS, root=checkout)
