"""PPO's update at the published MuJoCo configuration next to a bare PyTorch PPO update.

The library's PPO is built as ``examples/mujoco/mujoco_ppo.py`` builds it (Hopper-v5 shapes: obs
11, act 3; 64x64 tanh actor and critic, a Gaussian with a state-independent log std, GAE(0.95),
gamma 0.99, return scaling, advantages recomputed every pass, vf_coef 0.25, grad-norm clipping
0.5, Adam at 3e-4 with linear decay). One update is ``Algorithm.update`` on a filled buffer of
2,048 transitions: 10 passes in minibatches of 64, i.e. 320 gradient steps.
``benchmark/bare_ppo.py`` does the same work in plain PyTorch, starting from the library's
weights; both sides are timed alternately (best of several windows, one torch thread) and one
JSON line reports seconds per update and their ratio (target: the library at least 0.9 of the
bare speed). ``ratio`` compares with the bare update that evaluates its policy through
``torch.distributions`` objects, as the library must with a user's ``dist_fn``;
``ratio_to_fused`` with the one using hand-written log-probability formulas (no target: it
measures what the distribution objects cost).

A second workload, ``ppo_cartpole_training_throughput`` (issue 28's small configurations),
trains PPO with ``test/algorithm/modelfree/test_ppo.py``'s CartPole configuration (8 in-process
envs, 64x64 tanh networks, 2,048 steps per update, 10 passes of minibatch 256) through the
trainer, without test episodes, next to :class:`benchmark.bare_ppo.BareOnPolicyLoop` doing the
same env steps and bare updates; it reports env steps per second of both (collection and
updates included; target: the library at least 0.8 of the bare loop).

    python -m benchmark.update_rate_ppo [--cases hopper_update cartpole_training] [--rounds 5]
        [--clock wall]
"""

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal

from benchmark.bare_ppo import BareOnPolicyLoop, BarePPO
from benchmark.common import (
    CLOCKS,
    HOPPER_ACT,
    HOPPER_OBS,
    box,
    copy_into,
    emit,
    random_transitions,
    seconds_per_call,
)
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
from tianshou.data import Collector, CollectStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step

ROLLOUT_SIZE = 2048


@dataclass(frozen=True)
class PPOConfig:
    """The defaults of ``examples/mujoco/mujoco_ppo.py`` that shape an update (written out, not
    imported: the example scripts are free to change their layout)."""

    hidden: int = 64
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    eps_clip: float = 0.2
    vf_coef: float = 0.25
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    batch_size: int = 64
    repeat: int = 10
    advantage_normalization: bool = False
    recompute_advantage: bool = True
    value_clip: bool = False
    return_scaling: bool = True
    lr_decay_updates: int | None = LRSchedulerFactoryLinear(100, 30_000, 2048).num_scheduler_steps
    """The example decays the rate to 0 over 100 epochs of 30,000 steps, 2,048 per update."""


def _gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    return Independent(Normal(*loc_scale), 1)


def library_ppo(
    config: PPOConfig = PPOConfig(), obs_dim: int = HOPPER_OBS, act_dim: int = HOPPER_ACT
) -> PPO:
    """The library's PPO as the example builds it: orthogonally initialised tanh networks, a
    log std starting at -0.5 and a last policy layer scaled by 0.01."""

    def body() -> Net:
        return Net(state_shape=obs_dim, hidden_sizes=[config.hidden] * 2, activation=nn.Tanh)

    actor = ContinuousActorProbabilistic(
        preprocess_net=body(), action_shape=act_dim, unbounded=True
    )
    critic = ContinuousCritic(preprocess_net=body())
    with torch.no_grad():
        actor.sigma_param.fill_(-0.5)
        for module in [*actor.modules(), *critic.modules()]:
            if isinstance(module, nn.Linear):
                nn.init.orthogonal_(module.weight, gain=np.sqrt(2))
                module.bias.zero_()
        for param in actor.mu.parameters():
            param.mul_(0.01)
    optim = AdamOptimizerFactory(lr=config.lr)
    if config.lr_decay_updates is not None:
        optim.with_lr_scheduler_factory(LRSchedulerFactoryLinear(config.lr_decay_updates, 1, 1))
    return PPO(
        policy=ProbabilisticActorPolicy(actor=actor, dist_fn=_gaussian, action_space=box(act_dim)),
        critic=critic,
        optim=optim,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        max_grad_norm=config.max_grad_norm,
        vf_coef=config.vf_coef,
        ent_coef=config.ent_coef,
        return_scaling=config.return_scaling,
        eps_clip=config.eps_clip,
        value_clip=config.value_clip,
        advantage_normalization=config.advantage_normalization,
        recompute_advantage=config.recompute_advantage,
    )


def bare_ppo(
    data: dict[str, np.ndarray],
    config: PPOConfig = PPOConfig(),
    num_actions: int | None = None,
    torch_distributions: bool = True,
) -> BarePPO:
    """The bare update of ``config`` (a categorical policy if ``num_actions`` is given)."""
    return BarePPO(
        data,
        num_actions=num_actions,
        torch_distributions=torch_distributions,
        hidden=config.hidden,
        lr=config.lr,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        eps_clip=config.eps_clip,
        vf_coef=config.vf_coef,
        ent_coef=config.ent_coef,
        max_grad_norm=config.max_grad_norm,
        batch_size=config.batch_size,
        repeat=config.repeat,
        advantage_normalization=config.advantage_normalization,
        recompute_advantage=config.recompute_advantage,
        value_clip=config.value_clip,
        return_scaling=config.return_scaling,
        lr_decay_updates=config.lr_decay_updates,
    )


def load_weights(bare: BarePPO, library: PPO) -> None:
    """Give ``bare`` the library's actor (and log std) and critic."""
    actor = library.policy.actor
    sigma = getattr(actor, "sigma_param", None)
    sources = [p for p in actor.parameters() if p is not sigma]
    targets = list(bare.actor.parameters())
    if bare.log_std is not None:
        sources.append(sigma)
        targets.append(bare.log_std)
    sources += list(library.critic.parameters())
    targets += list(bare.critic.parameters())
    copy_into(targets, sources)


def library_update(algorithm: PPO, buffer: ReplayBuffer, batch_size: int, repeat: int) -> Any:
    """One ``Algorithm.update`` on the whole ``buffer`` inside a training step."""
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer, batch_size, repeat)


def measure(rounds: int, min_time: float, clock: str) -> dict[str, Any]:
    """Best seconds per update of the library and both bare PPOs, timed alternately."""
    config = PPOConfig()
    data = random_transitions(ROLLOUT_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
    library = library_ppo(config)
    bare = bare_ppo(data, config)
    fused = bare_ppo(data, config, torch_distributions=False)
    load_weights(bare, library)
    load_weights(fused, library)
    buffer = ReplayBuffer.from_data(**data)
    timer = CLOCKS[clock]

    def library_side() -> None:
        library_update(library, buffer, config.batch_size, config.repeat)

    sides: dict[str, Callable[[], object]] = {
        "library": library_side,
        "bare": bare.update,
        "bare_fused": fused.update,
    }
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(rounds):  # alternate, so drifting machine load hits all alike
        for name, update in sides.items():
            best[name] = min(best[name], seconds_per_call(update, min_time, repeat=2, clock=timer))
    return {
        "bench": "ppo_update_hopper_shapes",
        "shapes": f"obs {HOPPER_OBS}, act {HOPPER_ACT}, {config.hidden}x{config.hidden} tanh, "
        f"rollout {ROLLOUT_SIZE}, {config.repeat} passes of minibatch {config.batch_size}",
        "s_per_update": best["library"],
        "bare_s_per_update": best["bare"],
        "bare_fused_s_per_update": best["bare_fused"],
        "ratio": best["bare"] / best["library"],
        "ratio_to_fused": best["bare_fused"] / best["library"],
        "target_ratio": 0.9,
        "ok": best["bare"] / best["library"] >= 0.9,
        "clock": clock,
    }


CARTPOLE_ENVS, CARTPOLE_ROLLOUT = 8, 2048
CARTPOLE_CONFIG = PPOConfig(
    lr=1e-3,
    vf_coef=0.5,
    ent_coef=0.01,
    batch_size=256,
    advantage_normalization=True,
    recompute_advantage=False,
    return_scaling=False,
    lr_decay_updates=None,
)
"""``test/algorithm/modelfree/test_ppo.py``'s CartPole learning configuration."""


def library_cartpole_run(iterations: int, seed: int = 0) -> Callable[[], int]:
    """A function training the library's PPO as the CartPole learning test does (8 in-process
    envs, 64x64 tanh networks) for ``iterations`` collections of 2,048 steps and updates, without
    test episodes; it returns the env steps taken."""
    c = CARTPOLE_CONFIG
    torch.manual_seed(seed)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(CARTPOLE_ENVS)])
    envs.seed(seed)

    def body() -> Net:
        return Net(state_shape=4, hidden_sizes=[c.hidden] * 2, activation=nn.Tanh)

    algorithm = PPO(
        policy=DiscreteActorPolicy(
            actor=DiscreteActor(preprocess_net=body(), action_shape=2),
            dist_fn=torch.distributions.Categorical,
            action_space=gym.spaces.Discrete(2),
        ),
        critic=DiscreteCritic(preprocess_net=body()),
        optim=AdamOptimizerFactory(lr=c.lr),
        gamma=c.gamma,
        gae_lambda=c.gae_lambda,
        ent_coef=c.ent_coef,
        max_grad_norm=c.max_grad_norm,
    )
    buffer = VectorReplayBuffer(CARTPOLE_ROLLOUT + CARTPOLE_ENVS, CARTPOLE_ENVS)
    collector = Collector[CollectStats](algorithm, envs, buffer)

    def run() -> int:
        collector.reset()
        result = algorithm.run_training(
            OnPolicyTrainerParams(
                training_collector=collector,
                max_epochs=iterations,
                epoch_num_steps=CARTPOLE_ROLLOUT,
                collection_step_num_env_steps=CARTPOLE_ROLLOUT,
                update_step_num_repetitions=c.repeat,
                batch_size=c.batch_size,
                verbose=False,
                show_progress=False,
            )
        )
        return result.train_step

    return run


def bare_cartpole_run(iterations: int, seed: int = 0) -> Callable[[], int]:
    """The same env steps and updates as :func:`library_cartpole_run`, in a bare loop."""
    placeholder = random_transitions(CARTPOLE_ROLLOUT, 4, 2, discrete=True)
    learner = bare_ppo(placeholder, CARTPOLE_CONFIG, num_actions=2)
    loop = BareOnPolicyLoop(
        lambda: gym.make("CartPole-v1"),
        CARTPOLE_ENVS,
        CARTPOLE_ROLLOUT // CARTPOLE_ENVS,
        learner,
        seed,
    )
    return lambda: loop.run(iterations)


def measure_cartpole(rounds: int, iterations: int, clock: str) -> dict[str, Any]:
    """Best env steps per second (collection and updates) of the library and the bare loop."""
    timer = CLOCKS[clock]
    sides = {"library": library_cartpole_run(iterations), "bare": bare_cartpole_run(iterations)}
    best = dict.fromkeys(sides, 0.0)
    for _ in range(rounds):  # alternate, so drifting machine load hits both alike
        for name, run in sides.items():
            start = timer()
            steps = run()
            best[name] = max(best[name], steps / (timer() - start))
    return {
        "bench": "ppo_cartpole_training_throughput",
        "shapes": f"CartPole-v1, {CARTPOLE_ENVS} in-process envs, 64x64 tanh, "
        f"{CARTPOLE_ROLLOUT} steps per update, 10 passes of minibatch "
        f"{CARTPOLE_CONFIG.batch_size}, {iterations} updates per run",
        "env_steps_per_s": best["library"],
        "bare_env_steps_per_s": best["bare"],
        "ratio": best["library"] / best["bare"],
        "target_ratio": 0.8,
        "ok": best["library"] / best["bare"] >= 0.8,
        "clock": clock,
    }


CASES = ("hopper_update", "cartpole_training")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per timed repeat")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    parser.add_argument("--cases", nargs="*", choices=CASES, default=list(CASES))
    parser.add_argument("--iterations", type=int, default=4, help="CartPole updates per run")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for both sides alike
    torch.manual_seed(0)
    np.random.seed(0)
    if "hopper_update" in args.cases:
        emit(measure(args.rounds, args.min_time, args.clock))
    if "cartpole_training" in args.cases:
        emit(measure_cartpole(args.rounds, args.iterations, args.clock))


if __name__ == "__main__":
    main()
