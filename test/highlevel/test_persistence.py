"""Tests of policy persistence: round trips, safe loading, checkpoints and handler groups."""

import os
import pickle
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from torch import nn

from test.import_graph import reachable_imports
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.highlevel.persistence import (
    Persistence,
    PersistenceGroup,
    PersistEvent,
    PolicyPersistence,
    RestoreEvent,
    env_state_persistence,
)
from tianshou.highlevel.world import World
from tianshou.utils.net.common import Net


class Recorder(Persistence):
    def __init__(self) -> None:
        self.events: list[PersistEvent | RestoreEvent] = []

    def persist(self, event: PersistEvent, world: World) -> None:
        self.events.append(event)

    def restore(self, event: RestoreEvent, world: World) -> None:
        self.events.append(event)


def make_world(tmp_path: Path, restore: bool = True, algorithm: DQN | None = None) -> World:
    directory = str(tmp_path / "run")
    return World(
        envs=None,  # type: ignore[arg-type]
        algorithm=algorithm,  # type: ignore[arg-type]
        logger=None,  # type: ignore[arg-type]
        persist_directory=directory,
        restore_directory=directory if restore else None,
    )


def make_dqn(seed: int) -> DQN:
    torch.manual_seed(seed)
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[8])
    policy = DiscreteQLearningPolicy(model=net, action_space=gym.spaces.Discrete(2))
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))


def assert_same_parameters(a: nn.Module, b: nn.Module) -> None:
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(pa, pb, msg=name)


@pytest.mark.parametrize("mode", list(PolicyPersistence.Mode))
def test_round_trip_restores_the_parameters(tmp_path: Path, mode: PolicyPersistence.Mode) -> None:
    world = make_world(tmp_path)
    recorder = Recorder()
    persistence = PolicyPersistence(additional_persistence=recorder, mode=mode)
    saved, other = make_dqn(0), make_dqn(1)
    save_best_fn = persistence.get_save_best_fn(world)
    assert save_best_fn is not None
    save_best_fn(saved)
    files = sorted(os.listdir(world.persist_directory))
    expected = ["policy_state_dict.pt"] + (["policy.pt"] if mode.value == "policy" else [])
    assert files == sorted(expected)
    persistence.restore(other, world, "cpu")
    assert_same_parameters(saved, other)
    assert recorder.events == [PersistEvent.PERSIST_POLICY, RestoreEvent.RESTORE_POLICY]


def test_pickled_policy_loads_without_building_it(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    saved = make_dqn(0)
    PolicyPersistence(mode=PolicyPersistence.Mode.POLICY).persist(saved, world)
    loaded = torch.load(world.persist_path("policy.pt"), weights_only=False)
    assert isinstance(loaded, DQN)
    assert_same_parameters(saved, loaded)


def test_restore_never_unpickles_objects(tmp_path: Path) -> None:
    """A state-dict file that smuggles in an object (code on load) is refused."""
    world = make_world(tmp_path)
    os.makedirs(world.persist_directory)
    torch.save({"evil": Recorder()}, world.persist_path("policy_state_dict.pt"))
    with pytest.raises(pickle.UnpicklingError):
        PolicyPersistence().restore(make_dqn(0), world, "cpu")


def test_restore_without_parameters_file_explains(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    os.makedirs(world.persist_directory)
    torch.save(make_dqn(0), world.persist_path("policy.pt"))
    with pytest.raises(FileNotFoundError, match=r"policy_state_dict.pt.*unpickling runs code"):
        PolicyPersistence().restore(make_dqn(1), world, "cpu")


def test_unpicklable_policy_still_saves_its_parameters(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = make_world(tmp_path)
    policy = make_dqn(0)
    policy.unpicklable = lambda: None  # type: ignore[assignment]
    PolicyPersistence(mode=PolicyPersistence.Mode.POLICY).persist(policy, world)
    assert os.listdir(world.persist_directory) == ["policy_state_dict.pt"]
    assert "could not pickle the whole DQN" in caplog.text


def test_disabled_persistence_writes_nothing(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    persistence = PolicyPersistence(enabled=False)
    persistence.persist(make_dqn(0), world)
    assert not os.path.exists(world.persist_directory)
    assert persistence.get_save_best_fn(world) is None
    assert persistence.get_save_checkpoint_fn(world) is None


def test_checkpoint_holds_the_algorithm_state_with_optimizer(tmp_path: Path) -> None:
    algorithm = make_dqn(0)
    world = make_world(tmp_path, algorithm=algorithm)
    save_checkpoint_fn = PolicyPersistence().get_save_checkpoint_fn(world)
    assert save_checkpoint_fn is not None
    path = save_checkpoint_fn(1, 10, 5)
    assert path == world.persist_path("checkpoint.pt")
    restored = make_dqn(1)
    restored.load_state_dict(torch.load(path, weights_only=True))
    assert_same_parameters(algorithm, restored)
    assert not any(name.endswith(".tmp") for name in os.listdir(world.persist_directory))


def test_group_applies_all_handlers_and_can_be_disabled(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    first, second = Recorder(), Recorder()
    PersistenceGroup(first, second).persist(PersistEvent.PERSIST_POLICY, world)
    PersistenceGroup(first, second, enabled=False).persist(PersistEvent.PERSIST_POLICY, world)
    PersistenceGroup(first, second, enabled=False).restore(RestoreEvent.RESTORE_POLICY, world)
    expected = [PersistEvent.PERSIST_POLICY, RestoreEvent.RESTORE_POLICY]
    assert first.events == second.events == expected


def test_env_handlers_are_checked_to_be_persistence_objects() -> None:
    recorder = Recorder()
    assert env_state_persistence([recorder]) == [recorder]
    with pytest.raises(TypeError, match=r"takes Persistence handlers.*got 'obs_rms'"):
        env_state_persistence([recorder, "obs_rms"])


@pytest.mark.parametrize(
    "module",
    [
        "tianshou.highlevel.env",
        "tianshou.highlevel.persistence",
        "tianshou.highlevel.world",
        "tianshou.highlevel.module.core",
    ],
)
def test_envs_persistence_world_and_module_factories_are_on_no_import_cycle(module: str) -> None:
    assert module not in reachable_imports(module, within="tianshou")
