"""The package's layers, read from its folders with ``ast`` (nothing is imported but in the torch
test).

The folders of ``xcomps_utils`` are the layers (:data:`ORDER`): ``pairs`` (minimal-pair data),
``lm`` (models and log-probabilities), ``methods`` (Direct, Meta, Neuro, token-level
perplexity), ``runs`` (plan, execute, store, command line), ``analysis`` (claims and the papers'
tables) and ``pages`` (what chapters share); the top-level modules (``paths``) are the base that
every layer may read. A module of one layer imports only modules of the layers :data:`MAY_IMPORT`
lists for it: each layer the ones before it, except that ``runs`` and ``analysis`` are siblings
(neither imports the other: analysis takes frames, not stores).

Every import between package modules is counted, at the top of a module or inside a function
(``from .x import y``, ``from ..f import x``, ``from ..f.x import y``, ``from xcomps_utils.f.x
import y``, ``import xcomps_utils.f.x``). The module graph must have no cycle, no module may import
another module's private name (``_x``), and ``pairs``, ``analysis`` and ``pages`` import no torch.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "xcomps_utils"

#: The layers, lowest first: the package's folders.
ORDER = ("pairs", "lm", "methods", "runs", "analysis", "pages")
#: What each layer may import ("" is the top level: ``paths``, ``errors``, ``declare`` and
#: ``__init__``).
MAY_IMPORT = {"": {""}, "pairs": {"", "pairs"}, "lm": {"", "pairs", "lm"},
              "methods": {"", "pairs", "lm", "methods"},
              "runs": {"", "pairs", "lm", "methods", "runs"},
              "analysis": {"", "pairs", "lm", "methods", "analysis"},
              "pages": {"", *ORDER}}


def layer(module: str) -> str:
    """``"pairs.data"`` -> ``"pairs"``; a top-level module (``"paths"``) -> ``""``."""
    return module.rpartition(".")[0]


def _sources(package: Path = PACKAGE) -> dict[str, str]:
    """``{"pairs.data": source, ..., "paths": source, "__init__": source}``; a folder's
    ``__init__`` is ``"pairs.__init__"``."""
    return {".".join(p.relative_to(package).with_suffix("").parts): p.read_text(encoding="utf-8")
            for p in sorted(package.rglob("*.py"))}


def _resolve(mod: str, level: int, target: str | None) -> str:
    """The package-relative name an import refers to (``""`` for the package itself)."""
    if level == 0:
        return (target or "").removeprefix("xcomps_utils").lstrip(".")
    parts = mod.split(".")[:-1]  # the importing module's package
    parts = parts[:len(parts) - (level - 1)] if level > 1 else parts
    return ".".join(parts + ([target] if target else []))


def imports(sources: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """``{module: {imported module: names taken from it}}`` for every package module: the
    names of ``from .x import a, b`` and the attributes read off an imported module (``x.a``)."""
    def module(name):
        return name if name in sources else (f"{name}.__init__" if f"{name}.__init__" in sources
                                              else None)

    out = {}
    for mod, src in sources.items():
        tree = ast.parse(src, filename=f"{mod}.py")
        deps: dict[str, set[str]] = {}
        aliases: dict[str, str] = {}  # local name -> package module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                inside = node.level > 0 or (node.module is not None and (
                    node.module == "xcomps_utils" or node.module.startswith("xcomps_utils.")))
                if not inside:
                    continue
                base = _resolve(mod, node.level, node.module)
                for a in node.names:
                    sub = module(f"{base}.{a.name}" if base else a.name)
                    if sub is not None and not sub.endswith("__init__"):  # from .f import x
                        deps.setdefault(sub, set())
                        aliases[a.asname or a.name] = sub
                    elif module(base or "__init__") is not None:
                        deps.setdefault(module(base or "__init__"), set()).add(a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("xcomps_utils."):
                        target = module(a.name.removeprefix("xcomps_utils."))
                        if target is not None:
                            deps.setdefault(target, set())
                            if a.asname:
                                aliases[a.asname] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                deps[aliases[node.value.id]].add(node.attr)
        deps.pop(mod, None)
        out[mod] = deps
    return out


def cycle(graph: dict[str, dict]) -> list[str] | None:
    """A cycle of the import graph (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, {})):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def private_imports(graph) -> list[str]:
    return sorted(f"{m} imports {d}.{n}" for m, deps in graph.items() for d, names in deps.items()
                  for n in names if n.startswith("_") and not n.startswith("__"))


def layer_violations(graph) -> list[str]:
    return sorted(f"{m} ({layer(m) or 'top level'}) imports {d} ({layer(d) or 'top level'})"
                  for m, deps in graph.items() for d in deps
                  if layer(d) not in MAY_IMPORT.get(layer(m), set()))


SOURCES = _sources()
GRAPH = imports(SOURCES)


def test_every_module_is_in_a_layer():
    """A module lives in one of the layer folders (or is one of the few top-level ones)."""
    assert {layer(m) for m in GRAPH} == {"", *ORDER}
    assert sorted(m for m in GRAPH if layer(m) == "") == ["__init__", "declare", "errors",
                                                           "paths"]


def test_no_import_cycle():
    assert cycle(GRAPH) is None, f"import cycle: {' -> '.join(cycle(GRAPH))}"


def test_no_private_name_is_imported_across_modules():
    assert private_imports(GRAPH) == []


def test_layers_import_only_downwards():
    assert layer_violations(GRAPH) == []


# --- the checks find what they look for -------------------------------------------------------

@pytest.mark.parametrize("sources, check, expected", [
    ({"pairs.data": "from . import xcomps\n",
      "pairs.xcomps": "def f():\n    from .data import read\n"},
     lambda g: cycle(g), ["pairs.data", "pairs.xcomps", "pairs.data"]),
    ({"lm.a": "from .b import _hidden\n", "lm.b": ""}, private_imports, ["lm.a imports lm.b._hidden"]),
    ({"lm.a": "from ..pairs import b as B\nB._load()\n", "pairs.b": ""}, private_imports,
     ["lm.a imports pairs.b._load"]),
    ({"lm.a": "import xcomps_utils.runs.b\n", "runs.b": "from xcomps_utils.lm import a\n"},
     lambda g: cycle(g), ["lm.a", "runs.b", "lm.a"]),
    ({"lm.scoring": "def f():\n    from ..analysis.claims import correct\n", "analysis.claims": ""},
     layer_violations, ["lm.scoring (lm) imports analysis.claims (analysis)"]),
    ({"pairs.xcomps": "from ..lm.scoring import token_scores\n", "lm.scoring": ""},
     layer_violations, ["pairs.xcomps (pairs) imports lm.scoring (lm)"]),
    ({"analysis.claims": "from ..runs import store\n", "runs.store": ""}, layer_violations,
     ["analysis.claims (analysis) imports runs.store (runs)"]),
    ({"runs.cli": "from ..analysis import claims\n", "analysis.claims": ""}, layer_violations,
     ["runs.cli (runs) imports analysis.claims (analysis)"]),
    ({"paths": "from .pages import plots\n", "pages.plots": ""}, layer_violations,
     ["paths (top level) imports pages.plots (pages)"]),
])
def test_the_checks_find_a_planted_violation(sources, check, expected):
    assert check(imports(sources)) == expected


def test_the_graph_sees_each_import_form():
    g = imports({"runs.a": "from ..lm.b import x\nfrom ..lm import c\nimport xcomps_utils.pairs.d\n"
                           "from xcomps_utils.pairs import e as E\nfrom .. import paths\nE.f\n",
                 "lm.b": "", "lm.c": "", "pairs.d": "", "pairs.e": "", "paths": ""})
    assert g["runs.a"] == {"lm.b": {"x"}, "lm.c": set(), "pairs.d": set(), "pairs.e": {"f"},
                           "paths": set()}


# --- analysis: frames in, claims out ------------------------------------------------------------

#: pandas writers that write a file when given a path (without one, ``to_csv`` and ``to_json``
#: return text)
_FRAME_WRITERS = {"to_csv", "to_json", "to_parquet", "to_excel", "to_pickle", "to_feather",
                  "to_hdf", "to_sql", "to_stata", "to_orc"}
#: methods that write or remove a file whatever they are called on
_FILE_WRITERS = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "savefig"}
#: ``os`` functions that read the environment or change files
_OS_EFFECTS = {"environ", "environb", "getenv", "putenv", "unsetenv", "remove", "unlink",
               "rename", "replace", "makedirs", "mkdir", "rmdir", "removedirs", "system"}


def _writing_mode(call: ast.Call, position: int) -> bool:
    """Whether an ``open`` call's mode (its ``position``-th argument or ``mode=``) may write:
    a literal with ``w``, ``a``, ``x`` or ``+``, or a mode that is not a literal."""
    mode = next((k.value for k in call.keywords if k.arg == "mode"),
                call.args[position] if len(call.args) > position else None)
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True


def side_effects(sources: dict[str, str]) -> list[str]:
    """``"analysis.x:line what"`` for every place an ``analysis`` module reads the environment
    (``os.environ``, ``os.getenv``, the ``paths`` module that reads it, ``sys.modules`` such as
    the notebook's ``__main__``) or writes a file (``open`` to write, a frame's ``to_csv(path)``
    and the like, ``Path.write_text``, ``mkdir``, ``np.save``, ``json.dump``, ``shutil``,
    ``savefig``): an analysis module takes frames and returns tables and claims; the pages
    layer decides what is written where."""
    out = []
    for mod, src in sources.items():
        if layer(mod) != "analysis":
            continue
        for node in ast.walk(ast.parse(src)):
            what = None
            if isinstance(node, ast.ImportFrom):
                names = {a.name for a in node.names}
                base = _resolve(mod, node.level, node.module)
                if base == "paths" or (base == "" and "paths" in names):
                    what = "imports paths (the environment)"
                elif node.module == "os" and names & _OS_EFFECTS:
                    what = f"from os import {', '.join(sorted(names & _OS_EFFECTS))}"
                elif node.module == "sys" and "modules" in names:
                    what = "from sys import modules"
                elif node.module == "shutil":
                    what = "from shutil import"
            elif isinstance(node, ast.Import):
                if any(a.name in ("shutil", "xcomps_utils.paths") for a in node.names):
                    what = f"import {', '.join(a.name for a in node.names)}"
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                owner, attr = node.value.id, node.attr
                if owner == "os" and attr in _OS_EFFECTS:
                    what = f"os.{attr}"
                elif owner == "sys" and attr == "modules":
                    what = "sys.modules"
                elif owner == "shutil":
                    what = f"shutil.{attr}"
                elif owner in ("np", "numpy") and attr.startswith("save"):
                    what = f"{owner}.{attr}"
                elif owner in ("json", "pickle", "yaml") and attr == "dump":
                    what = f"{owner}.dump"
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id == "open" and _writing_mode(node, 1):
                    what = "open(..., write)"
                elif isinstance(f, ast.Attribute) and f.attr == "open" and _writing_mode(node, 0):
                    what = ".open(write)"
                elif isinstance(f, ast.Attribute) and f.attr in _FILE_WRITERS:
                    what = f".{f.attr}("
                elif isinstance(f, ast.Attribute) and f.attr in _FRAME_WRITERS and (
                        node.args or any(k.arg in ("path", "path_or_buf", "excel_writer", "buf")
                                         for k in node.keywords)
                        or f.attr not in ("to_csv", "to_json")):
                    what = f".{f.attr}(path)"
            if what:
                out.append(f"{mod}:{node.lineno} {what}")
    return sorted(out)


def test_analysis_reads_no_environment_and_writes_no_file():
    assert side_effects(SOURCES) == []


@pytest.mark.parametrize("planted, expected", [
    ("import os\nx = os.environ.get('XCOMPS_VERDICTS')\n", "os.environ"),
    ("import os\nx = os.getenv('XCOMPS_CHAPTER')\n", "os.getenv"),
    ("from os import environ\n", "from os import environ"),
    ("import sys\nns = vars(sys.modules['__main__'])\n", "sys.modules"),
    ("from .. import paths\n", "imports paths (the environment)"),
    ("from ..paths import verdicts_dir\n", "imports paths (the environment)"),
    ("def f(p):\n    with open(p, 'a') as h:\n        h.write('x')\n", "open(..., write)"),
    ("def f(p, m):\n    return open(p, mode=m)\n", "open(..., write)"),
    ("def f(p):\n    return p.open('w')\n", ".open(write)"),
    ("def f(df, p):\n    df.to_csv(p, index=False)\n", ".to_csv(path)"),
    ("def f(df):\n    df.to_parquet('x.parquet')\n", ".to_parquet(path)"),
    ("def f(df, p):\n    df.to_json(path_or_buf=p)\n", ".to_json(path)"),
    ("def f(p):\n    p.write_text('x')\n", ".write_text("),
    ("def f(p):\n    p.parent.mkdir(parents=True)\n", ".mkdir("),
    ("import numpy as np\ndef f(p, a):\n    np.save(p, a)\n", "np.save"),
    ("import json\ndef f(h, x):\n    json.dump(x, h)\n", "json.dump"),
    ("import shutil\n", "import shutil"),
    ("def f(fig, p):\n    fig.savefig(p)\n", ".savefig("),
])
def test_the_side_effect_check_finds_a_planted_one(planted, expected):
    found = side_effects({"analysis.x": planted})
    assert found and all(f.startswith("analysis.x:") for f in found)
    assert any(f.split(" ", 1)[1] == expected for f in found), found
    # the same code elsewhere (pages decide what is written) is not analysis' concern
    assert side_effects({"pages.x": planted}) == []


def test_the_side_effect_check_lets_text_and_reading_be():
    benign = ("import json\nimport pandas as pd\n"
              "def f(df, p, t):\n"
              "    s = df.to_csv(index=False) + json.dumps({}) + t.replace('a', 'b')\n"
              "    with open(p) as h, open(p, 'rb') as g:\n"
              "        return pd.read_csv(p), h.read(), g.read(), s, df.rename(columns={})\n")
    assert side_effects({"analysis.x": benign}) == []


# --- the torch boundary -------------------------------------------------------------------------

#: Modules that must not import torch when imported: every module of pairs, analysis and pages
#: (the data, the claims, the figures and the chapters' glue), the plain data types of lm, and
#: what reads a stored run, the method registry and the method modules (torch is imported where a
#: model is loaded or text is scored: lm.models, lm.scoring, inside the methods' compute_shard).
TORCH_FREE = sorted({m for m in GRAPH if layer(m) in ("pairs", "analysis", "pages")}
                    | {"lm.token_scores", "lm.words", "lm.precision", "lm.encoding",
                       "methods.config", "methods.perplexity", "runs.execute", "runs.planner",
                       "runs.store", "runs.results",
                       # the registry and every method module (they import torch to compute)
                       "methods.registry", "methods.base", "methods.direct", "methods.meta",
                       "methods.neuro", "runs.audit", "runs.sweep", "runs.cli"})


def _torch_modules(code: str, env=None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps("
                          "sorted(m for m in sys.modules if m == 'torch' or "
                          "m.startswith('torch.'))[:3]))"], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_analysis_the_figures_and_a_stores_reader_import_no_torch():
    code = "import importlib\n" + "".join(
        f"importlib.import_module('xcomps_utils.{m.removesuffix('.__init__')}')\n"
        for m in TORCH_FREE)
    assert _torch_modules(code) == []
    # and the check sees torch when a module does import it
    assert _torch_modules("import xcomps_utils.lm.scoring") != []


# --- runs/ names no method --------------------------------------------------------------------

def method_literals(sources: dict[str, str], names) -> list[str]:
    """``"runs.x:line 'name'"`` for every string literal of a ``runs`` module that is one of
    ``names`` (a registered method, or a method's finishing shard): what a method does is asked
    of its object in :mod:`xcomps_utils.methods.registry`, never decided by its name there."""
    out = []
    for mod, src in sources.items():
        if layer(mod) != "runs":
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                out.append(f"{mod}:{node.lineno} {node.value!r}")
    return sorted(out)


def _method_words() -> set[str]:
    from xcomps_utils.methods.registry import METHODS

    return set(METHODS) | {m.finish_shard for m in METHODS.values() if m.finish_shard}


def test_runs_name_no_method():
    words = _method_words()
    assert {"direct", "meta", "neuro", "token_ppl", "probes"} <= words  # what the check seeks
    assert method_literals(SOURCES, words) == []


def test_the_method_literal_check_finds_a_planted_name():
    planted = {"runs.x": '"""A docstring naming direct is prose."""\n'
                         'def f(m):\n    return m == "neuro" or f"{m}" == "probes"\n',
               "methods.y": 'M = "neuro"\n'}
    assert method_literals(planted, _method_words()) == ["runs.x:3 'neuro'", "runs.x:3 'probes'"]


def test_tests_mirror_the_package_folders():
    """``tests/<layer>/`` for each folder (layer) of the package, and ``tests/book/`` for the
    chapters and the book's scaffolding: a test file lives beside the tests of what it tests;
    what spans the layers (these rules, the errors, the packaging) stays in ``tests/``."""
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == layers | {"book"}, (folders, layers)
    assert all(list(p.glob("test_*.py")) for p in tests.iterdir() if p.name in folders)
