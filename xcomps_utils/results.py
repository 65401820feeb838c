"""Results as parquet files that carry their provenance.

The provenance (model id and revision, dtype, device, first-token convention, data checksums,
package and library versions, parameters, time) is stored as JSON in the parquet schema's
key-value metadata under ``xcomps_provenance``, so it travels with the numbers.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__

__all__ = ["environment", "provenance", "write_results", "read_results"]

_KEY = b"xcomps_provenance"


def environment() -> dict:
    """The software and machine a result is computed with: Python, this package, torch,
    transformers and pandas versions, the machine type, whether CUDA is available, CPU threads."""
    import torch
    import transformers

    return {"python": platform.python_version(), "xcomps_utils": __version__,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "pandas": pd.__version__, "machine": platform.machine(),
            "CUDA available": torch.cuda.is_available(), "CPU threads": torch.get_num_threads()}


def provenance(lm=None, datasets: dict | None = None, **parameters) -> dict:
    """Provenance record for a result.

    Args:
        lm: the :class:`~xcomps_utils.models.LanguageModel` used (or ``None``).
        datasets: ``{file name: sha256}`` of the data files read.
        **parameters: the run's parameters (bos_policy, batch size, seed, ...).
    """
    env = environment()
    record = {
        "package": "xcomps_utils", "package_version": __version__,
        "torch": env["torch"], "transformers": env["transformers"],
        "python": env["python"], "machine": env["machine"],
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "data_sha256": datasets or {}, "parameters": parameters,
    }
    if lm is not None:
        record.update(lm.provenance())
    return record


def write_results(df: pd.DataFrame, path: str | Path, provenance: dict) -> Path:
    """Write ``df`` to ``path`` (parquet) with ``provenance`` in its metadata; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_KEY] = json.dumps(provenance, default=str).encode()
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table.replace_schema_metadata(meta), tmp)
    tmp.replace(path)
    return path


def read_results(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """Read a results file: ``(frame, provenance)``.

    Raises:
        ValueError: the file carries no provenance (not written by :func:`write_results`).
    """
    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    if _KEY not in meta:
        raise ValueError(f"{path}: no {_KEY.decode()} metadata; not an xcomps_utils result")
    return table.to_pandas(), json.loads(meta[_KEY])
