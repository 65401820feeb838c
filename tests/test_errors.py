"""One error base for the package, one did-you-mean."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import xcomps_utils
from xcomps_utils.errors import XcompsError, did_you_mean


def _modules():
    return [importlib.import_module(m.name) for m in pkgutil.walk_packages(
        xcomps_utils.__path__, "xcomps_utils.") if not m.name.startswith("xcomps_utils.resources")]


def test_every_error_class_of_the_package_derives_from_the_one_base():
    """Public error classes (a private one raised inside a pydantic validator is turned into
    the package's ``ParameterError`` or ``Invalid`` before it leaves)."""
    errors = {f"{c.__module__}.{c.__qualname__}": c for mod in _modules()
              for _, c in inspect.getmembers(mod, inspect.isclass)
              if issubclass(c, Exception) and not issubclass(c, Warning)
              and c.__module__.startswith("xcomps_utils") and not c.__name__.startswith("_")}
    assert len(errors) >= 8, sorted(errors)
    assert [n for n, c in errors.items() if not issubclass(c, XcompsError)] == []


@pytest.mark.parametrize("word, choices, n, expected", [
    ("direkt", ["direct", "meta", "neuro"], 1, "did you mean 'direct'?"),
    ("blimp_anaphr", ["blimp_anaphor", "blimp_animacy", "dust"], 2,
     "did you mean 'blimp_anaphor', 'blimp_animacy'?"),
    ("zzzz", ["direct", "meta"], 1, ""),
])
def test_did_you_mean(word, choices, n, expected):
    assert did_you_mean(word, choices, n=n) == expected


def test_a_package_error_is_also_the_builtin_a_caller_expects():
    from xcomps_utils.pairs import tasks

    with pytest.raises(ValueError, match=r"unknown task 'blimp_anaphr'; did you mean "
                                         r"'blimp_anaphor'") as err:
        tasks.get("blimp_anaphr")
    assert isinstance(err.value, XcompsError)
