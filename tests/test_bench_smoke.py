"""``bench/run.py --quick`` runs and meets its CI targets (estimator <= 3x verl's GRPO)."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "run.py"


def test_quick_benchmark_meets_targets(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    names = [t["name"] for t in result["timings"]]
    assert "verl grpo_vectorized (1 dim)" in names and "pearl compute_pearl_advantage (8 dims)" in names
    vs_grpo = [r for r in result["ratios"] if "/ verl grpo_vectorized" in r["name"]]
    assert len(vs_grpo) == 2 and all(r["ok"] and r["value"] <= 3.0 for r in vs_grpo)
