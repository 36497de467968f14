"""The ``pearl`` estimator as verl dispatches it, with and without per-dimension judge fields.

    python examples/pearl_in_verl_dispatch.py

1. verl's own ``compute_advantage`` with ``algorithm.adv_estimator=pearl`` on a scalar reward: the
   estimator's fallback (what an existing single-reward setup gets).
2. The same batch with the judge's fields in ``non_tensor_batch``, through the legacy-trainer hook
   (what ``python -m pearl_verl.verl_plugin.main_ppo trainer.use_v1=false`` installs).
"""

import numpy as np
import torch
from omegaconf import OmegaConf
from verl.protocol import DataProto
from verl.trainer.ppo import ray_trainer

from pearl_verl.dims import DIMENSIONS
from pearl_verl.verl_plugin.legacy import legacy_advantage_hook

config = OmegaConf.create({"algorithm": {"adv_estimator": "pearl"}, "pearl": {}})  # the method's defaults
uid = np.array(["q1"] * 4 + ["q2"] * 4, dtype=object)
# response_mask: 1 on tutor tokens, 0 on the student's tokens in between
mask = torch.tensor([[1, 1, 0, 0, 1, 1]] * 8)
scalar = torch.tensor([0.9, 0.7, 0.2, 0.5, 0.6, 0.6, 0.1, 1.0])
rewards = torch.zeros(8, 6)
rewards[:, -1] = scalar

batch = DataProto.from_dict(
    tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors={"uid": uid}
)
out = ray_trainer.compute_advantage(batch, adv_estimator="pearl", config=config.algorithm)
print("1. scalar fallback, advantage per tutor token:")
print(out.batch["advantages"])

gen = np.random.default_rng(0)
fields = {dim: gen.random(8).round(2) for dim in DIMENSIONS}
fields |= {"judge_ok": np.array([1, 1, 1, 0, 1, 1, 1, 1]), "completed": np.ones(8, dtype=int),
           "tutor_turns": np.array([4, 6, 3, 5, 7, 7, 2, 9])}
batch = DataProto.from_dict(
    tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors={"uid": uid, **fields}
)
with legacy_advantage_hook():
    out = ray_trainer.compute_advantage(batch, adv_estimator="pearl", config=config.algorithm)
print("\n2. eight judge dimensions (sample 3's judge failed -> 0):")
print(out.batch["advantages"][:, 0])
print({k: round(v, 3) for k, v in out.meta_info["pearl_metrics"].items() if "/reward/" not in k})
