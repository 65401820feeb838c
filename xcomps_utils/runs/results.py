"""The provenance of a result: the software, the machine, the model, the data and the parameters.

:func:`provenance` is the record a run of the results store (:mod:`xcomps_utils.runs.store`) keeps
beside its numbers: model id and revision, dtype, device, data checksums, package and library
versions, parameters and time.
"""

from __future__ import annotations

import datetime as _dt
import platform

import pandas as pd

from .. import __version__, paths

__all__ = ["environment", "provenance"]


def environment() -> dict:
    """The software and machine a result is computed with: Python, this package, torch,
    transformers and pandas versions, the machine type, whether CUDA is available, CPU threads,
    and MKL's reproducibility mode (:func:`xcomps_utils.lm.precision.mkl_mode`)."""
    import torch
    import transformers

    from ..lm.precision import mkl_mode

    return {"python": platform.python_version(), "xcomps_utils": __version__,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "pandas": pd.__version__, "machine": platform.machine(),
            "CUDA available": torch.cuda.is_available(), "CPU threads": torch.get_num_threads(),
            "MKL_CBWR": mkl_mode()}


def provenance(lm=None, datasets: dict | None = None, **parameters) -> dict:
    """Provenance record for a result.

    Args:
        lm: the :class:`~xcomps_utils.lm.models.LanguageModel` used (or ``None``).
        datasets: ``{file name: sha256}`` of the data files read.
        **parameters: the run's parameters (bos_policy, batch size, seed, ...).
    """
    env = environment()
    record = {
        "package": "xcomps_utils", "package_version": __version__,
        "torch": env["torch"], "transformers": env["transformers"],
        "python": env["python"], "machine": env["machine"], "mkl_cbwr": env["MKL_CBWR"],
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "data_sha256": datasets or {}, "parameters": parameters,
    }
    if paths.chapter():  # the page that computed it (the Makefile's chapter rule)
        record["chapter"] = paths.chapter()
    if lm is not None:
        record.update(lm.provenance())
    return record
