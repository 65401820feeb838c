"""The claim contract: every declared claim ships with the simulations that show its verdict means
its sentence (issue 42), as scikit-learn's estimator checks hold every estimator.

A claim of :data:`xcomps_utils.analysis.families.FAMILIES` registers one or more :class:`Contract`
in the ``CONTRACTS`` list of the analysis module that tests it. A contract holds
:class:`Scenario` s, each a generator ``draw(seed) -> ClaimTest``: the claim's own test function
run on one simulated dataset. Three kinds:

* ``null``: data drawn under the claim's null (no effect); a verdict in ``wrong`` (by default a
  decided side) must come in at most ``nominal + 3 SE`` of the draws;
* ``effect``: data at a stated effect the claim is about; the share of draws decided the
  claim's way (``right``) is the power, reported and required to be above ``nominal``, so that
  the outcome is reachable;
* ``traps``: the named confounds that could make the verdict without the claim being true (a
  script bonus, tokenization, mean-zero surprisal noise, ...): a verdict in ``wrong`` at most
  ``nominal + 3 SE``.

:func:`run` measures one scenario; :func:`registry` gathers every module's contracts and
:func:`missing` names the declared claims that have none (``tests/analysis/test_claim_contract.py``
fails on them).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Callable

from . import claims, families

__all__ = ["Scenario", "Contract", "ScenarioResult", "run", "registry", "missing", "MODULES",
           "DECIDED"]

#: the verdicts that decide a side of a claim
DECIDED = ("supported", "contradicted")

#: the analysis modules whose ``CONTRACTS`` lists :func:`registry` gathers
MODULES = ("xcomps_paper", "perplexity_paper", "concept_prior", "consistency", "grammar_study",
           "bmlama_study")


@dataclass(frozen=True)
class Scenario:
    """One simulated world for a claim.

    Attributes:
        name: what the world is, in words ("equal knowledge in nats, measured spreads").
        draw: ``seed -> ClaimTest``: the claim's test on one dataset drawn with that seed.
        wrong: verdicts that are errors in this world (null and traps).
        right: verdicts that are the claim decided correctly in this world (effect scenarios).
        nominal: the error rate a correct test keeps to (``claims.ALPHA`` for both sides,
            ``claims.ALPHA / 2`` for one).
    """

    name: str
    draw: Callable[[int], claims.ClaimTest]
    wrong: tuple[str, ...] = DECIDED
    right: tuple[str, ...] = ("supported",)
    nominal: float = claims.ALPHA


@dataclass(frozen=True)
class Contract:
    """What a claim promises: its null holds its size, its stated effect can be found, and each
    named trap is decided right (see the module's docstring).

    Attributes:
        claim: the claim's name, as in :data:`families.FAMILIES`.
        null: data under the null.
        effect: data at the stated effect (``None`` only for a claim that is a description).
        traps: the named traps.
        reps: draws per scenario in the contract's test (at least 200 for a verdict on a page).
    """

    claim: str
    null: Scenario
    effect: Scenario | None = None
    traps: tuple[Scenario, ...] = field(default_factory=tuple)
    reps: int = 200


@dataclass(frozen=True)
class ScenarioResult:
    """``rate``: the share of ``reps`` draws with a verdict in the scenario's ``wrong`` (null,
    trap) or ``right`` (effect); ``limit``: ``nominal + 3 SE`` (the most a correct test's
    error rate reaches by chance); ``counts``: verdict -> draws."""

    scenario: str
    reps: int
    rate: float
    limit: float
    counts: dict

    @property
    def holds(self) -> bool:
        """An error rate within its limit."""
        return self.rate <= self.limit


def run(scenario: Scenario, reps: int, kind: str = "null", seed: int = 0) -> ScenarioResult:
    """Draw ``reps`` datasets of ``scenario`` (seeds ``seed .. seed + reps - 1``) and count the
    verdicts: for ``kind`` "null" or "trap" the rate of ``wrong`` verdicts, for "effect" the
    rate of ``right`` ones (the power).

    Raises:
        ValueError: ``reps < 1`` or an unknown ``kind``.
    """
    if reps < 1:
        raise ValueError(f"the 'reps' parameter must be an integer >= 1; got {reps!r}")
    if kind not in ("null", "trap", "effect"):
        raise ValueError(f"the 'kind' parameter must be 'null', 'trap' or 'effect'; got {kind!r}")
    counts: dict = {}
    for s in range(seed, seed + reps):
        v = scenario.draw(s).verdict
        counts[v] = counts.get(v, 0) + 1
    hits = sum(counts.get(v, 0) for v in (scenario.right if kind == "effect" else scenario.wrong))
    p = scenario.nominal
    return ScenarioResult(scenario.name, reps, hits / reps,
                          p + 3 * math.sqrt(p * (1 - p) / reps), counts)


def registry() -> dict[str, list[Contract]]:
    """Every registered contract, by claim name (a claim tested in two chapters may have one
    each), from the ``CONTRACTS`` lists of :data:`MODULES`."""
    out: dict[str, list[Contract]] = {}
    for name in MODULES:
        mod = importlib.import_module(f"{__package__}.{name}")
        for c in getattr(mod, "CONTRACTS", ()):
            out.setdefault(c.claim, []).append(c)
    return out


def missing() -> list[str]:
    """The claims declared in :data:`families.FAMILIES` without a contract, sorted."""
    have = registry()
    declared = {c for f in families.FAMILIES.values() for c in f.claims}
    return sorted(declared - set(have))
