"""What an executed chapter was made from: the stamp `make book` and `make smoke` compare before
executing a chapter again (the Makefile's ``$(EXECUTED)/.stamps/<chapter>``).

A chapter's inputs are its source (``notebooks/<chapter>.md``), the papermill arguments the
Makefile passes it, the package and the files it reads from the checkout (:data:`PACKAGE`: the
``xcomps_utils`` sources, the data manifests, ``languages.csv``, the XCOMPS sample, the pins), and
the runs of the results store it read the last time it was executed (its
``reads/<chapter>.jsonl``, written by :mod:`xcomps_utils.runs.store`): their ``runs/<run>/`` and
each folder read, every file's bytes. The data files themselves are not hashed: the manifests
pin their checksums, which every load verifies. One line a part, so a changed stamp says which
part changed::

    python -m xcomps_utils.pages.stamp <chapter> <reads.jsonl> [papermill arguments ...]
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from ..errors import InputError

__all__ = ["PACKAGE", "chapter_stamp"]

#: The checkout's files a chapter's execution depends on besides its source (globs from the root).
PACKAGE = ("xcomps_utils/**/*.py", "xcomps_utils/**/*.json", "data/*.json", "data/*.csv",
           "data/sample/**/*.json", "pyproject.toml", "constraints.txt")


def _files_sha256(files: list[Path], root: Path) -> str:
    """One SHA-256 of the files' paths (relative to ``root``) and bytes, in path order."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.as_posix()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _store_part(reads: Path | None) -> tuple[str, int]:
    """``(sha256, runs)`` of the runs a chapter's reads log names: per (store, run, folder),
    the files of ``runs/<run>/`` and ``<folder>/run=<run>/``; a run no longer there counts as
    absent (so it differs from when it was there)."""
    records = set()
    if reads is not None and reads.is_file():
        for line in reads.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            records.add((rec["store"], rec["run"], rec["folder"]))
    h = hashlib.sha256()
    for store, run, folder in sorted(records):
        h.update(json.dumps([store, run, folder]).encode())
        for d in (Path(store) / "runs" / run, Path(store) / folder / f"run={run}"):
            files = [f for f in d.rglob("*") if f.is_file()] if d.is_dir() else []
            h.update((_files_sha256(files, d) if files else "absent").encode())
    return h.hexdigest(), len({(s, r) for s, r, _ in records})


def chapter_stamp(chapter: str, args: list[str], reads: str | Path | None = None,
                  root: str | Path = ".") -> str:
    """The stamp of ``chapter``'s inputs: four lines, ``source``, ``arguments``, ``package``
    and ``store``, each a name, a SHA-256 (hex) and what it covers.

    Args:
        chapter: the chapter's name (``notebooks/<chapter>.md`` under ``root``).
        args: the papermill arguments, as words (``["-p", "n_pairs", "6", ...]``).
        reads: the chapter's reads log (``reads/<chapter>.jsonl``); absent or None: no run read.
        root: the checkout.

    Raises:
        ValueError: ``chapter`` names no notebook under ``root``.
    """
    root = Path(root)
    source = root / "notebooks" / f"{chapter}.md"
    if not source.is_file():
        known = sorted(p.stem for p in (root / "notebooks").glob("*.md"))
        raise InputError(f"the 'chapter' parameter must name a notebook of {root / 'notebooks'} "
                         f"({', '.join(known)}); got {chapter!r}")
    package = sorted({f for pattern in PACKAGE for f in root.glob(pattern)
                      if f.is_file() and "__pycache__" not in f.parts})
    store, runs = _store_part(Path(reads) if reads else None)
    words = json.dumps(list(args), ensure_ascii=False)
    return "\n".join([
        f"source {_files_sha256([source], root)} notebooks/{chapter}.md",
        f"arguments {hashlib.sha256(words.encode()).hexdigest()} {words}",
        f"package {_files_sha256(package, root)} {len(package)} files",
        f"store {store} {runs} runs read"]) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m xcomps_utils.pages.stamp CHAPTER READS [ARGUMENTS ...]")
    try:
        sys.stdout.write(chapter_stamp(sys.argv[1], sys.argv[3:], sys.argv[2]))
    except ValueError as err:
        sys.exit(str(err))
