"""Speed is measured in benchmarks/ as ratios against a baseline run side by side, never asserted
by a clock in a test: on a busy 2-core machine such assertions failed for no bug (33-50 s against
30 s). A test asserting on elapsed time fails here, by file and line."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "process_time"}


def _timed(tree: ast.AST) -> list[int]:
    """Lines of ``assert`` statements that read a clock (``time.monotonic()`` and the like)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for sub in ast.walk(node.test):
                if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                        and sub.func.attr in CLOCKS and isinstance(sub.func.value, ast.Name)
                        and sub.func.value.id == "time"):
                    out.append(node.lineno)
    return out


def test_no_test_asserts_on_a_clock():
    found = [f"{p.relative_to(TESTS.parent)}:{line}" for p in sorted(TESTS.rglob("*.py"))
             for line in _timed(ast.parse(p.read_text(encoding="utf-8")))]
    assert not found, f"timed assertions (measure speed in benchmarks/ instead): {found}"


def test_a_planted_timed_assertion_is_found():
    planted = "import time\nstart = time.monotonic()\nassert time.monotonic() - start < 30\n"
    assert _timed(ast.parse(planted)) == [3]
    assert _timed(ast.parse("assert elapsed < 30\n")) == []
