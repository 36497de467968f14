"""Agreement with human labels (issue 42): pairwise agreement, ties, failures, the Revealing pairs rule, and
macro-F1 thresholds chosen on train+val, each on a hand-made MRBench file whose answer is worked out here.

A fake judge gives every one-turn criterion of a candidate the score set for its text (None: the judgement
fails), so each test knows the mapped score of every response.
"""

import asyncio
import math
from statistics import NormalDist

import pytest

from pearl_verl.data.mrbench import read_human_labels
from pearl_verl.judge.human_agreement import (
    MAPPED,
    MAPPING,
    NEVER,
    RatedResponse,
    candidate_thresholds,
    choose_thresholds,
    macro_f1,
    mapped_score,
    pairwise_agreement,
)
from pearl_verl.judge.human_check import check_human, rated_responses
from pearl_verl.judge.one_turn import TurnJudgement
from pearl_verl.judge.rubric import ONE_TURN_CRITERIA

MI = "Mistake_Identification"
REVEALING = "Revealing_of_the_Answer"


class FakeJudge:
    """Every one-turn criterion of a candidate gets ``scores[text]``; None is a failed judgement."""

    def __init__(self, scores):
        self.scores = scores
        self.judged = []

    async def judge_turn(self, episode):
        text = episode.turns[-1].text
        self.judged.append(text)
        value = self.scores[text]
        if value is None:
            return TurnJudgement(ok=False, error="judge endpoint failed (http_503): down", reason="llm_http_503")
        return TurnJudgement(ok=True, scores={c: value for c in ONE_TURN_CRITERIA},
                             rationales={c: f"turn shows {c}" for c in ONE_TURN_CRITERIA})


def _check(path, scores, splits=("test",)):
    judge = FakeJudge(scores)
    return asyncio.run(check_human(judge, path, list(splits))), judge


def _wilson(successes, n):
    """The 95% Wilson score interval, written out here from its formula."""
    z = NormalDist().inv_cdf(0.975)
    p = successes / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def test_a_judge_that_orders_three_of_four_pairs_agrees_on_075_with_the_wilson_interval(make_mrbench_row,
                                                                                      write_mrbench):
    # Classes Yes, No, No, Yes: the pairs whose labels differ are AB, AC, DB, DC (AD and BC are alike).
    path = write_mrbench([make_mrbench_row({
        "A": ("a", {MI: "Yes"}), "B": ("b", {MI: "No"}), "C": ("c", {MI: "No"}), "D": ("d", {MI: "Yes"}),
    })])
    report, judge = _check(path, {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.5})  # DB ties; AB, AC, DC ordered
    assert sorted(judge.judged) == ["a", "b", "c", "d"]
    result = report.to_dict(0.5, 0.9)["by_dimension"][MI]
    assert (result["pairs"], result["agreed"], result["ties"], result["failed"]) == (4, 3, 1, 0)
    low, high = _wilson(3, 4)
    assert result["agreement"] == pytest.approx({"mean": 0.75, "low": low, "high": high, "n": 4})
    assert 0.30 < low < 0.31 and 0.95 < high < 0.96
    # the other dimensions are not labelled in this file: no pairs, no estimate, never below a floor
    assert all(report.results[d].count.pairs == 0 for d in MAPPED if d != MI)
    assert report.below(0.76) == [MI] and report.below(0.75) == []


def test_a_judge_that_reverses_the_order_agrees_on_nothing(make_mrbench_row, write_mrbench):
    path = write_mrbench([make_mrbench_row({"A": ("a", {MI: "Yes"}), "B": ("b", {MI: "To some extent"}),
                                            "C": ("c", {MI: "No"})})])
    report, _ = _check(path, {"a": 0.0, "b": 0.5, "c": 1.0})
    count = report.results[MI].count
    assert (count.pairs, count.agreed, count.ties) == (3, 0, 0)
    assert not report.passes(0.5, 0.9) and "Mistake_Identification 0%" in report.verdict(0.5, 0.9)


def test_ties_and_failed_judgements_count_as_no_agreement_and_apart(make_mrbench_row, write_mrbench):
    path = write_mrbench([make_mrbench_row({
        "A": ("a", {MI: "Yes"}), "B": ("b", {MI: "No"}), "C": ("c", {MI: "No"}), "D": ("d", {MI: "To some extent"}),
    })])
    # A-B: B failed; A-C: ordered; A-D: tie; B-D: B failed; C-D: ordered. B-C are alike.
    report, _ = _check(path, {"a": 1.0, "b": None, "c": 0.0, "d": 1.0})
    count = report.results[MI].count
    assert (count.pairs, count.agreed, count.ties, count.failed) == (5, 2, 1, 2)
    assert count.estimate.mean == pytest.approx(2 / 5)
    result = report.to_dict(0.5, 0.9)
    assert result["parse_rate"]["mean"] == pytest.approx(3 / 4)
    assert result["judgements"][1]["scores"] is None and "http_503" in result["judgements"][1]["error"]
    assert any("http_503" in failure for failure in result["failures"])


def test_revealing_pairs_are_one_no_against_one_yes_and_never_two_yeses(make_mrbench_row, write_mrbench):
    correct, wrong = "Yes (and the answer is correct)", "Yes (but the answer is incorrect)"
    path = write_mrbench([make_mrbench_row({
        "N1": ("n1", {REVEALING: "No"}), "YC": ("yc", {REVEALING: correct}),
        "YI": ("yi", {REVEALING: wrong}), "N2": ("n2", {REVEALING: "No"}),
    })])
    # Counted: N1-YC, N1-YI, N2-YC ordered, N2-YI tied. Not counted: N1-N2 (alike) and YC-YI, which this judge
    # orders against the labels' class order (YI 0.5 > YC 0.0): counting it would add a disagreement.
    report, _ = _check(path, {"n1": 1.0, "yc": 0.0, "yi": 0.5, "n2": 0.5})
    count = report.results[REVEALING].count
    assert (count.pairs, count.agreed, count.ties) == (4, 3, 1)


def test_pairs_never_cross_conversations_even_under_one_repeated_id(make_mrbench_row, write_mrbench):
    # MRBench repeats conversation ids on different rows: each row is its own conversation.
    path = write_mrbench([make_mrbench_row({"A": ("a", {MI: "Yes"})}, conversation_id="same"),
                          make_mrbench_row({"B": ("b", {MI: "No"})}, conversation_id="same")])
    report, _ = _check(path, {"a": 0.0, "b": 1.0})
    assert report.results[MI].count.pairs == 0 and report.results[MI].count.estimate is None
    assert not report.measured_any() and not report.passes(0.0, 0.0)
    assert "nothing was measured" in report.verdict(0.5, 0.9)


def _tuned_file(make_mrbench_row, write_mrbench, tuning_labels):
    """Train and val rows labelled ``tuning_labels`` at scores 0, 0.5, 1; a test row at 0.2, 0.6, 0.9."""
    rows = [make_mrbench_row({f"T{i}": (f"{split}{i}", {MI: label}) for i, label in enumerate(tuning_labels)},
                             split=split, conversation_id=split) for split in ("train", "val")]
    rows.append(make_mrbench_row({"A": ("low", {MI: "No"}), "B": ("mid", {MI: "To some extent"}),
                                  "C": ("high", {MI: "Yes"})}, split="test", conversation_id="test"))
    scores = {f"{split}{i}": s for split in ("train", "val") for i, s in enumerate((0.0, 0.5, 1.0))}
    return write_mrbench(rows), scores | {"low": 0.2, "mid": 0.6, "high": 0.9}


def test_thresholds_chosen_on_train_and_val_set_the_test_macro_f1(make_mrbench_row, write_mrbench):
    path, scores = _tuned_file(make_mrbench_row, write_mrbench, ("No", "To some extent", "Yes"))
    report, judge = _check(path, scores)
    assert len(judge.judged) == 9  # the tuning rows are judged too, but measured only the test row
    result = report.to_dict(0.5, 0.9)
    assert (result["conversations"], result["tuning_conversations"]) == (1, 2)
    assert result["tuning_splits"] == ["train", "val"]
    mi = result["by_dimension"][MI]
    assert mi["thresholds"] == [0.25, 0.75] and mi["tuning_macro_f1"] == 1.0 and mi["tuning_responses"] == 6
    assert mi["macro_f1"] == 1.0 and mi["f1_responses"] == 3  # 0.2 -> No, 0.6 -> To some extent, 0.9 -> Yes
    assert mi["pairs"] == 3  # agreement on the test row only


def test_other_tuning_labels_move_the_thresholds_and_the_test_macro_f1(make_mrbench_row, write_mrbench):
    # Tuning says 0 and 0.5 are both "No": the best thresholds put both below one cut at 0.75, so the test's
    # 0.6 is predicted "No" too: F1 No = 2/3 (one false positive), To some extent = 0, Yes = 1 -> 5/9.
    path, scores = _tuned_file(make_mrbench_row, write_mrbench, ("No", "No", "Yes"))
    report, _ = _check(path, scores)
    mi = report.results[MI]
    assert mi.thresholds == (0.75, 0.75) and mi.tuning_f1 == 1.0
    assert mi.f1 == pytest.approx(5 / 9)


def test_no_macro_f1_without_a_tuning_split_or_when_it_is_measured(make_mrbench_row, write_mrbench):
    path, scores = _tuned_file(make_mrbench_row, write_mrbench, ("No", "To some extent", "Yes"))
    report, _ = _check(path, scores, splits=("test", "val"))  # val measured: it cannot also set the thresholds
    assert report.tuning == [] and report.results[MI].f1 is None and report.results[MI].thresholds is None
    assert any("no macro-F1" in note for note in report.notes)
    only_test = write_mrbench([make_mrbench_row({"A": ("a", {MI: "Yes"}), "B": ("b", {MI: "No"})})], "test.json")
    report, _ = _check(only_test, {"a": 1.0, "b": 0.0})
    assert report.results[MI].f1 is None and report.results[MI].count.agreed == 1


def test_macro_f1_counts_a_failed_judgement_against_its_class_and_averages_the_classes_seen():
    assert macro_f1([0, 1, 2], [0, 1, 2]) == 1.0
    assert macro_f1([0, 1, 2], [0, None, 2]) == pytest.approx(2 / 3)  # class 1 has no true positive
    assert macro_f1([2, 2], [2, 0]) == pytest.approx((2 / 3 + 0) / 2)  # class 0 only predicted, still averaged
    assert macro_f1([], []) is None
    with pytest.raises(ValueError):
        macro_f1([0], [0, 1])


def test_threshold_candidates_reach_every_score_or_none_and_ties_go_to_the_lower_thresholds():
    assert candidate_thresholds([1.0, 0.0, 0.5, 0.5]) == [0.0, 0.25, 0.75, NEVER]
    # all one class: the first best pair is (0, 0), every score predicted class 2
    assert choose_thresholds([0.0, 1.0], [2, 2]) == ((0.0, 0.0), 1.0)
    # a class never predicted needs a threshold no score reaches
    assert choose_thresholds([0.0, 1.0], [0, 0]) == ((NEVER, NEVER), 1.0)
    assert choose_thresholds([], []) is None


def test_the_mapping_is_the_docs_and_a_two_criterion_score_is_their_mean():
    assert MAPPING["humanlikeness"] is None and "humanlikeness" not in MAPPED
    assert MAPPING["Providing_Guidance"] == ("guide.guidance_effective", "leak.hint_specificity")
    assert all(c in ONE_TURN_CRITERIA for d in MAPPED for c in MAPPING[d])
    scores = {c: 0.0 for c in ONE_TURN_CRITERIA} | {"guide.guidance_effective": 1.0, "leak.hint_specificity": 0.5}
    assert mapped_score(scores, "Providing_Guidance") == 0.75 and mapped_score(None, "Providing_Guidance") is None
    with pytest.raises(KeyError):
        mapped_score(scores, "humanlikeness")


def test_rated_responses_carry_the_files_classes_and_the_report_says_humanlikeness_is_not_mapped(
        make_mrbench_row, write_mrbench):
    path = write_mrbench([make_mrbench_row({"A": ("a", {MI: "To some extent", "humanlikeness": "No"})})])
    [conversation] = read_human_labels(path)
    judgement = TurnJudgement(ok=True, scores={c: 0.5 for c in ONE_TURN_CRITERIA})
    [rated] = rated_responses([conversation], [[judgement]])
    assert rated == RatedResponse(0, {MI: 1, "humanlikeness": 0}, {d: 0.5 for d in MAPPED})
    assert pairwise_agreement([rated], MI).pairs == 0
    report, _ = _check(path, {"a": 0.5})
    assert report.to_dict(0.5, 0.9)["not_mapped"] == ["humanlikeness"]
