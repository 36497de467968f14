"""The fault plan: validated rates, seeded and content-keyed draws, the configured rates in practice."""

from collections import Counter

import pytest

from pearl_verl.faults.plan import FAULT_KINDS, FaultConfig, FaultKind, FaultPlan, fingerprint, request_fingerprint


def _body(i, **extra):
    return {"model": "m", "messages": [{"role": "user", "content": f"question {i}"}], "n": 1, **extra}


def test_uniform_splits_the_total_over_every_kind():
    config = FaultConfig.uniform(0.18)
    assert set(config.rates) == set(FAULT_KINDS) and len(FAULT_KINDS) == 9
    assert all(rate == pytest.approx(0.02) for rate in config.rates.values())
    assert config.total_rate == pytest.approx(0.18)
    partial = FaultConfig.uniform(0.2, kinds=("timeout", "reset"))
    assert partial.rates["timeout"] == partial.rates["reset"] == pytest.approx(0.1)
    assert partial.rates["http_500"] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(rates={"gremlins": 0.1}), r"unknown fault kind\(s\) \['gremlins'\]"),
        (dict(rates={"timeout": 1.5}), r"must each lie in \[0, 1\]"),
        (dict(rates={"timeout": 0.6, "reset": 0.6}), "sum to 1.2 > 1"),
        (dict(stream_chunks=1), "stream_chunks=1 must be >= 2"),
        (dict(hold_s=-1.0), "hold_s=-1.0 must be >= 0"),
    ],
)
def test_invalid_settings_are_rejected_with_the_rule(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FaultConfig(**kwargs)
    with pytest.raises(ValueError, match=r"total fault rate 1.2 must lie in \[0, 1\]"):
        FaultConfig.uniform(1.2)


def test_draws_depend_on_seed_content_and_occurrence_not_on_arrival_order():
    config = FaultConfig.uniform(0.5, seed=3)
    forward, backward = FaultPlan(config), FaultPlan(config)
    bodies = [_body(i) for i in range(200)]
    first = {request_fingerprint(b): forward.draw(b).kind for b in bodies}
    second = {request_fingerprint(b): backward.draw(b).kind for b in reversed(bodies)}
    assert first == second  # the same requests in another order get the same faults
    other = FaultPlan(FaultConfig.uniform(0.5, seed=4))
    assert [other.draw(b).kind for b in bodies] != [first[request_fingerprint(b)] for b in bodies]

    retries = [forward.draw(bodies[0]) for _ in range(5)]  # a client re-sending the same body
    assert [r.occurrence for r in retries] == [1, 2, 3, 4, 5]
    assert [r.kind for r in retries] == [forward.kind_for(retries[0].fingerprint, k) for k in range(1, 6)]
    assert [i.index for i in forward.injections] == list(range(205))


def test_the_fingerprint_separates_logical_calls_and_matches_the_client_side_hash():
    body = _body(1, seed=7, temperature=0.3)
    assert request_fingerprint(body) == fingerprint("m", body["messages"], 7, 1)
    assert request_fingerprint({**body, "temperature": 1.0}) == request_fingerprint(body)
    for change in ({"seed": 8}, {"n": 2}, {"model": "other"}, {"messages": [{"role": "user", "content": "x"}]}):
        assert request_fingerprint({**body, **change}) != request_fingerprint(body)


def test_the_configured_rates_hold_over_many_requests():
    plan = FaultPlan(FaultConfig.uniform(0.2, seed=11))
    draws = 20_000
    counts = Counter(plan.kind_for(f"request-{i}", 0) for i in range(draws))
    # binomial sd of one kind's share: sqrt(0.0222 * 0.978 / 20000) = 0.00104; allow 5 sd
    for kind in FaultKind:
        assert counts[kind] / draws == pytest.approx(0.2 / 9, abs=0.0052), kind
    assert 1 - counts[None] / draws == pytest.approx(0.2, abs=0.015)
    skewed = FaultPlan(FaultConfig(rates={"http_429": 0.3}, seed=1))
    kinds = Counter(skewed.kind_for(f"r{i}", 0) for i in range(5000))
    assert set(kinds) == {FaultKind.HTTP_429, None} and kinds[FaultKind.HTTP_429] / 5000 == pytest.approx(0.3, abs=0.03)


def test_counts_report_every_kind_and_normal_answers():
    plan = FaultPlan(FaultConfig(rates={"reset": 1.0}))
    for i in range(3):
        plan.draw(_body(i))
    counts = plan.counts()
    assert counts["reset"] == 3 and counts["none"] == 0 and set(counts) == {*FAULT_KINDS, "none"}
    assert sum(len(v) for v in plan.by_fingerprint().values()) == 3
