"""quiet_run: library output goes to the log, the person's streams stay usable, nothing leaks."""

import subprocess
import sys

import pytest

SCRIPT = """
import sys
from pathlib import Path
from pearl_verl.train_local.quiet import quiet_run

log = Path(sys.argv[1])
with quiet_run(log, verbose=False) as console:
    print("library chatter")
    print("progress", file=console.err)
    if sys.argv[2] == "fail":
        raise SystemExit("error: the run stopped")
print("summary")
"""


@pytest.mark.parametrize("ending", ["ok", "fail"])
def test_chatter_goes_to_the_log_and_no_stream_is_left_open(tmp_path, ending):
    log = tmp_path / "train.log"
    # -X dev shows ResourceWarning, which an unclosed duplicate of stdout/stderr raises at shutdown
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", SCRIPT, str(log), ending],
                          capture_output=True, text=True, timeout=120)
    assert "library chatter" in log.read_text()
    assert "library chatter" not in proc.stdout
    assert "progress" in proc.stderr
    assert "ResourceWarning" not in proc.stderr, proc.stderr
    if ending == "ok":
        assert proc.returncode == 0 and proc.stdout.strip() == "summary"
    else:
        assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1] == "error: the run stopped"
