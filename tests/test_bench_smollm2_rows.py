"""bench/smollm2_learning.py keeps one row per setting, control and seed: a probe of other flags does not replace
the defaults' row of its seed, and a rerun of the same replaces its own."""

import importlib
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
smollm2_learning = importlib.import_module("smollm2_learning")


def test_a_probe_keeps_the_defaults_row_of_its_seed_and_a_rerun_replaces_its_own(tmp_path, monkeypatch):
    results = tmp_path / "smollm2_learning.json"
    monkeypatch.setattr(smollm2_learning, "RESULTS", results)
    # a row written before rows named their setting is a row of the defaults
    results.write_text(json.dumps({"runs": [{"seed": 0, "control": "none", "change": 0.03}]}))
    smollm2_learning.record({"setting": "turns10", "seed": 0, "control": "none", "change": 0.05})
    smollm2_learning.record({"setting": "defaults", "seed": 1, "control": "none", "change": -0.01})
    smollm2_learning.record({"setting": "turns10", "seed": 0, "control": "none", "change": 0.07})
    rows = json.loads(results.read_text())["runs"]
    assert [(r.get("setting", "defaults"), r["seed"], r["change"]) for r in rows] == [
        ("defaults", 0, 0.03), ("defaults", 1, -0.01), ("turns10", 0, 0.07)]
