"""The README and the docs stay a front door: every relative link and #anchor resolves, the README is short enough
to read in five minutes with its two commands near the top, and each reference doc stays a reference."""

import os
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
REFERENCE_DOCS = ("training.md", "judge.md", "simulator.md", "cluster.md")
README_MAX_CHARS = 12_000
REFERENCE_MAX_CHARS = 25_000
CI_COMMANDS_WITHIN_LINES = 60

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def prose_lines(text: str) -> list[str]:
    """The page's lines with fenced code blocks blanked, so numbering stays that of the file."""
    lines, inside = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lowercased, punctuation except '-' and '_' dropped, each space
    a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading renders as its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a page has: its headings' slugs (a repeated one gets -1, -2, ...) and its HTML anchors."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(path.read_text(encoding="utf-8")):
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(_HTML_ANCHOR.findall(line))
    return frozenset(found)


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of the page whose file or #anchor does not exist, as 'page:line: target (why)', the paths
    relative to ``root``. A link's text may run over a line break; code spans and fenced blocks hold no links."""
    text = "\n".join(_CODE_SPAN.sub("", line) for line in prose_lines(page.read_text(encoding="utf-8")))
    broken = []
    for link in _LINK.finditer(text):
        target = link.group(1)
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        where = f"{os.path.relpath(page, root)}:{text.count(chr(10), 0, link.start()) + 1}: {target}"
        if not destination.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{where} (no such anchor in {os.path.relpath(destination, root)})")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    assert not broken_links(page)


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\n## Same\n\n## Same\n\n[ok](#same-1) [ok](b.md#the-part) [ok](#top)\n",
                                   encoding="utf-8")
    (tmp_path / "b.md").write_text("## The part\n\n```\n## not a heading\n```\n[gone](#not-a-heading) [gone](c.md)\n"
                                   "`[code](nowhere.md)` [web](https://example.org/x.md)\n"
                                   "[a link\nover two lines](d.md)\n", encoding="utf-8")
    assert sorted(anchors(tmp_path / "a.md")) == ["same", "same-1", "top"]
    page = tmp_path / "b.md"
    found = [line.split(": ", 1)[1] for line in broken_links(page, tmp_path)]
    assert found == ["#not-a-heading (no such anchor in b.md)", "c.md (no such file)", "d.md (no such file)"]
    assert not broken_links(tmp_path / "a.md", tmp_path)


def test_headings_slug_as_github_does():
    assert slug("The settings, written once (`pearl_verl/verl_plugin/config/`)") == (
        "the-settings-written-once-pearl_verlverl_pluginconfig")
    assert slug("`pearl-verl judge-check --human`") == "pearl-verl-judge-check---human"
    assert slug("A real OpenAI-compatible server: llama-cpp-python + SmolLM2-135M (issue 20)") == (
        "a-real-openai-compatible-server-llama-cpp-python--smollm2-135m-issue-20")
    assert slug("See [data.md](docs/data.md) now") == "see-datamd-now"


def test_the_readme_is_read_in_five_minutes():
    text = README.read_text(encoding="utf-8")
    assert len(text) <= README_MAX_CHARS, f"README.md is {len(text):,} characters; at most {README_MAX_CHARS:,}"


@pytest.mark.parametrize("name", REFERENCE_DOCS)
def test_each_reference_doc_stays_a_reference(name):
    size = len((ROOT / "docs" / name).read_text(encoding="utf-8"))
    assert size <= REFERENCE_MAX_CHARS, (
        f"docs/{name} is {size:,} characters; at most {REFERENCE_MAX_CHARS:,}: move measurements to "
        "docs/experiments/ or BENCHMARKS.md, or split the doc")


def test_both_ci_commands_come_first_in_the_readme():
    lines = README.read_text(encoding="utf-8").splitlines()
    first_fence = next(number for number, line in enumerate(lines) if line.startswith("```"))
    for step in ("install", "test"):
        marker = lines.index(f"<!-- ci:{step} -->")
        assert lines[marker + 1] == "```bash", f"<!-- ci:{step} --> must be followed by its ```bash block"
        end = next(number for number in range(marker + 2, len(lines)) if lines[number].startswith("```"))
        assert end < CI_COMMANDS_WITHIN_LINES, f"the {step} command ends on line {end + 1}"
        if step == "install":
            assert first_fence == marker + 1, "the install command is the README's first fenced block"
