"""Regenerate ``docs/compare-page.png``: the comparison page as a teacher sees it.

    python -m pearl_verl.compare.screenshot --out docs/compare-page.png

Builds a small study from scratch (eval-tutor on the first MathDial fixture problem with the two
scripted test-double tutors, the offline student and the offline judge), serves it, signs in as a
teacher in headless chromium and saves a full-page screenshot at a 1400 x 900 viewport. Needs
Debian's chromium and playwright (see :mod:`pearl_verl.compare.browser`); the dialogues are
deterministic, so reruns give the same page.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pearl_verl.resources
from pearl_verl.ranges import POSITIVE

FIXTURE = Path(pearl_verl.resources.__file__).parent / "data" / "mathdial" / "test_first20.jsonl"


def build_demo_study(folder: Path) -> tuple[str, str]:
    """A one-pair study in ``folder``; returns (database URL, the teacher's access code)."""
    from pearl_verl.cli import main as cli

    run = folder / "run"
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        code = cli(
            [
                "eval-tutor", str(FIXTURE), "--limit", "1", "--judge", "offline", "--out", str(run),
                "--tutor", "name=socratic,scripted=socratic", "--tutor", "name=leaking,scripted=leaking",
            ]
        )  # fmt: skip
        if code != 0:
            raise RuntimeError(f"eval-tutor failed ({code}):\n{quiet.getvalue()}")
        if cli(["compare", "build-pairs", str(run), "--out", str(folder / "pairs.jsonl")]) != 0:
            raise RuntimeError(f"build-pairs failed:\n{quiet.getvalue()}")
    from pearl_verl.compare.pairs import read_pairs
    from pearl_verl.compare.store import Store

    db_url = f"sqlite:///{folder / 'compare.db'}"
    store = Store(db_url)
    store.load_pairs(read_pairs(folder / "pairs.jsonl"))
    return db_url, store.add_annotator("Teacher 1")


def take_screenshot(out: Path, width: int = 1400, height: int = 900) -> Path:
    """Serve the demo study and save the signed-in comparison page to ``out`` (PNG)."""
    from playwright.sync_api import sync_playwright

    from pearl_verl.compare.browser import StudyServer, launch_chromium

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db_url, token = build_demo_study(folder)
        server = StudyServer(db_url, [], folder / "server.log").start()
        try:
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(f"{server.url}/login?token={token}")
                page.click("button[type=submit].primary")
                page.wait_for_selector("section.dialogue")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                browser.close()
        finally:
            server.stop()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pearl_verl.compare.screenshot", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/compare-page.png"))
    parser.add_argument("--width", type=POSITIVE.flag, default=1400)
    parser.add_argument("--height", type=POSITIVE.flag, default=900)
    args = parser.parse_args(argv)
    print(take_screenshot(args.out, args.width, args.height))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
