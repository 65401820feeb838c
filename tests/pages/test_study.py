"""Issue 44 items 2-4: the study of one's own models (``xcomps-study study``, ``make book
MODELS=...``), its plan before anything is computed, and the rates the plan reads.

The plan is held to what the chapters do: at the publish sizes it names exactly the runs of the
shipped store (every run ``make book`` reads; the small chapters in the fast tier, every chapter in
the long one), and a real study of a model nobody ships beside SmolLM2 (a tiny Llama with
SmolLM2's tokenizer, built here) computes and reads exactly the runs its plan names, chapter by
chapter. That study is killed after its first chapter and resumed, and run a third time, which
computes nothing."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from xcomps_utils.pages import study
from xcomps_utils.runs.store import Store

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "store"
XCOMPS = Path(sys.executable).with_name("xcomps-study")
SMOL = "smollm2-135m-instruct"
#: chapters quick to plan at the publish sizes (no BMLAMA, grammar or XCOMPS-wide loading)
SMALL = ["direct_scoring", "first_token", "token_perplexity_method", "token_perplexity_results",
         "xcomps_token_level", "xcomps_token_level_agreement"]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "XCOMPS_PROBE_JOBS": "1",
            "CUDA_VISIBLE_DEVICES": "", **extra}


# --- the plan against the shipped store ------------------------------------------------------------

@pytest.mark.usefixtures("data_dir")
def test_the_publish_plan_of_the_small_chapters_is_in_the_shipped_store():
    """At the publish sizes, with each chapter's declared models, the plan's runs are runs of
    ``store/`` (the same ids the chapters read), each planned once and the rest reused."""
    planned = study.plan(None, "publish", str(SHIPPED), chapters_=SMALL,
                         measured=study.rates([SHIPPED]))
    assert set(planned["chapter"]) == set(SMALL)
    assert planned["run"].notna().all() and set(planned["run"]) <= set(Store(SHIPPED).ids())
    assert (planned["todo"] == 0).all() and (planned["seconds"] == 0).all()
    first = planned.drop_duplicates("run")
    assert (first["status"] == "stored").all()
    again = planned[planned.duplicated("run")]
    assert again["status"].str.startswith("computed by ").all() and len(again) >= 2
    # the direct-scoring page: every task by its first model, the BLiMP pairs by the second
    ds = planned[planned["chapter"] == "direct_scoring"]
    assert list(ds["model"]) == [SMOL, "gemma-3-270m", SMOL]
    assert list(ds["pairs"]) == [4000, 2000, 1000]


def test_a_changed_model_list_plans_new_runs_and_keeps_the_pairs(data_dir):
    """The same chapter with another model: the same pairs, new runs (none in the store)."""
    values = study.chapter_values("first_token", "publish", models=["random:" + SMOL])
    reqs = study.requests("first_token", values)
    assert [r.model for r in reqs] == ["random:" + SMOL] * 3
    assert [r.settings["bos_policy"] for r in reqs] == ["bos", "drop_first", "lm_eval"]
    declared = study.requests("first_token", study.chapter_values("first_token", "publish"))
    assert all(a.pairs.equals(b.pairs) for a, b in zip(reqs, declared))


def test_bmlama_controls_plan_each_models_untrained_control(data_dir):
    """``controls`` on (the publish size's): Direct of ``random:<model>`` on the same facts and
    control frames as each model, and Meta and Neuro of the first's; off (the smoke size's):
    none."""
    values = study.chapter_values("bmlama_languages", "smoke")
    assert not values["controls"] and values["models"] == [SMOL]
    values.update(languages17=["en", "vi"], languages53=["de", "zh"])  # two each: fewer samples
    reqs = study.requests("bmlama_languages", {**values, "controls": True})
    trained = [r for r in reqs if r.model == SMOL]
    control = [r for r in reqs if r.model == "random:" + SMOL]
    assert [r.methods for r in control] == [r.methods for r in trained]
    assert all(a.pairs.equals(b.pairs) for a, b in zip(control, trained))
    off = study.requests("bmlama_languages", {**values, "controls": False})
    assert [r.model for r in off] == [SMOL] * len(trained)


def _bmlama_runs(st: Store) -> set:
    """The runs of ``st`` whose pairs are BMLAMA facts."""
    return {r for r in st.ids() if pd.read_parquet(
        st.run(r).folder / "pairs.parquet", columns=["dataset"])["dataset"].str.startswith(
        "bmlama").all()}


@pytest.mark.slow
@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize("bmlama", [True, False], ids=["bmlama_languages", "the other chapters"])
def test_the_publish_plan_is_the_shipped_store(bmlama):
    """Every chapter at its publish size: the plan's runs are exactly the runs of ``store/``
    but the reproducibility page's five pairs (its command-line exercise reads them from
    ``store/`` itself, never from a study's store) and a run no page reads any more. In two parts, each under two minutes on one
    core: the BMLAMA chapter (its 70 pair sets load slowly) and its runs, the others and the
    rest."""
    st = Store(SHIPPED)
    chapters = [c for c in study.REQUESTS if (c == "bmlama_languages") == bmlama]
    planned = study.plan(None, "publish", str(SHIPPED), chapters_=chapters,
                         measured=study.rates([SHIPPED]))
    assert planned["run"].notna().all() and (planned["todo"] == 0).all()
    shipped = _bmlama_runs(st) if bmlama else set(st.ids()) - _bmlama_runs(st)
    assert set(planned["run"]) <= shipped
    rest = shipped - set(planned["run"])
    if bmlama:
        assert not rest
    else:  # the reproducibility page's five pairs, and the grammar exercise's earlier phenomenon
        # (its RuBLiMP task at publish size is now the first one the chapter leaves out)
        pairs = {r: pd.read_parquet(st.run(r).folder / "pairs.parquet") for r in rest}
        assert sorted((len(p), *p["task"].unique()) for p in pairs.values()) == [
            (5, "blimp_anaphor"), (200, "rublimp:subj_predicate_agreement_number_attractor")]


# --- rates and estimates -----------------------------------------------------------------------------

def test_rates_are_the_seconds_the_done_markers_record():
    measured = study.rates([SHIPPED, SHIPPED])  # a store named twice counts once
    st = Store(SHIPPED)
    total = sum(st.run(r).compute_seconds() for r in st.ids() if st.run(r).complete)
    assert abs(measured["seconds"].sum() + measured["finish_seconds"].sum() - total) < 1e-6
    runs = st.runs()
    assert measured["pairs"].sum() == runs[runs["status"] == "complete"]["pairs"].sum()
    neuro = measured[measured["method"] == "neuro"]
    assert (neuro["finish_seconds"] > 0).all() and (measured[measured["method"] == "direct"]
                                                    ["finish_seconds"] == 0).all()
    one = measured[(measured["model"] == SMOL) & (measured["method"] == "token_ppl")]
    assert set(one["dataset"]) >= {"blimp", "dust", "crows_pairs"} and (one["per_pair"] > 0).all()


def test_expected_seconds_say_where_they_come_from():
    measured = study.rates([SHIPPED])
    pairs = pd.DataFrame({"dataset": ["blimp"] * 10 + ["dust"] * 10,
                          "good": [f"g{i}" for i in range(20)], "bad": [f"b{i}" for i in range(20)],
                          "task": ["blimp_anaphor"] * 10 + ["dust"] * 10})
    rate = measured.set_index(["model", "method", "device", "dataset"])["per_pair"]
    secs, source = study.expected_seconds(SMOL, "direct", "cpu", pairs, {}, measured)
    assert source == "measured"
    assert secs == pytest.approx(10 * rate[SMOL, "direct", "cpu", "blimp"]
                                 + 10 * rate[SMOL, "direct", "cpu", "dust"])
    # a model the store never ran: the nearest measured model's rate scaled by parameters
    big = "meta-llama/Llama-3.2-3B"
    secs3, source3 = study.expected_seconds(big, "direct", "cpu", pairs, {}, measured)
    ratio = study.SHAPES[big].parameters / study.SHAPES["gemma-3-270m"].parameters
    assert source3.startswith("estimate (gemma-3-270m's rate x")
    gem = 10 * rate["gemma-3-270m", "direct", "cpu", "blimp"] + 10 * measured[
        (measured.model == "gemma-3-270m") & (measured.method == "direct")].pipe(
        lambda g: g.seconds.sum() / g.pairs.sum())  # no Gemma DUST run: its pooled rate
    assert secs3 == pytest.approx(gem * ratio)
    # on a GPU no store measured: the H200 throughput, by parameter count
    gpu, gsource = study.expected_seconds(big, "direct", "cuda", pairs, {}, measured)
    assert gsource.startswith("estimate (one H200")
    eight = study.SHAPES["meta-llama/Llama-3.1-8B-Instruct"].parameters
    assert gpu == pytest.approx(40 / 1581.0 * study.SHAPES[big].parameters / eight)
    nan, why = study.expected_seconds("someone/unknown-model", "direct", "cpu", pairs, {}, measured)
    assert nan != nan and why.startswith("unknown")


def test_shapes_count_the_parameters_of_the_configs():
    """The declared shapes are the parameter counts of the models' configs (norms left out):
    SmolLM2-135M has 134,515,008 parameters, 35,136 of them in its 61 norms of 576."""
    smol = study.SHAPES[SMOL]
    assert smol.parameters == 134_515_008 - 61 * 576 and (smol.layers, smol.hidden) == (30, 576)
    assert abs(study.SHAPES["meta-llama/Llama-3.1-8B-Instruct"].parameters / 8.03e9 - 1) < 0.001
    assert study.shape("random:" + SMOL + "@seed=3") == smol
    assert study.shape("someone/not-declared") is None


@pytest.mark.slow
def test_a_shape_from_a_folder_is_the_loaded_model_s(lm, gemma):
    """The formula on a real config (the embedded models' converted folders) is within 0.1% of
    the loaded model's parameter count."""
    for m in (lm, gemma):
        folder = Path(m.source["converted_to"])
        counted = sum(p.numel() for p in m.model.parameters())
        assert abs(study.shape(str(folder)).parameters / counted - 1) < 1e-3, m.name


# --- names, the checkout, the command ---------------------------------------------------------------

def test_a_study_names_its_folder_by_its_models_and_size(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert study.name([str(folder), SMOL], "smoke") == f"my-model+{SMOL}-smoke"
    assert study.name(["meta-llama/Llama-3.1-8B-Instruct"], "publish") == \
        "meta-llama--Llama-3.1-8B-Instruct-publish"
    assert study.name([f"random:{SMOL}@seed=2"], "smoke") == f"random-{SMOL}-seed2-smoke"
    many = study.name([f"org/model-with-a-long-name-{i}" for i in range(5)], "publish")
    assert len(many) <= 80 and many.endswith("-publish") and "+4-more-" in many
    assert study.checkout(tmp_path) == REPO  # the package's own checkout first


def test_the_command_line_has_the_study(tmp_path, monkeypatch):
    r = CliRunner().invoke(study.main, ["study", "--help"])
    assert r.exit_code == 0 and "--dry-run" in r.output and "--model" in r.output
    r = CliRunner().invoke(study.main, ["study", "--model", SMOL, "--size", "huge", "--dry-run"])
    assert r.exit_code == 1
    assert r.output.strip().endswith("the 'size' parameter must be one of 'smoke', 'publish'; "
                                     "got 'huge'")
    monkeypatch.setattr(study, "checkout", lambda start=None: None)
    r = CliRunner().invoke(study.main, ["study", "--model", SMOL, "--dry-run"])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1
    assert "runs in a checkout of the repository" in r.output


@pytest.mark.slow  # three make -n, each asking the chapters' declarations (about 30 s)
def test_make_book_with_models_is_the_study():
    """``make book MODELS=...``: the study's chapters into build/study/<name>, its store, its
    size (publish unless SIZE is given), the models passed to every chapter's parameters."""
    env = _env()
    out = subprocess.run(["make", "-n", "--no-print-directory", "book", f"MODELS=./x {SMOL}",
                          "STORE=/tmp/s", "SIZE=smoke", "STAMP=", "MATHJAX="], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True).stdout
    folder = f"build/study/x+{SMOL}-smoke"
    assert f"EXECUTED={folder}/book/executed STORE=/tmp/s" in out and "SIZE=smoke" in out
    assert f"render BOOK_DIR={folder}/book OUT={REPO}/{folder}" in out
    part = subprocess.run(["make", "-n", "--no-print-directory", "book", f"MODELS=./x {SMOL}",
                           "STORE=/tmp/s", "SIZE=smoke", "ONLY=first_token", "STAMP=", "MATHJAX="],
                          cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    assert '"CHAPTERS=first_token models"' in part and "render BOOK_DIR" not in part
    plain = subprocess.run(["make", "-n", "--no-print-directory", "book", "STAMP=", "MATHJAX="],
                           cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    assert "build/study" not in plain and "SIZE=publish STORE=store" in plain


# --- a study of a model nobody ships (slow) ------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, lm):
    """A 2-layer Llama (hidden size 32, seeded weights) with SmolLM2's tokenizer and chat
    template, saved as a folder: every language of every chapter tokenizes as SmolLM2's does."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("study") / "tiny-llama"
    lm.tokenizer.save_pretrained(folder)
    tok = lm.tokenizer
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, vocab_size=len(tok),
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         max_position_embeddings=8192, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        model = LlamaForCausalLM(config)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.3)
    model.save_pretrained(folder)
    return folder


def _files(store: Path) -> dict:
    return {str(p.relative_to(store)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in store.rglob("*") if p.is_file() and "locks" not in p.parts}


def _reads(executed: Path, chapter: str, store: Path) -> set:
    log = executed / "reads" / f"{chapter}.jsonl"
    return {r["run"] for r in map(json.loads, log.read_text().splitlines())
            if r["store"] == str(store.resolve())} if log.is_file() else set()


#: The fewest chapters that take every path of a study (the long tier): the first model's Direct,
#: Meta and Neuro (Neuro's probes: a finishing step) and the second model's Direct
#: (xcomps_results), token-level perplexity (token_perplexity_method), and the models page after
#: them. ``make study-check`` runs every chapter (``XCOMPS_STUDY_CHECK=1``).
PATHS = ["xcomps_results", "token_perplexity_method"]
EVERY = os.environ.get("XCOMPS_STUDY_CHECK") == "1"


@pytest.mark.slow
def test_a_study_of_a_model_nobody_ships(tiny_llama, tmp_path, data_dir):
    """The study command for a tiny Llama folder beside SmolLM2 at smoke size, from a folder
    outside the checkout: killed once its first chapter is done, run again (the finished chapter
    reused, no shard computed twice, every chapter executed without an error, the models page
    showing both models), its plan compared chapter by chapter with the runs each chapter read,
    and run a third time (nothing executed, the store's files unchanged). On :data:`PATHS` in
    the long tier; every chapter, and the book rendered, under ``make study-check``."""
    store = tmp_path / "store"
    models = [str(tiny_llama), SMOL]
    only = [] if EVERY else [a for c in PATHS for a in ("--chapter", c)]
    args = [str(XCOMPS), "study", "--model", str(tiny_llama), "--model", SMOL, "--size", "smoke",
            "--store", str(store), *only]
    pages_expected = len(study.REQUESTS) if EVERY else len(PATHS) + 1
    folder = REPO / "build" / "study" / study.name(models, "smoke")
    executed = folder / "book" / "executed"
    shutil.rmtree(folder, ignore_errors=True)
    env = _env(XCOMPS_DATA_DIR=str(data_dir), BOOK_JOBS="1")
    # 1. killed once its first chapter is done (run from elsewhere: the checkout is the package's)
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    first, seen = None, []
    for line in proc.stdout:
        seen.append(line)
        done = re.search(rf"chapter \d+/{pages_expected} (\w+) done in", line)
        if done:
            first = done.group(1)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert first is not None, "no chapter finished:\n" + "".join(seen[-40:])
    kept = {f: s for f, s in _files(store).items() if "/done/" in f}
    assert kept and not (executed / "models.ipynb").exists()
    # 2. the same command again: what the store holds is read, the finished chapter reused
    r = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert re.search(r"reused \(inputs unchanged: [\w ]*\b" + first + r"\b", r.stdout)
    assert all(_files(store)[f] == s for f, s in kept.items())  # no shard computed twice
    pages = {p.stem: json.loads(p.read_text()) for p in executed.glob("*.ipynb")}
    assert len(pages) == pages_expected
    for name, nb in pages.items():
        errors = [o for c in nb["cells"] for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert not errors, name
    shown = json.dumps(pages["models"])
    assert str(tiny_llama) in shown and SMOL in shown  # the models page: both models
    html = folder / "_build" / "html"
    if EVERY:
        assert (html / "models.html").is_file()
        assert f"the study's book: {html / 'index.html'}" in r.stdout
    else:
        assert not html.exists() and "a part of the study: not rendered" in r.stdout
    # 3. the plan names exactly what each chapter read, and the store holds all of it
    planned = study.plan(models, "smoke", str(store), chapters_=None if EVERY else PATHS)
    assert (planned["todo"] == 0).all(), planned[planned["todo"] > 0]
    for chapter, g in planned.groupby("chapter"):
        assert set(g["run"]) == _reads(executed, chapter, store), chapter
    assert set(planned["model"]) == set(models)
    # 4. a third time: nothing computed, nothing executed
    before = _files(store)
    r = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert f"{pages_expected} chapters: 0 executed" in r.stdout
    assert _files(store) == before


@pytest.mark.usefixtures("data_dir")
def test_a_dry_run_loads_no_model(tiny_folder, tmp_path, guard):
    """``--dry-run`` of a folder and an embedded model in a fresh interpreter whose model loader
    refuses and records every call (the ``guard`` fixture): the plan of the chapters asked for is
    printed, every run to compute, the folder's rate an estimate scaled from a measured model's,
    no loader called, nothing written."""
    s = tmp_path / "s"
    r = subprocess.run([str(XCOMPS), "study", "--model", str(tiny_folder), "--model", SMOL,
                        "--size", "smoke", "--store", str(s), "--chapter", "first_token",
                        "--chapter", "xcomps_results", "--dry-run"],
                       cwd=tmp_path, env=guard.env(_env()), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not guard.loads()
    out = r.stdout
    runs, todo = map(int, re.search(r"(\d+) runs, (\d+) to compute", out).groups())
    # first_token: 3 BOS conventions x 2 models; xcomps_results: Meta, Direct, Neuro and the
    # leaking-folds Neuro of the first model, Direct of the second
    assert (runs, todo) == (11, 11)
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["chapter", "model", "method", "pairs", "runs", "(compute/read)",
                                "minutes", "rate"]
    rows = {tuple(line.split()[:3]): line.split()[-1] for line in table[1:]}
    assert rows[("first_token", str(tiny_folder), "direct")] == "estimate"
    assert rows[("first_token", SMOL, "direct")] == "measured"
    assert ("xcomps_results", str(tiny_folder), "neuro") in rows
    assert f"estimate ({SMOL}'s rate x" in out or "estimate (gemma-3-270m's rate x" in out
    assert not s.exists()  # nothing written


def test_a_chapter_the_study_does_not_have_is_named():
    r = CliRunner().invoke(study.main, ["study", "--model", SMOL, "--chapter", "first_tokens",
                                        "--dry-run"])
    assert r.exit_code == 1
    (line,) = r.output.strip().splitlines()
    assert "the 'chapter[0]' parameter must be one of 'xcomps_results', " in line
    assert r.output.strip().endswith("got 'first_tokens'; did you mean 'first_token'?")
