"""Judge-SFT data: the noise filter drops what it should, and verl's SFT dataset reads the output."""

import json

import pandas as pd
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from pearl_verl.judge import judge_cli
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.prompt import system_prompt
from pearl_verl.judge.sft_data import (
    CONSISTENCY_RULES,
    FilterReport,
    NoiseFilterConfig,
    convert_records,
    is_validation,
    select_annotation,
)


def _record(key, episode, *annotations):
    return {"id": key, "episode": episode.to_dict(), "annotations": list(annotations)}


def test_noise_filter_drops_malformed_inconsistent_and_disagreeing_annotations(make_episode, make_output):
    done = make_episode(["Help?", "What is 3 times 4?", "12", "Then?", "10", "Well done!"])
    cut = make_episode(["Help?", "What is 3 times 4?", "12"], end_reason="turn_limit")
    records = [
        _record("clean", done, make_output({"meta.reflection": 1}, rationale="clean reading")),
        _record("malformed", done, make_output()[:-5], json.loads(make_output({"acc.toward_reference": 3}))),
        _record("gate_on_cut_off", cut, make_output()),
        _record("cut_ok", cut, make_output({"complete.session_complete": 0, "complete.conclusion": 0})),
        _record(
            "disagree_gate",
            done,
            make_output(),
            make_output({"complete.session_complete": 0, "complete.conclusion": 0}),
        ),
        _record("disagree_dim", done, make_output(), make_output({"leak.final_answer": 0, "leak.key_steps": 0})),
        _record(
            "agree",
            done,
            make_output({"leak.final_answer": 1}, rationale="first reading"),
            make_output(rationale="second reading"),
            make_output({"leak.final_answer": 1}, rationale="third reading"),
        ),
    ]
    rows, report = convert_records(records)
    assert [r["id"] for r in rows] == ["clean", "cut_ok", "agree"]
    assert report.trajectories == 7 and report.kept == 3 and report.annotations == 12
    assert report.dropped == {
        "malformed_invalid_json": 1,
        "malformed_bad_score": 1,
        "inconsistent_gate_on_cut_off": 1,
        "disagreement": 2,
    }
    # The kept annotation of 'agree' is the one nearest the per-dimension median (leak 5/6, not 1).
    target = parse_judgement(rows[2]["messages"][-1]["content"])
    assert {s.rationale for s in target if (s.dimension, s.criterion) == ("leak", "final_answer")} == {"first reading (final answer)"}


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("conclusion_without_completion", {"complete.session_complete": 0, "complete.conclusion": 2}),
        ("complete_on_wrong_answer", {"acc.toward_reference": 0}),
        ("tutor_solved_without_leak", {"guide.student_agency": 0}),
    ],
)
def test_each_consistency_rule_fires(make_episode, make_output, name, overrides):
    assert name in {rule[0] for rule in CONSISTENCY_RULES}
    episode = make_episode(["Help?", "Try it.", "10", "Yes."])
    report = FilterReport()
    assert select_annotation(episode, [make_output(overrides)], NoiseFilterConfig(), report) is None
    assert report.dropped == {f"inconsistent_{name}": 1}
    assert select_annotation(
        episode, [make_output(overrides)], NoiseFilterConfig(check_consistency=False), FilterReport()
    )


def test_split_is_stable_and_config_is_validated():
    assert [is_validation(f"id-{i}", 0.3) for i in range(50)] == [is_validation(f"id-{i}", 0.3) for i in range(50)]
    assert 5 < sum(is_validation(f"id-{i}", 0.3) for i in range(100)) < 55
    with pytest.raises(ValueError, match=r"max_spread=1.5 must lie in \[0, 1\]"):
        NoiseFilterConfig(max_spread=1.5)


def _chatml_tokenizer(tmp_path):
    """A tiny byte-level BPE with a ChatML template, trained offline (no hub)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([system_prompt()] * 2, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = (
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    fast.save_pretrained(tmp_path / "tok")
    return fast


def test_cli_output_loads_in_verls_sft_dataset_with_loss_on_the_judgement_only(tmp_path, make_episode, make_output):
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    episode = make_episode(["Help?", "What is 3 times 4?", "12", "Then?", "10", "Well done!"])
    source = tmp_path / "annotated.jsonl"
    source.write_text("\n".join(json.dumps(_record(f"t{i}", episode, make_output())) for i in range(6)) + "\n")
    train, val = tmp_path / "train.parquet", tmp_path / "val.parquet"
    parser = __import__("argparse").ArgumentParser()
    judge_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        ["judge-sft-data", str(source), "-o", str(train), "--val-output", str(val), "--val-fraction", "0.5"]
    )
    assert args.handler(args) == 0
    frame = pd.concat([pd.read_parquet(train), pd.read_parquet(val)])
    assert sorted(frame["id"]) == [f"t{i}" for i in range(6)] and not frame["enable_thinking"].any()
    tokenizer = _chatml_tokenizer(tmp_path)
    dataset = MultiTurnSFTDataset(str(train), tokenizer, {"max_length": 32768, "pad_mode": "no_padding"})
    item = dataset[0]
    trained = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
    assert trained.startswith('{"acc": {"statements_correct"') and "Tom has 3 boxes" not in trained
    assert parse_judgement(trained.replace("<|im_end|>", "").strip())
