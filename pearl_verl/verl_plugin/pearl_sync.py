"""``pearl_sync``: verl's synchronous V1 trainer with an advantage step that sees the judge's fields.

verl's V1 ``PPOTrainer._compute_advantage`` reads only ``uid, response_mask, rm_scores, ...`` from
TransferQueue, so per-dimension scores never reach an estimator. This trainer mode reads each
sample's ``extra_fields["reward_extra_info"]`` (written by the reward loop) as well and passes it
to the configured estimator when the estimator accepts ``pearl_inputs``; any other estimator
runs through verl's own step unchanged. Select with ``trainer.v1.trainer_mode=pearl_sync``.

Each validation (``trainer.val_before_train``, ``trainer.test_freq``) also writes its judged dialogues to
``<trainer.validation_data_dir>/<step>.pearl.jsonl`` (:func:`~pearl_verl.verl_plugin.rollout_dump.validation_rows`):
verl's validation logs means and decoded text only, and a held-out evaluation needs the episodes with their
judgements (``train-local``'s summary and ``pearl-verl view`` read them).

It also runs the failure guard (``pearl.failure_guard``): when the judge, student or tutor fails for
most dialogues step after step, the run stops after the step that tripped it, with that step's
update done, saved (:mod:`pearl_verl.verl_plugin.stall`) and its metrics logged.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import transfer_queue as tq
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict
from transfer_queue import KVBatchMeta
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.workers.utils.padding import response_to_nested

from pearl_verl.advantage.failure_guard import TrainingStalled
from pearl_verl.errors import InputError
from pearl_verl.verl_plugin.adv_estimator import accepts_pearl_inputs, check_scalar_fallback, pearl_config_from_root
from pearl_verl.verl_plugin.advantage_step import pearl_advantage_step
from pearl_verl.verl_plugin.compat import check_v1_advantage_step, check_v1_validation, session_member, split_row_key
from pearl_verl.verl_plugin.names import VALIDATION_TIME_KEY
from pearl_verl.verl_plugin.rollout_dump import dump_rows, validation_rows, write_dump
from pearl_verl.verl_plugin.stall import failure_guard, stop_with_checkpoint

logger = logging.getLogger(__name__)

TRAINER_MODE = "pearl_sync"
REPLAY_POLL_S = 0.1
_FIELDS = ["uid", "response_mask", "rm_scores", "extra_fields", "rollout_log_probs", "old_log_probs"]


@register_trainer(TRAINER_MODE)
class PearlSyncTrainer(PPOTrainerSync):
    """verl's ``sync`` trainer whose advantage step forwards per-dimension judge fields."""

    def __init__(self, config: DictConfig) -> None:
        check_v1_advantage_step()  # before verl builds workers: a renamed step would never be called
        check_v1_validation()
        self.pearl_config = pearl_config_from_root(config)  # before verl's __init__ builds the replay buffer
        super().__init__(config)
        self.failure_guard = failure_guard(config)
        self._stall: TrainingStalled | None = None
        self._stop: TrainingStalled | None = None  # the stall, with where its step is saved
        self._saved_step: int | None = None
        check_pearl_trainer_config(config)

    def _build_replay_buffer(self) -> Any:
        buffer = super()._build_replay_buffer()
        # verl's sync replay buffer checks every 2 s whether the step's rollouts are done: up to 2 s
        # lost a step, which is noise on a cluster and a fifth of a CPU step. A check costs a TransferQueue lookup.
        if getattr(buffer, "poll_interval", 0) > REPLAY_POLL_S:
            buffer.poll_interval = REPLAY_POLL_S
        if self.pearl_config.agent.seed_turns:
            sample = buffer.sample

            def in_dataset_order(*args: Any, **kwargs: Any) -> Any:
                batch, info = sample(*args, **kwargs)
                return dataset_order(batch), info

            buffer.sample = in_dataset_order
        return buffer

    def _compute_advantage(self, batch: KVBatchMeta, metrics: dict) -> KVBatchMeta:
        """Advantages from the judge's per-dimension fields, written back to TransferQueue."""
        estimator = core_algos.get_adv_estimator_fn(self.config.algorithm.adv_estimator)
        if not accepts_pearl_inputs(estimator):
            return super()._compute_advantage(batch, metrics)

        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=_FIELDS)
        nested_mask = data["response_mask"]
        uids = np.array(data.pop("uid").tolist(), dtype=object)
        extras = data.pop("extra_fields").tolist()
        padding = [bool(tag.get("is_padding", False)) for tag in batch.tags]
        proto = DataProto(batch=data.to_padded_tensor())
        proto, corrected = self._apply_rollout_correction(proto, metrics)

        final_rows, row_to_final = final_session_rows(batch.keys)
        scalar = pearl_advantage_step(
            self.config.algorithm,
            self.pearl_config.advantage,
            uids[final_rows],
            [extras[i] for i in final_rows],
            metrics,
            rewards=proto.batch["rm_scores"][final_rows].sum(dim=-1),
            padding=[padding[i] for i in final_rows],
        )
        self._feed_failure_guard(metrics)
        advantages = scalar[row_to_final].unsqueeze(-1) * proto.batch["response_mask"]
        output = {"advantages": advantages, "returns": advantages}
        if corrected:
            output["response_mask"] = proto.batch["response_mask"]
            if "rollout_is_weights" in proto.batch:
                output["rollout_is_weights"] = proto.batch["rollout_is_weights"]
        nested = {name: response_to_nested(value, nested_mask) for name, value in output.items()}
        return tq.kv_batch_put(
            keys=batch.keys, partition_id=batch.partition_id, fields=TensorDict(nested, batch_size=len(batch))
        )

    def _log_rollout_data(self, batch: KVBatchMeta, timing_raw: dict, rollout_data_dir: str) -> None:
        """verl's dump, and beside it each dialogue with its judge fields and advantage (:mod:`rollout_dump`)."""
        super()._log_rollout_data(batch, timing_raw, rollout_data_dir)
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                               select_fields=["uid", "extra_fields", "advantages", "response_mask"])
        final_rows, _ = final_session_rows(batch.keys)
        padding = [bool(tag.get("is_padding", False)) for tag in batch.tags]
        rows = [i for i in final_rows if not padding[i]]
        uids, extras = data.pop("uid").tolist(), data.pop("extra_fields").tolist()
        advantages = data["advantages"].to_padded_tensor(0.0)
        masks = data["response_mask"].to_padded_tensor(0)
        scalars = [float(advantages[i][masks[i].bool()][0]) if masks[i].any() else 0.0 for i in rows]
        dump = dump_rows(self.global_steps, [uids[i] for i in rows], [extras[i] for i in rows], scalars,
                         self.pearl_config.advantage)
        write_dump(rollout_data_dir, self.global_steps, dump)

    def _validate(self) -> dict[str, float]:
        """verl's validation, and its judged dialogues beside verl's dump (``<step>.pearl.jsonl``).

        They are read from TransferQueue as verl's step takes each batch from the replay buffer, before verl
        clears it; the judge has scored them by then (the reward loop runs in the agent-loop workers).
        """
        folder = self.config.trainer.get("validation_data_dir")
        start = time.perf_counter()
        if not folder:
            return {**super()._validate(), VALIDATION_TIME_KEY: time.perf_counter() - start}
        rows: list[dict[str, Any]] = []
        buffer = self.replay_buffer
        sample, own = buffer.sample, vars(buffer).get("sample")  # own: the dataset-order wrapper, if set

        def sample_and_keep(*args: Any, **kwargs: Any) -> Any:
            batch, info = sample(*args, **kwargs)
            rows.extend(self._validation_rows(batch))
            return batch, info

        buffer.sample = sample_and_keep
        try:
            metrics = super()._validate()
        finally:  # what sampled before
            if own is None:
                del buffer.sample
            else:
                buffer.sample = own
        write_dump(folder, self.global_steps, sorted(rows, key=lambda row: (row["problem"], row["member"])))
        return {**metrics, VALIDATION_TIME_KEY: time.perf_counter() - start}

    def _validation_rows(self, batch: KVBatchMeta) -> list[dict[str, Any]]:
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields", "index"])
        final_rows, _ = final_session_rows(batch.keys)
        extras, problems = data.pop("extra_fields").tolist(), data.pop("index").tolist()
        sessions = [split_row_key(batch.keys[i])[0] for i in final_rows]
        return validation_rows(self.global_steps, sessions, [extras[i] for i in final_rows],
                               [int(problems[i]) for i in final_rows], [session_member(s) for s in sessions])

    def _feed_failure_guard(self, metrics: dict) -> None:
        """Count this step; a stop is kept for :meth:`on_step_end`, where the step can be saved."""
        try:
            self.failure_guard.update(metrics, getattr(self, "global_steps", None))
        except TrainingStalled as stall:
            self._stall = stall

    def _save_checkpoint(self) -> None:
        super()._save_checkpoint()
        self._saved_step = self.global_steps  # so a stop in this step does not save it twice

    def on_step_end(self) -> None:
        """verl's weight sync, or, when the failure guard tripped, this step's checkpoint and the stop.

        The stop is raised at the next step's start (or when ``fit`` returns after the last step), so
        verl logs the tripping step's metrics first; the replicas are not woken for a step that will not come.
        """
        if self._stall is not None:
            self._stop = stop_with_checkpoint(self, self._stall, saved=self._saved_step == self.global_steps)
            return
        super().on_step_end()

    def on_step_begin(self) -> None:
        self.raise_pending_stop()
        super().on_step_begin()

    def fit(self, *args: Any, **kwargs: Any) -> Any:
        result = super().fit(*args, **kwargs)
        self.raise_pending_stop()  # the guard tripped at the last step
        return result

    def raise_pending_stop(self) -> None:
        """Raise the failure guard's stop once its step was saved and logged."""
        if self._stop is not None:
            raise self._stop

    def _apply_rollout_correction(self, proto: DataProto, metrics: dict) -> tuple[DataProto, bool]:
        """verl's decoupled-mode rollout correction (IS weights, rejection), as its own step does."""
        corr = self.config.algorithm.get("rollout_correction", None)
        if corr is None or corr.get("bypass_mode", False) or "rollout_log_probs" not in proto.batch:
            return proto, False
        proto, corr_metrics = compute_rollout_correction_and_add_to_batch(proto, corr)
        metrics.update(corr_metrics)
        return proto, True


def check_pearl_trainer_config(config: DictConfig) -> None:
    """Reject settings whose effect the PEARL advantage step would silently drop."""
    estimator = core_algos.get_adv_estimator_fn(config.algorithm.adv_estimator)
    if accepts_pearl_inputs(estimator) and config.algorithm.get("use_kl_in_reward", False):
        raise InputError(
            "algorithm.use_kl_in_reward=True has no effect with the pearl estimator: its advantage comes "
            "from the judge's per-dimension scores, not from token rewards. Set "
            "algorithm.use_kl_in_reward=False (the paper trains without KL), or add "
            "actor_rollout_ref.actor.use_kl_loss=True for a KL term in the loss."
        )
    v1_mode = OmegaConf.select(config, "trainer.v1.trainer_mode", default=None)
    if accepts_pearl_inputs(estimator) and config.trainer.get("use_v1", True) and v1_mode != TRAINER_MODE:
        check_scalar_fallback(config)  # verl's other V1 modes hand the estimator the scalar reward only


def dataset_order(batch: KVBatchMeta) -> KVBatchMeta:
    """The batch's rows by dataset row, group member and output, not in the order their dialogues finished.

    verl's replay buffer hands a step's rows over as they finished, so the update's micro-batches, and the order
    in which they sum, would follow timing; with ``pearl.agent.seed_turns`` every sampled token follows the seed,
    and in this order so does the update.
    """
    if batch.size < 2:
        return batch
    rows = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["index"]).pop("index").tolist()

    def position(i: int) -> tuple[int, int, int]:
        session, output = split_row_key(batch.keys[i])
        return int(rows[i]), session_member(session), output

    order = sorted(range(batch.size), key=position)
    return dataclasses.replace(batch, keys=[batch.keys[i] for i in order], tags=[batch.tags[i] for i in order])


def final_session_rows(keys: Sequence[str]) -> tuple[list[int], torch.Tensor]:
    """Rows holding each session's last output, and for every row the position of its session's.

    verl keys rows ``{uid}_{session_id}_{output_index}`` (:func:`pearl_verl.verl_plugin.compat.split_row_key`);
    an agent loop that returns several outputs
    per episode shares one reward, so the group statistics must count each session once.

    Returns:
        (final_rows, row_to_final): indices into ``keys``, and a (bs,) int64 tensor mapping each
        row to its session's entry in ``final_rows``.
    """
    last: dict[str, tuple[int, int]] = {}
    sessions = []
    for row, key in enumerate(keys):
        session, output_index = split_row_key(key)
        sessions.append(session)
        if session not in last or last[session][0] < output_index:
            last[session] = (output_index, row)
    final_rows = [row for _, row in last.values()]
    position = {session: i for i, session in enumerate(last)}
    return final_rows, torch.tensor([position[s] for s in sessions], dtype=torch.int64)
