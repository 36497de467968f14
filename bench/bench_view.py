"""``pearl-verl view`` at the size the issue names: 10,000 dialogues, page size and time to open.

    python bench/bench_view.py [--dialogues 10000] [--screenshot docs/view-page.png] [--json out.json]

The dialogues are real and distinct: the scripted Socratic and lecturing tutors with the offline
student on MathDial problems (past the 599th problem, again with other students), judged by the
offline judge with criteria and rationales, laid out as train-local writes them (steps of 8 groups
x 8 dialogues, with shaped rewards and advantages from the PEARL estimator). Measured: building the
page (read, flags, encode, compress), its size, and in headless Chromium the time until the list is
drawn, a filter change, and opening a dialogue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import breakdown_from_inputs, inputs_from_rows
from pearl_verl.data.location import data_dir
from pearl_verl.data.problem_files import load_problems
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.dialogue.row import dialogue_row
from pearl_verl.judge.batch import judgement_fields
from pearl_verl.judge.judge_config import JudgeConfig, build_judge
from pearl_verl.judge.reward_info import reward_info, reward_score
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.simulation_runs import make_jobs, run_jobs
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor
from pearl_verl.tutor.styles import ScriptedLecturingTutor

GROUP = 8


async def judged_dialogues(count: int) -> list[tuple]:
    """``count`` distinct judged dialogues, ``GROUP`` per problem (half Socratic, half lecturing tutor)."""
    problems = load_problems(data_dir() / "mathdial" / "test.jsonl")
    simulator, judge = build_simulator(StudentConfig()), build_judge(JudgeConfig(backend="offline"))
    groups, out = -(-count // GROUP), []
    for cycle in range(-(-groups // len(problems))):  # past the last problem, again with other students
        items = [p for p in problems[: groups - cycle * len(problems)] for _ in range(GROUP // 2)]
        jobs = make_jobs(items, "mixed", seed=cycle)
        for tutor in (ScriptedSocraticTutor(), ScriptedLecturingTutor()):
            episodes = await run_jobs(simulator, tutor, jobs, EpisodeLimits(12), concurrency=32)
            for i, episode in enumerate(episodes):  # jobs in order: GROUP // 2 per problem and tutor
                result = await judge.judge(episode)
                out.append((f"{cycle}-{i // (GROUP // 2)}", episode, result, reward_info(episode, result)))
    return out[:count] if len(out) >= count else out


def train_rows(dialogues: list[tuple]) -> list[dict]:
    """train-local rows: one problem's dialogues (one student cycle) form a group; advantages by the estimator."""
    groups: dict[str, list] = {}
    for key, *rest in dialogues:
        groups.setdefault(key, []).append(rest)
    out, settings = [], AdvantageConfig()
    for g, group in enumerate(groups.values()):
        step = g // 8 + 1
        infos = [info for _, _, info in group]
        uids = [f"step{step}-{g}"] * len(group)
        breakdown = breakdown_from_inputs(inputs_from_rows(infos, settings), uids, settings)
        for k, (episode, result, info) in enumerate(group):
            out.append(dialogue_row("train", episode.to_dict(), judgement_fields(episode, result), reward_score(info),
                                    step=step, uid=uids[k], shaped=breakdown.rewards[k].tolist(),
                                    advantage=float(breakdown.advantages[k])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogues", type=int, default=10_000)
    parser.add_argument("--screenshot", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from pearl_verl.compare.browser import launch_chromium
    from pearl_verl.view.page import encode, write_page
    from pearl_verl.view.records import read_sources

    start = time.perf_counter()
    rows = train_rows(asyncio.run(judged_dialogues(args.dialogues)))
    generate_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run" / "dialogues"
        run.mkdir(parents=True)
        for step in sorted({r["step"] for r in rows}):
            (run / f"step_{step:04d}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows if r["step"] == step), encoding="utf-8")
        start = time.perf_counter()
        records = read_sources([run.parent])
        page = write_page(records, Path(tmp) / "view.html", title="pearl-verl view: benchmark")
        build_s = time.perf_counter() - start
        size = page.stat().st_size
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            view = browser.new_page(viewport={"width": 1500, "height": 950})
            start = time.perf_counter()
            view.goto(page.as_uri())
            view.wait_for_selector("body[data-ready='1']", timeout=120_000)
            open_s = time.perf_counter() - start
            start = time.perf_counter()
            view.select_option("#f-flag", "answer_first")
            view.wait_for_function("document.querySelector('#count').textContent.includes('match')")
            filter_s = time.perf_counter() - start
            view.select_option("#f-flag", "")
            start = time.perf_counter()
            view.locator("#list-body tr").first.click()
            view.wait_for_selector("#dialogue-view")
            dialogue_s = time.perf_counter() - start
            if args.screenshot:  # a GSPO group side by side: the contrast an update learns from
                view.select_option("#f-sort", "2")
                view.locator("#list-body tr").first.click()
                view.click("#btn-group")
                view.screenshot(path=str(args.screenshot))
            browser.close()
    json_mb = len(json.dumps(encode(records), ensure_ascii=False, separators=(",", ":")).encode()) / 1e6
    result = {"dialogues": len(records), "generate_s": round(generate_s, 1), "page_mb": round(size / 1e6, 2),
              "data_json_mb_uncompressed": round(json_mb, 2), "build_s": round(build_s, 2),
              "open_s": round(open_s, 2), "filter_s": round(filter_s, 3), "open_dialogue_s": round(dialogue_s, 3),
              "flagged": sum(1 for r in records if r["flags"])}
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
