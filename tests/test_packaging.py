"""Packaging: one source of version pins, and a package that works off the author's checkout."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _norm(name: str) -> str:
    """PEP 503 normalized project name (``Sphinx`` == ``sphinx``, ``myst_nb`` == ``myst-nb``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pin(spec: str) -> tuple[str, str] | None:
    """``(normalized name, version)`` of ``name==version``, else None."""
    m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)\s*", spec)
    return (_norm(m.group(1)), m.group(2)) if m else None


def _constraints() -> dict[str, str]:
    pins = {}
    for no, line in enumerate((REPO / "constraints.txt").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pin = _pin(line)
        assert pin, f"constraints.txt:{no}: {line!r} is not name==version"
        pins[pin[0]] = pin[1]
    return pins


def _environment_pip_entries() -> list[str]:
    """The entries of the ``- pip:`` list of environment.yml (one ``- item`` a line)."""
    lines = (REPO / "environment.yml").read_text().splitlines()
    starts = [i for i, l in enumerate(lines) if re.fullmatch(r"\s*- pip:\s*", l)]
    assert len(starts) == 1, "environment.yml needs exactly one '- pip:' list"
    indent = len(lines[starts[0]]) - len(lines[starts[0]].lstrip())
    entries = []
    for line in lines[starts[0] + 1:]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        m = re.fullmatch(r"\s*-\s+(.+?)\s*", line)
        assert m, f"environment.yml: unexpected line in the pip list: {line!r}"
        entries.append(m.group(1))
    return entries


def _pyproject_names() -> set[str]:
    """Every project named in pyproject.toml's dependencies and optional dependencies."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {_norm(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r).group(0)) for r in reqs}


def test_environment_yml_matches_constraints():
    """environment.yml's pip list holds exactly constraints.txt's pins, plus only ``-e .`` and
    ``==`` pins of projects that pyproject.toml names (e.g. the embedded Gemma package)."""
    want = _constraints()
    entries = _environment_pip_entries()
    declared = _pyproject_names()
    got, problems = {}, []
    for entry in entries:
        if entry in ("-e .", "--editable ."):
            continue
        pin = _pin(entry)
        if pin is None:
            problems.append(f"environment.yml: {entry!r} is not pinned with == (nor '-e .')")
            continue
        if pin[0] in got:
            problems.append(f"environment.yml: {pin[0]} is listed twice")
        got[pin[0]] = pin[1]
        if pin[0] not in want and pin[0] not in declared:
            problems.append(f"environment.yml: {entry} is neither in constraints.txt nor a "
                            f"dependency in pyproject.toml")
    for name, version in want.items():
        if name not in got:
            problems.append(f"environment.yml lacks {name}=={version} (constraints.txt)")
        elif got[name] != version:
            problems.append(f"environment.yml pins {name}=={got[name]}, constraints.txt "
                            f"{name}=={version}")
    assert not problems, "\n".join(problems)


def _copy_project(dst: Path) -> None:
    """The project's sources without the venv, git data and build leftovers (building in the
    checkout would write build/ and reuse whatever a previous build left in build/lib)."""
    shutil.copytree(REPO, dst, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "_build", "*.egg-info", "__pycache__", ".pytest_cache",
        "results", "*.ipynb", "*.whl", "node_modules"))


def _shipped() -> list[str]:
    """The project's own data files, relative to data/: the manifests, notes and tables at its
    top and the XCOMPS sample. data/<dataset>/ folders hold downloads (git-ignored, never shipped)."""
    top = REPO / "data"
    files = [p for p in top.rglob("*") if p.is_file()
             and (p.parent == top or p.is_relative_to(top / "sample"))]
    return sorted(str(p.relative_to(top)) for p in files)


def test_data_home_holds_the_manifests_and_the_sample():
    """data/ is the top-level data home: a manifest and a note per dataset, the sample; the
    package itself holds no resources/ folder (it would shadow data/ in a checkout)."""
    shipped = set(_shipped())
    for name in ("blimp", "clams", "crows_pairs", "dust", "sling", "turblimp", "xcomps"):
        assert {f"{name}.json", f"{name}.md"} <= shipped, name
    assert {"README.md", "languages.csv", "meta_templates.json", "sample/README.md"} <= shipped
    assert {f"sample/xcomps/comps_{lang}.json" for lang in
            ("de", "en", "fr", "hu", "tr", "vi", "zh")} <= shipped
    assert not (REPO / "xcomps_utils" / "resources").exists()


class _Venv:
    """A fresh venv without pip of its own: the current environment's (pip, setuptools, numpy,
    torch...) are made visible through a .pth file, so nothing is downloaded. .pth files inside
    that added folder are not processed, so the editable install of xcomps_utils stays invisible.
    Commands run from ``cwd`` with XCOMPS_CACHE_DIR unset and the user cache under ``cache``."""

    def __init__(self, root: Path, cwd: Path, data_dir: Path, cache: Path):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                       timeout=120)
        self.py, self.cwd = root / "bin" / "python", cwd
        purelib = subprocess.run(
            [str(self.py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True, timeout=60).stdout.strip()
        Path(purelib, "_outer_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "PYTHONHOME", "XCOMPS_CACHE_DIR")}
        self.env.update(PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                        XCOMPS_DATA_DIR=str(data_dir), XDG_CACHE_HOME=str(cache))

    def run(self, what, *args, timeout):
        p = subprocess.run([str(self.py), *args], cwd=self.cwd, env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        assert p.returncode == 0, (f"{what} failed (exit {p.returncode})\n"
                                   f"--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-8000:]}")
        return p.stdout

    def pip_install(self, *args):
        self.run("pip install " + " ".join(map(str, args)), "-m", "pip", "install", "--no-deps",
                 "--no-build-isolation", "--no-index", "-q", *map(str, args), timeout=300)


def _offline_build_or_skip():
    from importlib.metadata import PackageNotFoundError, version

    try:  # the build backend comes from this environment (no build isolation, no index)
        found = version("setuptools")
    except PackageNotFoundError:
        found = None
    if found is None or int(found.split(".")[0]) < 77:
        pytest.skip(f"an offline build needs setuptools>=77 here (pyproject's build-system); "
                    f"found {found}")


@pytest.mark.slow
def test_non_editable_install_works_from_another_folder(data_dir, tmp_path):
    """``pip install .`` (not editable) into a fresh venv: the package and its shipped files
    (manifests, languages.csv, the XCOMPS sample: data/ installed as xcomps_utils/resources/)
    load from there, run from another folder; downloads left in data/<dataset>/ are not shipped,
    and new downloads would land in the user cache."""
    _offline_build_or_skip()
    src, elsewhere, cache = tmp_path / "src", tmp_path / "elsewhere", tmp_path / "cache"
    _copy_project(src)
    downloaded = src / "data" / "blimp" / "anaphor_gender_agreement.jsonl"  # as a download leaves it
    downloaded.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir / "blimp" / downloaded.name, downloaded)
    elsewhere.mkdir()
    venv = _Venv(tmp_path / "venv", elsewhere, data_dir, cache)
    venv.pip_install(src)

    check = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        import xcomps_utils
        from xcomps_utils import paths
        from xcomps_utils.pairs import data, xcomps
        pkg = Path(xcomps_utils.__file__).resolve().parent
        assert pkg.is_relative_to({str(tmp_path / "venv")!r}), pkg
        assert not pkg.is_relative_to({str(REPO)!r}), pkg
        missing = [f for f in {_shipped()!r} if not (pkg / "resources" / f).is_file()]
        assert not missing, f"not installed: {{missing}}"
        assert not (pkg / "resources" / "blimp").exists(), "a downloaded data file was shipped"
        assert paths.resources_dir() == pkg / "resources", paths.resources_dir()
        assert not paths.in_checkout()
        assert paths.data_home() == Path({str(cache)!r}) / "xcomps-study" / "data", paths.data_home()
        blimp = data.load_blimp("anaphor_gender_agreement")
        assert len(blimp) == 1000, len(blimp)
        de = xcomps.load_xcomps("de")
        assert len(de) == 120 and xcomps.xcomps_file("de").is_relative_to(pkg), len(de)
        templates = json.loads((paths.resources_dir() / "meta_templates.json").read_text())
        assert templates["templates"]["de"]["question"]
        langs = xcomps.languages()
        assert {{"de", "en", "zh"}} <= set(langs["iso"]), langs
        print(json.dumps({{"file": xcomps_utils.__file__, "blimp": len(blimp), "de": len(de),
                          "languages": len(langs)}}))
    """)
    out = venv.run("import and load from the installed copy", "-c", check, timeout=300)
    assert '"blimp": 1000' in out, out


@pytest.mark.slow
def test_editable_install_reads_the_top_level_data(data_dir, tmp_path):
    """``pip install -e .`` (make install) into a fresh venv: the package reads the checkout's
    data/ (not a copy), and downloads default to data/<dataset>/ there."""
    _offline_build_or_skip()
    src, elsewhere, cache = tmp_path / "src", tmp_path / "elsewhere", tmp_path / "cache"
    _copy_project(src)
    elsewhere.mkdir()
    venv = _Venv(tmp_path / "venv", elsewhere, data_dir, cache)
    venv.pip_install("-e", src)
    check = textwrap.dedent(f"""
        from pathlib import Path
        import xcomps_utils
        from xcomps_utils import paths
        from xcomps_utils.pairs import xcomps
        src = Path({str(src)!r}).resolve()
        assert Path(xcomps_utils.__file__).resolve().parent == src / "xcomps_utils"
        assert paths.resources_dir() == src / "data", paths.resources_dir()
        assert paths.in_checkout() and paths.data_home() == src / "data", paths.data_home()
        assert xcomps.xcomps_file("de") == src / "data" / "sample" / "xcomps" / "comps_de.json"
        assert len(xcomps.load_xcomps("de")) == 120
        print("ok")
    """)
    assert venv.run("import from the editable install", "-c", check, timeout=300).strip() == "ok"
