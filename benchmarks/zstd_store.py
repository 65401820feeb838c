"""Re-encode a results store's Parquet files in the store's codec (``PARQUET_COMPRESSION``, zstd),
losslessly, for the shipped store to stay within 50 MB (issue 44).

Usage: ``python benchmarks/zstd_store.py [STORE] [JOURNAL]`` (default ``store``,
``benchmarks/audit-all.jsonl``).

Each file is written beside itself, read back and compared with the original table, schema
metadata included (``pyarrow.Table.equals``); only an equal file replaces it, and its record
(``run.json``'s ``pairs_file``, a done marker's ``files``) gets its new bytes and SHA-256. Values,
rows, run ids and a marker's ``finished`` and ``seconds`` stay as they were. A journal line of
``make audit-all`` names a unit by the SHA-256 of its done markers; a line whose unit was
re-encoded is added again under the new markers, with ``reencoded_from`` naming the old ones
(the old line stays). Files already in the codec are left alone, so a second run changes nothing.
"""
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from xcomps_utils.runs import audit
from xcomps_utils.runs.store import PARQUET_COMPRESSION, Store, _atomic_write, _write_json

root = Path(sys.argv[1] if len(sys.argv) > 1 else "store")
journal = Path(sys.argv[2] if len(sys.argv) > 2 else "benchmarks/audit-all.jsonl")
store = Store(root)


def digests():
    """Each audit unit's digest of its done markers, after verifying the store (the audit's
    check: raises naming the first problem)."""
    unshipped = audit._check(store)
    return {(u["run"], u["label"]): audit._unit_digest(store, u)[2]
            for u in audit.units(store, unshipped, by_language=False)}


def reencode(path: Path) -> dict | None:
    """The new ``{"bytes", "sha256"}`` of ``path`` re-encoded, or None if already in the codec."""
    meta = pq.ParquetFile(path).metadata
    codecs = {meta.row_group(i).column(j).compression
              for i in range(meta.num_row_groups) for j in range(meta.num_columns)}
    if codecs <= {PARQUET_COMPRESSION.upper()}:
        return None
    old = pq.read_table(path)

    def write(tmp):
        pq.write_table(old, tmp, compression=PARQUET_COMPRESSION)
        if not pq.read_table(tmp).equals(old, check_metadata=True):
            raise SystemExit(f"{path}: re-encoded table differs; left as it was")
    return _atomic_write(path, write)


before, size0 = digests(), sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
for rid in store.ids():
    folder = root / "runs" / rid
    record = json.loads((folder / "run.json").read_text())
    info = reencode(folder / "pairs.parquet")
    if info:
        record["pairs_file"].update(info)
        _write_json(folder / "run.json", record)
    for marker in sorted((folder / "done").iterdir()):
        done = json.loads(marker.read_text())
        changed = False
        for name, rec in done["files"].items():
            if name.endswith(".parquet") and (root / name).exists():
                info = reencode(root / name)
                if info:
                    rec.update(info)
                    changed = True
        if changed:
            _atomic_write(marker, lambda p, done=done: p.write_text(json.dumps(done)))
after = digests()
moved = {before[u]: after[u] for u in before if before[u] != after[u]}
added = 0
if journal.exists():
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    have = {(r["run"], r["shard"], r["markers_sha256"]) for r in lines}
    with open(journal, "a", encoding="utf-8") as f:
        for r in lines:
            new = moved.get(r["markers_sha256"])
            if new and (r["run"], r["shard"], new) not in have:
                f.write(json.dumps({**r, "markers_sha256": new,
                                    "reencoded_from": r["markers_sha256"]}) + "\n")
                added += 1
size1 = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
print(f"{root}: {size0:,} -> {size1:,} bytes; {len(moved)} of {len(before)} audit units re-encoded; "
      f"{added} journal line(s) carried to their new markers")
