"""Break one part of the training path on purpose, in every process of a verl run, to show a learning test catches it.

verl imports the modules named in ``VERL_USE_EXTERNAL_MODULES`` in every process that imports verl (the driver, Ray's
workers, the agent-loop and rollout actors), so this module, on ``PYTHONPATH``, patches each of them the same way.
``PEARL_SABOTAGE`` names the part:

- ``sign``: the PEARL advantages come out with their sign flipped (``pearl_sync``'s advantage step);
- ``sync``: the ``hf`` rollout server never receives the trained weights (its model loads them as a no-op; it
  loaded the initial weights from the model's path, and the update is still counted), so every rollout comes from
  the initial weights;
- ``mask``: the response mask the agent loop hands verl is shifted right by one token, so the loss lands on the
  token after each tutor token.

``bench/learning_sabotage.py`` runs the learning regression test under each; a learning test worth its name
fails under all three. Nothing of pearl_verl imports this module.
"""

from __future__ import annotations

import os

KINDS = ("sign", "sync", "mask")


def _sign() -> None:
    from pearl_verl.verl_plugin import advantage_step

    honest = advantage_step.scalar_advantages
    advantage_step.scalar_advantages = lambda *args, **kwargs: -honest(*args, **kwargs)


def _sync() -> None:
    # hf_server, not hf_rollout: a worker's first import of verl (and so of this module) can come from inside
    # hf_rollout's own import, while hf_server is imported only when the server starts
    from pearl_verl.verl_plugin.cpu import hf_server

    hf_server.HFGenerateServer.load_weights = lambda self, state_dict: None


def _mask() -> None:
    from pearl_verl.verl_plugin import agent_loop

    honest = agent_loop.PearlTutorAgentLoop._output

    def shifted(self, stream, *args, **kwargs):
        stream.response_mask = [0, *stream.response_mask[:-1]]
        return honest(self, stream, *args, **kwargs)

    agent_loop.PearlTutorAgentLoop._output = shifted


_kind = os.environ.get("PEARL_SABOTAGE", "")
if _kind:
    if _kind not in KINDS:
        raise ValueError(f"PEARL_SABOTAGE={_kind!r} is not one of {KINDS}")
    # verl imports this before its entry-point plugins: register pearl_verl's (its CPU platform) first, as the
    # patched modules read the platform when imported
    import pearl_verl.verl_plugin.register  # noqa: F401

    {"sign": _sign, "sync": _sync, "mask": _mask}[_kind]()
