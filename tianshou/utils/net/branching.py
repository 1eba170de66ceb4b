"""The branching dueling Q-network of BDQN."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import ActionReprNet
from tianshou.utils.net.layers import MLP, ArgsType, ModuleType, as_shape_tuple


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
    :param common_hidden_sizes: hidden widths of the shared body; None or empty: no shared
        layers, the flattened observation feeds the streams directly.
    :param value_hidden_sizes: hidden widths of the state-value stream (output width 1); None or
        empty: a single linear layer.
    :param action_hidden_sizes: hidden widths of each branch's advantage stream (output width
        ``action_per_branch``); None or empty: a single linear layer.
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
        common_hidden_sizes: Sequence[int] | None = None,
        value_hidden_sizes: Sequence[int] | None = None,
        action_hidden_sizes: Sequence[int] | None = None,
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
            input_dim=int(np.prod(as_shape_tuple(state_shape))),
            hidden_sizes=common_hidden_sizes or (),
            **layer_kwargs,
        )
        feature_dim = self.common.output_dim
        self.value = MLP(
            input_dim=feature_dim,
            output_dim=1,
            hidden_sizes=value_hidden_sizes or (),
            **layer_kwargs,
        )
        self.branches = nn.ModuleList(
            MLP(
                input_dim=feature_dim,
                output_dim=action_per_branch,
                hidden_sizes=action_hidden_sizes or (),
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
