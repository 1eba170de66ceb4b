"""The env package's public surface, and that importing it stays cheap."""

import subprocess
import sys

import tianshou.env


def test_import_does_not_load_optional_packages() -> None:
    probe = (
        "import sys, tianshou.env\n"
        "print(','.join(m for m in ('ray', 'envpool', 'pettingzoo', 'mujoco') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_every_public_name_resolves() -> None:
    for name in tianshou.env.__all__:
        assert getattr(tianshou.env, name).__name__ == name
