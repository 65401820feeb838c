"""Where the project's own data files, downloaded datasets and the user cache live, and the one
place the package reads its environment variables: ``XCOMPS_DATA_DIR`` (:func:`data_dir`),
``XCOMPS_CACHE_DIR`` (:func:`cache_dir`), ``XCOMPS_PROBE_JOBS`` (:func:`probe_jobs`); the
command line reads ``XCOMPS_DEBUG`` through click. Each is read when it is needed, not at import,
so a change takes effect in the running process.

The project's own data files (dataset manifests, ``languages.csv``, ``meta_templates.json``, the
XCOMPS sample) live in the top-level ``data/`` folder of the checkout, the study's data home.
pyproject.toml maps that folder to the package ``xcomps_utils.resources``, so a wheel (a
non-editable install) carries the same files as ``xcomps_utils/resources/``; a checkout, or an
editable install of one, reads ``data/`` itself. :func:`resources_dir` returns whichever exists,
with the same inner layout.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import XcompsError


class ResourcesMissing(XcompsError, FileNotFoundError):
    """The project's own data files are not where the package looks for them."""


_PACKAGE = Path(__file__).resolve().parent
_INSTALLED = _PACKAGE / "resources"  # inside a wheel's installed package
_CHECKOUT = _PACKAGE.parent / "data"  # beside the package in a checkout (editable install)
_MARKER = "xcomps.json"  # a manifest every copy holds


def resources_dir() -> Path:
    """The folder of the project's own data files: dataset manifests (``blimp.json``,
    ``bmlama.json``, ``clams.json``, ``crows_pairs.json``, ``dust.json``, ``multiblimp.json``,
    ``rublimp.json``, ``sling.json``, ``turblimp.json``, ``xcomps.json``), ``languages.csv``, ``meta_templates.json`` and the XCOMPS sample
    ``sample/xcomps/comps_<lang>.json``.

    ``xcomps_utils/resources/`` inside the installed package (non-editable install), else the
    checkout's top-level ``data/`` (source tree or editable install).

    Raises:
        ResourcesMissing: (a ``FileNotFoundError``) neither folder holds ``xcomps.json`` (a
            broken install or checkout).
    """
    for folder in (_INSTALLED, _CHECKOUT):
        if (folder / _MARKER).is_file():
            return folder
    raise ResourcesMissing(
        f"the project's data files are missing: no {_MARKER} in {_INSTALLED} (an installed "
        f"package) nor in {_CHECKOUT} (a checkout); reinstall the package, or restore data/ "
        f"from git")


def in_checkout() -> bool:
    """True when the package runs from a checkout (its files are read from the top-level
    ``data/``), False when it runs from a non-editable install."""
    return resources_dir() == _CHECKOUT


def data_dir() -> Path | None:
    """``$XCOMPS_DATA_DIR`` (a folder holding the datasets' files, one sub-folder per dataset, as
    ``../shared/data`` beside a checkout), or None when it is not set."""
    env = os.environ.get("XCOMPS_DATA_DIR")
    return Path(env) if env else None


def chapter() -> str | None:
    """``$XCOMPS_CHAPTER``: the chapter being executed (the Makefile's chapter rule sets it), or
    None. A run records it in its provenance, so a run is traced to the page that computed it
    even when two chapters are executed at once (``make smoke``)."""
    return os.environ.get("XCOMPS_CHAPTER") or None


def verdicts_dir() -> Path | None:
    """``$XCOMPS_VERDICTS``: where the pages write the verdicts they print (one CSV per chapter,
    read by the findings page; the Makefile's chapter rule sets it), or None."""
    env = os.environ.get("XCOMPS_VERDICTS")
    return Path(env) if env else None


def reads_dir() -> Path | None:
    """``$XCOMPS_READS``: where a chapter's reads of the results store are logged, one JSON
    line per run and folder read, in ``<chapter>.jsonl`` (the Makefile's chapter rule sets it;
    ``xcomps-study ship --reads`` ships what the book read), or None."""
    env = os.environ.get("XCOMPS_READS")
    return Path(env) if env else None


def read_log() -> Path | None:
    """``$XCOMPS_READS/$XCOMPS_CHAPTER.jsonl``: where the chapter being executed logs its reads
    of results stores (:func:`xcomps_utils.runs.store.log_reads`; the Makefile's chapter rule sets
    both), or None when either is unset."""
    folder, name = reads_dir(), chapter()
    return None if folder is None or name is None else folder / f"{name}.jsonl"


def probe_jobs() -> int:
    """Worker processes for a Neuro run's probes: ``$XCOMPS_PROBE_JOBS``, else every core.

    Raises:
        ParameterError: the variable is set to something other than a positive integer.
    """
    env = os.environ.get("XCOMPS_PROBE_JOBS", "")
    if not env:
        return os.cpu_count() or 1
    if not env.isdigit() or int(env) < 1:
        from .declare import ParameterError

        raise ParameterError("XCOMPS_PROBE_JOBS", "a positive integer (worker processes for "
                             "probing)", env, "or unset it to use every core",
                             kind="environment variable")
    return int(env)


def cache_dir() -> Path:
    """User cache for downloaded data and converted models.

    ``$XCOMPS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/xcomps-study`` (``~/.cache/xcomps-study``).
    """
    env = os.environ.get("XCOMPS_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xcomps-study"


def data_home() -> Path:
    """Where a downloaded dataset file lands by default, one sub-folder per dataset (its
    manifest's ``folder``: ``<data_home>/blimp/adjunct_island.jsonl``).

    In order: ``$XCOMPS_CACHE_DIR/data`` when that variable is set (an explicit choice beats a
    default; tests use it to keep downloads out of the checkout); the checkout's ``data/`` when
    the package runs from a checkout (git ignores its dataset folders); else the user cache
    ``~/.cache/xcomps-study/data``. An explicit ``data_dir`` argument or ``$XCOMPS_DATA_DIR``
    wins over all of these: the loaders read those first and never download into them.
    """
    if os.environ.get("XCOMPS_CACHE_DIR") or not in_checkout():
        return cache_dir() / "data"
    return _CHECKOUT
