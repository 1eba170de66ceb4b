"""Importing tianshou must stay cheap: optional and heavy packages load only when used."""

import subprocess
import sys

LAZY_MODULES = ("h5py", "numba", "ray", "envpool", "pettingzoo", "tensorboard", "mujoco")


def test_import_loads_no_optional_package() -> None:
    probe = (
        "import sys, tianshou, tianshou.data\n"
        f"print(','.join(m for m in {LAZY_MODULES!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"import tianshou loaded optional packages eagerly: {loaded}"


def test_version_is_the_matched_release() -> None:
    import tianshou

    assert tianshou.__version__ == "2.0.1"
