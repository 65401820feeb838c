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
# ones and plain `pytest` still runs everything (make test: the fast tier, then the slow tests but
# the long ones, LONG below, which make long runs). The other slow tests carry `@pytest.mark.slow`
# themselves: the chapters (tests/book/test_notebooks.py, a module-level mark) and the
# simulations of a decision rule over many generated data sets (null rates and power of the
# claims' tests, 100 to 300 simulated studies each, 7 to 95 CPU seconds; issue 29, measured with
# --durations; README, "Developing"), in tests/analysis/.
SLOW_FIXTURES = {"lm", "gemma"}


def _is_slow(item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and v in SLOW_FIXTURES for v in params.values())


#: test files whose tests share no fixture worth making once: under ``--dist loadgroup`` (the slow
#: and long tiers, Makefile) their tests spread over the workers one by one; every other file's tests stay
#: together in one worker (an ``xdist_group`` named by the file), so a model or a module fixture is
#: made once. The claim contract is 89 independent simulations, about 12 CPU minutes; the pages'
#: printed commands, one test per bash block, about 7 (one block alone, up to 3).
SPREAD = {"test_claim_contract.py", "test_printed_commands_run.py"}


#: the long tier (``make long``: ``.ci/run`` runs it after ``make test``, so CI checks everything
#: while ``make test`` stays under 25 minutes from a clean clone on 2 cores; issue 42): the slow
#: tests of these files are marked ``long`` too, and ``make test``'s slow tier leaves them out. They
#: check what the rest of the suite reaches more cheaply or what a change rarely touches, each by
#: running a whole path end to end (CPU seconds on 2 cores, CHANGELOG, session 28): the pages'
#: printed commands run as printed (354), the embedded-model cache killed, damaged and raced
#: during real conversions (188), ``make book``'s chapters with the model loader refused (122),
#: the study of a model nobody ships and the publish plans (121), and the Ray sweeps (47, plus
#: about 200 in Ray's workers, which pytest does not count).
LONG = {"test_printed_commands_run.py", "test_model_cache.py", "test_book_loads_no_model.py",
        "test_study.py", "test_sweep.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
        if item.path.name in LONG and item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.long)
        if item.path.name not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(str(item.path.relative_to(config.rootpath))))


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


# What a fresh interpreter with this `sitecustomize` on its PYTHONPATH is kept from doing, or made
# to record, so a test of a subprocess checks what it did instead of how long it took (a wall-clock
# bound fails on a busy machine and passes a slow regression on a quick one):
# with $XCOMPS_TEST_LOADS set, `xcomps_utils.lm.models.load_model` (every model load goes through
# it: the planner and the exercises import it when they call it) writes its arguments there and
# raises; with $XCOMPS_TEST_HOSTS set, every attempt to reach a host (`socket.getaddrinfo`, the
# first step of a TCP connection by socket, urllib, urllib3, httpx and the hub's clients) writes
# "host:port" there and goes on.
SITECUSTOMIZE = '''
import importlib.abc, importlib.machinery, os, socket, sys

NAME = "xcomps_utils.lm.models"


def _log(variable, line):
    with open(os.environ[variable], "a") as f:
        f.write(line + "\\n")


def _refuse(*args, **kwargs):
    _log("XCOMPS_TEST_LOADS", repr((args, kwargs)))
    raise RuntimeError(f"load_model{args} called: a model was loaded where none may be")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        module.load_model = _refuse


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Loader(spec.loader)
        return spec


if os.environ.get("XCOMPS_TEST_LOADS"):
    sys.meta_path.insert(0, _Finder())

if os.environ.get("XCOMPS_TEST_HOSTS"):
    _getaddrinfo = socket.getaddrinfo

    def _resolve(host, port, *args, **kwargs):
        _log("XCOMPS_TEST_HOSTS", f"{host}:{port}")
        return _getaddrinfo(host, port, *args, **kwargs)

    socket.getaddrinfo = _resolve
'''


class Guard:
    """A fresh interpreter's guard (:data:`SITECUSTOMIZE`): run the subprocess with
    :meth:`env`, then read :meth:`loads` (the ``load_model`` calls it made, each refused) and
    :meth:`hosts` (the ``host:port`` it tried to reach, in order)."""

    def __init__(self, folder: Path):
        self.site, self._loads, self._hosts = folder / "site", folder / "loads", folder / "hosts"
        self.site.mkdir()
        (self.site / "sitecustomize.py").write_text(SITECUSTOMIZE)

    def env(self, base=None, hosts: bool = False, **extra) -> dict:
        """``base`` (default ``os.environ``) with the guard on PYTHONPATH, loads refused, hosts
        recorded if ``hosts``, and ``extra``."""
        env = dict(os.environ if base is None else base)
        path = [str(self.site)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        env.update(PYTHONPATH=os.pathsep.join(path), XCOMPS_TEST_LOADS=str(self._loads), **extra)
        if hosts:
            env["XCOMPS_TEST_HOSTS"] = str(self._hosts)
        return env

    def loads(self) -> list[str]:
        return self._loads.read_text().splitlines() if self._loads.exists() else []

    def hosts(self) -> list[str]:
        return self._hosts.read_text().splitlines() if self._hosts.exists() else []


@pytest.fixture
def guard(tmp_path_factory) -> Guard:
    """A subprocess's guard: no model loads, and the hosts it tries to reach (:class:`Guard`)."""
    return Guard(tmp_path_factory.mktemp("guard"))
