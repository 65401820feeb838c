"""The package's layers, read from its source with ``ast`` (nothing is imported).

* **loaders** read pairs from files (the data layer of ``ARCHITECTURE.md``): :data:`LOADERS`;
* **methods** load models, score, probe, plan, execute and store runs: :data:`METHODS`;
* **analysis** turns results into a paper's tables and claims: :data:`ANALYSIS` (the claims
  machinery and the per-paper modules);
* **presentation** draws and serves the chapters: :data:`PRESENTATION`.

Every import between package modules is counted, at the top of a module or inside a function
(``from .x import y``, ``from . import x``, ``from xcomps_utils.x import y``,
``import xcomps_utils.x``). The module graph must have no cycle; no module may import another
module's private name (``_x``, as ``from .x import _y`` or as ``x._y`` on an imported module);
loaders import only loaders; loaders and methods import no analysis or presentation module;
analysis imports no presentation module.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "xcomps_utils"

LOADERS = {"paths", "data", "xcomps", "grammar", "tasks", "nonsense", "typology", "bmlama"}
METHODS = {"encoding", "models", "scoring", "token_scores", "words", "meta", "perplexity", "neuro", "probing",
           "precision", "decompose", "config", "params", "planner", "methods", "ray_executor",
           "sweep", "cli", "store", "results"}
ANALYSIS = {"claims", "stats", "consistency", "concept_prior", "xcomps_paper", "perplexity_paper",
            "grammar_study", "bmlama_study"}
PRESENTATION = {"plots", "chapters", "explorer", "exercises"}


def _sources(package: Path = PACKAGE) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py"))}


def imports(sources: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """``{module: {imported module: names taken from it}}`` for every package module: the
    names of ``from .x import a, b`` and the attributes read off ``from . import x`` /
    ``import xcomps_utils.x`` (``x.a``)."""
    out = {}
    for mod, src in sources.items():
        tree = ast.parse(src, filename=f"{mod}.py")
        deps: dict[str, set[str]] = {}
        aliases: dict[str, str] = {}  # local name -> package module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                inside = node.level == 1 or (node.level == 0 and node.module is not None and (
                    node.module == "xcomps_utils" or node.module.startswith("xcomps_utils.")))
                if not inside:
                    continue
                base = (node.module or "").removeprefix("xcomps_utils").lstrip(".")
                if base:
                    deps.setdefault(base.split(".")[0], set()).update(a.name for a in node.names)
                else:  # from . import x / from xcomps_utils import x
                    for a in node.names:
                        if a.name in sources and a.name != "__init__":
                            deps.setdefault(a.name, set())
                            aliases[a.asname or a.name] = a.name
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("xcomps_utils."):
                        target = a.name.split(".")[1]
                        deps.setdefault(target, set())
                        if a.asname:
                            aliases[a.asname] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                deps[aliases[node.value.id]].add(node.attr)
        deps.pop(mod, None)
        out[mod] = {d: names for d, names in deps.items() if d in sources}
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
    bad = [f"loader {m} imports {d} (not a loader)" for m in LOADERS & set(graph)
           for d in graph[m] if d not in LOADERS]
    bad += [f"{m} imports the analysis module {d}" for m in (LOADERS | METHODS) & set(graph)
            for d in graph[m] if d in ANALYSIS]
    bad += [f"{m} imports the presentation module {d}" for m in set(graph) - PRESENTATION
            for d in graph[m] if d in PRESENTATION]
    return sorted(bad)


GRAPH = imports(_sources())


def test_every_module_is_in_a_layer():
    """A new module must be placed in a layer here."""
    assert set(GRAPH) - {"__init__"} - LOADERS - METHODS - ANALYSIS - PRESENTATION == set()


def test_no_import_cycle():
    assert cycle(GRAPH) is None, f"import cycle: {' -> '.join(cycle(GRAPH))}"


def test_no_private_name_is_imported_across_modules():
    assert private_imports(GRAPH) == []


def test_layers_import_only_downwards():
    assert layer_violations(GRAPH) == []


# --- the checks find what they look for -------------------------------------------------------

@pytest.mark.parametrize("sources, check, expected", [
    ({"data": "from . import xcomps\n", "xcomps": "def f():\n    from .data import read\n"},
     lambda g: cycle(g), ["data", "xcomps", "data"]),
    ({"a": "from .b import _hidden\n", "b": ""}, private_imports, ["a imports b._hidden"]),
    ({"a": "from . import b as B\nB._load()\n", "b": ""}, private_imports, ["a imports b._load"]),
    ({"a": "import xcomps_utils.b\n", "b": "from xcomps_utils import a\n"},
     lambda g: cycle(g), ["a", "b", "a"]),
    ({"scoring": "def f():\n    from .claims import correct\n", "claims": ""},
     layer_violations, ["scoring imports the analysis module claims"]),
    ({"xcomps": "from .scoring import token_scores\n", "scoring": ""}, layer_violations,
     ["loader xcomps imports scoring (not a loader)"]),
    ({"claims": "from . import plots\n", "plots": ""}, layer_violations,
     ["claims imports the presentation module plots"]),
])
def test_the_checks_find_a_planted_violation(sources, check, expected):
    assert check(imports(sources)) == expected


# --- the torch boundary -------------------------------------------------------------------------

#: Modules that must not import torch when imported: the analysis, the figures, the chapters' glue,
#: the loaders, and the run machinery (torch is imported where a model is loaded or text is
#: scored: models, scoring, neuro, probing; reading a stored run still imports it once, to resolve
#: device "auto" for the run's key).
TORCH_FREE = sorted(ANALYSIS | PRESENTATION | LOADERS | {"token_scores", "methods", "planner",
                                                           "store", "results", "decompose",
                                                           "perplexity", "encoding", "config"})


def _torch_modules(code: str, env=None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps("
                          "sorted(m for m in sys.modules if m == 'torch' or "
                          "m.startswith('torch.'))[:3]))"], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_analysis_the_figures_and_a_stores_reader_import_no_torch():
    code = "import importlib\n" + "".join(f"importlib.import_module('xcomps_utils.{m}')\n"
                                          for m in TORCH_FREE)
    assert _torch_modules(code) == []
    # and the check sees torch when a module does import it
    assert _torch_modules("import xcomps_utils.scoring") != []
