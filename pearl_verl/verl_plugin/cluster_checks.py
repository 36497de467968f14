"""``pearl-verl doctor --cluster``: what fails late on a cluster, checked in seconds before a run.

- versions: torch, vLLM, transformers and flash-attn (Megatron-Core and mbridge for a Megatron recipe)
  against the pins of verl's own GPU extras (read from verl's installed metadata, so the check follows
  the verl that is installed);
- GPUs: visible, as many as the recipe's ``trainer.n_gpus_per_node``, each with the memory the
  capacity plan says the actor update and the rollout need;
- student and judge endpoints: they answer, serve the named model, accept the sampling fields we
  send (``top_k``, ``seed``, ``n``), and the judge returns a parseable judgement of a canned dialogue, ranks
  the shipped contrast pairs and agrees with MRBench's teachers (the recipes' judge gate; the last takes
  minutes, not seconds);
- data: the train/val parquet files have verl's ``prompt`` column and an ``extra_info.pearl`` that
  every row's agent loop can parse.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata as metadata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from pearl_verl.async_run import run_async
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.verl_plugin.doctor import Check

PINNED_PACKAGES = {"torch": "vllm", "vllm": "vllm", "transformers": "vllm", "flash-attn": "fsdp"}
"""The packages a PEARL GPU run needs, and verl's extra that installs each at its tested version."""
MEGATRON_PACKAGES = {"megatron-core": "megatron", "mbridge": "megatron"}
ROWS_CHECKED = 10_000


@dataclass(frozen=True)
class ClusterTarget:
    """What the cluster checks look at; ``pearl-verl doctor --cluster`` fills it from a recipe and flags.

    Attributes:
        engine: ``fsdp2`` or ``megatron`` (the Megatron packages are then required).
        gpus_per_node: GPUs the recipe uses on each node.
        gpu_bytes_needed: per-GPU memory the capacity plan needs (0: not checked).
        endpoints: ``{"student": (base_url, model, api_key_env), "judge": ...}``.
        judge_samples: the judge's self-consistency samples (sent as ``n`` when > 1).
        data_files: train and val parquet files.
    """

    engine: str = "fsdp2"
    gpus_per_node: int = 8
    gpu_bytes_needed: float = 0.0
    endpoints: Mapping[str, tuple[str | None, str | None, str | None]] = field(default_factory=dict)
    judge_samples: int = JudgeConfig.samples
    data_files: Sequence[str] = ()


def run_cluster_checks(target: ClusterTarget) -> list[Check]:
    """Every cluster check, one :class:`Check` each."""
    checks = version_checks(target.engine)
    checks.append(gpu_check(target.gpus_per_node, target.gpu_bytes_needed))
    for role, (base_url, model, key_env) in target.endpoints.items():
        checks += endpoint_checks(role, base_url, model, key_env, target.judge_samples if role == "judge" else 1)
    checks += [data_check(path) for path in target.data_files]
    return checks


def verl_pins() -> dict[str, str]:
    """``{package: version}`` pinned with ``==`` by any of verl's extras (the versions verl tested together)."""
    pins: dict[str, str] = {}
    for text in metadata.requires("verl") or []:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if exact and requirement.marker is not None:
            pins.setdefault(canonicalize_name(requirement.name), exact[0])
    return pins


def version_checks(engine: str = "fsdp2") -> list[Check]:
    """Each cluster package against verl's pin: installed and equal, or the pip line that makes it so."""
    try:
        verl = metadata.version("verl")
        pins = verl_pins()
    except metadata.PackageNotFoundError:
        return [Check("cluster versions", False, "verl is not installed", "pip install verl==0.9.1")]
    packages = {**PINNED_PACKAGES, **(MEGATRON_PACKAGES if engine == "megatron" else {})}
    checks = []
    for package, extra in packages.items():
        pin = pins.get(canonicalize_name(package))
        install = f"pip install 'verl[{extra}]=={verl}' (verl's GPU instructions; it pins the tested set)"
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            tested = f"; verl {verl} tested {pin}" if pin else ""
            checks.append(Check(f"{package} (cluster)", False, f"not installed{tested}", install))
            continue
        ok = pin is None or Version(installed).public == pin  # 2.11.0+cu130 is the tested 2.11.0
        detail = installed + (f" (verl {verl} tested {pin})" if pin else " (verl pins no version)")
        fix = "" if ok else f"pip install '{package}=={pin}', or {install}"
        checks.append(Check(f"{package} (cluster)", ok, detail, fix))
    return checks


def gpu_check(expected: int, bytes_needed: float) -> Check:
    """GPUs visible to torch, their number and the smallest one's memory against the plan's need."""
    import torch

    if not torch.cuda.is_available():
        return Check("GPUs", False, f"none visible (torch {torch.__version__}, CUDA {torch.version.cuda})",
                     "run on the GPU node, with a CUDA build of torch and CUDA_VISIBLE_DEVICES set")
    count = torch.cuda.device_count()
    smallest = min(torch.cuda.get_device_properties(i).total_memory for i in range(count))
    name = torch.cuda.get_device_name(0)
    problems = []
    if count < expected:
        problems.append(f"the recipe uses {expected} per node")
    if bytes_needed and smallest < bytes_needed:
        problems.append(f"the plan needs {bytes_needed / 1e9:.0f} GB per GPU")
    detail = f"{count} x {name}, {smallest / 1e9:.0f} GB each"
    fix = "; ".join(problems) + " (pearl-verl plan shows where the memory goes)" if problems else ""
    return Check("GPUs", not problems, detail + (f"; {'; '.join(problems)}" if problems else ""), fix)


def endpoint_checks(role: str, base_url: str | None, model: str | None, api_key_env: str | None,
                    samples: int = JudgeConfig.samples, human_file: Path | None = None) -> list[Check]:
    """The endpoint answers and serves ``model``; it takes ``top_k``, ``seed`` and ``n``; a judge judges, ranks the
    contrast pairs and agrees with teachers (``human_file``: MRBench's labels, the shipped file by default)."""
    name = f"{role} endpoint"
    if not base_url or not model:
        return [Check(name, False, "no base URL or model given",
                      f"pass --{role}-base-url and --{role}-model, or a recipe that sets them")]
    try:
        return run_async(_endpoint_checks(role, base_url, model, api_key_env, samples, human_file))
    except InputError as exc:  # a bad URL or an unset key variable: this check's line, not the doctor's end
        return [Check(name, False, str(exc), f"fix the {role} endpoint's settings")]


async def _endpoint_checks(role: str, base_url: str, model: str, api_key_env: str | None, samples: int,
                           human_file: Path | None) -> list[Check]:
    from pearl_verl.llm.chat_types import EndpointConfig, LLMCallError, SamplingConfig
    from pearl_verl.llm.client import OpenAIChatClient

    name = f"{role} endpoint"
    served = await _served_models(base_url, api_key_env)
    if isinstance(served, str):
        return [Check(name, False, f"{base_url}: {served}", f"start it (recipes/pearl/serve_{role}.sh) or fix the URL")]
    if model not in served:
        return [Check(name, False, f"{base_url} serves {served}, not {model!r}",
                      f"pass the served name (vllm serve --served-model-name) as the {role} model")]
    checks = [Check(name, True, f"{base_url} serves {model!r}")]
    endpoint = EndpointConfig(base_url, model, api_key_env=api_key_env, timeout_s=60, max_retries=0)
    n = max(2, samples)
    sampling = SamplingConfig(top_k=20, max_tokens=8, n=n, seed=0)
    try:
        result = await OpenAIChatClient(endpoint, sampling).chat([{"role": "user", "content": "Say OK."}], sampling)
    except LLMCallError as exc:
        checks.append(_first_call_failed(role, n, exc))
        return checks
    detail = f"top_k, seed and n={n} accepted; {len(result.texts)} choices"
    if len(result.texts) != n:  # the judge notices and asks for each sample apart (JudgeStats.n_ignored)
        detail += ": the server ignores n, so the judge will ask for each sample in its own request"
    checks.append(Check(f"{role} sampling fields", True, detail))
    checks.append(await _structured_output_check(role, endpoint))
    if role == "judge":
        checks.append(await _judge_check(base_url, model, api_key_env))
        if checks[-1].ok:
            checks.append(await _calibration_check(base_url, model, api_key_env))
            checks.append(await _human_check(base_url, model, api_key_env, human_file))
    return checks


def _first_call_failed(role: str, n: int, exc: Any) -> Check:
    """The first chat call failed: a refused field only when the server said the request was bad.

    A refused key, a dead server or a timeout says nothing of the sampling fields (nor of the model),
    and a fix that names them would send the user to the wrong place.
    """
    name = f"{role} sampling fields"
    if exc.reason in ("http_401", "http_403"):
        return Check(name, False, f"the server refused the key ({exc.reason}): {exc}",
                     f"export the key the server takes in the variable --{role}-api-key-env names "
                     "(vllm serve --api-key), or drop --api-key on a server that needs none")
    if exc.reason in ("http_400", "http_422"):
        return Check(name, False, f"top_k, seed, n={n} refused: {exc}",
                     "serve it with vLLM (which takes top_k and n), or set top_k to null in the role's config")
    return Check(name, False, f"the endpoint failed the first chat request ({exc.reason}), so nothing of its sampling "
                 f"fields or its model is known: {exc}", "check that the server is up and its log (a chat request "
                 "timed out, was dropped or got a server error)")


async def _structured_output_check(role: str, endpoint: Any) -> Check:
    """Which structured output the server takes: the recipes send json_schema (``STRUCTURED_OUTPUT``)."""
    from pearl_verl.llm.chat_types import LLMCallError, SamplingConfig
    from pearl_verl.llm.client import OpenAIChatClient

    schema = '{"title": "ok", "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}'
    client = OpenAIChatClient(dataclasses.replace(endpoint, structured_output="auto"))
    sampling = SamplingConfig(max_tokens=16, response_schema=schema)
    name = f"{role} structured output"
    try:
        await client.chat([{"role": "user", "content": 'Reply with {"ok": true}.'}], sampling)
    except LLMCallError as exc:
        return Check(name, False, f"no structured-output mode got through: {exc}", "see the error; the server "
                     "answered the plain request above, so it refuses response_format in every form")
    taken, refused = client.usage.structured_output, client.usage.refused_modes
    if taken == "json_schema":
        return Check(name, True, "json_schema taken (what the recipes send)")
    why = "; ".join(f"{mode} refused ({reason})" for mode, reason in refused.items())
    return Check(name, False, f"{why}; the server takes {taken}",
                 f"set STRUCTURED_OUTPUT={taken} for the recipes (or structured_output=auto, the library default)")


async def _served_models(base_url: str, api_key_env: str | None) -> list[str] | str:
    """The model names ``GET /models`` lists, or why it could not be read."""
    import aiohttp

    from pearl_verl.llm.client import api_key

    try:  # the client's reading: the key is remembered for redaction before the server can echo it in its list
        headers = {"Authorization": f"Bearer {api_key(api_key_env)}"}
    except InputError as exc:
        return str(exc)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            async with session.get(base_url.rstrip("/") + "/models", headers=headers) as response:
                if response.status != 200:
                    return f"GET /models answered HTTP {response.status}"
                body = await response.json(content_type=None)
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
        return f"GET /models failed ({type(exc).__name__}: {exc})"
    return [str(entry.get("id")) for entry in (body or {}).get("data", []) if isinstance(entry, Mapping)]


async def _judge_check(base_url: str, model: str, api_key_env: str | None) -> Check:
    from pearl_verl.judge.judge_config import build_judge

    judge = build_judge(JudgeConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout_s=120,
                                    max_retries=0, parse_retries=0))
    result = await judge.judge(canned_dialogue())
    if result.ok:
        detail = f"a canned dialogue judged in {result.latency_s:.1f} s, gate {result.gate}"
        return Check("judge judgement", True, detail)
    return Check("judge judgement", False, f"unparseable or failed: {result.error}",
                 "serve the finetuned judge (recipes/pearl/serve_judge.sh); see docs/judge.md for the output contract")


async def _calibration_check(base_url: str, model: str, api_key_env: str | None) -> Check:
    """The shipped contrast pairs, as the recipes' gate judges them (``pearl-verl judge-check``)."""
    from pearl_verl.judge.calibration import MIN_AGREEMENT, check_judge, load_pairs, shipped_pairs_path
    from pearl_verl.judge.judge_config import build_judge

    judge = build_judge(JudgeConfig(base_url=base_url, model=model, api_key_env=api_key_env))
    report = await check_judge(judge, load_pairs(shipped_pairs_path()), concurrency=8)
    agreement, parsed = report.agreement(), report.parse_rate()
    detail = (f"orders {agreement.mean:.0%} of {agreement.n} comparisons as built "
              f"(95% interval {agreement.low:.0%}-{agreement.high:.0%}), parses {parsed.mean:.0%}")
    if report.passes():
        return Check("judge calibration", True, detail)
    return Check("judge calibration", False, f"{detail}: {report.verdict()}",
                 f"the recipes stop here too (JUDGE_CHECK=0 skips it; JUDGE_MIN_AGREEMENT, default {MIN_AGREEMENT}, "
                 "sets the floor); pearl-verl judge-check shows each dimension")


HUMAN_CHECK_CONVERSATIONS = 40
"""MRBench test conversations the doctor judges, as the recipes' gate does by default (``JUDGE_HUMAN_LIMIT``): about
330 one-turn judgements, a few minutes for a served 32B judge rather than the quarter hour of all 159."""


async def _human_check(base_url: str, model: str, api_key_env: str | None, human_file: Path | None) -> Check:
    """MRBench's teachers' labels, as the recipes' gate judges them (``pearl-verl judge-check --human``)."""
    from pearl_verl.data.mrbench import mrbench_file
    from pearl_verl.judge.calibration import MIN_PARSE_RATE
    from pearl_verl.judge.human_agreement import HUMAN_MIN_AGREEMENT, MEASURED_SPLITS
    from pearl_verl.judge.human_check import check_human, choose_conversations
    from pearl_verl.judge.one_turn import build_one_turn_judge

    path = human_file or mrbench_file()
    measured, _, notes = choose_conversations(path, MEASURED_SPLITS, HUMAN_CHECK_CONVERSATIONS)
    judge = build_one_turn_judge(JudgeConfig(base_url=base_url, model=model, api_key_env=api_key_env))
    # agreement only: the thresholds of the macro-F1 (judged on train+val) are judge-check --human's
    report = await check_human(judge, path, MEASURED_SPLITS, concurrency=8, chosen=(measured, [], notes))
    shares = ", ".join(f"{d} {r.count.estimate.mean:.0%}" for d, r in report.results.items()
                       if r.count.estimate is not None)
    detail = (f"orders MRBench's pairs as its teachers do on {len(measured)} conversations ({shares or 'none'}), "
              f"parses {report.parse_rate().mean:.0%}")
    if report.passes(HUMAN_MIN_AGREEMENT, MIN_PARSE_RATE):
        return Check("judge vs teachers", True, detail)
    return Check("judge vs teachers", False, f"{detail}: {report.verdict(HUMAN_MIN_AGREEMENT, MIN_PARSE_RATE)}",
                 f"the recipes stop here too (JUDGE_HUMAN_CHECK=0 skips it; JUDGE_HUMAN_MIN_AGREEMENT, default "
                 f"{HUMAN_MIN_AGREEMENT}, sets the floor); pearl-verl judge-check --human shows each dimension")


def canned_dialogue():
    """A short Socratic dialogue in which the student solves the problem: what the judge check scores."""
    from pearl_verl.dialogue.episode import DialogueTurn, EpisodeRecord
    from pearl_verl.dialogue.problem import Problem
    from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition, StudentTurnState

    problem = Problem("doctor-1", "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
                      "3 * 4 = 12 apples; 12 - 2 = 10.", "10", "gsm8k")
    texts = ["I think it is 12 - 2 but I am not sure how many apples there are.",
             "How many apples are in 3 boxes of 4?", "3 times 4 is 12, so 12 - 2 = 10 apples.",
             "Right. How could you check that 10 makes sense?", "10 plus the 2 he ate is 12, which is 3 boxes of 4."]
    turns = tuple(DialogueTurn("student" if i % 2 == 0 else "tutor", text) for i, text in enumerate(texts))
    trace = tuple(StudentTurnState(i, ("answer",), "correct", {"mult": 0.9}) for i in range(3))
    return EpisodeRecord(problem, StudentCondition(CognitiveProfile(2, 2, 2, 2, 2)), turns, trace, "student_concluded")


def data_check(path: str | Path) -> Check:
    """A verl parquet of ``pearl-verl prepare-data``: ``prompt``, and a parseable ``extra_info.pearl`` per row."""
    from pearl_verl.data.sources import read_parquet_frame
    from pearl_verl.dialogue.sample import PearlSample
    from pearl_verl.errors import InputError

    name = f"data {path}"
    fix = "prepare it with pearl-verl prepare-data (docs/data.md)"
    try:
        frame = read_parquet_frame(path)
    except InputError as exc:
        return Check(name, False, str(exc), fix)
    missing = [column for column in ("prompt", "extra_info") if column not in frame.columns]
    if missing:
        return Check(name, False, f"no column {missing} (has {list(frame.columns)})", fix)
    rows = frame.head(ROWS_CHECKED)
    for index, (extra, prompt) in enumerate(zip(rows["extra_info"], rows["prompt"], strict=True)):
        try:
            PearlSample.from_row(extra, prompt)
        except (InputError, ValueError, TypeError, KeyError) as exc:
            return Check(name, False, f"row {index}: {exc}", fix)
    checked = f"{len(rows):,} of {len(frame):,} rows" if len(frame) > len(rows) else f"{len(frame):,} rows"
    return Check(name, True, f"{checked} parse (prompt, extra_info.pearl)")
