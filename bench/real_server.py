"""Conformance run: every LLM path of pearl_verl against a real OpenAI-compatible server.

    python bench/real_server.py --base-url http://127.0.0.1:8080/v1 --model smollm2 --problems 5
    python bench/real_server.py ... --structured-output json_object     # llama-cpp-python's server
    python bench/real_server.py ... --structured-output json_schema     # vLLM

It runs the commands a user runs, on the first N GSM8K test problems shipped with the package,
with one server playing every role: ``decompose`` (knowledge extraction), ``simulate`` with the
LLM student and the scripted Socratic tutor (planner, realiser, refine), ``eval-tutor`` with
the served model as the tutor, the offline student and the served model as the judge, and
``judge-check`` with the served model as the judge of the calibration pairs. A recording
proxy between the commands and the server sees every request, so the rates below are counted
from what the server actually sent back, not from our own bookkeeping:

- per role (told apart by the system prompt): calls, HTTP failures, replies cut at ``max_tokens``
  (``finish_reason=length``), median latency, and for the roles we parse (planner, extraction,
  judge) the share of replies the strict parser accepts;
- per student reply turn (from simulate's rows): where the labels and the message came from
  (``llm`` / ``rules`` / ``refined`` / ``template`` / ``fallback``) and LLM calls per turn;
- per dialogue: how eval-tutor's dialogues ended and how many judgements failed (``judge_ok=0``);
- calibration: the share of judge-check's comparisons the served judge orders as built, and its parse rate.

Everything goes to ``--out`` (the proxy's ``calls.jsonl`` with each reply, every command's
output, ``report.json``). Not part of CI: it needs a server. BENCHMARKS.md says how to build and
start llama-cpp-python's server with SmolLM2-135M-Instruct on a CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import shutil
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from pearl_verl.cli import main as cli
from pearl_verl.data.problem_files import load_problems
from pearl_verl.data.sources import FIXTURES
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.prompt import system_prompt
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.extract import EXTRACTION_INSTRUCTION, parse_extraction
from pearl_verl.student.simulation_runs import call_table, source_table
from pearl_verl.student.student_prompts import (
    PLANNER_INSTRUCTION,
    REALISER_INSTRUCTION,
    REFINE_INSTRUCTION,
    parse_planner,
)
from pearl_verl.tutor.tutor_prompts import TUTOR_INSTRUCTION

PROBLEMS = FIXTURES["gsm8k"]


def _head(template: str) -> str:
    """The fixed opening of a prompt template (up to its first placeholder), to recognise it by."""
    return template.split("{", 1)[0][:60]


ROLE_HEADS = {
    "planner": _head(PLANNER_INSTRUCTION),
    "realiser": _head(REALISER_INSTRUCTION),
    "refine": _head(REFINE_INSTRUCTION),
    "extraction": _head(EXTRACTION_INSTRUCTION),
    "tutor": _head(TUTOR_INSTRUCTION),
    "judge": _head(system_prompt()),
}


def role_of(request: dict[str, Any]) -> str:
    """Which of our prompts a chat request carries (``other`` for none)."""
    messages = request.get("messages") or [{}]
    system = str(messages[0].get("content", ""))
    return next((role for role, head in ROLE_HEADS.items() if head and system.startswith(head)), "other")


@dataclass
class Recorder:
    """Forwards every request to the server and appends what happened to ``calls.jsonl``."""

    upstream: str
    path: Path
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "authorization")}
        start = time.perf_counter()
        record: dict[str, Any] = {"path": request.path}
        try:
            payload = json.loads(body) if body else {}
            record.update(role=role_of(payload), max_tokens=payload.get("max_tokens"),
                          response_format=(payload.get("response_format") or {}).get("type"))
        except ValueError:
            payload = {}
        suffix = request.path.split("/v1", 1)[-1]
        try:
            async with ClientSession(timeout=ClientTimeout(total=None)) as session:
                async with session.request(request.method, self.upstream + suffix, data=body, headers=headers) as reply:
                    data = await reply.read()
                    status = reply.status
        except (OSError, asyncio.TimeoutError) as exc:  # the client gave up and closed, or the server is gone
            record.update(status=None, error=type(exc).__name__, latency_s=time.perf_counter() - start)
            self._keep(record)
            raise
        record.update(status=status, latency_s=time.perf_counter() - start)
        with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
            parsed = json.loads(data)
            choice = parsed["choices"][0]
            record.update(finish_reason=choice.get("finish_reason"), text=choice["message"].get("content") or "",
                          completion_tokens=(parsed.get("usage") or {}).get("completion_tokens"))
        if payload and record.get("role") == "extraction":  # the parser needs to know which problem it was
            users = [str(m.get("content", "")) for m in payload["messages"] if m.get("role") == "user"]
            record["user"] = users[0] if users else ""
        self._keep(record)
        return web.Response(body=data, status=status, content_type="application/json")

    def _keep(self, record: dict[str, Any]) -> None:
        self.calls.append(record)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


@contextlib.contextmanager
def recording_proxy(upstream: str, path: Path):
    """A local proxy in a thread of its own; yields (its base URL, the recorder)."""
    recorder = Recorder(upstream.rstrip("/"), path)
    loop = asyncio.new_event_loop()
    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # aiohttp exposes the bound port only here
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1", recorder
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)


def parses(record: dict[str, Any], problems: list[Any], curriculum: Any) -> bool | None:
    """Whether the strict parser of the record's role accepts its reply (None: a role we do not parse)."""
    role, text = record.get("role"), record.get("text")
    if text is None or role not in ("planner", "extraction", "judge"):
        return None
    try:
        if role == "planner":
            parse_planner(text)
        elif role == "judge":
            parse_judgement(text, finish_reason=record.get("finish_reason"))
        else:
            problem = next((p for p in problems if p.question in record.get("user", "")), None)
            if problem is None:
                return None
            parse_extraction(text, problem, curriculum, "llm")
        return True
    except ValueError:
        return False


def role_table(calls: list[dict[str, Any]], problems: list[Any]) -> dict[str, dict[str, Any]]:
    """Per role: calls, failures, truncations, parse rate, median latency and completion tokens."""
    curriculum = load_curriculum()
    by_role: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in calls:
        by_role[record.get("role", "other")].append(record)
    table = {}
    for role, records in sorted(by_role.items()):
        answered = [r for r in records if r.get("status") == 200]
        verdicts = [v for v in (parses(r, problems, curriculum) for r in answered) if v is not None]
        tokens = [r["completion_tokens"] for r in answered if isinstance(r.get("completion_tokens"), int)]
        table[role] = {
            "calls": len(records),
            "failed": len(records) - len(answered),
            "truncated": sum(r.get("finish_reason") == "length" for r in answered),
            "parsed": sum(verdicts) if verdicts else None,
            "parse_checked": len(verdicts),
            "median_latency_s": statistics.median(r["latency_s"] for r in records),
            "median_completion_tokens": statistics.median(tokens) if tokens else None,
        }
    return table


def run_command(name: str, argv: list[str], out: Path) -> int:
    """One pearl-verl command in this process; its output goes to ``out/<name>.log``."""
    log = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            code = cli(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    (out / f"{name}.log").write_text(log.getvalue(), encoding="utf-8")
    print(f"  {name}: exit {code} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return code


def commands(args: argparse.Namespace, url: str, out: Path) -> dict[str, list[str]]:
    endpoint = ["--timeout", str(args.timeout), "--max-retries", str(args.max_retries)]
    limit = ["--limit", str(args.problems)]
    structured = ["--structured-output", args.structured_output]
    tutor = f"name=served,base_url={url},model={args.model}"
    return {
        "decompose": ["decompose", str(PROBLEMS), *limit, "--cache-dir", str(out / "cache"), "--base-url", url,
                      "--model", args.model, "--concurrency", str(args.concurrency), *structured],
        "simulate": ["simulate", str(PROBLEMS), *limit, "--backend", "llm", "--base-url", url, "--model", args.model,
                     "--cache-dir", str(out / "cache"), "--tutor", "socratic", "--max-turns", str(args.max_turns),
                     "--concurrency", str(args.concurrency), "--out", str(out / "simulate.jsonl"), *endpoint,
                     *structured],
        "judge-check": ["judge-check", "--base-url", url, "--model", args.model, *endpoint, *structured,
                        "--concurrency", str(args.concurrency), "--pairs", str(calibration_subset(args, out)),
                        "-o", str(out / "judge_check.json"), "--no-progress"],
        "eval-tutor": ["eval-tutor", str(PROBLEMS), *limit, "--tutor", tutor, "--student-backend", "offline",
                       "--max-turns", str(args.max_turns), "--max-tokens", str(args.tutor_max_tokens),
                       "--judge", "llm", "--judge-base-url", url, "--judge-model", args.model,
                       "--judge-timeout", str(args.timeout), "--judge-concurrency", str(args.concurrency),
                       "--concurrency", str(args.concurrency), "--judge-structured-output", args.structured_output,
                       "--out", str(out / "eval"), "--progress", "off"],
    }


def calibration_subset(args: argparse.Namespace, out: Path) -> Path:
    """The first ``--pairs-per-kind`` shipped calibration pairs of each contrast (all of them by default)."""
    from pearl_verl.judge.calibration import shipped_pairs_path

    kept: dict[str, int] = defaultdict(int)
    lines = []
    for line in shipped_pairs_path().read_text(encoding="utf-8").splitlines():
        kind = json.loads(line)["kind"]
        if kept[kind] < args.pairs_per_kind:
            kept[kind] += 1
            lines.append(line)
    path = out / "calibration_pairs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def simulate_tables(path: Path) -> dict[str, Any]:
    """Turn sources and calls per turn from simulate's rows."""
    dialogues: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            dialogues[row["dialogue"]].append(row)
    rows = [sorted(d, key=lambda r: r["turn"]) for _, d in sorted(dialogues.items())]
    if not rows:
        return {}
    return {"dialogues": len(rows), "end_reasons": dict(Counter(d[-1]["end_reason"] for d in rows)),
            "sources": source_table(rows), "calls": call_table(rows)}


def eval_tables(run: Path) -> dict[str, Any]:
    """How eval-tutor's dialogues ended and how many judgements failed."""
    results = run / "results.jsonl"
    if not results.exists():
        return {}
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {"dialogues": len(rows), "end_reasons": dict(Counter(str(r["episode"]["end_reason"]) for r in rows)),
            "judge_ok": sum(int((r.get("judge") or {}).get("judge_ok") or 0) for r in rows)}


def render(report: dict[str, Any]) -> str:
    lines = [f"server {report['model']} at {report['base_url']}, structured output: {report['structured_output']}, "
             f"{report['problems']} problems", "",
             "| role | calls | failed | cut at max_tokens | parsed | median s | median tokens |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for role, row in report["roles"].items():
        parsed = f"{row['parsed']}/{row['parse_checked']}" if row["parse_checked"] else "-"
        tokens = "-" if row["median_completion_tokens"] is None else f"{row['median_completion_tokens']:.0f}"
        lines.append(f"| {role} | {row['calls']} | {row['failed']} | {row['truncated']} | {parsed} | "
                     f"{row['median_latency_s']:.1f} | {tokens} |")
    sim = report.get("simulate") or {}
    if sim:
        calls = sim["calls"]
        lines += ["", f"simulate: {sim['dialogues']} dialogues, ends {sim['end_reasons']}, "
                      f"{calls['calls_per_reply_turn']:.2f} LLM calls per reply turn"]
        for key, shares in sim["sources"].items():
            lines.append(f"  {key}: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    ev = report.get("eval") or {}
    if ev:
        lines += ["", f"eval-tutor: {ev['dialogues']} dialogues, ends {ev['end_reasons']}, "
                      f"judge_ok {ev['judge_ok']}/{ev['dialogues']}"]
    cal = report.get("calibration") or {}
    if cal:
        agree, parsed = cal["agreement"], cal["parse_rate"]
        lines += ["", f"judge-check: ordered {agree['mean']:.0%} of {agree['n']} comparisons as built "
                      f"(95% interval {agree['low']:.0%}-{agree['high']:.0%}), parsed {parsed['mean']:.0%} of "
                      f"{parsed['n']} judgements: {'passed' if cal['passed'] else 'failed'}"]
    lines += ["", "exit codes: " + ", ".join(f"{k} {v}" for k, v in report["exit_codes"].items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", required=True, help="model name as served")
    parser.add_argument("--problems", type=int, default=5, help="first N GSM8K test problems shipped with the package")
    parser.add_argument("--structured-output", default="none", choices=["auto", "none", "json_schema", "json_object"])
    parser.add_argument("--max-turns", type=int, default=4, help="tutor turns per dialogue")
    parser.add_argument("--tutor-max-tokens", type=int, default=256, help="cap on one served tutor message")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight: the server's real parallelism")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request attempt")
    parser.add_argument("--max-retries", type=int, default=1)
    parser.add_argument("--pairs-per-kind", type=int, default=4, help="calibration pairs of each contrast judged")
    parser.add_argument("--only", nargs="*", choices=["decompose", "simulate", "judge-check", "eval-tutor"],
                        help="run only these")
    parser.add_argument("--out", type=Path, default=Path("outputs/real_server"), help="folder for every output")
    args = parser.parse_args(argv)
    out = args.out / args.structured_output
    if out.exists():  # a conformance run starts fresh: resumed commands would send nothing
        shutil.rmtree(out)
    out.mkdir(parents=True)
    problems = [item.problem for item in load_problems(PROBLEMS, args.problems)]
    codes: dict[str, int] = {}
    with recording_proxy(args.base_url, out / "calls.jsonl") as (url, recorder):
        for name, command in commands(args, url, out).items():
            if not args.only or name in args.only:
                codes[name] = run_command(name, command, out)
    report = {"base_url": args.base_url, "model": args.model, "structured_output": args.structured_output,
              "problems": args.problems, "exit_codes": codes, "roles": role_table(recorder.calls, problems),
              "simulate": simulate_tables(out / "simulate.jsonl"), "eval": eval_tables(out / "eval"),
              "calibration": json.loads((out / "judge_check.json").read_text()) if (out / "judge_check.json").exists()
              else {}}
    (out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
