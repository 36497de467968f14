"""The study end to end in a real headless browser (Debian's chromium through Playwright).

Two teachers sign in with their links and vote; the server is killed mid-study and restarted on the
same database; the report's numbers are checked against a hand computation from the votes cast.
No skip: without chromium each test fails with one line that says how to install it.
"""

import json
import struct
import subprocess
import sys

import psutil
import pytest
from playwright.sync_api import sync_playwright

from pearl_verl.cli import main
from pearl_verl.compare.browser import StudyServer, chromium_path, launch_chromium
from pearl_verl.compare.pairs import read_pairs

# The real outcome (a = the first tutor preferred) each teacher casts, by the pair's index in the pairs file.
PLAN = {"alice": ["a", "tie", "b"], "bob": ["a", "a", "b"]}
DIM_CHOICES = {"leak": "a", "emotion": "tie"}  # alice's optional per-dimension choices on her first vote
COMMENT = "Dialogue with clearer questions; alice-only note"


@pytest.fixture(autouse=True)
def chromium():
    """Fails (never skips) with the install hint as its one line when chromium is missing."""
    try:
        return chromium_path()
    except RuntimeError as missing:
        hint = str(missing)
    pytest.fail(hint, pytrace=False)


@pytest.fixture
def study(hostile_run, tmp_path, capsys):
    pairs_file = tmp_path / "pairs.jsonl"
    db_url = f"sqlite:///{tmp_path / 'study.db'}"
    assert main(["compare", "build-pairs", str(hostile_run), "--out", str(pairs_file)]) == 0
    capsys.readouterr()
    assert main(["compare", "add-annotator", "alice", "bob", "--db-url", db_url]) == 0
    links = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    return pairs_file, db_url, {name: link.split("?token=")[1] for name, link in links.items()}


def read_page(page, pairs):
    """What the compare page shows: (pair index, real side on the left, (done, total))."""
    question = page.locator("#problem").text_content()
    left = page.locator("section.dialogue[data-side=left] .turn-text").all_text_contents()
    right = page.locator("section.dialogue[data-side=right] .turn-text").all_text_contents()
    progress = page.locator(".progress-text")
    counts = (int(progress.get_attribute("data-done")), int(progress.get_attribute("data-total")))
    for index, pair in enumerate(pairs):
        texts = {side: [t.text for t in getattr(pair, side).turns] for side in ("a", "b")}
        if pair.a.problem.question == question and {tuple(left), tuple(right)} == {
            tuple(texts["a"]),
            tuple(texts["b"]),
        }:
            return index, ("a" if left == texts["a"] else "b"), counts
    raise AssertionError(f"the page shows no pair of the study: {question!r}")


def displayed(outcome, left):
    return "tie" if outcome == "tie" else "A" if outcome == left else "B"


def check_page_is_safe(cx, page):
    html = page.content().lower()
    assert cx.TUTOR_A not in html and cx.TUTOR_B not in html  # identities hidden
    if "window.__pwned" not in html:
        return False
    text = "".join(page.locator("section.dialogue .turn-text").all_text_contents())
    assert cx.SCRIPT_PAYLOAD in text and cx.IMG_PAYLOAD in text  # shown literally, as text
    assert page.evaluate("() => window.__pwned === undefined")
    for tag in ("script", "b", "img"):
        assert page.locator(f"section.dialogue {tag}").count() == 0, tag
    return True


def vote(page, pairs, name, cx, seen, with_details=False):
    """Cast the planned vote on the pair shown; returns whether the page held the hostile dialogue."""
    hostile = check_page_is_safe(cx, page)
    index, left, (done, total) = read_page(page, pairs)
    assert index not in seen.setdefault(name, {})  # each pair at most once
    seen[name][index] = left
    page.check(f"input[name=choice][value={displayed(PLAN[name][index], left)}]")
    if with_details:
        for dim, outcome in DIM_CHOICES.items():
            page.check(f"input[name=dim_{dim}][value={displayed(outcome, left)}]")
        page.fill("textarea[name=comment]", COMMENT)
    with page.expect_navigation():
        page.click("button.primary")
    return hostile, done, total


def sign_in(browser, server, token):
    """A fresh browser context that opens the teacher's invitation link and signs in."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(f"{server.url}/login?token={token}")
    with page.expect_navigation():
        page.click("button.primary")
    assert page.url.endswith("/compare")
    return page


def test_two_teachers_restart_and_report(cx, study, tmp_path):
    pairs_file, db_url, tokens = study
    pairs = read_pairs(pairs_file)
    seen, hostile_seen = {}, False
    server = StudyServer(db_url, [pairs_file], tmp_path / "server.log").start()
    try:
        listening = [c for c in psutil.Process(server.process.pid).net_connections("inet") if c.status == "LISTEN"]
        assert [(c.laddr.ip, c.laddr.port) for c in listening] == [("127.0.0.1", server.port)]  # loopback only
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            alice = sign_in(browser, server, tokens["alice"])
            for step in range(2):  # alice stops after two pairs
                hostile, done, total = vote(alice, pairs, "alice", cx, seen, with_details=step == 0)
                hostile_seen |= hostile
                assert (done, total) == (step, 3)
            bob = sign_in(browser, server, tokens["bob"])
            for step in range(3):
                assert COMMENT not in bob.content()  # no one sees another's votes
                hostile, done, _ = vote(bob, pairs, "bob", cx, seen)
                hostile_seen |= hostile
                assert done == step
            assert "All pairs done" in bob.content() and bob.locator(".progress-text").get_attribute("data-done") == "3"
            # the same pair in the other A/B order for the two teachers
            shared = set(seen["alice"]) & set(seen["bob"])
            assert len(shared) == 2 and all(seen["alice"][i] != seen["bob"][i] for i in shared)

            server.stop()  # killed mid-study: alice has one pair left
            server = StudyServer(db_url, [pairs_file], tmp_path / "server.log", port=server.port).start()
            alice.goto(f"{server.url}/compare")  # the same browser session is still signed in
            index, _, (done, total) = read_page(alice, pairs)
            assert (done, total) == (2, 3) and index not in seen["alice"]
            hostile, _, _ = vote(alice, pairs, "alice", cx, seen)
            hostile_seen |= hostile
            assert "All pairs done" in alice.content()
            alice.goto(f"{server.url}/compare")
            assert "All pairs done" in alice.content()  # voted pairs never come back
            browser.close()
    finally:
        server.stop()
    assert hostile_seen

    out, export = tmp_path / "report", tmp_path / "human_pairs.jsonl"
    assert main(["compare", "report", "--db-url", db_url, "--out", str(out), "--export", str(export)]) == 0
    summary = json.loads((out / "compare_summary.json").read_text())
    # Hand computation from PLAN, for tutor a: votes a, a (pair 0), tie, a (pair 1), b, b (pair 2)
    # -> win 3, tie 1, loss 2 of 6: Win 50%, Tie 16.67%, Loss 33.33%, Preference 50 + 0.5 x 16.67 = 58.33%
    (row,) = summary["table"]
    assert (row["focal"], row["compared"]) == (cx.TUTOR_A, cx.TUTOR_B)
    assert row["counts"] == {"win": 3, "tie": 1, "loss": 2}
    assert (row["win"], row["tie"], row["loss"]) == pytest.approx((50.0, 100 / 6, 100 / 3))
    assert row["preference"]["mean"] == pytest.approx(50 + 100 / 12)
    assert f"| {cx.TUTOR_B} | 50.00 | 16.67 | 33.33 | 58.33 |" in (out / "compare_report.md").read_text()
    # Cohen's kappa: alice a, tie, b; bob a, a, b. p_o = 2/3; alice a 1/3, tie 1/3, b 1/3; bob a 2/3, b 1/3
    # -> p_e = 1/3 x 2/3 + 1/3 x 0 + 1/3 x 1/3 = 1/3; kappa = (2/3 - 1/3) / (1 - 1/3) = 0.5
    (agreement,) = summary["agreement"]["pairwise"]
    assert agreement["pairs"] == 3 and agreement["cohen_kappa"] == pytest.approx(0.5)
    votes = [json.loads(line) for line in (out / "votes.jsonl").read_text().splitlines()]
    assert len(votes) == 6 and {v["row_kind"] for v in votes} == {"vote"}
    detailed = [v for v in votes if v["comment"]]
    assert len(detailed) == 1 and detailed[0]["comment"] == COMMENT and detailed[0]["dims"] == DIM_CHOICES
    # the eval-rm export: pair 0 (both a) and pair 2 (both b); pair 1 has no majority
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert [(e["id"], e["preferred"]) for e in exported] == [(pairs[0].pair_id, "a"), (pairs[2].pair_id, "b")]
    assert {e["row_kind"] for e in exported} == {"preference_pair"}


def png_size(path):
    with open(path, "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_screenshot_command_regenerates_the_docs_image(cx, tmp_path):
    out = tmp_path / "page.png"
    done = subprocess.run(
        [sys.executable, "-m", "pearl_verl.compare.screenshot", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    width, height = png_size(out)
    assert width == 1400 and height >= 900
    committed = png_size(cx.ROOT / "docs" / "compare-page.png")
    assert committed[0] == 1400 and committed[1] >= 900
