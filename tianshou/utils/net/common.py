"""Network building blocks shared by actors and critics.

:class:`MLP` is the body of nearly every network here: a ``nn.Sequential`` of linear layers
with optional normalisation and activation. :class:`Net` wraps it with the
``(obs, state=None, info=None) -> (logits, state)`` interface policies call, and adds the
dueling and distributional heads of value-based methods. :class:`Recurrent` is an LSTM with the
same interface, whose state is a dict of batch-first ``hidden`` and ``cell`` tensors.
:class:`BranchingNet` is the dueling net of BDQN, :class:`DataParallelNet` and
:class:`ActionReprNetDataParallelWrapper` spread a net's batch over all GPUs, and
:func:`get_dict_state_decorator` lets a net written for flat observations read dict observations.

Inputs may be numpy arrays or tensors; each network converts them once with
``torch.as_tensor`` onto the device of its parameters, as float32. The device is cached and
refreshed whenever the module is moved (``.to``, ``.cuda``, ...), so the forward pass costs one
``nn.Sequential`` call plus that conversion.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from gymnasium import spaces

    from tianshou.utils.space_info import ActionSpaceInfo

TActionShape: TypeAlias = int | Sequence[int]
ModuleType: TypeAlias = type[nn.Module]
ArgsType: TypeAlias = tuple[Any, ...] | dict[str, Any] | Sequence[tuple[Any, ...]] | Sequence[dict]
TRecurrentState = TypeVar("TRecurrentState", bound=Any)
TLinearLayer: TypeAlias = Callable[[int, int], nn.Module]


def _build_layer(layer_type: ModuleType, width: int | None, args: Any) -> nn.Module:
    """Instantiate ``layer_type`` with the layer width first (if given) and ``args``.

    ``args`` may be a tuple (extra positional arguments), a dict (keyword arguments) or None.
    """
    leading = () if width is None else (width,)
    if isinstance(args, tuple):
        return layer_type(*leading, *args)
    if isinstance(args, dict):
        return layer_type(*leading, **args)
    return layer_type(*leading)


def miniblock(
    input_size: int,
    output_size: int = 0,
    norm_layer: ModuleType | None = None,
    norm_args: tuple[Any, ...] | dict[str, Any] | None = None,
    activation: ModuleType | None = None,
    act_args: tuple[Any, ...] | dict[str, Any] | None = None,
    linear_layer: TLinearLayer = nn.Linear,
) -> list[nn.Module]:
    """The layers of one MLP block: linear, then optional normalisation, then optional activation.

    :param norm_layer: normalisation class, built as ``norm_layer(output_size, *norm_args)``
        (tuple) or ``norm_layer(output_size, **norm_args)`` (dict).
    :param activation: activation class, built as ``activation(*act_args)`` or
        ``activation(**act_args)``.
    :param linear_layer: factory ``(in_features, out_features) -> module`` for the affine part,
        e.g. a noisy linear layer.
    """
    layers: list[nn.Module] = [linear_layer(input_size, output_size)]
    if norm_layer is not None:
        layers.append(_build_layer(norm_layer, output_size, norm_args))
    if activation is not None:
        layers.append(_build_layer(activation, None, act_args))
    return layers


class ModuleWithVectorOutput(nn.Module):
    """A module whose output is a vector per sample, of width :attr:`output_dim`.

    Heads built on top of such a module (actors, critics) read the width to size their first layer.
    """

    def __init__(self, output_dim: int) -> None:
        super().__init__()
        self._output_dim = int(output_dim)

    @property
    def output_dim(self) -> int:
        """The width of the per-sample output vector."""
        return self._output_dim

    def get_output_dim(self) -> int:
        """The width of the per-sample output vector (same as :attr:`output_dim`)."""
        return self._output_dim

    @staticmethod
    def from_module(module: nn.Module, output_dim: int) -> "ModuleWithVectorOutput":
        """Declare the output width of an arbitrary ``module`` by wrapping it."""
        return ModuleWithVectorOutputAdapter(module, output_dim)


class ModuleWithVectorOutputAdapter(ModuleWithVectorOutput):
    """Wraps a plain module and declares its output width; calls are forwarded unchanged."""

    def __init__(self, module: nn.Module, output_dim: int) -> None:
        super().__init__(output_dim)
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)


class InputDeviceMixin(nn.Module):
    """Caches the device inputs are converted to, refreshed whenever the module is moved.

    Looking the device up from the parameters costs several microseconds per call; networks
    in the hot path of an update read the cached :attr:`_input_device` instead. Subclasses call
    :meth:`_refresh_input_device` at the end of ``__init__``. A module without parameters
    (e.g. an identity MLP) has no device of its own: tensors stay where they are and numpy
    arrays land on torch's default device.
    """

    _input_device: torch.device | None

    def _refresh_input_device(self) -> None:
        first = next(iter(self.parameters()), None)
        self._input_device = None if first is None else first.device

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> Any:
        result = super()._apply(fn, recurse)
        self._refresh_input_device()
        return result

    def _replicate_for_data_parallel(self) -> Any:
        """A replica for ``nn.DataParallel`` that leaves input tensors on the device they come on.

        DataParallel copies each module to every GPU without calling ``_apply``, so a copied
        cache would still name the first GPU; the replicas instead rely on DataParallel having
        scattered the inputs onto their own device already.
        """
        replica = super()._replicate_for_data_parallel()
        replica._input_device = None
        return replica


def _per_layer(value: Any, args: Any, num_layers: int, name: str) -> list[tuple[Any, Any]]:
    """Expand a layer class (or a list of them, one per hidden layer) and its args per layer."""
    if isinstance(value, list):
        if len(value) != num_layers:
            raise ValueError(
                f"{name} lists {len(value)} entries but there are {num_layers} hidden layers"
            )
        if isinstance(args, list):
            if len(args) != num_layers:
                raise ValueError(
                    f"{name} arguments list {len(args)} entries but there are "
                    f"{num_layers} hidden layers"
                )
            return list(zip(value, args, strict=True))
        return [(v, args) for v in value]
    return [(value, args)] * num_layers


class MLP(InputDeviceMixin, ModuleWithVectorOutput):
    """A multi-layer perceptron: hidden blocks (linear, norm, activation) and a linear output.

    >>> mlp = MLP(input_dim=4, output_dim=2, hidden_sizes=[64, 64])
    >>> mlp(np.zeros((3, 4))).shape
    torch.Size([3, 2])

    :param input_dim: width of the (flattened) input.
    :param output_dim: width of a final linear layer without activation; 0 leaves it out, so
        the output is the last hidden layer (or the input, with no hidden layers either).
    :param hidden_sizes: widths of the hidden layers.
    :param norm_layer: normalisation class after each hidden linear layer, or a list with one
        class per hidden layer; None for no normalisation.
    :param norm_args: arguments of the normalisation layers (tuple, dict, or a list per layer).
    :param activation: activation class after each hidden layer, a list per hidden layer, or None.
    :param act_args: arguments of the activations (tuple, dict, or a list per layer).
    :param linear_layer: factory ``(in_features, out_features) -> module`` for affine layers.
    :param flatten_input: flatten all dims after the batch dim before the first layer (set
        False to apply the MLP to the last dim of a tensor with several leading dims).
    """

    def __init__(
        self,
        *,
        input_dim: int,
        output_dim: int = 0,
        hidden_sizes: Sequence[int] = (),
        norm_layer: ModuleType | list[ModuleType] | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | list[ModuleType] | None = nn.ReLU,
        act_args: ArgsType | None = None,
        linear_layer: TLinearLayer = nn.Linear,
        flatten_input: bool = True,
    ) -> None:
        widths = [int(input_dim), *(int(size) for size in hidden_sizes)]
        if any(width <= 0 for width in widths) or output_dim < 0:
            raise ValueError(
                f"MLP needs a positive input_dim and hidden_sizes and output_dim >= 0; got "
                f"input_dim={input_dim}, hidden_sizes={list(hidden_sizes)}, output_dim={output_dim}"
            )
        num_hidden = len(widths) - 1
        norms = _per_layer(norm_layer, norm_args, num_hidden, "norm_layer")
        activations = _per_layer(activation, act_args, num_hidden, "activation")
        layers: list[nn.Module] = []
        for in_dim, out_dim, (norm, n_args), (act, a_args) in zip(
            widths[:-1], widths[1:], norms, activations, strict=True
        ):
            layers += miniblock(in_dim, out_dim, norm, n_args, act, a_args, linear_layer)
        if output_dim > 0:
            layers.append(linear_layer(widths[-1], output_dim))
        super().__init__(output_dim or widths[-1])
        self.input_dim = widths[0]
        self.model = nn.Sequential(*layers)
        self.flatten_input = flatten_input
        self._refresh_input_device()

    def forward(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        obs = torch.as_tensor(obs, device=self._input_device, dtype=torch.float32)
        try:
            if self.flatten_input:
                obs = obs.flatten(1)
            return self.model(obs)
        except (RuntimeError, IndexError):
            self._check_input_shape(tuple(obs.shape))
            raise

    def _check_input_shape(self, shape: tuple[int, ...]) -> None:
        """Raise a ValueError naming both widths if ``shape`` cannot feed the first layer."""
        if not len(self.model):
            return
        if self.flatten_input:
            ok = len(shape) >= 2 and int(np.prod(shape[1:])) == self.input_dim
            expected = f"(batch, ...) with {self.input_dim} entries after the batch dim"
        else:
            ok = len(shape) >= 1 and shape[-1] == self.input_dim
            expected = f"(..., {self.input_dim})"
        if not ok:
            raise ValueError(
                f"MLP(input_dim={self.input_dim}) expects inputs of shape {expected}, "
                f"got shape {shape}"
            )


class ActionReprNet(Generic[TRecurrentState], nn.Module, ABC):
    """A network mapping observations to an action representation (logits, Q-values, ...).

    ``forward(obs, state=None, info=None)`` returns ``(output, state)``, where ``state`` is the
    recurrent state to feed into the next call (None for feed-forward networks).
    """

    @abstractmethod
    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: TRecurrentState | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[Any, TRecurrentState | None]:
        """Map a batch of observations (and the recurrent state) to the output and next state."""


class ActionReprNetWithVectorOutput(ActionReprNet[TRecurrentState], ModuleWithVectorOutput):
    """An :class:`ActionReprNet` whose output is a vector per sample of width ``output_dim``."""


class Actor(ActionReprNetWithVectorOutput[TRecurrentState], ABC):
    """An actor network: a preprocessing body followed by an action head."""

    @abstractmethod
    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """The body that turns observations into features for the action head."""


class AbstractContinuousActorProbabilistic(Actor[TRecurrentState], ABC):
    """An actor for continuous actions whose output parameterises a distribution."""


class AbstractDiscreteActor(Actor[TRecurrentState], ABC):
    """An actor for discrete actions whose output is per-action logits or probabilities."""


def _shape_tuple(shape: TActionShape) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)


class Net(ActionReprNetWithVectorOutput[Any]):
    """The standard feed-forward network: an :class:`MLP` on flattened observations.

    >>> net = Net(state_shape=(4,), action_shape=2, hidden_sizes=[64, 64])
    >>> logits, state = net(np.zeros((3, 4)))
    >>> logits.shape, state
    (torch.Size([3, 2]), None)

    :param state_shape: shape of one observation (or of one observation-action pair's
        observation part when ``concat``).
    :param action_shape: shape (or number) of actions; the output width is their product times
        ``num_atoms``. 0 makes the network a body whose output is the last hidden layer.
    :param hidden_sizes: widths of the hidden layers.
    :param norm_layer: see :class:`MLP`.
    :param norm_args: see :class:`MLP`.
    :param activation: see :class:`MLP`.
    :param act_args: see :class:`MLP`.
    :param softmax: apply a softmax over the last output dim (the atoms of a distributional net,
        else the actions).
    :param concat: the input is an observation concatenated with an action (a Q(s, a) body):
        the input width grows by the action width and the output is the last hidden layer.
    :param num_atoms: atoms per action of a distributional (C51-style) net; above 1 the output
        has shape ``(batch, num_actions, num_atoms)``.
    :param dueling_param: ``(q_kwargs, v_kwargs)``, :class:`MLP` keyword arguments (e.g.
        ``hidden_sizes``) of the advantage and value streams of a dueling head (Wang et al.
        2016); the output is ``Q = V + A - mean(A)``.
    :param linear_layer: see :class:`MLP`.
    """

    def __init__(
        self,
        *,
        state_shape: TActionShape,
        action_shape: TActionShape = 0,
        hidden_sizes: Sequence[int] = (),
        norm_layer: ModuleType | list[ModuleType] | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | list[ModuleType] | None = nn.ReLU,
        act_args: ArgsType | None = None,
        softmax: bool = False,
        concat: bool = False,
        num_atoms: int = 1,
        dueling_param: tuple[dict[str, Any], dict[str, Any]] | None = None,
        linear_layer: TLinearLayer = nn.Linear,
    ) -> None:
        if num_atoms < 1:
            raise ValueError(f"num_atoms must be >= 1, got {num_atoms}")
        self.state_shape = _shape_tuple(state_shape)
        self.action_shape = _shape_tuple(action_shape)
        input_dim = int(np.prod(self.state_shape))
        action_dim = int(np.prod(self.action_shape)) * num_atoms
        if concat:
            input_dim += action_dim
        use_dueling = dueling_param is not None
        model = MLP(
            input_dim=input_dim,
            output_dim=0 if use_dueling or concat else action_dim,
            hidden_sizes=hidden_sizes,
            norm_layer=norm_layer,
            norm_args=norm_args,
            activation=activation,
            act_args=act_args,
            linear_layer=linear_layer,
        )
        output_dim = model.output_dim
        q_net = v_net = None
        if dueling_param is not None:
            q_kwargs, v_kwargs = dueling_param
            q_out, v_out = (0, 0) if concat else (action_dim, num_atoms)
            q_net = MLP(**{**q_kwargs, "input_dim": model.output_dim, "output_dim": q_out})
            v_net = MLP(**{**v_kwargs, "input_dim": model.output_dim, "output_dim": v_out})
            output_dim = q_net.output_dim
        super().__init__(output_dim)
        self.model = model
        self.use_dueling = use_dueling
        if q_net is not None and v_net is not None:
            self.Q, self.V = q_net, v_net
        self.softmax = softmax
        self.num_atoms = num_atoms
        self.concat = concat

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Map observations of shape ``(batch, *state_shape)`` to ``(logits, state)``."""
        try:
            logits = self.model(obs)
        except ValueError as error:
            raise self._obs_shape_error(obs) from error
        if self.use_dueling:
            q, v = self.Q(logits), self.V(logits)
            if self.num_atoms > 1:
                q = q.view(q.shape[0], -1, self.num_atoms)
                v = v.view(v.shape[0], -1, self.num_atoms)
            logits = q - q.mean(dim=1, keepdim=True) + v
        elif self.num_atoms > 1:
            logits = logits.view(logits.shape[0], -1, self.num_atoms)
        if self.softmax:
            logits = torch.softmax(logits, dim=-1)
        return logits, state

    def _obs_shape_error(self, obs: Any) -> ValueError:
        expected = f"state_shape {self.state_shape}"
        if self.concat:
            expected += f" concatenated with action_shape {self.action_shape} (concat=True)"
        return ValueError(
            f"Net got obs of shape {tuple(np.shape(obs))}, but the dims after the batch dim must "
            f"match {expected}, i.e. {self.model.input_dim} entries in total"
        )


class Recurrent(InputDeviceMixin, ActionReprNetWithVectorOutput[dict[str, torch.Tensor]]):
    """An LSTM network: linear embedding, LSTM layers, linear output from the last time step.

    Observations are ``(batch, obs_dim)`` when acting (one step) or ``(batch, seq_len, obs_dim)``
    when training on stacked sequences. The state is ``{"hidden": h, "cell": c}`` with batch-first
    tensors of shape ``(batch, layer_num, hidden_layer_size)``, so a replay buffer can store it
    per transition; the returned state is detached.

    :param layer_num: number of stacked LSTM layers.
    :param state_shape: shape of one observation (its product is the embedding's input width).
    :param action_shape: shape (or number) of actions; the output width is their product.
    :param device: optional device to move the network to.
    :param hidden_layer_size: width of the embedding and of the LSTM state.
    """

    def __init__(
        self,
        *,
        layer_num: int,
        state_shape: TActionShape,
        action_shape: TActionShape,
        device: str | int | torch.device | None = None,
        hidden_layer_size: int = 128,
    ) -> None:
        output_dim = int(np.prod(_shape_tuple(action_shape)))
        super().__init__(output_dim)
        self.obs_dim = int(np.prod(_shape_tuple(state_shape)))
        self.nn = nn.LSTM(
            input_size=hidden_layer_size,
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        self.fc1 = nn.Linear(self.obs_dim, hidden_layer_size)
        self.fc2 = nn.Linear(hidden_layer_size, output_dim)
        self._refresh_input_device()
        if device is not None:
            self.to(device)

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No separate body: an identity declaring this network's output width."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: dict[str, torch.Tensor] | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Map ``obs`` and the previous state to ``(output (batch, output_dim), next state)``."""
        obs = torch.as_tensor(obs, device=self._input_device, dtype=torch.float32)
        if obs.dim() not in (2, 3) or obs.shape[-1] != self.obs_dim:
            raise ValueError(
                f"Recurrent expects obs of shape (batch, {self.obs_dim}) or "
                f"(batch, seq_len, {self.obs_dim}), got {tuple(obs.shape)}"
            )
        if obs.dim() == 2:
            obs = obs.unsqueeze(-2)
        embedded = self.fc1(obs)
        self.nn.flatten_parameters()
        if state is None:
            out, (hidden, cell) = self.nn(embedded)
        else:
            initial = (
                state["hidden"].transpose(0, 1).contiguous(),
                state["cell"].transpose(0, 1).contiguous(),
            )
            out, (hidden, cell) = self.nn(embedded, initial)
        logits = self.fc2(out[:, -1])
        next_state = {
            "hidden": hidden.transpose(0, 1).detach(),
            "cell": cell.transpose(0, 1).detach(),
        }
        return logits, next_state


class EnsembleLinear(nn.Module):
    """``ensemble_size`` independent linear layers applied to the same input in one matmul.

    An input of shape ``(batch, in_feature)`` gives ``(ensemble_size, batch, out_feature)``;
    an input already shaped ``(ensemble_size, batch, in_feature)`` maps member-wise. REDQ passes
    ``functools.partial(EnsembleLinear, ensemble_size)`` as ``linear_layer`` to build a critic
    ensemble as one network. Weights and biases start uniform in ``±1/sqrt(in_feature)``.

    :param ensemble_size: number of members.
    :param in_feature: input width.
    :param out_feature: output width.
    :param bias: add a learned bias per member.
    """

    bias: nn.Parameter | None

    def __init__(
        self, ensemble_size: int, in_feature: int, out_feature: int, bias: bool = True
    ) -> None:
        super().__init__()
        bound = float(np.sqrt(1.0 / in_feature))
        weight = torch.empty(ensemble_size, in_feature, out_feature).uniform_(-bound, bound)
        self.weight = nn.Parameter(weight)
        if bias:
            self.bias = nn.Parameter(
                torch.empty(ensemble_size, 1, out_feature).uniform_(-bound, bound)
            )
        else:
            self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.matmul(x, self.weight)
        return x if self.bias is None else x + self.bias


class ActorCritic(nn.Module):
    """Holds an actor and a critic so one optimizer can update both.

    ``parameters()`` yields every parameter once, also when the two share a preprocessing net.

    :param actor: the actor network.
    :param critic: the critic network.
    """

    def __init__(self, actor: nn.Module, critic: nn.Module) -> None:
        super().__init__()
        self.actor = actor
        self.critic = critic


def _data_parallel(net: nn.Module, wrapper_name: str) -> nn.DataParallel:
    """Move ``net`` to the first GPU and wrap it in ``nn.DataParallel``, or explain why not."""
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"{wrapper_name} splits batches across CUDA GPUs, but torch sees no CUDA device; "
            "on this machine use the wrapped network directly instead"
        )
    return nn.DataParallel(net.to(torch.device("cuda", 0)))


def _as_cuda_float(obs: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``obs`` as a float32 tensor on the first GPU, where ``nn.DataParallel`` scatters from."""
    return torch.as_tensor(obs, dtype=torch.float32, device=torch.device("cuda", 0))


class DataParallelNet(nn.Module):
    """Runs a network on all visible GPUs at once, each on a slice of the batch.

    ``forward(obs, *args, **kwargs)`` turns ``obs`` into a float tensor on the first GPU and calls
    the wrapped network through ``nn.DataParallel``, which splits the batch dim over the GPUs and
    concatenates the outputs. Needs CUDA: without it construction raises a RuntimeError.

    :param net: the network to parallelise; it is moved to the first GPU (``cuda:0``).
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = _data_parallel(net, type(self).__name__)

    def forward(self, obs: np.ndarray | torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return self.net(_as_cuda_float(obs), *args, **kwargs)


class ActionReprNetDataParallelWrapper(ActionReprNet[Any]):
    """:class:`DataParallelNet` for an :class:`ActionReprNet`, keeping its forward signature.

    The recurrent ``state`` (tensors or dicts of tensors) is split over the GPUs along its batch
    dim like the observations. Needs CUDA: without it construction raises a RuntimeError.

    :param net: the network to parallelise; it is moved to the first GPU (``cuda:0``).
    """

    def __init__(self, net: ActionReprNet) -> None:
        super().__init__()
        self.net = _data_parallel(net, type(self).__name__)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        return self.net(_as_cuda_float(obs), state=state, info=info)


class BranchingNet(ActionReprNet[Any]):
    """The branching dueling Q-network of BDQN (Tavakoli et al. 2018, "Action Branching
    Architectures for Deep Reinforcement Learning").

    An action has ``num_branches`` sub-actions (e.g. the dimensions of a discretised continuous
    action), each chosen from ``action_per_branch`` values. A shared body feeds one state-value
    stream and one advantage stream per branch, so the network grows linearly, not
    exponentially, with the number of sub-actions. Per branch ``Q = V + A - mean(A)``: the mean
    over a branch's values of Q is V, which makes V and A identifiable.

    >>> net = BranchingNet(state_shape=4, num_branches=3, action_per_branch=5,
    ...                    common_hidden_sizes=[32], value_hidden_sizes=[16],
    ...                    action_hidden_sizes=[16])
    >>> q, state = net(np.zeros((2, 4)))
    >>> q.shape, state
    (torch.Size([2, 3, 5]), None)

    :param state_shape: shape of one observation; its product is the input width.
    :param num_branches: number of sub-actions (action dimensions); at least 1.
    :param action_per_branch: number of values each sub-action can take; at least 1.
    :param common_hidden_sizes: hidden widths of the shared body; empty feeds the flattened
        observation to the streams directly.
    :param value_hidden_sizes: hidden widths of the state-value stream (output width 1).
    :param action_hidden_sizes: hidden widths of each branch's advantage stream (output width
        ``action_per_branch``).
    :param norm_layer: see :class:`MLP`; used in every stream.
    :param norm_args: see :class:`MLP`.
    :param activation: see :class:`MLP`; used in every stream.
    :param act_args: see :class:`MLP`.
    """

    def __init__(
        self,
        *,
        state_shape: int | Sequence[int],
        num_branches: int = 0,
        action_per_branch: int = 2,
        common_hidden_sizes: Sequence[int] = (),
        value_hidden_sizes: Sequence[int] = (),
        action_hidden_sizes: Sequence[int] = (),
        norm_layer: ModuleType | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | None = nn.ReLU,
        act_args: ArgsType | None = None,
    ) -> None:
        if num_branches < 1 or action_per_branch < 1:
            raise ValueError(
                "BranchingNet needs num_branches >= 1 and action_per_branch >= 1; got "
                f"num_branches={num_branches}, action_per_branch={action_per_branch}"
            )
        super().__init__()
        layer_kwargs: dict[str, Any] = {
            "norm_layer": norm_layer,
            "norm_args": norm_args,
            "activation": activation,
            "act_args": act_args,
        }
        self.num_branches = num_branches
        self.action_per_branch = action_per_branch
        self.common = MLP(
            input_dim=int(np.prod(_shape_tuple(state_shape))),
            hidden_sizes=common_hidden_sizes,
            **layer_kwargs,
        )
        feature_dim = self.common.output_dim
        self.value = MLP(
            input_dim=feature_dim, output_dim=1, hidden_sizes=value_hidden_sizes, **layer_kwargs
        )
        self.branches = nn.ModuleList(
            MLP(
                input_dim=feature_dim,
                output_dim=action_per_branch,
                hidden_sizes=action_hidden_sizes,
                **layer_kwargs,
            )
            for _ in range(num_branches)
        )

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Map observations to Q-values of shape ``(batch, num_branches, action_per_branch)``."""
        features = self.common(obs)
        value_B11 = self.value(features).unsqueeze(1)
        adv_BNA = torch.stack([branch(features) for branch in self.branches], dim=1)
        q_BNA = value_B11 + adv_BNA - adv_BNA.mean(dim=-1, keepdim=True)
        return q_BNA, state


TModule = TypeVar("TModule", bound=nn.Module)


class DictObsDecorator(Protocol):
    """Turns a module class taking flat observations into one taking dict observations."""

    def __call__(self, module_class: type[TModule]) -> type[TModule]: ...


def get_dict_state_decorator(
    state_shape: dict[str, int | Sequence[int]], keys: Sequence[str]
) -> tuple[DictObsDecorator, int]:
    """Make networks written for flat observations accept dict observations.

    Environments with dict observation spaces yield a ``Batch`` (or dict) of arrays per step.
    The returned decorator subclasses a module class so that its ``forward`` first flattens the
    entries ``keys`` of such an observation to ``(batch, -1)`` and concatenates them in that
    order; plain arrays and tensors pass through unchanged. Build the network with the returned
    flat width:

    >>> decorator, flat_dim = get_dict_state_decorator({"pos": 2, "img": (2, 3)}, ["pos", "img"])
    >>> net = decorator(Net)(state_shape=flat_dim, action_shape=4)
    >>> obs = {"pos": np.zeros((5, 2)), "img": np.zeros((5, 2, 3))}
    >>> flat_dim, net(obs)[0].shape
    (8, torch.Size([5, 4]))

    :param state_shape: the shape of each entry of one (unbatched) observation.
    :param keys: the entries the network reads, in the order they are concatenated.
    :return: the decorator and the flat input width (the summed sizes of the ``keys`` entries).
    """
    missing = [key for key in keys if key not in state_shape]
    if not keys or missing:
        raise ValueError(
            f"keys must name at least one entry of state_shape {sorted(state_shape)}; "
            f"got keys={list(keys)}"
        )
    shapes = {key: _shape_tuple(state_shape[key]) for key in keys}
    flat_dim = sum(int(np.prod(shape)) for shape in shapes.values())

    def flatten_obs(obs: Any) -> Any:
        if isinstance(obs, np.ndarray | torch.Tensor):
            return obs
        parts = []
        for key, shape in shapes.items():
            part = torch.as_tensor(obs[key], dtype=torch.float32)
            if tuple(part.shape[1:]) != shape:
                raise ValueError(
                    f"observation entry {key!r} has shape {tuple(part.shape)}, expected "
                    f"(batch, *{shape})"
                )
            parts.append(part.flatten(1))
        return torch.cat(parts, dim=1)

    def decorator(module_class: type[TModule]) -> type[TModule]:
        class DictObsModule(module_class):  # type: ignore[valid-type,misc]
            def forward(self, obs: Any, *args: Any, **kwargs: Any) -> Any:
                return super().forward(flatten_obs(obs), *args, **kwargs)

        DictObsModule.__name__ = DictObsModule.__qualname__ = f"DictObs{module_class.__name__}"
        return DictObsModule

    return decorator, flat_dim


class RandomActor(AbstractContinuousActorProbabilistic[Any], AbstractDiscreteActor[Any]):
    """An untrained actor that acts uniformly at random; a baseline and a placeholder.

    For a Box space the output is a batch of sampled actions; for a Discrete space it is a batch
    of uniform action probabilities.

    :param action_space: a Box or Discrete action space.
    """

    def __init__(self, action_space: "spaces.Box | spaces.Discrete") -> None:
        from tianshou.utils.space_info import ActionSpaceInfo

        info = ActionSpaceInfo.from_space(action_space)
        super().__init__(info.action_dim)
        self._action_space = action_space
        self._space_info = info

    @property
    def action_space(self) -> "spaces.Box | spaces.Discrete":
        return self._action_space

    @property
    def space_info(self) -> "ActionSpaceInfo":
        return self._space_info

    @property
    def is_discrete(self) -> bool:
        from gymnasium import spaces

        return isinstance(self._action_space, spaces.Discrete)

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No body: an identity declaring the action width."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Random actions (Box) or uniform probabilities (Discrete), one row per observation."""
        batch_size = len(obs)
        if self.is_discrete:
            probs = np.full((batch_size, self.output_dim), 1.0 / self.output_dim)
            return torch.as_tensor(probs, dtype=torch.float32), state
        actions = np.stack([self._action_space.sample() for _ in range(batch_size)])
        return torch.as_tensor(actions, dtype=torch.float32), state

    def compute_action_batch(self, obs: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """Sampled actions: action indices for a Discrete space, action vectors for a Box."""
        if self.is_discrete:
            return np.array([self._action_space.sample() for _ in range(len(obs))])
        return self.forward(obs)[0]
