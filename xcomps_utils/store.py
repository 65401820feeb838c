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

from . import __version__
from .data import file_sha256

__all__ = ["MEASURE_SCHEMA", "MEASURE_COLUMNS", "Store", "Run", "StoreError", "run_id"]

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


class StoreError(RuntimeError):
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    write(tmp)
    info = {"bytes": tmp.stat().st_size, "sha256": file_sha256(tmp)}
    os.replace(tmp, path)
    return info


def _write_json(path: Path, obj) -> None:
    _atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=1, default=str,
                                                          ensure_ascii=False)))


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
        """The names of every shard the complete run has (Neuro: and ``probes``)."""
        rec = self.record
        names = [_shard_name(i) for i in range(rec["n_shards"])]
        return names + (["probes"] if rec["key"].get("method") == "neuro" else [])

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
        return pd.read_parquet(self.folder / "pairs.parquet")

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
                    **_atomic_write(path / f"{name}.parquet", lambda p: pq.write_table(table, p))}
        if measures is not None:
            missing = [c for c in MEASURE_COLUMNS if c not in measures]
            if missing:
                raise ValueError(f"measures lack column(s) {missing}")
            table = pa.Table.from_pandas(measures[MEASURE_COLUMNS].reset_index(drop=True),
                                         schema=MEASURE_SCHEMA, preserve_index=False)
            files[f"measures/run={self.id}/{name}.parquet"] = {"rows": table.num_rows, **_atomic_write(
                self.store.root / "measures" / f"run={self.id}" / f"{name}.parquet",
                lambda p: pq.write_table(table, p))}
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
        """Mark the run complete (after its last shard)."""
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
        n = len(pairs)
        _atomic_write(run.folder / "pairs.parquet",
                      lambda p: pairs.reset_index(drop=True).to_parquet(p, index=False))
        _write_json(path, {"run": rid, "key": key, "status": "running", "created": _now(),
                           "package_version": __version__, "n_pairs": n,
                           "shard_size": shard_size, "n_shards": max(1, -(-n // shard_size)),
                           "provenance": provenance})
        return run

    # --- reading ---------------------------------------------------------------------------
    def run(self, rid: str) -> Run:
        """An existing run by id.

        Raises:
            KeyError: no such run (lists how many runs the store has).
        """
        if not (self.root / "runs" / rid / "run.json").exists():
            raise KeyError(f"no run {rid!r} in {self.root} ({len(self.ids())} runs; see "
                           f"`xcomps-study ls --store {self.root}`)")
        return Run(self, rid)

    def ids(self) -> list[str]:
        """The ids of every run the store holds (complete or not), sorted."""
        d = self.root / "runs"
        return sorted(p.parent.name for p in d.glob("*/run.json")) if d.is_dir() else []

    def runs(self) -> pd.DataFrame:
        """One row per run: id, method, status, shards done / total, pairs, model, weights,
        dtype, device, first-token convention, parameters, package version, created."""
        rows = []
        for rid in self.ids():
            run = Run(self, rid)
            rec, key = run.record, run.record["key"]
            rows.append({"run": rid, "method": key.get("method"), "status": rec["status"],
                         "shards": f"{sum(d.startswith('shard-') for d in run.done())}/{rec['n_shards']}",
                         "pairs": rec["n_pairs"], "model": key.get("model"),
                         "weights": str(key.get("model_revision"))[:12],
                         "dtype": key.get("dtype"), "device": key.get("device"),
                         "bos_policy": key.get("bos_policy"),
                         "parameters": _canonical(key.get("parameters", {})),
                         "version": rec.get("package_version"), "created": rec["created"]})
        return pd.DataFrame(rows, columns=["run", "method", "status", "shards", "pairs", "model",
                                           "weights", "dtype", "device", "bos_policy",
                                           "parameters", "version", "created"])

    def _parts(self, folder: str, rid: str, suffix: str) -> list[Path]:
        self.check(rid)
        d = self.root / folder / f"run={rid}"
        return sorted(d.glob(f"[!.]*{suffix}")) if d.is_dir() else []

    # --- verifying and repairing -----------------------------------------------------------
    def verify(self, runs: list[str] | None = None) -> list[dict]:
        """Check runs (default: every run) against their records: a readable ``run.json``; a
        complete run has every shard's done marker; every file a marker records is there with its
        bytes, rows and SHA-256. Markers written before checksums were recorded are taken as
        they are.

        Returns:
            one ``{"run", "shard", "file", "problem"}`` per damaged file (``shard`` is ``""`` for
            the run record itself); empty if all is well.
        """
        out = []
        for rid in self.ids() if runs is None else runs:
            run = Run(self, rid)
            try:
                names = run.shards() if run.complete else sorted(run.done())
            except StoreError as err:
                out.append({"run": rid, "shard": "", "file": f"runs/{rid}/run.json",
                            "problem": str(err)})
                continue
            done = run.done()
            for name in names:
                if (rid, name) in self._repairing:
                    continue
                marker = run.folder / "done" / name
                if name not in done:
                    out.append({"run": rid, "shard": name, "file": f"runs/{rid}/done/{name}",
                                "problem": "done marker missing"})
                    continue
                try:
                    files = json.loads(marker.read_text()).get("files", {})
                except (ValueError, UnicodeDecodeError, AttributeError):
                    out.append({"run": rid, "shard": name, "file": f"runs/{rid}/done/{name}",
                                "problem": "done marker unreadable"})
                    continue
                for rel, rec in files.items():
                    problem = self._check_file(self.root / rel, rec)
                    if problem:
                        out.append({"run": rid, "shard": name, "file": rel, "problem": problem})
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

    def check(self, rid: str) -> None:
        """:meth:`verify` one run before its results are read.

        Raises:
            StoreError: a damaged shard: names the run, the shard, the file and the repair.
        """
        problems = self.verify([rid])
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            where = f"shard {first['shard']}: " if first["shard"] else ""
            raise StoreError(f"run {rid}: {where}{first['file']} {first['problem']}{more}; "
                             f"repair: xcomps-study verify --store {self.root} --repair")

    def repair(self, recompute, problems: list[dict] | None = None) -> list[dict]:
        """Recompute the damaged shards :meth:`verify` finds (or those of ``problems``), and only
        them (:func:`xcomps_utils.methods.repair` recomputes with the run's own model, dtype,
        device kind and parameters). The damaged shard's files and marker are moved to
        ``<root>/quarantine/<time>/`` (nothing is deleted); every other file stays as it is.

        Args:
            recompute: ``recompute(run)`` -> a function ``(shard name) -> (measures,
                details)`` for that run (called once per damaged run).

        Returns:
            one ``{"run", "shard", "moved"}`` per repaired shard.

        Raises:
            StoreError: a problem that is not a shard's (an unreadable run record), and what
                ``recompute`` raises.
        """
        problems = self.verify() if problems is None else problems
        damaged: dict[str, list[str]] = {}
        for pr in problems:
            if not pr["shard"]:
                raise StoreError(f"cannot repair run {pr['run']}: {pr['problem']}")
            damaged.setdefault(pr["run"], [])
            if pr["shard"] not in damaged[pr["run"]]:
                damaged[pr["run"]].append(pr["shard"])
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        out = []
        for rid, names in damaged.items():
            run = Run(self, rid)
            one = recompute(run)
            for name in sorted(names, key=lambda n: (n == "probes", n)):
                moved = self._quarantine(rid, name, stamp)
                self._repairing.add((rid, name))
                try:
                    measures, details = one(name)
                    run.commit_shard(name if name == "probes" else
                                     int(name.removeprefix("shard-")), measures, details)
                finally:
                    self._repairing.discard((rid, name))
                out.append({"run": rid, "shard": name, "moved": moved})
        return out

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
