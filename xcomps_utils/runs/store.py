"""The results store: every number this project computes, kept in one folder, never lost.

A *run* is one method on one set of pairs under one *key*: everything that can change a number
(model id and weights identity, dtype, device kind, first-token convention, the pairs' content
hash, the method and its parameters, the package version). Its id is readable and derived from the
key (``direct-smollm2-135m-instruct-1a2b3c4d5e6f``), so a run with any other key writes beside it.

Layout (plain parquet, numpy and JSON: pandas or DuckDB read it without this package)::

    <root>/runs/<run>/run.json            the key, the provenance, shard size and count, status
    <root>/runs/<run>/pairs.parquet       the pairs the run scores, in shard order
    <root>/runs/<run>/done/<shard>        marker written after the shard's files: their bytes,
                                          rows and SHA-256, and the compute seconds
    <root>/runs/<run>/locks/<shard>.lock  held by the process computing the shard
    <root>/measures/run=<run>/<shard>.parquet   long results (schema :data:`MEASURE_SCHEMA`)
    <root>/<detail>/run=<run>/<shard>.parquet   per-token or per-group detail of some methods
    <root>/states/run=<run>/<shard>.npy   Neuro hidden states ``[sentences, layers + 1, hidden]``
    <root>/quarantine/<time>/...          damaged files a repair moved aside (same relative paths)
    <root>/shipped.json                   in a store made by :meth:`Store.ship`: the folders of
                                          each run it was shipped without (``states``, details;
                                          never ``measures``)
    <root>/README.md, LICENSE, ...        documents of a shipped store (nothing else is at the
                                          top level: any other file is foreign, never read)

Work is written one finished *shard* (a fixed slice of the pairs) at a time; every file goes to a
temporary name and is renamed into place, and the shard's ``done`` marker comes last. The marker
records each of the shard's files (path, bytes, rows, SHA-256), and every read of a run's results
checks the files against it (:meth:`Store.verify`): a missing, truncated or altered shard fails
with :class:`StoreError` naming the run, the shard and the repair (``xcomps-study verify
--repair``, :meth:`Store.repair`). A run killed at any point (even ``kill -9``) resumes from its
finished shards and computes only the rest; two processes running the same run share its shards
(:meth:`Run.commit_shard` under a per-shard file lock). No function here deletes or overwrites a
finished shard or a completed run (a repair moves damaged files to ``<root>/quarantine/``).
Reading everything::

    pd.read_parquet("<root>/measures")            # a `run` column from the folder names
    duckdb.sql("select * from read_parquet('<root>/measures/*/*.parquet', hive_partitioning=1)")

Rows of unfinished runs can be in ``measures/``; ``runs/<run>/run.json`` says which runs are
``complete`` (:meth:`Store.runs`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock, Timeout

from ..errors import NotFound, XcompsError
from .. import __version__
from ..pairs.data import file_sha256

__all__ = ["MEASURE_SCHEMA", "MEASURE_COLUMNS", "Store", "Run", "StoreError", "run_id", "reads",
           "log_reads", "SHIPPED"]

#: One schema for every method's results: the item's identifiers, the method, the measure and its
#: value (float64; booleans as 0.0/1.0). ``wording``/``order`` are empty and ``layer`` is -1 where
#: they do not apply.
MEASURE_SCHEMA = pa.schema([
    ("method", pa.string()), ("dataset", pa.string()), ("task", pa.string()),
    ("lang", pa.string()), ("subset", pa.string()), ("pair_id", pa.string()),
    ("item", pa.string()), ("wording", pa.string()), ("order", pa.string()),
    ("layer", pa.int32()), ("measure", pa.string()), ("value", pa.float64()),
])
MEASURE_COLUMNS = MEASURE_SCHEMA.names


#: The codec of every Parquet file a store writes: Zstandard at pyarrow's default level, 11%
#: smaller than pyarrow's default (Snappy) on the shipped store's tables (51.1 -> 45.4 MB).
#: Lossless, so it moves no number; readers take any codec.
PARQUET_COMPRESSION = "zstd"

#: What :meth:`Store.ship` writes beside ``runs/``: per run, the folders left out.
SHIPPED = "shipped.json"

#: The documents a store may hold at its top level besides its folders and :data:`SHIPPED` (the
#: shipped store's README, a licence or notice for the third-party text it holds).
_DOCUMENTS = re.compile(r"(README|LICEN[CS]E|COPYING|NOTICE|CITATION)([._-][^/]*)?", re.IGNORECASE)

#: The free space a store needs before a run is computed into it (:meth:`Store.check_writable`).
MIN_FREE_BYTES = 16 * 2**20


class StoreError(XcompsError, RuntimeError):
    """The store cannot serve or take results: its files contradict each other or their record
    (a run folder written for another key, a missing, truncated or altered shard, an unreadable
    ``run.json``), or its folder is a file or not writable. The message says what to do."""


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))


def run_id(key: dict) -> str:
    """Readable, key-derived id: ``<method>-<model>-<12 hex of SHA-256(key)>``."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "--", str(key.get("model", "model")))[-60:]
    digest = hashlib.sha256(_canonical(key).encode()).hexdigest()[:12]
    return f"{key.get('method', 'run')}-{model}-{digest}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write) -> dict:
    """Write through ``write(tmp)`` to a unique temporary name, rename into place; returns
    ``{"bytes", "sha256"}`` of what was written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        info = {"bytes": tmp.stat().st_size, "sha256": file_sha256(tmp)}
        os.replace(tmp, path)
    except OSError as err:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise StoreError(f"results store: cannot write {path} ({err.strerror or err}); free "
                         f"space, or pass a writable folder with --store (store=)") from None
    return info


#: where every read of a run's folder is logged (:func:`log_reads`); None: nowhere
_read_log: Path | None = None


def log_reads(path: str | os.PathLike | None) -> Path | None:
    """Log every read of a run's folder (its measures, a detail, its arrays) by any
    :class:`Store` of this process, one JSON line ``{"store", "run", "folder"}`` appended to
    ``path`` (:func:`reads` reads them back, ``xcomps-study ship --reads`` ships what they name);
    ``None`` logs nothing. A chapter's entry installs it
    (:func:`xcomps_utils.pages.chapters.open`, from ``$XCOMPS_READS`` and ``$XCOMPS_CHAPTER``),
    and so does the command line run inside a chapter's build.

    Returns:
        the log it replaces (None when there was none).
    """
    global _read_log
    before, _read_log = _read_log, None if path is None else Path(path)
    return before


def _log_read(root: Path, rid: str, folder: str) -> None:
    """One line in the installed read log (:func:`log_reads`; nothing when none is)."""
    if _read_log is None:
        return
    _read_log.parent.mkdir(parents=True, exist_ok=True)
    with open(_read_log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"store": str(root.resolve()), "run": rid, "folder": folder})
                + "\n")


def _read_shipped(root: Path) -> dict:
    """``{run: [folders left out]}`` of ``root/shipped.json`` (empty when absent).

    Raises:
        StoreError: the file is unreadable or not of that shape.
    """
    path = Path(root) / SHIPPED
    if not path.is_file():
        return {}
    try:
        omitted = json.loads(path.read_text(encoding="utf-8"))["omitted"]
        if not isinstance(omitted, dict):
            raise TypeError(f"'omitted' is a {type(omitted).__name__}, not a mapping")
        for rid, folders in omitted.items():
            if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
                raise TypeError(f"run {rid}: {folders!r} is not a list of folder names")
    except (ValueError, KeyError, TypeError) as err:
        raise StoreError(f"{path}: unreadable ({err}); it lists, per run, the folders the run "
                         f"was shipped without") from None
    return omitted


def reads(folder: str | os.PathLike, store: str | os.PathLike | None = None) -> dict:
    """What chapters read (the :func:`log_reads` files in ``folder``): ``{run: {folders}}``, of
    the store ``store`` only when given (a chapter may also read a store of its own).

    Raises:
        StoreError: a line that is not a read record (names the file and line).
    """
    out = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                rec = json.loads(line)
                if store is None or rec["store"] == str(Path(store).resolve()):
                    out.setdefault(rec["run"], set()).add(rec["folder"])
            except (ValueError, KeyError, TypeError):
                raise StoreError(f"{path}, line {i}: not a read record ({line[:60]!r}); the "
                                 f"files there are written by the chapters") from None
    return out


def _write_json(path: Path, obj) -> None:
    _atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=1, default=str,
                                                          ensure_ascii=False)))


def _parquet(table: pa.Table):
    """A writer of ``table`` for :func:`_atomic_write`, in :data:`PARQUET_COMPRESSION`."""
    return lambda p: pq.write_table(table, p, compression=PARQUET_COMPRESSION)


def _save_npy(path: Path, value: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.save(f, value)


def _shard_name(shard: int | str) -> str:
    return f"shard-{shard:05d}" if isinstance(shard, (int, np.integer)) else str(shard)


class Run:
    """One run's folder: its record, which shards are done, and writing a shard."""

    def __init__(self, store: "Store", rid: str):
        self.store, self.id = store, rid
        self.folder = store.root / "runs" / rid

    @property
    def record(self) -> dict:
        """``run.json``: key, provenance, shard size and count, status.

        Raises:
            StoreError: ``run.json`` is not a run record (garbage, cut short, fields missing).
        """
        path = self.folder / "run.json"
        try:
            rec = json.loads(path.read_text())
            if not isinstance(rec, dict) or not all(k in rec for k in ("key", "status",
                                                                       "n_shards")):
                raise ValueError("fields key, status or n_shards missing")
        except (ValueError, UnicodeDecodeError) as err:
            raise StoreError(f"{path} is not a readable run record ({str(err)[:80]}); move the "
                             f"folder {self.folder} out of the store and rerun that run") from None
        return rec

    def shards(self) -> list[str]:
        """The names of every shard the complete run has (and its method's finishing shard,
        ``Method.finish_shard``: Neuro's ``probes``)."""
        from ..methods.registry import METHODS

        rec = self.record
        names = [_shard_name(i) for i in range(rec["n_shards"])]
        method = METHODS.get(rec["key"].get("method"))
        last = method.finish_shard if method is not None else None
        return names + ([last] if last else [])

    @property
    def complete(self) -> bool:
        return self.record.get("status") == "complete"

    def done(self) -> set[str]:
        """Names of the finished shards."""
        d = self.folder / "done"
        return {p.name for p in d.iterdir()} if d.is_dir() else set()

    def is_done(self, shard) -> bool:
        return (self.folder / "done" / _shard_name(shard)).exists()

    def pairs(self) -> pd.DataFrame:
        """The pairs the run scores (``pairs.parquet``), checked against the run's record.

        Raises:
            StoreError: the file is missing or not the one the record names (names the file
                and what to do).
        """
        problem = self.store.pairs_problem(self)
        if problem:
            raise StoreError(f"run {self.id}: runs/{self.id}/pairs.parquet {problem}")
        return pd.read_parquet(self.folder / "pairs.parquet")

    def write_pairs(self, pairs: pd.DataFrame) -> None:
        """Write (or restore) ``pairs.parquet`` and record its bytes, rows and SHA-256 in
        ``run.json`` (the caller guarantees that ``pairs`` are the key's: the same
        ``pairs_sha256``)."""
        info = _atomic_write(self.folder / "pairs.parquet",
                             lambda p: pairs.reset_index(drop=True).to_parquet(
                                 p, index=False, compression=PARQUET_COMPRESSION))
        path = self.folder / "run.json"
        if path.exists():
            record = self.record
            record["pairs_file"] = {"rows": len(pairs), **info}
            _write_json(path, record)
        else:
            self._pairs_info = {"rows": len(pairs), **info}

    def shard_names(self) -> list[str]:
        """The run's shards that are done, in shard order (only names of the run's own
        shards: a planted marker of another name is never read)."""
        done = self.done()
        return [n for n in self.shards() if n in done]

    def recorded(self, folder: str, suffix: str) -> list[Path]:
        """The files of ``<folder>/run=<run>/`` that the done markers of the run's shards record
        (sorted by name), and only those: a file no marker records is never read. A marker
        written before files were recorded stands for ``<shard><suffix>`` of its shard."""
        prefix, out = f"{folder}/run={self.id}/", []
        for name in self.shard_names():
            try:
                files = json.loads((self.folder / "done" / name).read_text()).get("files")
            except (ValueError, UnicodeDecodeError, AttributeError):
                files = {}
            if files is None:  # a marker from before checksums
                legacy = self.store.root / folder / f"run={self.id}" / f"{name}{suffix}"
                out += [legacy] if legacy.is_file() else []
                continue
            out += [self.store.root / rel for rel in files
                    if rel.startswith(prefix) and rel.endswith(suffix)]
        return sorted(out, key=lambda p: p.name)

    def write_shard(self, shard, measures: pd.DataFrame | None = None,
                    details: dict | None = None, seconds: float | None = None) -> None:
        """Write a finished shard: its measures (coerced to :data:`MEASURE_SCHEMA`), detail
        tables (``{name: DataFrame}``) and arrays (``{"states": ndarray}``), then its marker,
        which records ``seconds`` (the shard's compute time, when given) and every file's path,
        bytes, rows and SHA-256 (what :meth:`Store.verify` checks).

        Raises:
            StoreError: the shard is already done (finished work is never overwritten).
            ValueError: measures lack a schema column.
        """
        name = _shard_name(shard)
        if self.is_done(shard):
            raise StoreError(f"{self.folder}: shard {name} is already done; not overwriting it")
        files = {}
        for detail, value in (details or {}).items():
            path = self.store.root / detail / f"run={self.id}"
            if isinstance(value, np.ndarray):
                files[f"{detail}/run={self.id}/{name}.npy"] = {"rows": int(len(value)), **_atomic_write(
                    path / f"{name}.npy", lambda p: _save_npy(p, value))}
            else:
                table = pa.Table.from_pandas(value.reset_index(drop=True), preserve_index=False)
                files[f"{detail}/run={self.id}/{name}.parquet"] = {
                    "rows": table.num_rows,
                    **_atomic_write(path / f"{name}.parquet", _parquet(table))}
        if measures is not None:
            missing = [c for c in MEASURE_COLUMNS if c not in measures]
            if missing:
                raise ValueError(f"measures lack column(s) {missing}")
            table = pa.Table.from_pandas(measures[MEASURE_COLUMNS].reset_index(drop=True),
                                         schema=MEASURE_SCHEMA, preserve_index=False)
            files[f"measures/run={self.id}/{name}.parquet"] = {"rows": table.num_rows, **_atomic_write(
                self.store.root / "measures" / f"run={self.id}" / f"{name}.parquet",
                _parquet(table))}
        marker = self.folder / "done" / name
        _atomic_write(marker, lambda p: p.write_text(json.dumps(
            {"finished": _now(), "seconds": seconds, "files": files})))

    def commit_shard(self, shard, measures=None, details=None, seconds: float | None = None
                     ) -> bool:
        """:meth:`write_shard` unless another attempt (a thread, a process) already has, under
        the shard's lock: exactly one attempt writes; later ones are no-ops.

        Returns:
            ``True`` if this call wrote the shard, ``False`` if it was already done.
        """
        with self.lock(shard):
            if self.is_done(shard):
                return False
            self.write_shard(shard, measures, details, seconds=seconds)
            return True

    def lock(self, shard, timeout: float = -1) -> FileLock:
        """The exclusive lock of one shard (``runs/<run>/locks/<shard>.lock``, a
        :class:`filelock.FileLock`: released when its holder exits or is killed). Hold it while
        computing a shard so another process running the same run skips to another shard."""
        path = self.folder / "locks" / f"{_shard_name(shard)}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(path, timeout=timeout, thread_local=False)

    def try_lock(self, shard) -> FileLock | None:
        """The shard's lock, acquired, or ``None`` if another holder has it now."""
        lock = self.lock(shard, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            return None
        return lock

    def compute_seconds(self) -> float | None:
        """Sum of the finished shards' compute seconds (``None`` if a shard did not record
        them): what the run cost on the machine that computed it (see the provenance)."""
        total = 0.0
        for name in self.done():
            try:
                sec = json.loads((self.folder / "done" / name).read_text()).get("seconds")
            except (json.JSONDecodeError, AttributeError):
                return None
            if sec is None:
                return None
            total += sec
        return total

    def finish(self) -> None:
        """Mark the run complete (after its last shard), only if every shard checks.

        Raises:
            StoreError: a shard is not done, or a file of the run is not as recorded.
        """
        self.store.check(self.id, complete=True)
        record = self.record
        record.update(status="complete", finished=_now())
        _write_json(self.folder / "run.json", record)


class Store:
    """A results store rooted at a folder (created on first write).

    Example::

        store = Store("results")
        store.runs()                  # one row per run, with provenance
        store.measures(["direct-smollm2-135m-instruct-1a2b3c4d5e6f"])
    """

    def __init__(self, root: str | os.PathLike):
        """
        Raises:
            StoreError: ``root`` is a file (not a store folder).
        """
        if not isinstance(root, (str, os.PathLike)) or not os.fspath(root).strip():
            raise StoreError(f"the results store is {root!r}, not a folder name; pass a folder "
                             f"with --store (store=)")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"results store {str(self.root)!r} is a file, not a folder; pass a "
                             f"folder with --store (store=)")
        self._verified: set = set()
        self._repairing: set = set()  # (run, shard) being recomputed: not a damage meanwhile

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def check_writable(self) -> None:
        """That runs can be written here: the store folder (or, while it does not exist, the
        nearest existing folder above it) takes a file. Nothing is left behind.

        Raises:
            StoreError: not writable (read-only file system, permissions), with what to do.
        """
        folder = self.root
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        for sub in ("runs", "measures"):
            if (self.root / sub).is_dir():
                folder = self.root / sub
        try:
            fd, tmp = tempfile.mkstemp(prefix=".write-test-", dir=folder)
            os.close(fd)
            os.unlink(tmp)
        except OSError as err:
            raise StoreError(f"results store {str(self.root)!r} is not writable ({folder}: "
                             f"{err.strerror}); pass a writable folder with --store (store=)"
                             ) from None
        free = shutil.disk_usage(folder).free
        if free < MIN_FREE_BYTES:
            raise StoreError(f"results store {str(self.root)!r} is on a full disk ({folder}: "
                             f"{free:,} bytes free, at least {MIN_FREE_BYTES:,} needed); free "
                             f"space or pass another folder with --store (store=)")

    # --- writing ---------------------------------------------------------------------------
    def open_run(self, key: dict, pairs: pd.DataFrame, shard_size: int, provenance: dict
                 ) -> Run:
        """The run of ``key``: the existing one (to resume or read) or a new one.

        A new run records the key, the provenance, ``shard_size`` and the pairs; an existing run
        keeps its own shard size (so a resumed run cuts the same shards).

        Raises:
            StoreError: the folder of this id holds another key.
        """
        rid = run_id(key)
        run = Run(self, rid)
        path = run.folder / "run.json"
        if path.exists():
            if _canonical(run.record["key"]) != _canonical(json.loads(_canonical(key))):
                raise StoreError(f"{path} holds another key than this run's (id collision); "
                                 f"move that folder away")
            return run
        self.check_unowned(rid)
        n = len(pairs)
        run.write_pairs(pairs)
        _write_json(path, {"run": rid, "key": key, "status": "running", "created": _now(),
                           "package_version": __version__, "n_pairs": n,
                           "shard_size": shard_size, "n_shards": max(1, -(-n // shard_size)),
                           "pairs_file": run._pairs_info, "provenance": provenance})
        return run

    def check_unowned(self, rid: str) -> None:
        """That no file of run ``rid`` is in the store while its record is not (a renamed or
        deleted run folder), before a new run of that id is opened.

        Raises:
            StoreError: names the folders and what to do.
        """
        if (self.root / "runs" / rid / "run.json").exists():
            return
        held = [p for p in self.root.glob(f"*/run={rid}") if p.parent.name != "quarantine"]
        if held:
            raise StoreError(f"results store {self.root}: {held[0].relative_to(self.root)}/ holds "
                             f"files of run {rid} but runs/{rid}/run.json is missing (a renamed "
                             f"or deleted run folder); see `xcomps-study verify --store "
                             f"{self.root}`, move the run folder back or those folders out of "
                             f"the store")

    # --- reading ---------------------------------------------------------------------------
    def run(self, rid: str) -> Run:
        """An existing run by id.

        Raises:
            NotFound: (a ``KeyError``) no such run (lists how many runs the store has).
        """
        if not (self.root / "runs" / rid / "run.json").exists():
            raise NotFound(f"no run {rid!r} in {self.root} ({len(self.ids())} runs; see "
                           f"`xcomps-study ls --store {self.root}`)")
        return Run(self, rid)

    def ids(self) -> list[str]:
        """The ids of every run the store holds (complete or not), sorted."""
        d = self.root / "runs"
        return sorted(p.parent.name for p in d.glob("*/run.json")) if d.is_dir() else []

    def runs(self) -> pd.DataFrame:
        """One row per run: id, method, status, shards done / total, pairs, model, weights,
        dtype, device, first-token convention, parameters, package version, created.

        A run whose ``run.json`` cannot be read has status ``unreadable`` (the other runs are
        listed as usual); one whose record names another run (a renamed or copied folder) has
        status ``misnamed``."""
        rows = []
        for rid in self.ids():
            run = Run(self, rid)
            try:
                rec = run.record
            except StoreError:
                rows.append({"run": rid, "status": "unreadable"})
                continue
            key = rec["key"]
            status = rec["status"] if self._misnamed(rid, rec) is None else "misnamed"
            rows.append({"run": rid, "method": key.get("method"), "status": status,
                         "shards": f"{sum(d.startswith('shard-') for d in run.done())}/{rec['n_shards']}",
                         "pairs": rec.get("n_pairs"), "model": key.get("model"),
                         "weights": str(key.get("model_revision"))[:12],
                         "dtype": key.get("dtype"), "device": key.get("device"),
                         "bos_policy": key.get("bos_policy"),
                         "parameters": _canonical(key.get("parameters", {})),
                         "version": rec.get("package_version"), "created": rec.get("created")})
        return pd.DataFrame(rows, columns=["run", "method", "status", "shards", "pairs", "model",
                                           "weights", "dtype", "device", "bos_policy",
                                           "parameters", "version", "created"])

    def _parts(self, folder: str, rid: str, suffix: str) -> list[Path]:
        _log_read(self.root, rid, folder)
        if folder in self.omitted(rid):
            raise StoreError(f"run {rid}: its {folder} were not shipped with this store "
                             f"({self.root / SHIPPED}); compute them into a store of your own: "
                             f"the same command or chapter with --store (store=) another folder")
        self.check(rid)
        return Run(self, rid).recorded(folder, suffix)

    # --- shipping ---------------------------------------------------------------------------

    def omitted(self, rid: str) -> set[str]:
        """The folders of run ``rid`` this store was shipped without (:meth:`ship`; e.g.
        ``{"states"}``), empty for a store computed here. ``measures`` never is one (a
        ``shipped.json`` that lists it is a :meth:`verify` problem, and the run's measures are
        read, and checked, as any run's).

        Raises:
            StoreError: ``shipped.json`` is unreadable.
        """
        return set(_read_shipped(self.root).get(rid, [])) - {"measures"}

    def ship(self, dest: str | os.PathLike, runs: list[str] | None = None,
             omit=("states",)) -> pd.DataFrame:
        """Copy complete runs into the store ``dest`` (e.g. the one a repository ships), without
        some of their folders, and record what was left out in ``dest/shipped.json``.

        ``dest`` serves the shipped runs as this store does: :meth:`verify` accepts their
        left-out files as absent (every other missing file is still damage), and reading a
        left-out folder (:meth:`detail`, :meth:`arrays`) raises :class:`StoreError` saying so.
        A run ``dest`` already holds with the same done markers is skipped; nothing in ``dest``
        is overwritten.

        Args:
            dest: the store to ship into (created if absent).
            runs: run ids (``None``: every complete run).
            omit: folders to leave out (``measures`` never is): names for every run, or
                ``{run: names}`` per run.

        Returns:
            one row per run: ``run``, ``shipped`` (copied, or already there), ``folders``,
            ``omitted``, ``bytes`` copied.

        Raises:
            StoreError: a run is not complete or does not verify, ``measures`` is to be left
                out, or ``dest`` holds another version of a run.
        """
        dest = Store(dest)
        if dest.root.resolve() == self.root.resolve():
            raise StoreError(f"ship into another folder than the store itself ({self.root})")
        runs = [r for r in self.ids() if self.run(r).complete] if runs is None else list(runs)
        shipped = _read_shipped(dest.root)
        rows = []
        for rid in runs:
            run = self.run(rid)
            if not run.complete:
                raise StoreError(f"run {rid} is not complete ({len(run.done())} of "
                                 f"{run.record['n_shards']} shards): finish it first")
            self.check(rid, complete=True)
            left = set(omit.get(rid, ()) if isinstance(omit, dict) else omit)
            if "measures" in left:
                raise StoreError(f"run {rid}: its measures are what a shipped run is; "
                                 f"leave out details or states only")
            folders = sorted(d.parent.name for d in self.root.glob(f"*/run={rid}")
                             if d.parent.name not in ("runs", "quarantine"))
            # what this store was itself shipped without stays left out
            out = sorted((left & set(folders)) | self.omitted(rid))
            mine, theirs = run.folder / "done", dest.root / "runs" / rid / "done"
            if theirs.is_dir():
                have = {p.name for p in theirs.iterdir()}
                if rid not in shipped or not have <= run.done() or any(
                        (theirs / n).read_bytes() != (mine / n).read_bytes() for n in have):
                    raise StoreError(f"{dest.root} holds another version of run {rid}: ship "
                                     f"into a new folder, or remove that run from it by hand")
                for n in sorted(run.done() - have):  # a ship stopped among the markers
                    shutil.copy2(mine / n, theirs / n)
                dest.check(rid, complete=True)
                rows.append({"run": rid, "shipped": "already there" if have == run.done()
                             else "completed", "folders": folders, "omitted": shipped[rid],
                             "bytes": 0})
                continue
            # the store's own order: the data, then what was left out, the done markers last,
            # so an interrupted ship is copied again, never taken for a finished one
            copied = 0
            parts = [f for name in folders if name not in out
                     for f in sorted((self.root / name / f"run={rid}").rglob("*"))
                     if f.is_file() and not f.name.startswith(".")]
            parts += [run.folder / n for n in ("run.json", "pairs.parquet")]
            for f in parts + [None] + sorted(mine.iterdir()):
                if f is None:
                    shipped[rid] = out
                    _write_json(dest.root / SHIPPED, {"omitted": shipped})
                    continue
                target = dest.root / f.relative_to(self.root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)
                copied += f.stat().st_size
            rows.append({"run": rid, "shipped": "copied", "folders": folders,
                         "omitted": out, "bytes": copied})
        return pd.DataFrame(rows, columns=["run", "shipped", "folders", "omitted", "bytes"])

    # --- verifying and repairing -----------------------------------------------------------
    def is_store(self) -> bool:
        """Whether the folder is a results store: it holds ``runs/`` or a results folder
        (``<name>/run=<id>/``), or it is empty (a store before its first run)."""
        if not self.root.is_dir():
            return False
        if (self.root / "runs").is_dir() or not any(self.root.iterdir()):
            return True
        return any(True for _ in self.root.glob("*/run=*"))

    @staticmethod
    def _misnamed(rid: str, rec: dict) -> str | None:
        named = rec.get("run", rid)
        if named != rid:
            return f"records run {named}: a renamed or copied run folder (move it back to " \
                   f"runs/{named}/ or out of the store)"
        if run_id(rec["key"]) != rid:
            return f"holds a key whose id is {run_id(rec['key'])}, not {rid}: the record was " \
                   f"edited or the folder renamed (move it out of the store)"
        return None

    def pairs_problem(self, run: Run) -> str | None:
        """What is wrong with a run's ``pairs.parquet`` against the bytes, rows and SHA-256
        ``run.json`` records (runs written before it was recorded: only that it is there), or
        ``None``."""
        rec = run.record.get("pairs_file")
        path = run.folder / "pairs.parquet"
        if rec is None:
            return None if path.is_file() else "missing"
        problem = self._check_file(path, rec)
        return f"{problem} (run.json records its SHA-256)" if problem else None

    def unowned(self) -> list[dict]:
        """Data that no run record owns: a run folder without ``run.json``, and results folders
        (``<name>/run=<id>/``) of an id that has no run record (a renamed or deleted run
        folder). One :meth:`verify` problem each (``repair`` ``""``: a person decides)."""
        out, ids = [], set(self.ids())
        runs = self.root / "runs"
        for d in sorted(runs.iterdir()) if runs.is_dir() else []:
            if d.name not in ids:
                out.append({"run": d.name, "shard": "", "file": f"runs/{d.name}/run.json",
                            "problem": "missing: nothing records this run folder (move it out "
                                       "of the store)" if d.is_dir() else
                            "missing: a file where run folders belong (move it out of the store)",
                            "repair": ""})
        for d in sorted(self.root.glob("*/run=*")):
            rid = d.name[4:]
            if d.parent.name not in ("runs", "quarantine") and rid not in ids:
                out.append({"run": rid, "shard": "", "file": f"{d.parent.name}/{d.name}/",
                            "problem": f"no run record owns it (runs/{rid}/run.json missing: a "
                                       f"renamed or deleted run folder); move the run folder "
                                       f"back or this folder out of the store", "repair": ""})
        return out

    def foreign(self) -> list[dict]:
        """Files outside the store's layout (the module's docstring) at its top level and in its
        results folders outside their ``run=<id>/`` folders: anything at the top level but
        ``runs/``, ``quarantine/``, the results folders, :data:`SHIPPED` and a README, licence
        or notice (:data:`_DOCUMENTS`); and the entries of ``shipped.json`` naming a run the
        store does not hold. Hidden files (a write in progress) and the quarantine are not
        looked at; ``runs/`` is :meth:`unowned`'s and each run's own folders are checked by
        :meth:`verify`. One :meth:`verify` problem each (``run`` ``""`` for a file no run
        owns; ``repair`` ``"move"``: never read, a repair moves it to the quarantine; ``""``
        for ``shipped.json``: a person decides)."""
        out = []

        def add(rel, why):
            out.append({"run": "", "shard": "", "file": rel, "problem": f"foreign (never "
                        f"read): {why}", "repair": "move"})

        for entry in sorted(self.root.iterdir()) if self.root.is_dir() else []:
            if entry.name.startswith(".") or entry.is_dir() and entry.name in ("runs",
                                                                              "quarantine"):
                continue
            if not entry.is_dir():
                if entry.name != SHIPPED and not _DOCUMENTS.fullmatch(entry.name):
                    add(entry.name, "not a file of a results store's top level, which holds "
                                    "runs/, results folders, shipped.json and a README or "
                                    "licence only")
                continue
            for child in sorted(entry.iterdir()):
                if child.name.startswith(".") or child.is_dir() and child.name.startswith("run="):
                    continue
                for f in [child] if not child.is_dir() else sorted(child.rglob("*")):
                    rel = f.relative_to(self.root)
                    if f.is_dir() or any(part.startswith(".") for part in rel.parts):
                        continue
                    add(rel.as_posix(), f"not in a run=<id>/ folder of {entry.name}/")
        ids = set(self.ids())
        for rid in sorted(set(_read_shipped(self.root)) - ids):
            if not (self.root / "runs" / rid).is_dir():  # else unowned() names the folder
                out.append({"run": rid, "shard": "", "file": SHIPPED, "repair": "",
                            "problem": f"lists run {rid}, which the store does not hold (no "
                                       f"runs/{rid}/run.json): remove its entry"})
        return out

    def verify(self, runs: list[str] | None = None, complete: bool = False) -> list[dict]:
        """Check runs (default: every run, the data no run owns, :meth:`unowned`, and the files
        outside the store's layout, :meth:`foreign`) against their records: a readable
        ``run.json`` naming its own folder (its ``run`` and the id of its key); ``pairs.parquet``
        as recorded; a complete run (or, with ``complete``, any run) has every shard's done
        marker; every file a marker records is there with its bytes, rows and SHA-256; no other
        file is in the run's folders (a *foreign* file, never read). ``shipped.json`` is held
        to the rules of :meth:`ship`: a run's entry names folders its markers record and that
        are absent, never ``measures`` (what a left-out folder lacks is not damage; everything
        else is). Markers written before checksums were recorded are taken as they are.

        Returns:
            one ``{"run", "shard", "file", "problem", "repair"}`` per problem (``shard`` is
            ``""`` for what is not a shard's; ``repair``: ``"recompute"`` a shard, ``"move"`` a
            foreign file to the quarantine, ``""`` a person must act, the problem says how);
            empty if all is well.
        """
        out = self.unowned() + self.foreign() if runs is None else []
        for rid in self.ids() if runs is None else runs:
            out += self._verify_run(rid, complete)
        return out

    def _verify_run(self, rid: str, complete: bool = False) -> list[dict]:
        run, out = Run(self, rid), []

        def add(shard, file, problem, repair):
            out.append({"run": rid, "shard": shard, "file": file, "problem": problem,
                        "repair": repair})

        try:
            rec = run.record
            shards = run.shards()
        except (StoreError, FileNotFoundError) as err:
            add("", f"runs/{rid}/run.json", str(err) if isinstance(err, StoreError)
                else "missing", "")
            return out
        misnamed = self._misnamed(rid, rec)
        if misnamed:
            add("", f"runs/{rid}/run.json", misnamed, "")
            return out
        claimed = set(_read_shipped(self.root).get(rid, []))
        omitted = claimed - {"measures"}
        if "measures" in claimed:
            add("", SHIPPED, f"lists measures among the folders run {rid} was shipped without: "
                f"a shipped run's measures are what it is (ship never leaves them out); remove "
                f"measures from the run's entry (its measures are then checked as any run's)",
                "")
        pairs = self.pairs_problem(run)
        if pairs:
            add("", f"runs/{rid}/pairs.parquet", f"{pairs}; rerun the run (the same command or "
                f"methods.run call) to restore it from the data, then repair", "")
        done = run.done()
        # an unfinished run's shards not done yet: their files (written before the marker) are
        # rewritten by its computation, so they are not foreign
        pending = set(shards) - done if rec.get("status") != "complete" else set()
        names = shards if complete or rec.get("status") == "complete" else \
            [n for n in shards if n in done]
        recorded, legacy = set(), False
        for name in names:
            if (rid, name) in self._repairing:
                recorded |= {p.relative_to(self.root).as_posix() for p in
                             self.root.glob(f"*/run={rid}/{name}.*")}
                continue
            marker = run.folder / "done" / name
            if name not in done:
                add(name, f"runs/{rid}/done/{name}", "done marker missing", "recompute")
                pending.add(name)  # its files go with the shard's repair
                continue
            try:
                files = json.loads(marker.read_text()).get("files")
            except (ValueError, UnicodeDecodeError, AttributeError):
                add(name, f"runs/{rid}/done/{name}", "done marker unreadable", "recompute")
                pending.add(name)
                continue
            if files is None:  # a marker from before checksums: its shard's files as they are
                recorded |= {p.relative_to(self.root).as_posix() for p in
                             self.root.glob(f"*/run={rid}/{name}.*")}
                legacy = True
                continue
            for rel, frec in files.items():
                recorded.add(rel)
                if rel.split("/", 1)[0] in omitted and not (self.root / rel).exists():
                    continue  # shipped without it (shipped.json)
                problem = self._check_file(self.root / rel, frec)
                if problem:
                    add(name, rel, problem, "recompute")
        # what shipped.json says the run was shipped without: files its markers record, absent
        for folder in sorted(omitted):
            held = [f for f in sorted((self.root / folder / f"run={rid}").rglob("*"))
                    if f.is_file() and not f.name.startswith(".")]
            if held:
                add("", SHIPPED, f"lists {folder} among the folders run {rid} was shipped "
                    f"without, yet {folder}/run={rid}/ holds {len(held)} file(s): remove "
                    f"{folder} from the run's entry, or move {folder}/run={rid}/ out of the "
                    f"store", "")
            elif rec.get("status") == "complete" and not legacy and not any(
                    r.startswith(f"{folder}/run={rid}/") for r in recorded):
                add("", SHIPPED, f"lists {folder} among the folders run {rid} was shipped "
                    f"without, but no done marker of the run records a file in {folder}/: "
                    f"remove {folder} from the run's entry", "")
        # foreign: what no marker of the run's shards records (temporary files of a write in
        # progress and the files of the pending shards apart)
        for d in self.root.glob(f"*/run={rid}"):
            if d.parent.name in ("runs", "quarantine"):
                continue
            for f in sorted(d.rglob("*")):
                rel = f.relative_to(self.root).as_posix()
                if (f.is_dir() or f.name.startswith(".") or rel in recorded
                        or f.name.split(".")[0] in pending):
                    continue
                add("", rel, "foreign: no done marker records it (never read)", "move")
        for name in sorted(done - set(shards)):
            add("", f"runs/{rid}/done/{name}", "foreign: not a shard of this run (never read)",
                "move")
        for f in sorted(run.folder.iterdir()):
            if f.name not in ("run.json", "pairs.parquet", "done", "locks") and \
                    not f.name.startswith("."):
                add("", f"runs/{rid}/{f.name}", "foreign: not a file of a run (never read)",
                    "move")
        locks = run.folder / "locks"
        for f in sorted(locks.iterdir()) if locks.is_dir() else []:
            if not f.name.endswith(".lock") and not f.name.startswith("."):
                add("", f"runs/{rid}/locks/{f.name}", "foreign: not a shard's lock (never read)",
                    "move")
        return out

    def _check_file(self, path: Path, rec: dict) -> str | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return "missing"
        seen = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        if seen in self._verified:
            return None
        if st.st_size < rec["bytes"]:
            return f"truncated ({st.st_size:,} of {rec['bytes']:,} bytes)"
        if file_sha256(path) != rec["sha256"]:
            return f"altered ({st.st_size:,} bytes, SHA-256 differs from the record)"
        try:
            rows = (pq.ParquetFile(path).metadata.num_rows if path.suffix == ".parquet"
                    else len(np.load(path, mmap_mode="r")))
        except Exception:  # noqa: BLE001 - any unreadable file is damaged
            return "unreadable"
        if rows != rec["rows"]:
            return f"{rows} rows, the record says {rec['rows']}"
        self._verified.add(seen)
        return None

    def check(self, rid: str, complete: bool = False, ignore=()) -> None:
        """:meth:`verify` one run before its results are read (``complete``: every shard must
        be done, as before the run is marked complete; ``ignore``: files, relative to the
        root, whose problems are not this check's, e.g. a ``pairs.parquet`` about to be
        restored).

        Raises:
            StoreError: a damaged shard, a foreign file or a record that does not check: names
                the run, the shard, the file and what to do.
        """
        problems = [p for p in self.verify([rid], complete=complete) if p["file"] not in ignore]
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            where = f"shard {first['shard']}: " if first["shard"] else ""
            todo = (f"; repair: xcomps-study verify --store {self.root} --repair"
                    if any(p["repair"] for p in problems) else "")
            raise StoreError(f"run {rid}: {where}{first['file']} {first['problem']}{more}{todo}")

    def repair(self, recompute, problems: list[dict] | None = None) -> list[dict]:
        """Recompute the damaged shards :meth:`verify` finds (or those of ``problems``), and only
        them (:func:`xcomps_utils.runs.execute.repair` recomputes with the run's own model, dtype,
        device kind and parameters); move foreign files to the quarantine. The damaged shard's
        files and marker are moved to ``<root>/quarantine/<time>/`` (nothing is deleted); every
        other file stays as it is.

        Args:
            recompute: ``recompute(run)`` -> a function ``(shard name) -> (measures,
                details)`` for that run (called once per damaged run).

        Returns:
            one ``{"run", "shard", "moved"}`` per repaired shard or moved foreign file
            (``shard`` ``""``).

        Raises:
            StoreError: before anything is recomputed or moved, a problem no repair can fix (an
                unreadable or misnamed run record, a missing or altered pairs file, data no run
                owns), naming it and what to do; and what ``recompute`` raises.
        """
        problems = self.verify() if problems is None else problems
        manual = [pr for pr in problems if not pr.get("repair", "recompute" if pr["shard"]
                                                      else "")]
        if manual:
            pr = manual[0]
            more = f" (and {len(manual) - 1} more)" if len(manual) > 1 else ""
            raise StoreError(f"cannot repair run {pr['run']}: {pr['file']} {pr['problem']}{more}")
        damaged: dict[str, list[str]] = {}
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        out = []
        for pr in problems:
            if pr.get("repair") == "move":
                out.append({"run": pr["run"], "shard": "", "moved": [self._move_aside(
                    pr["file"], stamp)]})
                continue
            damaged.setdefault(pr["run"], [])
            if pr["shard"] not in damaged[pr["run"]]:
                damaged[pr["run"]].append(pr["shard"])
        for rid, names in damaged.items():
            run = Run(self, rid)
            one = recompute(run)
            # the finishing shard (not shard-<i>) last: it reads the others
            for name in sorted(names, key=lambda n: (not n.startswith("shard-"), n)):
                moved = self._quarantine(rid, name, stamp)
                self._repairing.add((rid, name))
                try:
                    measures, details = one(name)
                    run.commit_shard(int(name.removeprefix("shard-")) if name.startswith(
                        "shard-") else name, measures, details)
                finally:
                    self._repairing.discard((rid, name))
                out.append({"run": rid, "shard": name, "moved": moved})
        return out

    def _move_aside(self, rel: str, stamp: str) -> str:
        dest = self.root / "quarantine" / stamp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(self.root / rel, dest)
        return rel

    def _quarantine(self, rid: str, name: str, stamp: str) -> list[str]:
        """Move a shard's files and marker to ``quarantine/<stamp>/`` (same relative paths)."""
        moved = []
        for path in [*self.root.glob(f"*/run={rid}/{name}.*"),
                     self.root / "runs" / rid / "done" / name]:
            if path.is_file() and not path.relative_to(self.root).parts[0] == "quarantine":
                rel = path.relative_to(self.root)
                dest = self.root / "quarantine" / stamp / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, dest)
                moved.append(rel.as_posix())
        return moved

    def measures(self, runs: list[str]) -> pd.DataFrame:
        """The measures of some runs, with a ``run`` column (:data:`MEASURE_SCHEMA`).

        Raises:
            StoreError: a run's shard is missing, truncated or altered (:meth:`check`).
        """
        frames = [pq.read_table(p).to_pandas().assign(run=rid)
                  for rid in runs for p in self._parts("measures", rid, ".parquet")]
        if not frames:
            return pd.DataFrame(columns=MEASURE_COLUMNS + ["run"])
        return pd.concat(frames, ignore_index=True)

    def detail(self, rid: str, name: str) -> pd.DataFrame:
        """A detail table of a run (e.g. ``direct_tokens``, ``ppl_groups``), shards in order.

        Raises:
            StoreError: a damaged shard (:meth:`check`).
        """
        frames = [pd.read_parquet(p) for p in self._parts(name, rid, ".parquet")]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def arrays(self, rid: str, name: str = "states") -> list[np.ndarray]:
        """The arrays of a run's shards, in shard order (memory-mapped).

        Raises:
            StoreError: a damaged shard (:meth:`check`).
        """
        return [np.load(p, mmap_mode="r") for p in self._parts(name, rid, ".npy")]
