"""From agent-loop outputs to verl's training batch, and one actor update.

The batch has the fields and layout verl's V1 trainer stores in TransferQueue for each sample
(jagged ``prompts``, ``responses``, ``response_mask``, ``input_ids``, ``position_ids``), so the
actor's ``infer_batch``/``train_mini_batch`` see exactly what they see in a cluster run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from verl.utils import tensordict_utils as tu
from verl.workers.utils.padding import response_from_nested, response_to_nested

from pearl_verl.verl_plugin.estimator import pearl_config_from_root, scalar_advantages


def sequence_batch(outputs: Sequence[Any]) -> Any:
    """A jagged TensorDict of the samples, as verl's agent-loop worker writes them.

    Every field is a jagged nested tensor even when all samples happen to have one length
    (verl's list-to-TensorDict helper would stack those into a dense tensor the engine rejects).
    """
    columns: dict[str, list[torch.Tensor]] = {
        name: [] for name in ("prompts", "responses", "response_mask", "loss_mask", "input_ids", "position_ids")
    }
    for output in outputs:
        prompts = torch.tensor(output.prompt_ids, dtype=torch.int64)
        responses = torch.tensor(output.response_ids, dtype=torch.int64)
        mask = torch.tensor(output.response_mask, dtype=torch.int64)
        input_ids = torch.cat([prompts, responses])
        for name, value in (("prompts", prompts), ("responses", responses), ("response_mask", mask), ("loss_mask", mask),
                            ("input_ids", input_ids), ("position_ids", torch.arange(input_ids.numel()))):
            columns[name].append(value)
    nested = {name: torch.nested.as_nested_tensor(values, layout=torch.jagged) for name, values in columns.items()}
    return tu.get_tensordict(tensor_dict=nested)


def advantages_for(
    config: DictConfig, outputs: Sequence[Any], infos: Sequence[dict[str, Any]], uids: np.ndarray, metrics: dict
) -> torch.Tensor:
    """(bs,) advantages from the judge fields, through verl's estimator dispatch (as ``pearl_sync``)."""
    settings = pearl_config_from_root(config).advantage
    rewards = torch.tensor([float(np.mean([info[d] for d in settings.dims])) for info in infos])
    return scalar_advantages(config.algorithm, uids, list(infos), settings, metrics=metrics, rewards=rewards)


def policy_update(actor: Any, config: DictConfig, outputs: Sequence[Any], advantages: torch.Tensor) -> dict[str, float]:
    """Recompute old log-probs with the actor, then one GSPO update over the batch.

    Returns:
        The actor's metrics (loss, pg_loss, clip fractions, grad norm, entropy...), averaged.
    """
    temperature = float(config.actor_rollout_ref.rollout.temperature)
    batch = sequence_batch(outputs)
    tu.assign_non_tensor(batch, calculate_entropy=True, compute_loss=False, temperature=temperature)
    inferred = actor.infer_batch(batch)
    mask = batch["response_mask"]
    old_log_probs = response_from_nested(inferred["log_probs"], mask)
    entropy = response_from_nested(inferred["entropy"], mask).to_padded_tensor(0.0)

    batch = sequence_batch(outputs)
    batch["old_log_probs"] = old_log_probs
    batch["advantages"] = response_to_nested(advantages.unsqueeze(-1) * mask.to_padded_tensor(0).float(), mask)
    sequences = len(outputs)
    actor_config = config.actor_rollout_ref.actor
    tu.assign_non_tensor(
        batch,
        global_batch_size=sequences,
        mini_batch_size=actor_config.ppo_mini_batch_size * config.actor_rollout_ref.rollout.n,
        epochs=actor_config.ppo_epochs,
        seed=actor_config.data_loader_seed,
        dataloader_kwargs={"shuffle": actor_config.shuffle},
        temperature=temperature,
        calculate_entropy=False,
    )
    result = actor.train_mini_batch(batch)
    metrics = {
        (key if key.startswith(("actor/", "perf/")) else f"actor/{key}"): _mean(value)
        for key, value in tu.get(result, "metrics").items()
    }
    padded_mask = mask.to_padded_tensor(0).float()
    metrics["actor/entropy"] = float((entropy * padded_mask).sum() / padded_mask.sum().clamp(min=1))
    return metrics


def _mean(value: Any) -> float:
    if isinstance(value, list | tuple):
        values = [_mean(v) for v in value]
        return float(np.mean(values)) if values else float("nan")
    if hasattr(value, "value"):  # verl's Metric wrapper
        return _mean(value.value)
    return float(value)
