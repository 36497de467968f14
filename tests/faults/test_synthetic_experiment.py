"""The synthetic multi-objective experiment (bench/synthetic, issue 8 item 3) in miniature, in seconds.

The environment's rules, the five estimators against verl's and PEARL's own functions, the
effective-weight diagnostic, a few training steps per estimator, the report writer, and the
committed report's consistency with the code.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "synthetic"))

import env  # noqa: E402
import methods  # noqa: E402
import report  # noqa: E402
import train  # noqa: E402

from pearl_verl.advantage.estimator import compute_pearl_advantage  # noqa: E402

COMMITTED = ROOT / "docs" / "experiments" / "synthetic_multiobjective"


def _policy(*preferences):
    """Logits that pick ``preferences[0]`` before solving and ``preferences[1]`` after (if given)."""
    logits = torch.full((env.NUM_STATES, len(env.ACTIONS)), -30.0, dtype=torch.float64)
    per_phase = env.NUM_STATES // env.PHASES
    logits[: env.STEPS * per_phase, env.ACTIONS.index(preferences[0])] = 0.0
    logits[env.STEPS * per_phase :, env.ACTIONS.index(preferences[-1])] = 0.0
    return logits


def _rollout(logits, n=64, noise=0.0, seed=0, misconception=False):
    gen = torch.Generator().manual_seed(seed)
    ability = torch.randint(0, 3, (n,), generator=gen)
    return env.rollout(logits, ability, torch.full((n,), misconception), env.EnvConfig(judge_noise=noise), gen)


def test_the_environment_follows_its_rules():
    revealing = _rollout(_policy("reveal", "end"))
    assert torch.all(revealing.turns == 2) and torch.all(revealing.completed)
    assert torch.all(revealing.true_scores == 0.0)  # an unwarranted reveal fails the rubric's gate...
    lenient = env.rollout(_policy("reveal", "end"), torch.zeros(8, dtype=torch.long), torch.zeros(8, dtype=torch.bool),
                          env.EnvConfig(judge_noise=0.0, lenient_gate=True), torch.Generator().manual_seed(0))
    leak, complete = env.DIMS.index("leak"), env.DIMS.index("complete")
    assert torch.all(lenient.true_scores[:, leak] == 0.0) and torch.all(lenient.true_scores[:, complete] > 0)

    quitting = _rollout(_policy("end"))  # ends before anything is solved: completed, but the gate is 0
    assert torch.all(quitting.turns == 1) and torch.all(quitting.completed)
    assert torch.all(quitting.true_scores == 0.0)  # the gate zeroes every dimension

    asking = _rollout(_policy("question", "end"), misconception=True)
    assert torch.all(asking.turns <= 15) and asking.alive.sum(dim=1).double().equal(asking.turns)
    stuck = ~asking.completed  # misconception never diagnosed: many students run out of turns
    assert stuck.any() and torch.all(asking.turns[stuck] == 15)
    guide = env.DIMS.index("guide")
    solved = asking.true_scores[:, complete] > 0
    assert torch.all(asking.true_scores[solved, guide] > lenient.true_scores[:, guide].max())

    noisy = _rollout(_policy("question", "end"), noise=0.3)
    assert (noisy.scores != noisy.true_scores).any() and torch.all((noisy.scores >= 0) & (noisy.scores <= 1))


def test_the_estimators_match_verl_and_pearl_on_the_same_batch():
    batch = _rollout(train.initial_logits(), n=128, noise=0.1)
    index = np.repeat(np.arange(16), 8)
    gdpo = methods.advantages("gdpo", batch.scores, batch.turns, batch.completed, index)
    assert torch.allclose(gdpo, methods.verl_gdpo(batch.scores, index), atol=1e-5)
    grpo = methods.advantages("grpo_mean", batch.scores, batch.turns, batch.completed, index)
    t4 = compute_pearl_advantage(batch.scores, batch.turns, batch.completed, index, gamma=1.0, discretize=False,
                                 aggregation="reward")
    assert torch.allclose(grpo, t4, atol=1e-5)  # verl's GRPO on the mean reward is the paper's T4 baseline
    raw = methods.advantages("pearl_raw", batch.scores, batch.turns, batch.completed, index)
    assert torch.allclose(gdpo, (raw - raw.mean()) / raw.std(), atol=1e-4)  # GDPO = PEARL (c), whitened
    pearl = methods.advantages("pearl", batch.scores, batch.turns, batch.completed, index)
    same_length = methods.advantages("pearl_turn", batch.scores, torch.full_like(batch.turns, 7.0),
                                     batch.completed, index)
    assert torch.equal(pearl, same_length)  # the turn penalty only acts on different lengths
    with pytest.raises(ValueError, match="method='ppo' is not one of"):
        methods.advantages("ppo", batch.scores, batch.turns, batch.completed, index)


def test_effective_weights_show_mean_reward_follows_spread_and_pearl_is_uniform():
    gen = torch.Generator().manual_seed(3)
    scores = torch.rand(512, 4, generator=gen, dtype=torch.float64) * torch.tensor([1.0, 0.5, 0.25, 0.125])
    index = np.repeat(np.arange(64), 8)
    advantages = {m: methods.advantages(m, scores, torch.ones(512), torch.ones(512, dtype=torch.bool), index)
                  for m in ("grpo_mean", "pearl_raw")}
    weights = train.effective_weights(advantages, scores, index)
    assert np.allclose(weights["pearl_raw"], 0.25, atol=0.01)
    assert weights["grpo_mean"] == sorted(weights["grpo_mean"], reverse=True)
    assert weights["grpo_mean"][0] / weights["grpo_mean"][3] == pytest.approx(8, rel=0.15)  # the spread ratio


def test_a_few_training_steps_run_for_every_estimator_and_the_report_is_written(tmp_path):
    settings = dict(steps=4, groups=4, eval_every=2, eval_groups=4)
    runs = {}
    for method in methods.METHODS:
        result = train.train(train.TrainConfig(method=method, seed=0, **settings))
        assert result.steps == [0, 2, 4] and len(result.dims) == 3 and len(result.final_weights) == len(env.DIMS)
        assert result.dims[0] != result.dims[-1] or result.turns[0] != result.turns[-1]  # the policy moved
        runs[method] = [json.loads(json.dumps(result.__dict__)) for _ in range(2)]
    initial = {
        "groups": 4, "groups_all_complete": 2,
        "statistics": train.dimension_statistics(torch.rand(16, 8, dtype=torch.float64), np.repeat(np.arange(2), 8)),
        "weights": {m: [0.125] * 8 for m in methods.METHODS},
        "weights_complete_groups": {m: [0.125] * 8 for m in methods.METHODS},
    }  # fmt: skip
    initial["statistics_complete_groups"] = initial["statistics"]
    results = {
        "command": "python bench/synthetic/run.py --quick", "machine": "test", "date": "today", "seeds": [0, 1],
        "settings": {**settings, "group_size": 8, "lr": 0.05}, "seconds": 1.0,
        "scenarios": {"main": {"env": {"judge_noise": 0.1}, "initial": initial, "runs": runs}},
    }  # fmt: skip
    report.write_report(results, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert all(methods.LABELS[m] in text for m in methods.METHODS) and "(e) - (d): turn penalty" in text
    for png in ("main_curves.png", "main_dimension_curves.png", "main_final_dimensions.png", "main_weights.png"):
        assert (tmp_path / png).stat().st_size > 10_000


def test_the_committed_report_matches_the_code():
    results = json.loads((COMMITTED / "results.json").read_text())
    assert results["command"].startswith("python bench/synthetic/run.py")
    assert len(results["seeds"]) >= 5
    for scenario in results["scenarios"].values():
        assert set(scenario["runs"]) == set(methods.METHODS)
        assert all(len(runs) == len(results["seeds"]) for runs in scenario["runs"].values())
        assert all(len(run["dims"][-1]) == len(env.DIMS) for runs in scenario["runs"].values() for run in runs)
    text = (COMMITTED / "report.md").read_text()
    assert results["command"].strip() in text
    readme = (COMMITTED / "README.md").read_text()
    assert "python bench/synthetic/run.py" in readme and "report.md" in readme
    for name in results["scenarios"]:
        assert (COMMITTED / f"{name}_final_dimensions.png").exists() and (COMMITTED / f"{name}_curves.png").exists()
