"""Issue 31 item 5: every command the pages print runs as printed from a clean checkout.

The commands are read from ``README.md``, ``book/*.md`` and ``notebooks/*.md``: the lines of
fenced ``bash``/``console``/``shell`` blocks, and the code spans of the prose (MyST directives such
as exercises included) that start with a program of the project. Each is checked without running
it, against what it names:

* ``xcomps-study ...``: parsed by the command line's own click declaration (``make_context``, no
  callback runs); a sweep file it names is in the checkout;
* ``make ...``: every target is a rule of the ``Makefile`` (``ONLY=`` names chapters);
* ``jupytext``: its source is a file of the checkout; what it writes (``-o``) feeds the
  ``papermill`` commands after it in the same block;
* ``papermill``: parsed by papermill's own click command; its input notebook was written by a
  ``jupytext`` line before it (the sources are ``.md``, no ``.ipynb`` is committed); every ``-p``
  and ``-y`` parameter is declared by that chapter and its value passes the chapter's check
  (:mod:`xcomps_utils.pages.params`); on a chapter's page, a ``-p``/``-y`` fragment of the prose is
  checked against the page's own chapter;
* ``python``/``pytest``: the files they name exist; ``pip install``: a local path's extras are
  declared, and the project itself is never installed by name (it is not on an index);
* ``export``: no value reaches outside the checkout (``$(realpath ../shared/data)`` is one
  machine's layout).

A block may set a size in a shell variable with a default (``N=${N:-500}``): the check reads the
default, as a reader's shell would. And the pages (``book/``, ``notebooks/``) print the programs of
the project's environment as a fresh shell in the repository root runs them, ``.venv/bin/xcomps-study``
(``jupytext``, ``papermill``, ...): a bare ``xcomps-study ...`` exits 127 there
(:func:`test_pages_print_the_form_that_runs_from_the_repository_root`);
``tests/book/test_printed_commands_run.py`` runs them.
"""

import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
import yaml
from jupytext.cli import parse_jupytext_args
from papermill.cli import _resolve_type, papermill as papermill_cli

from xcomps_utils.errors import did_you_mean, XcompsError
from xcomps_utils.pages import params
from xcomps_utils.runs.cli import main as xcomps_cli

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "book").glob("*.md")),
         *sorted((REPO / "notebooks").glob("*.md"))]
SHELL = {"bash", "console", "shell", "sh"}
PROGRAMS = {"xcomps-study", "make", "papermill", "jupytext", "python", "python3", "pip",
            "pytest", "export"}


@dataclass
class Command:
    """One printed command: where it is, its words, and whether it is a code span of prose."""

    page: str
    line: int
    words: list
    inline: bool = False
    chapter: str | None = None  # the chapter a `-p`/`-y` fragment of prose is about

    def __str__(self):
        return f"{self.page}:{self.line}: {shlex.join(self.words)}"


@dataclass
class Block:
    """Commands run one after the other (a fenced block; a code span is a block of one)."""

    page: str
    line: int
    commands: list = field(default_factory=list)


def _split(text: str) -> list[list[str]]:
    """A shell line's commands (split at ``&&``, ``;`` and ``|``), comments dropped."""
    words = shlex.split(text, comments=True)
    out, current = [], []
    for w in words:
        if w in ("&&", ";", "|", "||"):
            out.append(current)
            current = []
        else:
            current.append(w)
    return [c for c in out + [current] if c]


def _program(words: list[str]) -> str:
    return Path(words[0]).name if words else ""


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The shell blocks and the command code spans of a page (``text``: the page's text, when it
    is not the file's)."""
    name = str(page.relative_to(REPO))
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    out, prose, fence = [], [], None
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})\s*(\S*)", stripped)
            if m:
                fence = {"mark": m.group(1), "lang": m.group(2), "line": i, "body": [],
                         "indent": len(line) - len(line.lstrip())}
                prose.append((i, ""))
            else:
                prose.append((i, line))
            continue
        if re.fullmatch(re.escape(fence["mark"][0]) + "{%d,}" % len(fence["mark"]), stripped):
            lang = fence["lang"]
            if lang in SHELL:
                out.append(_shell_block(name, fence))
            elif lang.startswith("{") and lang != "{code-cell}":
                prose += fence["body"]  # a directive's body is prose (exercises, notes)
            fence = None
            prose.append((i, ""))
            continue
        fence["body"].append((i, line[fence["indent"]:] if line[:fence["indent"]].isspace()
                              else line))
    out += _code_spans(name, prose)
    return out


#: a shell variable set in a block, with a default the reader's shell takes: ``N=${N:-500}``
_ASSIGNMENT = re.compile(r"^(\w+)=(?:\$\{\1:-([^}\s]*)\}|([^\s$]*))\s*(?:#.*)?$")


def _expand(text: str, variables: dict) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), text)


def _shell_block(name: str, fence: dict) -> Block:
    block, pending, first, variables = Block(name, fence["line"]), "", None, {}
    for i, line in fence["body"]:
        text = line.strip()
        if text.startswith("$ "):
            text = text[2:]
        if text.endswith("\\"):
            pending, first = pending + text[:-1] + " ", first or i
            continue
        text, first, pending = pending + text, first or i, ""
        assignment = _ASSIGNMENT.match(text)
        if assignment:
            variables[assignment.group(1)] = assignment.group(2) or assignment.group(3) or ""
            first = None
            continue
        for words in _split(_expand(text, variables)):
            block.commands.append(Command(name, first, words))
        first = None
    return block


def _code_spans(name: str, prose: list) -> list[Block]:
    text = "\n".join(line for _, line in prose)
    starts = [i for i, _ in prose]
    out = []
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
        span = re.sub(r"\s+", " ", m.group(1)).strip()
        try:
            words = shlex.split(span)
        except ValueError:
            continue
        line = starts[text.count("\n", 0, m.start())]
        if len(words) < 2:
            continue
        if _program(words) in PROGRAMS:
            out.append(Block(name, line, [Command(name, line, words, inline=True)]))
        elif words[0] in ("-p", "-y") and name.startswith("notebooks/"):
            # the page's own chapter, or the one a {doc} link just before it names
            doc = re.findall(r"\{doc\}`(\w+)`[^.`]{0,20}$", text[max(0, m.start() - 60):m.start()])
            chapter = doc[-1] if doc else Path(name).stem
            out.append(Block(name, line, [Command(name, line, words, True, chapter)]))
    return out


ALL = [b for page in PAGES for b in blocks(page)]


# --- what a clean checkout has ----------------------------------------------------------------------

def _tracked() -> set[str]:
    try:
        files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: what is on disk
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()]
    return set(files) | {str(p) for f in files for p in Path(f).parents if str(p) != "."}


TRACKED = _tracked()


def _make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    targets = set()
    for line in text.splitlines():
        m = re.match(r"^([^\s#:=][^:=]*?)\s*::?(?!=)", line)
        if m and not line.startswith("\t"):
            targets |= set(m.group(1).split())
    return {t for t in targets if "$" not in t and "%" not in t}


def _placeholder(word: str) -> bool:
    return "..." in word or "<" in word or word.isupper()


class Failed(AssertionError):
    """A printed command that would not run as printed from a clean checkout."""


def check_xcomps_study(cmd: Command, state: dict) -> None:
    """Parse the words with the command line's click declaration; run nothing."""
    args = cmd.words[1:]
    i = next((k for k, w in enumerate(args) if not w.startswith("-")), None)
    if i is None:
        return  # options of the group alone (--help, --version)
    try:
        with xcomps_cli.make_context("xcomps-study", args[:i + 1]) as ctx:
            sub = xcomps_cli.get_command(ctx, args[i])
            if sub is None:
                close = did_you_mean(args[i], xcomps_cli.commands)
                raise Failed(f"{cmd}: no subcommand {args[i]!r}" + (f"; {close}" if close else ""))
            rest = args[i + 1:]
            if cmd.inline and not rest:
                return  # a reference to the subcommand (`xcomps-study run`), not a command
            sub_ctx = sub.make_context(args[i], rest, parent=ctx)
    except click.exceptions.Exit:
        return
    except click.ClickException as err:
        raise Failed(f"{cmd}: {err.format_message()}") from None
    except XcompsError as err:  # a value an option's declared type refuses (exit code 1)
        raise Failed(f"{cmd}: {err}") from None
    if args[i] == "sweep":
        path = sub_ctx.params["file"]
        if not _placeholder(path) and path not in TRACKED:
            raise Failed(f"{cmd}: the sweep file {path} is not in the checkout")


def check_make(cmd: Command, state: dict) -> None:
    """Every target is a rule of the Makefile; ``ONLY=`` names chapters."""
    targets = _make_targets()
    chapters = {p.stem for p in (REPO / "notebooks").glob("*.md")}
    for word in cmd.words[1:]:
        if word.startswith("-"):
            continue
        if "=" in word:
            var, _, value = word.partition("=")
            if var == "ONLY":
                unknown = set(value.split()) - chapters
                if unknown:
                    raise Failed(f"{cmd}: ONLY names no chapter {sorted(unknown)}")
            continue
        if word not in targets:
            close = did_you_mean(word, targets)
            raise Failed(f"{cmd}: the Makefile has no target {word!r}"
                         + (f"; {close}" if close else ""))


def check_jupytext(cmd: Command, state: dict) -> None:
    """Its sources are in the checkout; what it writes is remembered for papermill."""
    args = parse_jupytext_args(cmd.words[1:])
    for source in args.notebooks:
        if source not in TRACKED:
            raise Failed(f"{cmd}: {source} is not in the checkout")
    if args.output and len(args.notebooks) == 1:
        state.setdefault("written", {})[args.output] = Path(args.notebooks[0]).stem


def _papermill_parameters(cmd: Command, pairs, yamls) -> dict:
    given = {name: _resolve_type(value) for name, value in pairs}
    for text in yamls:
        loaded = yaml.safe_load(text)
        if not isinstance(loaded, dict):
            raise Failed(f"{cmd}: -y {text!r} is not a mapping of parameters")
        given.update(loaded)
    return given


def _check_parameters(cmd: Command, chapter: str, given: dict, placeholders: bool) -> None:
    fields = params.declaration(chapter).model_fields
    for name in given:
        if name not in fields:
            close = did_you_mean(name, fields)
            raise Failed(f"{cmd}: {chapter} declares no parameter {name!r}"
                         + (f"; {close}" if close else ""))
    if not placeholders:
        try:
            params.check({**params.sizes(chapter), **given}, chapter)
        except params.ParameterError as err:
            raise Failed(f"{cmd}: {err}") from None


def _page_chapter(cmd: Command) -> str | None:
    path = Path(cmd.page)
    return path.stem if path.parts[0] == "notebooks" else None


def check_papermill(cmd: Command, state: dict) -> None:
    """Its input was written by jupytext before it; its parameters are the chapter's."""
    args = cmd.words[1:]
    elided = "..." in args
    args = [w for w in args if w != "..."]
    if elided:  # `papermill ... -y '{...}'`: the page's own chapter, paths left out
        args = ["in.ipynb", "out.ipynb", *args]
    try:
        ctx = papermill_cli.make_context("papermill", args)
    except click.ClickException as err:
        raise Failed(f"{cmd}: {err.format_message()}") from None
    source = ctx.params["notebook_path"]
    chapter = _page_chapter(cmd) if elided else state.get("written", {}).get(source)
    if chapter is None:
        how = ("no .ipynb is in the checkout: write it first with jupytext (or run `make`)"
               if source not in TRACKED else "it is no chapter")
        raise Failed(f"{cmd}: {source}: {how}")
    given = _papermill_parameters(cmd, ctx.params["parameters"], ctx.params["parameters_yaml"])
    _check_parameters(cmd, chapter, given, placeholders=elided or "..." in str(given))


def check_fragment(cmd: Command, state: dict) -> None:
    """``-p name value`` / ``-y '{...}'`` in a chapter's prose: the chapter's own parameters."""
    pairs, yamls, words = [], [], list(cmd.words)
    while words:
        flag = words.pop(0)
        if flag == "-p" and len(words) >= 2:
            pairs.append((words.pop(0), words.pop(0)))
        elif flag == "-y" and words:
            yamls.append(words.pop(0))
        else:
            raise Failed(f"{cmd}: {flag!r} is not a papermill parameter flag")
    given = _papermill_parameters(cmd, pairs, yamls)
    _check_parameters(cmd, cmd.chapter, given, placeholders="..." in str(given))


def _check_paths(cmd: Command, words) -> None:
    for word in words:
        path = word.split("::")[0]
        if not word.startswith("-") and ("/" in path or path.endswith(".py")):
            if path not in TRACKED:
                raise Failed(f"{cmd}: {path} is not in the checkout")


def check_python(cmd: Command, state: dict) -> None:
    """``python FILE``: the file is in the checkout; ``python -m pytest ...`` as pytest."""
    args = cmd.words[1:]
    if args[:2] == ["-m", "pytest"]:
        _check_paths(cmd, args[2:])
    elif args and not args[0].startswith("-"):
        _check_paths(cmd, args[:1])


def check_pytest(cmd: Command, state: dict) -> None:
    """The test files it names are in the checkout."""
    _check_paths(cmd, cmd.words[1:])


def check_pip(cmd: Command, state: dict) -> None:
    """A local path's extras are declared in pyproject.toml; the project is never installed by
    its name, which no index serves (from a checkout: ``pip install '.[extra]'``)."""
    if cmd.words[1:2] != ["install"]:
        return
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = set(project.get("optional-dependencies", {}))
    for word in cmd.words[2:]:
        if word.startswith("-"):
            continue
        base, _, rest = word.partition("[")
        wanted = set(rest.rstrip("]").split(",")) - {""}
        if base.startswith((".", "/")):
            if base.rstrip("/") not in TRACKED | {"."}:
                raise Failed(f"{cmd}: {base} is not in the checkout")
            if wanted - extras:
                raise Failed(f"{cmd}: pyproject.toml declares no extra {sorted(wanted - extras)}")
        elif re.split(r"[=<>!~ ]", base)[0].lower() == project["name"]:
            raise Failed(f"{cmd}: {project['name']} is not on a package index; from the "
                         f"checkout: pip install '.{('[' + rest) if rest else ''}'")


def check_export(cmd: Command, state: dict) -> None:
    """No value reaches outside the checkout."""
    text = " ".join(cmd.words[1:])
    if ".." in text.replace("...", ""):
        raise Failed(f"{cmd}: names a folder outside the checkout, which a clean checkout "
                     f"elsewhere does not have")


CHECKS = {"xcomps-study": check_xcomps_study, "make": check_make, "jupytext": check_jupytext,
          "papermill": check_papermill, "python": check_python, "python3": check_python,
          "pytest": check_pytest, "pip": check_pip, "export": check_export,
          "-p": check_fragment, "-y": check_fragment}


def check_block(block: Block) -> int:
    """Check a block's commands in order (what one writes, the next reads); how many were
    checked (commands of other programs, ``mkdir``, ``ray``, are not)."""
    state, n = {}, 0
    for cmd in block.commands:
        check = CHECKS.get(_program(cmd.words) if not cmd.words[0].startswith("-")
                           else cmd.words[0])
        if check:
            check(cmd, state)
            n += 1
    return n


@pytest.mark.parametrize("block", ALL, ids=[f"{b.page}:{b.line}" for b in ALL])
def test_printed_command_runs_from_a_clean_checkout(block, data_dir):
    check_block(block)


def test_the_pages_print_commands_of_every_kind(data_dir):
    """The extraction finds what the pages print (a checker that finds nothing passes)."""
    found = [str(c) for b in ALL for c in b.commands]
    assert any(c.startswith("README.md:") and c.endswith(
        ".venv/bin/xcomps-study run direct --task blimp_anaphor,dust --n-pairs 200") for c in found)
    assert any("notebooks/reproducibility.md" in c and "papermill build/direct.ipynb" in c
               for c in found)
    assert any(c.startswith("book/teaching.md") and "run meta direct neuro" in c for c in found)
    assert any(c.startswith("notebooks/direct_scoring.md") and ": .venv/bin/papermill" in c
               for c in found)
    kinds = {_program(c.words) for b in ALL for c in b.commands}
    assert {"xcomps-study", "make", "jupytext", "papermill", "pip"} <= kinds
    assert sum(check_block(b) for b in ALL) >= 60


#: The programs of the project's environment (``make install``): a fresh shell in the repository
#: root finds them under ``.venv/bin/`` only.
VENV_PROGRAMS = {"xcomps-study", "jupytext", "papermill", "pytest", "otter", "ray", "pip",
                 "python", "python3", "jupyter-book", "ruff"}


def bare_programs(found: list[Block]) -> list[str]:
    """The commands that call a program of the environment bare (``xcomps-study run ...``): exit
    127 from the repository root in a fresh shell. A code span of a program and one word names a
    subcommand ("the runs `xcomps-study run` makes") and is no command."""
    return [str(cmd) for block in found for cmd in block.commands
            if cmd.words[0] in VENV_PROGRAMS and not (cmd.inline and len(cmd.words) <= 2)]


def test_pages_print_the_form_that_runs_from_the_repository_root():
    """Issue 45 item 3 (README.md is kept by its own checks)."""
    found = bare_programs([b for b in ALL if not b.page.startswith("README")])
    assert not found, ("print the environment's programs as .venv/bin/<program> (a bare one exits "
                       "127 from the repository root in a fresh shell):\n" + "\n".join(found))


def test_a_bare_program_is_caught(data_dir):  # the papermill sizes are checked against the data
    text = ("```bash\nN=${N:-500}  # pairs\njupytext --to ipynb -o build/d.ipynb "
            "notebooks/direct_scoring.md\n.venv/bin/papermill build/d.ipynb build/o.ipynb -p n_pairs "
            "$N\n```\n\nRun `xcomps-study run direct --task dust --n-pairs 5`; the runs "
            "`xcomps-study run` makes.\n")
    found = blocks(REPO / "notebooks" / "direct_scoring.md", text)
    assert [str(c) for b in found for c in b.commands] == [
        "notebooks/direct_scoring.md:3: jupytext --to ipynb -o build/d.ipynb notebooks/direct_scoring.md",
        "notebooks/direct_scoring.md:4: .venv/bin/papermill build/d.ipynb build/o.ipynb -p n_pairs 500",
        "notebooks/direct_scoring.md:7: xcomps-study run direct --task dust --n-pairs 5",
        "notebooks/direct_scoring.md:7: xcomps-study run"]
    assert [s.split(": ")[1].split()[0] for s in bare_programs(found)] == ["jupytext",
                                                                          "xcomps-study"]
    assert sum(check_block(b) for b in found) == 4  # the variable's default is what is checked


BROKEN = {  # commands that were printed on these pages, and why they cannot run
    "xcomps-study run direct,meta,neuro --languages en,de":
        "the 'methods' parameter must be one of the 4 methods ('direct', 'meta', 'neuro', "
        "'token_ppl'); got 'direct,meta,neuro'",
    "papermill notebooks/token_perplexity_results.ipynb out.ipynb -p items_per_task None":
        "no .ipynb is in the checkout",
    "export XCOMPS_DATA_DIR=$(realpath ../shared/data)": "outside the checkout",
    "make bok": "no target 'bok'; did you mean 'book'?",
    "pip install 'xcomps-study[ray]'": "from the checkout: pip install '.[ray]'",
    "pip install '.[rya]'": "no extra ['rya']",
    "xcomps-study sweep sweeps/xcomps-8b.yaml": "sweeps/xcomps-8b.yaml is not in the checkout",
    "xcomps-study run direct --task dust --n-pairs 0":
        "the 'n_pairs' parameter must be an integer >= 1; got 0",
    "xcomps-study lss": "no subcommand 'lss'; did you mean 'ls'?",
    "make smoke-chapters ONLY='first_token xcomps_result'": "ONLY names no chapter",
    ".venv/bin/pytest tests/test_nothing.py": "tests/test_nothing.py is not in the checkout",
}


@pytest.mark.parametrize("text", BROKEN)
def test_a_command_that_cannot_run_is_caught(text):
    block = Block("x.md", 1, [Command("x.md", 1, w) for w in _split(text)])
    with pytest.raises(Failed, match=re.escape(BROKEN[text])):
        check_block(block)


def test_papermill_parameters_are_the_chapters(data_dir):
    jup = ".venv/bin/jupytext --to ipynb -o build/d.ipynb notebooks/direct_scoring.md"

    def run(pm):
        check_block(Block("x.md", 1, [Command("x.md", 1, shlex.split(jup)),
                                      Command("x.md", 2, shlex.split(pm))]))

    run(".venv/bin/papermill build/d.ipynb build/o.ipynb -p n_pairs None -y '{tasks: [dust]}'")
    with pytest.raises(Failed, match="declares no parameter 'n_pair'; did you mean 'n_pairs'"):
        run(".venv/bin/papermill build/d.ipynb build/o.ipynb -p n_pair 5")
    with pytest.raises(Failed, match=re.escape(
            "direct_scoring: the 'tasks' parameter must be a non-empty list of strings; got "
            "'[blimp_anaphor]'; pass a list: -y '{tasks: [blimp_anaphor]}'")):
        run(".venv/bin/papermill build/d.ipynb build/o.ipynb -p tasks '[blimp_anaphor]'")
    with pytest.raises(Failed, match="no .ipynb is in the checkout"):
        run(".venv/bin/papermill build/other.ipynb build/o.ipynb")
    fragment = Command("notebooks/xcomps_results.md", 1, ["-p", "items_per_language", "0"],
                       True, "xcomps_results")
    with pytest.raises(Failed, match="'items_per_language' parameter must be an integer >= 1 or "
                                     "None"):
        check_block(Block(fragment.page, 1, [fragment]))


def test_readme_names_the_targets_the_book_workflow_runs():
    """The README's paragraph on the published book names the `make` targets of
    .github/workflows/book.yml, in the order the workflow runs them."""
    workflow = REPO / ".github" / "workflows" / "book.yml"
    if not workflow.exists():
        pytest.skip("no book workflow")
    runs = re.findall(r"^\s*(?:run: )?make ([\w-]+)\s*$", workflow.read_text(), flags=re.M)
    (paragraph,) = [p for p in (REPO / "README.md").read_text().split("\n\n")
                    if "book.yml" in p]
    assert re.findall(r"`make ([\w-]+)`", paragraph) == runs
