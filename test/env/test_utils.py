"""The env layer's small shared pieces."""

import pickle

from tianshou.env.utils import CloudpickleWrapper


def test_cloudpickle_wrapper_carries_a_closure_through_pickle() -> None:
    offset = 3
    wrapped = CloudpickleWrapper(lambda x: x + offset)
    restored = pickle.loads(pickle.dumps(wrapped))
    assert restored.data(4) == 7
