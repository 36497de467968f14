"""The models a run starts from: tiny random ones built offline (:mod:`~.tiny`), or a real one (:mod:`~.prepare`);
and the one path that generates with a local model (:mod:`~.hf_generate`, with :mod:`~.prefix_cache`), for verl's
``hf`` rollout and the evaluations' local chat backend."""
