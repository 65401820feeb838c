"""Minimal-pair datasets: where they live, how they are verified, how they are loaded.

Every loader returns one pandas DataFrame schema, one row per minimal pair (a pair is never split):

=============  ==============================================================================
column         meaning
=============  ==============================================================================
pair_id        the pair's id inside its dataset (BLiMP ``pairID``, the CSV row index otherwise)
dataset        ``blimp``, ``crows_pairs`` or ``dust``
subset         BLiMP phenomenon, CrowS-pairs bias type, DUST phenomenon
good           the acceptable sentence (CrowS: more stereotypical; DUST: underspecified)
bad            the unacceptable sentence (CrowS: less stereotypical; DUST: control)
good_pivots    character spans ``[[start, end], ...]`` of the words of ``good`` that differ
bad_pivots     the same for ``bad``
identical      ``good == bad`` after stripping whitespace (a pair that cannot be scored)
duplicate      the same (good, bad) texts occurred earlier in the file
source_row     1-based line (JSONL) or data-row number (CSV) in the source file
extra          JSON object with the dataset's own extra fields (e.g. CrowS ``stereo_antistereo``)
=============  ==============================================================================

Data files are never committed to the project. They are read from the folder named by the
environment variable ``XCOMPS_DATA_DIR`` (one sub-folder per dataset, as in ``../shared/data``)
or, when it is unset, downloaded from the upstream commit pinned in the manifest
``data/<dataset>.json`` into ``data/<dataset>/`` of a checkout (git-ignored) or, in an installed
package, the user cache (:func:`xcomps_utils.paths.data_home`). Either way each file's SHA-256
must equal the manifest's before a row is read. ``data/README.md`` describes every dataset.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import json
import os
import re
import shutil
import urllib.request
import warnings
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..declare import check, SampleSize
from ..errors import did_you_mean, XcompsError
from .. import paths
from ..paths import data_home, resources_dir

__all__ = [
    "DataError",
    "ChecksumError",
    "DataQualityWarning",
    "PAIR_COLUMNS",
    "manifest",
    "dataset_file",
    "file_sha256",
    "pivotal_spans",
    "load_blimp",
    "blimp_phenomena",
    "load_crows_pairs",
    "load_dust",
    "sample_pairs",
    "SmallSampleWarning",
]

PAIR_COLUMNS = [
    "pair_id", "dataset", "subset", "good", "bad", "good_pivots", "bad_pivots",
    "identical", "duplicate", "source_row", "extra",
]


class DataError(XcompsError, ValueError):
    """A data file is missing or malformed; the message names the file, row and field."""


class ChecksumError(DataError):
    """A data file's SHA-256 differs from its manifest (truncated, edited or wrong version)."""


class DataQualityWarning(UserWarning):
    """Identical or duplicate pairs were found; they are flagged, not silently scored."""


# --------------------------------------------------------------------------- files

@lru_cache(maxsize=None)
def manifest(dataset: str) -> dict:
    """The manifest of ``dataset``, ``data/<dataset>.json`` (installed as
    ``xcomps_utils/resources/<dataset>.json``; see :func:`xcomps_utils.paths.resources_dir`):
    pinned upstream commit, per-file checksums, license, citation. ``data/<dataset>.md`` says the
    same in prose.

    Raises:
        DataError: no manifest with that name.
    """
    path = resources_dir() / f"{dataset}.json"
    if not path.exists():
        known = sorted(p.stem for p in resources_dir().glob("*.json"))
        raise DataError(f"no dataset manifest {path}; known datasets: {known}")
    return json.loads(path.read_text(encoding="utf-8"))


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:  # URLError is an OSError
        tmp.unlink(missing_ok=True)
        raise DataError(
            f"could not download {url} ({exc}); offline, set XCOMPS_DATA_DIR to a folder "
            f"holding a copy (see README)"
        ) from exc
    tmp.replace(target)


def dataset_file(dataset: str, filename: str, data_dir: str | os.PathLike | None = None,
                 verify: bool = True) -> Path:
    """Path of one verified data file.

    Looks in ``data_dir/<folder>/`` if given, else ``$XCOMPS_DATA_DIR/<folder>/``; a file missing
    there is an error. Otherwise in ``paths.data_home()/<folder>/`` (a checkout's ``data/``, else
    the user cache; see :func:`xcomps_utils.paths.data_home`), downloading it from the manifest's
    pinned commit when it is not there yet. ``<folder>`` is the manifest's ``folder``.

    Raises:
        DataError: the file is not in the manifest, or missing with no way to fetch it.
        ChecksumError: the file's SHA-256 differs from the manifest (``verify=True``).
    """
    meta = manifest(dataset)
    if filename not in meta["files"]:
        raise DataError(f"{filename!r} is not a file of dataset {dataset!r} "
                        f"(manifest {resources_dir() / (dataset + '.json')} lists "
                        f"{len(meta['files'])} files)")
    root = data_dir if data_dir is not None else paths.data_dir()
    if root:
        path = Path(root) / meta["folder"] / filename
        if not path.exists():
            raise DataError(f"missing data file {path} (XCOMPS_DATA_DIR/data_dir={root})")
    else:
        path = data_home() / meta["folder"] / filename
        if not path.exists():
            # ``upstream_paths`` maps a local file name to its path upstream where they differ
            # (CLAMS: ``de/x.txt`` is ``de_evalset/x.txt``); templates use {file} or {path}
            upstream = meta.get("upstream_paths", {}).get(filename, filename)
            download(meta["url_template"].format(commit=meta["commit"], file=filename,
                                                  path=upstream), path)
    if verify:
        got = file_sha256(path)
        want = meta["files"][filename]
        if got != want:
            raise ChecksumError(
                f"{path}: SHA-256 {got} differs from the manifest's {want} "
                f"({resources_dir() / (dataset + '.json')}, upstream commit {meta['commit']}); "
                f"the file is truncated, "
                f"edited or of another version"
            )
    return path


# --------------------------------------------------------------------------- pivots

# Han characters and kana are words of their own: those scripts do not separate words by spaces.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|\w+|[^\w\s]")


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def pivotal_spans(a: str, b: str) -> tuple[list[list[int]], list[list[int]]]:
    """Character spans of the words where two sentences differ (the *pivotal words*).

    Words are runs of letters/digits, single punctuation marks, and single Han/kana characters.
    The two word sequences are aligned with :class:`difflib.SequenceMatcher` (autojunk off);
    every non-equal block contributes one span per side, covering its words (a pure insertion
    has a span on one side only).

    Returns:
        ``(spans_a, spans_b)``: lists of ``[start, end]`` character offsets (end exclusive).

    Example:
        >>> pivotal_spans("Karla could listen to herself.", "Karla could listen to himself.")
        ([[22, 29]], [[22, 29]])
    """
    wa, wb = _words(a), _words(b)
    matcher = difflib.SequenceMatcher(a=[w[0] for w in wa], b=[w[0] for w in wb], autojunk=False)
    spans_a, spans_b = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            spans_a.append([wa[i1][1], wa[i2 - 1][2]])
        if j2 > j1:
            spans_b.append([wb[j1][1], wb[j2 - 1][2]])
    return spans_a, spans_b


# --------------------------------------------------------------------------- frames

def require(record: dict, field: str, path: Path, row: int) -> str:
    if field not in record:
        raise DataError(f"{path}, row {row}: missing field {field!r}")
    value = record[field]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{path}, row {row}, field {field!r}: expected a non-empty string, "
                        f"got {value!r}")
    return value.strip()


def _frame(rows: list[dict], path: Path) -> pd.DataFrame:
    if not rows:
        raise DataError(f"{path}: no rows")
    df = pd.DataFrame(rows)
    pivots = [pivotal_spans(g, b) for g, b in zip(df["good"], df["bad"])]
    df["good_pivots"] = [p[0] for p in pivots]
    df["bad_pivots"] = [p[1] for p in pivots]
    df["identical"] = df["good"] == df["bad"]
    df["duplicate"] = df.duplicated(subset=["good", "bad"], keep="first")
    n_ident, n_dup = int(df["identical"].sum()), int(df["duplicate"].sum())
    if n_ident or n_dup:
        ids = df.loc[df["identical"] | df["duplicate"], "pair_id"].tolist()
        warnings.warn(
            f"{path}: {n_ident} identical and {n_dup} duplicate pairs flagged "
            f"(columns 'identical', 'duplicate'; sample_pairs leaves them out); "
            f"pair ids {ids[:10]}{' ...' if len(ids) > 10 else ''}",
            DataQualityWarning, stacklevel=3)
    return df[PAIR_COLUMNS]


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """``(line number, record)`` of every non-blank line of a JSON-lines file.

    Raises:
        DataError: a line is not valid JSON (names the file and row).
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append((line_no, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, row {line_no}: malformed JSON ({exc.msg})") from exc
    return out


def blimp_phenomena() -> list[str]:
    """The 67 BLiMP phenomena (file stems) listed in ``data/blimp.json``."""
    return [f.removesuffix(".jsonl") for f in manifest("blimp")["files"]]


def load_blimp(phenomenon: str, data_dir=None, verify: bool = True) -> pd.DataFrame:
    """Load one BLiMP phenomenon (1,000 pairs) as minimal pairs.

    Source: Warstadt et al. (2020), ``data/<phenomenon>.jsonl`` at the pinned commit;
    ``good``/``bad`` are ``sentence_good``/``sentence_bad``.

    Raises:
        DataError: unknown phenomenon, missing file, malformed JSON line, missing/empty field.
        ChecksumError: the file differs from the manifest.
    """
    if phenomenon not in blimp_phenomena():
        raise DataError(f"unknown BLiMP phenomenon {phenomenon!r}; "
                        f"{did_you_mean(phenomenon, blimp_phenomena(), n=3)}")
    path = dataset_file("blimp", f"{phenomenon}.jsonl", data_dir, verify)
    rows = []
    for line_no, rec in read_jsonl(path):
        rows.append({
            "pair_id": str(rec.get("pairID", line_no - 1)),
            "dataset": "blimp",
            "subset": phenomenon,
            "good": require(rec, "sentence_good", path, line_no),
            "bad": require(rec, "sentence_bad", path, line_no),
            "source_row": line_no,
            "extra": json.dumps({"linguistics_term": rec.get("linguistics_term"),
                                 "field": rec.get("field")}),
        })
    return _frame(rows, path)


def _read_csv(path: Path, fields: list[str]) -> list[tuple[int, dict]]:
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in fields if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: header lacks column(s) {missing}; has {reader.fieldnames}")
        out = []
        for row_no, rec in enumerate(reader, start=1):
            if None in rec:  # more cells than header columns
                raise DataError(f"{path}, row {row_no}: {len(rec) - 1 + len(rec[None])} cells, "
                                f"header has {len(reader.fieldnames)}")
            out.append((row_no, rec))
    return out


def load_crows_pairs(data_dir=None, verify: bool = True, directions=("stereo", "antistereo")
                     ) -> pd.DataFrame:
    """Load CrowS-pairs (Nangia et al., 2020): 1,508 pairs, ``good`` = ``sent_more``.

    ``subset`` is the bias type; ``extra`` holds ``stereo_antistereo``. ``directions`` keeps only
    rows of those stereotype directions.

    Raises:
        DataError / ChecksumError: as :func:`load_blimp`; an unknown direction.
    """
    path = dataset_file("crows_pairs", "crows_pairs_anonymized.csv", data_dir, verify)
    rows = []
    for row_no, rec in _read_csv(path, ["sent_more", "sent_less", "stereo_antistereo", "bias_type"]):
        direction = require(rec, "stereo_antistereo", path, row_no)
        if direction not in ("stereo", "antistereo"):
            raise DataError(f"{path}, row {row_no}, field 'stereo_antistereo': {direction!r}")
        if direction not in directions:
            continue
        rows.append({
            "pair_id": str(rec.get("") or row_no - 1),
            "dataset": "crows_pairs",
            "subset": require(rec, "bias_type", path, row_no),
            "good": require(rec, "sent_more", path, row_no),
            "bad": require(rec, "sent_less", path, row_no),
            "source_row": row_no,
            "extra": json.dumps({"stereo_antistereo": direction}),
        })
    return _frame(rows, path)


def load_dust(data_dir=None, verify: bool = True) -> pd.DataFrame:
    """Load DUST experiment 1 (Wildenburg et al., 2024): 2,123 pairs.

    ``good`` = ``underspecified sentence``, ``bad`` = ``control sentence`` (stray whitespace, which
    many rows carry, is stripped); ``subset`` is the phenomenon; ``extra`` holds type and source
    dataset.

    Raises:
        DataError / ChecksumError: as :func:`load_blimp`.
    """
    path = dataset_file("dust", "experiment_1_data.csv", data_dir, verify)
    rows = []
    for row_no, rec in _read_csv(path, ["underspecified sentence", "control sentence",
                                        "phenomenon", "type", "dataset"]):
        rows.append({
            "pair_id": str(row_no - 1),
            "dataset": "dust",
            "subset": require(rec, "phenomenon", path, row_no),
            "good": require(rec, "underspecified sentence", path, row_no),
            "bad": require(rec, "control sentence", path, row_no),
            "source_row": row_no,
            "extra": json.dumps({"type": rec["type"], "source_dataset": rec["dataset"]}),
        })
    return _frame(rows, path)


def sample_pairs(pairs: pd.DataFrame, n: int | None, seed: int = 0,
                 drop_flagged: bool = True) -> pd.DataFrame:
    """A seeded, reproducible sample of ``n`` whole pairs (rows), in the file's order.

    Flagged pairs (identical or duplicate) are left out first when ``drop_flagged``. ``n=None``
    keeps every pair. When fewer than ``n`` pairs are left, all of them are returned and a
    :class:`SmallSampleWarning` says how many, and why.

    Raises:
        ParameterError: ``n`` is not an integer >= 1 or None.
    """
    n = check(SampleSize, n, "n")
    total = len(pairs)
    if drop_flagged:
        pairs = pairs[~(pairs["identical"] | pairs["duplicate"])]
    if n is None or n >= len(pairs):
        if n is not None and n > len(pairs):
            flagged = total - len(pairs)
            warnings.warn(f"asked for {n} pairs, returning {len(pairs)}: the data has {total}"
                          + (f", of which {flagged} are identical or duplicate pairs, left out"
                             if flagged else ""), SmallSampleWarning, stacklevel=2)
        return pairs.reset_index(drop=True)
    return pairs.sample(n=n, random_state=seed).sort_index().reset_index(drop=True)


class SmallSampleWarning(UserWarning):
    """A sample has fewer pairs or items than asked for."""


# --------------------------------------------------------------------------- before a build

#: The datasets a build of the book reads (the XCOMPS chapters read the sample shipped in
#: ``data/sample/``; upstream XCOMPS is read only when a reader asks for it).
BOOK_DATASETS = ("blimp", "crows_pairs", "dust", "clams", "turblimp", "sling", "rublimp",
                 "multiblimp", "bmlama", "wals", "glottolog")


def check_available(datasets=BOOK_DATASETS, timeout: float = 5.0) -> None:
    """Before a build: are the data files there, or can they be fetched? Cheap (no checksum:
    every read verifies its file): with ``$XCOMPS_DATA_DIR`` set, each dataset's folder must be
    in it; unset, a file missing from :func:`xcomps_utils.paths.data_home` must be reachable at
    its pinned URL within ``timeout`` seconds (one request).

    Raises:
        DataError: one line naming ``XCOMPS_DATA_DIR``, the folder or file, and what to do.
    """
    root = paths.data_dir()
    if root:
        missing = [manifest(d)["folder"] for d in datasets
                   if not (Path(root) / manifest(d)["folder"]).is_dir()]
        if missing:
            raise DataError(f"XCOMPS_DATA_DIR={root} has no {', '.join(m + '/' for m in missing)}"
                            f" folder: point XCOMPS_DATA_DIR at a folder holding "
                            f"{', '.join(manifest(d)['folder'] + '/' for d in datasets)} (README)")
        return
    for d in datasets:
        meta = manifest(d)
        absent = [f for f in meta["files"] if not (data_home() / meta["folder"] / f).exists()]
        if not absent:
            continue
        f = absent[0]
        url = meta["url_template"].format(commit=meta["commit"], file=f,
                                          path=meta.get("upstream_paths", {}).get(f, f))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                                        timeout=timeout):
                return  # online: the files download as they are read
        except OSError as exc:
            raise DataError(f"XCOMPS_DATA_DIR is not set and {len(absent)} file(s) of {d} are "
                            f"not in {data_home() / meta['folder']} nor downloadable ({url}: "
                            f"{getattr(exc, 'reason', exc)}): set XCOMPS_DATA_DIR to a folder "
                            f"holding the datasets (README, first lines)") from exc


if __name__ == "__main__":  # make book, make smoke: python -m xcomps_utils.pairs.data
    import sys

    try:
        check_available()
    except DataError as err:
        sys.exit(f"data: {err}")
