"""The models a run starts from: tiny random ones built offline (:mod:`~.tiny`), or a real one (:mod:`~.prepare`)."""
