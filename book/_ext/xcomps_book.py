"""Sphinx extension of the xcomps-study book (loaded by _config.yml, sphinx.local_extensions).

* **Build information on every page**: the package version and the git commit the book was built
  from are appended to the footer (``html.extra_footer``) and offered to the pages as MyST
  substitutions ``{{ book_version }}``, ``{{ book_commit }}``, ``{{ book_commit_link }}``,
  ``{{ book_built }}``, ``{{ repository_url }}``, ``{{ repository_link }}`` and
  ``{{ citation_cff_link }}`` (the cite page uses them).
* **Launch buttons that open a notebook the repository holds.** Chapters are rendered from
  ``book/executed/<chapter>.ipynb``, which is built, never committed, so sphinx-book-theme's
  Binder and Colab links (built from the page's own path) would point at nothing. Here they are
  pointed at the chapter's source instead:

  - Binder: ``notebooks/<chapter>.md`` on the repository's branch, opened in JupyterLab, where
    jupytext (in environment.yml; postBuild makes it the default viewer of .md files) opens it as
    a notebook;
  - Colab, which opens only ``.ipynb`` files from GitHub: ``notebooks/<chapter>.ipynb`` on the
    branch ``xcomps_colab_branch``, which the book workflow writes on every deploy from the same
    sources (``make colab-notebooks``: the jupytext notebook with a first cell that installs the
    package in Colab).

* **Only what the pages load.** After the build, files the pages never fetch are removed from
  ``_static/``: source maps (``*.map``, 3.5 MB, read only by a browser's developer tools), the
  theme's message catalogues (``locales/``, used at build time) and the TrueType copies of the
  icon fonts (every browser that runs the theme loads their WOFF2 copies). MathJax is trimmed
  to what the pages load when it is copied (Makefile).
* **Each script once**: a script the build lists twice on a page (sphinx-thebe's and
  sphinx-togglebutton's inline settings, once with the filename ``None`` and once ``""``, so
  Sphinx's own check misses them) is loaded once; twice, ``const THEBE_JS_URL`` was a
  SyntaxError on every page.

The repository is named once, in _config.yml (``repository.url``).
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
from pathlib import Path

CHAPTER_PREFIX = "executed/"


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def build_info(root: Path) -> dict:
    """Package version, git commit (with ``+local changes`` when tracked files differ from it)
    and build date."""
    try:
        from importlib.metadata import version

        pkg = version("xcomps-study")
    except Exception:  # noqa: BLE001 - the book still builds from a bare checkout
        pkg = "unknown"
    commit = _git(root, "rev-parse", "HEAD") or os.environ.get("GITHUB_SHA") or "unknown"
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    short = commit[:12]
    if dirty:
        short += " + local changes"
    return {"version": pkg, "commit": commit, "commit_short": short,
            "built": _dt.date.today().isoformat()}


def _repo(config) -> tuple[str, str, str]:
    url = config.html_theme_options.get("repository_url", "").rstrip("/")
    org, repo = (url.split("github.com/")[-1].split("/") + ["", ""])[:2]
    return url, org, repo


def on_config_inited(app, config):
    info = build_info(Path(app.confdir))
    app.env_build_info = info  # noqa: used by the page-context handler
    url, _, _ = _repo(config)
    commit_link = (f'<a href="{url}/commit/{info["commit"]}">{info["commit_short"]}</a>'
                   if url and info["commit"] != "unknown" else info["commit_short"])
    line = (f'<p class="xcomps-build">Built {info["built"]} with xcomps-study '
            f'{info["version"]}, commit {commit_link}.</p>')
    opts = dict(config.html_theme_options)
    opts["extra_footer"] = (opts.get("extra_footer") or "") + line
    config.html_theme_options = opts
    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    subs.update({"book_version": info["version"], "book_commit": info["commit"],
                 "book_commit_short": info["commit_short"], "book_built": info["built"],
                 "repository_url": url,
                 # links (a substitution cannot sit inside a link's target)
                 "book_commit_link": (f"[`{info['commit_short']}`]({url}/commit/{info['commit']})"
                                      if url and info["commit"] != "unknown"
                                      else f"`{info['commit_short']}`"),
                 "repository_link": f"[the repository]({url})",
                 "citation_cff_link": f"[`CITATION.cff`]({url}/blob/main/CITATION.cff)"})
    config.myst_substitutions = subs


def _walk(buttons):
    for b in buttons:
        yield b
        yield from _walk(b.get("buttons", []))


def on_page_context(app, pagename, templatename, context, doctree):
    """Point the Binder and Colab buttons of a chapter at files the repository holds."""
    if not pagename.startswith(CHAPTER_PREFIX):
        return
    chapter = pagename[len(CHAPTER_PREFIX):]
    opts = app.config.html_theme_options
    launch = opts.get("launch_buttons", {})
    url, org, repo = _repo(app.config)
    branch = opts.get("repository_branch", "main")
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}[launch.get("notebook_interface", "classic")]
    for b in _walk(context.get("header_buttons", [])):
        if b.get("text") == "Binder":
            binder = launch["binderhub_url"].rstrip("/")
            b["url"] = f"{binder}/v2/gh/{org}/{repo}/{branch}?urlpath={ui}/notebooks/{chapter}.md"
        elif b.get("text") == "Colab":
            colab = launch["colab_url"].rstrip("/")
            b["url"] = (f"{colab}/github/{org}/{repo}/blob/{app.config.xcomps_colab_branch}/"
                        f"notebooks/{chapter}.ipynb")


def one_script_each(app, pagename, templatename, context, doctree):
    """Each script once on a page (the first occurrence of each, in order): the build lists
    sphinx-thebe's and sphinx-togglebutton's inline settings twice, and a second
    ``const THEBE_JS_URL`` is a SyntaxError in every page's console."""
    scripts = context.get("script_files")
    if isinstance(scripts, list):
        seen, once = set(), []
        for js in scripts:
            # an inline script's filename is None or "" depending on who added it
            key = (str(getattr(js, "filename", js) or ""),
                   tuple(sorted(getattr(js, "attributes", {}).items())))
            if key not in seen:
                seen.add(key)
                once.append(js)
        context["script_files"] = once


def prune_static(app, exception):
    """Remove from the built _static/ what no page loads (see the module docstring)."""
    if exception is not None or app.builder.format != "html":
        return
    import shutil

    static = Path(app.outdir) / "_static"
    removed = 0
    doomed = list(static.rglob("*.map")) + list(static.glob("vendor/*/webfonts/*.ttf"))
    for path in doomed:
        removed += path.stat().st_size
        path.unlink()
    locales = static / "locales"
    if locales.is_dir():
        removed += sum(p.stat().st_size for p in locales.rglob("*") if p.is_file())
        shutil.rmtree(locales)
    from sphinx.util import logging

    logging.getLogger(__name__).info(f"xcomps_book: removed {removed / 1e6:.1f} MB that no page "
                                     f"loads from _static/")


def _register_author_year_style() -> None:
    """A pybtex style whose bibliography labels read like the in-text citations, "Warstadt et
    al. 2020" rather than "[WPL+20]" (bibtex_default_style in _config.yml)."""
    from pybtex.plugin import register_plugin
    from pybtex.richtext import Text
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    def last(person) -> str:
        return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            for entry in sorted_entries:
                people = entry.persons.get("author", [])
                names = [last(p) for p in people if str(p) != "others"]
                if not names:
                    who = entry.fields.get("title", entry.key)
                elif len(people) == 1:
                    who = names[0]
                elif len(people) == 2 and len(names) == 2:
                    who = f"{names[0]} & {names[1]}"
                else:
                    who = f"{names[0]} et al."
                yield f"{who} {entry.fields.get('year', 'n.d.')}"

    class AuthorYear(PlainStyle):
        default_label_style = AuthorYearLabels

    register_plugin("pybtex.style.formatting", "xcomps_author_year", AuthorYear, force=True)

    # In-text citations in round brackets: (Warstadt et al., 2020), Hu and Levy (2023).
    import dataclasses

    import sphinxcontrib.bibtex.plugin
    from sphinxcontrib.bibtex.style.referencing import BracketStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

    def round_():
        return dataclasses.field(default_factory=lambda: BracketStyle(left="(", right=")"))

    @dataclasses.dataclass
    class AuthorYearRound(AuthorYearReferenceStyle):
        bracket_parenthetical: BracketStyle = round_()
        bracket_textual: BracketStyle = round_()
        bracket_author: BracketStyle = round_()
        bracket_label: BracketStyle = round_()
        bracket_year: BracketStyle = round_()

    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing", "xcomps_author_year_round", AuthorYearRound,
        force=True)


def setup(app):
    _register_author_year_style()
    app.add_config_value("xcomps_colab_branch", "colab", "html")
    app.connect("config-inited", on_config_inited, priority=900)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", on_page_context, priority=900)
    app.connect("html-page-context", one_script_each, priority=950)
    app.connect("build-finished", prune_static)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
