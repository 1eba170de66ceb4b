"""The collectors' row helpers and staging (tianshou/data/_rollout.py): every input kind a vector
env or policy produces, and that no helper writes into its input."""

import numpy as np
import pytest
import torch

from tianshou.data import Batch
from tianshou.data._rollout import (
    RolloutStaging,
    Transitions,
    as_obs,
    concat_rows,
    dicts_to_batch,
    env_ids_of,
    info_to_batch,
    nbytes,
    put_rows,
    replace_rows,
    stack_rows,
    take_rows,
    take_state_rows,
    zero_rows,
)


# ------------------------------------------------------------------ dicts and infos
def test_uniform_numeric_dicts_are_stacked_per_key() -> None:
    batch = dicts_to_batch(np.array([{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}]))
    np.testing.assert_array_equal(batch.a, [1, 2])
    np.testing.assert_array_equal(batch.b, [[1.0, 2.0], [3.0, 4.0]])
    assert len(dicts_to_batch([])) == 0


@pytest.mark.filterwarnings("ignore:Batch.stack:UserWarning")  # the ragged rows
@pytest.mark.parametrize(
    "rows",
    [
        [{"a": 1}, {"b": 2}],  # differing keys
        [{"a": {"x": 1}}, {"a": {"x": 2}}],  # nested dicts
        [{"a": "left"}, {"a": "right"}],  # strings
        [{"a": [1.0]}, {"a": [1.0, 2.0]}],  # ragged values
        [{"a": 1}, {"a": 1, "b": 2}],  # differing sizes
    ],
)
def test_irregular_dicts_fall_back_to_the_generic_constructor(rows: list[dict]) -> None:
    batch = dicts_to_batch(rows)
    expected = Batch(rows)
    assert batch.keys() == expected.keys()
    assert len(batch) == 2


def test_info_in_every_form_becomes_a_batch() -> None:
    info = Batch(env_id=np.arange(2))
    assert info_to_batch(info) is info
    np.testing.assert_array_equal(info_to_batch({"env_id": np.arange(2)}).env_id, [0, 1])
    np.testing.assert_array_equal(info_to_batch(np.array([{"t": 1}, {"t": 2}])).t, [1, 2])


def test_env_ids_are_read_from_every_info_form() -> None:
    np.testing.assert_array_equal(env_ids_of({"env_id": [2, 0]}), [2, 0])
    np.testing.assert_array_equal(env_ids_of(np.array([{"env_id": 1}, {"env_id": 3}])), [1, 3])


def test_observations_become_what_a_batch_stores() -> None:
    numeric = np.zeros((2, 3))
    assert as_obs(numeric) is numeric
    dict_rows = np.empty(2, dtype=object)
    dict_rows[:] = [{"x": 1.0}, {"x": 2.0}]
    np.testing.assert_array_equal(as_obs(dict_rows).x, [1.0, 2.0])
    np.testing.assert_array_equal(as_obs({"x": np.ones(2)}).x, [1.0, 1.0])
    batch = Batch(x=np.ones(2))
    assert as_obs(batch) is batch


# ------------------------------------------------------------------ joining and selecting rows
def test_concat_rows_joins_every_kind_along_the_first_axis() -> None:
    np.testing.assert_array_equal(concat_rows([np.ones(2), np.zeros(1)]), [1, 1, 0])
    assert torch.equal(concat_rows([torch.ones(1), torch.zeros(1)]), torch.tensor([1.0, 0.0]))
    joined = concat_rows([Batch(a=np.ones(1)), Batch(a=np.zeros(1))])
    np.testing.assert_array_equal(joined.a, [1, 0])
    same_keys = concat_rows([{"a": np.ones(1)}, {"a": np.zeros(1)}])
    np.testing.assert_array_equal(same_keys["a"], [1, 0])
    with pytest.raises(ValueError, match=r"keys \['a'\] and \['b'\]"):
        concat_rows([{"a": np.ones(1)}, {"b": np.zeros(1)}])
    single = np.ones(3)
    assert concat_rows([single]) is single
    with pytest.raises(TypeError, match="str"):
        concat_rows(["a", "b"])


@pytest.mark.parametrize(
    "parts",
    [
        [np.ones(1), torch.ones(1)],
        [torch.ones(1), np.ones(1)],
        [Batch(a=np.ones(1)), {"a": np.ones(1)}],
        [{"a": np.ones(1)}, Batch(a=np.ones(1))],
    ],
)
def test_concat_rows_refuses_parts_of_different_kinds(parts: list) -> None:
    with pytest.raises(TypeError, match="types"):
        concat_rows(parts)


def test_concat_rows_keeps_ragged_observations_per_row() -> None:
    ragged = np.empty(2, dtype=object)
    ragged[:] = [np.arange(1), np.arange(2)]
    joined = concat_rows([ragged, np.ones((1, 3))])
    assert joined.dtype == object and len(joined) == 3
    np.testing.assert_array_equal(joined[2], np.ones(3))


def test_take_rows_selects_from_every_kind() -> None:
    index = np.array([1])
    assert take_state_rows(None, index) is None  # a stateless policy's state
    np.testing.assert_array_equal(take_state_rows(np.arange(3), index), [1])
    np.testing.assert_array_equal(take_rows({"a": np.arange(3)}, index)["a"], [1])
    assert torch.equal(take_rows(torch.arange(3), index), torch.tensor([1]))


def test_replace_rows_returns_copies_and_leaves_inputs_untouched() -> None:
    index = np.array([0])
    values = np.zeros((2, 2))
    out = replace_rows(values, index, np.ones((1, 2)))
    np.testing.assert_array_equal(out, [[1, 1], [0, 0]])
    assert not values.any()
    batch = Batch(a=np.zeros(2))
    np.testing.assert_array_equal(replace_rows(batch, index, Batch(a=np.ones(1))).a, [1, 0])
    assert not batch.a.any()
    infos = {"a": np.zeros(2), "only_step": np.zeros(2)}
    replaced = replace_rows(infos, index, {"a": np.ones(1)})
    np.testing.assert_array_equal(replaced["a"], [1, 0])
    assert replaced["only_step"] is infos["only_step"]
    tensor = torch.zeros(2)
    assert torch.equal(replace_rows(tensor, index, [5.0]), torch.tensor([5.0, 0.0]))
    assert not tensor.any()


def test_replace_rows_of_a_batch_or_dict_need_new_rows_by_key() -> None:
    with pytest.raises(TypeError, match="Batch or dict"):
        replace_rows(Batch(a=np.zeros(2)), np.array([0]), np.ones(1))
    with pytest.raises(TypeError, match="Batch or dict"):
        replace_rows({"a": np.zeros(2)}, np.array([0]), np.ones(1))


def test_replace_rows_of_another_shape_become_object_rows() -> None:
    out = replace_rows(np.zeros((2, 2)), np.array([1]), np.ones((1, 3)))
    assert out.dtype == object
    np.testing.assert_array_equal(out[1], np.ones(3))
    np.testing.assert_array_equal(out[0], np.zeros(2))


def test_zero_rows_clears_hidden_states_of_every_kind() -> None:
    index = np.array([1])
    assert zero_rows(None, index) is None
    state = torch.ones(2, 2)
    assert torch.equal(zero_rows(state, index), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    assert state.all()
    nested = zero_rows({"h": np.ones(2)}, index)
    np.testing.assert_array_equal(nested["h"], [1, 0])
    np.testing.assert_array_equal(zero_rows(Batch(h=np.ones(2)), index).h, [1, 0])
    objects = np.array([object(), object()], dtype=object)
    assert zero_rows(objects, index)[1] is None


def test_put_rows_creates_a_missing_state_with_zero_rows() -> None:
    new = np.ones((1, 2))
    np.testing.assert_array_equal(put_rows(None, np.array([1]), new, 3), [[0, 0], [1, 1], [0, 0]])
    assert put_rows(None, np.array([0]), new, 1) is new


def test_stack_rows_stacks_every_kind() -> None:
    assert stack_rows([np.ones(2), np.zeros(2)]).shape == (2, 2)
    assert stack_rows([torch.ones(2), torch.zeros(2)]).shape == (2, 2)
    np.testing.assert_array_equal(stack_rows([Batch(a=1), Batch(a=2)]).a, [1, 2])
    np.testing.assert_array_equal(stack_rows([np.int64(3), np.int64(4)]), [3, 4])
    # rows of the object array of Tuple/Dict space actions
    np.testing.assert_array_equal(stack_rows([(1, 2), (3, 4)]), [[1, 2], [3, 4]])
    dicts = stack_rows([{"a": 1}, {"a": 2}])
    assert dicts.dtype == object and dicts[1] == {"a": 2}
    with pytest.raises(TypeError, match="different types"):
        stack_rows([torch.ones(2), np.ones(2)])


def test_nbytes_counts_array_memory_only() -> None:
    assert nbytes(np.zeros(4, dtype=np.float32)) == 16
    assert nbytes(np.empty(4, dtype=object)) == 0
    assert nbytes(torch.zeros(2, dtype=torch.float64)) == 16
    assert nbytes(Batch(a=np.zeros(2, dtype=np.int8), b=Batch(c=np.zeros(1)))) == 10
    assert nbytes("text") == 0


# ------------------------------------------------------------------ staging
def stage_step(staging: RolloutStaging, t: float, env_ids: np.ndarray) -> None:
    n = len(env_ids)
    obs = np.full((n, 1), t)
    staging.stage(
        Transitions(
            obs=obs,
            act=np.zeros(n, dtype=np.int64),
            obs_next=obs + 1,
            rew=np.ones(n),
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            info=np.array([{"t": t}] * n),
            policy=None,
            env_ids=env_ids,
        )
    )


def test_staging_joins_steps_into_one_batch_with_env_ids() -> None:
    staging = RolloutStaging()
    assert staging.take() is None
    ids = np.arange(2)
    stage_step(staging, 0.0, ids)
    stage_step(staging, 1.0, ids)
    taken = staging.take()
    assert taken is not None and staging.steps == 0
    batch, env_ids = taken
    np.testing.assert_array_equal(env_ids, [0, 1, 0, 1])
    np.testing.assert_array_equal(batch.obs[:, 0], [0, 0, 1, 1])
    np.testing.assert_array_equal(batch.obs_next[:, 0], [1, 1, 2, 2])
    assert not batch.done.any() and len(batch.policy) == 0


def test_staging_of_changing_env_sets_and_an_action_transform() -> None:
    staging = RolloutStaging()
    staging.act_transform = lambda act: act + 10
    stage_step(staging, 0.0, np.arange(3))
    stage_step(staging, 1.0, np.array([2]))
    taken = staging.take()
    assert taken is not None
    batch, env_ids = taken
    np.testing.assert_array_equal(env_ids, [0, 1, 2, 2])
    np.testing.assert_array_equal(batch.act, [10, 10, 10, 10])
