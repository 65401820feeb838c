"""Peak memory of the Neuro extraction as the number of sentences doubles twice.

Extracts last-token hidden states at every layer for N, 2N and 4N sentences of the XCOMPS sample
(all seven languages, repeated with a numbered suffix when more are needed) and reports the peak
anonymous resident memory (RSS minus file-backed pages, so the memory-mapped states file, which
the kernel can page out, is not counted) above the loaded model, sampled every 10 ms.

    .venv/bin/python benchmarks/neuro_memory.py [--model gemma-3-270m] [--n 1050]
"""

import argparse
import tempfile
import threading
import time
from pathlib import Path

import psutil

from xcomps_utils import models, neuro, xcomps


def peak_rss_during(fn):
    proc, peak, done = psutil.Process(), [0], threading.Event()

    def sample():
        while not done.is_set():
            m = proc.memory_info()
            peak[0] = max(peak[0], m.rss - m.shared)  # anonymous memory: not the mapped file
            time.sleep(0.01)

    t = threading.Thread(target=sample)
    t.start()
    start = time.perf_counter()
    try:
        fn()
    finally:
        done.set()
        t.join()
    return peak[0], time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--n", type=int, default=1050, help="sentences in the first run")
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    lm = models.load_model(args.model)
    pairs = xcomps.load_languages(xcomps.SAMPLE_LANGUAGES)
    base = list(dict.fromkeys(list(pairs.good) + list(pairs.bad)))
    print(f"{args.model}; {len(base)} distinct sample sentences; batch size {args.batch_size}")
    print(f"{'sentences':>10} {'states file MB':>15} {'peak anonymous memory above model MB':>37} {'seconds':>8}")
    m = psutil.Process().memory_info()
    baseline = m.rss - m.shared
    with tempfile.TemporaryDirectory() as tmp:
        for k in (1, 2, 4):
            n = args.n * k
            texts = [base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base)})")
                     for i in range(n)]
            out = Path(tmp) / f"states_{n}.npy"
            peak, secs = peak_rss_during(lambda: neuro.last_token_states(
                lm, texts, out_path=out, batch_size=args.batch_size))
            print(f"{n:>10} {out.stat().st_size / 2**20:>15.1f} {(peak - baseline) / 2**20:>37.1f} "
                  f"{secs:>8.1f}")
            out.unlink()


if __name__ == "__main__":
    main()
