"""The claim contract (issue 42), as scikit-learn's common estimator checks: every claim declared
in ``families.FAMILIES`` registers, in its analysis module's ``CONTRACTS``, a null generator, a
stated effect and its named traps (:mod:`xcomps_utils.analysis.contract`), and every registered
contract holds.

Fast tier: no declared claim lacks a contract (a claim added without one fails here, by name),
every contract names a declared claim and has a null, and each scenario draws a test of its
claim. Slow tier: one test per (contract, scenario), ``contract.reps`` draws each: a null or a
trap decides wrongly in at most ``nominal + 3 SE`` of the draws, an effect scenario is decided
its way in more than ``nominal`` (the power, printed and recorded as a property of the test).
"""

import dataclasses

import pytest

from xcomps_utils.analysis import claims, contract, families

REGISTRY = contract.registry()


def _scenarios():
    """``(id, contract, scenario, kind)`` for every scenario of every registered contract."""
    out = []
    for claim, contracts in REGISTRY.items():
        for j, c in enumerate(contracts):
            named = [("null", c.null)] + ([("effect", c.effect)] if c.effect else []) + [
                (f"trap{k}", t) for k, t in enumerate(c.traps)]
            out += [(f"{claim}[{j}]-{kind}", c, s, kind.rstrip("0123456789"))
                    for kind, s in named]
    return out


SCENARIOS = _scenarios()


def test_every_declared_claim_has_a_contract():
    lacking = contract.missing()
    assert not lacking, (f"claims declared in families.FAMILIES without a contract (add one to the "
                         f"CONTRACTS of the module that tests them): {lacking}")


def test_a_claim_without_a_null_generator_fails_the_contract(monkeypatch):
    before = set(contract.missing())
    planted = families.Family("planted", "nowhere", "exploratory", {"planted_claim": None})
    monkeypatch.setattr(families, "FAMILIES", {**families.FAMILIES, "planted": planted})
    assert set(contract.missing()) - before == {"planted_claim"}


def test_every_contract_has_a_null_and_names_a_declared_claim():
    declared = {c for f in families.FAMILIES.values() for c in f.claims}
    assert REGISTRY, "no analysis module registers a contract"
    for claim, contracts in REGISTRY.items():
        assert claim in declared, f"contract for {claim!r}, which families.FAMILIES does not declare"
        for c in contracts:
            assert isinstance(c.null, contract.Scenario), f"{claim}: no null scenario"
            assert c.reps >= 1


@pytest.mark.parametrize("case", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_each_scenario_draws_a_test_of_its_claim(case):
    _, c, scenario, _ = case
    t = scenario.draw(0)
    assert isinstance(t, claims.ClaimTest) and t.claim == c.claim
    assert t.verdict in claims.VERDICTS


def test_run_counts_wrong_and_right_verdicts():
    # a fake claim whose verdict is its seed's parity: half the draws decided
    def draw(seed):
        return dataclasses.replace(_fake, verdict="supported" if seed % 2 else "inconclusive")
    s = contract.Scenario("half decided", draw)
    null, power = contract.run(s, 40, "null"), contract.run(s, 40, "effect")
    assert null.rate == power.rate == 0.5 and null.counts == {"inconclusive": 20, "supported": 20}
    assert null.limit == pytest.approx(0.05 + 3 * (0.05 * 0.95 / 40) ** 0.5)
    assert not null.holds
    with pytest.raises(ValueError, match="'kind'"):
        contract.run(s, 10, "power")


_fake = claims.ClaimTest(claim="fake", hypothesis="", measure="", effect=0.0, ci_low=0.0,
                         ci_high=0.0, null=0.0, direction=1, verdict="inconclusive", n_items=1,
                         unit="item", n_obs=1, source="")


@pytest.mark.slow  # simulations of a claim's test over many data sets (issue 29)
@pytest.mark.parametrize("case", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_the_contract_holds(case, record_property):
    name, c, scenario, kind = case
    r = contract.run(scenario, c.reps, "trap" if kind == "trap" else kind)
    record_property("rate", r.rate)
    print(f"{name}: {scenario.name}: rate {r.rate:.3f} over {r.reps} draws "
          f"(limit {r.limit:.3f}; {r.counts})")
    if kind == "effect":
        assert r.rate > scenario.nominal, (f"{name}: power {r.rate:.3f} at the stated effect "
                                           f"is not above nominal {scenario.nominal}: {r.counts}")
    else:
        assert r.holds, (f"{name}: wrong verdicts in {r.rate:.3f} of {r.reps} draws, above "
                         f"{r.limit:.3f}: {r.counts}")
