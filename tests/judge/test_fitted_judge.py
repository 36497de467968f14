"""The fitted judge (pearl_verl.judge.fitted): shipped parameters, refitting, the report, the judge's shape."""

import asyncio
import hashlib
import json

import numpy as np
import pytest

from pearl_verl.cli import main
from pearl_verl.data.mrbench import mrbench_file, read_human_labels
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.features import extract_features
from pearl_verl.judge.fitted.fit import BASELINE, FITTED, cross_validate, examples_of
from pearl_verl.judge.fitted.judge import FITTED_MAPPING, FittedJudge
from pearl_verl.judge.fitted.model import SHIPPED, checksum_path, decode, load_model, read_params
from pearl_verl.judge.fitted.turn import COUNTS, TurnContext
from pearl_verl.judge.human_agreement import MAPPED
from pearl_verl.judge.junk import teaching_dialogues
from pearl_verl.judge.rubric import RUBRIC


def test_the_shipped_parameters_carry_their_checksum_and_name_the_label_file_they_were_fitted_on():
    params = read_params(SHIPPED)
    assert checksum_path(SHIPPED).read_text().split()[0] == hashlib.sha256(SHIPPED.read_bytes()).hexdigest()
    assert params["trained_on"]["sha256"] == hashlib.sha256(mrbench_file().read_bytes()).hexdigest()
    assert params["trained_on"]["responses"] == 1655 and set(params["members"][0]["dimensions"]) == set(MAPPED)
    cv = params["cross_validation"]
    for dimension in MAPPED:  # the report the shipped file was fitted with: ahead of the baseline everywhere
        assert cv[FITTED][dimension]["agreed"] > cv[BASELINE][dimension]["agreed"], dimension


def test_a_changed_parameter_file_is_refused_naming_both_checksums(tmp_path):
    copy = tmp_path / "p.json"
    data = bytearray(SHIPPED.read_bytes())
    data[100] = ord("0") if data[100] != ord("0") else ord("1")
    copy.write_bytes(bytes(data))
    checksum_path(copy).write_text(checksum_path(SHIPPED).read_text())
    with pytest.raises(InputError, match="does not match"):
        read_params(copy)
    checksum_path(copy).unlink()
    with pytest.raises(InputError, match="missing or empty"):
        read_params(copy)


def test_refitting_the_shipped_file_gives_the_shipped_model(tmp_path, capsys):
    out = tmp_path / "refit.json"
    assert main(["judge-fit", "--no-cv", "-o", str(out), "--no-progress"]) == 0
    assert "wrote" in capsys.readouterr().out
    refit, shipped = read_params(out), read_params(SHIPPED)
    for name in ("text", "last"):
        assert refit["vectorizers"][name]["terms"] == shipped["vectorizers"][name]["terms"]
    for new, old in zip(refit["members"], shipped["members"]):
        for dimension in MAPPED:
            np.testing.assert_allclose(decode(new["dimensions"][dimension]["coef"]),
                                       decode(old["dimensions"][dimension]["coef"]), atol=2e-3)
    contexts = [TurnContext([("student", "I got 5 + 4 = 10.")], text) for text in
                ("Look again at 5 + 4: what do you get?", "Great job!", "The answer is 9.")]
    for a, b in zip(load_model(out).score(contexts), load_model(SHIPPED).score(contexts)):
        assert a == pytest.approx(b, abs=1e-3)


def test_cross_validation_reports_the_fitted_model_and_the_baseline_on_held_out_conversations():
    conversations = read_human_labels(mrbench_file())[:40]
    results = cross_validate(examples_of(conversations), seed=0, folds=2)
    for family in (FITTED, BASELINE):
        for dimension in MAPPED:
            result = results[family][dimension]
            assert result.pairs > 0 and result.ties == 0 and 0.5 < result.agreement <= 1
            assert result.macro_f1 is not None and result.responses > 0


def test_too_few_conversations_for_the_folds_is_an_input_error():
    conversations = read_human_labels(mrbench_file())[:3]
    with pytest.raises(InputError, match="cannot be split into 5 folds"):
        cross_validate(examples_of(conversations), folds=5)


def test_the_model_orders_a_located_mistake_above_empty_praise():
    history = [("tutor", "What is 12 - 5?"), ("student", "12 - 5 = 8")]
    located, praise = load_model().score([
        TurnContext(history, "Check your subtraction: 12 - 5 is not 8. Can you count back 5 from 12?"),
        TurnContext(history, "Great job!"),
    ])
    for dimension in ("Mistake_Identification", "Mistake_Location", "Providing_Guidance"):
        assert located[dimension] > praise[dimension] + 0.2, dimension


def test_the_fitted_judge_returns_every_criterion_and_scores_the_mapped_ones_with_the_model():
    judge = FittedJudge()
    for episode in teaching_dialogues(3):
        result = asyncio.run(judge.judge(episode))
        assert result.ok and set(result.dims) == set(DIMENSIONS) and len(result.criteria) == len(RUBRIC)
        by_id = {f"{c.dimension}.{c.criterion}": c for c in result.criteria}
        for dimension, criteria in FITTED_MAPPING.items():
            if criteria:
                assert 0 <= by_id[criteria[0]].score <= 1
        assert by_id["guide.questioning"].rationale.startswith("fitted: Actionability model")
        assert by_id["load.concise"].rationale.startswith("heuristic:")


def test_judge_fit_refuses_to_write_over_its_label_file(tmp_path):
    labels = tmp_path / "labels.json"
    labels.write_text(mrbench_file().read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["judge-fit", str(labels), "-o", str(labels), "--no-cv"]) == 2
    assert json.loads(labels.read_text(encoding="utf-8"))  # untouched


def test_judge_check_human_with_the_fitted_judge_says_it_was_fitted_on_that_file(capsys):
    assert main(["judge-check", "--human", "--backend", "fitted", "--limit", "2", "--no-progress"]) in (0, 1)
    out = capsys.readouterr().out
    assert "fitted on MRBench_V2.json itself" in out and "acc.feedback_correct" in out
    assert "mean(guide.guidance_effective" not in out  # the fitted judge's own mapping: one criterion a dimension


def test_the_stacked_scoring_equals_scikit_learns_predict_proba_member_by_member():
    model = load_model()
    contexts = [TurnContext([("tutor", "What is 7 x 8?"), ("student", "7 x 8 = 54")], text) for text in
                ("Not quite: count 7 eights again.", "Well done!", "Let's check: 7 x 8 = 56. What went wrong?")]
    x = model.matrix(contexts)
    inputs = {True: x, False: x[:, : x.shape[1] - len(COUNTS)]}
    expected = [{d: float(np.mean([models[d][0].predict_proba(inputs[counts])[i] @ models[d][1]
                                   for counts, models in model._members])) for d in model.dimensions}
                for i in range(len(contexts))]
    for got, want in zip(model.score(contexts), expected):
        assert got == pytest.approx(want, abs=1e-12)


def test_a_turn_that_accepts_a_wrong_attempt_scores_zero_on_the_mistake_criteria(make_episode):
    """The model reads "Well done! What do you do with 11?" as a question about the student's number; the rubric's
    level for accepting wrong work is 0."""
    texts = ["Help?", "Let's start: what is 3 times 4?", "11?", "Well done! What do you do with 11?", "12",
             "Good thinking! What do you do with 12 now?"]
    pointed = texts[:3] + ["Let's check that together: what is 3 times 4?"] + texts[4:]
    by_id = {}
    for name, turns in (("accepted", texts), ("pointed", pointed)):
        result = asyncio.run(FittedJudge().judge(make_episode(turns, trace=())))
        by_id[name] = {f"{c.dimension}.{c.criterion}": c for c in result.criteria}
    for criterion in ("acc.feedback_correct", "meta.discover_mistakes"):
        assert by_id["accepted"][criterion].score == 0.0, criterion
        assert by_id["pointed"][criterion].score > 0.3, criterion


def test_judging_one_candidate_turn_leaves_its_praise_to_the_model(make_episode):
    """judge-check --human judges the last turn alone, where the "wrong attempt" is the heuristic's guess: the model's
    score stands (zeroing there cost the fitted judge's agreement with MRBench's teachers), and so does the tone."""
    texts = ["Help?", "Let's start: what is 3 times 4?", "11?", "Well done! What do you do with 11?"]
    episode = make_episode(texts, trace=())
    assert extract_features(episode, judged_from=3).accepting_turns == (3,)
    one = {f"{c.dimension}.{c.criterion}": c for c in asyncio.run(FittedJudge().judge(episode, judged_from=3)).criteria}
    whole = {f"{c.dimension}.{c.criterion}": c for c in asyncio.run(FittedJudge().judge(episode)).criteria}
    assert whole["acc.feedback_correct"].score == 0.0
    assert one["acc.feedback_correct"].score > 0.0 and one["meta.discover_mistakes"].score > 0.0
