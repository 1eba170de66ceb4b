"""Default search spaces of SAC, TD3, PPO and DQN: the hyper-parameters that matter most for
each, over ranges that work on the classic-control and MuJoCo tasks (log scales for rates).
Start from them and narrow or widen them for your task."""

from tianshou.highlevel.hpo.space import (
    CategoricalDimension,
    FloatDimension,
    IntDimension,
    SearchSpace,
)

_NETWORKS = CategoricalDimension("hidden_sizes", [(64, 64), (128, 128), (256, 256)])


def ppo_search_space() -> SearchSpace:
    """Rates, discounting, clipping and the update schedule of PPO."""
    return SearchSpace(
        [
            FloatDimension("lr", 1e-4, 3e-3, log=True),
            FloatDimension("gamma", 0.9, 0.999),
            FloatDimension("gae_lambda", 0.8, 1.0),
            FloatDimension("eps_clip", 0.1, 0.3),
            FloatDimension("ent_coef", 1e-6, 3e-2, log=True),
            FloatDimension("vf_coef", 0.25, 1.0),
            FloatDimension("max_grad_norm", 0.3, 2.0),
            CategoricalDimension("batch_size", [32, 64, 128, 256]),
            IntDimension("update_step_num_repetitions", 1, 10),
            _NETWORKS,
        ]
    )


def sac_search_space() -> SearchSpace:
    """Rates, soft updates and the entropy coefficient of SAC: learned (with its rate) or fixed
    (with its value), a conditional choice."""
    return SearchSpace(
        [
            FloatDimension("actor_lr", 1e-4, 3e-3, log=True),
            FloatDimension("critic_lr", 1e-4, 3e-3, log=True),
            FloatDimension("gamma", 0.95, 0.999),
            FloatDimension("tau", 1e-3, 5e-2, log=True),
            CategoricalDimension("batch_size", [64, 128, 256]),
            CategoricalDimension("auto_alpha", [True, False]),
            FloatDimension("alpha_lr", 1e-4, 1e-3, log=True, condition=("auto_alpha", (True,))),
            FloatDimension("alpha", 1e-2, 0.5, log=True, condition=("auto_alpha", (False,))),
            _NETWORKS,
        ]
    )


def td3_search_space() -> SearchSpace:
    """Rates, soft updates and the noises (fractions of the max action) of TD3."""
    return SearchSpace(
        [
            FloatDimension("actor_lr", 1e-4, 3e-3, log=True),
            FloatDimension("critic_lr", 1e-4, 3e-3, log=True),
            FloatDimension("gamma", 0.95, 0.999),
            FloatDimension("tau", 1e-3, 5e-2, log=True),
            CategoricalDimension("batch_size", [64, 128, 256]),
            FloatDimension("exploration_noise", 0.05, 0.3),
            FloatDimension("policy_noise", 0.1, 0.4),
            FloatDimension("noise_clip", 0.3, 0.7),
            IntDimension("update_actor_freq", 1, 3),
            _NETWORKS,
        ]
    )


def dqn_search_space() -> SearchSpace:
    """Rate, discounting, n-step horizon, target network and exploration of DQN."""
    return SearchSpace(
        [
            FloatDimension("lr", 1e-4, 3e-3, log=True),
            FloatDimension("gamma", 0.9, 0.999),
            IntDimension("n_step", 1, 5),
            CategoricalDimension("target_update_freq", [0, 100, 320, 1000]),
            FloatDimension("eps_train", 0.05, 0.5),
            CategoricalDimension("batch_size", [32, 64, 128]),
            _NETWORKS,
        ]
    )


def default_search_space(algorithm: str) -> SearchSpace:
    """The default space of ``algorithm`` (``"SAC"``, ``"TD3"``, ``"PPO"`` or ``"DQN"``, any
    case).

    :raises ValueError: for another algorithm.
    """
    spaces = {
        "SAC": sac_search_space,
        "TD3": td3_search_space,
        "PPO": ppo_search_space,
        "DQN": dqn_search_space,
    }
    if algorithm.upper() not in spaces:
        raise ValueError(f"no default search space for {algorithm!r}; known: {sorted(spaces)}")
    return spaces[algorithm.upper()]()
