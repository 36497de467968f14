"""The generated page in a real headless Chromium: filters, views, and hostile text kept inert."""

import json
import random

import pytest

from pearl_verl import cli
from pearl_verl.compare.browser import launch_chromium
from pearl_verl.dialogue.row import dialogue_row

from .conftest import LEAK, XSS, episode, judgement

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def page_of(tmp_path):
    """Open a generated page; yields (page, console and page errors)."""
    opened = []

    def open_page(*paths):
        out = tmp_path / "view.html"
        assert cli.main(["view", *map(str, paths), "-o", str(out)]) == 0
        playwright = sync_api.sync_playwright().start()
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
        page.goto(out.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=20_000)
        opened.append((playwright, browser))
        return page, errors

    yield open_page
    for playwright, browser in opened:
        browser.close()
        playwright.stop()


def rows(page):
    return page.locator("#list-body tr").count()


def test_filters_sort_and_the_three_views(run_folder, page_of):
    page, errors = page_of(run_folder)
    assert page.text_content("#count") == "12 of 12 dialogues match"
    page.select_option("#f-step", "2")
    assert rows(page) == 4 + 2  # step 2: four training dialogues and two held-out ones
    page.check("#f-failed")
    assert rows(page) == 1 and "judge_failed" in page.text_content("#list-body")
    page.uncheck("#f-failed")
    page.select_option("#f-step", "")
    page.select_option("#f-flag", "addresses_evaluator")
    assert rows(page) == 1
    page.select_option("#f-flag", "")
    page.select_option("#f-dim", "acc")
    page.fill("#f-min", "0.8")
    assert rows(page) == 6  # the dialogues scored 0.9 (training member 0 and the step-2 evaluation)
    page.fill("#f-min", "")
    page.select_option("#f-dim", "")
    page.select_option("#f-source", "train")
    page.select_option("#f-sort", "3")  # advantage, low first
    first = page.locator("#list-body tr").first.locator("td").nth(7).text_content()
    assert first == "-0.700"

    # a dialogue: turns with the student's state, the leak marked, the judgement with its criteria
    page.select_option("#f-sort", "0")
    page.fill("#f-problem", "p-0")
    page.select_option("#f-step", "1")
    page.locator("#list-body tr").first.click()
    view = page.locator("#dialogue-view")
    assert "intent: answer" in view.text_content() and "mastery: mult 0.6" in view.text_content()
    assert page.locator("#dialogue-view .criteria tr").count() == 25
    assert "the tutor asks in turn 2" in view.text_content()
    # its GSPO group side by side, highest advantage first
    page.click("#btn-group")
    advantages = page.locator("#group-view .col .adv").all_text_contents()
    assert advantages == ["0.700", "-0.700"]
    # the same problem at the first and the last step
    page.select_option("#f-source", "heldout")
    page.fill("#f-problem", "held-1")
    page.select_option("#f-step", "2")
    page.locator("#list-body tr").first.click()
    page.click("#btn-compare")
    columns = page.locator("#compare-view .col")
    assert columns.count() == 2
    assert "step 0" in columns.nth(0).text_content() and "step 2" in columns.nth(1).text_content()
    assert LEAK[1][1] in columns.nth(0).text_content()  # step 0 leaked the answer; step 2 did not
    assert errors == []


def test_hostile_text_stays_text(run_folder, page_of):
    page, errors = page_of(run_folder)
    page.fill("#f-problem", "")
    page.select_option("#f-step", "2")
    for i in range(rows(page)):
        page.locator("#list-body tr").nth(i).click()
        if page.locator("#btn-group").count():
            page.click("#btn-group")
    detail = [t for t in page.locator("#list-body tr td:nth-child(4)").all_text_contents()]
    assert XSS["closing"] in detail  # a problem id made of tags is shown as those characters
    page.select_option("#f-step", "2")
    page.locator("#list-body tr", has_text="train:2:0").click()
    text = page.text_content("#dialogue-view")
    assert XSS["script"] in text and XSS["attribute"] in text and XSS["url"] in text
    assert page.evaluate("window.__pwned") is None and page.locator("#detail img, #detail a").count() == 0
    assert page.evaluate("document.scripts.length") == 2  # the data block and the page's own script
    policy = page.get_attribute("meta[http-equiv='Content-Security-Policy']", "content")
    assert policy.startswith("default-src 'none'; script-src 'sha256-")
    assert errors == []


def test_ten_thousand_dialogues_stay_under_30_mb_and_open(tmp_path, page_of):
    # text that compresses like prose (random words of a 2,000-word vocabulary), not like repeats: 14 turns of
    # about 200 characters (the paper's final tutor averages 6.9 rounds) and 24 rationales of about 100
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(2000)]

    def prose(chars):
        text = []
        while sum(len(w) + 1 for w in text) < chars:
            text.append(rng.choice(words))
        return " ".join(text)

    big = tmp_path / "big" / "dialogues"
    big.mkdir(parents=True)
    with open(big / "step_0001.jsonl", "w") as handle:
        for i in range(10_000):
            turns = [("student" if k % 2 == 0 else "tutor", prose(200)) for k in range(14)]
            judge = judgement(0.5, rationale="")
            for criterion in judge["criteria"]:
                criterion["rationale"] = prose(100)
            row = dialogue_row("train", episode(turns, pid=f"p-{i // 8}"), judge, 0.5, step=1 + i // 640,
                               uid=f"g{i // 8}", shaped=[0.5] * 8, advantage=0.0)
            handle.write(json.dumps(row) + "\n")
    page, errors = page_of(big.parent)  # how fast: bench/bench_view.py (a busy machine is slower, not wrong)
    size = (tmp_path / "view.html").stat().st_size
    assert size < 30e6, size
    assert page.text_content("#count") == "10000 of 10000 dialogues match"
    assert errors == []
