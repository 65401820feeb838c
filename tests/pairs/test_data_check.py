"""Issue 41: offline with ``XCOMPS_DATA_DIR`` unset, `make book` (and `make smoke`) stop before any
chapter starts, in one line naming the variable (``data.check_available``, the Makefile's
``data-check``), instead of a 100-line traceback after the first chapter's 30 s."""

import os
import re
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from xcomps_utils.pairs import data

REPO = Path(__file__).resolve().parents[2]


def test_offline_without_the_data_variable_one_line_names_it(tmp_path, monkeypatch):
    monkeypatch.delenv("XCOMPS_DATA_DIR", raising=False)
    monkeypatch.setattr(data, "data_home", lambda: tmp_path)

    def offline(*a, **k):
        raise urllib.error.URLError("Name or service not known")
    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    with pytest.raises(data.DataError) as err:
        data.check_available()
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("XCOMPS_DATA_DIR is not set and ")
    assert "not in " + str(tmp_path / "blimp") in msg and "Name or service not known" in msg


def test_a_data_folder_without_a_dataset_is_named(tmp_path, monkeypatch):
    (tmp_path / "blimp").mkdir()
    monkeypatch.setenv("XCOMPS_DATA_DIR", str(tmp_path))
    with pytest.raises(data.DataError, match=r"XCOMPS_DATA_DIR=.* has no crows_pairs/, dust/"):
        data.check_available()


def test_the_offline_data_folder_passes(data_dir, monkeypatch):
    monkeypatch.setenv("XCOMPS_DATA_DIR", str(data_dir))
    data.check_available()  # no exception, no network


def test_make_book_and_smoke_check_the_data_before_any_chapter():
    """The check is a prerequisite of both targets, and the command exits 1 with the line (no
    traceback) where nothing can be fetched, after one request: a HEAD with a bound of its own
    (no download, no retry, no waiting on a hanging server)."""
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^book: install data-check$", make, re.M)
    assert re.search(r"^smoke: install data-check$", make, re.M)
    env = {k: v for k, v in os.environ.items() if k != "XCOMPS_DATA_DIR"}
    code = ("import urllib.request, urllib.error\n"
            "def off(request, *a, **k):\n"
            "    print(getattr(request, 'method', None), k.get('timeout'), flush=True)\n"
            "    raise urllib.error.URLError('offline')\n"
            "urllib.request.urlopen = off\n"
            "import pathlib, xcomps_utils.paths as P\n"
            "P.data_home = lambda: pathlib.Path('/nonexistent-xcomps-data')\n"
            "import runpy; runpy.run_module('xcomps_utils.pairs.data', run_name='__main__')\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd="/", timeout=600)  # a hang guard, not a speed bound
    assert r.returncode == 1 and r.stdout.splitlines() == ["HEAD 5.0"], (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("data: XCOMPS_DATA_DIR is not set"), r.stderr
