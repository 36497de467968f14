"""Property tests of the PEARL advantage on random batches, against a plain-Python reference."""

import math
import statistics

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_verl.advantage.estimator import compute_pearl_advantage, compute_pearl_advantage_breakdown


def reference_advantage(scores, turns, completed, groups, valid, gamma, eps, weights, discretize, aggregation):
    """design.md's formula, one group and one sample at a time."""
    n, k = len(scores), len(scores[0])
    out = [0.0] * n
    for g in set(groups):
        members = [i for i in range(n) if groups[i] == g and valid[i]]
        finished = [turns[i] for i in members if completed[i]]
        n_min = min(finished) if finished else None
        shaped = {}
        for i in members:
            row = []
            for s in scores[i]:
                b = min(math.floor(s * 5 + 1e-6), 4)
                low = 0.2 * b
                r = low + 0.1 if discretize else s
                exponent = max(turns[i] - n_min, 0) if n_min is not None else 0
                row.append(low + (r - low) * gamma**exponent)
            shaped[i] = row
        if len(members) < 2:
            continue

        def zscores(values):
            mean, std = statistics.fmean(values), statistics.stdev(values)
            return [(v - mean) / (std + eps) for v in values]

        if aggregation == "advantage":
            per_dim = [zscores([shaped[i][d] for i in members]) for d in range(k)]
            for j, i in enumerate(members):
                out[i] = sum(weights[i][d] * per_dim[d][j] for d in range(k))
        else:
            means = [sum(weights[i][d] * shaped[i][d] for d in range(k)) for i in members]
            for j, z in enumerate(zscores(means)):
                out[members[j]] = z
    return out


@st.composite
def batches(draw):
    k = draw(st.integers(1, 8))
    sizes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=6))
    groups = [f"uid-{g}" for g, size in enumerate(sizes) for _ in range(size)]
    n = len(groups)
    unit = st.floats(0.0, 1.0, allow_nan=False)
    scores = draw(st.lists(st.lists(unit, min_size=k, max_size=k), min_size=n, max_size=n))
    turns = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    completed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    valid = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    return dict(
        scores=[scores[i] for i in order], turns=[turns[i] for i in order], completed=[completed[i] for i in order],
        groups=[groups[i] for i in order], valid=[valid[i] for i in order],
    )


def _run(batch, **kw):
    return compute_pearl_advantage(
        torch.tensor(batch["scores"], dtype=torch.float64), batch["turns"], batch["completed"], batch["groups"],
        valid=batch["valid"], **kw,
    )


@settings(max_examples=150, deadline=None)
@given(
    batch=batches(),
    gamma=st.floats(0.5, 1.0),
    discretize=st.booleans(),
    aggregation=st.sampled_from(["advantage", "reward"]),
)
def test_matches_reference(batch, gamma, discretize, aggregation):
    k = len(batch["scores"][0])
    weights = [[1.0 / k] * k for _ in batch["scores"]]
    got = _run(batch, gamma=gamma, discretize=discretize, aggregation=aggregation)
    want = reference_advantage(
        batch["scores"], batch["turns"], batch["completed"], batch["groups"], batch["valid"],
        gamma, 1e-6, weights, discretize, aggregation,
    )
    assert got.tolist() == pytest.approx(want, rel=1e-4, abs=1e-3)


@settings(max_examples=100, deadline=None)
@given(batch=batches(), gamma=st.floats(0.5, 1.0))
def test_group_sums_vanish_per_dimension(batch, gamma):
    bd = compute_pearl_advantage_breakdown(
        torch.tensor(batch["scores"]), batch["turns"], batch["completed"], batch["groups"],
        valid=batch["valid"], gamma=gamma,
    )
    groups = np.array(batch["groups"])
    for g in set(batch["groups"]):
        rows = torch.from_numpy(groups == g)
        assert bd.dim_advantages[rows].sum(dim=0).abs().max().item() < 1e-3
        assert abs(bd.advantages[rows].sum().item()) < 1e-3
    invalid = ~torch.tensor(batch["valid"])
    assert (bd.advantages[invalid] == 0).all()


@settings(max_examples=100, deadline=None)
@given(batch=batches(), data=st.data())
def test_invariant_to_row_order_and_group_names(batch, data):
    base = _run(batch)
    n = len(batch["groups"])
    perm = data.draw(st.permutations(range(n)))
    permuted = {key: [values[i] for i in perm] for key, values in batch.items()}
    permuted["groups"] = [f"renamed-{g[::-1]}" for g in permuted["groups"]]
    assert _run(permuted).tolist() == pytest.approx(base[list(perm)].tolist(), abs=1e-5)


@settings(max_examples=60, deadline=None)
@given(batch=batches(), junk=st.floats(allow_nan=True, allow_infinity=True))
def test_invalid_rows_do_not_influence_others(batch, junk):
    base = _run(batch)
    scrambled = dict(batch)
    scrambled["scores"] = [row if ok else [junk] * len(row) for row, ok in zip(batch["scores"], batch["valid"])]
    scrambled["turns"] = [t if ok else 999 for t, ok in zip(batch["turns"], batch["valid"])]
    assert torch.equal(_run(scrambled), base)
