"""The entropy-regularised mathematics the SAC family shares: SAC, discrete SAC, REDQ, recurrent
SAC and CQL's actor.

These algorithms maximise the return plus ``alpha`` times the policy's entropy (Haarnoja et al.
2018, "Soft Actor-Critic", eq. 1). Three quantities follow from that objective, each a function
here so that it can be checked alone:

* the *soft value* of a state, ``E_a[Q(s, a) - alpha * log pi(a|s)]``, which the critics'
  targets bootstrap from (:func:`soft_value`, :func:`soft_td_target`);
* the *actor's loss*, ``E_a[alpha * log pi(a|s) - Q(s, a)]``, the negated soft value the policy
  ascends (:func:`soft_actor_loss`);
* the *entropy coefficient's loss*, whose minimisation raises ``alpha`` while the entropy is below
  its target and lowers it while above (:func:`entropy_coefficient_loss`).

Continuous policies estimate the expectations over actions from one sampled action and its
log-probability; categorical policies compute them exactly over all actions (Christodoulou 2019,
"Soft Actor-Critic for Discrete Action Settings"), hence the ``categorical_`` variants.

``alpha`` is a float or a 0-dim tensor without gradient (an
:attr:`~tianshou.algorithm.modelfree.entropy_coefficient.Alpha.coefficient`): the policy and the
critics do not train the coefficient through these losses.
"""

import torch

from tianshou.algorithm._sequences import masked_mean


def soft_value(
    q: torch.Tensor, log_prob: torch.Tensor, alpha: float | torch.Tensor
) -> torch.Tensor:
    """``Q(s, a) - alpha * log pi(a|s)``: the one-sample estimate of the soft value of ``s`` at an
    action ``a`` sampled from the policy.

    :param q: the critics' value of the sampled actions (e.g. the twin critics' minimum).
    :param log_prob: the log-probability of the sampled actions, of the shape of ``q``.
    :param alpha: the entropy coefficient.
    """
    return q - alpha * log_prob


def soft_td_target(
    rew: torch.Tensor,
    not_terminal: torch.Tensor,
    gamma: float,
    next_q: torch.Tensor,
    next_log_prob: torch.Tensor,
    alpha: float | torch.Tensor,
) -> torch.Tensor:
    """The one-step soft Bellman target ``r + gamma * (1 - terminated) * V_soft(s')``, with
    ``V_soft(s')`` the one-sample :func:`soft_value` at an action sampled in ``s'``.

    :param rew: the rewards.
    :param not_terminal: 1 (or True) where the episode goes on after the step, 0 (or False) where
        it terminated (a truncated step still bootstraps), of the shape of ``rew``.
    :param gamma: the discount factor.
    :param next_q: the target critics' value of the action sampled in the next state.
    :param next_log_prob: that action's log-probability.
    :param alpha: the entropy coefficient.
    """
    return rew + gamma * not_terminal * soft_value(next_q, next_log_prob, alpha)


def soft_actor_loss(
    log_prob: torch.Tensor,
    q: torch.Tensor,
    alpha: float | torch.Tensor,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """The actor's loss ``mean(alpha * log pi(a|s) - Q(s, a))`` at reparameterised samples ``a``:
    minimising it ascends the soft value (the gradient reaches the policy through both terms).

    :param log_prob: the log-probabilities of the sampled actions.
    :param q: the critics' value of those actions, of the shape of ``log_prob``.
    :param alpha: the entropy coefficient.
    :param valid: where given, the mean runs over the entries it marks only (the real steps of
        padded sequences).
    """
    per_sample = alpha * log_prob - q
    return per_sample.mean() if valid is None else masked_mean(per_sample, valid)


def categorical_entropy(probs: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """The entropy ``-sum_a pi(a|s) log pi(a|s)`` of each row of categorical distributions,
    shape ``(B,)``; an action of probability 0 (log-probability -inf, e.g. an illegal one)
    contributes 0 rather than NaN.

    :param probs: the probabilities, shape ``(B, n_actions)``.
    :param log_probs: their logarithms, of the same shape.
    """
    finite_log_probs = log_probs.clamp(min=torch.finfo(log_probs.dtype).min)
    return -(probs * finite_log_probs).sum(dim=-1)


def categorical_soft_value(
    probs: torch.Tensor,
    q: torch.Tensor,
    entropy: torch.Tensor,
    alpha: float | torch.Tensor,
) -> torch.Tensor:
    """The exact soft value ``sum_a pi(a|s) * Q(s, a) + alpha * H(pi(.|s))`` of each state, shape
    ``(B,)`` (``sum_a pi * (Q - alpha * log pi)``, regrouped).

    :param probs: the policy's probabilities, shape ``(B, n_actions)``.
    :param q: the critics' values of every action, of the same shape.
    :param entropy: the policy's :func:`categorical_entropy`, shape ``(B,)``.
    :param alpha: the entropy coefficient.
    """
    return (probs * q).sum(dim=-1) + alpha * entropy


def categorical_soft_actor_loss(
    probs: torch.Tensor,
    q: torch.Tensor,
    entropy: torch.Tensor,
    alpha: float | torch.Tensor,
) -> torch.Tensor:
    """The categorical actor's loss, ``-mean(alpha * H(pi(.|s)) + sum_a pi(a|s) * Q(s, a))``: the
    negated exact soft value (the gradient reaches the policy through ``probs`` and ``entropy``;
    ``q`` is a constant to it).

    :param probs: the policy's probabilities, shape ``(B, n_actions)``.
    :param q: the critics' values of every action, of the same shape.
    :param entropy: the policy's :func:`categorical_entropy`, shape ``(B,)``.
    :param alpha: the entropy coefficient.
    """
    return -(alpha * entropy + (probs * q).sum(dim=-1)).mean()


def entropy_coefficient_loss(
    log_alpha: torch.Tensor, entropy: torch.Tensor, target_entropy: float
) -> torch.Tensor:
    """The loss ``-log_alpha * (target_entropy - mean(entropy))`` of the learned coefficient
    ``alpha = exp(log_alpha)`` (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and
    Applications", eq. 18, with ``log_alpha`` learned in place of ``alpha``).

    Its gradient, ``mean(entropy) - target_entropy``, is negative while the policy's entropy is
    below the target, so a descent step raises ``alpha`` (more weight on exploration), and
    positive while above. It is computed as ``log_alpha * mean(entropy - target_entropy)`` with
    the mean taken once, outside the graph: the backward pass has one product to go through.

    :param log_alpha: the learned logarithm of the coefficient, a 0-dim tensor.
    :param entropy: per-sample entropy estimates of the policy (``-log pi(a|s)`` of sampled
        actions, or exact categorical entropies); their gradient is not followed.
    :param target_entropy: the entropy the coefficient steers towards.
    """
    surplus = (entropy.detach() - target_entropy).mean().to(log_alpha)
    return log_alpha * surplus
