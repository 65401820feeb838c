"""Issue 45 item 3: every command of the pages' ``bash`` blocks runs as printed (slow: they load
models and score pairs).

Each ``bash`` block of ``book/*.md`` and ``notebooks/*.md`` runs in one bash session, its commands
one after the other as printed (a line continued with ``\\`` is one command), from a copy of the
repository root: every top-level entry of the checkout linked, except the folders the commands
write (``results/``, ``build/``), so their runs go to a fresh results store and the checkout is left
as it was. The environment is a fresh shell's: ``PATH`` without ``.venv/bin``, the data folder the
pages tell a reader to export (``XCOMPS_DATA_DIR``), no Hugging Face hub (``HF_HUB_OFFLINE=1``:
this suite runs offline), and ``N=4``: the documented size variable of the blocks whose sizes run
for hours (a block sets it with its reader's default, ``N=${N:-500}``, and its page says so).

A command must exit 0, except one that names a model of the hub or a GPU: offline on a CPU it must
stop with its clear error (:data:`CLEAR_ERROR`: the model is not embedded, not local and the hub is
not reachable; or the device 'cuda' is not available). :data:`NOT_RUN` lists what cannot run inside a test, each with its
reason. ``tests/book/test_commands.py`` checks the same commands without running them (fast tier).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([*(REPO / "book").glob("*.md"), *(REPO / "notebooks").glob("*.md")])
SHELL = {"bash", "sh", "shell", "console"}
#: the size variable of the long blocks, at the size the tests run them
SIZE = {"N": "4"}
#: folders the commands write into: fresh in the copy of the repository root
WRITTEN = {"results", "build", "_build"}

#: what cannot run inside a test, by the command as printed, and why
NOT_RUN = {
    "make book": "the whole build (5-13 minutes), which the book workflow runs on its own",
    "make test": "the test suite but its long tier (this test is in it: make long), about 20 minutes",
    ".venv/bin/pip install -c constraints.txt -e '.[ray]'":
        "installs into the environment the tests run in (make install-dev installs Ray already)",
    ".venv/bin/ray start --head": "starts a Ray cluster's head node: a cluster, not a test",
    ".venv/bin/ray start --address=HEAD_IP:6379": "joins a Ray cluster's head (HEAD_IP)",
    ".venv/bin/xcomps-study sweep sweeps/embedded.yaml --address auto --store /shared/results":
        "needs the cluster above and its shared filesystem (/shared)",
    ".venv/bin/xcomps-study sweep sweeps/bmlama17.yaml --executor local":
        "the BMLAMA chapter's default size, both models (about 6,000 pairs a model: tens of "
        "minutes); its file is checked by tests/runs/test_sweep.py and test_commands",
    ".venv/bin/xcomps-study sweep sweeps/bmlama53.yaml --executor local":
        "the same on 53 languages (about an hour on 2 cores)",
    ".venv/bin/xcomps-study study --model gemma-3-270m --model smollm2-135m-instruct --size smoke "
    "--store results": "the whole study of two models, every chapter executed and the book "
                       "rendered (tens of minutes); make study-check runs it for a model nobody "
                       "ships (tests/pages/test_study.py)",
}

#: a hub model (an ``org/name`` id, not a local path: ``--model``, ``-p model`` or in a ``-y``
#: ``models:`` list) or a GPU, named by a command
HUB_OR_GPU = re.compile(r"(?:--model|-p model)\s+(?![./~])[\w.-]+/[\w.-]+|(?:--device|-p device)\s+"
                        r"cuda|models:\s*\[[^\]]*?(?<![./~\w-])(?![./~])[\w.-]+/[\w.-]+")
#: the one clear error such a command stops with offline on a CPU
CLEAR_ERROR = re.compile(r"not found: it is not an embedded model, not a local folder, and not in "
                         r"the local Hugging Face cache, and the Hugging Face hub is not reachable"
                         r"|the 'device' parameter must be a device this machine has: .*; "
                         r"got 'cuda(?::\d+)?'")


@dataclass
class Printed:
    """A command of a page's bash block: where it is and its text as printed (continuations
    joined)."""

    page: str
    line: int
    text: str

    @property
    def command(self) -> str:
        """The command without its trailing comment."""
        return re.sub(r"\s+#.*$", "", self.text)


def bash_blocks(page: Path) -> list[tuple[int, list[Printed]]]:
    """The ``bash`` blocks of a page: ``(line of the fence, its commands)``; comment lines and
    blank lines are left out (bash skips them too)."""
    name = str(page.relative_to(REPO))
    out, block, pending, first = [], None, "", 0
    for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if block is None:
            m = re.match(r"^(`{3,}|~{3,})\s*(\S*)", stripped)
            if m and m.group(2) in SHELL:
                block, start, fence = [], i, m.group(1)
            elif m:
                block, start, fence = False, i, m.group(1)  # another code block: skipped
            continue
        if stripped == fence:
            if block:
                out.append((start, block))
            block = None
            continue
        if block is False or not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending, first = pending + stripped[:-1].rstrip() + " ", first if pending else i
            continue
        block.append(Printed(name, first if pending else i, pending + stripped))
        pending = ""
    return out


BLOCKS = [(page, start, cmds) for page in PAGES for start, cmds in bash_blocks(page)]


def _root(tmp_path: Path) -> Path:
    """A repository root whose files are the checkout's (linked) and whose ``results/`` and
    ``build/`` are its own."""
    root = tmp_path / "root"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in WRITTEN and entry.name != ".git":
            (root / entry.name).symlink_to(entry)
    return root


def _fresh_shell(data_dir: Path) -> dict:
    venv = str(REPO / ".venv" / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != Path(venv).resolve())
    keep = {k: v for k, v in os.environ.items()
            if k in ("HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "XCOMPS_CACHE_DIR",
                     "OMP_NUM_THREADS", "MKL_NUM_THREADS", "HF_HOME")}
    return {**keep, "PATH": path or "/usr/bin:/bin", "XCOMPS_DATA_DIR": str(data_dir),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **SIZE}


def run_block(commands: list[Printed], root: Path, env: dict, timeout: int = 3600) -> list:
    """Run a block's commands in one bash session from ``root``: ``(command, exit status, its
    output)`` for each command run (those of :data:`NOT_RUN` are left out)."""
    script = ["set -u"]
    for k, cmd in enumerate(commands):
        if cmd.command in NOT_RUN:
            continue
        script += [f"echo '@@start {k}'", cmd.text, f"echo \"@@rc {k} $?\""]
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=root, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    out = []
    for m in re.finditer(r"^@@start (\d+)\n(.*?)^@@rc \1 (\d+)$", done.stdout, flags=re.M | re.S):
        out.append((commands[int(m.group(1))], int(m.group(3)), m.group(2)))
    return out


def _ids():
    return [f"{page.relative_to(REPO)}:{start}" for page, start, _ in BLOCKS]


@pytest.mark.parametrize("page, start, commands", BLOCKS, ids=_ids())
def test_printed_commands_run_as_printed(page, start, commands, tmp_path, data_dir):
    results = run_block(commands, _root(tmp_path), _fresh_shell(data_dir))
    ran = [c.text for c, _, _ in results]
    assert ran == [c.text for c in commands if c.command not in NOT_RUN], (
        "a command did not finish (the session stopped before it):\n" + "\n".join(ran))
    failed = []
    for cmd, rc, output in results:
        tail = "\n    ".join(output.strip().splitlines()[-6:])
        if HUB_OR_GPU.search(cmd.text):
            if rc == 0 or not CLEAR_ERROR.search(output):
                failed.append(f"{cmd.page}:{cmd.line}: {cmd.text}\n  expected its clear offline "
                              f"error, got exit {rc}:\n    {tail}")
        elif rc != 0:
            failed.append(f"{cmd.page}:{cmd.line}: {cmd.text}\n  exit {rc}:\n    {tail}")
    assert not failed, "\n".join(failed)


def test_the_blocks_are_found_and_the_list_of_what_cannot_run_is_used():
    """Every page with a bash block is read (a reader that finds nothing passes everything), and
    every entry of :data:`NOT_RUN` is a command some page prints (a stale entry goes)."""
    printed = {c.command for _, _, cmds in BLOCKS for c in cmds}
    assert {str(p.relative_to(REPO)) for p, _, _ in BLOCKS} >= {
        "notebooks/reproducibility.md", "notebooks/grammar_across_languages.md", "book/sweeps.md"}
    assert sum(len(cmds) for _, _, cmds in BLOCKS) >= 20
    assert set(NOT_RUN) <= printed, set(NOT_RUN) - printed
    assert any(HUB_OR_GPU.search(t) for t in printed)


def test_a_command_that_fails_as_printed_is_caught(tmp_path, data_dir):
    """A bare program exits 127 from the repository root of a fresh shell; a hub model that
    reaches no clear error, or a command that stops, fails the test too."""
    root, env = _root(tmp_path), _fresh_shell(data_dir)
    bare = Printed("x.md", 1, "xcomps-study tasks")
    venv = Printed("x.md", 2, ".venv/bin/xcomps-study tasks")
    hub = Printed("x.md", 3, ".venv/bin/xcomps-study run direct --task dust --n-pairs 2 "
                             "--model meta-llama/Llama-3.1-8B-Instruct")
    (b, rc_bare, _), (_, rc_venv, _), (_, rc_hub, out_hub) = run_block([bare, venv, hub], root,
                                                                       env)
    assert (b.text, rc_bare, rc_venv, rc_hub) == ("xcomps-study tasks", 127, 0, 1)
    assert CLEAR_ERROR.search(out_hub), out_hub
    assert not (root / "results").exists() or not any((root / "results").iterdir())
