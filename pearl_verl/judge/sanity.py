"""Whether a judgement's rationales say anything: the parser's ``junk_rationale`` check.

A weak served judge fills the output format with text that refers to nothing. Measured with
SmolLM2-135M behind llama-cpp-python (``json_object``; replies recorded verbatim in
``tests/judge/fixtures/weak_judge_replies.json``): rationales such as ``"10"``, ``"5},"``,
``"very-high"``, the numbers 1 to 24 one per criterion, ``"addition"`` for all 24 criteria, and
the criterion's own key. Their scores carry no judgement either (they cycle through the scale), so
such a reply is refused like any other broken output: retried, then flagged (``judge_ok=0``).

The rules, each a :class:`JunkRationale` message naming the criterion:

- a rationale needs :data:`MIN_CONTENT_WORDS` words that are neither the criterion's own key or
  dimension nor scale words (``high``, ``good``, ``yes``, ...) nor the prompt's words for a
  rationale (``short rationale citing the evidence``, ``rationale here``); numbers and punctuation
  are no words;
- one word repeated for most of a rationale is no sentence;
- one rationale (up to its numbers) for more than half of the criteria is no judgement of each;
- fewer distinct rationales than a quarter of the criteria is a few sentences cycled through them
  (measured: 4 sentences over 24 criteria, "No feedback from the tutor was provided", "Yes
  feedback from the tutor was received", ..., their scores cycling 0, 1, 2).

The prompt asks for "a short rationale citing the evidence (turn numbers)"; every rationale of the
offline judge and of the test doubles' judgements passes (tests/judge/test_sanity.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from pearl_verl.judge.judge_contract import CriterionScore
from pearl_verl.judge.rubric import Rubric

MIN_CONTENT_WORDS = 2
REPEATED_SHARE = 0.5
"""A rationale of 4 or more words whose most frequent word is more than this share of them is a repetition."""
SHARED_RATIONALE_SHARE = 0.5
"""More than this share of a judgement's criteria with one rationale (numbers aside) is no judgement of each."""
MIN_DISTINCT_SHARE = 0.25
"""Fewer distinct rationales than this share of the criteria (6 for 24) is a few sentences cycled, not a judgement."""

SCALE_WORDS = frozenset(
    "very high low medium mid middle good bad poor fair ok okay yes no none not na true false correct incorrect "
    "score scores scored rating rated level levels point points full partial partially excellent great strong weak "
    "average moderate max min maximum minimum zero one two three the and or of is it this that".split()
)
"""Words that grade without pointing at anything: a rationale of these alone says nothing about the dialogue."""

TEMPLATE_WORDS = frozenset(
    "rationale rationales sentence sentences short brief citing cite cites evidence number numbers here "
    "placeholder explanation text write insert your".split()
)
"""Words of the prompt's own request for a rationale ("a short rationale citing the evidence (turn
numbers)"): a rationale made of these copies the instruction instead of judging."""

_WORD = re.compile(r"[^\W\d_]{2,}")  # letters only (any script), two or more


def rationale_issue(rationale: str, dimension: str, key: str) -> str | None:
    """Why one rationale says nothing about the dialogue, or None when it may."""
    words = _WORD.findall(rationale.lower())
    own = {dimension.lower(), *key.lower().split("_")}
    content = [w for w in words if w not in own and w not in SCALE_WORDS and w not in TEMPLATE_WORDS]
    if len(content) < MIN_CONTENT_WORDS:
        return (f"{dimension}.{key}.rationale {_shown(rationale)} names nothing in the dialogue "
                f"({len(content)} content word{'s' if len(content) != 1 else ''}; at least {MIN_CONTENT_WORDS})")
    if len(words) >= 4:
        word, count = Counter(words).most_common(1)[0]
        if count > REPEATED_SHARE * len(words):
            return f"{dimension}.{key}.rationale repeats {word!r} {count} times in {len(words)} words"
    return None


def judgement_issue(scores: Sequence[CriterionScore], rubric: Rubric) -> str | None:
    """Why a parsed judgement's rationales are junk, or None; per rationale first, then across criteria."""
    for score in scores:
        issue = rationale_issue(score.rationale, score.dimension, score.criterion)
        if issue:
            return issue
    forms = Counter(_form(score.rationale) for score in scores)
    form, count = forms.most_common(1)[0] if forms else ("", 0)
    if count > SHARED_RATIONALE_SHARE * len(rubric.criteria):
        example = next(score.rationale for score in scores if _form(score.rationale) == form)
        return f"{count} of {len(rubric.criteria)} criteria have the same rationale ({_shown(example)})"
    if len(forms) < MIN_DISTINCT_SHARE * len(rubric.criteria):
        return (f"{len(rubric.criteria)} criteria share {len(forms)} rationales, cycled "
                f"({', '.join(_shown(f, 40) for f, _ in forms.most_common(3))}, ...)")
    return None


def _form(rationale: str) -> str:
    """A rationale without case, numbers and punctuation: 'Turn 3 shows it.' and 'turn 4 shows it' are one."""
    return " ".join(_WORD.findall(rationale.lower()))


def _shown(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
