"""Blind pairwise comparison of tutoring dialogues by teachers (the paper's human evaluation).

``pearl-verl compare`` builds pairs from eval-tutor results (:mod:`.pairs`), serves them to
identified annotators in a small web app with identities hidden and the A/B order randomised
(:mod:`.app`, :mod:`.store`, :mod:`.order`), and reports Win/Tie/Loss/Preference, inter-annotator
agreement and an eval-rm export (:mod:`.report`, :mod:`.agreement`). See ``docs/compare.md``.
"""
