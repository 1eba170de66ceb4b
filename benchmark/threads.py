"""When more torch threads pay: one gradient step of three network sizes, with one intra-op
thread and with one per core, on an idle machine and while another process keeps one core busy.

Cases: a 64x64 MLP (the on-policy MuJoCo networks) on minibatches of 64, a 256x256 MLP (SAC's)
on minibatches of 256, and the Nature-DQN convolutional network on 32 stacked 84x84 Atari
frames. Each JSON line gives the milliseconds per step for one case, thread count and load, and
``speedup_over_one_thread`` against the one-thread figure of the same case and load, measured in
the same run.

    python -m benchmark.threads
"""

import argparse
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

import torch
from torch import nn

from benchmark.common import emit, one_core_busy, seconds_per_call
from tianshou.utils.torch_utils import torch_threads


def mlp_step(width: int, batch: int, obs: int = 11, act: int = 3) -> Callable[[], None]:
    """One Adam step of a two-hidden-layer tanh MLP regressing random targets."""
    net = nn.Sequential(
        nn.Linear(obs, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, act)
    )
    optim = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.randn(batch, obs), torch.randn(batch, act)

    def step() -> None:
        loss = (net(x) - y).pow(2).mean()
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()

    return step


def nature_cnn_step(batch: int = 32, actions: int = 6) -> Callable[[], None]:
    """One Adam step of the Nature-DQN network (3 convolutions, 512 hidden) on Atari frames."""
    net = nn.Sequential(
        nn.Conv2d(4, 32, 8, stride=4),
        nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(3136, 512),
        nn.ReLU(),
        nn.Linear(512, actions),
    )
    optim = torch.optim.Adam(net.parameters(), lr=1e-4)
    frames, targets = torch.rand(batch, 4, 84, 84), torch.randn(batch, actions)

    def step() -> None:
        loss = (net(frames) - targets).pow(2).mean()
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()

    return step


def main(argv: Sequence[str] | None = None) -> None:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0]).parse_args(argv)
    cores = os.cpu_count() or 1
    cases = {
        "mlp_64x64_batch64": mlp_step(64, 64),
        "mlp_256x256_batch256": mlp_step(256, 256),
        "nature_cnn_batch32": nature_cnn_step(),
    }
    for load in ("idle", "one_core_busy"):
        busy: AbstractContextManager[None] = (
            one_core_busy() if load == "one_core_busy" else nullcontext()
        )
        with busy:
            for name, step in cases.items():
                one_thread = None
                for threads in (1, cores):
                    with torch_threads(threads):
                        seconds = seconds_per_call(step, min_time=0.3, repeat=5)
                    one_thread = one_thread or seconds
                    emit(
                        {
                            "bench": "threads",
                            "case": name,
                            "load": load,
                            "threads": threads,
                            "ms_per_step": seconds * 1e3,
                            "speedup_over_one_thread": one_thread / seconds,
                        }
                    )


if __name__ == "__main__":
    main()
