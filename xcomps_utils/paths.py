"""Where the package's shipped files and the user cache live."""

from __future__ import annotations

import os
from pathlib import Path


def resources_dir() -> Path:
    """The package's shipped files (``xcomps_utils/resources/``): dataset manifests
    (``blimp.json``, ``crows_pairs.json``, ``dust.json``, ``xcomps.json``), ``languages.csv`` and
    the XCOMPS sample ``sample/xcomps/``. Inside the installed package, so it works for editable
    and non-editable installs alike."""
    return Path(__file__).resolve().parent / "resources"


def cache_dir() -> Path:
    """User cache for downloaded data and converted models.

    ``$XCOMPS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/xcomps-study`` (``~/.cache/xcomps-study``).
    """
    env = os.environ.get("XCOMPS_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xcomps-study"
