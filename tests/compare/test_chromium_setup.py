"""Without chromium the test command says so in one line: tools/ensure-chromium before pytest, and
the browser module's error for anyone who runs pytest alone."""

import shutil
import subprocess
from pathlib import Path

import pytest

from pearl_verl.compare import browser

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "ensure-chromium"
BASH = shutil.which("bash")


def fake_tools(folder, uid, apt_exit):
    """A PATH holding only a fake ``id`` and ``apt-get`` (noisy, exiting ``apt_exit``) and the real mktemp."""
    folder.mkdir()
    (folder / "id").write_text(f"#!{BASH}\necho {uid}\n")
    (folder / "apt-get").write_text(f"#!{BASH}\nfor i in $(seq 40); do echo 'E: apt noise' $i; done\nexit {apt_exit}\n")
    for tool in ("id", "apt-get"):
        (folder / tool).chmod(0o755)
    (folder / "seq").symlink_to(shutil.which("seq"))
    (folder / "mktemp").symlink_to(shutil.which("mktemp"))
    return str(folder)


def run_script(path):
    return subprocess.run([BASH, str(SCRIPT)], capture_output=True, text=True, env={"PATH": path}, check=False)


def test_a_user_without_root_gets_one_line_and_no_apt_call(tmp_path):
    done = run_script(fake_tools(tmp_path / "bin", uid=1000, apt_exit=0))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "chromium is not installed and this user cannot apt-get it: run `sudo apt-get install chromium`" in done.stderr
    assert "tests/compare/test_browser.py" in done.stderr


def test_a_failing_apt_is_kept_in_its_log_and_reported_in_one_line(tmp_path):
    done = run_script(fake_tools(tmp_path / "bin", uid=0, apt_exit=100))
    assert done.returncode == 1
    assert done.stdout.startswith("installing chromium with apt-get") and done.stdout.count("\n") == 1
    assert done.stderr.count("\n") == 1 and "apt-get could not install chromium" in done.stderr
    log = Path(done.stdout.split("(log: ")[1].rstrip(")\n"))
    assert "E: apt noise 40" in log.read_text() and "apt noise" not in done.stderr
    log.unlink()


def test_an_installed_chromium_is_left_alone(tmp_path):
    path = fake_tools(tmp_path / "bin", uid=1000, apt_exit=100)
    (tmp_path / "bin" / "chromium").write_text(f"#!{BASH}\n")
    (tmp_path / "bin" / "chromium").chmod(0o755)
    done = run_script(path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_browser_module_names_the_fix_in_one_line(monkeypatch):
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError) as missing:
        browser.chromium_path()
    message = str(missing.value)
    assert "\n" not in message and "sudo apt-get install chromium" in message
    assert "tests/compare/test_browser.py" in message and "never `playwright install`" in message
