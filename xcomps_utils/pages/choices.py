"""The values a chapter's parameter may take that are only known once data is read (the
checks of :mod:`xcomps_utils.pages.params` ask them here): the XCOMPS languages of a source, the
wordings of a task's family. Each returns the values and the words a message names them with.
"""

from __future__ import annotations

__all__ = ["xcomps_languages", "wording_ids"]


def xcomps_languages(source: str) -> tuple[list[str], str]:
    """The XCOMPS languages a source has, and the words for a message (for
    the check of a chapter's ``languages`` in :mod:`xcomps_utils.pages.params`)."""
    from ..pairs.xcomps import SAMPLE_LANGUAGES, XCOMPS_LANGUAGES

    langs = SAMPLE_LANGUAGES if source == "sample" else ["en", *XCOMPS_LANGUAGES]
    return list(langs), f"the languages of XCOMPS' {source} files"


def wording_ids(task: str) -> tuple[list[str], str]:
    """The ids of the token-level perplexity wordings of a task's family, and the words for a
    message (for the check of a chapter's ``wording`` in :mod:`xcomps_utils.pages.params`).

    Raises:
        DataError: an unknown task (as :func:`xcomps_utils.pairs.tasks.get`).
    """
    from ..methods.perplexity import load_wordings
    from ..pairs.tasks import get

    family = get(task).wordings
    return [w["id"] for w in load_wordings(family)], f"the wordings of {family!r}"
