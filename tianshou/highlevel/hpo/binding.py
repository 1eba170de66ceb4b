"""How hyper-parameter values configure the experiment builder of one algorithm.

A search samples plain values named like the options of the ``*_hl.py`` example scripts
(``lr``, ``critic_lr``, ``batch_size``, ``hidden_sizes``, ``auto_alpha``, ...), so that a tuned
configuration is at once a set of script options and a builder configuration. An
:class:`AlgorithmBinding` turns such values into the algorithm's parameter object, the training
config and the networks of a builder, knowing nothing but the builder class: its
``params_class``, ``training_config_class`` and network settings say everything.

* a name of a field of the algorithm parameters (e.g. ``PPOParams``) sets that field, and
  failing that one of the training config; :data:`SCRIPT_ALIASES` maps the scripts' names of
  fields named otherwise (``epoch`` for ``max_epochs``, ``n_step`` for
  ``n_step_return_horizon``, ...);
* a number for a field that also takes a factory of values scaled by the env's action range is
  a fraction of the max action (``exploration_noise`` becomes a
  :class:`~tianshou.highlevel.params.noise.MaxActionScaledGaussian`, TD3's ``policy_noise`` a
  :class:`~tianshou.highlevel.params.env_param.MaxActionScaled`);
* a few names that are no field are *rules*, offered where the parameters have what they set:
  ``critic_lr`` sets both critics' learning rates of twin-critic algorithms, and ``auto_alpha``
  (with ``alpha_lr``) makes the entropy coefficient learned where the parameters have one;
* ``hidden_sizes``, where the parameters have no such field, sizes the builder's default
  networks (its ``with_default_networks``, which each of its network settings extends).

:data:`BINDINGS` holds a binding for every algorithm the high-level API builds.
"""

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tianshou.highlevel import experiment_builders
from tianshou.highlevel.config import TrainingConfig
from tianshou.highlevel.experiment_builders import (
    AlgorithmExperimentBuilder,
    DQNExperimentBuilder,
    PPOExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
)
from tianshou.highlevel.params.algorithm_params import Params, ParamsMixinAlpha
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.env_param import FloatEnvValueFactory, MaxActionScaled
from tianshou.highlevel.params.noise import MaxActionScaledGaussian, NoiseFactory

ParamRule = Callable[[Any, Mapping[str, Any]], dict[str, Any]]
"""Turns one value (given all values of the configuration, for values that depend on others)
into fields of the algorithm parameters."""

TBuilder = TypeVar("TBuilder", bound=AlgorithmExperimentBuilder)

HIDDEN_SIZES = "hidden_sizes"
"""The name of the value that sets the widths of the default networks' hidden layers."""

SCRIPT_ALIASES = {
    "epoch": "max_epochs",
    "n_step": "n_step_return_horizon",
    "eps_train": "eps_training",
    "eps_test": "eps_inference",
}
"""Script option names of parameter or training config fields that differ from the fields'
names."""

_MAX_ACTION_FRACTIONS: dict[type, Callable[[float], object]] = {
    NoiseFactory: MaxActionScaledGaussian,
    FloatEnvValueFactory: MaxActionScaled,
}
"""For a field that takes a factory of one of these types, the factory a number for it is a
fraction of the max action in."""


def _fields_of(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _same_value(*param_fields: str) -> ParamRule:
    """A rule setting each of ``param_fields`` to the value (e.g. both critics' rates)."""

    def rule(value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
        return dict.fromkeys(param_fields, value)

    return rule


def _max_action_fraction(param_field: str, factory: Callable[[float], object]) -> ParamRule:
    """A rule setting ``param_field`` to ``factory(value)`` for a number (a fraction of the max
    action) and to the value itself otherwise (e.g. None or a factory)."""

    def rule(value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        return {param_field: factory(value) if is_number else value}

    return rule


def _consumed_by_another_rule(_value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
    """For values another rule reads (``alpha_lr`` is read by ``auto_alpha``)."""
    return {}


def _learned_or_fixed_alpha(auto_alpha: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``auto_alpha`` as in the SAC script: a learned coefficient with rate ``alpha_lr``, else
    the fixed ``alpha`` (if given)."""
    if auto_alpha:
        return {"alpha": AutoAlphaFactoryDefault(lr=values.get("alpha_lr", 3e-4))}
    return {"alpha": values["alpha"]} if "alpha" in values else {}


def _rules_of(params_class: type[Params]) -> dict[str, ParamRule]:
    """The rules that fit ``params_class``, derived from its fields and their types."""
    param_fields = _fields_of(params_class)
    rules: dict[str, ParamRule] = {}
    for name, annotation in typing.get_type_hints(params_class).items():
        for factory_type, factory in _MAX_ACTION_FRACTIONS.items():
            if name in param_fields and factory_type in typing.get_args(annotation):
                rules[name] = _max_action_fraction(name, factory)
    if {"critic1_lr", "critic2_lr"} <= param_fields:
        rules["critic_lr"] = _same_value("critic1_lr", "critic2_lr")
    if issubclass(params_class, ParamsMixinAlpha):
        rules["auto_alpha"] = _learned_or_fixed_alpha
        rules["alpha_lr"] = _consumed_by_another_rule
    for alias, target in SCRIPT_ALIASES.items():
        if target in param_fields:
            rules[alias] = _same_value(target)
    return rules


@dataclass(frozen=True)
class AlgorithmBinding:
    """How values named like script options configure the builder of one algorithm.

    Everything is derived from the builder class: the parameter dataclass
    (``builder_class.params_class``), the training config
    (``builder_class.training_config_class``), the rules that fit the parameters and the
    builder's default networks.

    :param builder_class: the experiment builder of the algorithm.
    """

    builder_class: type[AlgorithmExperimentBuilder]

    @property
    def name(self) -> str:
        """The algorithm's name (written into saved configurations): its params class's name
        without ``Params`` (``"PPO"``, ``"DiscreteSAC"``)."""
        return self.params_class.__name__.removesuffix("Params")

    @property
    def params_class(self) -> type[Params]:
        """The algorithm's parameter dataclass."""
        return self.builder_class.params_class

    @property
    def training_config_class(self) -> type[TrainingConfig]:
        """The training config the builder takes."""
        return self.builder_class.training_config_class

    @property
    def param_rules(self) -> dict[str, ParamRule]:
        """The conversions of values whose names are no parameter field, or whose value the
        parameters hold in another form."""
        return _rules_of(self.params_class)

    def _sizes_networks(self) -> bool:
        """Whether ``hidden_sizes`` sizes the default networks (not a parameter field)."""
        return HIDDEN_SIZES not in _fields_of(self.params_class)

    def known_names(self) -> set[str]:
        """Every value name this binding accepts."""
        training_fields = _fields_of(self.training_config_class)
        return (
            set(self.param_rules)
            | {HIDDEN_SIZES}
            | _fields_of(self.params_class)
            | training_fields
            | {alias for alias, target in SCRIPT_ALIASES.items() if target in training_fields}
        )

    def check_names(self, names: Sequence[str]) -> None:
        """Refuse names that configure nothing (e.g. a typo in a search space).

        :raises ValueError: naming the unknown names.
        """
        unknown = sorted(set(names) - self.known_names())
        if unknown:
            raise ValueError(
                f"{self.name} cannot use the values {unknown}: they are neither fields of "
                f"{self.params_class.__name__} or {self.training_config_class.__name__} nor "
                f"one of {sorted(set(self.param_rules) | {HIDDEN_SIZES})}"
            )

    def params_updates(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of the algorithm parameters that ``values`` set; rules are applied after
        plain fields, so that e.g. ``auto_alpha=True`` wins over a plain ``alpha``."""
        rules = self.param_rules
        params_fields = _fields_of(self.params_class)
        updates = {
            name: value
            for name, value in values.items()
            if name in params_fields and name not in rules
        }
        for name, value in values.items():
            if name in rules:
                updates.update(rules[name](value, values))
        return updates

    def training_updates(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of the training config that ``values`` set."""
        params_names = _fields_of(self.params_class) | set(self.param_rules)
        training_fields = _fields_of(self.training_config_class)
        updates = {}
        for name, value in values.items():
            target = SCRIPT_ALIASES.get(name, name)
            if name not in params_names and target in training_fields:
                updates[target] = value
        return updates

    def configure(
        self,
        builder: TBuilder,
        values: Mapping[str, Any],
        params: Params | None = None,
        training_config: TrainingConfig | None = None,
    ) -> TBuilder:
        """Configure ``builder`` with ``values`` and return it.

        :param builder: a builder of :attr:`builder_class`.
        :param values: the hyper-parameters, by (script option) name.
        :param params: the parameters the values change (None: the class defaults); the
            builder's parameters are replaced by them.
        :param training_config: the training config the values change (None: the class
            defaults); set on the builder.
        :raises ValueError: if a name configures nothing; TypeError for a wrong builder or
            parameters of another algorithm.
        """
        if not isinstance(builder, self.builder_class):
            raise TypeError(
                f"the {self.name} binding configures a {self.builder_class.__name__}, got a "
                f"{type(builder).__name__}"
            )
        self.check_names(list(values))
        base_params = params if params is not None else self.params_class()
        if not isinstance(base_params, self.params_class):
            raise TypeError(
                f"the {self.name} binding changes {self.params_class.__name__}, got "
                f"{type(base_params).__name__}"
            )
        base_training = (
            training_config if training_config is not None else self.training_config_class()
        )
        builder.with_params(dataclasses.replace(base_params, **self.params_updates(values)))
        builder.training_config(dataclasses.replace(base_training, **self.training_updates(values)))
        if HIDDEN_SIZES in values and self._sizes_networks():
            builder.with_default_networks(tuple(int(w) for w in values[HIDDEN_SIZES]))
        return builder


def _algorithm_builder_classes() -> list[type[AlgorithmExperimentBuilder]]:
    """Every per-algorithm builder the high-level API publishes."""
    members = (getattr(experiment_builders, name) for name in experiment_builders.__all__)
    return [
        member
        for member in members
        if isinstance(member, type) and issubclass(member, AlgorithmExperimentBuilder)
    ]


BINDINGS: dict[str, AlgorithmBinding] = {
    binding.name.upper(): binding for binding in map(AlgorithmBinding, _algorithm_builder_classes())
}
"""The bindings by algorithm name in upper case (``"PPO"``, ``"DISCRETESAC"``)."""

PPO_BINDING = AlgorithmBinding(PPOExperimentBuilder)
SAC_BINDING = AlgorithmBinding(SACExperimentBuilder)
TD3_BINDING = AlgorithmBinding(TD3ExperimentBuilder)
DQN_BINDING = AlgorithmBinding(DQNExperimentBuilder)


def binding_of(algorithm: str) -> AlgorithmBinding:
    """The binding of the algorithm named ``algorithm`` (any case).

    :raises ValueError: naming the known algorithms.
    """
    binding = BINDINGS.get(algorithm.upper())
    if binding is None:
        raise ValueError(f"no binding for {algorithm!r}; known: {sorted(BINDINGS)}")
    return binding
