import pytest
import torch
from torch import nn

from tianshou.utils.lagged_network import (
    EvalModeModuleWrapper,
    LaggedNetworkCollection,
    LaggedNetworkPair,
    polyak_parameter_update,
)


def _net() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Dropout(0.5), nn.Linear(3, 1))


def test_polyak_update_interpolates_parameters() -> None:
    torch.manual_seed(0)
    src, tgt = _net(), _net()
    old = [p.detach().clone() for p in tgt.parameters()]
    polyak_parameter_update(tgt, src, 0.1)
    for o, n, s in zip(old, tgt.parameters(), src.parameters(), strict=True):
        torch.testing.assert_close(n.detach(), 0.9 * o + 0.1 * s.detach())
    polyak_parameter_update(tgt, src, 1.0)
    assert all(torch.equal(a, b) for a, b in zip(tgt.parameters(), src.parameters(), strict=True))


def test_polyak_update_rejects_different_architectures() -> None:
    with pytest.raises(ValueError, match="parameters"):
        polyak_parameter_update(nn.Linear(2, 2), _net(), 0.5)


def test_collection_copies_are_independent_eval_mode_and_untrained() -> None:
    src = _net()
    lagged = LaggedNetworkCollection()
    target = lagged.add_lagged_network(src)
    assert isinstance(target, EvalModeModuleWrapper) and len(lagged) == 1
    assert target.module is not src
    assert all(not p.requires_grad for p in target.parameters())
    target.train()
    assert not target.training and not any(m.training for m in target.modules())
    owner = nn.ModuleDict({"src": src, "target": target})
    owner.train()
    assert src.training and not target.module[1].training
    x = torch.randn(4, 2)
    torch.testing.assert_close(target(x), target.module(x))
    assert lagged.add_lagged_network(nn.Linear(2, 5)).out_features == 5  # attribute fallback


def test_full_update_copies_parameters_and_buffers() -> None:
    torch.manual_seed(1)
    src = _net()
    lagged = LaggedNetworkCollection()
    target = lagged.add_lagged_network(src)
    src.train()
    src(torch.randn(8, 2))  # changes the batch-norm running statistics
    with torch.no_grad():
        src[0].weight.add_(1.0)
    assert not torch.equal(target.module[0].weight, src[0].weight)
    lagged.full_parameter_update()
    for a, b in zip(target.module.state_dict().values(), src.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_collection_polyak_updates_every_registered_network() -> None:
    srcs = [nn.Linear(2, 2), nn.Linear(3, 1)]
    lagged = LaggedNetworkCollection()
    targets = [lagged.add_lagged_network(s) for s in srcs]
    with torch.no_grad():
        for s in srcs:
            for p in s.parameters():
                p.fill_(2.0)
        for t in targets:
            for p in t.parameters():
                p.fill_(0.0)
    lagged.polyak_parameter_update(0.25)
    for t in targets:
        for p in t.parameters():
            torch.testing.assert_close(p, torch.full_like(p, 0.5))
    LaggedNetworkCollection().polyak_parameter_update(0.5)  # nothing registered: no-op


def test_lagged_network_pair_holds_target_and_source_with_their_tensors() -> None:
    src, tgt = _net(), _net()
    pair = LaggedNetworkPair(target=tgt, source=src)
    assert pair.target is tgt and pair.source is src
    assert [id(p) for p in pair.source_params] == [id(p) for p in src.parameters()]
    assert [id(b) for b in pair.target_buffers] == [id(b) for b in tgt.buffers()]
    assert "params" not in repr(pair)


def test_collection_pairs_each_copy_with_its_source() -> None:
    src = _net()
    lagged = LaggedNetworkCollection()
    target = lagged.add_lagged_network(src)
    (pair,) = lagged._pairs
    assert isinstance(pair, LaggedNetworkPair)
    assert pair.source is src and pair.target is target.module
