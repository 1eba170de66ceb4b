"""Tests of tianshou/algorithm/modelfree/_stored_state.py: the stored form of recurrent states."""

import numpy as np
import torch

from tianshou.algorithm.modelfree._stored_state import numpy_state
from tianshou.data import Batch


def test_nested_state_becomes_a_batch_of_arrays_with_the_same_values() -> None:
    actor = {"hidden": torch.randn(3, 1, 4), "cell": torch.randn(3, 1, 4)}
    critic = Batch(hidden=torch.randn(3, 1, 4))
    stored = numpy_state({"actor": actor, "critic": critic, "extra": np.arange(3)})
    assert isinstance(stored, Batch)
    assert isinstance(stored.actor, Batch) and isinstance(stored.critic, Batch)
    assert list(stored.keys()) == ["actor", "critic", "extra"]
    assert list(stored.actor.keys()) == ["hidden", "cell"]
    for key in ("hidden", "cell"):
        assert isinstance(stored.actor[key], np.ndarray)
        np.testing.assert_array_equal(stored.actor[key], actor[key].numpy())
    np.testing.assert_array_equal(stored.critic.hidden, critic.hidden.numpy())
    np.testing.assert_array_equal(stored.extra, np.arange(3))
    # the same as the generic conversion
    expected = Batch({"actor": actor, "critic": critic, "extra": np.arange(3)}).to_numpy()
    assert stored == expected


def test_tensors_that_require_grad_are_converted_detached() -> None:
    hidden = torch.randn(2, 1, 3, requires_grad=True)
    stored = numpy_state({"hidden": hidden * 2})
    np.testing.assert_allclose(stored.hidden, (hidden * 2).detach().numpy())
