"""Recurrent A2C and PPO: actor and critic with memory, trained on stored sequence chunks.

While collecting, :class:`RecurrentActorCriticPolicy` carries the hidden states of both the actor
and the critic from step to step (the collector resets them to zero when an episode ends) and
stores the states it *started* each step from under ``policy.state_in``. The update cuts the
chronological batch into chunks of consecutive steps of one episode (at most ``chunk_len``
long, see :mod:`tianshou.algorithm._sequences`), runs actor and critic over every chunk from the
stored state of its first step, and averages every loss over the real steps only, never over
padding. Minibatches are made of whole chunks.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Distribution

from tianshou.algorithm._sequences import (
    chunk_rows,
    masked_mean,
    run_ends,
    segment_starts,
    state_rows,
)
from tianshou.algorithm.algorithm_base import ActionBoundMethod, PolicyState
from tianshou.algorithm.modelfree._stored_state import numpy_state
from tianshou.algorithm.modelfree.a2c import A2C, A2CTrainingStats, summarize_losses
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy, TDistFnDiscrOrCont
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.dict_observations import ObsRows, obs_rows
from tianshou.spaces.masks import (
    Mask,
    masked_categorical,
    network_input,
    policy_input,
    split_masked_obs,
)
from tianshou.utils.net.recurrent import RecurrentValueNet
from tianshou.utils.torch_utils import torch_device


class RecurrentActorCriticPolicy(ProbabilisticActorPolicy):
    """A stochastic policy on a recurrent actor that also tracks its recurrent critic's state.

    The state it passes between steps is ``{"actor": ..., "critic": ...}`` (the critic part only
    inside training steps, where the update needs it). Inside training steps every collected
    step stores the state it started from under ``policy.state_in``, so the update can replay
    any chunk of the episode from where the collector was.

    A masked observation (the network input ``obs`` and a boolean ``mask``) restricts a
    categorical distribution to the legal actions, when acting and in the update. Images and
    dict observations need networks with a ``preprocess_net`` that encodes them.

    :param actor: a recurrent actor from :mod:`tianshou.utils.net.recurrent` (called as
        ``actor(obs, state)``, with ``initial_state(batch_size)``), e.g.
        :class:`~tianshou.utils.net.recurrent.RecurrentDiscreteActor`.
    :param critic: the recurrent state-value network the algorithm trains.
    :param dist_fn: builds the action distribution from the actor's output; it must accept
        outputs with a time axis, e.g. ``lambda logits: Categorical(logits=logits)``.
    :param deterministic_eval: outside training steps, act with the distribution's mode.
    :param action_space: the environment's action space.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw actions from [-1, 1] to the ``Box`` bounds.
    :param action_bound_method: ``"clip"``, ``"tanh"`` or None.
    """

    def __init__(
        self,
        *,
        actor: torch.nn.Module,
        critic: RecurrentValueNet,
        dist_fn: TDistFnDiscrOrCont,
        deterministic_eval: bool = False,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        for name, net in (("actor", actor), ("critic", critic)):
            if not callable(getattr(net, "initial_state", None)):
                raise TypeError(
                    f"the {name} must be a recurrent network with initial_state(batch_size), "
                    f"e.g. from tianshou.utils.net.recurrent; got {type(net).__name__}"
                )
        super().__init__(
            actor=actor,
            dist_fn=dist_fn,
            deterministic_eval=deterministic_eval,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.critic = critic

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Act on one step of observations, carrying the recurrent states.

        :return: a Batch with ``logits``, ``act``, ``dist``, ``state`` (the next states) and,
            inside training steps, ``policy.state_in`` (the states this step started from).
        """
        obs, mask = policy_input(batch)
        training = self.is_within_training_step
        if training and not isinstance(obs, Batch | dict):  # converted once for both networks
            obs = torch.as_tensor(
                obs, device=self.critic.encoder._input_device, dtype=torch.float32
            )
        states = self._states_or_zeros(state, len(obs))
        dist_input, actor_next = self.actor(obs, states["actor"])
        dist = masked_categorical(self.dist_fn(dist_input), mask)
        act = dist.mode if self.deterministic_eval and not training else dist.sample()
        result: dict[str, Any] = {"logits": dist_input, "act": act, "dist": dist}
        if training:
            # only the critic's state is needed while acting, not its value
            critic_next = self.critic.advance(obs, states["critic"])
            result["state"] = {"actor": actor_next, "critic": critic_next}
            result["policy"] = batch_of_parsed_values({"state_in": numpy_state(states)})
        else:
            result["state"] = {"actor": actor_next}
        return batch_of_parsed_values(result)

    def _states_or_zeros(self, state: PolicyState, batch_size: int) -> dict[str, Any]:
        """The actor's and critic's states, zero where the collector has none yet."""
        given = state if isinstance(state, dict | Batch) else {}
        actor_state = given.get("actor")
        critic_state = given.get("critic")
        return {
            "actor": (
                self.actor.initial_state(batch_size)  # type: ignore[operator]
                if actor_state is None
                else actor_state
            ),
            "critic": (
                self.critic.initial_state(batch_size) if critic_state is None else critic_state
            ),
        }

    def sequence_dist(
        self, obs: torch.Tensor, actor_state: dict[str, Any], mask: Mask | None = None
    ) -> Distribution:
        """The action distribution at every step of ``obs`` ``(B, T, ...)`` from ``actor_state``.

        :param mask: the legal-action mask of every step ``(B, T, n_actions)``, if any; the
            distribution is then the one over the legal actions, as when acting.
        """
        dist_input, _ = self.actor(obs, actor_state, sequence=True)
        return masked_categorical(self.dist_fn(dist_input), mask)


@dataclass
class _Chunks:
    """The sequence structure of one preprocessed batch (:mod:`tianshou.algorithm._sequences`)."""

    rows: torch.Tensor
    """``(N, L)`` row numbers into the batch (padding repeats a chunk's last row)."""
    valid: torch.Tensor
    """``(N, L)`` True for real steps, False for padding."""
    obs: ObsRows
    """All network inputs of the batch: one float tensor, or a Batch of tensors for structured
    observations (gathered by ``rows``)."""
    mask: torch.Tensor | None
    """All legal-action masks of the batch (gathered by ``rows``), or None without masks."""
    actor_state: dict[str, Any]
    """The actor's stored state at every chunk's first step."""
    critic_state: dict[str, Any]
    """The critic's stored state at every chunk's first step."""
    run_end_rows: np.ndarray
    """The batch rows that end a run (an episode's end, or the last collected step of an env)."""
    lengths: np.ndarray
    """``(N,)`` the number of real steps of every chunk."""

    def __len__(self) -> int:
        return len(self.rows)

    def select(self, ids: torch.Tensor) -> "_Chunks":
        """The chunks ``ids`` (for a minibatch)."""
        return _Chunks(
            rows=self.rows[ids],
            valid=self.valid[ids],
            obs=self.obs,
            mask=self.mask,
            actor_state=_select_state(self.actor_state, ids),
            critic_state=_select_state(self.critic_state, ids),
            run_end_rows=self.run_end_rows,
            lengths=self.lengths[ids.cpu().numpy()],
        )


def _select_state(state: Any, ids: torch.Tensor) -> Any:
    if isinstance(state, dict):
        return {key: _select_state(value, ids) for key, value in state.items()}
    return state[ids]


class RecurrentA2C(A2C):
    """A2C with a recurrent actor and critic, trained on whole sequence chunks.

    :param policy: a :class:`RecurrentActorCriticPolicy`; its ``critic`` is the critic trained.
    :param optim: the optimizer factory for actor and critic together.
    :param chunk_len: the longest sequence chunk trained on; episodes are cut into chunks of
        at most this many steps, each replayed from its stored initial state. Minibatches are
        whole chunks in random order, grouped so that each holds about ``batch_size`` real
        (non-padding) steps: as many gradient steps per pass as the feed-forward algorithm.
    :param max_batchsize: steps (padding included) per no-grad pass over the batch, for the
        old log-probabilities and the values. Higher than A2C's default: a recurrent pass is
        sequential in time, so it is only efficient over many chunks at once (a pass over 4096
        steps of one chunk length is about 1.5x cheaper than sixteen passes over 256), and the
        flat observations of recurrent networks keep even a large pass small in memory.
    :param kwargs: the other arguments of :class:`~tianshou.algorithm.modelfree.a2c.A2C`
        (``vf_coef``, ``ent_coef``, ``max_grad_norm``, ``gae_lambda``, ``gamma``,
        ``return_scaling``).
    """

    def __init__(
        self,
        *,
        policy: RecurrentActorCriticPolicy,
        optim: OptimizerFactory,
        chunk_len: int = 16,
        max_batchsize: int = 4096,
        **kwargs: Any,
    ) -> None:
        if not isinstance(policy, RecurrentActorCriticPolicy):
            raise TypeError(
                f"{type(self).__name__} needs a RecurrentActorCriticPolicy, got "
                f"{type(policy).__name__}"
            )
        if chunk_len < 1:
            raise ValueError(f"chunk_len must be a positive int, got {chunk_len}")
        super().__init__(
            policy=policy, critic=policy.critic, optim=optim, max_batchsize=max_batchsize, **kwargs
        )
        self.chunk_len = chunk_len
        self._chunks: _Chunks | None = None

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        if "state_in" not in batch.get("policy", Batch()):
            raise ValueError(
                "the batch has no stored recurrent states (policy.state_in); collect it with "
                "the RecurrentActorCriticPolicy inside a training step"
            )
        device = torch_device(self.policy)
        starts = segment_starts(buffer, indices, batch.terminated | batch.truncated)
        rows, valid = chunk_rows(starts, self.chunk_len)
        first = rows[:, 0]
        obs, mask = split_masked_obs(batch.obs)
        self._chunks = _Chunks(
            rows=torch.as_tensor(rows, device=device),
            valid=torch.as_tensor(valid, device=device),
            obs=obs_rows(obs, device),
            mask=None if mask is None else torch.as_tensor(mask, device=device).bool(),
            actor_state=state_rows(batch.policy.state_in.actor, first, device),
            critic_state=state_rows(batch.policy.state_in.critic, first, device),
            run_end_rows=np.flatnonzero(run_ends(starts)),
            lengths=valid.sum(axis=1),
        )
        return super()._preprocess_batch(batch, buffer, indices)

    def _require_chunks(self) -> _Chunks:
        if self._chunks is None:
            raise RuntimeError("the batch must be preprocessed before the update")
        return self._chunks

    def _state_values(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Values of every step from the chunks, and of every next observation.

        A next observation inside a run is the next step's observation; at the end of a run it
        is valued one step further from the critic state stored after the last step.
        """
        chunks = self._require_chunks()
        with torch.no_grad():
            values = torch.cat([self._chunk_values(group) for group in self._groups(chunks)])
        v_s = torch.empty(len(batch), device=values.device)
        v_s[chunks.rows[chunks.valid]] = values[chunks.valid]
        v_next = torch.empty_like(v_s)
        v_next[:-1] = v_s[1:]
        end_rows = chunks.run_end_rows
        device = v_s.device
        end_state = state_rows(batch.policy.hidden_state.critic, end_rows, device)
        with torch.no_grad():
            bootstrap, _ = self.critic(network_input(batch.obs_next)[end_rows], end_state)
        v_next[torch.as_tensor(end_rows, device=device)] = bootstrap.reshape(-1)
        return v_s, v_next

    def _groups(self, chunks: _Chunks) -> list[_Chunks]:
        """``chunks`` in consecutive groups of about ``max_batchsize`` steps, for no-grad passes."""
        size = max(1, self.max_batchsize // self.chunk_len)
        ids = torch.arange(len(chunks), device=chunks.rows.device)
        return [chunks.select(ids[start : start + size]) for start in range(0, len(chunks), size)]

    def _chunk_values(self, chunks: _Chunks) -> torch.Tensor:
        values, _ = self.critic(chunks.obs[chunks.rows], chunks.critic_state, sequence=True)
        return values.reshape(chunks.rows.shape)

    def _old_log_probs(self, batch: Batch) -> torch.Tensor:
        """Log-probabilities of the stored actions under the collecting policy, from the chunks."""
        chunks = self._require_chunks()
        with torch.no_grad():
            log_prob = torch.cat(
                [self._chunk_log_prob(group, batch.act)[0] for group in self._groups(chunks)]
            )
        flat = torch.empty(len(batch), device=log_prob.device)
        flat[chunks.rows[chunks.valid]] = log_prob[chunks.valid]
        return flat

    def _chunk_log_prob(
        self, chunks: _Chunks, act: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log-probabilities, entropies)`` of the stored actions, both ``(N, L)``."""
        policy: RecurrentActorCriticPolicy = self.policy  # type: ignore[assignment]
        mask = None if chunks.mask is None else chunks.mask[chunks.rows]
        dist = policy.sequence_dist(chunks.obs[chunks.rows], chunks.actor_state, mask)
        log_prob = dist.log_prob(act[chunks.rows])
        entropy = dist.entropy()
        return _per_step(log_prob, chunks.rows.shape), _per_step(entropy, chunks.rows.shape)

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> A2CTrainingStats:
        if repeat < 1:
            raise ValueError(f"repeat must be at least 1, got {repeat}")
        chunks = self._require_chunks()
        history: list[list[float]] = []
        for pass_index in range(repeat):
            if pass_index > 0:
                batch = self._refresh_targets(batch)
            order = torch.randperm(len(chunks), device=chunks.rows.device)
            for ids in _minibatch_ids(order, chunks.lengths, batch_size):
                history.append(self._sequence_step(batch, chunks.select(ids)))
        return summarize_losses(history)

    def _refresh_targets(self, batch: Batch) -> Batch:
        """The batch's training targets before a pass after the first (A2C keeps them)."""
        return batch

    def _sequence_step(self, batch: Batch, chunks: _Chunks) -> list[float]:
        """One A2C gradient step on ``chunks``; returns (loss, actor, value, entropy) losses."""
        log_prob, entropy = self._chunk_log_prob(chunks, batch.act)
        adv = batch.adv[chunks.rows]
        actor_loss = -masked_mean(log_prob * adv, chunks.valid)
        vf_loss = masked_mean(
            (batch.returns[chunks.rows] - self._chunk_values(chunks)).pow(2), chunks.valid
        )
        ent_loss = masked_mean(entropy, chunks.valid)
        loss = actor_loss + self.vf_coef * vf_loss - self.ent_coef * ent_loss
        return self.optim.step_with_loss_values(
            loss, actor_loss=actor_loss, vf_loss=vf_loss, entropy=ent_loss
        )


def _minibatch_ids(
    order: torch.Tensor, lengths: np.ndarray, batch_size: int | None
) -> list[torch.Tensor]:
    """Split the chunk ids ``order`` into consecutive minibatches of about ``batch_size`` steps.

    Padding does not count: a chunk joins the minibatch in which its last real step falls, so
    each minibatch holds about ``batch_size`` real steps and a pass makes as many gradient steps
    as a feed-forward pass over the same transitions (counting chunks instead would make one
    per ``batch_size // chunk_len`` chunks, far more when episodes are short).

    :param order: chunk ids in the order they are drawn.
    :param lengths: the number of real steps of every chunk.
    :param batch_size: real steps per minibatch; None or 0 for one minibatch of every chunk.
    """
    if not batch_size:
        return [order]
    last_step = np.cumsum(lengths[order.cpu().numpy()]) - 1
    group = last_step // batch_size
    splits = np.flatnonzero(group[1:] != group[:-1]) + 1
    return list(torch.tensor_split(order, torch.as_tensor(splits)))


def _per_step(values: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Per-step values ``(N, L)``; per-dimension values (no ``Independent``) are summed."""
    return values.reshape(*shape, -1).sum(-1)


class RecurrentPPO(RecurrentA2C, PPO):
    """PPO with a recurrent actor and critic, trained on whole sequence chunks.

    :param policy: a :class:`RecurrentActorCriticPolicy`; its ``critic`` is the critic trained.
    :param optim: the optimizer factory for actor and critic together.
    :param chunk_len: the longest sequence chunk trained on (see :class:`RecurrentA2C`).
    :param kwargs: the other arguments of :class:`~tianshou.algorithm.modelfree.ppo.PPO`
        (``eps_clip``, ``dual_clip``, ``value_clip``, ``advantage_normalization``,
        ``recompute_advantage``, ``vf_coef``, ``ent_coef``, ...).
    """

    def _refresh_targets(self, batch: Batch) -> Batch:
        if not self.recompute_adv:
            return batch
        if self._buffer is None or self._indices is None:
            raise RuntimeError("recompute_advantage needs the buffer seen in _preprocess_batch")
        return self._add_returns_and_advantages(batch, self._buffer, self._indices)

    def _sequence_step(self, batch: Batch, chunks: _Chunks) -> list[float]:
        """One PPO gradient step on ``chunks``; returns (loss, clip, value, entropy) losses."""
        valid = chunks.valid
        adv = batch.adv[chunks.rows]
        if self.advantage_normalization:
            mean = masked_mean(adv, valid)
            std = masked_mean((adv - mean).pow(2), valid).sqrt()
            adv = (adv - mean) / (std + self._eps)
        log_prob, entropy = self._chunk_log_prob(chunks, batch.act)
        ratio = (log_prob - batch.logp_old[chunks.rows]).exp()
        clip_loss = -masked_mean(self.clipped_surrogate(ratio, adv), valid)
        value = self._chunk_values(chunks)
        returns = batch.returns[chunks.rows]
        error = (returns - value).pow(2)
        if self.value_clip:
            old_value = batch.v_s[chunks.rows]
            clipped = old_value + (value - old_value).clamp(-self.eps_clip, self.eps_clip)
            error = torch.max(error, (returns - clipped).pow(2))
        vf_loss = masked_mean(error, valid)
        ent_loss = masked_mean(entropy, valid)
        loss = clip_loss + self.vf_coef * vf_loss - self.ent_coef * ent_loss
        return self.optim.step_with_loss_values(
            loss, clip_loss=clip_loss, vf_loss=vf_loss, entropy=ent_loss
        )
