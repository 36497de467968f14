"""SFT rows: the tutor's view of each dialogue, end marker restored, counted summary, verl's SFT dataset."""

import json

import pandas as pd

from pearl_verl.dialogue.problem import Problem
from pearl_verl.sft.dataset import build_sft, read_records, sft_messages, write_sft
from pearl_verl.sft.filters import DROP_REASONS, FilterConfig
from pearl_verl.tutor.tutor_prompts import END_MARKER, tutor_system_prompt


def _episode(make_episode, pid, tutor_texts, end_reason="tutor_ended", final_student=None):
    """Problem ``pid``: the opening, then the tutor texts with a wrong attempt between them and ``final_student``
    (an attempt too) after the last."""
    problem = Problem(pid, f"Question {pid}: what is 6 times 7?", "6 * 7 = 42", "42", "gsm8k")
    texts = [f"Help me with {pid}"]
    for i, text in enumerate(tutor_texts):
        texts.append(text)
        if i < len(tutor_texts) - 1:
            texts.append(f"I think it is {40 + i}")
    if final_student:
        texts.append(final_student)
    replies = (len(texts) - 1) // 2  # student turns after the opening
    return make_episode(texts, end_reason, problem=problem, attempts=["none"] + ["incorrect"] * replies)


def _record(key, episode):
    return {"id": key, "sample": 0, "episode": episode.to_dict(), "judge": None}


def test_messages_are_the_tutor_view_with_the_end_marker_restored(make_episode):
    episode = _episode(make_episode, "a", ["What is 6 * 7?", "Close. Try again.", "Yes, 42! Well done."])
    messages = sft_messages(episode)
    assert messages[0] == {"role": "system", "content": tutor_system_prompt(episode.problem)}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * 3
    assert messages[-1]["content"] == f"Yes, 42! Well done. {END_MARKER}"
    assert [m["content"] for m in messages[2:-1:2]] == ["What is 6 * 7?", "Close. Try again."]
    hidden = sft_messages(episode, include_reference=False)[0]["content"]
    assert "6 * 7 = 42" not in hidden and tutor_system_prompt(episode.problem, False) == hidden


def test_a_student_conclusion_is_trimmed_and_gets_no_marker(make_episode):
    tutor = ["What is 6 * 7?", "Right, 42!"]
    episode = _episode(make_episode, "b", tutor, end_reason="student_concluded", final_student="Thanks, bye!")
    messages = sft_messages(episode)
    assert messages[-1] == {"role": "assistant", "content": "Right, 42!"}
    assert not any(END_MARKER in m["content"] for m in messages[1:])  # the system prompt explains the marker


def test_build_sft_counts_every_dialogue_once_and_splits_by_problem(make_episode):
    episodes = {
        f"k{i}": _episode(make_episode, f"p{i % 8}", ["What is 6 * 7?", f"Yes, 42 ({i})!"]) for i in range(24)
    }
    episodes["cut"] = _episode(make_episode, "p9", ["Hi?", "Go on"], end_reason="turn_limit")
    episodes["dup"] = _episode(make_episode, "p0", ["What is 6 * 7?", "Yes, 42 (0)!"])
    records = {k: _record(k, e) for k, e in episodes.items()}
    ids = [*episodes, "never-generated"]
    rows, summary = build_sft(ids, records, FilterConfig(turn_balance=0), val_fraction=0.3)
    assert (summary.jobs, summary.dialogues, summary.missing) == (27, 26, 1)
    assert summary.kept + sum(summary.dropped.values()) == summary.dialogues
    assert set(summary.dropped) == set(DROP_REASONS)
    assert (summary.dropped["incomplete"], summary.dropped["duplicate"]) == (1, 1)
    splits = {split: {r["problem_id"] for r in split_rows} for split, split_rows in rows.items()}
    assert splits["train"] and splits["val"] and not splits["train"] & splits["val"]
    kept = [r["id"] for r in rows["train"]]
    assert kept == [k for k in ids if k in kept]  # job order
    assert summary.turns_generated == {2: 26} and summary.turns_kept == {2: 24}


def test_records_cut_by_a_kill_are_ignored_and_the_last_line_per_id_wins(tmp_path, make_episode):
    path = tmp_path / "dialogues.jsonl"
    first = _record("x", _episode(make_episode, "p1", ["a", "b"], end_reason="tutor_error"))
    second = _record("x", _episode(make_episode, "p1", ["a", "b"]))
    cut = json.dumps(_record("y", _episode(make_episode, "p2", ["a", "b"])))[:-40]
    path.write_text("\n".join([json.dumps(first), json.dumps(second), cut]) + "\n")
    records, bad = read_records(path)
    assert bad == 1 and set(records) == {"x"} and records["x"]["episode"]["end_reason"] == "tutor_ended"


def test_written_parquet_loads_in_verls_multiturn_sft_dataset_with_loss_on_tutor_turns_only(tmp_path, make_episode):
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from pearl_verl.models.tiny import build_offline_tokenizer

    episodes = {
        f"k{i}": _episode(make_episode, f"p{i}", ["What is 6 * 7?", "Look again.", f"Yes, 42! ({i})"]) for i in range(4)
    }
    rows, _ = build_sft(list(episodes), {k: _record(k, e) for k, e in episodes.items()}, FilterConfig())
    (train,) = write_sft(rows, tmp_path)
    assert not (tmp_path / "val.parquet").exists()
    tokenizer = build_offline_tokenizer(tmp_path / "tok")
    dataset = MultiTurnSFTDataset(str(train), tokenizer, {"max_length": 8192, "pad_mode": "no_padding"})
    assert len(dataset) == 4 == len(pd.read_parquet(train))
    item = dataset[1]
    trained = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
    expected = "".join(f"{t}<|im_end|>\n" for t in ["What is 6 * 7?", "Look again.", f"Yes, 42! (1) {END_MARKER}"])
    assert trained == expected  # every tutor turn, its end-of-turn token, nothing of the student or system
    whole = tokenizer.decode(item["input_ids"])
    assert "Help me with p1" in whole and "Reference solution" in whole
