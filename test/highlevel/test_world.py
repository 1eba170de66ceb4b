"""Tests of World's paths."""

import os

import pytest

from tianshou.highlevel.world import World


def make_world(persist: str, restore: str | None) -> World:
    return World(
        envs=None,  # type: ignore[arg-type]
        algorithm=None,  # type: ignore[arg-type]
        logger=None,  # type: ignore[arg-type]
        persist_directory=persist,
        restore_directory=restore,
    )


def test_persist_path_is_absolute_and_restore_path_joins() -> None:
    world = make_world("runs/exp", "old/exp")
    assert world.persist_path("policy.pt") == os.path.abspath("runs/exp/policy.pt")
    assert world.restore_path("policy.pt") == os.path.join("old/exp", "policy.pt")
    assert world.trainer is None


def test_restore_path_without_directory_says_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"cannot locate 'policy.pt'.*no restore_directory"):
        make_world("runs/exp", None).restore_path("policy.pt")


def test_collectors_and_trainer_are_optional_but_the_algorithm_is_not() -> None:
    world = make_world("runs/exp", None)
    assert (world.training_collector, world.test_collector, world.trainer) == (None, None, None)
    with pytest.raises(TypeError, match="algorithm"):
        World(envs=None, logger=None, persist_directory="x", restore_directory=None)  # type: ignore[call-arg, arg-type]
