"""Tests of tianshou.data.batch: construction, access, indexing, joining, conversion, helpers."""

import copy
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from tianshou.data import Batch
from tianshou.data.batch import (
    BatchProtocol,
    ProtocolCalledException,
    alloc_by_keys_diff,
    create_value,
    dist_to_atleast_2d,
    get_len_of_dist,
    get_sliced_dist,
)

# ---------------------------------------------------------------------------------------------
# the examples of the 2.x concepts page, verbatim


def test_seed_example_construction_and_print() -> None:
    data = Batch(a=4, b=[5, 5], c="2312312", d=("a", -2, -3))
    assert repr(data.b) == "array([5, 5])"
    data.b = np.array([3, 4, 5])
    expected = (
        "Batch(\n"
        "    a: 4,\n"
        "    b: array([3, 4, 5]),\n"
        "    c: '2312312',\n"
        "    d: array(['a', '-2', '-3'], dtype=object),\n"
        ")"
    )
    assert str(data) == expected
    assert repr(data) == expected


def test_seed_example_nested_index_arithmetic_and_print() -> None:
    data = Batch(obs={"index": np.zeros((2, 3))}, act=torch.zeros((2, 2)))
    data[:, 1] += 6
    expected = (
        "Batch(\n"
        "    obs: Batch(\n"
        "             index: array([0., 6., 0.]),\n"
        "         ),\n"
        "    act: tensor([0., 6.]),\n"
        ")"
    )
    assert str(data[-1]) == expected
    assert np.array_equal(data.obs.index, [[0, 6, 0], [0, 6, 0]])
    assert torch.equal(data.act, torch.tensor([[0.0, 6.0], [0.0, 6.0]]))


# ---------------------------------------------------------------------------------------------
# construction and value parsing


def test_numbers_become_0d_arrays() -> None:
    b = Batch(i=4, f=1.5, flag=True, n=np.float32(2.0))
    for key, dtype in [("i", np.int64), ("f", np.float64), ("flag", np.bool_), ("n", np.float32)]:
        assert isinstance(b[key], np.ndarray) and b[key].ndim == 0
        assert b[key].dtype == dtype


def test_lists_and_tuples_become_arrays() -> None:
    b = Batch(ints=[1, 2], flags=[True, False], mixed=("a", -2, -3), empty=[], nested=[[1, 2]])
    assert b.ints.dtype == np.int64 and b.ints.tolist() == [1, 2]
    assert b.flags.dtype == np.bool_
    assert b.mixed.dtype == object and b.mixed.tolist() == ["a", "-2", "-3"]
    assert b.empty.shape == (0,)
    assert b.nested.shape == (1, 2)


def test_strings_and_objects() -> None:
    b = Batch(s="text", arr=np.array(["x", "y"]), objs=[None, None], fn=[len], cls=Batch)
    assert b.s == "text"
    assert b.arr.dtype == object and b.arr.tolist() == ["x", "y"]
    assert b.objs.dtype == object and b.objs.tolist() == [None, None]
    assert b.fn.dtype == object and b.fn[0] is len
    assert b.cls is Batch
    assert Batch(a={1, 2}).a == {1, 2}


def test_none_and_tensors_are_kept() -> None:
    tensor = torch.arange(3)
    array = np.arange(3.0)
    b = Batch(n=None, t=tensor, a=array)
    assert b.n is None
    assert b.t is tensor
    assert b.a is array  # numeric arrays are stored without a copy


def test_dicts_become_nested_batches() -> None:
    b = Batch(obs={"pos": [1.0, 2.0], "deep": {"x": 1}})
    assert isinstance(b.obs, Batch) and isinstance(b.obs.deep, Batch)
    assert b.obs.pos.tolist() == [1.0, 2.0]
    assert b.obs.deep.x.ndim == 0


def test_list_of_tensors_is_stacked() -> None:
    b = Batch(a=[torch.ones(3), torch.zeros(3)], t=(torch.ones(2), torch.ones(2)))
    assert b.a.shape == (2, 3) and torch.equal(b.a[0], torch.ones(3))
    assert b.t.shape == (2, 2)


def test_ragged_tensors_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"torch\.stack"):
        Batch(a=[torch.zeros(2), torch.zeros(3)])


def test_numpy_array_of_tensors_is_rejected() -> None:
    arr = np.empty(2, dtype=object)
    arr[0], arr[1] = torch.zeros(2), torch.zeros(2)
    with pytest.raises(TypeError, match="torch tensors"):
        Batch(a=arr)


def test_ragged_arrays_become_object_array() -> None:
    b = Batch(a=[np.zeros(2), np.zeros(3)], lists=[[1], [2, 3]])
    assert b.a.dtype == object and b.a.shape == (2,)
    assert b.a[1].shape == (3,)
    assert b.lists.dtype == object and b.lists[1] == [2, 3]


def test_mismatched_2d_arrays_are_rejected() -> None:
    with pytest.raises(TypeError, match="mismatched shapes"):
        Batch(a=[np.zeros((3, 2)), np.zeros((3, 3))])


def test_list_of_dicts_is_stacked() -> None:
    b = Batch([{"a": 1, "b": {"c": 2.0}}, {"a": 3, "b": {"c": 4.0}}])
    assert b.a.tolist() == [1, 3]
    assert b.b.c.tolist() == [2.0, 4.0]
    assert Batch(x=[{"y": 1}, {"y": 2}]).x.y.tolist() == [1, 2]


def test_list_of_batches_and_object_array_of_dicts_are_stacked() -> None:
    rows = [Batch(a=np.zeros(2)), Batch(a=np.ones(2))]
    assert Batch(rows).a.shape == (2, 2)
    b = Batch(np.array([{"a": False, "b": {"c": 2.0, "d": 1.0}}, {"a": True, "b": {"c": 3.0}}]))
    assert b.a.tolist() == [False, True]
    assert b.b.c.tolist() == [2.0, 3.0]
    assert b.b.d.tolist() == [1.0, 0.0]  # missing in the second row: padded with zero
    assert isinstance(Batch(info=np.array([{"id": 0}, {"id": 1}])).info, Batch)


def test_non_str_keys_raise_assertion_error() -> None:
    with pytest.raises(AssertionError, match="keys must be str"):
        Batch({1: 2})
    with pytest.raises(AssertionError, match="keys must be str"):
        Batch(a={(1, 2): 3})
    with pytest.raises(AssertionError, match="keys must be str"):
        Batch().update({0: 1})


def test_batch_dict_and_kwargs_combine() -> None:
    b = Batch({"a": 1, "b": 2}, b=3, c=4)
    assert (b.a, b.b, b.c) == (1, 3, 4)


def test_construction_from_batch_is_shallow() -> None:
    inner = Batch(x=np.zeros(2))
    original = Batch(a=np.arange(2), inner=inner)
    clone = Batch(original)
    assert clone is not original
    assert clone.a is original.a and clone.inner is inner


def test_copy_true_deep_copies_inputs() -> None:
    source = {"a": np.zeros(3), "n": {"t": torch.zeros(2)}}
    kw_array = np.ones(2)
    b = Batch(source, copy=True, k=kw_array)
    source["a"][0] = 5
    source["n"]["t"][0] = 5
    kw_array[0] = 5
    assert b.a[0] == 0 and b.n.t[0] == 0 and b.k[0] == 1


def test_unsupported_batch_dict_raises() -> None:
    with pytest.raises(TypeError, match="accepts a dict"):
        Batch(np.arange(3))
    with pytest.raises(TypeError, match="accepts a dict"):
        Batch([1, 2])
    assert Batch([]).is_empty() and Batch(()).is_empty()


def test_from_parsed_dict_skips_conversion() -> None:
    raw = [1, 2]
    b = Batch._from_parsed_dict({"a": raw})
    assert type(b) is Batch and b.a is raw
    assert Batch._from_parsed_dict({}).is_empty()


# ---------------------------------------------------------------------------------------------
# access


def test_attribute_and_item_access_are_equivalent() -> None:
    b = Batch(a=[1, 2])
    assert b.a is b["a"]
    b["c"] = [3.0]
    assert isinstance(b.c, np.ndarray) and b.c.dtype == np.float64
    b.d = {"e": 1}
    assert isinstance(b["d"], Batch)


def test_unknown_key_errors_name_the_key() -> None:
    b = Batch(a=1)
    with pytest.raises(AttributeError, match="'missing'"):
        _ = b.missing
    with pytest.raises(KeyError, match="missing"):
        _ = b["missing"]


def test_dict_like_methods() -> None:
    b = Batch(a=1, b=[2])
    assert "a" in b and "z" not in b
    assert list(b.keys()) == ["a", "b"] and list(b.get_keys()) == ["a", "b"]
    assert [k for k, _ in b.items()] == ["a", "b"]
    assert len(list(b.values())) == 2
    assert b.get("z") is None and b.get("z", 5) == 5 and b.get("a") == 1
    assert b.pop("z") is None and b.pop("z", 7) == 7
    assert b.pop("a") == 1 and "a" not in b
    del b["b"]
    assert b.is_empty()
    assert Batch(x=1).setdefault("y", 3) == 3  # remaining dict methods act on the storage


def test_update_parses_and_overrides() -> None:
    b = Batch(a=1)
    b.update()
    b.update({"a": 2, "s": {"x": [1]}}, a=3)
    assert b.a == 3 and isinstance(b.s, Batch)
    b.update(Batch(c=[1, 2]), d=4)
    assert b.c.tolist() == [1, 2] and b.d == 4


def test_to_dict_and_to_list_of_dicts() -> None:
    b = Batch(a=np.array([1, 2]), sub=Batch(x=np.array([3, 4])))
    flat = b.to_dict(recursive=False)
    assert isinstance(flat["sub"], Batch)
    deep = b.to_dict()
    assert isinstance(deep["sub"], dict) and deep["sub"]["x"].tolist() == [3, 4]
    assert isinstance(b.to_dict(recurse=False)["sub"], Batch)
    rows = b.to_list_of_dicts()
    assert rows == [{"a": 1, "sub": {"x": 3}}, {"a": 2, "sub": {"x": 4}}]


# ---------------------------------------------------------------------------------------------
# indexing


@pytest.fixture
def mixed() -> Batch:
    return Batch(
        x=np.arange(5),
        t=torch.arange(5.0),
        o=np.array(list("abcde"), dtype=object),
        n=None,
        e=Batch(),
        sub=Batch(y=np.arange(10).reshape(5, 2)),
    )


@pytest.mark.parametrize(
    "index",
    [
        slice(1, 3),
        np.array([4, 0, 0]),
        np.array([True, False, True, False, True]),
        [1, 2],
        torch.tensor([3, 1]),
        torch.tensor([True, True, False, False, False]),
        -1,
    ],
)
def test_indexing_selects_rows_of_every_leaf(mixed: Batch, index: Any) -> None:
    rows = np.arange(5)[index.numpy() if isinstance(index, torch.Tensor) else index]
    result = mixed[index]
    assert np.array_equal(result.x, rows)
    assert np.array_equal(result.t.numpy(), rows.astype(np.float32))
    assert np.array_equal(result.o, np.array(list("abcde"), dtype=object)[rows])
    assert np.array_equal(result.sub.y, np.arange(10).reshape(5, 2)[rows])
    assert result.n is None
    assert isinstance(result.e, Batch) and result.e.is_empty() and result.e is not mixed.e


def test_int_index_gives_scalar_leaves(mixed: Batch) -> None:
    row = mixed[2]
    assert isinstance(row.x, np.integer) and row.x == 2
    assert isinstance(row.t, torch.Tensor) and row.t.ndim == 0
    assert row.o == "c"
    assert row.shape == []
    with pytest.raises(TypeError, match="no len"):
        len(row)


def test_ellipsis_and_multi_dim_index() -> None:
    b = Batch(a=np.arange(6).reshape(2, 3), t=torch.arange(6).reshape(2, 3))
    assert np.array_equal(b[...].a, b.a)
    col = b[:, 1]
    assert col.a.tolist() == [1, 4] and col.t.tolist() == [1, 4]
    with pytest.raises(IndexError):
        b[:, :, 0]


def test_slicing_returns_views() -> None:
    b = Batch(a=np.zeros(4))
    b[1:3].a[:] = 1
    assert b.a.tolist() == [0, 1, 1, 0]


def test_index_errors() -> None:
    with pytest.raises(IndexError, match="empty Batch"):
        Batch()[0]
    with pytest.raises(IndexError):
        Batch(a=np.zeros(2))[5]


def test_distribution_leaves_are_sliced() -> None:
    probs = torch.softmax(torch.randn(4, 3), dim=-1)
    b = Batch(
        cat=Categorical(probs=probs),
        logit_cat=Categorical(logits=torch.randn(4, 3)),
        normal=Normal(torch.zeros(4, 2), torch.ones(4, 2)),
        ind=Independent(Normal(torch.arange(8.0).reshape(4, 2), torch.ones(4, 2)), 1),
    )
    assert len(b) == 4
    part = b[[0, 2]]
    assert torch.allclose(part.cat.probs, probs[[0, 2]])
    assert part.logit_cat.batch_shape == (2,)
    assert part.normal.batch_shape == (2, 2)
    assert isinstance(part.ind, Independent) and part.ind.batch_shape == (2,)
    assert torch.equal(part.ind.base_dist.loc, torch.tensor([[0.0, 1.0], [4.0, 5.0]]))


def test_get_sliced_dist_and_dist_to_atleast_2d() -> None:
    normal = Normal(torch.zeros(3), torch.ones(3))
    assert get_sliced_dist(normal, slice(0, 2)).batch_shape == (2,)
    bern = torch.distributions.Bernoulli(probs=torch.full((3,), 0.5))
    assert get_sliced_dist(bern, [0]).batch_shape == (1,)
    scalar = Categorical(probs=torch.tensor([0.2, 0.8]))
    lifted = dist_to_atleast_2d(scalar)
    assert lifted.batch_shape == (1,) and torch.allclose(lifted.probs[0], scalar.probs)
    assert dist_to_atleast_2d(normal) is normal
    ind = dist_to_atleast_2d(Independent(Normal(torch.zeros(2), torch.ones(2)), 1))
    assert ind.batch_shape == (1,) and ind.event_shape == (2,)


def test_set_rows_from_batch_or_dict() -> None:
    b = Batch(a=np.zeros(3), t=torch.zeros(3), sub=Batch(c=np.zeros((3, 2))))
    b[1] = {"a": 5, "t": 6, "sub": {"c": [1, 2]}}
    assert b.a.tolist() == [0, 5, 0] and b.t.tolist() == [0, 6, 0]
    assert b.sub.c[1].tolist() == [1, 2]
    b[[0, 2]] = Batch(a=[7, 8])
    assert b.a.tolist() == [7, 5, 8]


def test_set_rows_resets_keys_missing_in_value() -> None:
    b = Batch(a=np.ones(3), o=np.array(["x", "y", "z"], dtype=object), t=torch.ones(3))
    b.sub = Batch(c=np.ones(3))
    b.n = None
    b[0] = Batch(a=2)
    assert b.a.tolist() == [2, 1, 1]
    assert b.o.tolist() == [None, "y", "z"]
    assert b.t.tolist() == [0, 1, 1]
    assert b.sub.c.tolist() == [0, 1, 1]
    assert b.n is None


def test_set_rows_rejects_new_keys_and_non_batch_values() -> None:
    b = Batch(a=np.zeros(3))
    with pytest.raises(ValueError, match=r"cannot create keys \['new'\]"):
        b[0] = Batch(new=1)
    with pytest.raises(ValueError, match="Batch or dict"):
        b[0] = 1
    with pytest.raises(ValueError, match="holds None"):
        Batch(n=None)[0] = Batch(n=1)


# ---------------------------------------------------------------------------------------------
# size, shape, iteration


def test_len_is_min_over_leaves() -> None:
    b = Batch(a=np.zeros(4), t=torch.zeros(3), n=None, e=Batch(), sub=Batch(x=np.zeros(5)))
    assert len(b) == 3
    assert len(Batch()) == 0
    assert len(Batch(a=Batch(b=Batch()))) == 0
    assert len(Batch(a=[1, 2, 3], b={"c": {}})) == 3


def test_len_of_scalar_batch_raises() -> None:
    with pytest.raises(TypeError, match="'a' holds the scalar"):
        len(Batch(a=1, b=[1, 2]))
    with pytest.raises(TypeError):
        len(Batch(s="text"))
    with pytest.raises(TypeError):
        len(Batch(sub=Batch(x=1.0)))


def test_shape() -> None:
    assert Batch().shape == []
    assert Batch(a=1).shape == []
    assert Batch(a={1, 2}).shape == []
    assert Batch(a=np.zeros((3, 4))).shape == [3, 4]
    assert Batch(a=[[1, 2]], b={"c": np.zeros([3, 2, 1])}).shape == [1, 2]
    assert Batch(a=np.zeros((3, 4)), t=torch.zeros(2, 5, 6)).shape == [2, 4]


def test_iteration_yields_rows() -> None:
    b = Batch(a=np.array([[0.0, 2.0], [1.0, 3.0]]), b=[[5, -5], [6, -6]])
    rows = list(b)
    assert len(rows) == 2
    assert rows[1].a.tolist() == [1.0, 3.0] and rows[1].b.tolist() == [6, -6]
    assert list(Batch()) == []


def test_is_empty() -> None:
    assert Batch().is_empty() and Batch().is_empty(recurse=True)
    nested_empty = Batch(a=Batch(), b=Batch(c=Batch()))
    assert not nested_empty.is_empty() and nested_empty.is_empty(recurse=True)
    assert not Batch(d=1).is_empty(recurse=True)
    assert not Batch(a=np.float64(1.0)).is_empty()


# ---------------------------------------------------------------------------------------------
# arithmetic


def test_arithmetic_with_numbers_returns_new_batch() -> None:
    b = Batch(a=np.array([1.0, 2.0]), t=torch.tensor([1.0, 2.0]), s=Batch(x=np.array(3.0)))
    for result, expected in [
        (b + 1, [2.0, 3.0]),
        (1 + b, [2.0, 3.0]),
        (b - 1, [0.0, 1.0]),
        (b * 2, [2.0, 4.0]),
        (2 * b, [2.0, 4.0]),
        (b / 2, [0.5, 1.0]),
        (-b, [-1.0, -2.0]),
    ]:
        assert result.a.tolist() == expected and result.t.tolist() == expected
        assert isinstance(result.s.x, np.ndarray) and result.s.x.ndim == 0
    assert b.a.tolist() == [1.0, 2.0]  # untouched
    assert (b + 1.0).s.x == 4.0


def test_arithmetic_in_place_keeps_storage() -> None:
    array = np.array([1.0, 2.0])
    b = Batch(a=array, sub=Batch(x=np.array([4.0])))
    sub = b.sub
    b += 1
    b *= 2
    b -= 2
    b /= 4
    assert b.a is array and b.sub is sub
    assert array.tolist() == [0.5, 1.0] and sub.x.tolist() == [2.0]


def test_arithmetic_between_batches() -> None:
    left = Batch(a=np.array([1, 2]), sub=Batch(x=np.array([1.0])))
    right = Batch(a=np.array([10, 20]), sub=Batch(x=np.array([2.0])))
    total = left + right
    assert total.a.tolist() == [11, 22] and total.sub.x.tolist() == [3.0]
    assert sum([left, right]).a.tolist() == [11, 22]
    with pytest.raises(ValueError, match="same keys"):
        left + Batch(a=np.array([1, 2]))


def test_arithmetic_skips_none_and_empty_batches() -> None:
    b = Batch(a=np.array([1.0]), n=None, e=Batch(), d=Batch(f=Batch()))
    result = (b + 1.0) * 2
    assert result.a.tolist() == [4.0]
    assert result.n is None and result.e.is_empty() and result.d.f.is_empty()


def test_arithmetic_rejects_other_operands() -> None:
    b = Batch(a=np.array([1.0]))
    with pytest.raises(TypeError, match="list"):
        b += [1]  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _ = b * "x"


# ---------------------------------------------------------------------------------------------
# cat


def test_cat_nested_same_structure() -> None:
    a = Batch(x=np.zeros((2, 3)), t=torch.ones(2), sub=Batch(y=np.arange(2)))
    b = Batch(x=np.ones((3, 3)), t=torch.zeros(3), sub=Batch(y=np.arange(3)))
    c = Batch.cat([a, b])
    assert c.x.shape == (5, 3) and c.x[2:].sum() == 9
    assert torch.equal(c.t, torch.tensor([1.0, 1, 0, 0, 0]))
    assert c.sub.y.tolist() == [0, 1, 0, 1, 2]
    assert len(a) == 2  # inputs untouched


def test_cat_accepts_dicts_and_skips_empty_inputs() -> None:
    c = Batch.cat([{"a": [1, 2]}, Batch(), {}, Batch(a=Batch()), Batch(a=[3])])
    assert c.a.tolist() == [1, 2, 3]
    assert Batch.cat([]).is_empty()
    assert Batch.cat([Batch(), Batch(a=Batch())]).is_empty()


def test_cat_in_place() -> None:
    b = Batch(a=np.array([1]), s=Batch(x=np.array([[1.0]])))
    b.cat_(Batch(a=np.array([2]), s=Batch(x=np.array([[2.0]]))))
    b.cat_([b, b])
    assert b.a.tolist() == [1, 2, 1, 2, 1, 2]
    assert b.s.x.shape == (6, 1)
    empty = Batch()
    empty.cat_([Batch(a=[1])])
    assert empty.a.tolist() == [1]


def test_cat_pads_reserved_empty_sub_batches() -> None:
    a = Batch(a=Batch(a=np.random.randn(3, 4)), b=np.random.randn(3, 4))
    b = Batch(a=Batch(a=Batch(), t=Batch()), b=np.random.randn(3, 4))
    result = Batch.cat([a, b, a])
    assert np.allclose(result.a.a, np.concatenate([a.a.a, np.zeros((3, 4)), a.a.a]))
    assert np.allclose(result.b, np.concatenate([a.b, b.b, a.b]))
    assert result.a.t.is_empty()


def test_cat_in_place_pads_own_keys() -> None:
    target = Batch(a=np.ones(2), o=np.array(["x", "y"], dtype=object))
    target.cat_([Batch(a=np.ones(1), p=torch.ones(1))])
    assert target.a.tolist() == [1, 1, 1]
    assert target.o.tolist() == ["x", "y", None]
    assert target.p.tolist() == [0, 0, 1]


def test_cat_rejects_different_structures() -> None:
    b1 = Batch(a=np.random.rand(3, 4), common=Batch(c=np.random.rand(3, 5)))
    b2 = Batch(b=torch.rand(4, 3), common=Batch(c=np.random.rand(4, 5)))
    with pytest.raises(ValueError, match=r"same keys.*'a'"):
        Batch.cat([b1, b2])
    with pytest.raises(ValueError, match="'s' is a Batch in one"):
        Batch.cat([Batch(s=np.zeros(2)), Batch(s=Batch(x=np.zeros(2)))])


def test_cat_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="scalars"):
        Batch.cat([Batch(e=[4, 5], d=6), Batch(e=[4, 6], d=6)])
    with pytest.raises(ValueError, match="key 'a'"):
        Batch.cat([Batch(a=np.zeros((2, 3))), Batch(a=np.zeros((2, 4)))])
    with pytest.raises(ValueError, match="only Batch or dict"):
        Batch.cat([[Batch(a=1)], [Batch(a=1)]])  # type: ignore[list-item]


def test_cat_mixed_leaf_kinds_use_the_general_route() -> None:
    c = Batch.cat([Batch(a=np.zeros(2), n=None), Batch(a=torch.ones(1), n=None)])
    assert isinstance(c.a, np.ndarray) and c.a.tolist() == [0, 0, 1]
    assert c.n is None
    promoted = Batch.cat([Batch(a=np.zeros(1, np.int32)), Batch(a=np.ones(1, np.int64))])
    assert promoted.a.dtype == np.int64
    objects = Batch.cat([Batch(o=np.array([None], dtype=object)), Batch(o=np.array(["s"]))])
    assert objects.o.dtype == object and objects.o.tolist() == [None, "s"]


# ---------------------------------------------------------------------------------------------
# stack


def test_stack_same_structure() -> None:
    rows = [Batch(a=np.array([i, i]), t=torch.tensor(float(i)), s=Batch(x=i)) for i in range(3)]
    s = Batch.stack(rows)
    assert s.a.shape == (3, 2) and s.t.tolist() == [0.0, 1.0, 2.0]
    assert s.s.x.tolist() == [0, 1, 2]


def test_stack_axis() -> None:
    b3 = Batch(a=np.zeros((3, 4)), b=torch.ones((2, 5)), c=Batch(d=[[1], [2]]))
    b4 = Batch(a=np.ones((3, 4)), b=torch.ones((2, 5)), c=Batch(d=[[0], [3]]))
    s = Batch.stack((b3, b4), axis=1)
    assert np.array_equal(s.a, np.stack((b3.a, b4.a), axis=1))
    assert s.b.shape == (2, 2, 5)
    assert s.c.d.tolist() == [[[1], [0]], [[2], [3]]]


def test_stack_pads_partial_keys() -> None:
    a = Batch(a=1, b=2, c=3, d=Batch(), e=Batch())
    b = Batch(a=4, b=5, d=6, e=Batch())
    c = Batch(c=7, b=6, d=9, e=Batch())
    d = Batch.stack([a, b, c])
    assert d.a.tolist() == [1, 4, 0] and d.b.tolist() == [2, 5, 6]
    assert d.c.tolist() == [3, 0, 7] and d.d.tolist() == [0, 6, 9]
    assert d.e.is_empty()
    assert list(d.keys()) == ["a", "b", "c", "d", "e"]


def test_stack_pads_tensors_objects_and_none() -> None:
    b1 = Batch(a=np.random.rand(4, 4), common=Batch(c=np.random.rand(4, 5)))
    b2 = Batch(b=torch.rand(4, 6), common=Batch(c=np.random.rand(4, 5)))
    s = Batch.stack([b1, b2])
    assert np.array_equal(s.a, np.stack([b1.a, np.zeros((4, 4))]))
    assert torch.equal(s.b, torch.stack([torch.zeros(4, 6), b2.b]))
    done = Batch.stack((Batch(a=np.array([0.0, 2.0])), Batch(a=np.array([1.0, 3.0]), b="done")))
    assert done.b.tolist() == [None, "done"]
    nones = Batch.stack([Batch(a=None), Batch(b=None)])
    assert nones.a.tolist() == [None, None] and nones.b.tolist() == [None, None]


def test_stack_reserved_keys_allow_any_axis_but_partial_keys_do_not() -> None:
    b1 = Batch(a=Batch(), common=Batch(c=np.random.rand(4, 5)))
    b2 = Batch(b=Batch(), common=Batch(c=np.random.rand(4, 5)))
    s = Batch.stack([b1, b2], axis=-1)
    assert s.a.is_empty() and s.b.is_empty() and s.common.c.shape == (4, 5, 2)
    with pytest.raises(ValueError, match=r"axis=1.*'d'"):
        Batch.stack([Batch(e=[4, 5], d=6), Batch(e=[4, 6])], axis=1)


def test_stack_shape_mismatch_falls_back_to_object_array() -> None:
    with pytest.warns(UserWarning, match="different shapes"):
        s = Batch.stack([Batch(a=np.zeros(2)), Batch(a=np.zeros(3))])
    assert s.a.dtype == object and s.a[1].shape == (3,)
    with pytest.raises(ValueError, match="key 't'"):
        Batch.stack([Batch(t=torch.zeros(2)), Batch(t=torch.zeros(3))])


def test_stack_in_place_and_of_rows() -> None:
    b = Batch(a=[{"b": np.float64(1.0), "d": Batch(e=np.array(3.0))}])
    b.stack_([Batch(a=[{"b": np.float64(4.0), "d": {"e": np.array(6.0)}}])])
    assert b.a.d.e.shape == (2, 1)
    source = Batch(x=np.arange(6).reshape(3, 2), s=Batch(y=np.arange(3.0)))
    rebuilt = Batch.stack(list(source))  # rows hold numpy scalars
    assert rebuilt == source
    assert Batch.stack([]).is_empty() and Batch.stack([Batch(), {}]).is_empty()


# ---------------------------------------------------------------------------------------------
# empty, split


def test_empty_resets_values() -> None:
    data = Batch(a=np.ones((2, 2)), b=np.array(["x", "y"], dtype=object), t=torch.ones(2))
    data.n = None
    same = data.empty_()
    assert same is data
    assert data.a.sum() == 0 and data.b.tolist() == [None, None] and data.t.sum() == 0
    assert data.n is None


def test_empty_at_index_and_static_copy() -> None:
    data = Batch(a=[False, True], b={"c": [2.0, "st"], "d": [1.0, 0.0]})
    data[0] = Batch.empty(data[1])
    assert data.a.tolist() == [False, True]
    assert data.b.c.tolist() == [None, "st"]
    assert data.b.d.tolist() == [0.0, 0.0]
    original = Batch(x=np.ones(3))
    cleared = Batch.empty(original, index=[0, 2])
    assert cleared.x.tolist() == [0, 1, 0] and original.x.tolist() == [1, 1, 1]


def test_empty_of_scalar_leaves() -> None:
    b = Batch(a=np.array(3.0), s="text")
    b.__dict__["py"] = 5
    b.empty_()
    assert b.a == 0 and b.s is None and b.py == 0


@pytest.mark.parametrize(
    ("size", "merge_last", "lengths"),
    [
        (1, False, [1] * 10),
        (3, False, [3, 3, 3, 1]),
        (3, True, [3, 3, 4]),
        (4, True, [4, 6]),
        (5, True, [5, 5]),
        (10, False, [10]),
        (11, True, [10]),
        (-1, False, [10]),
    ],
)
def test_split_sizes(size: int, merge_last: bool, lengths: list[int]) -> None:
    b = Batch(a=np.arange(10))
    parts = list(b.split(size, shuffle=False, merge_last=merge_last))
    assert [len(p) for p in parts] == lengths
    assert np.concatenate([p.a for p in parts]).tolist() == list(range(10))


def test_split_shuffle_covers_every_row_once() -> None:
    b = Batch(a=np.arange(20), s=Batch(x=np.arange(20) * 2))
    parts = list(b.split(6, shuffle=True))
    values = np.concatenate([p.a for p in parts])
    assert sorted(values.tolist()) == list(range(20))
    assert all(np.array_equal(p.s.x, p.a * 2) for p in parts)


def test_split_rejects_bad_size() -> None:
    with pytest.raises(AssertionError, match="split size"):
        list(Batch(a=np.arange(3)).split(0))
    assert list(Batch().split(2)) == []


# ---------------------------------------------------------------------------------------------
# conversion


def test_to_numpy_copy_and_in_place() -> None:
    b = Batch(t=torch.ones(2), s=Batch(u=torch.zeros(1, requires_grad=True)), a=np.ones(1))
    converted = b.to_numpy()
    assert isinstance(converted.t, np.ndarray) and isinstance(converted.s.u, np.ndarray)
    assert isinstance(b.t, torch.Tensor)  # original untouched
    converted.a[0] = 7
    assert b.a[0] == 1  # deep copy
    b.to_numpy_()
    assert isinstance(b.t, np.ndarray) and isinstance(b.s.u, np.ndarray)


def test_to_torch_dtypes_and_in_place() -> None:
    b = Batch(
        a=np.float64(1.0),
        b=Batch(c=np.ones((1,), dtype=np.float32), d=torch.ones((1,), dtype=torch.float64)),
        o=np.array(["x"], dtype=object),
        n=None,
    )
    b.b.__dict__["e"] = 1  # bypass parsing: a raw Python int
    copied = b.to_torch(dtype=torch.float32)
    assert copied.b.c.dtype == copied.b.d.dtype == torch.float32
    assert copied.a.dtype == torch.float64  # a scalar leaf keeps its own precision
    assert isinstance(b.a, np.ndarray)
    b.to_torch_()
    assert b.a.dtype == torch.float64 and b.b.c.dtype == torch.float32
    assert b.b.d.dtype == torch.float64 and b.b.e.dtype == torch.int64
    assert b.o.dtype == object and b.n is None  # no tensor form: left as they are
    b.to_torch_(dtype=torch.float32, device="cpu")
    assert b.b.e.dtype == torch.float32 and b.b.e.device.type == "cpu"


def test_apply_values_transform() -> None:
    b = Batch(a=np.array([1, 2]), n=None, s=Batch(x=np.array([3])))
    seen: list[Any] = []

    def double(value: Any) -> Any:
        seen.append(value)
        return None if value is None else value * 2

    doubled = b.apply_values_transform(double)
    assert doubled is not None and doubled.a.tolist() == [2, 4] and doubled.s.x.tolist() == [6]
    assert b.a.tolist() == [1, 2] and any(v is None for v in seen)
    listed = b.apply_values_transform(lambda v: [0, 0] if v is not None else None)
    assert listed is not None and isinstance(listed.a, np.ndarray)  # results are parsed
    sub = b.s
    assert b.apply_values_transform(double, inplace=True) is None
    assert b.a.tolist() == [2, 4] and b.s is sub and sub.x.tolist() == [6]


def test_to_at_least_2d() -> None:
    b = Batch(
        a=np.arange(3), t=torch.arange(2), s=Batch(x=np.array(1.0)), n=None,
        d=Categorical(probs=torch.tensor([0.5, 0.5])),
    )  # fmt: skip
    r = b.to_at_least_2d()
    assert r.a.shape == (1, 3) and r.t.shape == (1, 2) and r.s.x.shape == (1, 1)
    assert r.n is None and r.d.batch_shape == (1,)
    assert b.a.shape == (3,)


def test_set_array_at_key() -> None:
    b = Batch(a=np.arange(4))
    b.set_array_at_key(np.array([1.0, 2.0]), "new", index=[1, 3], default_value=-1.0)
    assert b.new.tolist() == [-1.0, 1.0, -1.0, 2.0]
    b.set_array_at_key(np.array([9, 9]), "a", index=[0, 1])
    assert b.a.tolist() == [9, 9, 2, 3]
    b.set_array_at_key(np.zeros(4), "whole")
    assert b.whole.tolist() == [0.0] * 4
    nan_filled = Batch(a=np.arange(2))
    nan_filled.set_array_at_key(np.array([1.0]), "f", index=[0])
    assert np.isnan(nan_filled.f[1])
    with pytest.raises(TypeError, match="default_value"):
        b.set_array_at_key(np.array([1]), "ints", index=[0])


def test_set_array_at_key_refuses_an_array_of_another_length() -> None:
    b = Batch(a=np.arange(3))
    for wrong in (np.zeros(2), np.zeros(4)):
        with pytest.raises(ValueError, match="length"):
            b.set_array_at_key(wrong, "x")
    assert "x" not in b
    b.set_array_at_key(arr=np.ones(3), key="x")  # the published keyword name
    assert b.x.tolist() == [1.0, 1.0, 1.0]


def test_set_array_at_key_creates_rows_shaped_like_the_array() -> None:
    b = Batch(a=np.arange(3))
    b.set_array_at_key(np.ones((1, 2)), "m", index=[1], default_value=0.0)
    assert b.m.shape == (3, 2)
    assert b.m.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]


def test_dropnull_of_nested_batches_with_none() -> None:
    # None inside a nested object array drops that row only
    b = Batch(a=[4.0, 5.0, 6.0], s=Batch(c=[None, 1, 2], d=Batch(e=[1.0, 2.0, np.nan])))
    kept = b.dropnull()
    assert kept.a.tolist() == [5.0] and kept.s.c.tolist() == [1] and kept.s.d.e.tolist() == [2.0]
    # rows stacked from dicts whose nested value is None
    rows = Batch([{"a": 1, "s": {"c": None}}, {"a": 2, "s": {"c": 3}}])
    assert rows.dropnull().a.tolist() == [2]
    # a nested key that is None as a whole is null in every row; empty sub-Batches are not null
    whole = Batch(a=[1.0, 2.0], s=Batch(c=None, e=Batch()))
    dropped = whole.dropnull()
    assert len(dropped.a) == 0 and dropped.s.c is None and dropped.s.e.is_empty()
    assert Batch(a=[1.0, 2.0], s=Batch(e=Batch())).dropnull() == Batch(
        a=[1.0, 2.0], s=Batch(e=Batch())
    )


def test_dropnull_gives_kept_object_columns_the_dtype_of_their_values() -> None:
    b = Batch(
        i=[1, None, 3],
        f=[0.5, np.nan, 2.5],
        flag=[True, None, False],
        name=["a", "b", "c"],
        ragged=[np.zeros(1), np.zeros(2), np.zeros(3)],
        s=Batch(v=[[1, 2], None, [5, 6]], w=[None, 2.5, 3.5]),
    )
    assert b.i.dtype == object and b.flag.dtype == object and b.s.w.dtype == object
    kept = b.dropnull()  # only row 2 has no None or NaN
    assert kept.i.dtype == np.int64 and kept.i.tolist() == [3]
    assert kept.f.dtype == np.float64 and kept.f.tolist() == [2.5]
    assert kept.flag.dtype == np.bool_ and kept.flag.tolist() == [False]
    assert kept.s.v.dtype == np.int64 and kept.s.v.tolist() == [[5, 6]]
    assert kept.s.w.dtype == np.float64 and kept.s.w.tolist() == [3.5]
    assert kept.name.dtype == object and kept.name.tolist() == ["c"]  # strings stay objects
    assert kept.ragged.dtype == np.float64 and kept.ragged.shape == (1, 3)
    assert b.i.dtype == object  # the source is not modified
    pair = Batch(i=[1, None, 3], ragged=[np.zeros(1), np.zeros(2), np.zeros(3)]).dropnull()
    assert pair.i.dtype == np.int64 and pair.i.tolist() == [1, 3]
    assert pair.ragged.dtype == object and [len(r) for r in pair.ragged] == [1, 3]  # still ragged
    mixed = Batch(m=[np.zeros((2, 3)), None, np.zeros((2, 4))]).dropnull()
    assert mixed.m.dtype == object and len(mixed.m) == 2  # no common shape: stays an object array


def test_dropnull_when_a_nested_leaf_is_longer_than_the_batch() -> None:
    b = Batch(a=[1.0, np.nan, 3.0], s=Batch(c=np.arange(4)))
    assert len(b) == 3
    kept = b.dropnull()
    assert kept.a.tolist() == [1.0, 3.0] and kept.s.c.tolist() == [0, 2]


def test_distribution_length() -> None:
    assert get_len_of_dist(Categorical(logits=torch.zeros(5, 3))) == 5
    assert len(Batch(d=Normal(torch.zeros(4), torch.ones(4)))) == 4
    with pytest.raises(TypeError, match="no length"):
        get_len_of_dist(Categorical(logits=torch.zeros(3)))


def test_protocol_static_methods_are_not_callable() -> None:
    for call in (
        lambda: BatchProtocol.cat([Batch(a=[1])]),
        lambda: BatchProtocol.stack([Batch(a=1)]),
        lambda: BatchProtocol.empty(Batch(a=[1])),
    ):
        with pytest.raises(ProtocolCalledException):
            call()
    assert isinstance(Batch(), BatchProtocol)
    assert Batch(a=[1, 2]).to_dict(recurse=False)["a"].tolist() == [1, 2]


def test_null_handling() -> None:
    b = Batch(a=[None, 2, 3, 4], b=[4.0, 5.0, np.nan, 7.0], s=Batch(t=torch.zeros(4)))
    mask = b.isnull()
    assert mask.a.tolist() == [True, False, False, False]
    assert mask.b.tolist() == [False, False, True, False]
    assert not mask.s.t.any()
    assert b.hasnull()
    dropped = b.dropnull()
    assert dropped.a.tolist() == [2, 4] and dropped.b.tolist() == [5.0, 7.0]
    assert dropped.s.t.shape == (2,)
    assert not dropped.hasnull()
    assert not Batch(a=np.arange(3), n=np.zeros((3, 2))).hasnull()
    assert Batch(a=np.arange(2), n=None).hasnull()


def test_replace_empty_batches_by_none() -> None:
    b = Batch(a=Batch(), s=Batch(x=Batch(), y=np.zeros(1)))
    b.replace_empty_batches_by_none()
    assert b.a is None and b.s.x is None and b.s.y.shape == (1,)


# ---------------------------------------------------------------------------------------------
# equality, printing, pickling, copying


def test_equality_is_structural() -> None:
    left = Batch(a=np.array([1.0, np.nan]), t=torch.tensor([1, 2]), s=Batch(x="q"), n=None)
    right = Batch(a=np.array([1.0, np.nan]), t=np.array([1, 2]), s=Batch(x="q"), n=None)
    assert left == right
    assert not left.__ne__(right)
    assert left != Batch(a=np.array([1.0, 2.0]), t=torch.tensor([1, 2]), s=Batch(x="q"), n=None)
    assert Batch(a=np.array([1])) != Batch(a=np.array([1.0]))  # dtype differs
    assert Batch(a=np.array([1])) != Batch(b=np.array([1]))
    assert Batch(a=np.array([1, 2])) != Batch(a=np.array([1, 2, 3]))
    assert Batch(s=Batch()) != Batch(s=None)
    assert Batch(o=np.array([None, "x"], dtype=object)) == Batch(o=[None, "x"])
    assert Batch(o=[np.zeros(2), np.ones(3)]) == Batch(o=[np.zeros(2), np.ones(3)])
    assert Batch(a=1) != {"a": 1}
    assert Batch() == Batch()


def test_batch_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Batch())


def test_repr_formats() -> None:
    assert repr(Batch()) == "Batch()"
    b = Batch(f=1.5, flag=True, a=np.array([[0.0, 3.0], [1.0, 4.0]]), n=None, e=Batch())
    assert str(b) == (
        "Batch(\n"
        "    f: 1.5,\n"
        "    flag: True,\n"
        "    a: array([[0., 3.],\n"
        "              [1., 4.]]),\n"
        "    n: None,\n"
        "    e: Batch(),\n"
        ")"
    )
    nested = Batch(outer=Batch(inner=Batch(x=np.array([1, 2]))))
    assert str(nested) == (
        "Batch(\n"
        "    outer: Batch(\n"
        "               inner: Batch(\n"
        "                          x: array([1, 2]),\n"
        "                      ),\n"
        "           ),\n"
        ")"
    )


def test_pickle_round_trip() -> None:
    b = Batch(
        {"copy": np.zeros(1), "batch_dict": np.ones(1)},  # keys named like Batch() arguments
        a=np.arange(3), t=torch.ones(2), s=Batch(x="text", e=Batch()), n=None,
        o=np.array([None, 1], dtype=object),
    )  # fmt: skip
    restored = pickle.loads(pickle.dumps(b))
    assert restored == b
    assert restored["copy"].tolist() == [0.0] and restored["batch_dict"].tolist() == [1.0]
    assert isinstance(restored.s, Batch) and restored.s.e.is_empty()
    assert isinstance(b.__getstate__()["s"], dict)


def test_deepcopy_and_copy() -> None:
    b = Batch(a=np.zeros(2), t=torch.zeros(2), s=Batch(x=np.zeros(1)))
    deep = copy.deepcopy(b)
    deep.a[0], deep.t[0], deep.s.x[0] = 1, 1, 1
    assert b.a[0] == 0 and b.t[0] == 0 and b.s.x[0] == 0
    shallow = copy.copy(b)
    assert shallow == b and shallow.a is b.a


# ---------------------------------------------------------------------------------------------
# allocation helpers


def test_create_value_shapes_and_fill() -> None:
    assert create_value(np.ones((2, 3), np.float32), 4).shape == (4, 2, 3)
    assert create_value(np.ones((2, 3), np.float32), 4).dtype == np.float32
    assert create_value(np.ones((2, 3)), 4, stack=False).shape == (4, 3)
    assert create_value(np.ones((2, 3)), 4).sum() == 0
    tensor = create_value(torch.ones(2, dtype=torch.int32), 3)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (3, 2)
    assert tensor.dtype == torch.int32
    objects = create_value(np.array(["a"], dtype=object), 2)
    assert objects.dtype == object and objects.tolist() == [[None], [None]]
    assert create_value(None, 3).tolist() == [None] * 3
    assert create_value("text", 2).tolist() == [None, None]
    assert create_value(1.5, 2).dtype == np.float64
    nested = create_value(Batch(x=np.ones(2), e=Batch()), 5)
    assert isinstance(nested, Batch) and nested.x.shape == (5, 2) and nested.e.is_empty()
    from_dict = create_value({"y": np.ones(1, bool)}, 2)
    assert isinstance(from_dict, Batch) and from_dict.y.dtype == np.bool_
    with pytest.raises(TypeError, match="scalar"):
        create_value(np.array(1.0), 3, stack=False)


def test_alloc_by_keys_diff() -> None:
    meta = Batch(a=np.zeros(10), reserved=Batch(), s=Batch(x=np.zeros(10)))
    kept = meta.a
    incoming = Batch(
        a=np.ones(1), new=np.ones(3), reserved=np.ones(2, np.int8), s=Batch(y=np.ones(4))
    )
    alloc_by_keys_diff(meta, incoming, 10)
    assert meta.a is kept
    assert meta.new.shape == (10, 3)
    assert meta.reserved.shape == (10, 2) and meta.reserved.dtype == np.int8
    assert meta.s.y.shape == (10, 4) and meta.s.x.shape == (10,)
    concat_meta = Batch()
    alloc_by_keys_diff(concat_meta, Batch(a=np.ones((3, 2))), 8, stack=False)
    assert concat_meta.a.shape == (8, 2)


def test_batch_implements_the_whole_protocol() -> None:
    assert isinstance(Batch(), BatchProtocol)
    declared = [
        name
        for name, member in vars(BatchProtocol).items()
        if name not in ("__dict__", "__weakref__")
        and getattr(getattr(member, "fget", member), "__qualname__", "").startswith(
            "BatchProtocol."
        )
    ]
    assert len(declared) > 30
    assert [name for name in declared if name not in vars(Batch)] == []


def test_to_torch_leaves_shared_sub_batches_untouched() -> None:
    shared = Batch(x=np.zeros(2))
    b = Batch(s=shared)
    copied = b.to_torch()
    assert isinstance(copied.s.x, torch.Tensor) and isinstance(shared.x, np.ndarray)


def test_keys_shadowing_method_names_do_not_break_operations() -> None:
    names = ["keys", "values", "items", "is_empty", "to_dict", "update", "split", "empty"]
    inner = Batch({name: np.arange(2) for name in names})
    b = Batch(sub=inner, values=np.ones(2))
    assert len(b) == 2 and b.values.tolist() == [1.0, 1.0]
    assert Batch.cat([b, b]).sub.keys.tolist() == [0, 1, 0, 1]
    assert Batch.stack([b, b]).sub.items.shape == (2, 2)
    assert b.to_dict()["sub"]["is_empty"].tolist() == [0, 1]
    assert b.to_torch().to_numpy() == b
    assert b[1].sub["split"] == 1 and "split" in repr(b)
    generator = (row for row in [b, b])
    assert Batch.cat(generator).values.shape == (4,)  # type: ignore[arg-type]


def test_warning_free_common_paths() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = [Batch(a=np.zeros(2), s=Batch(b=1)) for _ in range(3)]
        stacked = Batch.stack(rows)
        Batch.cat([stacked, stacked])
        stacked[np.array([0, 2])]


def test_docstring_examples() -> None:
    import doctest

    import tianshou.data.batch

    failures, attempted = doctest.testmod(tianshou.data.batch)
    assert attempted > 0 and failures == 0
