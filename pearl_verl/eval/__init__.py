"""The evaluation suite: tutors, simulators, reward models and public benchmarks (docs/eval.md).

Commands (each a ``*_cli.py`` module with ``register(subparsers)``):

- ``pearl-verl eval-tutor``: tutors x student simulators x problems under matched conditions,
  judged; results JSONL (incremental, resumable), the paper's Markdown table with confidence
  intervals, the cross-simulator table, radar and bar plots.
- ``pearl-verl eval-simulator``: the paper's simulator statistics from annotated dialogues and the
  ability-controllability plot.
- ``pearl-verl eval-rm``: reward-model agreement with pairwise preferences, per margin bucket.
- ``pearl-verl eval-mtb``: MathTutorBench's nine tasks from local files (no hub).
- ``pearl-verl eval-mathdial``: MathDial success@k / telling@k.

Nothing here imports verl.
"""
