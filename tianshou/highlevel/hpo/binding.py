"""How hyper-parameter values configure the experiment builder of one algorithm.

A search samples plain values named like the options of the ``*_hl.py`` example scripts
(``lr``, ``critic_lr``, ``batch_size``, ``hidden_sizes``, ``auto_alpha``, ...), so that a tuned
configuration is at once a set of script options and a builder configuration. An
:class:`AlgorithmBinding` turns such values into the algorithm's parameter object, the training
config and the networks of a builder:

* a name with a *rule* (e.g. ``critic_lr`` sets both critics' learning rates; ``auto_alpha``
  with ``alpha_lr`` makes SAC's entropy coefficient learned) is converted by that rule;
* ``hidden_sizes`` sets the default networks of those sizes;
* any other name sets the field of that name of the algorithm parameters (e.g. ``PPOParams``)
  or, failing that, of the training config (``epoch`` is the scripts' name of ``max_epochs``).

:data:`BINDINGS` holds the bindings of SAC, TD3, PPO and DQN.
"""

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.experiment import (
    DQNExperimentBuilder,
    ExperimentBuilder,
    PPOExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
)
from tianshou.highlevel.params.algorithm_params import (
    DQNParams,
    Params,
    PPOParams,
    SACParams,
    TD3Params,
)
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.env_param import MaxActionScaled
from tianshou.highlevel.params.noise import MaxActionScaledGaussian

ParamRule = Callable[[Any, Mapping[str, Any]], dict[str, Any]]
"""Turns one value (given all values of the configuration, for values that depend on others)
into fields of the algorithm parameters."""

HIDDEN_SIZES = "hidden_sizes"
"""The name of the value that sets the widths of the default networks' hidden layers."""

TRAINING_ALIASES = {"epoch": "max_epochs"}
"""Script option names of training config fields that differ from the fields' names."""


def _fields_of(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@dataclass(frozen=True)
class AlgorithmBinding:
    """How values named like script options configure the builder of one algorithm.

    :param name: the algorithm's name (written into saved configurations).
    :param builder_class: the experiment builder of the algorithm.
    :param params_class: the algorithm's parameter dataclass.
    :param params_setter: the builder method that sets the parameters (``"with_ppo_params"``).
    :param training_config_class: the training config the builder takes.
    :param set_hidden_sizes: sets the default networks with the given hidden-layer widths on a
        builder (replacing its actor and critic factories).
    :param param_rules: conversions of values whose names are no parameter field, or whose
        value the parameters hold in another form.
    """

    name: str
    builder_class: type[ExperimentBuilder]
    params_class: type[Params]
    params_setter: str
    training_config_class: type[TrainingConfig]
    set_hidden_sizes: Callable[[Any, tuple[int, ...]], None]
    param_rules: Mapping[str, ParamRule] = field(default_factory=dict)

    def known_names(self) -> set[str]:
        """Every value name this binding accepts."""
        return (
            set(self.param_rules)
            | {HIDDEN_SIZES}
            | _fields_of(self.params_class)
            | _fields_of(self.training_config_class)
            | set(TRAINING_ALIASES)
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
        params_fields = _fields_of(self.params_class)
        updates = {
            name: value
            for name, value in values.items()
            if name in params_fields and name not in self.param_rules
        }
        for name, value in values.items():
            if name in self.param_rules:
                updates.update(self.param_rules[name](value, values))
        return updates

    def training_updates(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of the training config that ``values`` set."""
        params_fields = _fields_of(self.params_class) | set(self.param_rules)
        training_fields = _fields_of(self.training_config_class)
        updates = {}
        for name, value in values.items():
            target = TRAINING_ALIASES.get(name, name)
            if name not in params_fields and target in training_fields:
                updates[target] = value
        return updates

    def configure(
        self,
        builder: ExperimentBuilder,
        values: Mapping[str, Any],
        params: Params | None = None,
        training_config: TrainingConfig | None = None,
    ) -> ExperimentBuilder:
        """Configure ``builder`` with ``values`` and return it.

        :param builder: a builder of :attr:`builder_class`.
        :param values: the hyper-parameters, by (script option) name.
        :param params: the parameters the values change (None: the class defaults); the
            builder's parameters are replaced by them.
        :param training_config: the training config the values change (None: the class
            defaults); set on the builder.
        :raises ValueError: if a name configures nothing; TypeError for a wrong builder.
        """
        if not isinstance(builder, self.builder_class):
            raise TypeError(
                f"the {self.name} binding configures a {self.builder_class.__name__}, got a "
                f"{type(builder).__name__}"
            )
        self.check_names(list(values))
        base_params = params if params is not None else self.params_class()
        base_training = (
            training_config if training_config is not None else self.training_config_class()
        )
        getattr(builder, self.params_setter)(
            dataclasses.replace(base_params, **self.params_updates(values))
        )
        builder.training_config(dataclasses.replace(base_training, **self.training_updates(values)))
        if HIDDEN_SIZES in values:
            self.set_hidden_sizes(builder, tuple(int(w) for w in values[HIDDEN_SIZES]))
        return builder


def _same_value(*param_fields: str) -> ParamRule:
    """A rule setting each of ``param_fields`` to the value (e.g. both critics' rates)."""

    def rule(value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
        return dict.fromkeys(param_fields, value)

    return rule


def _converted(param_field: str, convert: Callable[[Any], Any]) -> ParamRule:
    """A rule setting ``param_field`` to the converted value."""

    def rule(value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
        return {param_field: convert(value)}

    return rule


def _consumed_by_another_rule(_value: Any, _values: Mapping[str, Any]) -> dict[str, Any]:
    """For values another rule reads (``alpha_lr`` is read by ``auto_alpha``)."""
    return {}


def _sac_alpha(auto_alpha: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``auto_alpha`` as in the SAC script: a learned coefficient with rate ``alpha_lr``, else
    the fixed ``alpha`` (if given)."""
    if auto_alpha:
        return {"alpha": AutoAlphaFactoryDefault(lr=values.get("alpha_lr", 3e-4))}
    return {"alpha": values["alpha"]} if "alpha" in values else {}


def _actor_and_critic_sizes(builder: Any, hidden_sizes: tuple[int, ...]) -> None:
    builder.with_actor_factory_default(hidden_sizes)
    builder.with_critic_factory_default(hidden_sizes)


def _actor_and_critics_sizes(builder: Any, hidden_sizes: tuple[int, ...]) -> None:
    builder.with_actor_factory_default(hidden_sizes)
    builder.with_common_critic_factory_default(hidden_sizes)


def _sac_sizes(builder: Any, hidden_sizes: tuple[int, ...]) -> None:
    builder.with_actor_factory_default(
        hidden_sizes, continuous_unbounded=True, continuous_conditioned_sigma=True
    )
    builder.with_common_critic_factory_default(hidden_sizes)


def _q_network_sizes(builder: Any, hidden_sizes: tuple[int, ...]) -> None:
    builder.with_model_factory_default(hidden_sizes=hidden_sizes)


PPO_BINDING = AlgorithmBinding(
    name="PPO",
    builder_class=PPOExperimentBuilder,
    params_class=PPOParams,
    params_setter="with_ppo_params",
    training_config_class=OnPolicyTrainingConfig,
    set_hidden_sizes=_actor_and_critic_sizes,
)
SAC_BINDING = AlgorithmBinding(
    name="SAC",
    builder_class=SACExperimentBuilder,
    params_class=SACParams,
    params_setter="with_sac_params",
    training_config_class=OffPolicyTrainingConfig,
    set_hidden_sizes=_sac_sizes,
    param_rules={
        "critic_lr": _same_value("critic1_lr", "critic2_lr"),
        "auto_alpha": _sac_alpha,
        "alpha_lr": _consumed_by_another_rule,
    },
)
TD3_BINDING = AlgorithmBinding(
    name="TD3",
    builder_class=TD3ExperimentBuilder,
    params_class=TD3Params,
    params_setter="with_td3_params",
    training_config_class=OffPolicyTrainingConfig,
    set_hidden_sizes=_actor_and_critics_sizes,
    param_rules={
        "critic_lr": _same_value("critic1_lr", "critic2_lr"),
        "exploration_noise": _converted("exploration_noise", MaxActionScaledGaussian),
        "policy_noise": _converted("policy_noise", MaxActionScaled),
        "noise_clip": _converted("noise_clip", MaxActionScaled),
    },
)
DQN_BINDING = AlgorithmBinding(
    name="DQN",
    builder_class=DQNExperimentBuilder,
    params_class=DQNParams,
    params_setter="with_dqn_params",
    training_config_class=OffPolicyTrainingConfig,
    set_hidden_sizes=_q_network_sizes,
    param_rules={
        "n_step": _same_value("n_step_return_horizon"),
        "eps_train": _same_value("eps_training"),
        "eps_test": _same_value("eps_inference"),
    },
)

BINDINGS: dict[str, AlgorithmBinding] = {
    b.name: b for b in (SAC_BINDING, TD3_BINDING, PPO_BINDING, DQN_BINDING)
}
"""The bindings by algorithm name."""


def binding_of(algorithm: str) -> AlgorithmBinding:
    """The binding of the algorithm named ``algorithm`` (any case).

    :raises ValueError: naming the known algorithms.
    """
    binding = BINDINGS.get(algorithm.upper())
    if binding is None:
        raise ValueError(f"no binding for {algorithm!r}; known: {sorted(BINDINGS)}")
    return binding
