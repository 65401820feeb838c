"""The first load of an embedded model: its GGUF converted into the user cache, with gguf's
tensor-name map built once per architecture (the shipped code) against the same conversion
building it for every module of the model, as transformers does (the baseline), side by side.

Each conversion runs in a fresh process with an empty cache (``XCOMPS_CACHE_DIR``, a temporary
folder); the CPU seconds (user + system) and the wall seconds of the process are printed, with
their ratio, and the SHA-256 of the converted weights and tokenizer, which must be equal.
Usage: ``.venv/bin/python benchmarks/conversion.py [--repeats N] [model ...]`` (default: both
embedded models, one repeat).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import sys, types
from xcomps_utils.lm import models
if sys.argv[2] == "baseline":  # the conversion's only lru_cache made a no-op: a map per module
    models.functools = types.SimpleNamespace(lru_cache=lambda maxsize=None: (lambda f: f))
models.load_model(sys.argv[1])
"""


def _digest(cache: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(cache.glob("models/*/*")):
        if f.suffix in (".safetensors", ".json") and f.name != "xcomps-manifest.json":
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def convert(model: str, variant: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
        subprocess.run([sys.executable, "-c", CHILD, model, variant], check=True,
                       env={**os.environ, "XCOMPS_CACHE_DIR": tmp},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"model": model, "variant": variant, "cpu_s": round(cpu, 1),
                "wall_s": round(time.time() - t0, 1), "files": _digest(Path(tmp))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["smollm2-135m-instruct", "gemma-3-270m"])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    for model in args.models:
        rows = [convert(model, v) for _ in range(args.repeats) for v in ("baseline", "shipped")]
        for r in rows:
            print(json.dumps(r))
        base = [r for r in rows if r["variant"] == "baseline"]
        new = [r for r in rows if r["variant"] == "shipped"]
        same = {r["files"] for r in rows}
        print(f"{model}: CPU {sum(r['cpu_s'] for r in base):.1f} s -> "
              f"{sum(r['cpu_s'] for r in new):.1f} s (ratio "
              f"{sum(r['cpu_s'] for r in new) / sum(r['cpu_s'] for r in base):.2f}); "
              f"converted files {'identical' if len(same) == 1 else 'DIFFER: ' + str(same)}")


if __name__ == "__main__":
    main()
