"""Where the project's own files and the user cache live."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The checkout this package is installed from (editable install): holds ``data/`` manifests."""
    return Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """User cache for downloaded data and converted models.

    ``$XCOMPS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/xcomps-study`` (``~/.cache/xcomps-study``).
    """
    env = os.environ.get("XCOMPS_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xcomps-study"
