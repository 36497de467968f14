"""Where CI's time goes, read off a ``.ci/run`` log or a pytest junit XML instead of worked out by hand.

    python bench/ci_time.py ci.log                  a saved .ci/run output (.ci/run 2>&1 | tee ci.log)
    python bench/ci_time.py --junit suite.xml       a junit XML of the suite (the README's test command with
                                                    --junitxml=suite.xml)
    python bench/ci_time.py ci.log --junit suite.xml --top 20

From a log: each README command's time (``+ the <step> command took N s``), pytest's summary line (``N passed in X s``)
and, when pytest ran with ``--durations=N``, the slowest tests; it says what the log lacks. From a junit XML (every
test's time): the serial group's summed time, which one worker runs one test after another (the suite's critical
path), the rest's summed time, which the other workers share, the lower bound on the suite's wall time that gives,
``max(serial, (serial + rest) / workers)``, and the slowest tests. Which tests are serial: each testcase's ``serial``
property (tests/conftest.py records it), or, for a junit XML from before that or a log with ``--durations=0``,
``--collect``, which asks pytest (``--collect-only -q -m serial``) in this checkout.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2  # the README's test command runs pytest -n 2

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"^\+ the (?P<step>\S+) command took (?P<s>\d+) s \(exit (?P<exit>\d+)\)$")
_SUITE = re.compile(r"^=*\s*(?P<counts>\d+ [a-z]+(?:, \d+ [a-z]+)*) in (?P<s>\d+(?:\.\d+)?)s(?: \([\d:]+\))?\s*=*$")
_DURATIONS = re.compile(r"^=+ slowest (?:(?P<n>\d+) )?durations =+$")
_DURATION = re.compile(r"^(?P<s>\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(?P<nodeid>\S.*)$")
_HIDDEN = re.compile(r"^\(\d+ durations < [\d.e-]+s hidden\.")


NO_STEPS = ("No README command's time: no '+ the <step> command took N s' line (not .ci/run's output, or it stopped "
            "before a command ended).")
NO_DURATIONS = ("No per-test times: pytest ran without --durations, so neither the slowest tests nor the serial "
                "critical path; add --durations=0 to the test command, or --junitxml=FILE and read it with "
                "--junit FILE.")
PARTIAL_DURATIONS = ("The serial critical path: not in this log, which lists only the slowest {n} phases "
                     "(--durations={n}); it needs every test's time: --durations=0, or --junitxml=FILE and "
                     "--junit FILE.")
NO_SERIAL_MARKS = ("The serial critical path: the log does not say which tests are serial; pass --collect to ask "
                   "pytest in this checkout.")


class CiTimeError(Exception):
    """An input this script cannot read; the message names the file (and line) and the fix."""


@dataclass(frozen=True)
class Step:
    """One README command as ``.ci/run`` timed it."""

    name: str
    seconds: int
    exit: int
    line: int


@dataclass(frozen=True)
class SuiteLine:
    """pytest's summary line: its counts (``2085 passed, 3 warnings``) and the session's seconds."""

    counts: str
    seconds: float


@dataclass(frozen=True)
class TestTime:
    """One test's time (setup, call and teardown together) and whether it is serial (None: not known)."""

    __test__ = False  # not a pytest test class

    name: str
    seconds: float
    serial: bool | None = None
    key: tuple[str, str] = ("", "")  # junit's (classname, name); empty for a log's node id


@dataclass(frozen=True)
class LogTimes:
    """What a ``.ci/run`` log holds. ``durations``: per test, from pytest's ``--durations`` section;
    ``durations_limit``: its N (None: ``--durations=0``, every test)."""

    steps: list[Step]
    suite: SuiteLine | None
    durations: list[TestTime]
    durations_limit: int | None


@dataclass(frozen=True)
class CriticalPath:
    """The suite on ``workers`` pytest-xdist workers: the serial group runs on one of them, one test at a time."""

    serial_s: float
    rest_s: float
    workers: int

    @property
    def bound_s(self) -> float:
        """The least wall time the suite can take: the serial group alone, or all the work spread evenly."""
        return max(self.serial_s, (self.serial_s + self.rest_s) / self.workers)


def minutes(seconds: float) -> str:
    """``818.1`` -> ``13 min 38 s``; under a minute, ``42 s``."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def span(seconds: float) -> str:
    """``818.12`` -> ``818.1 s (13 min 38 s)``."""
    return f"{seconds:,.1f} s ({minutes(seconds)})"


def read_text(path: Path, what: str, fix: str) -> str:
    """The file's text, or a :class:`CiTimeError` naming it, what it should be and how to make one."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CiTimeError(f"{path}: cannot read {what} ({exc.strerror}); {fix}") from None


def parse_log(text: str, path: Path) -> LogTimes:
    """Each step's time, pytest's last summary line and its last ``--durations`` section in a ``.ci/run`` log.

    Raises:
        CiTimeError: the log holds none of the three.
    """
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    steps = [Step(m["step"], int(m["s"]), int(m["exit"]), i) for i, m in enumerate(map(_STEP.match, lines), 1) if m]
    suites = [SuiteLine(m["counts"], float(m["s"])) for m in map(_SUITE.match, lines) if m]
    durations, limit = parse_durations(lines)
    if not steps and not suites and not durations:
        raise CiTimeError(f"{path}: no '+ the <step> command took N s' line, no pytest summary line and no "
                          "--durations section: save .ci/run's whole output (.ci/run 2>&1 | tee ci.log)")
    return LogTimes(steps, suites[-1] if suites else None, durations, limit)


def parse_durations(lines: list[str]) -> tuple[list[TestTime], int | None]:
    """The last ``slowest durations`` section's phases summed per test, slowest first, and its N (None: all)."""
    starts = [i for i, line in enumerate(lines) if _DURATIONS.match(line)]
    if not starts:
        return [], None
    n = _DURATIONS.match(lines[starts[-1]])["n"]
    per_test: dict[str, float] = {}
    for line in lines[starts[-1] + 1:]:
        m = _DURATION.match(line)
        if not m:
            if line and not _HIDDEN.match(line):
                break
            continue
        per_test[m["nodeid"]] = per_test.get(m["nodeid"], 0.0) + float(m["s"])
    tests = [TestTime(nodeid, s) for nodeid, s in per_test.items()]
    return sorted(tests, key=lambda t: -t.seconds), None if n is None else int(n)


def parse_junit(path: Path) -> tuple[list[TestTime], float | None]:
    """Every testcase's time and ``serial`` property in a pytest junit XML, and the suites' summed time.

    Raises:
        CiTimeError: the file is not XML, holds no testcase, or a testcase's time is not a number.
    """
    text = read_text(path, "a junit XML", "write one with the README's test command and --junitxml=FILE")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, column = exc.position
        raise CiTimeError(f"{path}:{line}:{column}: not well-formed XML ({exc.msg}); was pytest stopped before it "
                          "wrote it? Run the tests again with --junitxml=FILE") from None
    cases = list(root.iter("testcase"))
    if not cases:
        raise CiTimeError(f"{path}: no <testcase> element; is it pytest's --junitxml output of a run that collected "
                          "tests?")
    tests = [junit_test(case, path, i) for i, case in enumerate(cases, 1)]
    suites = [float(s.get("time", "nan")) for s in root.iter("testsuite")]
    wall = sum(suites) if suites and not any(map(math.isnan, suites)) else None
    return tests, wall


def junit_test(case: ET.Element, path: Path, index: int) -> TestTime:
    """One testcase: its node id (as a path where this checkout has the file), time and ``serial`` property."""
    classname, name = case.get("classname", ""), case.get("name", "")
    try:
        seconds = float(case.get("time", ""))
    except ValueError:
        raise CiTimeError(f"{path}: testcase {index} ({classname}::{name}) has time={case.get('time')!r}, not "
                          "seconds; is it pytest's --junitxml output?") from None
    marks = {p.get("name"): p.get("value") for p in case.iter("property")}
    serial = None if "serial" not in marks else marks["serial"] == "yes"
    return TestTime(node_id(classname, name), seconds, serial, (classname, name))


def node_id(classname: str, name: str, root: Path = ROOT) -> str:
    """pytest's node id for junit's dotted ``classname`` and ``name``, where a prefix of the classname is a test
    file in ``root`` (``tests.test_x.TestY`` -> ``tests/test_x.py::TestY::name``); otherwise ``classname::name``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        file = "/".join(parts[:cut]) + ".py"
        if (root / file).is_file():
            return "::".join([file, *parts[cut:], name])
    return f"{classname}::{name}"


def junit_key(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's junit XML gives a node id (as ``_pytest.junitxml.mangle_test_address``)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def collect_serial(paths: list[str], root: Path = ROOT) -> set[str]:
    """The node ids of the tests marked ``serial`` under ``paths``, as this checkout's pytest collects them.

    Raises:
        CiTimeError: pytest failed to collect.
    """
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "serial", "-p", "no:cacheprovider", *paths]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 5):  # 5: every test deselected, none serial
        raise CiTimeError(f"{' '.join(cmd[1:])} (in {root}) exited {proc.returncode}; its output ends:\n"
                          f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}\nfix the collection error, or name other "
                          "paths after --collect")
    return {line for line in proc.stdout.splitlines() if "::" in line and not line.startswith(" ")}


def mark_serial(tests: list[TestTime], serial_ids: set[str]) -> list[TestTime]:
    """The tests with ``serial`` set from node ids (a log's tests are node ids; a junit's match by junit key)."""
    keys = {junit_key(nodeid) for nodeid in serial_ids}
    return [replace(t, serial=(t.key in keys) if t.key != ("", "") else (t.name in serial_ids)) for t in tests]


def critical_path(tests: list[TestTime], workers: int) -> CriticalPath:
    """The serial group's and the rest's summed time; every test's ``serial`` must be known."""
    serial = sum(t.seconds for t in tests if t.serial)
    return CriticalPath(serial, sum(t.seconds for t in tests if not t.serial), workers)


def steps_table(steps: list[Step], path: Path) -> list[str]:
    """Each README command's time and exit status, their total, and a note for a command that failed."""
    rows = ["| README command | time | exit |", "|---|---:|---:|"]
    rows += [f"| {s.name} | {s.seconds:,} s ({minutes(s.seconds)}) | {s.exit} |" for s in steps]
    total = sum(s.seconds for s in steps)
    rows.append(f"| all | {total:,} s ({minutes(total)}) | |")
    rows += [f"\n{path}:{s.line}: the {s.name} command exited {s.exit}: CI stopped there, its time is a failed run's"
             for s in steps if s.exit]
    return rows


def path_table(path: CriticalPath, wall_s: float | None) -> list[str]:
    """The serial group, the rest and the bound on the wall time, with the run's own wall time if known."""
    rows = [f"| part | test time | on {path.workers} workers |", "|---|---:|---|",
            f"| serial group | {span(path.serial_s)} | one worker, one test after another: the critical path |",
            f"| the rest | {span(path.rest_s)} | shared by the workers |",
            f"| lower bound on the wall time | {span(path.bound_s)} | max(serial, (serial + rest) / {path.workers}) |"]
    if wall_s and path.bound_s:
        rows.append(f"\nThe run took {wall_s:,.1f} s ({minutes(wall_s)}): {wall_s / path.bound_s:.2f}x the bound.")
    return rows


def slowest_table(tests: list[TestTime], top: int) -> list[str]:
    """The ``top`` slowest tests, their seconds and whether each is serial (``?``: not known)."""
    rows = ["| test | s | serial |", "|---|---:|:-:|"]
    for t in sorted(tests, key=lambda t: -t.seconds)[:top]:
        rows.append(f"| {t.name} | {t.seconds:,.1f} | {'?' if t.serial is None else 'yes' if t.serial else 'no'} |")
    return rows


def log_report(log: LogTimes, path: Path, top: int, workers: int) -> list[str]:
    """The log's section: the commands' times, the suite's line, the slowest tests and the critical path, each or
    what the log lacks for it."""
    out = [f"### .ci/run log: {path}", ""]
    out += steps_table(log.steps, path) if log.steps else [NO_STEPS]
    out += ["", f"The suite: {log.suite.counts} in {log.suite.seconds:,.2f} s ({minutes(log.suite.seconds)})."
            if log.suite else "No pytest summary line ('N passed in X s'): the test command did not finish."]
    if not log.durations:
        return out + ["", NO_DURATIONS]
    out += ["", f"The {min(top, len(log.durations))} slowest tests (setup, call and teardown summed):", "",
            *slowest_table(log.durations, top)]
    if log.durations_limit is not None:
        return out + ["", PARTIAL_DURATIONS.format(n=log.durations_limit)]
    if any(t.serial is None for t in log.durations):
        return out + ["", NO_SERIAL_MARKS]
    return out + ["", *path_table(critical_path(log.durations, workers), log.suite.seconds if log.suite else None)]


def junit_report(tests: list[TestTime], wall_s: float | None, path: Path, top: int, workers: int) -> list[str]:
    """The junit XML's section: the critical path and the slowest tests."""
    n_serial = sum(bool(t.serial) for t in tests)
    out = [f"### junit XML: {path} ({len(tests):,} tests, {n_serial} serial)", ""]
    out += path_table(critical_path(tests, workers), wall_s)
    return out + ["", f"The {min(top, len(tests))} slowest tests:", "", *slowest_table(tests, top)]


def main(argv: list[str] | None = None) -> int:
    """Prints the report the arguments ask for; 0, or 2 with the reason on stderr when an input cannot be read."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", nargs="?", type=Path, help="a saved .ci/run output (.ci/run 2>&1 | tee ci.log)")
    parser.add_argument("--junit", type=Path, help="a pytest junit XML of the suite (--junitxml=FILE)")
    parser.add_argument("--collect", nargs="*", metavar="PATH",
                        help="ask pytest which tests are serial (--collect-only -m serial over PATHs, default tests), "
                             "for a junit XML without the serial property or a log's --durations=0 times (give the "
                             "log first)")
    parser.add_argument("--top", type=int, default=10, help="how many slowest tests to list (default 10)")
    parser.add_argument("--workers", type=int, default=WORKERS, help="pytest-xdist workers (default 2, the README's)")
    args = parser.parse_args(argv)
    if args.log is None and args.junit is None:
        parser.error("give a .ci/run log, --junit FILE.xml, or both")
    if args.top < 1 or args.workers < 1:
        parser.error("--top and --workers take a whole number of at least 1")
    try:
        print("\n".join(report(args)))
    except CiTimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def report(args: argparse.Namespace) -> list[str]:
    """Both sections the arguments ask for, serial marks from pytest where ``--collect`` asks for them."""
    log = None if args.log is None else parse_log(
        read_text(args.log, "a .ci/run log", "save one with .ci/run 2>&1 | tee ci.log"), args.log)
    junit = None if args.junit is None else parse_junit(args.junit)
    serial_ids = None if args.collect is None else collect_serial(args.collect or ["tests"])
    out: list[str] = []
    if log is not None:
        if serial_ids is not None and log.durations_limit is None:
            log = replace(log, durations=mark_serial(log.durations, serial_ids))
        out += log_report(log, args.log, args.top, args.workers)
    if junit is not None:
        tests, wall = junit
        if serial_ids is not None:
            tests = mark_serial(tests, serial_ids)
        elif all(t.serial is None for t in tests):
            raise CiTimeError(f"{args.junit}: no testcase has the 'serial' property (a run from before "
                              "tests/conftest.py recorded it): pass --collect to ask pytest which tests are serial")
        else:  # a testcase without it is not a collected test's (a collection error's)
            tests = [replace(t, serial=bool(t.serial)) for t in tests]
        out += ([""] if out else []) + junit_report(tests, wall, args.junit, args.top, args.workers)
    return out


if __name__ == "__main__":
    sys.exit(main())
