"""Recurrent actor and critic networks that run over whole sequences, for recurrent training.

Every network here is called as ``net(obs, state=None, info=None)``. ``obs`` is either one step,
``(B, obs_dim)`` (acting: the state carries the history), or a sequence, ``(B, T, obs_dim)``
(training on stored sequence chunks); the output has the same leading dimensions, so a sequence
gives one output per time step, not only the last one. The state is a dict of batch-first
tensors of shape ``(B, layer_num, hidden_size)``: ``{"hidden": h}`` for a GRU and
``{"hidden": h, "cell": c}`` for an LSTM, so a replay buffer can store it per transition. A
missing state (None) is the zero state, the state at the start of an episode. Images and dict
observations go through a ``preprocess_net`` first (see :class:`SequenceEncoder`); their
sequences are marked by ``sequence=True``.

>>> actor = RecurrentDiscreteActor(obs_dim=2, action_num=3, hidden_size=8, cell="gru")
>>> logits, state = actor(np.zeros((4, 2)))
>>> logits.shape, state["hidden"].shape
(torch.Size([4, 3]), torch.Size([4, 1, 8]))
>>> logits, _ = actor(np.zeros((4, 5, 2)), state)
>>> logits.shape
torch.Size([4, 5, 3])
"""

import math
from typing import Any, Literal, TypeAlias, cast

import numpy as np
import torch
from torch import nn

from tianshou.data.batch import Batch
from tianshou.utils.net.layers import InputDeviceMixin

RecurrentCell: TypeAlias = Literal["lstm", "gru"]
RecurrentState: TypeAlias = dict[str, torch.Tensor]

RECURRENT_CELLS: tuple[str, ...] = ("lstm", "gru")


class SequenceEncoder(InputDeviceMixin, nn.Module):
    """A linear embedding followed by an LSTM or GRU: the shared body of the networks here.

    One step ``(B, obs_dim)`` goes through torch's fused cell kernels on the recurrent layer's
    own weights (``lstm_cell``/``gru_cell``, one call per layer): acting runs once per env step,
    and the full ``nn.LSTM``/``nn.GRU`` call costs about twice as much for a single step. A
    sequence ``(B, T, obs_dim)`` goes through one ``nn.LSTM``/``nn.GRU`` call over all steps.
    Both give the same result.

    Observations other than flat vectors (images, dicts of several entries) go through a
    ``preprocess_net`` first, e.g. a :class:`~tianshou.utils.net.dict_encoder.DictEncoder`,
    which maps a batch of them to ``(batch, obs_dim)`` features (a tensor, or a
    ``(features, state)`` pair as the library's networks return). It sees the steps of a
    sequence as one batch of ``B * T`` observations.

    :param obs_dim: width of one observation (of the ``preprocess_net``'s features if given).
    :param hidden_size: width of the embedding and of the recurrent state.
    :param layer_num: number of stacked recurrent layers.
    :param cell: ``"lstm"`` or ``"gru"``.
    :param preprocess_net: encodes the observations into ``obs_dim`` features first.
    """

    def __init__(
        self,
        obs_dim: int,
        hidden_size: int = 64,
        layer_num: int = 1,
        cell: RecurrentCell = "lstm",
        preprocess_net: nn.Module | None = None,
    ) -> None:
        if cell not in RECURRENT_CELLS:
            raise ValueError(f"cell must be one of {RECURRENT_CELLS}, got {cell!r}")
        if obs_dim < 1 or hidden_size < 1 or layer_num < 1:
            raise ValueError(
                "obs_dim, hidden_size and layer_num must be positive, got "
                f"{obs_dim}, {hidden_size}, {layer_num}"
            )
        width = getattr(preprocess_net, "output_dim", None)
        if preprocess_net is not None and width is not None and int(width) != obs_dim:
            raise ValueError(
                f"obs_dim must be the width of the preprocess_net's features, {width}; got "
                f"{obs_dim}"
            )
        super().__init__()
        self.preprocess_net = preprocess_net
        self.obs_dim = obs_dim
        self.hidden_size = hidden_size
        self.layer_num = layer_num
        self.cell = cell
        self.embedding = nn.Linear(obs_dim, hidden_size)
        rnn_type = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn_type(hidden_size, hidden_size, num_layers=layer_num, batch_first=True)
        # torch keeps the recurrent layer's parameters in ``rnn._flat_weights`` (refreshed when
        # the module moves or a parameter is replaced), four per layer in this order; the
        # one-step path reads them there instead of by name, once per env step
        expected = [
            f"{kind}_l{layer}"
            for layer in range(layer_num)
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        ]
        if list(self.rnn._flat_weights_names) != expected:
            raise RuntimeError(f"unexpected parameter layout of {type(self.rnn).__name__}")
        self._refresh_input_device()

    def initial_state(self, batch_size: int) -> RecurrentState:
        """The zero state of ``batch_size`` sequences (the state at an episode start)."""
        shape = (batch_size, self.layer_num, self.hidden_size)
        zeros = torch.zeros(shape, device=self._input_device)
        if self.cell == "lstm":
            return {"hidden": zeros, "cell": zeros.clone()}
        return {"hidden": zeros}

    def forward(
        self,
        obs: Any,
        state: RecurrentState | None = None,
        sequence: bool | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """Encode ``obs``: one step ``(B, obs_dim)`` or a sequence ``(B, T, obs_dim)``.

        :param obs: flat observations, or what the ``preprocess_net`` reads, with one or two
            leading axes (batch, or batch and time).
        :param state: the state before the first step; None is the zero state.
        :param sequence: whether ``obs`` is a sequence. None tells it from the number of axes
            of flat observations (2 or 3); with a ``preprocess_net`` it means one step, so
            pass True for sequences.
        :return: ``(features, next state)``: features ``(B, hidden_size)`` for one step and
            ``(B, T, hidden_size)`` for a sequence; the next state is detached.
        """
        features = self._features(obs, sequence)
        batch_size = features.shape[0]
        if state is None:
            state = self.initial_state(batch_size)
        else:
            _check_state(state["hidden"], batch_size)
        embedded = torch.relu(self.embedding(features))
        if features.dim() == 2:
            return self._step(embedded, state)
        return self._sequence(embedded, state)

    def _features(self, obs: Any, sequence: bool | None) -> torch.Tensor:
        """``(B, [T,] obs_dim)`` float features of ``obs``."""
        if self.preprocess_net is None:
            if isinstance(obs, Batch | dict):
                raise TypeError(
                    "structured (Dict) observations need a preprocess_net that encodes them, "
                    "e.g. tianshou.utils.net.dict_encoder.DictEncoder; got keys "
                    f"{sorted(obs.keys())}"
                )
            flat = torch.as_tensor(obs, device=self._input_device, dtype=torch.float32)
            expected = {None: (2, 3), False: (2,), True: (3,)}[sequence]
            if flat.dim() not in expected or flat.shape[-1] != self.obs_dim:
                raise ValueError(
                    f"expected obs of shape (batch, {self.obs_dim}) or (batch, seq_len, "
                    f"{self.obs_dim}), got {tuple(flat.shape)}"
                    + ("" if sequence is None else f" for sequence={sequence}")
                )
            return flat
        leading = _leading_shape(obs, 2 if sequence else 1)
        encoded = self.preprocess_net(_merge_leading(obs, len(leading)))
        if isinstance(encoded, tuple):
            encoded = encoded[0]
        encoded = torch.as_tensor(encoded, device=self._input_device, dtype=torch.float32)
        if encoded.shape != (math.prod(leading), self.obs_dim):
            raise ValueError(
                f"the preprocess_net must map {math.prod(leading)} observations to features of "
                f"shape ({math.prod(leading)}, {self.obs_dim}), got {tuple(encoded.shape)}"
            )
        return encoded.reshape(*leading, self.obs_dim)

    def _step(
        self, layer_input: torch.Tensor, state: RecurrentState
    ) -> tuple[torch.Tensor, RecurrentState]:
        """One time step ``(B, hidden_size)`` through the layers with torch's cell kernels."""
        flat_weights = cast(list[torch.Tensor], self.rnn._flat_weights)  # all set: bias=True
        hiddens, cells = [], []
        for layer in range(self.layer_num):
            weights = flat_weights[4 * layer : 4 * layer + 4]
            hidden = state["hidden"][:, layer]
            if self.cell == "lstm":
                hidden, cell = torch.lstm_cell(
                    layer_input, (hidden, state["cell"][:, layer]), *weights
                )
                cells.append(cell)
            else:
                hidden = torch.gru_cell(layer_input, hidden, *weights)
            hiddens.append(hidden)
            layer_input = hidden
        next_state = {"hidden": _stack_layers(hiddens)}
        if cells:
            next_state["cell"] = _stack_layers(cells)
        return layer_input, next_state

    def _sequence(
        self, embedded: torch.Tensor, state: RecurrentState
    ) -> tuple[torch.Tensor, RecurrentState]:
        """A whole sequence ``(B, T, hidden_size)`` through one ``nn.LSTM``/``nn.GRU`` call."""
        if embedded.is_cuda:  # cuDNN wants one contiguous weight buffer; elsewhere a no-op
            self.rnn.flatten_parameters()
        hidden = state["hidden"].transpose(0, 1).contiguous()
        if self.cell == "lstm":
            cell = state["cell"].transpose(0, 1).contiguous()
            out, (hidden, cell) = self.rnn(embedded, (hidden, cell))
            return out, {"hidden": _batch_major(hidden), "cell": _batch_major(cell)}
        out, hidden = self.rnn(embedded, hidden)
        return out, {"hidden": _batch_major(hidden)}


def _first_leaf(obs: Any) -> Any:
    if isinstance(obs, Batch | dict):
        for value in obs.values():
            return _first_leaf(value)
        raise ValueError("an observation batch without any entry")
    return obs


def _leading_shape(obs: Any, count: int) -> tuple[int, ...]:
    """The ``count`` leading axes of a batch of (possibly structured) observations."""
    shape = tuple(np.shape(_first_leaf(obs)))
    if len(shape) < count:
        raise ValueError(
            f"expected observations with {count} leading axes (batch{', time' * (count - 1)}), "
            f"got an entry of shape {shape}"
        )
    return shape[:count]


def _merge_leading(obs: Any, count: int) -> Any:
    """``obs`` with its ``count`` leading axes merged into one (every entry of a dict)."""
    if count == 1:
        return obs

    def merge(value: Any) -> Any:
        return value.reshape(-1, *value.shape[count:])

    if isinstance(obs, dict):
        obs = Batch(obs)
    return obs.apply_values_transform(merge) if isinstance(obs, Batch) else merge(obs)


def _check_state(tensor: torch.Tensor, batch_size: int) -> None:
    if tensor.dim() != 3 or tensor.shape[0] != batch_size:
        raise ValueError(
            f"a recurrent state must have shape (batch={batch_size}, layer_num, hidden_size), "
            f"got {tuple(tensor.shape)}"
        )


def _stack_layers(per_layer: list[torch.Tensor]) -> torch.Tensor:
    """Per-layer ``(B, H)`` states as one detached ``(B, layers, H)`` state."""
    stacked = per_layer[0].unsqueeze(1) if len(per_layer) == 1 else torch.stack(per_layer, dim=1)
    # acting runs without gradient, where there is nothing to detach from
    return stacked.detach() if stacked.requires_grad else stacked


def _batch_major(tensor: torch.Tensor) -> torch.Tensor:
    """A ``(layers, B, H)`` state of torch's RNNs as the stored ``(B, layers, H)``, detached."""
    return tensor.transpose(0, 1).detach()


class _RecurrentHead(nn.Module):
    """A :class:`SequenceEncoder` with a linear head applied at every time step."""

    def __init__(
        self,
        obs_dim: int,
        output_dim: int,
        hidden_size: int,
        layer_num: int,
        cell: RecurrentCell,
        preprocess_net: nn.Module | None,
    ) -> None:
        super().__init__()
        self.encoder = SequenceEncoder(obs_dim, hidden_size, layer_num, cell, preprocess_net)
        self.head: nn.Module = nn.Linear(hidden_size, output_dim)

    def initial_state(self, batch_size: int) -> RecurrentState:
        return self.encoder.initial_state(batch_size)

    def advance(
        self, obs: Any, state: RecurrentState | None = None, sequence: bool | None = None
    ) -> RecurrentState:
        """The state after ``obs``, without the head: for a policy that only carries this
        network's state while acting (a critic's, to store for the update)."""
        return self.encoder(obs, state, sequence)[1]

    def _encode(
        self, obs: Any, state: RecurrentState | None, sequence: bool | None
    ) -> tuple[torch.Tensor, RecurrentState]:
        features, next_state = self.encoder(obs, state, sequence)
        return self.head(features), next_state


class RecurrentDiscreteActor(_RecurrentHead):
    """Action logits from the history of observations (use ``Categorical(logits=...)``).

    :param obs_dim: width of one observation.
    :param action_num: number of discrete actions.
    :param hidden_size: width of the embedding and the recurrent state.
    :param layer_num: number of stacked recurrent layers.
    :param cell: ``"lstm"`` or ``"gru"``.
    :param preprocess_net: encodes structured observations (images, dicts) into ``obs_dim``
        features first, see :class:`SequenceEncoder`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_num: int,
        hidden_size: int = 64,
        layer_num: int = 1,
        cell: RecurrentCell = "lstm",
        preprocess_net: nn.Module | None = None,
    ) -> None:
        super().__init__(obs_dim, action_num, hidden_size, layer_num, cell, preprocess_net)

    def forward(
        self,
        obs: Any,
        state: RecurrentState | None = None,
        info: Any = None,
        sequence: bool | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """``(logits (B, [T,] action_num), next state)`` (``sequence``: see
        :meth:`SequenceEncoder.forward`)."""
        return self._encode(obs, state, sequence)


class RecurrentQNet(RecurrentDiscreteActor):
    """Q-values of every discrete action from the history of observations.

    The same network as :class:`RecurrentDiscreteActor`; its output is read as Q-values.
    """


class RecurrentValueNet(_RecurrentHead):
    """State values ``V(history)``, one per time step: ``(B,)`` or ``(B, T)``.

    :param obs_dim: width of one observation.
    :param hidden_size: width of the embedding and the recurrent state.
    :param layer_num: number of stacked recurrent layers.
    :param cell: ``"lstm"`` or ``"gru"``.
    :param preprocess_net: encodes structured observations (images, dicts) into ``obs_dim``
        features first, see :class:`SequenceEncoder`.
    """

    def __init__(
        self,
        obs_dim: int,
        hidden_size: int = 64,
        layer_num: int = 1,
        cell: RecurrentCell = "lstm",
        preprocess_net: nn.Module | None = None,
    ) -> None:
        super().__init__(obs_dim, 1, hidden_size, layer_num, cell, preprocess_net)

    def forward(
        self,
        obs: Any,
        state: RecurrentState | None = None,
        info: Any = None,
        sequence: bool | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """``(values (B,) or (B, T), next state)`` (``sequence``: see
        :meth:`SequenceEncoder.forward`)."""
        values, next_state = self._encode(obs, state, sequence)
        return values.squeeze(-1), next_state


class RecurrentGaussianActor(_RecurrentHead):
    """A diagonal Gaussian over continuous actions from the history of observations.

    Returns ``((mu, sigma), state)`` as the published probabilistic actors do, so
    ``lambda loc_scale: Independent(Normal(*loc_scale), 1)`` builds the distribution.

    :param obs_dim: width of one observation.
    :param action_dim: width of the action.
    :param hidden_size: width of the embedding and the recurrent state.
    :param layer_num: number of stacked recurrent layers.
    :param cell: ``"lstm"`` or ``"gru"``.
    :param conditioned_sigma: compute the log standard deviation from the features (as SAC
        needs); otherwise it is one free parameter per action dimension (as PPO uses).
    :param preprocess_net: encodes structured observations (images, dicts) into ``obs_dim``
        features first, see :class:`SequenceEncoder`.
    """

    LOG_SIGMA_MIN = -20.0
    LOG_SIGMA_MAX = 2.0

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden_size: int = 64,
        layer_num: int = 1,
        cell: RecurrentCell = "lstm",
        conditioned_sigma: bool = False,
        preprocess_net: nn.Module | None = None,
    ) -> None:
        output_dim = 2 * action_dim if conditioned_sigma else action_dim
        super().__init__(obs_dim, output_dim, hidden_size, layer_num, cell, preprocess_net)
        self.action_dim = action_dim
        self.conditioned_sigma = conditioned_sigma
        # a free log standard deviation per action dimension unless the head computes it
        self.log_sigma = None if conditioned_sigma else nn.Parameter(torch.zeros(action_dim))

    def forward(
        self,
        obs: Any,
        state: RecurrentState | None = None,
        info: Any = None,
        sequence: bool | None = None,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], RecurrentState]:
        """``((mu, sigma) each (B, [T,] action_dim), next state)`` (``sequence``: see
        :meth:`SequenceEncoder.forward`)."""
        output, next_state = self._encode(obs, state, sequence)
        if self.log_sigma is None:
            mu, log_sigma = output.split(self.action_dim, dim=-1)
        else:
            mu, log_sigma = output, self.log_sigma.expand_as(output)
        sigma = log_sigma.clamp(self.LOG_SIGMA_MIN, self.LOG_SIGMA_MAX).exp()
        return (mu, sigma), next_state


class RecurrentQCritic(_RecurrentHead):
    """``Q(history, a)`` for continuous actions, one value per time step: ``(B,)`` or ``(B, T)``.

    The action enters the head next to the recurrent features, so the recurrent state depends on
    observations only and one pass over a sequence serves every action evaluated on it.

    :param obs_dim: width of one observation.
    :param action_dim: width of the action.
    :param hidden_size: width of the embedding and the recurrent state.
    :param layer_num: number of stacked recurrent layers.
    :param cell: ``"lstm"`` or ``"gru"``.
    :param preprocess_net: encodes structured observations (images, dicts) into ``obs_dim``
        features first, see :class:`SequenceEncoder`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden_size: int = 64,
        layer_num: int = 1,
        cell: RecurrentCell = "lstm",
        preprocess_net: nn.Module | None = None,
    ) -> None:
        super().__init__(obs_dim, 1, hidden_size, layer_num, cell, preprocess_net)
        self.action_dim = action_dim
        self.head = nn.Sequential(
            nn.Linear(hidden_size + action_dim, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 1)
        )

    def features(
        self, obs: Any, state: RecurrentState | None = None, sequence: bool | None = None
    ) -> tuple[torch.Tensor, RecurrentState]:
        """The recurrent features ``(B, [T,] hidden_size)`` of ``obs``, to pair with actions."""
        return self.encoder(obs, state, sequence)

    def value(self, features: torch.Tensor, act: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Q-values of ``act`` given features from :meth:`features` (same leading shape)."""
        act = torch.as_tensor(act, device=features.device, dtype=torch.float32)
        return self.head(torch.cat([features, act], dim=-1)).squeeze(-1)

    def forward(
        self,
        obs: Any,
        act: np.ndarray | torch.Tensor,
        state: RecurrentState | None = None,
        sequence: bool | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """``(Q(obs history, act), next state)``."""
        features, next_state = self.features(obs, state, sequence)
        return self.value(features, act), next_state
