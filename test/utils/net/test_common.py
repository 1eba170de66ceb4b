"""MLP, Net (dueling, distributional), Recurrent, ActorCritic, RandomActor, BranchingNet,
the data-parallel wrappers and the dict-observation decorator."""

import copy
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.data import Batch
from tianshou.utils.net.common import (
    MLP,
    ActionReprNetDataParallelWrapper,
    ActorCritic,
    BranchingNet,
    DataParallelNet,
    EnsembleLinear,
    ModuleWithVectorOutput,
    Net,
    RandomActor,
    Recurrent,
    get_dict_state_decorator,
    miniblock,
)
from tianshou.utils.net.continuous import ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor


def test_miniblock_builds_linear_norm_activation_with_args() -> None:
    layers = miniblock(3, 5, nn.LayerNorm, {"eps": 0.1}, nn.LeakyReLU, (0.2,))
    assert [type(layer) for layer in layers] == [nn.Linear, nn.LayerNorm, nn.LeakyReLU]
    assert layers[1].normalized_shape == (5,) and layers[1].eps == 0.1
    assert layers[2].negative_slope == 0.2
    assert [type(layer) for layer in miniblock(3, 5)] == [nn.Linear]


def test_mlp_shapes_and_output_dim() -> None:
    mlp = MLP(input_dim=4, output_dim=2, hidden_sizes=[8, 16])
    assert mlp(torch.zeros(5, 4)).shape == (5, 2) and mlp.output_dim == 2
    assert [type(m) for m in mlp.model] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]
    body = MLP(input_dim=4, hidden_sizes=[8, 16])
    assert body.output_dim == body.get_output_dim() == 16
    assert body(torch.zeros(5, 4)).shape == (5, 16)
    identity = MLP(input_dim=4)
    assert identity.output_dim == 4 and len(identity.model) == 0


def test_mlp_per_layer_norm_and_activation_lists() -> None:
    mlp = MLP(
        input_dim=3,
        hidden_sizes=[4, 6],
        norm_layer=[nn.LayerNorm, nn.BatchNorm1d],
        norm_args=[{"eps": 0.5}, None],
        activation=[nn.Tanh, nn.ReLU],
    )
    kinds = [type(m) for m in mlp.model]
    assert kinds == [nn.Linear, nn.LayerNorm, nn.Tanh, nn.Linear, nn.BatchNorm1d, nn.ReLU]
    assert mlp.model[1].eps == 0.5
    with pytest.raises(ValueError, match="activation lists 1 entries but there are 2"):
        MLP(input_dim=3, hidden_sizes=[4, 6], activation=[nn.Tanh])
    with pytest.raises(ValueError, match="norm_layer arguments list 1"):
        MLP(input_dim=3, hidden_sizes=[4, 6], norm_layer=[nn.LayerNorm] * 2, norm_args=[None])
    with pytest.raises(ValueError, match="hidden_sizes"):
        MLP(input_dim=3, hidden_sizes=[0])


def test_mlp_flattening_and_numpy_input() -> None:
    mlp = MLP(input_dim=6, output_dim=2, hidden_sizes=[8])
    out = mlp(np.ones((5, 2, 3), dtype=np.float64))
    assert out.dtype == torch.float32 and out.shape == (5, 2)
    assert torch.equal(out, mlp(torch.ones(5, 6)))
    per_step = MLP(input_dim=3, output_dim=2, flatten_input=False)
    assert per_step(torch.zeros(5, 7, 3)).shape == (5, 7, 2)


def test_mlp_bad_input_shape_names_both_shapes() -> None:
    mlp = MLP(input_dim=4, output_dim=2, hidden_sizes=[8])
    with pytest.raises(ValueError, match=r"input_dim=4.*got shape \(5, 3\)"):
        mlp(torch.zeros(5, 3))
    with pytest.raises(ValueError, match=r"got shape \(4,\)"):
        mlp(torch.zeros(4))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\).*got shape \(2, 7, 4\)"):
        MLP(input_dim=3, output_dim=1, flatten_input=False)(torch.zeros(2, 7, 4))


def test_input_device_follows_moves_and_copies() -> None:
    mlp = MLP(input_dim=4, output_dim=2, hidden_sizes=[8])
    assert mlp._input_device == torch.device("cpu")
    mlp.to("meta")
    assert mlp._input_device.type == "meta"
    assert mlp(np.zeros((3, 4))).device.type == "meta"
    assert copy.deepcopy(mlp)._input_device.type == "meta"
    critic = ContinuousCritic(
        preprocess_net=Net(state_shape=4, action_shape=1, hidden_sizes=[8], concat=True)
    )
    critic.to("meta")
    assert critic._input_device.type == "meta" and critic.last._input_device.type == "meta"
    assert critic(np.zeros((3, 4)), np.zeros((3, 1))).device.type == "meta"


def test_parameterless_mlp_keeps_tensors_where_they_are() -> None:
    identity = MLP(input_dim=4)
    assert identity._input_device is None
    meta = torch.zeros(3, 4, device="meta")
    assert identity(meta).device.type == "meta"
    assert identity(np.ones((3, 4))).device.type == "cpu"
    critic = ContinuousCritic(preprocess_net=Net(state_shape=4, action_shape=1, concat=True))
    critic.to("meta")
    assert critic(np.zeros((3, 4)), np.zeros((3, 1))).device.type == "meta"


def test_net_plain_body_and_concat() -> None:
    net = Net(state_shape=(4,), action_shape=3, hidden_sizes=[16, 16])
    logits, state = net(np.zeros((5, 4)), state="kept")
    assert logits.shape == (5, 3) and state == "kept" and net.output_dim == 3
    body = Net(state_shape=4, hidden_sizes=[16, 32])
    assert body.output_dim == 32 and body(torch.zeros(2, 4))[0].shape == (2, 32)
    q_body = Net(state_shape=4, action_shape=(2,), hidden_sizes=[16], concat=True)
    assert q_body.model.input_dim == 6 and q_body.output_dim == 16
    image = Net(state_shape=(2, 3), action_shape=2, hidden_sizes=[8])
    assert image(torch.zeros(7, 2, 3))[0].shape == (7, 2)


def test_net_softmax_and_distributional_output() -> None:
    probs, _ = Net(state_shape=4, action_shape=3, softmax=True)(torch.randn(5, 4))
    assert torch.allclose(probs.sum(-1), torch.ones(5))
    net = Net(state_shape=4, action_shape=3, hidden_sizes=[8], num_atoms=5, softmax=True)
    dist, _ = net(torch.randn(6, 4))
    assert dist.shape == (6, 3, 5) and net.output_dim == 15
    assert torch.allclose(dist.sum(-1), torch.ones(6, 3))
    raw = Net(state_shape=4, action_shape=3, num_atoms=5)
    flat = raw.model(torch.ones(2, 4))
    assert torch.equal(raw(torch.ones(2, 4))[0], flat.view(2, 3, 5))
    with pytest.raises(ValueError, match="num_atoms"):
        Net(state_shape=4, action_shape=3, num_atoms=0)


def test_net_dueling_head_matches_formula() -> None:
    dueling = ({"hidden_sizes": [8]}, {"hidden_sizes": [4]})
    net = Net(state_shape=4, action_shape=3, hidden_sizes=[16], dueling_param=dueling)
    obs = torch.randn(5, 4)
    features = net.model(obs)
    advantage, value = net.Q(features), net.V(features)
    assert net.model.output_dim == 16 and value.shape == (5, 1) and net.output_dim == 3
    expected = value + advantage - advantage.mean(dim=1, keepdim=True)
    assert torch.allclose(net(obs)[0], expected)
    atoms = Net(state_shape=4, action_shape=3, num_atoms=7, dueling_param=dueling, softmax=True)
    features = atoms.model(obs)
    adv = atoms.Q(features).view(5, 3, 7)
    val = atoms.V(features).view(5, 1, 7)
    expected = torch.softmax(adv - adv.mean(dim=1, keepdim=True) + val, dim=-1)
    assert torch.allclose(atoms(obs)[0], expected, atol=1e-6)


def test_net_bad_obs_shape_names_state_shape() -> None:
    net = Net(state_shape=(4,), action_shape=2, hidden_sizes=[8])
    with pytest.raises(ValueError, match=r"obs of shape \(3, 5\).*state_shape \(4,\)"):
        net(np.zeros((3, 5)))
    q_body = Net(state_shape=4, action_shape=2, hidden_sizes=[8], concat=True)
    with pytest.raises(ValueError, match=r"action_shape \(2,\) \(concat=True\).*6 entries"):
        q_body(np.zeros((3, 4)))


def test_net_gradients_reach_every_parameter() -> None:
    net = Net(state_shape=4, action_shape=3, hidden_sizes=[8], dueling_param=({}, {}))
    net(torch.randn(5, 4))[0].pow(2).sum().backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_recurrent_shapes_and_state_layout() -> None:
    rnn = Recurrent(layer_num=2, state_shape=(3,), action_shape=4, hidden_layer_size=16)
    out, state = rnn(np.zeros((5, 3)))
    assert out.shape == (5, 4) and rnn.output_dim == 4
    assert set(state) == {"hidden", "cell"}
    assert state["hidden"].shape == state["cell"].shape == (5, 2, 16)
    assert not state["hidden"].requires_grad
    out, state = rnn(torch.zeros(5, 6, 3), state)
    assert out.shape == (5, 4) and state["cell"].shape == (5, 2, 16)
    assert rnn.get_preprocess_net().output_dim == 4


def test_recurrent_stepwise_state_round_trip_matches_sequence() -> None:
    torch.manual_seed(0)
    rnn = Recurrent(layer_num=1, state_shape=3, action_shape=2, hidden_layer_size=8)
    seq = torch.randn(4, 5, 3)
    whole, whole_state = rnn(seq)
    state = None
    for t in range(5):
        step_out, state = rnn(seq[:, t], state)
    assert state is not None
    assert torch.allclose(step_out, whole, atol=1e-6)
    assert torch.allclose(state["hidden"], whole_state["hidden"], atol=1e-6)
    assert torch.allclose(state["cell"], whole_state["cell"], atol=1e-6)


def test_recurrent_rejects_bad_obs() -> None:
    rnn = Recurrent(layer_num=1, state_shape=3, action_shape=2)
    with pytest.raises(ValueError, match=r"\(batch, 3\).*got \(5, 4\)"):
        rnn(np.zeros((5, 4)))
    with pytest.raises(ValueError, match=r"got \(3,\)"):
        rnn(np.zeros(3))


def test_actor_critic_counts_shared_parameters_once() -> None:
    shared = Net(state_shape=4, hidden_sizes=[8])
    actor = DiscreteActor(preprocess_net=shared, action_shape=2)
    critic = ContinuousCritic(preprocess_net=shared)
    both = ActorCritic(actor, critic)
    expected = {id(p) for p in [*actor.parameters(), *critic.parameters()]}
    params = list(both.parameters())
    assert len(params) == len(expected) == len({id(p) for p in params})
    assert len(params) < len(list(actor.parameters())) + len(list(critic.parameters()))
    assert both.actor is actor and both.critic is critic


def test_module_with_vector_output_adapter() -> None:
    adapted = ModuleWithVectorOutput.from_module(nn.Linear(3, 5), 5)
    assert adapted.output_dim == 5 and adapted(torch.zeros(2, 3)).shape == (2, 5)


def test_random_actor_box_and_discrete() -> None:
    box = gym.spaces.Box(low=-2.0, high=3.0, shape=(2,), seed=0)
    actor = RandomActor(box)
    actions, state = actor(np.zeros((50, 4)))
    assert actions.shape == (50, 2) and state is None and actor.output_dim == 2
    assert actions.min() >= -2.0 and actions.max() <= 3.0 and not actor.is_discrete
    discrete = RandomActor(gym.spaces.Discrete(4, seed=0))
    probs, _ = discrete(np.zeros((3, 4)))
    assert torch.allclose(probs, torch.full((3, 4), 0.25))
    sampled = discrete.compute_action_batch(np.zeros((20, 4)))
    assert isinstance(sampled, np.ndarray) and sampled.shape == (20,)
    assert set(sampled.tolist()) <= {0, 1, 2, 3}


def test_ensemble_linear_members_are_independent_linears() -> None:
    layer = EnsembleLinear(3, 4, 2)
    x = torch.randn(5, 4)
    out = layer(x)
    assert out.shape == (3, 5, 2)
    for member in range(3):
        expected = x @ layer.weight[member] + layer.bias[member]
        assert torch.allclose(out[member], expected, atol=1e-6)
    assert EnsembleLinear(3, 4, 2, bias=False).bias is None


def test_ensemble_critic_via_linear_layer() -> None:
    ensemble = partial(EnsembleLinear, 4)
    body = Net(state_shape=3, action_shape=2, hidden_sizes=[8], concat=True, linear_layer=ensemble)
    critic = ContinuousCritic(preprocess_net=body, linear_layer=ensemble, flatten_input=False)
    assert critic(torch.randn(5, 3), torch.randn(5, 2)).shape == (4, 5, 1)


def make_branching_net() -> BranchingNet:
    return BranchingNet(
        state_shape=(2, 3),
        num_branches=4,
        action_per_branch=5,
        common_hidden_sizes=[16],
        value_hidden_sizes=[8],
        action_hidden_sizes=[8, 8],
    )


def test_branching_net_shape_and_dueling_identity() -> None:
    torch.manual_seed(0)
    net = make_branching_net()
    assert len(net.branches) == net.num_branches == 4 and net.action_per_branch == 5
    obs = torch.randn(7, 2, 3)
    q_BNA, state = net(obs, state="kept")
    assert q_BNA.shape == (7, 4, 5) and state == "kept"
    value_B = net.value(net.common(obs)).squeeze(-1)
    torch.testing.assert_close(q_BNA.mean(dim=-1), value_B.unsqueeze(1).expand(7, 4))


def test_branching_net_matches_naive_dueling_formula() -> None:
    torch.manual_seed(1)
    net = BranchingNet(state_shape=3, num_branches=2, action_per_branch=3)
    obs = torch.randn(4, 3)
    features = net.common(obs)
    assert torch.equal(features, obs)
    value = net.value(features)
    for b, branch in enumerate(net.branches):
        adv = branch(features)
        expected = value + adv - adv.mean(dim=1, keepdim=True)
        torch.testing.assert_close(net(obs)[0][:, b], expected)


def test_branching_net_hidden_sizes_none_means_no_hidden_layers() -> None:
    net = BranchingNet(
        state_shape=3,
        num_branches=2,
        action_per_branch=4,
        common_hidden_sizes=None,
        value_hidden_sizes=None,
        action_hidden_sizes=None,
    )
    assert net.common.output_dim == 3
    linear_shapes = [tuple(m.weight.shape) for m in net.modules() if isinstance(m, nn.Linear)]
    assert linear_shapes == [(1, 3), (4, 3), (4, 3)]  # one layer per stream, none shared


def test_branching_net_gradients_reach_every_stream() -> None:
    net = make_branching_net()
    q_BNA, _ = net(np.random.default_rng(0).normal(size=(3, 2, 3)))
    q_BNA[:, :, 0].sum().backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and bool(param.grad.abs().sum() > 0), name


def test_branching_net_rejects_zero_branches() -> None:
    with pytest.raises(ValueError, match="num_branches >= 1"):
        BranchingNet(state_shape=3)


def test_dict_state_decorator_matches_flat_input() -> None:
    decorator, flat_dim = get_dict_state_decorator(
        {"pos": 2, "img": (2, 3), "unused": 9}, keys=["img", "pos"]
    )
    assert flat_dim == 8
    torch.manual_seed(0)
    dict_net = decorator(Net)(state_shape=flat_dim, action_shape=3, hidden_sizes=[16])
    flat_net = Net(state_shape=flat_dim, action_shape=3, hidden_sizes=[16])
    flat_net.load_state_dict(dict_net.state_dict())
    assert isinstance(dict_net, Net) and type(dict_net).__name__ == "DictObsNet"
    rng = np.random.default_rng(0)
    pos, img = rng.normal(size=(5, 2)), rng.normal(size=(5, 2, 3))
    flat = np.concatenate([img.reshape(5, -1), pos], axis=1)
    expected, _ = flat_net(flat)
    as_dict = {"pos": pos, "img": img, "unused": np.zeros((5, 9))}
    for obs in (as_dict, Batch(as_dict)):
        torch.testing.assert_close(dict_net(obs)[0], expected)
    torch.testing.assert_close(dict_net(flat)[0], expected)


def test_dict_state_decorator_reports_bad_shapes_and_keys() -> None:
    decorator, _ = get_dict_state_decorator({"pos": 2, "vel": 2}, keys=["pos", "vel"])
    net = decorator(Net)(state_shape=4, action_shape=1)
    with pytest.raises(ValueError, match="'vel' has shape \\(5, 3\\)"):
        net({"pos": np.zeros((5, 2)), "vel": np.zeros((5, 3))})
    with pytest.raises(ValueError, match="keys must name"):
        get_dict_state_decorator({"pos": 2}, keys=["pos", "typo"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_data_parallel_wrappers_need_cuda() -> None:
    net = Net(state_shape=4, action_shape=2)
    with pytest.raises(RuntimeError, match=r"DataParallelNet .*no CUDA device"):
        DataParallelNet(net)
    with pytest.raises(RuntimeError, match=r"ActionReprNetDataParallelWrapper .*no CUDA device"):
        ActionReprNetDataParallelWrapper(net)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_data_parallel_wrappers_match_plain_net_on_gpu() -> None:
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[8])
    obs = np.random.default_rng(0).normal(size=(6, 4))
    wrapped = ActionReprNetDataParallelWrapper(net)
    expected, _ = net(obs)
    logits, state = wrapped(obs)
    assert state is None and logits.device.type == "cuda"
    torch.testing.assert_close(logits, expected)
    torch.testing.assert_close(DataParallelNet(net)(obs)[0], expected)


def test_data_parallel_replicas_keep_inputs_on_their_device() -> None:
    mlp = MLP(input_dim=3, output_dim=2)
    replica = mlp._replicate_for_data_parallel()
    assert mlp._input_device == torch.device("cpu") and replica._input_device is None


def test_every_building_block_is_still_importable_from_common() -> None:
    """The split into layers / action_repr / branching / parallel / dict_obs keeps the old
    import path working, with the very same objects."""
    import tianshou.utils.net.common as common
    from tianshou.utils.net import action_repr, branching, dict_obs, layers, parallel

    defining = {
        "miniblock": layers,
        "MLP": layers,
        "ModuleWithVectorOutput": layers,
        "ModuleWithVectorOutputAdapter": layers,
        "EnsembleLinear": layers,
        "TActionShape": layers,
        "TLinearLayer": layers,
        "ModuleType": layers,
        "ArgsType": layers,
        "ActionReprNet": action_repr,
        "ActionReprNetWithVectorOutput": action_repr,
        "Actor": action_repr,
        "AbstractContinuousActorProbabilistic": action_repr,
        "AbstractDiscreteActor": action_repr,
        "RandomActor": action_repr,
        "BranchingNet": branching,
        "DataParallelNet": parallel,
        "ActionReprNetDataParallelWrapper": parallel,
        "get_dict_state_decorator": dict_obs,
    }
    for name, module in defining.items():
        assert getattr(common, name) is getattr(module, name), name
        assert name in common.__all__, name
    assert {"Net", "Recurrent", "ActorCritic"} <= set(common.__all__)


def test_as_shape_tuple() -> None:
    from tianshou.utils.net.layers import as_shape_tuple

    assert as_shape_tuple(4) == (4,)
    assert as_shape_tuple(np.int64(3)) == (3,)
    assert as_shape_tuple([2, 3]) == (2, 3)
