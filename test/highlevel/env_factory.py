"""Env factories for the high-level tests, under the names the published test suite uses."""

from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType


class DiscreteTestEnvFactory(EnvFactoryRegistered):
    """CartPole-v1 in-process: the small discrete task."""

    def __init__(self) -> None:
        super().__init__(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)


class ContinuousTestEnvFactory(EnvFactoryRegistered):
    """Pendulum-v1 in-process: the small continuous task."""

    def __init__(self) -> None:
        super().__init__(task="Pendulum-v1", venv_type=VectorEnvType.DUMMY)
