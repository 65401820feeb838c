"""What a chapter finds, in a box at its top (issue 45): a MyST admonition built by code from the
chapter's own results, shown right under the chapter's title though computed where its numbers
are (myst-nb pastes a glued value anywhere in its notebook).

The page holds, right under its title, the place of the box::

    ```{glue:md} finds
    :format: myst
    ```

and, once its numbers are computed, one cell fills it (myst-nb's ``glue``; the cell is tagged
``remove-cell``, its code is in the notebook)::

    finds.show(finds.claims("xcomps_results"))           # a chapter that tests claims
    finds.show(f"Direct scores {acc:.0%} ...")           # a chapter that computes tables

A chapter that tests claims says them from the verdicts it recorded
(:func:`xcomps_utils.pages.verdicts.recorded`, in words: :func:`claims`); the others say what the
page computes and its key numbers, written by the page from its computed tables.
"""

from __future__ import annotations

from ..errors import InputError
from .verdicts import recorded

__all__ = ["KEY", "TITLE", "CLASS", "box", "show", "claims"]

#: the glue key of a chapter's box (``{glue:md}`` in the page, :func:`show` in its code)
KEY = "finds"
#: the box's title
TITLE = "What this chapter finds"
#: the box's HTML class besides ``tip`` (``book/_assets/xcomps.css`` sets it a little smaller, so
#: the findings page's answers fit its first screen)
CLASS = "xcomps-finds"


def box(text: str, title: str = TITLE) -> str:
    """``text`` (Markdown) in a MyST admonition titled ``title``.

    Raises:
        InputError: empty ``text`` (a ValueError).
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the 'text' parameter must be the box's Markdown, not empty; got {text!r}")
    return f"::::{{admonition}} {title}\n:class: tip {CLASS}\n\n{text.strip()}\n::::"


def show(text: str, title: str = TITLE) -> None:
    """Fill the chapter's box (:data:`KEY`) with ``text`` in an admonition (:func:`box`), through
    myst-nb's ``glue``: the page shows it where its ``{glue:md}`` directive stands. Without
    myst-nb (a notebook opened elsewhere), the box is displayed here instead."""
    from IPython.display import Markdown, display

    content = Markdown(box(text, title))
    try:
        from myst_nb import glue
    except ImportError:  # no book machinery: show it where it is computed
        display(content)
        return
    glue(KEY, content, display=False)


def claims(page: str) -> str:
    """What a chapter's tests say, in words: :func:`xcomps_utils.analysis.report.findings_words`
    of the verdicts it recorded in this process (:func:`xcomps_utils.pages.verdicts.recorded`),
    per model (what holds, what fails, what is not decided at this size, what no available data
    decides and why, with the sizes the findings page reads: :func:`xcomps_utils.pages.chapters.findings_sizes`),
    and a line saying where the tests are.

    Raises:
        InputError: the page recorded no verdict (a ValueError): record them before saying them.
    """
    from ..analysis import report
    from .chapters import findings_sizes

    rows = recorded(page)
    if rows.empty:
        raise InputError(f"the 'page' parameter must name a chapter that recorded its verdicts "
                         f"(verdicts.record) in this process; {page!r} recorded none")
    sizes = findings_sizes(rows)[1]
    return (f"{len(rows)} test{'s' if len(rows) != 1 else ''}, each with its verdict, effect "
            f"and interval in the tables below; per model:\n\n" + report.findings_words(rows, sizes, questions=False))
