"""The verdicts of a build, for the findings page: what each chapter tested, in one file a chapter.

A chapter prints its claims (:func:`xcomps_utils.analysis.report.claims_markdown`) and records the
same tests with :func:`record`, naming its page and the models it tests. Where they go is set once
per execution by :func:`xcomps_utils.pages.chapters.open` (:func:`install`: ``$XCOMPS_VERDICTS``,
which the Makefile's chapter rule sets); a notebook run by hand records nothing. The findings
page reads every chapter's file back (:func:`read_verdicts`) and counts the verdicts
(:func:`verdict_counts`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..analysis.claims import SAVED_FIELDS, VERDICTS, ClaimTest
from ..analysis.families import chapters_with_claims
from ..errors import InputError

__all__ = ["VERDICT_COLUMNS", "install", "installed", "record", "recorded", "read_verdicts",
           "verdict_counts"]

#: the columns of a verdict file: :meth:`ClaimTest.as_dict`, the page that printed the test and
#: the model it tested
VERDICT_COLUMNS = [*SAVED_FIELDS, "half_width", "page", "model"]

#: where :func:`record` writes (:func:`install`), and the files it has begun since (the first
#: record of a page after :func:`install` makes its file afresh, later ones append)
_folder: Path | None = None
_started: set[Path] = set()
#: what :func:`record` was given since :func:`install`, per page (:func:`recorded`), written or not
_rows: dict[str, list[pd.DataFrame]] = {}


def install(folder: str | os.PathLike | None) -> None:
    """Record this process's verdicts in ``folder`` (``None``: record nothing), each page's file
    made afresh by its first :func:`record` from now on (a chapter executed again replaces its
    file). :func:`xcomps_utils.pages.chapters.open` installs ``$XCOMPS_VERDICTS``."""
    global _folder
    _folder = None if folder is None else Path(folder)
    _started.clear()
    _rows.clear()


def installed() -> Path | None:
    """The folder :func:`record` writes to (:func:`install`), or None."""
    return _folder


def _names(models) -> list[str]:
    """The model names of ``models`` (one name, or a list; what is not a name left out)."""
    if isinstance(models, str):
        return [models]
    return [m for m in models if isinstance(m, str) and m]


def _model_of(t: ClaimTest, models: list[str], main: str) -> str:
    """The model a test is about: the longest of ``models`` its scope or family names (a second
    model, one of several), else ``main``."""
    named = [m for m in models if m in f"{t.scope} {t.family}"]
    return max(named, key=len) if named else main


def record(tests: list[ClaimTest], page: str, models: str | Iterable[str] = (),
           main: str = "") -> None:
    """Write ``tests`` for the findings page, a row each (:data:`VERDICT_COLUMNS`) in
    ``<folder>/<page>.csv`` of the installed folder (:func:`install`): the first record of a
    page makes its file afresh (an empty list still makes it, so the findings page knows the
    page ran), later ones append. Nothing is written when no folder is installed; either way
    the rows are kept for :func:`recorded` (a chapter's box, :mod:`xcomps_utils.pages.finds`).

    Args:
        tests: the tests the page printed (corrected in their families).
        page: the chapter's name (``notebooks/<page>.md``).
        models: the models the page tests; a test is about the longest of them its scope or
            family names (a second model, one of several).
        main: the model of a test that names none of ``models`` (the page's one model; ``""``
            on a page of several).

    Returns nothing (a chapter's cell that ends with it shows no output).

    Raises:
        ValueError: ``page`` is not a chapter's name, ``tests`` holds something else than
            :class:`ClaimTest`.
    """
    if not isinstance(page, str) or not page.isidentifier():
        raise InputError(f"the 'page' parameter must be a chapter's name (notebooks/<page>.md); "
                         f"got {page!r}")
    bad = [type(t).__name__ for t in tests if not isinstance(t, ClaimTest)]
    if bad:
        raise InputError(f"the 'tests' parameter must be a list of ClaimTest; got {bad[0]}")
    names = _names(models)
    rows = pd.DataFrame([{**t.as_dict(), "page": page, "model": _model_of(t, names, main)}
                         for t in tests], columns=VERDICT_COLUMNS)
    _rows.setdefault(page, []).append(rows)
    if _folder is None:
        return
    path = (_folder / f"{page}.csv").resolve()
    first = path not in _started
    path.parent.mkdir(parents=True, exist_ok=True)
    rows.to_csv(path, mode="w" if first else "a", header=first, index=False)
    _started.add(path)


def read_verdicts(folder: str | os.PathLike) -> tuple[pd.DataFrame, list[str]]:
    """The verdicts the chapters of a build recorded (``<folder>/<page>.csv``, written by
    :func:`record`), and the chapters that print verdicts
    (:data:`xcomps_utils.analysis.families.FAMILIES`) whose file is missing.

    Returns:
        ``(rows, missing)``: one row per test (:data:`VERDICT_COLUMNS`; the pages in the order
        the families declare them, then any other, each page's rows as recorded); the missing
        pages in that order. A folder that does not exist: no rows, every page missing.

    Raises:
        ValueError: a file whose columns are not :data:`VERDICT_COLUMNS` (named, with what to
            do).
    """
    folder = Path(folder)
    files = {p.stem: p for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}
    order = chapters_with_claims()
    pages = [p for p in order if p in files] + [p for p in files if p not in order]
    frames = []
    for page in pages:
        df = pd.read_csv(files[page])
        if list(df.columns) != VERDICT_COLUMNS:
            raise InputError(f"{files[page]}: its columns are not those of a verdict file "
                             f"(verdicts.VERDICT_COLUMNS): execute the chapter {page!r} again "
                             f"(make {files[page].parent.parent}/{page}.ipynb)")
        frames.append(df)
    return _typed(frames), [p for p in order if p not in files]


def _typed(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Verdict rows in one frame, as a file reads back: text columns as text (``""`` for none),
    the numbers as floats (NaN for none)."""
    rows = (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=VERDICT_COLUMNS))
    text = ("claim", "hypothesis", "measure", "verdict", "unit", "scope", "family", "role",
            "caveat", "reason", "page", "model", "source", "null_hypothesis", "test")
    for col in VERDICT_COLUMNS:
        rows[col] = (rows[col].fillna("").astype(str) if col in text
                     else pd.to_numeric(rows[col], errors="coerce"))
    return rows


def recorded(page: str) -> pd.DataFrame:
    """The rows :func:`record` was given for ``page`` since :func:`install` (a chapter's entry
    installs it), written to a folder or not, typed as :func:`read_verdicts` reads them: what a
    chapter's box says (:func:`xcomps_utils.pages.finds.claims`). No record: no rows."""
    return _typed(list(_rows.get(page, [])))


def verdict_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """How many tests of each verdict, per role and model: index ``(role, model)``
    (confirmatory first, then exploratory; a model the pages did not name is
    ``"(not named)"``), columns :data:`xcomps_utils.analysis.claims.VERDICTS` then ``total``; a
    row per pair that has tests."""
    df = rows.assign(model=rows["model"].replace("", "(not named)"),
                     role=pd.Categorical(rows["role"], ["confirmatory", "exploratory"]),
                     verdict=pd.Categorical(rows["verdict"], VERDICTS))
    counts = (df.groupby(["model", "role", "verdict"], observed=False).size()
              .unstack("verdict").reindex(columns=list(VERDICTS), fill_value=0))
    counts = counts[counts.sum(axis=1) > 0].assign(total=lambda c: c.sum(axis=1))
    counts.columns.name = None
    return counts.swaplevel().sort_index(level="role", sort_remaining=False).astype(int)
