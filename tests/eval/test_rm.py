"""eval-rm: agreement by margin bucket, pair validation, the three kinds of reward model, the CLI end to end."""

import json

import pytest

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.eval.rm import (
    PairwiseScorer,
    ScalarScorer,
    agreement,
    read_pairs,
    verdict_row,
)
from pearl_verl.llm.chat_types import EndpointConfig
from pearl_verl.llm.client import OpenAIChatClient
from pearl_verl.llm.local_server import LocalChatServer


def rows(spec):
    """Verdict rows from (margin, preferred, choice-or-None) triples."""
    out = []
    for i, (margin, preferred, choice) in enumerate(spec):
        out.append(
            {
                "id": str(i),
                "margin": margin,
                "preferred": preferred,
                "ok": choice is not None,
                "choice": choice,
                "agree": (choice == preferred) if choice is not None else None,
            }
        )
    return out


def test_agreement_by_hand():
    result = agreement(
        rows(
            [
                ("low", "a", "a"),
                ("low", "a", "b"),
                ("low", "b", "tie"),  # low: 1 of 3 (a tie disagrees)
                ("medium", "a", "a"),
                ("medium", "b", "b"),  # medium: 2 of 2
                ("high", "b", "b"),
                ("high", "a", "a"),
                ("high", "a", "a"),
                ("high", "b", "a"),  # high: 3 of 4
                ("high", "a", None),  # flagged: left out
            ]
        )
    )
    assert result["pairs"] == 10 and result["flagged"] == 1 and result["ties"] == 1
    assert result["by_margin"]["low"]["mean"] == pytest.approx(1 / 3) and result["by_margin"]["low"]["n"] == 3
    assert result["by_margin"]["medium"]["mean"] == 1.0
    assert result["by_margin"]["high"]["mean"] == pytest.approx(3 / 4)
    assert result["overall"]["mean"] == pytest.approx(6 / 9) and result["overall"]["n"] == 9


def test_fixture_pairs_load_and_mismatched_pairs_are_refused(fx, tmp_path):
    pairs = read_pairs(fx.PAIRS)
    assert len(pairs) >= 9 and {p.margin for p in pairs} == {"low", "medium", "high"}
    good = json.loads(fx.PAIRS.read_text().splitlines()[0])
    other = json.loads(fx.PAIRS.read_text().splitlines()[-1])
    assert good["a"]["problem"] != other["a"]["problem"] or good["a"]["condition"] != other["a"]["condition"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**good, "b": other["b"]}) + "\n")
    with pytest.raises(ValueError, match="same problem for the same student condition"):
        read_pairs(bad)
    bad.write_text(json.dumps({**good, "preferred": "c"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_pairs(bad)


def _pair(fx):
    return read_pairs(fx.PAIRS)[0]


async def test_pairwise_scorer_maps_a_swapped_order_back(fx):
    pair = _pair(fx)
    first = pair.a.turns[1].text  # the tutor's first message in dialogue a

    def respond(body):  # always prefers whichever dialogue a actually is
        text = body["messages"][1]["content"]
        shown_first = text.index(first) < text.index("Dialogue B:")
        return '{"preferred": "A"}' if shown_first else '{"preferred": "B"}'

    with LocalChatServer(respond) as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "rm", max_retries=0))
        verdicts = [await PairwiseScorer(client, "rm", seed=s).compare(pair) for s in range(6)]
        texts = [r["messages"][1]["content"] for r in server.requests]
        swaps = {t.index(first) > t.index("Dialogue B:") for t in texts}
    assert all(v.ok and v.choice == "a" for v in verdicts)
    assert swaps == {True, False}  # both presentation orders were used


async def test_pairwise_scorer_flags_unparsable_verdicts(fx):
    with LocalChatServer(lambda body: "A is better") as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "rm", max_retries=0))
        verdict = await PairwiseScorer(client, "rm", parse_retries=1).compare(_pair(fx))
        assert len(server.requests) == 2
    assert not verdict.ok and "unparsable" in verdict.error
    assert verdict_row(_pair(fx), verdict, "rm")["agree"] is None


class FakeRewardModel:
    """Scores a conversation by how many question marks the tutor wrote (a transparent test double)."""

    async def score(self, messages):
        return float(sum(m["content"].count("?") for m in messages if m["role"] == "assistant"))


async def test_scalar_scorer_builds_the_conversation_and_compares(fx):
    pair = _pair(fx)
    scorer = ScalarScorer(FakeRewardModel(), "fake", "system prompt")
    conversation = scorer.conversation(pair.a)
    assert conversation[0] == {"role": "system", "content": "system prompt"}
    assert conversation[1]["content"].startswith("Problem: ") and "Reference Solution:" in conversation[1]["content"]
    assert conversation[2] == {"role": "user", "content": pair.a.turns[0].text}
    verdict = await scorer.compare(pair)
    questions = [sum(t.text.count("?") for t in e.turns if t.role == "tutor") for e in (pair.a, pair.b)]
    assert (verdict.score_a, verdict.score_b) == tuple(float(q) for q in questions)


def test_eval_rm_cli_with_the_offline_judge(fx, tmp_path, run_cli, capsys):
    assert run_cli("eval-rm", fx.PAIRS, "--judge", "offline", "--out", tmp_path) == 0
    scores = fx.read_jsonl(tmp_path / "rm_scores.jsonl")
    pairs = read_pairs(fx.PAIRS)
    assert len(scores) == len(pairs) and {(s["row_kind"], s["row_version"]) for s in scores} == {("rm_verdict", 1)}
    summary = json.loads((tmp_path / "rm_summary.json").read_text())
    agree = [s for s in scores if s["agree"]]
    assert summary["overall"]["mean"] == pytest.approx(len(agree) / len(scores))
    report = (tmp_path / "rm_report.md").read_text()
    assert "| Reward Model | Low Margin | Medium Margin | High Margin | Overall |" in report
    assert "NOT the paper's judge" in report and (tmp_path / "rm_agreement.png").stat().st_size > 10_000
    capsys.readouterr()
    assert run_cli("eval-rm", fx.PAIRS, "--judge", "offline", "--out", tmp_path) == 0  # resume: nothing to do
    assert f"0 pairs scored now, {len(pairs)} already done" in capsys.readouterr().out


def test_eval_rm_cli_with_a_local_scalar_reward_model(fx, tmp_path, run_cli, tiny_reward_model):
    assert (
        run_cli(
            "eval-rm", fx.PAIRS, "--rm", "hf", "--rm-path", tiny_reward_model, "--label", "tiny RM", "--out", tmp_path
        )
        == 0
    )
    scores = fx.read_jsonl(tmp_path / "rm_scores.jsonl")
    assert all(isinstance(s["score_a"], float) and s["choice"] in ("a", "b", "tie") for s in scores)
    assert "| tiny RM |" in (tmp_path / "rm_report.md").read_text()


def test_make_pairs_from_a_judged_run(fx, tmp_path, run_cli):
    run = tmp_path / "run"
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "3",
            "--tutor",
            "name=s,scripted=socratic",
            "--tutor",
            "name=l,scripted=leaking",
            "--judge",
            "offline",
            "--out",
            run,
        )
        == 0
    )
    out = tmp_path / "pairs.jsonl"
    assert (
        run_cli(
            "eval-rm",
            "--make-pairs",
            run / "results.jsonl",
            "--pair-tutors",
            "s,l",
            "--margins",
            "1,2",
            "--pairs-out",
            out,
        )
        == 0
    )
    pairs = read_pairs(out)
    assert {row["row_kind"] for row in fx.read_jsonl(out)} == {"preference_pair"}
    results = {r["id"]: r for r in fx.read_jsonl(run / "results.jsonl")}
    assert {row["row_kind"] for row in results.values()} == {"eval"}
    for pair in pairs:
        simulator, item, _ = pair.id.split("|")
        gap = (
            sum(
                results[f"s|{simulator}|{item}"]["judge"][d] - results[f"l|{simulator}|{item}"]["judge"][d]
                for d in ("acc", "leak", "complete", "load", "guide", "meta", "adaptive", "emotion")
            )
            / 8
            * 100
        )
        assert pair.preferred == ("a" if gap > 0 else "b")
        assert pair.margin == ("low" if abs(gap) < 1 else "medium" if abs(gap) < 2 else "high")
        assert isinstance(pair.a, EpisodeRecord) and pair.a.problem == pair.b.problem
