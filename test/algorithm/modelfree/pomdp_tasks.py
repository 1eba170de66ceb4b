"""The partially observed tasks of ``examples/pomdp/pomdp_envs.py``, loaded for the tests.

The examples folder is no package; loading the file by path keeps ``sys.path`` untouched.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

_PATH = Path(__file__).resolve().parents[3] / "examples" / "pomdp" / "pomdp_envs.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pomdp_envs", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pomdp_envs = _load()
