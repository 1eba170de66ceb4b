"""A stand-in for the optional ``wandb`` package: records what a WandbLogger asks of it."""

import sys
import types
from typing import Any

import pytest


class FakeArtifact:
    def __init__(self, name: str, type: str, metadata: dict[str, Any]) -> None:
        self.name, self.type, self.metadata = name, type, metadata
        self.files: list[str] = []
        self.downloaded_to: str | None = None

    def add_file(self, path: str) -> None:
        self.files.append(path)

    def download(self, root: str) -> None:
        self.downloaded_to = root


class FakeRun:
    id = "run42"

    def __init__(self) -> None:
        self.artifacts: list[FakeArtifact] = []
        self.finished = False

    def log_artifact(self, artifact: FakeArtifact) -> None:
        self.artifacts.append(artifact)

    def use_artifact(self, name: str) -> FakeArtifact:
        assert name == "run_run42_checkpoint:latest"
        return self.artifacts[-1]

    def finish(self) -> None:
        self.finished = True


def install_fake_wandb(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """Make ``import wandb`` return the stand-in; return its state (init kwargs, the run)."""
    module = types.ModuleType("wandb")
    state = types.SimpleNamespace(init_kwargs=None, run=FakeRun())

    def init(**kwargs: Any) -> FakeRun:
        state.init_kwargs = kwargs
        return state.run

    module.init = init  # type: ignore[attr-defined]
    module.run = None  # type: ignore[attr-defined]
    module.Artifact = FakeArtifact  # type: ignore[attr-defined]
    module.Settings = lambda **kwargs: ("Settings", kwargs)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", module)
    return state
