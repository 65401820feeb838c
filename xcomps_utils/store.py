"""The results store: every number this project computes, kept in one folder, never lost.

A *run* is one method on one set of pairs under one *key*: everything that can change a number
(model id and weights identity, dtype, device kind, first-token convention, the pairs' content
hash, the method and its parameters, the package version). Its id is readable and derived from the
key (``direct-smollm2-135m-instruct-1a2b3c4d5e6f``), so a run with any other key writes beside it.

Layout (plain parquet, numpy and JSON: pandas or DuckDB read it without this package)::

    <root>/runs/<run>/run.json            the key, the provenance, shard size and count, status
    <root>/runs/<run>/pairs.parquet       the pairs the run scores, in shard order
    <root>/runs/<run>/done/<shard>        empty marker, written after the shard's files
    <root>/measures/run=<run>/<shard>.parquet   long results (schema :data:`MEASURE_SCHEMA`)
    <root>/<detail>/run=<run>/<shard>.parquet   per-token or per-group detail of some methods
    <root>/states/run=<run>/<shard>.npy   Neuro hidden states ``[sentences, layers + 1, hidden]``

Work is written one finished *shard* (a fixed slice of the pairs) at a time; every file goes to a
temporary name and is renamed into place, and the shard's ``done`` marker comes last. A run killed
at any point (even ``kill -9``) resumes from its finished shards and computes only the rest. No
function here deletes or overwrites a finished shard or a completed run. Reading everything::

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
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__

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
    """The store's files contradict each other (a run folder written for another key)."""


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))


def run_id(key: dict) -> str:
    """Readable, key-derived id: ``<method>-<model>-<12 hex of SHA-256(key)>``."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "--", str(key.get("model", "model")))[-60:]
    digest = hashlib.sha256(_canonical(key).encode()).hexdigest()[:12]
    return f"{key.get('method', 'run')}-{model}-{digest}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _write_json(path: Path, obj) -> None:
    _atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=1, default=str,
                                                          ensure_ascii=False)))


def _shard_name(shard: int | str) -> str:
    return f"shard-{shard:05d}" if isinstance(shard, (int, np.integer)) else str(shard)


class Run:
    """One run's folder: its record, which shards are done, and writing a shard."""

    def __init__(self, store: "Store", rid: str):
        self.store, self.id = store, rid
        self.folder = store.root / "runs" / rid

    @property
    def record(self) -> dict:
        """``run.json``: key, provenance, shard size and count, status."""
        return json.loads((self.folder / "run.json").read_text())

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
        tables (``{name: DataFrame}``) and arrays (``{"states": ndarray}``), then its marker
        (which records ``seconds``, the shard's compute time, when given).

        Raises:
            StoreError: the shard is already done (finished work is never overwritten).
            ValueError: measures lack a schema column.
        """
        name = _shard_name(shard)
        if self.is_done(shard):
            raise StoreError(f"{self.folder}: shard {name} is already done; not overwriting it")
        for detail, value in (details or {}).items():
            path = self.store.root / detail / f"run={self.id}"
            if isinstance(value, np.ndarray):
                _atomic_write(path / f"{name}.npy", lambda p: np.save(open(p, "wb"), value))
            else:
                table = pa.Table.from_pandas(value.reset_index(drop=True), preserve_index=False)
                _atomic_write(path / f"{name}.parquet", lambda p: pq.write_table(table, p))
        if measures is not None:
            missing = [c for c in MEASURE_COLUMNS if c not in measures]
            if missing:
                raise ValueError(f"measures lack column(s) {missing}")
            table = pa.Table.from_pandas(measures[MEASURE_COLUMNS].reset_index(drop=True),
                                         schema=MEASURE_SCHEMA, preserve_index=False)
            _atomic_write(self.store.root / "measures" / f"run={self.id}" / f"{name}.parquet",
                          lambda p: pq.write_table(table, p))
        marker = self.folder / "done" / name
        _atomic_write(marker, lambda p: p.write_text(json.dumps(
            {"finished": _now(), "seconds": seconds})))

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
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

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
            raise KeyError(f"no run {rid!r} in {self.root} ({len(self._ids())} runs; see "
                           f"`xcomps-study ls --store {self.root}`)")
        return Run(self, rid)

    def _ids(self) -> list[str]:
        d = self.root / "runs"
        return sorted(p.parent.name for p in d.glob("*/run.json")) if d.is_dir() else []

    def runs(self) -> pd.DataFrame:
        """One row per run: id, method, status, shards done / total, pairs, model, weights,
        dtype, device, first-token convention, parameters, package version, created."""
        rows = []
        for rid in self._ids():
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
        d = self.root / folder / f"run={rid}"
        return sorted(d.glob(f"[!.]*{suffix}")) if d.is_dir() else []

    def measures(self, runs: list[str]) -> pd.DataFrame:
        """The measures of some runs, with a ``run`` column (:data:`MEASURE_SCHEMA`)."""
        frames = [pq.read_table(p).to_pandas().assign(run=rid)
                  for rid in runs for p in self._parts("measures", rid, ".parquet")]
        if not frames:
            return pd.DataFrame(columns=MEASURE_COLUMNS + ["run"])
        return pd.concat(frames, ignore_index=True)

    def detail(self, rid: str, name: str) -> pd.DataFrame:
        """A detail table of a run (e.g. ``direct_tokens``, ``ppl_groups``), shards in order."""
        frames = [pd.read_parquet(p) for p in self._parts(name, rid, ".parquet")]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def arrays(self, rid: str, name: str = "states") -> list[np.ndarray]:
        """The arrays of a run's shards, in shard order (memory-mapped)."""
        return [np.load(p, mmap_mode="r") for p in self._parts(name, rid, ".npy")]
