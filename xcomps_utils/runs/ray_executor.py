"""The Ray executor of a plan (:func:`xcomps_utils.runs.planner.plan`): one long-lived actor per GPU.

Each actor (:class:`Replica`, ``num_gpus=1``) holds one model replica, loaded once and swapped
only when the queue moves on to the next model. The driver hands each idle actor a shard (a few
bytes: run id and shard number; the pairs travel once per run through the object store) and the
actor writes the shard's files into the store itself (on a cluster, a folder every node mounts),
with :func:`xcomps_utils.runs.execute.compute_shard` under the shard's file lock. A killed actor is
restarted and its shard retried (``max_retries``); the done markers and the lock make every shard
written once. Neuro's run-level step (the probes over every state shard) runs once, as a CPU
task, after the run's last shard (:func:`xcomps_utils.runs.execute.finish`).

Why actors and not Ray Data ``map_batches``: the unit of work is a store shard with a side effect
(its files, then its done marker), not a stream of rows into a sink. With actors the shard stays
the unit of scheduling, retrying and resuming, and results are written where they are computed:
Neuro's hidden states (~270 KB per sentence for an 8 B model) never cross the object store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pandas as pd

from . import execute as M, planner as P

__all__ = ["Replica", "execute"]


class Replica:
    """The worker: holds one model (loaded on first use, swapped when a shard of another model
    comes), opens runs of one results store (the driver's :class:`~xcomps_utils.runs.store.Store`,
    sent once), computes and commits shards. A Ray actor on Ray."""

    def __init__(self, store, threads: int | None = None):
        if threads:
            import torch

            torch.set_num_threads(max(1, int(threads)))
        self.store = store
        self._pairs = {}

    def _lm(self, spec: P.RunSpec):
        return P.load(spec.model, spec.device, spec.dtype, spec.revision)

    def _used(self, rid, pairs) -> pd.DataFrame:
        if rid not in self._pairs:
            if isinstance(pairs, list):  # [ObjectRef]: fetched once per run and replica
                import ray

                pairs = ray.get(pairs[0])
            self._pairs = {rid: pairs}
        return self._pairs[rid]

    def open(self, spec: P.RunSpec, pairs) -> dict:
        """Load the model and open (or find) the run: its id, shard count, unfinished shards
        and status."""
        run = M.open_run(self.store, spec, self._lm(spec), self._used(None, pairs))
        self._pairs = {run.id: self._pairs[None]}
        rec = run.record
        return {"run": run.id, "n_shards": rec["n_shards"], "complete": rec["status"] == "complete",
                "todo": [i for i in range(rec["n_shards"]) if not run.is_done(i)]}

    def shard(self, spec: P.RunSpec, rid: str, i: int, pairs) -> str:
        """Compute and commit shard ``i`` of run ``rid``: ``"written"`` or ``"done"`` (finished
        by another attempt first; see :func:`xcomps_utils.runs.execute.compute_shard`)."""
        run = self.store.run(rid)
        if run.is_done(i):
            return "done"
        return M.compute_shard(run, i, self._lm(spec), self._used(rid, pairs), spec.p)

    def pid(self) -> int:
        return os.getpid()


def _finish(store, spec: P.RunSpec, rid: str, pairs) -> str:
    import ray

    return M.finish(store.run(rid), ray.get(pairs[0]), spec.p)


@dataclass
class _Run:
    """The driver's state of one run: its spec (without pairs), pairs reference, id, shards
    left and written."""

    spec: P.RunSpec
    pairs: list
    info: dict = field(default_factory=dict)
    left: int = 0
    written: int = 0


@dataclass
class _Pool:
    """Idle/busy actors and the model each holds; tasks in flight."""

    actors: list
    holds: dict = field(default_factory=dict)
    inflight: dict = field(default_factory=dict)  # ObjectRef -> (actor or None, task)

    def idle(self) -> list:
        busy = {a for a, _ in self.inflight.values()}
        return [a for a in self.actors if a not in busy]


def _replicas(ray, cfg: dict, n_work: int) -> tuple[int, dict]:
    res = ray.cluster_resources()
    gpus = cfg["num_gpus"]
    if gpus == "auto":
        gpus = 1 if res.get("GPU", 0) >= 1 else 0
    cpus = cfg["num_cpus"]
    n = cfg["replicas"]
    if n == "auto":
        n = int(res.get("GPU", 0) // gpus) if gpus else int(res.get("CPU", 1) // max(cpus, 1e-9))
    return max(1, min(int(n), max(1, n_work))), {"num_gpus": gpus, "num_cpus": cpus}


def execute(ray, specs: list[P.RunSpec], cfg: dict, address=None, progress=True
            ) -> tuple[list[dict], int]:
    """Compute the specs on Ray (a new local Ray, shut down at the end, unless this process
    already joined one or ``address`` names one).

    Args:
        cfg: the sweep's ``ray`` mapping (replicas, num_gpus, num_cpus, probe_cpus,
            max_retries).

    Returns:
        ``(one methods.row per spec, replicas used)``.
    """
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=progress)
    try:
        return _schedule(ray, specs, cfg, progress)
    finally:
        if started:
            ray.shutdown()


def _schedule(ray, specs, cfg, progress):
    from tqdm.auto import tqdm

    store = M.store_of(specs)  # the one Store: the replicas and the finishing tasks get it
    n_gpu = _replicas(ray, cfg, 1)[1]["num_gpus"]
    rows = {k: M.stored(store, s, "cuda" if n_gpu else "cpu") for k, s in enumerate(specs)}
    todo = [k for k, r in rows.items() if r is None]
    if not todo:
        return [rows[k] for k in range(len(specs))], 0
    store.check_writable()
    for k in todo:  # the runs the store holds check, before any replica loads a model
        M.precheck(store, specs[k], P.identity(specs[k], "cuda" if n_gpu else "cpu"))
    n, res = _replicas(ray, cfg, sum(specs[k].n_shards for k in todo))
    retries = cfg["max_retries"]
    Actor = ray.remote(Replica).options(max_restarts=retries, max_task_retries=retries, **res)
    finisher = ray.remote(_finish).options(num_cpus=cfg["probe_cpus"], max_retries=retries)
    pool = _Pool([Actor.remote(store, threads=None if res["num_gpus"] else res["num_cpus"])
                  for _ in range(n)])
    runs = {k: _Run(specs[k].light(), [ray.put(specs[k].used)]) for k in todo}
    queue = [("open", k, None) for k in todo]  # model by model (plan's order)
    bar = tqdm(total=0, unit="shard", desc=f"sweep (Ray, {n} replicas)", disable=not progress)

    def pick(actor):  # a task of the model the actor holds, else of a model no actor holds
        held = set(pool.holds.values()) - {pool.holds.get(actor)}
        mine = [j for j, t in enumerate(queue) if specs[t[1]].model == pool.holds.get(actor)]
        free = [j for j, t in enumerate(queue) if specs[t[1]].model not in held]
        return queue.pop((mine or free or [0])[0])

    try:
        while queue or pool.inflight:
            for actor in pool.idle():
                if not queue:
                    break
                kind, k, i = task = pick(actor)
                pool.holds[actor] = specs[k].model
                r = runs[k]
                ref = (actor.open.remote(r.spec, r.pairs) if kind == "open" else
                       actor.shard.remote(r.spec, r.info["run"], i, r.pairs))
                pool.inflight[ref] = (actor, task)
            if not queue and not any(t[0] == "open" for _, t in pool.inflight.values()):
                for actor in pool.idle():  # free their CPUs/GPUs for the probe tasks
                    ray.kill(actor)
                    pool.actors.remove(actor)
            (ref,), _ = ray.wait(list(pool.inflight), num_returns=1)
            _, (kind, k, i) = pool.inflight.pop(ref)
            out, r = ray.get(ref), runs[k]
            if kind == "finish":
                rows[k] = M.row(specs[k], r.info["run"], r.info["n_shards"], r.written)
                continue
            if kind == "open":
                r.info, r.left = out, len(out["todo"])
                queue.extend(("shard", k, i) for i in out["todo"])
                bar.total += r.left
                bar.refresh()
            else:
                r.written += out == "written"
                r.left -= 1
                bar.update(1)
            if r.left == 0:
                r.left = -1
                pool.inflight[finisher.remote(store, r.spec, r.info["run"], r.pairs)] = (
                    None, ("finish", k, None))
    finally:
        bar.close()
        for actor in pool.actors:
            ray.kill(actor)
    return [rows[k] for k in range(len(specs))], n
