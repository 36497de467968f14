"""The precision of training on a host CPU: bfloat16 where the CPU multiplies it natively, float32 where it would be
emulated. train-local and the CPU recipe (``recipes/pearl/run_cpu_pearl_gspo.sh``) choose it the same way.

    python -m pearl_verl.train_local.precision auto   # the update's precision overrides for main_ppo, one a line

Measured on the AVX2 kernels (2-core AMD EPYC, torch's, MKL's and oneDNN's capped at AVX2): the CPU recipe's
learning run (30 steps, tiny model) took 234 s under verl's bfloat16 autocast and 132 s in float32, its update 116 s
against 33 s; both learned (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DTYPE_SETTINGS = ("auto", "float32", "bfloat16")
"""Values of train-local's ``rollout_dtype`` and ``train_dtype`` and of the CPU recipe's ``TRAIN_DTYPE``
(:func:`resolve_dtype` turns them into a dtype)."""
RL_ENGINE = "actor_rollout_ref.actor.fsdp_config"
SFT_ENGINE = "engine"
"""Where the FSDP engine's settings are in main_ppo's config and in verl's SFT trainer's."""


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AVX512-BF16 or AMX): 2-3x faster prefill.

    Not when torch's kernels are capped below AVX-512 (``ATEN_CPU_CAPABILITY=avx2``, as when a run stands in for an
    AVX2 machine): bfloat16 is then emulated, slower than float32."""
    import torch

    if not torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_dtype(setting: str, model: str, role: str = "rollout") -> torch.dtype:
    """The dtype for a ``rollout_dtype`` (``role="rollout"``) or ``train_dtype`` (``role="train"``) setting."""
    import torch

    if setting != "auto":
        return getattr(torch, setting)
    if not cpu_has_native_bf16() or (role == "rollout" and model == "tiny"):
        return torch.float32  # emulated bf16 is slower than fp32; a 229K-parameter model's generation gains nothing
    return torch.bfloat16


def precision_overrides(compute_dtype: str, engine: str = RL_ENGINE) -> list[str]:
    """The update's precision on the CPU: the weights and optimizer are float32 (``pearl_gspo_cpu``, ``pearl_sft_cpu``);
    verl's FSDP engine computes under bf16 autocast unless its ``mixed_precision`` says otherwise (its ``dtype``
    setting is not read by the FSDP engine), so ``compute_dtype="float32"`` sets a float32 mixed precision at
    ``engine`` (main_ppo's actor or the SFT trainer's engine)."""
    if compute_dtype != "float32":
        return []
    return [f"+{engine}.mixed_precision={{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}}"]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``: the name the settings and verl's overrides use."""
    return str(dtype).removeprefix("torch.")


def train_overrides(setting: str, engine: str = RL_ENGINE) -> list[str]:
    """The overrides that make verl's update compute in the precision ``setting`` resolves to on this CPU."""
    return precision_overrides(dtype_name(resolve_dtype(setting, model="", role="train")), engine)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pearl_verl.train_local.precision", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train_dtype", choices=DTYPE_SETTINGS, help="the update's compute precision")
    parser.add_argument("--engine", default=RL_ENGINE, help=f"where the FSDP engine's settings are (default {RL_ENGINE})")
    args = parser.parse_args(argv)
    print("\n".join(train_overrides(args.train_dtype, args.engine)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
