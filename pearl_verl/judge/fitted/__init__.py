"""The fitted judge: one-turn criteria learned from teachers' labels, the rest of the rubric as the heuristic.

- :mod:`.turn`: what one candidate tutor turn and its conversation give the model (text fields, counts);
- :mod:`.model`: the fitted parameters (shipped in ``pearl_verl/resources/judge/``), loaded and applied;
- :mod:`.fit`: fitting them from a label file with scikit-learn, with a conversation-grouped CV report;
- :mod:`.judge`: :class:`~.judge.FittedJudge`, the backend ``fitted`` of :class:`~pearl_verl.judge.judge_config.JudgeConfig`;
- :mod:`.fit_cli`: ``pearl-verl judge-fit``.
"""
