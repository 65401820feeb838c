"""The README a newcomer reads top to bottom (issue 43 item 7): at most 150 lines, the two commands
of a fresh machine first, the history kept whole in CHANGELOG.md, and every command of its
```bash blocks runs as printed from the repository root in a fresh shell (no activated venv: a
bare ``xcomps-study`` exits 127 there).

A block's commands run one after the other, as a reader types them, from a folder of links to the
checkout's top-level entries (what a command writes, ``build/``, lands there, never in the
checkout). A command that takes minutes or hours, loads a model or runs the test suite is in
:data:`CANNOT_RUN` with its reason; its program must exist and a stand-in that runs nothing long
must pass in its place (``make -n``; for ``xcomps-study run``, its words parsed by the command
line's own click declaration, values included, as it parses them before loading a model; a
sweep's ``--dry-run``, papermill's ``--prepare-only``, pytest's ``--collect-only``). A command
that computes or writes (``make``, papermill, pytest, ``xcomps-study run``, ``sweep``, ``study``, ``ship``,
``audit``, ``verify --repair``) is never run as printed: it must be in :data:`CANNOT_RUN`, so
that no printed command ever writes into the shipped ``store/``. ``tests/book/test_commands.py``
checks the same commands' arguments against the Makefile, the sweep files and the chapters'
parameters.
"""

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_LINES = 150

#: printed commands that cannot run inside the test suite: (why, the stand-in run instead)
CANNOT_RUN = {
    "make book": ("executes the 12 chapters and renders the book: minutes", "make -n book"),
    "make test": ("the suite but its long tier, this test included: about 20 minutes", "make -n test"),
    "make long": ("the long tier, the audit and the grading: about 15 minutes", "make -n long"),
    "make check": ("lint and the fast tier, this test included: minutes", "make -n check"),
    ".venv/bin/xcomps-study run direct --task blimp_anaphor,dust --n-pairs 200":
        ("loads SmolLM2 and scores 400 pairs into results/: a minute or more on a CPU", "parse"),
    ".venv/bin/xcomps-study run meta direct neuro --languages en,de,zh --items-per-language 8 "
    "--model gemma-3-270m":
        ("loads Gemma (converted once: up to 80 s) and runs three methods", "parse"),
    ".venv/bin/xcomps-study sweep sweeps/embedded.yaml --executor local":
        ("computes 4 runs of two models: minutes", "--dry-run"),
    ".venv/bin/xcomps-study study --model gemma-3-270m --size smoke --dry-run":
        ("plans every chapter's runs: loads every chapter's pairs, a minute or more", "parse"),
    ".venv/bin/papermill build/direct.ipynb build/direct-out.ipynb -y '{models: [gemma-3-270m]}' "
    "-p n_pairs 20": ("executes a chapter with Gemma: minutes", "--prepare-only"),
    "OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -n 1 tests/test_readme.py":
        ("runs this test inside itself", "--collect-only"),
}

#: what a command run as printed must print (a check that the right thing ran, not just rc 0)
PRINTS = {
    ".venv/bin/xcomps-study ls --store store": "complete",
    ".venv/bin/xcomps-study verify --store store": "every shard as recorded",
    ".venv/bin/xcomps-study tasks": "embedded models (--model): smollm2-135m-instruct, gemma-3-270m",
}


def _key(line: str) -> str:
    """A printed command without its comment and spacing: how CANNOT_RUN and PRINTS name it."""
    return shlex.join(shlex.split(line, comments=True))


def bash_blocks(text: str) -> list[list[str]]:
    """The commands of every ```bash (or sh, shell, console) block, one string a command, as
    printed: continued lines joined, ``$ `` prompts dropped, comment-only lines left out."""
    blocks, body = [], None
    for line in text.splitlines():
        fence = re.match(r"^\s*```\s*(\S*)", line)
        if fence and body is None:
            body = [] if fence.group(1) in ("bash", "sh", "shell", "console") else False
        elif fence:
            if body:
                blocks.append(body)
            body = None
        elif body is not False and body is not None:
            text_ = line.strip().removeprefix("$ ")
            if body and body[-1].endswith("\\"):
                body[-1] = body[-1][:-1] + " " + text_
            elif text_ and not text_.startswith("#"):
                body.append(text_)
    return blocks


BLOCKS = bash_blocks(README.read_text(encoding="utf-8"))


def _fresh_env() -> dict:
    """A fresh shell's environment: no virtual environment active, nor on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}
    path = [p for p in env.get("PATH", "").split(os.pathsep)
            if p and not (Path(p).parent / "pyvenv.cfg").exists()]
    env["PATH"] = os.pathsep.join(path)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


#: what computes or writes, never run as printed (a program, or the command line's subcommand)
COMPUTES = {"make", "papermill", "pytest", "run", "sweep", "ship", "audit", "--repair", "study"}


def _computes(words: list[str]) -> bool:
    """Whether a command computes or writes: it must have a stand-in (:data:`CANNOT_RUN`)."""
    program = Path(_program(words)).name
    after = words[words.index(_program(words)) + 1:]
    if program.startswith("python"):
        return after[:2] == ["-m", "pytest"]
    return (program in COMPUTES
            or program == "xcomps-study" and bool(COMPUTES & set(after)))


def _program(words: list[str]) -> str:
    """The program a command starts (after ``VAR=value`` assignments)."""
    return next(w for w in words if not re.fullmatch(r"[A-Za-z_]\w*=.*", w))


def _root(tmp_path: Path) -> Path:
    """A folder that looks like the checkout's root: a link to each top-level entry, except those
    a command may write (``build/``, ``results/``, ``_build/``)."""
    root = tmp_path / "checkout"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in ("build", "results", "_build"):
            (root / entry.name).symlink_to(entry)
    return root


def _run(command: str, root: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=root, env=_fresh_env(), text=True,
                          capture_output=True, timeout=timeout)


def _stand_in(command: str, root: Path) -> str:
    """Check that a command of CANNOT_RUN parses, running its stand-in (``parse``: in this
    process, by the command line's click declaration); returns its output."""
    why, stand_in = CANNOT_RUN[_key(command)]
    words = shlex.split(command, comments=True)
    if _program(words).endswith("xcomps-study"):  # its words, by the command line's declaration
        from xcomps_utils.pages.study import main  # the console script

        args = words[words.index(_program(words)) + 1:]
        with main.make_context("xcomps-study", list(args[:1])) as ctx:
            sub = main.get_command(ctx, args[0])
            assert sub is not None, f"{command}: no subcommand {args[0]!r}"
            sub.make_context(args[0], args[1:], parent=ctx).close()
        if stand_in == "parse":
            return ""
    line = stand_in if stand_in.startswith("make ") else f"{_key(command)} {stand_in}"
    done = _run(line, root)
    assert done.returncode == 0, f"{line} (for {command!r}: {why}) exited {done.returncode}:\n" \
                                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout + done.stderr


def test_the_readme_is_short_and_opens_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, more than {MAX_LINES}"
    first = BLOCKS[0]
    assert [_key(c) for c in first] == ["make book", "make test"]
    fenced = lines.index("```bash")
    assert lines[0].startswith("# ") and fenced == 2, "the two commands come first"
    assert "XCOMPS_DATA_DIR" in "\n".join(lines[:25]), "the data, in the first lines"


def test_the_readme_links_the_reliability_table_kept_whole_in_the_changelog():
    """Issue 41 cites "the README's reliability table": the README links it, the changelog holds
    it whole (the issue-30 cases, each tried fail -> pass, and the issue-41 cases)."""
    readme = README.read_text(encoding="utf-8")
    assert "CHANGELOG.md#reliability" in readme
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    section = changelog.split("\n## Reliability\n", 1)[1].split("\n## ", 1)[0]
    header = "| case (command) | expected | test asserts | before | after |"
    rows = section.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    assert len(rows) >= 27 and all(r.rstrip().endswith("| pass |") for r in rows)
    assert "| case | now | test |" in section


def test_every_command_is_run_or_has_a_reason_and_a_stand_in():
    printed = {_key(c) for block in BLOCKS for c in block}
    unlisted = [c for c in printed if c not in CANNOT_RUN and _computes(shlex.split(c))]
    assert not unlisted, f"computes or writes, run by no test: {unlisted}"
    assert set(CANNOT_RUN) <= printed, f"not printed any more: {set(CANNOT_RUN) - printed}"
    assert set(PRINTS) <= printed, f"not printed any more: {set(PRINTS) - printed}"
    assert len(printed) >= 10, "the extraction finds the README's commands"


@pytest.mark.parametrize("block", BLOCKS, ids=[_key(b[0]).split()[0] + f"-{i}"
                                               for i, b in enumerate(BLOCKS)])
def test_the_printed_commands_run_as_printed(block, tmp_path):
    root = _root(tmp_path)
    for command in block:
        words = shlex.split(command, comments=True)
        program = _program(words)
        if "/" in program:
            assert os.access(root / program, os.X_OK), f"{command}: {program} is not executable"
        else:
            assert shutil.which(program, path=_fresh_env()["PATH"]), \
                f"{command}: {program} is not on a fresh shell's PATH (exit 127)"
        if _key(command) in CANNOT_RUN:
            output = _stand_in(command, root)
        else:
            assert not _computes(words), (f"{command}: computes or writes; add it to CANNOT_RUN "
                                          f"with its reason and a stand-in")
            done = _run(command, root)
            assert done.returncode == 0, f"{command} exited {done.returncode}:\n" \
                                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            output = done.stdout + done.stderr
        if _key(command) in PRINTS:
            assert PRINTS[_key(command)] in output, f"{command} printed:\n{output[-2000:]}"
        if "--prepare-only" in CANNOT_RUN.get(_key(command), ("", ""))[1]:
            written = (root / words[words.index(program) + 2]).read_text()
            assert "injected-parameters" in written and "n_pairs = 20" in written
