"""``bench/run.py --quick`` runs every section and meets its CI targets (its exit code gates them)."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "run.py"


def test_quick_benchmark_meets_its_targets(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ratios = {r["name"]: r for r in json.loads(out.read_text())["ratios"]}
    gating = {name: r for name, r in ratios.items() if r["gates_quick"]}
    assert len(gating) == 5 and all(r["ok"] for r in gating.values())
    assert any("pearl_tutor wall / ideal, 64 episodes" in name for name in gating)  # the 1.15x
    assert any("/ verl grpo_vectorized" in name for name in gating)
    assert any("verl tool_agent, CPU per turn" in name for name in gating)
    assert any("judge 512 dialogues" in name for name in ratios)  # measured and reported, gated in full runs
    for section in ("### advantage", "### agent_loop", "### judge", "### student"):
        assert section in proc.stdout
