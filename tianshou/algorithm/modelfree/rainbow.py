"""Rainbow DQN (Hessel et al., 2018): C51 with noisy networks, n-step returns and priorities.

The learning rule is C51's (distributional, n-step, double action selection, prioritized replay
through ``PrioritizedReplayBuffer`` weights). What Rainbow adds here is the NoisyNet exploration
(Fortunato et al., 2018): before every update, the noise of each
:class:`~tianshou.utils.net.discrete.NoisyLinear` layer is resampled, independently for the
online and the target network, and both networks evaluate the update with that noise. A
dueling body is a choice of network (``Net(dueling_param=...)``), not of the algorithm.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.modelfree.c51 import C51, C51Policy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.utils.lagged_network import EvalModeModuleWrapper
from tianshou.utils.net.discrete import NoisyLinear, noisy_layers


@dataclass(kw_only=True)
class RainbowTrainingStats(SimpleLossTrainingStats):
    """Statistics of one Rainbow update: the (importance-weighted) cross-entropy ``loss``."""


@contextmanager
def _noise_enabled(layers: list[NoisyLinear]) -> Iterator[None]:
    """Put the noisy ``layers`` in train mode (they apply their noise), restoring modes after.

    Only the layers in eval mode are switched (in steady training, the target network's); the
    rest of each network keeps its mode, so that, e.g., a dropout layer of the target network
    stays off while its noisy layers draw.
    """
    switched = [layer for layer in layers if not layer.training]
    for layer in switched:
        layer.training = True
    try:
        yield
    finally:
        for layer in switched:
            layer.training = False


class RainbowDQN(C51[C51Policy]):
    """C51 whose networks' :class:`~tianshou.utils.net.discrete.NoisyLinear` layers draw new
    noise for every update.

    :param policy: the C51 policy; its model typically uses ``NoisyLinear`` layers (e.g.
        ``Net(..., linear_layer=NoisyLinear, softmax=True, num_atoms=...)``).
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping (3 in the
        paper).
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: C51Policy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )

    def _resample_noise(self) -> list[NoisyLinear]:
        """Draw new noise in the online and the target network; return their noisy layers (the
        target unwrapped: its wrapper would keep it in eval mode, without noise)."""
        networks = [self.policy.model]
        if isinstance(self.model_old, EvalModeModuleWrapper):
            networks.append(self.model_old.module)
        elif self.model_old is not None:
            networks.append(self.model_old)
        layers = [layer for net in networks for layer in noisy_layers(net)]
        for layer in layers:
            layer.sample()
        return layers

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Resample the noise of both networks, then compute C51's targets with it."""
        with _noise_enabled(self._resample_noise()):
            return super()._preprocess_batch(batch, buffer, indices)

    def _update_with_batch(self, batch: Batch) -> RainbowTrainingStats:
        """C51's gradient step, with the noise drawn for this update's targets."""
        stats = super()._update_with_batch(batch)
        return RainbowTrainingStats(loss=stats.loss)
