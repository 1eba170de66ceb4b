"""The standard networks policies call, and the one place to import every network building block
from.

:class:`Net` wraps an :class:`MLP` with the ``(obs, state=None, info=None) -> (logits, state)``
interface policies call, and adds the dueling and distributional heads of value-based methods.
:class:`Recurrent` is an LSTM with the same interface, whose state is a dict of batch-first
``hidden`` and ``cell`` tensors. :class:`ActorCritic` holds an actor and a critic for one
optimizer.

The other building blocks live in modules of their own and are re-exported here, so that
``from tianshou.utils.net.common import ...`` keeps working for all of them:

* :mod:`~tianshou.utils.net.layers`: :func:`miniblock`, :class:`MLP`,
  :class:`ModuleWithVectorOutput`, :class:`EnsembleLinear` and the shape/layer type aliases;
* :mod:`~tianshou.utils.net.action_repr`: the interfaces :class:`ActionReprNet`,
  :class:`Actor` and friends, and :class:`RandomActor`;
* :mod:`~tianshou.utils.net.branching`: :class:`BranchingNet` (BDQN);
* :mod:`~tianshou.utils.net.parallel`: :class:`DataParallelNet` and
  :class:`ActionReprNetDataParallelWrapper` (multi-GPU);
* :mod:`~tianshou.utils.net.dict_obs`: :func:`get_dict_state_decorator` (dict observations).
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import (
    AbstractContinuousActorProbabilistic,
    AbstractDiscreteActor,
    ActionReprNet,
    ActionReprNetWithVectorOutput,
    Actor,
    RandomActor,
    TRecurrentState,
)
from tianshou.utils.net.branching import BranchingNet
from tianshou.utils.net.dict_obs import DictObsDecorator, get_dict_state_decorator
from tianshou.utils.net.layers import (
    MLP,
    ArgsType,
    EnsembleLinear,
    InputDeviceMixin,
    ModuleType,
    ModuleWithVectorOutput,
    ModuleWithVectorOutputAdapter,
    TActionShape,
    TLinearLayer,
    as_shape_tuple,
    miniblock,
)
from tianshou.utils.net.parallel import ActionReprNetDataParallelWrapper, DataParallelNet

__all__ = [
    "MLP",
    "AbstractContinuousActorProbabilistic",
    "AbstractDiscreteActor",
    "ActionReprNet",
    "ActionReprNetDataParallelWrapper",
    "ActionReprNetWithVectorOutput",
    "Actor",
    "ActorCritic",
    "ArgsType",
    "BranchingNet",
    "DataParallelNet",
    "DictObsDecorator",
    "EnsembleLinear",
    "InputDeviceMixin",
    "ModuleType",
    "ModuleWithVectorOutput",
    "ModuleWithVectorOutputAdapter",
    "Net",
    "RandomActor",
    "Recurrent",
    "TActionShape",
    "TLinearLayer",
    "TRecurrentState",
    "get_dict_state_decorator",
    "miniblock",
]


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
        self.state_shape = as_shape_tuple(state_shape)
        self.action_shape = as_shape_tuple(action_shape)
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
        output_dim = int(np.prod(as_shape_tuple(action_shape)))
        super().__init__(output_dim)
        self.obs_dim = int(np.prod(as_shape_tuple(state_shape)))
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
