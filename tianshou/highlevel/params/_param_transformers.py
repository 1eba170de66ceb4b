"""Parameter transformers: how the high-level values of a parameter object become the
procedural constructors' arguments.

Each :class:`ParamTransformer` rewrites the dict of a parameter object's fields in place, e.g.
replacing a learning rate and an optimizer choice by an optimizer factory; the typed
``change_value`` of a :class:`ParamTransformerChangeValue` resolves a single value. The
parameter objects (:mod:`tianshou.highlevel.params.algorithm_params`, which publishes these
classes) list their transformers through :class:`GetParamTransformersProtocol`.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tianshou.algorithm.modelfree.sac import Alpha
from tianshou.exploration import BaseNoise
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.params.alpha import AutoAlphaFactory
from tianshou.highlevel.params.env_param import FloatEnvValueFactory
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactory
from tianshou.highlevel.params.noise import NoiseFactory
from tianshou.highlevel.params.optim import OptimizerFactoryFactory


@dataclass(kw_only=True)
class ParamTransformerData:
    """What transformers need to resolve high-level parameters.

    :param envs: the environments the algorithm is built for.
    :param device: the device of the algorithm's modules.
    :param optim_factory_default: the optimizer used where a parameter object names none.
    """

    envs: Environments
    device: TDevice
    optim_factory_default: OptimizerFactoryFactory


class ParamTransformer(ABC):
    """Rewrites a dict of parameters in place, e.g. replacing a factory by what it creates."""

    @abstractmethod
    def transform(self, params: dict[str, Any], data: ParamTransformerData) -> None:
        """Rewrite ``params`` in place.

        :param params: the parameters, keyed by field name.
        :param data: the environments, device and default optimizer to resolve them with.
        """

    @staticmethod
    def get(
        d: dict[str, Any],
        key: str,
        drop: bool = False,
        default_factory: Callable[[], Any] | None = None,
    ) -> Any:
        """The value of ``key`` in ``d``.

        :param d: the parameters.
        :param key: the parameter to read.
        :param drop: also remove it from ``d``.
        :param default_factory: creates the value if ``key`` is missing or None; without it, a
            missing key is a KeyError.
        """
        if key not in d and default_factory is None:
            raise KeyError(f"parameter '{key}' is missing; present are {sorted(d)}")
        value = d.pop(key, None) if drop else d.get(key)
        if value is None and default_factory is not None:
            value = default_factory()
        return value


class ParamTransformerDrop(ParamTransformer):
    """Removes parameters that the procedural constructors do not take.

    :param keys: the parameters to remove.
    """

    def __init__(self, *keys: str) -> None:
        self.keys = keys

    def transform(self, kwargs: dict[str, Any], data: ParamTransformerData) -> None:
        for key in self.keys:
            self.get(kwargs, key, drop=True)


class ParamTransformerRename(ParamTransformer):
    """Renames parameters.

    :param renamed_params: maps old names to new ones.
    """

    def __init__(self, renamed_params: dict[str, str]) -> None:
        self.renamed_params = renamed_params

    def transform(self, kwargs: dict[str, Any], data: ParamTransformerData) -> None:
        for old_name, new_name in self.renamed_params.items():
            kwargs[new_name] = self.get(kwargs, old_name, drop=True)


class ParamTransformerChangeValue(ParamTransformer):
    """Replaces the value of one parameter by a function of it.

    :param key: the parameter to change.
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def transform(self, params: dict[str, Any], data: ParamTransformerData) -> None:
        params[self.key] = self.change_value(self.get(params, self.key), data)

    @abstractmethod
    def change_value(self, value: Any, data: ParamTransformerData) -> Any:
        """The new value.

        :param value: the current value.
        :param data: the environments, device and default optimizer.
        """


class ParamTransformerOptimFactory(ParamTransformer):
    """Combines an optimizer choice, a learning rate and an optional learning-rate scheduler
    into the :class:`~tianshou.algorithm.optim.OptimizerFactory` a procedural algorithm takes.

    :param key_optim_factory_factory: the :class:`OptimizerFactoryFactory` parameter (None: the
        experiment's default optimizer); removed.
    :param key_lr: the learning-rate parameter; removed.
    :param key_lr_scheduler_factory_factory: the :class:`LRSchedulerFactoryFactory` parameter
        (None: constant learning rate); removed.
    :param key_optim_output: the parameter the optimizer factory is stored in.
    """

    def __init__(
        self,
        key_optim_factory_factory: str,
        key_lr: str,
        key_lr_scheduler_factory_factory: str,
        key_optim_output: str,
    ) -> None:
        self.key_optim_factory_factory = key_optim_factory_factory
        self.key_lr = key_lr
        self.key_lr_scheduler_factory_factory = key_lr_scheduler_factory_factory
        self.key_optim_output = key_optim_output

    def transform(self, params: dict[str, Any], data: ParamTransformerData) -> None:
        optim = self.get(
            params,
            self.key_optim_factory_factory,
            drop=True,
            default_factory=lambda: data.optim_factory_default,
        )
        lr = self.get(params, self.key_lr, drop=True)
        lr_scheduler = self.get(params, self.key_lr_scheduler_factory_factory, drop=True)
        if not isinstance(optim, OptimizerFactoryFactory):
            raise TypeError(
                f"{self.key_optim_factory_factory} must be an OptimizerFactoryFactory (e.g. "
                f"OptimizerFactoryFactoryAdam()) or None, got {optim!r}; the learning rate is "
                f"set by {self.key_lr}"
            )
        if lr_scheduler is not None and not isinstance(lr_scheduler, LRSchedulerFactoryFactory):
            raise TypeError(
                f"{self.key_lr_scheduler_factory_factory} must be an LRSchedulerFactoryFactory "
                f"(e.g. LRSchedulerFactoryFactoryLinear(training_config)) or None, got "
                f"{lr_scheduler!r}"
            )
        optim_factory = optim.create_optimizer_factory(lr)
        if lr_scheduler is not None:
            optim_factory.with_lr_scheduler_factory(lr_scheduler.create_lr_scheduler_factory())
        params[self.key_optim_output] = optim_factory


class ParamTransformerAutoAlpha(ParamTransformer):
    """Creates a learned entropy coefficient from an :class:`AutoAlphaFactory`; floats and
    :class:`~tianshou.algorithm.modelfree.entropy_coefficient.Alpha` instances are kept.

    :param key: the entropy-coefficient parameter.
    """

    def __init__(self, key: str) -> None:
        self.key = key

    def transform(self, kwargs: dict[str, Any], data: ParamTransformerData) -> None:
        alpha = self.get(kwargs, self.key)
        if isinstance(alpha, AutoAlphaFactory):
            kwargs[self.key] = alpha.create_auto_alpha(data.envs, data.device)
        elif isinstance(alpha, bool) or not isinstance(alpha, float | int | Alpha):
            raise TypeError(
                f"{self.key} must be a float (fixed coefficient) or an AutoAlphaFactory (e.g. "
                f"AutoAlphaFactoryDefault(lr=3e-4)), got {alpha!r}"
            )


class ParamTransformerNoiseFactory(ParamTransformerChangeValue):
    """Creates exploration noise from a :class:`NoiseFactory`; noise objects, None and
    ``"default"`` are kept (the policy resolves ``"default"`` itself, exactly as the procedural
    API does, so both APIs explore alike)."""

    def change_value(
        self, value: Any, data: ParamTransformerData
    ) -> BaseNoise | Literal["default"] | None:
        if isinstance(value, NoiseFactory):
            return value.create_noise(data.envs)
        if value is None or isinstance(value, BaseNoise) or value == "default":
            return value
        raise TypeError(
            f"{self.key} must be a BaseNoise, a NoiseFactory (e.g. MaxActionScaledGaussian(0.1)), "
            f"'default' or None, got {value!r}"
        )


class ParamTransformerFloatEnvParamFactory(ParamTransformerChangeValue):
    """Creates a float from a :class:`FloatEnvValueFactory`; numbers are kept (as floats)."""

    def change_value(self, value: Any, data: ParamTransformerData) -> float:
        if isinstance(value, FloatEnvValueFactory):
            return value.create_value(data.envs)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise TypeError(
            f"{self.key} must be a float or a FloatEnvValueFactory (e.g. MaxActionScaled(0.5)), "
            f"got {value!r}"
        )


class ParamTransformerActionScaling(ParamTransformerChangeValue):
    """Resolves ``action_scaling="default"``: scale exactly for continuous actions."""

    def change_value(self, value: Any, data: ParamTransformerData) -> bool:
        if isinstance(value, str) and value == "default":
            return data.envs.get_type().is_continuous()
        if isinstance(value, bool):
            return value
        raise ValueError(f"{self.key} must be True, False or 'default', got {value!r}")


class GetParamTransformersProtocol(Protocol):
    """Something that lists the transformers of its parameters.

    Mixins extend the list cooperatively: each returns ``super()``'s transformers plus its own.
    """

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return []
