"""The pedagogical judge (paper §3.2): rubric, prompt, parser, LLM and offline judges; no verl imports."""
