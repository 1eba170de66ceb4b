import pickle

import pytest
import torch
from torch import nn

from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    LRSchedulerFactoryLinear,
    OptimizerFactory,
    ParamsType,
    RMSpropOptimizerFactory,
    TorchOptimizerFactory,
    collect_parameters,
)


def _net() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))


def test_adam_factory_passes_its_hyper_parameters() -> None:
    factory = AdamOptimizerFactory(lr=3e-4, betas=(0.5, 0.6), eps=1e-5, weight_decay=0.1)
    optim, scheduler = factory.create_instances(_net())
    assert isinstance(optim, torch.optim.Adam) and scheduler is None
    group = optim.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (
        3e-4,
        (0.5, 0.6),
        1e-5,
        0.1,
    )
    assert len(group["params"]) == 4


def test_defaults_match_torch() -> None:
    adam, _ = AdamOptimizerFactory().create_instances(_net())
    assert adam.param_groups[0]["lr"] == 1e-3
    rms, _ = RMSpropOptimizerFactory(lr=0.05, alpha=0.9, momentum=0.1).create_instances(_net())
    assert isinstance(rms, torch.optim.RMSprop)
    assert (rms.param_groups[0]["lr"], rms.param_groups[0]["alpha"]) == (0.05, 0.9)
    assert rms.param_groups[0]["momentum"] == 0.1


def test_torch_factory_creates_any_optimizer_class() -> None:
    optim, _ = TorchOptimizerFactory(torch.optim.SGD, lr=0.5, momentum=0.9).create_instances(_net())
    assert isinstance(optim, torch.optim.SGD)
    assert optim.param_groups[0]["momentum"] == 0.9


def test_lists_of_modules_and_parameters_count_shared_parameters_once() -> None:
    shared = nn.Linear(2, 2)
    actor, critic = nn.Sequential(shared, nn.Linear(2, 1)), nn.Sequential(shared, nn.Linear(2, 1))
    extra = nn.Parameter(torch.zeros(1))
    params = collect_parameters([actor, critic, extra, extra])
    assert len(params) == 7
    assert params[-1] is extra
    optim, _ = AdamOptimizerFactory().create_instances([actor, critic])
    assert len(optim.param_groups[0]["params"]) == 6


def test_bad_parameter_sources_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"nn\.Module or nn\.Parameter items, got str"):
        collect_parameters(["x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got int"):
        collect_parameters(3)  # type: ignore[arg-type]


def test_linear_schedule_reaches_zero_after_the_planned_updates() -> None:
    sched_factory = LRSchedulerFactoryLinear(
        max_epochs=3, epoch_num_steps=100, collection_step_num_env_steps=30
    )
    assert sched_factory.num_scheduler_steps == 12  # 3 * ceil(100 / 30)
    factory = AdamOptimizerFactory(lr=1.2).with_lr_scheduler_factory(sched_factory)
    assert factory.lr_scheduler_factory is sched_factory
    optim, scheduler = factory.create_instances(_net())
    assert scheduler is not None
    lrs = []
    for _ in range(14):
        optim.step()
        scheduler.step()
        lrs.append(optim.param_groups[0]["lr"])
    expected = [1.2 * (1 - k / 12) for k in range(1, 13)] + [0.0, 0.0]
    assert lrs == pytest.approx(expected)


def test_schedulers_and_factories_pickle() -> None:
    factory = AdamOptimizerFactory().with_lr_scheduler_factory(LRSchedulerFactoryLinear(2, 10, 5))
    _, scheduler = pickle.loads(pickle.dumps(factory)).create_instances(_net())
    restored = pickle.loads(pickle.dumps(scheduler))
    assert restored.lr_lambdas[0](3) == pytest.approx(0.25)  # 2 * ceil(10 / 5) = 4 steps


@pytest.mark.parametrize("name", ["max_epochs", "epoch_num_steps", "collection_step_num_env_steps"])
def test_linear_schedule_rejects_non_positive_settings(name: str) -> None:
    kwargs = {"max_epochs": 1, "epoch_num_steps": 1, "collection_step_num_env_steps": 1, name: 0}
    with pytest.raises(ValueError, match=name):
        LRSchedulerFactoryLinear(**kwargs)


def test_optimizer_factory_is_abstract() -> None:
    with pytest.raises(TypeError):
        OptimizerFactory()  # type: ignore[abstract]


def test_factories_accept_parameter_groups() -> None:
    net = _net()
    first, *rest = net.parameters()
    groups: ParamsType = [{"params": [first], "lr": 0.5}, {"params": rest}]
    for factory in (AdamOptimizerFactory(lr=0.1), TorchOptimizerFactory(torch.optim.SGD, lr=0.1)):
        optim = factory._create_optimizer_for_params(groups)
        assert [g["lr"] for g in optim.param_groups] == [0.5, 0.1]
