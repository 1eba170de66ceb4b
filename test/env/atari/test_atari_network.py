"""Tests of the Atari networks: shapes and dtypes for every input kind, distributions, the dueling
combination by hand, noisy-layer behaviour, initialisation, observation scaling, one real update
of each algorithm they serve, and the high-level factories on a real ALE game."""

from collections.abc import Callable, Iterator

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.c51 import C51, C51Policy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSAC, DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.fqf import FQF, FQFPolicy
from tianshou.algorithm.modelfree.iqn import IQN, IQNPolicy
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tianshou.algorithm.modelfree.rainbow import RainbowDQN
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.env.atari.atari_network import (
    ActorFactoryAtariDQN,
    C51Net,
    DQNet,
    IntermediateModuleFactoryAtariDQN,
    IntermediateModuleFactoryAtariDQNFeatures,
    QRDQNet,
    RainbowNet,
    ScaledObsInputActionReprNet,
    layer_init,
)
from tianshou.highlevel.env import DiscreteEnvironments, Environments, VectorEnvType
from tianshou.utils.net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    NoisyLinear,
    dist_fn_categorical_from_logits,
    sample_noise,
)
from tianshou.utils.torch_utils import policy_within_training_step

C, H, W = 4, 84, 84
FRAME = {"c": C, "h": H, "w": W}
"""The frame-stack shape as the keyword arguments of the distributional networks."""
NUM_ACTIONS = 6
TORSO_DIM = 3136  # 64 channels x 7 x 7 after the three convolutions on 84x84 frames


@pytest.fixture(autouse=True)
def _single_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def frames(batch_size: int = 2, seed: int = 0) -> np.ndarray:
    """Random uint8 frame stacks of shape ``(batch_size, 4, 84, 84)``."""
    return np.random.default_rng(seed).integers(0, 256, (batch_size, C, H, W), dtype=np.uint8)


def as_input(obs: np.ndarray, kind: str) -> np.ndarray | torch.Tensor:
    return {
        "uint8 numpy": lambda: obs,
        "float32 numpy": lambda: obs.astype(np.float32),
        "float64 numpy": lambda: obs.astype(np.float64),
        "uint8 torch": lambda: torch.from_numpy(obs),
        "float32 torch": lambda: torch.from_numpy(obs).float(),
    }[kind]()


INPUT_KINDS = ["uint8 numpy", "float32 numpy", "float64 numpy", "uint8 torch", "float32 torch"]

NETS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "DQNet": (lambda: DQNet(C, H, W, NUM_ACTIONS), (NUM_ACTIONS,)),
    "DQNet features": (lambda: DQNet(C, H, W, NUM_ACTIONS, features_only=True), (TORSO_DIM,)),
    "DQNet added layer": (
        lambda: DQNet(C, H, W, NUM_ACTIONS, features_only=True, output_dim_added_layer=32),
        (32,),
    ),
    "C51Net": (lambda: C51Net(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11), (NUM_ACTIONS, 11)),
    "RainbowNet": (
        lambda: RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11),
        (NUM_ACTIONS, 11),
    ),
    "QRDQNet": (
        lambda: QRDQNet(**FRAME, action_shape=NUM_ACTIONS, num_quantiles=8),
        (NUM_ACTIONS, 8),
    ),
}


class TestShapes:
    @pytest.mark.parametrize("kind", INPUT_KINDS)
    @pytest.mark.parametrize("name", list(NETS))
    def test_every_input_kind_gives_float32_outputs_of_the_documented_shape(
        self, name: str, kind: str
    ) -> None:
        make, shape = NETS[name]
        torch.manual_seed(0)
        net = make().eval()
        out, state = net(as_input(frames(), kind), state="hidden")
        assert out.shape == (2, *shape) and out.dtype == torch.float32
        assert state == "hidden"

    @pytest.mark.parametrize("name", list(NETS))
    def test_uint8_and_float_frames_give_the_same_output(self, name: str) -> None:
        torch.manual_seed(0)
        net = NETS[name][0]().eval()
        obs = frames()
        assert torch.equal(net(obs)[0], net(obs.astype(np.float32))[0])

    def test_output_dims(self) -> None:
        assert DQNet(C, H, W, NUM_ACTIONS).output_dim == NUM_ACTIONS
        assert DQNet(C, H, W, [2, 3]).output_dim == 6
        assert DQNet(C, H, W, NUM_ACTIONS, features_only=True).output_dim == TORSO_DIM
        added = DQNet(C, H, W, NUM_ACTIONS, features_only=True, output_dim_added_layer=512)
        assert added.output_dim == added.get_output_dim() == 512
        assert (added(frames())[0] >= 0).all()  # the added layer ends in a ReLU
        assert (
            C51Net(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11).output_dim == NUM_ACTIONS * 11
        )
        assert (
            RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11).output_dim
            == NUM_ACTIONS * 11
        )
        assert (
            QRDQNet(**FRAME, action_shape=NUM_ACTIONS, num_quantiles=8).output_dim
            == NUM_ACTIONS * 8
        )

    @pytest.mark.parametrize("net_class", [C51Net, RainbowNet, QRDQNet])
    def test_distributional_nets_take_keyword_arguments_only(self, net_class: type) -> None:
        """As published: ``C51Net(4, 84, 84, 6)`` is refused, so that a frame shape can never be
        mistaken for an action count."""
        with pytest.raises(TypeError, match="positional"):
            net_class(C, H, W, NUM_ACTIONS)
        assert net_class(c=C, h=H, w=W, action_shape=NUM_ACTIONS).action_num == NUM_ACTIONS

    def test_the_torso_width_follows_the_frame_size(self) -> None:
        # 64x64: (64 - 8) / 4 + 1 = 15 -> (15 - 4) / 2 + 1 = 6 -> 6 - 3 + 1 = 4
        net = DQNet(1, 64, 64, NUM_ACTIONS, features_only=True)
        assert net.output_dim == 64 * 4 * 4
        assert net(np.zeros((3, 1, 64, 64), dtype=np.uint8))[0].shape == (3, 64 * 4 * 4)

    def test_added_layer_without_features_only_is_refused(self) -> None:
        with pytest.raises(ValueError, match="features_only=True"):
            DQNet(C, H, W, NUM_ACTIONS, output_dim_added_layer=512)

    @pytest.mark.parametrize("shape", [(C, H, W), (2, C, H, W - 1), (2, C + 1, H, W)])
    def test_wrong_observation_shapes_name_the_expected_shape(self, shape: tuple) -> None:
        with pytest.raises(ValueError, match=r"\(batch, 4, 84, 84\).*" + str(shape)[1:-1]):
            DQNet(C, H, W, NUM_ACTIONS)(np.zeros(shape, dtype=np.uint8))


class TestDistributions:
    @pytest.mark.parametrize(
        "make",
        [
            lambda: C51Net(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11),
            lambda: RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11),
            lambda: RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11, is_dueling=False),
            lambda: RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11, is_noisy=False),
        ],
    )
    def test_c51_and_rainbow_output_distributions_over_the_atoms(self, make: Callable) -> None:
        torch.manual_seed(0)
        probs = make()(frames())[0]
        assert (probs > 0).all()
        assert torch.allclose(probs.sum(-1), torch.ones(2, NUM_ACTIONS), atol=1e-6)


class FixedOutput(nn.Module):
    """A stand-in head returning a fixed tensor whatever its input."""

    def __init__(self, value: torch.Tensor) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value


class TestRainbowHeads:
    def test_dueling_combination_by_hand(self) -> None:
        num_atoms = 3
        net = RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=num_atoms)
        rng = np.random.default_rng(1)
        q = rng.normal(size=(2, NUM_ACTIONS * num_atoms))
        v = rng.normal(size=(2, num_atoms))
        net.Q, net.V = FixedOutput(torch.tensor(q)), FixedOutput(torch.tensor(v))
        probs = net(frames())[0]
        for b in range(2):
            for a in range(NUM_ACTIONS):
                logits = []
                for n in range(num_atoms):
                    mean_q = sum(q[b, other * num_atoms + n] for other in range(NUM_ACTIONS))
                    logits.append(q[b, a * num_atoms + n] - mean_q / NUM_ACTIONS + v[b, n])
                expected = np.exp(logits) / np.exp(logits).sum()
                np.testing.assert_allclose(probs[b, a].numpy(), expected, rtol=1e-12)

    def test_without_dueling_the_advantage_head_alone_gives_the_logits(self) -> None:
        net = RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=3, is_dueling=False)
        assert not hasattr(net, "V")
        q = torch.randn(2, NUM_ACTIONS * 3, generator=torch.Generator().manual_seed(2))
        net.Q = FixedOutput(q)
        expected = q.view(2, NUM_ACTIONS, 3).softmax(-1)
        assert torch.allclose(net(frames())[0], expected)

    @pytest.mark.parametrize("is_dueling", [True, False])
    def test_noisy_heads_apply_resampled_noise_in_train_mode_only(self, is_dueling: bool) -> None:
        torch.manual_seed(0)
        net = RainbowNet(
            **FRAME, action_shape=NUM_ACTIONS, num_atoms=5, is_dueling=is_dueling, noisy_std=0.5
        )
        noisy = [m for m in net.modules() if isinstance(m, NoisyLinear)]
        assert len(noisy) == (4 if is_dueling else 2)
        assert all(layer.sigma == 0.5 for layer in noisy)
        obs = frames()
        net.train()
        first = net(obs)[0]
        assert torch.equal(net(obs)[0], first)  # the noise is fixed until resampled
        assert sample_noise(net)
        assert not torch.allclose(net(obs)[0], first)
        net.eval()
        deterministic = net(obs)[0]
        sample_noise(net)
        assert torch.equal(net(obs)[0], deterministic)
        for layer in noisy:  # eval mode uses the mean weights: zero noise gives the same output
            layer.eps_p.zero_()
            layer.eps_q.zero_()
        net.train()
        assert torch.allclose(net(obs)[0], deterministic)

    def test_without_noise_the_heads_are_plain_linear_layers(self) -> None:
        net = RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=5, is_noisy=False)
        assert not any(isinstance(m, NoisyLinear) for m in net.modules())
        assert not sample_noise(net)
        obs = frames()
        assert torch.equal(net.train()(obs)[0], net.eval()(obs)[0])


class TestLayerInit:
    @pytest.mark.parametrize("std", [1.0, np.sqrt(2), 0.01])
    def test_linear_weights_are_orthogonal_with_gain_std_and_biases_constant(
        self, std: float
    ) -> None:
        layer = layer_init(nn.Linear(16, 8), std=std, bias_const=0.3)
        weight = layer.weight.detach()
        assert torch.allclose(weight @ weight.T, std**2 * torch.eye(8), atol=1e-5 * std**2 + 1e-7)
        assert torch.equal(layer.bias, torch.full((8,), 0.3))

    def test_conv_weights_are_orthogonal_when_flattened(self) -> None:
        layer = layer_init(nn.Conv2d(4, 32, kernel_size=8, stride=4))
        weight = layer.weight.detach().reshape(32, -1)
        assert torch.allclose(weight @ weight.T, 2.0 * torch.eye(32), atol=1e-5)
        assert torch.equal(layer.bias, torch.zeros(32))

    @pytest.mark.parametrize("layer", [nn.Linear(3, 3, bias=False), nn.ReLU()])
    def test_layers_without_weight_and_bias_are_refused(self, layer: nn.Module) -> None:
        with pytest.raises(TypeError, match="weight and bias"):
            layer_init(layer)

    def test_returns_the_layer_and_is_applied_to_every_dqnet_layer(self) -> None:
        layer = nn.Linear(3, 3)
        assert layer_init(layer) is layer
        net = DQNet(C, H, W, NUM_ACTIONS, layer_init=layer_init)
        layers = [m for m in net.modules() if isinstance(m, nn.Conv2d | nn.Linear)]
        assert len(layers) == 5
        for module in layers:
            weight = module.weight.detach().reshape(module.weight.shape[0], -1)
            gram = weight @ weight.T if weight.shape[0] <= weight.shape[1] else weight.T @ weight
            assert torch.allclose(gram, 2.0 * torch.eye(len(gram)), atol=1e-4)
            assert torch.equal(module.bias, torch.zeros_like(module.bias))


class TestScaledObs:
    def test_divides_observations_before_the_wrapped_net(self) -> None:
        torch.manual_seed(0)
        inner = DQNet(C, H, W, NUM_ACTIONS)
        scaled = ScaledObsInputActionReprNet(inner)
        obs = frames()
        out, state = scaled(obs, state="s")
        assert torch.allclose(out, inner(obs.astype(np.float32) / 255.0)[0])
        assert state == "s"
        assert obs.dtype == np.uint8  # the caller's frames are left as they are
        assert scaled.output_dim == scaled.get_output_dim() == NUM_ACTIONS

    def test_custom_denominator_and_tensor_input(self) -> None:
        seen = []

        class Recorder(DQNet):
            def forward(self, obs, state=None, info=None):
                seen.append(obs)
                return super().forward(obs, state, info)

        net = ScaledObsInputActionReprNet(Recorder(C, H, W, NUM_ACTIONS), denom=2.0)
        obs = torch.full((1, C, H, W), 6, dtype=torch.uint8)
        net(obs)
        assert seen[0].dtype == torch.float32 and (seen[0] == 3.0).all()
        assert (obs == 6).all()

    def test_parameters_are_the_wrapped_nets(self) -> None:
        inner = DQNet(C, H, W, NUM_ACTIONS, features_only=True)
        scaled = ScaledObsInputActionReprNet(inner)
        assert [id(p) for p in scaled.parameters()] == [id(p) for p in inner.parameters()]


def uint8_buffer(size: int = 8, seed: int = 0) -> ReplayBuffer:
    """A replay buffer of random uint8 frame stacks with six actions; one episode ends."""
    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(size)
    obs = frames(size + 1, seed)
    for t in range(size):
        buffer.add(
            Batch(
                obs=obs[t],
                act=int(rng.integers(NUM_ACTIONS)),
                rew=float(rng.normal()),
                terminated=t == size // 2,
                truncated=t == size - 1,
                obs_next=obs[t + 1],
                info={},
            )
        )
    assert buffer.obs.dtype == np.uint8
    return buffer


def q_learning(
    model: nn.Module, policy_cls: type = DiscreteQLearningPolicy, **kw: object
) -> DiscreteQLearningPolicy:
    return policy_cls(model=model, action_space=gym.spaces.Discrete(NUM_ACTIONS), **kw)


def make_dqn() -> Algorithm:
    policy = q_learning(ScaledObsInputActionReprNet(DQNet(C, H, W, NUM_ACTIONS)))
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=2)


def make_c51() -> Algorithm:
    policy = q_learning(
        C51Net(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11), C51Policy, num_atoms=11
    )
    return C51(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=2)


def make_rainbow() -> Algorithm:
    model = RainbowNet(**FRAME, action_shape=NUM_ACTIONS, num_atoms=11)
    policy = q_learning(model, C51Policy, num_atoms=11)
    return RainbowDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        n_step_return_horizon=3,
        target_update_freq=2,
    )


def make_qrdqn() -> Algorithm:
    policy = q_learning(QRDQNet(**FRAME, action_shape=NUM_ACTIONS, num_quantiles=8), QRDQNPolicy)
    return QRDQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), num_quantiles=8)


def make_iqn() -> Algorithm:
    model = ImplicitQuantileNetwork(
        preprocess_net=DQNet(C, H, W, NUM_ACTIONS, features_only=True),
        action_shape=NUM_ACTIONS,
        num_cosines=8,
    )
    policy = q_learning(model, IQNPolicy, online_sample_size=4, target_sample_size=4)
    return IQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=2)


def make_fqf() -> Algorithm:
    body = DQNet(C, H, W, NUM_ACTIONS, features_only=True)
    policy = FQFPolicy(
        model=FullQuantileFunction(preprocess_net=body, action_shape=NUM_ACTIONS, num_cosines=8),
        fraction_model=FractionProposalNetwork(num_fractions=4, embedding_dim=body.output_dim),
        action_space=gym.spaces.Discrete(NUM_ACTIONS),
    )
    return FQF(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        fraction_optim=AdamOptimizerFactory(lr=1e-4),
        num_fractions=4,
    )


def atari_body() -> ScaledObsInputActionReprNet:
    """The actor-critic body of the Atari PPO configuration (smaller added layer)."""
    net = DQNet(
        C, H, W, NUM_ACTIONS, features_only=True, output_dim_added_layer=32, layer_init=layer_init
    )
    return ScaledObsInputActionReprNet(net)


def make_ppo() -> Algorithm:
    body = atari_body()
    actor = DiscreteActor(preprocess_net=body, action_shape=NUM_ACTIONS, softmax_output=False)
    policy = DiscreteActorPolicy(
        actor=actor,
        dist_fn=dist_fn_categorical_from_logits,
        action_space=gym.spaces.Discrete(NUM_ACTIONS),
    )
    critic = DiscreteCritic(preprocess_net=body)
    return PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=1e-3))


def make_discrete_sac() -> Algorithm:
    actor = DiscreteActor(
        preprocess_net=atari_body(), action_shape=NUM_ACTIONS, softmax_output=False
    )

    def critic() -> DiscreteCritic:
        return DiscreteCritic(preprocess_net=atari_body(), last_size=NUM_ACTIONS)

    return DiscreteSAC(
        policy=DiscreteSACPolicy(actor=actor, action_space=gym.spaces.Discrete(NUM_ACTIONS)),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
    )


ALGORITHMS: dict[str, Callable[[], Algorithm]] = {
    "DQN": make_dqn,
    "C51": make_c51,
    "RainbowDQN": make_rainbow,
    "QRDQN": make_qrdqn,
    "IQN": make_iqn,
    "FQF": make_fqf,
    "PPO": make_ppo,
    "DiscreteSAC": make_discrete_sac,
}


class TestAlgorithmUpdates:
    @pytest.mark.parametrize("name", list(ALGORITHMS))
    def test_one_update_on_uint8_frames_gives_finite_losses_and_moves_the_weights(
        self, name: str
    ) -> None:
        torch.manual_seed(0)
        algorithm = ALGORITHMS[name]()
        trained = [
            p for n, p in algorithm.named_parameters() if p.requires_grad and "_old" not in n
        ]
        before = [p.detach().clone() for p in trained]
        buffer = uint8_buffer()
        with policy_within_training_step(algorithm.policy):
            if name == "PPO":
                stats = algorithm.update(buffer, batch_size=None, repeat=1)
            else:
                stats = algorithm.update(buffer, sample_size=4)
        losses = stats.get_loss_stats_dict()
        assert losses, f"{name} reported no loss in {stats}"
        assert all(np.isfinite(value) for value in losses.values()), f"{name}: {losses}"
        moved = [not torch.equal(b, a) for b, a in zip(before, trained, strict=True)]
        assert all(moved), f"{name}: only {sum(moved)}/{len(moved)} parameter tensors moved"

    def test_policies_act_on_uint8_frames(self) -> None:
        for name, make in ALGORITHMS.items():
            torch.manual_seed(0)
            policy = make().policy
            policy.eval()
            result = policy(Batch(obs=frames(3), info=Batch()))
            act = np.asarray(result.act)
            assert act.shape == (3,) and ((act >= 0) & (act < NUM_ACTIONS)).all(), name


@pytest.fixture(scope="module")
def pong() -> Iterator[Environments]:
    """Pong with the DeepMind preprocessing through gymnasium and ale-py: (4, 84, 84) uint8."""
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    from tianshou.env.atari.atari_wrapper import AtariEnvFactory

    factory = AtariEnvFactory(
        "PongNoFrameskip-v4",
        frame_stack=4,
        use_envpool_if_available=False,
        venv_type=VectorEnvType.DUMMY,
    )
    envs = factory.create_envs(num_training_envs=1, num_test_envs=1, seed=0)
    yield envs
    envs.training_envs.close()
    envs.test_envs.close()


def pong_frames(envs: Environments) -> np.ndarray:
    obs, _ = envs.env.reset(seed=0)
    assert obs.shape == (C, H, W) and obs.dtype == np.uint8
    return np.asarray(obs)[None]


def collect_and_update(algorithm: Algorithm, envs: Environments, **update_kwargs: object) -> dict:
    """Collect 16 steps on the training envs, then one update; returns the loss stats."""
    buffer = VectorReplayBuffer(64, len(envs.training_envs))
    collector = Collector(algorithm, envs.training_envs, buffer)
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=16)
        stats = algorithm.update(buffer, **update_kwargs)
    assert buffer.obs.dtype == np.uint8
    return stats.get_loss_stats_dict()


class TestFactories:
    def test_actor_factory_builds_a_logits_actor_on_a_scaled_initialised_dqnet(
        self, pong: Environments
    ) -> None:
        factory = ActorFactoryAtariDQN(features_only=True, output_dim_added_layer=64)
        torch.manual_seed(0)
        actor = factory.create_module(pong, "cpu")
        assert isinstance(actor, DiscreteActor) and not actor.softmax_output
        body = actor.get_preprocess_net()
        assert isinstance(body, ScaledObsInputActionReprNet) and body.denom == 255.0
        assert isinstance(body.module, DQNet) and body.output_dim == 64
        conv = body.module.net[0][0]
        assert torch.equal(conv.bias, torch.zeros(32))  # layer_init was applied
        logits, _ = actor(pong_frames(pong))
        assert logits.shape == (1, pong.get_action_shape())
        dist = factory.create_dist_fn(pong)(logits)
        assert isinstance(dist, torch.distributions.Categorical)
        assert torch.allclose(dist.probs, logits.softmax(-1))

    def test_actor_factory_defaults_and_unscaled_observations(self, pong: Environments) -> None:
        actor = ActorFactoryAtariDQN().create_module(pong, "cpu")
        body = actor.get_preprocess_net()
        assert isinstance(body, ScaledObsInputActionReprNet)
        assert body.output_dim == pong.get_action_shape()  # the full Q-network as body
        unscaled = ActorFactoryAtariDQN(scale_obs=False).create_module(pong, "cpu")
        assert isinstance(unscaled.get_preprocess_net(), DQNet)

    def test_factory_actor_trains_with_ppo_on_pong(self, pong: Environments) -> None:
        factory = ActorFactoryAtariDQN(features_only=True, output_dim_added_layer=32)
        torch.manual_seed(0)
        actor = factory.create_module(pong, "cpu")
        policy = DiscreteActorPolicy(
            actor=actor,
            dist_fn=factory.create_dist_fn(pong),
            action_space=pong.get_action_space(),
        )
        critic = DiscreteCritic(preprocess_net=actor.get_preprocess_net())
        ppo = PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=1e-3))
        losses = collect_and_update(ppo, pong, batch_size=8, repeat=1)
        assert losses and all(np.isfinite(v) for v in losses.values())

    @pytest.mark.parametrize(
        ("factory", "output_dim", "module_type"),
        [
            (IntermediateModuleFactoryAtariDQN(), NUM_ACTIONS, DQNet),
            (IntermediateModuleFactoryAtariDQN(features_only=True), TORSO_DIM, DQNet),
            (IntermediateModuleFactoryAtariDQN(net_only=True), NUM_ACTIONS, nn.Sequential),
            (IntermediateModuleFactoryAtariDQNFeatures(), TORSO_DIM, nn.Sequential),
        ],
    )
    def test_intermediate_module_factories(
        self,
        pong: Environments,
        factory: IntermediateModuleFactoryAtariDQN,
        output_dim: int,
        module_type: type,
    ) -> None:
        assert pong.get_action_shape() == NUM_ACTIONS
        intermediate = factory.create_intermediate_module(pong, "cpu")
        assert type(intermediate.module) is module_type
        assert intermediate.output_dim == output_dim
        assert intermediate.get_module_with_vector_output().get_output_dim() == output_dim
        obs = torch.as_tensor(pong_frames(pong), dtype=torch.float32)
        out = intermediate.module(obs)
        out = out[0] if isinstance(out, tuple) else out
        assert out.shape == (1, output_dim)
        assert type(factory.create_module(pong, "cpu")) is module_type

    def test_features_factory_sets_both_flags(self) -> None:
        factory = IntermediateModuleFactoryAtariDQNFeatures()
        assert factory.features_only and factory.net_only

    def test_intermediate_dqnet_trains_with_dqn_on_pong(self, pong: Environments) -> None:
        torch.manual_seed(0)
        model = IntermediateModuleFactoryAtariDQN().create_module(pong, "cpu")
        policy = DiscreteQLearningPolicy(
            model=model, action_space=pong.get_action_space(), eps_training=0.5
        )
        dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-4), target_update_freq=4)
        losses = collect_and_update(dqn, pong, sample_size=8)
        assert losses and all(np.isfinite(v) for v in losses.values())

    def test_environments_without_frame_stacks_are_refused(self) -> None:
        envs = DiscreteEnvironments.from_factory(
            lambda mode: gym.make("CartPole-v1"), VectorEnvType.DUMMY, 1, 1
        )
        with pytest.raises(ValueError, match=r"\(c, h, w\).*\(4,\)"):
            ActorFactoryAtariDQN().create_module(envs, "cpu")
        with pytest.raises(ValueError, match="wrap_deepmind"):
            IntermediateModuleFactoryAtariDQN().create_intermediate_module(envs, "cpu")
