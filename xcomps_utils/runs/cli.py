"""The ``xcomps-study`` command line: run methods into a results store, list and verify what it
holds.

Every option that takes a parameter shared with the sweep files, the chapters and
:func:`xcomps_utils.runs.execute.run` (seed, token budget, device, dtype, model, sizes, source,
BOS policy, methods) is checked by its type declared in :mod:`xcomps_utils.declare`
(:class:`Declared`), so a bad value gets the same line everywhere: ``the 'seed' parameter must
be an integer from 0 to 4294967295; got -5``.

Exit codes:

* 0: done;
* 1: an error the package raised on purpose (an :class:`~xcomps_utils.errors.XcompsError`: a
  bad parameter, unknown model, missing data, a damaged or unwritable store, a device this
  machine lacks), told in one line on stderr that says what and what to do;
* 2: a usage error (click's: an unknown option, a missing argument, ``--task`` with
  ``--languages``);
* 70 (:data:`BUG`, ``EX_SOFTWARE``): any other exception, a bug: the traceback and where to
  report it, on stderr.

``xcomps-study --debug ...`` (or ``XCOMPS_DEBUG=1``) shows the traceback of an error of exit
code 1 too. Progress goes to stderr, results to stdout.
"""

from __future__ import annotations

import re
import sys

import click

from .. import __version__, declare
from ..errors import XcompsError
from ..methods import config as C
from ..methods.registry import METHODS

STORE_HELP = "results store folder (created if missing)"
#: The exit code of an unexpected exception, a bug (``EX_SOFTWARE`` of BSD's sysexits.h).
BUG = 70


def _split(values) -> list[str]:
    """``("a,b", "c", "a")`` -> ``["a", "b", "c"]`` (each once, in order)."""
    return list(dict.fromkeys(v.strip() for value in values for v in value.split(",")
                              if v.strip()))


def _one_line(err: BaseException) -> str:
    """The error's message in one line (its type too where it has no message)."""
    return " ".join(str(err).split()) or type(err).__name__


class _Group(click.Group):
    """The package's own errors (:class:`~xcomps_utils.errors.XcompsError`) end in one line and
    exit code 1 (the traceback first with ``--debug``); any other exception is a bug: its
    traceback, where to report it, exit code :data:`BUG`. Click's usage errors keep exit code
    2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except XcompsError as err:
            if ctx.params.get("debug"):
                import traceback

                traceback.print_exc()
            raise click.ClickException(_one_line(err)) from err
        except Exception:  # noqa: BLE001 - anything else is a bug
            import traceback

            traceback.print_exc()
            click.echo(f"xcomps-study {__version__}: an unexpected error, a bug: please report it "
                       f"to the project's issue tracker with the traceback above and the "
                       f"command that gave it (exit code {BUG})", err=True)
            ctx.exit(BUG)


class Declared(click.ParamType):
    """An option's value checked by a type declared in :mod:`xcomps_utils.declare` (the one the
    sweep files, the chapters and :func:`xcomps_utils.runs.execute.run` use): the text given is
    taken as the integer or ``None`` it spells where the type wants one (``--seed 5``,
    ``--token-budget none``), then checked; a bad value raises the same
    :class:`~xcomps_utils.declare.ParameterError` (exit code 1) as anywhere else.

    Args:
        kind: the declared type; metavar: what ``--help`` shows; choices: the values to list
            (and complete).
    """

    def __init__(self, kind, metavar: str, choices=()):
        self.kind, self.name, self.choices = kind, metavar, tuple(choices)

    def get_metavar(self, param, ctx=None):
        return "[" + "|".join(self.choices) + "]" if self.choices else self.name

    def convert(self, value, param, ctx):
        name = param.name if param is not None else "value"
        if not isinstance(value, str):
            return declare.check(self.kind, value, name)
        try:
            return declare.check(self.kind, value, name)
        except declare.ParameterError as err:
            if re.fullmatch(r"[+-]?\d+", value.strip()):
                return declare.check(self.kind, int(value), name)
            if value.strip().lower() in ("none", "null"):
                return declare.check(self.kind, None, name)
            raise err from None

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(c) for c in self.choices if c.startswith(incomplete)]


SEED = Declared(declare.Seed, "INTEGER")
SIZE = Declared(declare.Size, "INTEGER")
DEVICE = Declared(declare.Device, "auto|cpu|cuda|cuda:N|mps")


def _quiet_loading() -> None:
    """No weight-loading, conversion or download bars (transformers, huggingface_hub, and the
    plain tqdm bars of transformers' GGUF conversion: ``TQDM_DISABLE``, read when tqdm is first
    imported, so this is called before the package's modules are)."""
    import os

    os.environ.setdefault("TQDM_DISABLE", "1")
    import huggingface_hub.utils
    import transformers

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xcomps-study")
@click.option("--debug", is_flag=True, envvar="XCOMPS_DEBUG",
              help="show the traceback of an error (default: one line, exit code 1)")
def main(debug):
    """Score minimal pairs (Direct, Meta, Neuro, token-level perplexity) into a results store.

    \b
    Examples:
      xcomps-study run direct --task blimp_anaphor --n-pairs 200
      xcomps-study run meta direct neuro --languages en,de,zh --items-per-language 8 \\
          --model gemma-3-270m
      xcomps-study ls
      xcomps-study verify --repair
    """
    from .. import paths
    from .store import log_reads

    if paths.read_log() is not None:  # run inside a chapter's build: log reads with the chapter's
        log_reads(paths.read_log())


@main.command("run")
@click.argument("methods", nargs=-1, required=True,
                type=Declared(C.MethodName, "METHOD", METHODS))
@click.option("--task", "--tasks", "tasks_", multiple=True, metavar="NAME[,NAME]",
              help="minimal-pair task(s), xcomps:<lang> among them; see `xcomps-study tasks`")
@click.option("--languages", multiple=True, metavar="ISO[,ISO]",
              help="XCOMPS languages (instead of --task)")
@click.option("--source", type=Declared(declare.Source, "SOURCE", declare.SOURCES),
              default="sample",
              show_default=True, help="XCOMPS data: the project's sample or the pinned upstream")
@click.option("--items-per-language", type=SIZE, default=None,
              help="XCOMPS concept-property items per language (default: all)")
@click.option("--n-pairs", type=SIZE, default=None,
              help="pairs per task, seeded sample (default: all)")
@click.option("--model", type=Declared(declare.Model, "NAME"), default="smollm2-135m-instruct",
              show_default=True,
              help="embedded name, local folder or Hugging Face id; random:<model>[@seed=N] "
                   "is its untrained control (same architecture and tokenizer, weights drawn "
                   "by its initialiser)")
@click.option("--device", type=DEVICE, default="auto", show_default=True,
              help="auto, cpu, cuda, cuda:1, ...")
@click.option("--dtype", type=Declared(declare.Dtype, "DTYPE", C.DTYPES),
              default="auto", show_default=True)
@click.option("--token-budget", type=Declared(declare.TokenBudget, "auto|none|INTEGER"),
              default="auto", show_default=True, help="tokens per forward pass")
@click.option("--bos-policy", type=Declared(declare.BosPolicy, "POLICY", C.bos_policies()),
              default="bos",
              show_default=True, help="Direct's first-token convention")
@click.option("--use-chat-template", is_flag=True, help="Meta prompts through the chat template")
@click.option("--wordings", multiple=True, metavar="ID[,ID]",
              help="token-level perplexity wordings (default: all)")
@click.option("--shard-size", type=SIZE, default=None,
              help="pairs per shard, the unit of resuming (default: per method)")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="sampling and Neuro's folds (0 to 2**32 - 1)")
@click.option("--store", default="results", show_default=True, help=STORE_HELP)
@click.option("--truncate", is_flag=True,
              help="cut texts longer than the model's context (with a warning) instead of failing")
@click.option("--quiet", is_flag=True, help="no progress bars (scoring and weight loading)")
def run_cmd(methods, tasks_, languages, source, items_per_language, n_pairs, model, device, dtype,
            token_budget, bos_policy, use_chat_template, wordings, shard_size, seed, store,
            truncate, quiet):
    """Run METHODS (direct, meta, neuro, token_ppl) on tasks or XCOMPS languages.

    A run already complete in the store is read, an interrupted one resumes from its finished
    shards, anything else is computed. Prints one line per run and the accuracy per task.
    """
    if quiet:
        _quiet_loading()
    from ..lm.models import check_model
    from . import execute as M, planner
    from .store import Store

    tasks_, languages = _split(tasks_), _split(languages)
    if bool(tasks_) == bool(languages):
        raise click.UsageError("give either --task or --languages")
    if languages and n_pairs is not None:
        raise click.UsageError("--n-pairs is for tasks; XCOMPS samples whole items: use "
                               "--items-per-language")
    methods = list(dict.fromkeys(methods))
    for m in methods:
        prefixes = METHODS[m].task_prefixes
        if METHODS[m].needs == "xcomps" and not all(t.startswith(prefixes) for t in tasks_):
            raise click.UsageError(f"{m}: {METHODS[m].why}: use --languages, or --task "
                                   + " / ".join(f"{p}<lang>" for p in prefixes))
    _unused(methods, wordings=wordings, use_chat_template=use_chat_template,
            bos_policy=bos_policy)
    if wordings and not _split(wordings):
        raise click.ClickException(f"--wordings {','.join(wordings)!r} names no wording; give "
                                   f"wording ids (default: all)")
    # before any data is read or model loaded: the pair set (as a sweep file's), the model
    # name and the store (the device and dtype were checked as the options were read)
    if languages:
        declare.validate(C.Languages, {"languages": languages, "source": source,
                                       "items_per_language": items_per_language})
    else:
        declare.validate(C.Tasks, {"tasks": tasks_, "n_pairs": n_pairs})
    check_model(model)
    planner.check_model_folder(model)
    Store(store)
    selected = planner.select(methods, tasks_, languages, source, items_per_language, n_pairs,
                              seed)
    for s in selected:
        res = M.run(model, s.pairs, s.methods, store=store, device=device, dtype=dtype,
                    bos_policy=bos_policy, token_budget=token_budget,
                    use_chat_template=use_chat_template,
                    wordings=_split(wordings) or "all", shard_size=shard_size, seed=seed,
                    progress=not quiet, truncate=truncate)
        for m in s.methods:
            how = (f"computed {res.computed[m]} shard(s)" if res.computed[m]
                   else "read from the store")
            click.echo(f"{res.runs[m]}: {len(s.pairs)} pairs, {how}")
        summary = planner.summary(res.measures)
        if len(summary):
            click.echo(summary.to_string(index=False))


def method_flags() -> dict[str, tuple[str, tuple[str, ...], object]]:
    """The options of `xcomps-study run` that only some methods read (each method's
    ``Method.flags``): ``{parameter: (flag, the methods reading it, default)}``."""
    out = {}
    for name, method in METHODS.items():
        for parameter, (flag, default) in method.flags.items():
            _, readers, _ = out.get(parameter, (flag, (), default))
            out[parameter] = (flag, readers + (name,), default)
    return out


def _unused(methods, **given) -> None:
    """A flag given a value that none of ``methods`` reads is an error (rc 1), not ignored."""
    flags = method_flags()
    for name, value in given.items():
        flag, readers, default = flags[name]
        if value != default and not set(readers) & set(methods):
            raise click.ClickException(f"{flag} is read only by {', '.join(readers)}; the "
                                       f"methods given ({', '.join(methods)}) do not use it: "
                                       f"drop it or add {readers[0]}")


def _store(store: str):
    """The results store of ``--store``, which must exist and be one (rc 1 otherwise)."""
    from .store import Store

    st = Store(store)
    if not st.root.exists():
        raise click.ClickException(f"no results store at {store!r} (no such folder); pass the "
                                   f"store folder with --store")
    if not st.is_store():
        raise click.ClickException(f"{store!r} is not a results store (it has no runs/ folder "
                                   f"and no results folders); pass the store folder with --store")
    return st


@main.command("sweep")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--executor", type=Declared(C.Executor, "EXECUTOR", C.EXECUTORS), default=None,
              help="override the file's executor (auto: Ray if installed, else one process)")
@click.option("--address", default=None,
              help="Ray cluster to join (auto, ray://head:10001); default: the file's ray.address")
@click.option("--store", default=None, help="override the file's store")
@click.option("--dry-run", is_flag=True, help="validate, print the runs and shards, compute nothing")
@click.option("--quiet", is_flag=True, help="no progress bar")
def sweep_cmd(file, executor, address, store, dry_run, quiet):
    """Run the sweep FILE (YAML: models x data x methods) on Ray or in one process.

    Its runs are the runs `xcomps-study run` makes of the same selection: finished shards are
    kept, a complete run is read. See the book's "Sweeps" page for the file's fields.
    """
    if quiet:
        _quiet_loading()
    from . import sweep as SW

    sw = SW.load_sweep(file)
    if dry_run:
        specs = SW.plan(sw, store)
        click.echo(SW.describe(sw, specs).to_string(index=False))
        click.echo(f"{len(specs)} runs, {sum(s.n_shards for s in specs)} shards, store "
                   f"{specs[0].store if specs else store or sw.store}")
        return
    res = SW.run_sweep(sw, executor=executor, address=address, store=store,
                       progress=not quiet)
    for r in res.runs.itertuples():
        how = f"computed {r.computed} shard(s)" if r.computed else "read from the store"
        click.echo(f"{r.run}: {r.pairs} pairs ({r.data}), {how}")
    summary = res.summary()
    if len(summary):
        click.echo(summary.to_string(index=False))
    click.echo(f"{len(res.runs)} runs in {res.store}: {res.wall_s:.1f} s on {res.executor} "
               f"({res.replicas} replica(s))")


@main.command("ls")
@click.option("--store", default="results", show_default=True, help=STORE_HELP)
@click.option("--method", default=None, type=Declared(C.MethodName, "METHOD", METHODS),
              help="only runs of this method")
@click.option("--json", "as_json", is_flag=True, help="one JSON record per run")
def ls_cmd(store, method, as_json):
    """List the runs in a results store, with their provenance. A run whose record cannot be
    read (or names another run), a run folder without its record and results no record owns
    (``Store.unowned``) are named on stderr, the others are listed; exit code 1 then."""
    import pandas as pd

    from .store import Run, StoreError

    st = _store(store)
    runs = st.runs()
    bad = runs[runs.status.isin(["unreadable", "misnamed"])]
    lost = st.unowned()
    runs = runs.drop(bad.index)
    if method:
        runs = runs[runs.method == method]
    if as_json:
        click.echo(runs.to_json(orient="records", lines=True), nl=False)
    elif not len(runs) and not len(bad) and not lost:
        click.echo(f"{store}: no runs" + (f" of {method}" if method else ""))
    elif len(runs):
        with pd.option_context("display.width", 200, "display.max_colwidth", 48):
            click.echo(runs.drop(columns=["parameters"]).to_string(index=False))
    whys = []
    for rid in bad.run:
        try:
            Run(st, rid).record
            whys.append((rid, f"runs/{rid}/run.json records another run (a renamed or copied "
                              f"folder)"))
        except StoreError as err:
            whys.append((rid, str(err)))
    whys += [(u["file"], f"{u['file']} {u['problem']}") for u in lost]
    if whys:
        more = (f" (and {len(whys) - 1} more: {', '.join(r for r, _ in whys[1:])})"
                if len(whys) > 1 else "")
        raise click.ClickException(f"{whys[0][1]}{more}; see `xcomps-study verify --store "
                                   f"{store}`")


@main.command("verify")
@click.option("--store", default="results", show_default=True, help="results store folder")
@click.option("--repair", is_flag=True,
              help="recompute the damaged shards (only those; damaged files are moved to "
                   "<store>/quarantine/, nothing is deleted)")
@click.option("--device", type=DEVICE, default="auto", show_default=True,
              help="where --repair loads a run's model (auto: the run's device kind)")
@click.option("--quiet", is_flag=True, help="no progress bars")
def verify_cmd(store, repair, device, quiet):
    """Check every run of a store against its record: each shard's files present, with the rows
    and SHA-256 written when it was committed. Names each damaged shard and file; exit code 1
    if any is damaged (and not repaired)."""
    if quiet:
        _quiet_loading()
    from .execute import repair as repair_runs, verify

    st = _store(store)
    problems = verify(st)
    for pr in problems:
        where = f"{pr['shard']}: " if pr["shard"] else ""
        click.echo(f"{pr['run'] or store}: {where}{pr['file']} {pr['problem']}")
    n_runs = len(st.ids())
    if not problems:
        click.echo(f"{store}: {n_runs} run(s), every shard as recorded")
        return
    shards = {(pr["run"], pr["shard"]) for pr in problems if pr["repair"] == "recompute"}
    foreign = [pr for pr in problems if pr["repair"] == "move"]
    manual = [pr for pr in problems if not pr["repair"]]
    told = [f"{len(shards)} damaged shard(s) in {len({r for r, _ in shards})} run(s)"] * bool(
        shards) + [f"{len(foreign)} foreign file(s)"] * bool(foreign)
    if manual:
        raise click.ClickException(
            f"{len(manual)} problem(s) no repair can fix (each says what to do)"
            + (f", and {' and '.join(told)} --repair would fix after them" if told else ""))
    if not repair:
        raise click.ClickException(f"{' and '.join(told)}; repair: xcomps-study verify --store "
                                   f"{store} --repair")
    for r in repair_runs(st, problems, device=device):
        if r["shard"]:
            click.echo(f"{r['run']}: {r['shard']} recomputed ({len(r['moved'])} damaged "
                       f"file(s) moved to {st.root / 'quarantine'})")
        else:
            click.echo(f"{r['run'] or store}: {r['moved'][0]} moved to "
                       f"{st.root / 'quarantine'}")
    left = verify(st)
    if left:
        raise click.ClickException(f"{len(left)} problem(s) left after the repair, e.g. "
                                   f"{left[0]['run'] or store}: {left[0]['file']} "
                                   f"{left[0]['problem']}")
    click.echo(f"{store}: repaired {len(shards)} shard(s), moved {len(foreign)} foreign "
               f"file(s); every shard as recorded")


@main.command("ship")
@click.argument("dest")
@click.option("--store", default="results", show_default=True, help="results store to ship from")
@click.option("--run", "runs", multiple=True, metavar="ID[,ID]",
              help="runs to ship (default: every complete run)")
@click.option("--omit", multiple=True, metavar="FOLDER[:ID,...]",
              help="a folder to leave out besides the hidden states (never shipped): "
                   "direct_tokens, ppl_tokens, ..., of every run or of the runs named after the "
                   "colon; repeat it")
@click.option("--reads", type=click.Path(file_okay=False), default=None,
              help="ship what the chapters read, as they logged it (the Makefile's "
                   "$(EXECUTED)/reads): those runs, each without the folders no chapter read")
@click.option("--check/--no-check", default=True, show_default=True,
              help="before copying, recompute a sample of the shards to ship (xcomps-study "
                   "audit's rules): every shard of a small store, else enough that a store with "
                   "1 shard in 20 wrong shows one with probability 0.99")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="the seed of the check's draw")
def ship_cmd(dest, store, runs, omit, reads, check, seed):
    """Copy complete runs of a store into DEST, the store a repository ships, leaving out
    folders no page reads (hidden states by default); DEST/shipped.json records what each run
    was shipped without, so `xcomps-study verify --store DEST` accepts their absence and a page
    that reads one is told so. A run DEST already holds is skipped; nothing there is
    overwritten."""
    st = _store(store)
    ids = _split(runs) or None
    every, per_run = {"states"}, {}
    for o in omit:
        folder, _, which = o.partition(":")
        for rid in _split([which]) if which else []:
            per_run.setdefault(rid, set()).add(folder)
        if not which:
            every.add(folder)
    read = {}
    if reads is not None:
        from .store import reads as read_log

        read = read_log(reads, st.root)
        if not read:
            raise click.ClickException(f"{reads}: no chapter logged a read of {store} there; "
                                       f"execute the chapters with make first")
        ids = [r for r in (ids or read) if r in read]
    chosen = ids if ids is not None else [r for r in st.ids() if st.run(r).complete]
    present = {d.parent.name for rid in chosen for d in st.root.glob(f"*/run={rid}")}
    unknown = sorted((every | {f for v in per_run.values() for f in v}) - present - {"states"})
    if unknown:
        raise click.ClickException(f"--omit {', '.join(unknown)}: no run shipped has such a "
                                   f"folder (they have: {', '.join(sorted(present - {'runs'}))})")

    def left_out(rid):
        unread = set()
        if rid in read:
            unread = {d.parent.name for d in st.root.glob(f"*/run={rid}")} - read[rid] - {
                "runs", "quarantine", "measures"}
        return every | per_run.get(rid, set()) | unread

    if check:
        _ship_check(st, dest, chosen, seed)
    table = st.ship(dest, chosen, {rid: left_out(rid) for rid in chosen})
    for r in table.itertuples():
        left = f", without {', '.join(r.omitted)}" if r.omitted else ""
        click.echo(f"{r.run}: {r.shipped}{left} ({r.bytes / 2**20:.1f} MiB)")
    click.echo(f"{dest}: {len(table)} run(s), {table.bytes.sum() / 2**20:.1f} MiB copied")


def _ship_check(st, dest, chosen: list[str], seed: int) -> None:
    """``ship --check``: the runs DEST does not hold yet, audited in the source store before a
    file is copied (:func:`xcomps_utils.runs.audit.ship_sample_size` units, whole); fails naming
    the shard and measure."""
    from pathlib import Path

    from . import audit as A

    held = {p.parent.name for p in (Path(dest) / "runs").glob("*/run.json")}
    new = [r for r in chosen if r not in held]
    if not new:
        return
    _quiet_loading()
    candidates = A.units(st, set(), new)
    # one shard a run, then a uniform draw of the size that finds 1 bad shard in 20
    n = len(new) + A.ship_sample_size(len(candidates)) if candidates else 0
    click.echo(f"ship: checking {min(n, len(candidates))} of the {len(candidates)} shard(s) of "
               f"{len(new)} run(s) to ship, recomputed (seed {seed}; 1 wrong shard in 20 would "
               f"show with probability >= 0.99)", err=True)
    table = A.audit(st, sample=min(n, len(candidates)), seed=seed, runs=new,
                    log=lambda line: click.echo(line, err=True))
    bad = A.failures(table)
    if len(bad):
        raise click.ClickException("ship: nothing copied: " + A.failure_line(bad.iloc[0]) + (
            f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))


@main.command("audit")
@click.argument("store", type=click.Path())
@click.option("--sample", type=SIZE, default=None,
              help="shards to recompute in all (default and minimum: one per run)")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="the seed of the draw (make audit: the commit's)")
@click.option("--pairs", type=SIZE, default=None,
              help="recompute only this many pairs of each drawn shard of a per-pair method "
                   "(Direct, Meta, token-level perplexity; default: whole shards)")
@click.option("--all", "every", is_flag=True,
              help="recompute every shard of the store, whole (hours: README)")
@click.option("--journal", type=click.Path(dir_okay=False), default=None,
              help="with --all: a JSON-lines file of the shards found within tolerance, appended "
                   "as each passes; shards it holds (same done markers) are not recomputed, so "
                   "an --all audit resumes after a kill")
@click.option("--device", type=DEVICE, default="auto", show_default=True,
              help="where a run's model loads (auto: the run's device kind)")
@click.option("--run", "runs", multiple=True, metavar="ID[,ID]",
              help="audit only these runs (default: every run of the store)")
@click.option("--quiet", is_flag=True, help="no progress lines")
def audit_cmd(store, sample, seed, pairs, every, journal, device, runs, quiet):
    """Verify the results STORE, then recompute a seeded sample of its shards from scratch (at
    least one per run, into a temporary store; --all: every shard) and compare every number with
    the stored one: counts and decisions equal, log-probabilities within the precision the
    study claims for them (float32: 1e-5 nats per token when both computations ran in MKL's
    pinned mode, else the model's measured float32 kernel spread), each rule named
    (xcomps_utils.runs.audit). Prints one line per comparison; exit code 1 naming the run,
    shard and measure furthest beyond its tolerance (a decision that differs first)."""
    _quiet_loading()
    import pandas as pd

    from . import audit as A
    from .store import Store

    st = Store(store)
    if not (st.root / "runs").is_dir():
        raise click.ClickException(f"{store!r} is not a results store (it has no runs/ folder): "
                                   f"nothing to audit; pass the store folder")
    log = (lambda line: None) if quiet else (lambda line: click.echo(line, err=True))
    table = A.audit(st, sample=sample, seed=seed, device=device, runs=_split(runs) or None,
                    log=log, pairs=pairs, every=every, journal=journal)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60,
                           "display.max_rows", None):
        click.echo(table.drop(columns=["model"]).to_string(index=False))
    bad = A.failures(table)
    n_units = len(table.attrs.get("units", ()))
    if len(bad):
        raise click.ClickException(
            A.failure_line(bad.iloc[0]) + (f" (and {len(bad) - 1} more comparison(s) out of "
                                           f"tolerance, listed above)" if len(bad) > 1 else ""))
    click.echo(f"{store}: verified; {n_units} shard(s) of {table['run'].nunique()} run(s) "
               f"recomputed, {len(table)} comparison(s), every one within tolerance"
               + (f"; Neuro states not shipped for {len(table.attrs['not_shipped'])} run(s) "
                  f"(their probes compared from recomputed states)"
                  if table.attrs.get("not_shipped") else ""))


def _family_line(family: str, width: int, most_lines: int = 3) -> list[str]:
    """The lines of one task family in ``xcomps-study tasks``: its pattern, how many members, what
    it is and its members (CLAMS' as languages x constructions), wrapped to ``width``, a long
    list cut to ``most_lines`` with how many more; an absent manifest said instead."""
    from ..pairs import tasks

    pattern, what = tasks.FAMILIES[family]
    try:
        members = tasks.family_members(family)
    except (XcompsError, OSError, ValueError) as err:
        return [f"  {pattern:27s}   ?  {what}: members unknown here ({_one_line(err)})"]
    pairs = [m.split(":", 1) for m in members]
    groups = [list(members)]
    if members and all(len(p) == 2 for p in pairs):  # a product: <lang>:<construction>
        firsts, seconds = (list(dict.fromkeys(p[i] for p in pairs)) for i in (0, 1))
        if len(firsts) * len(seconds) == len(members):
            groups = [firsts, ["x"], seconds]
    words = [w + ("," if i < len(g) - 1 else "") for g in groups for i, w in enumerate(g)]
    head = f"  {pattern:27s} {len(members):3d}  {what}:"
    # the members under the description, or nearer the margin where the terminal is narrow
    indent = " " * (len(head) - len(what) - 1 if width - len(head) + len(what) >= 45 else 6)
    tail = f" ... +{len(members)} more"

    def fill(reserve: int) -> tuple[list[str], int]:
        """The lines of the first words that fit in ``most_lines`` lines, ``reserve`` characters
        left free at the end of the last one, and how many words they hold."""
        lines, line = [], head
        for k, word in enumerate(words):
            last = len(lines) == most_lines - 1
            if len(line) + 1 + len(word) <= width - (reserve if last else 0):
                line += " " + word
            elif last:
                return lines + [line.rstrip(",")], k
            else:
                lines, line = lines + [line], indent + word
                if len(lines) == most_lines - 1 and len(line) > width - reserve:
                    return lines + [indent], k  # the word alone would leave no room
        return lines + [line], len(words)

    lines, shown = fill(0)
    if shown < len(words):
        lines, shown = fill(len(tail))
        lines[-1] += f" ... +{len(words) - shown} more"
    return lines


@main.command("tasks")
@click.argument("family", required=False)
def tasks_cmd(family):
    """List the tasks, every task family with its members, the XCOMPS languages and the embedded
    models; with FAMILY (e.g. bmlama17), every task name of that family, one a line."""
    import shutil
    import textwrap

    from ..lm.models import EMBEDDED_MODELS
    from ..pairs import tasks, xcomps

    if family:
        family = family.split(":")[0]
        if family not in tasks.FAMILIES:
            raise click.UsageError(f"unknown task family {family!r}; known: "
                                   f"{', '.join(tasks.FAMILIES)}")
        try:
            members = tasks.family_members(family)
        except (XcompsError, OSError, ValueError) as err:
            raise click.ClickException(_one_line(err)) from None
        for member in members:
            click.echo(f"{family}:{member}")
        return
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    click.echo("tasks (--task):")
    for name, t in tasks.TASKS.items():
        click.echo(f"  {name:15s} {t.description}")
    click.echo("task families (`xcomps-study tasks FAMILY` lists every name of one):")
    for fam in tasks.FAMILIES:
        for line in _family_line(fam, width):
            click.echo(line)
    for text in (f"XCOMPS languages (--languages): en + {','.join(xcomps.XCOMPS_LANGUAGES)}; "
                 f"the offline sample has {','.join(xcomps.SAMPLE_LANGUAGES)}",
                 f"embedded models (--model): {', '.join(EMBEDDED_MODELS)}; random:<model> "
                 f"for the untrained control of any model"):
        click.echo(("\n" if text.startswith("XCOMPS") else "")
                   + "\n".join(textwrap.wrap(text, width, subsequent_indent="  ")))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
