import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _data_dir() -> Path | None:
    """$XCOMPS_DATA_DIR, else ../shared/data beside the checkout, unless $XCOMPS_NO_SHARED_DATA is
    set (tests only: it stands for a fresh clone without a data folder, where every test that
    reads the datasets must skip through the `data_dir` fixture; issue 43)."""
    env = os.environ.get("XCOMPS_DATA_DIR")
    if env:
        return Path(env)
    if os.environ.get("XCOMPS_NO_SHARED_DATA"):
        return None
    beside = REPO.parent / "shared" / "data"
    return beside if beside.is_dir() else None


# Tests that load a real model (the `lm` or `gemma` fixture, directly, through another fixture, or
# by name: a parameter "lm"/"gemma" passed to request.getfixturevalue) take seconds to minutes:
# they are marked `slow` here, by that rule, so `pytest -m "not slow"` (make check) runs the quick
# ones and plain `pytest` still runs everything (make test: the fast tier, then the slow). The
# other slow tests carry `@pytest.mark.slow` themselves: the chapters (tests/book/test_notebooks.py,
# a module-level mark) and the simulations of a decision rule over many generated data sets (null
# rates and power of the claims' tests, 100 to 300 simulated studies each, 7 to 95 CPU seconds;
# issue 29, measured with --durations; README, "Developing"), in tests/analysis/.
SLOW_FIXTURES = {"lm", "gemma"}


def _is_slow(item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and v in SLOW_FIXTURES for v in params.values())


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The offline data folder (XCOMPS_DATA_DIR, else ../shared/data beside the checkout)."""
    d = _data_dir()
    if d is None or not (d / "blimp").is_dir():
        pytest.skip("no offline data: set XCOMPS_DATA_DIR (see README)")
    return d


@pytest.fixture(autouse=True)
def _data_env(monkeypatch):
    d = _data_dir()
    if d is not None:
        monkeypatch.setenv("XCOMPS_DATA_DIR", str(d))


@pytest.fixture(scope="session")
def lm():
    from xcomps_utils.lm.models import load_model

    return load_model("smollm2-135m-instruct", device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def gemma():
    """Gemma-3-270M (embedded, cached after its first conversion); skipped if not installed."""
    from xcomps_utils.lm.models import load_model

    try:
        return load_model("gemma-3-270m", device="cpu", dtype="float32")
    except ModuleNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory) -> Path:
    """A tiny model folder (2-layer Llama, hidden size 32, seeded weights standing in for trained
    ones) with a byte-level BPE tokenizer of 300 tokens and a chat template, built here in a
    second: what ``random:<folder>`` reads, without a real model."""
    import torch
    from tokenizers import Tokenizer, decoders, models as tm, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny") / "model"
    words = Tokenizer(tm.BPE())
    words.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    words.decoder = decoders.ByteLevel()
    words.train_from_iterator(
        ["The cat sat on the mat.", "A robin can fly.", "Amanda was respected by waitresses."],
        trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"],
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, vocab_size=len(tokenizer),
                         bos_token_id=0, eos_token_id=1, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        model = LlamaForCausalLM(config)
        with torch.no_grad():  # not the initialiser's draw: trained weights stand apart from it
            for p in model.parameters():
                p.normal_(0, 0.3)
    model.save_pretrained(folder)
    return folder


@pytest.fixture
def store_of():
    """Results stores made of real runs of the shipped store (``store/``): ``store_of(root,
    runs)`` copies the runs' records, pairs and measures into ``root`` (beside what it holds),
    ``shipped.json`` naming the folders they were copied without, and returns the
    :class:`~xcomps_utils.runs.store.Store`."""
    import json
    import shutil

    from xcomps_utils.runs.store import SHIPPED, Store

    shipped_store = REPO / "store"

    def copy(root: Path, runs: list[str]):
        root = Path(root)
        record = json.loads((shipped_store / SHIPPED).read_text())
        omitted = (json.loads((root / SHIPPED).read_text())["omitted"]
                   if (root / SHIPPED).exists() else {})
        for r in runs:
            shutil.copytree(shipped_store / "runs" / r, root / "runs" / r)
            shutil.copytree(shipped_store / "measures" / f"run={r}", root / "measures" / f"run={r}")
            omitted[r] = sorted({*record["omitted"].get(r, []), *(
                p.name for p in shipped_store.iterdir()
                if p.name != "measures" and (p / f"run={r}").is_dir())})
        (root / SHIPPED).write_text(json.dumps({**record, "omitted": omitted}))
        return Store(root)

    return copy
