"""The intrinsic curiosity module (Pathak et al. 2017) of the Atari scripts, wrapped around an
algorithm with ``--icm-lr-scale`` > 0."""

import argparse

import torch

from tianshou.algorithm import Algorithm
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, OnPolicyAlgorithm
from tianshou.algorithm.modelbased.icm import ICMOffPolicyWrapper, ICMOnPolicyWrapper
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.env.atari.atari_network import DQNet
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.utils.net.action_repr import ActionReprNetWithVectorOutput
from tianshou.utils.net.discrete import IntrinsicCuriosityModule


def with_icm(
    algorithm: OffPolicyAlgorithm | OnPolicyAlgorithm,
    args: argparse.Namespace,
    envs: "AtariEnvs",
    *,
    feature_layer: int | None = None,
    hidden_size: int = 512,
) -> Algorithm:
    """``algorithm`` wrapped in an intrinsic curiosity module if ``--icm-lr-scale`` > 0.

    The ICM embeds frames with its own Nature-DQN torso (dividing the pixels by 255 first with
    ``--scale-obs``); its forward and inverse models have one hidden layer of ``hidden_size``
    units, and Adam trains it with ``--lr``.

    :param feature_layer: width of a ReLU layer appended to the torso (None: the 3136 conv
        features are the embedding).
    :param hidden_size: width of the hidden layer of the forward and inverse models.
    """
    if args.icm_lr_scale <= 0:
        return algorithm
    torso = DQNet(
        *envs.frame_shape,
        action_shape=envs.num_actions,
        features_only=True,
        output_dim_added_layer=feature_layer,
    )
    model = IntrinsicCuriosityModule(
        feature_net=_FeaturesOnly(scale_obs_if(args.scale_obs, torso)),
        feature_dim=torso.output_dim,
        action_dim=envs.num_actions,
        hidden_sizes=[hidden_size],
        device=args.device,
    )
    model.to(args.device)
    optim = AdamOptimizerFactory(lr=args.lr)
    scales: dict[str, float] = {
        "lr_scale": args.icm_lr_scale,
        "reward_scale": args.icm_reward_scale,
        "forward_loss_weight": args.icm_forward_loss_weight,
    }
    if isinstance(algorithm, OnPolicyAlgorithm):
        return ICMOnPolicyWrapper(wrapped_algorithm=algorithm, model=model, optim=optim, **scales)
    return ICMOffPolicyWrapper(wrapped_algorithm=algorithm, model=model, optim=optim, **scales)


def algo_name_with_icm(args: argparse.Namespace, algo_name: str) -> str:
    """The name runs are logged under: ``algo_name``, suffixed ``_icm`` with an ICM."""
    return f"{algo_name}_icm" if args.icm_lr_scale > 0 else algo_name


class _FeaturesOnly(torch.nn.Module):
    """Adapts a ``(obs) -> (features, state)`` network to the ICM's ``obs -> features``."""

    def __init__(self, net: ActionReprNetWithVectorOutput) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)[0]
