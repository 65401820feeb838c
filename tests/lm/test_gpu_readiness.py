"""Ready for the GPU: Neuro memory bounded whatever the sentence length, a token budget that counts
what the hooks hold, and ``benchmarks/gpu_check.py --smoke``."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from xcomps_utils.lm import encoding
from xcomps_utils.methods import neuro

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from neuro_memory import peak_memory, plain_forward  # noqa: E402


def test_token_budget_counts_what_the_hooks_hold(monkeypatch):
    """Llama-3.1-8B shapes in bf16 with 120 GB free: the hooks' [L + 1, H] float32 states per
    text (540,672 bytes) count as half of that per token, halving the budget here."""
    from transformers import LlamaConfig

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8)
    lm = SimpleNamespace(device=torch.device("cuda"),
                         model=SimpleNamespace(config=cfg, dtype=torch.bfloat16))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (120e9, 141e9))
    per_token = 2 * (6 * 4096 + 3 * 14336 + 2 * 1024 * 33)
    held = 33 * 4096 * 4
    assert encoding.default_token_budget(lm) == int(120e9 // 4 // per_token)
    assert encoding.default_token_budget(lm, held) == int(120e9 // 4 // (per_token + held // 2))
    assert encoding.resolve_token_budget(lm, "auto", held) == encoding.default_token_budget(lm, held)


def test_neuro_hooks_hold_no_sequence_memory(lm, monkeypatch):
    """Peak torch memory of the extraction above the plain forward pass stays at the [1, L + 1, H]
    buffer when the text doubles in length (the old ``h[:, -1]`` view kept every layer's
    [1, T, H] output: 31 x T x 576 x 4 bytes, 9 MB more at T = 128), and the automatic budget
    is asked with the hooks' bytes per text."""
    cfg = lm.model.config
    held = (cfg.num_hidden_layers + 1) * cfg.hidden_size * 4
    asked = []
    real = neuro.resolve_token_budget
    monkeypatch.setattr(neuro, "resolve_token_budget",
                        lambda lm_, budget, held_per_text=0: asked.append(held_per_text)
                        or real(lm_, budget, held_per_text))
    unit = lm.tokenizer(" A robin can fly.", add_special_tokens=False)["input_ids"]
    extra = []
    for length in (128, 256):
        ids = ([lm.tokenizer.bos_token_id] + unit * length)[:length]
        text = lm.tokenizer.decode(ids[1:])
        assert len(encoding.encode(lm.tokenizer, [text])[0].ids) == length
        t = torch.tensor([ids])
        _, floor, _ = peak_memory(lambda: plain_forward(lm, t))
        _, ours, _ = peak_memory(lambda: neuro.last_token_states(lm, [text]))
        extra.append(ours - floor)
    assert asked == [held, held]
    per_length_old = cfg.num_hidden_layers * cfg.hidden_size * 4  # bytes per token, old hook
    assert max(extra) < held + 2 ** 20, extra  # the buffer (+ small tensors), not T x layers
    assert extra[1] - extra[0] < 0.1 * per_length_old * 128, extra


@pytest.mark.slow
def test_gpu_check_smoke_table():
    """``gpu_check.py --smoke`` runs on a CPU and prints the one table: its columns and rows."""
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--smoke"],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["workload", "method", "items/s", "MFU", "peak MiB", "max abs diff (nats)",
                      "goal"]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert all(len(r) == len(header) for r in rows)
    methods = {(r[0], r[1]) for r in rows}
    for workload in ("sentences 8-24", "prompts 40-96"):
        for method in ("one at a time", "batch 32, fp32 log-softmax", "xcomps_utils"):
            assert (workload, method) in methods
    assert {("Meta-like prompts", "xcomps_utils, prefix reuse"),
            ("Meta-like prompts", "xcomps_utils, no prefix reuse")} <= methods
    neuro_rows = [r for r in rows if r[0] == "Neuro extraction"]
    assert len(neuro_rows) == 4 and all(float(r[4].replace(",", "")) > 0 for r in neuro_rows)
    by = {(r[0], r[1]): r for r in rows}
    ok = [r for r in rows if r[0].startswith("correctness")]
    assert len(ok) == 3 and all(r[6].endswith(": met") for r in ok), ok
    assert all(float(r[5]) <= 1e-5 for r in ok if "float32" in r[0])
    assert by[("Neuro extraction", "128 sentences, budget 128")][6].endswith("met")
    assert any(r[0].startswith("bf16 vs fp32") and "flips" in r[6] for r in rows)
    assert "Where the time goes" in out.stdout
