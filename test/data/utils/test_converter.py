"""Tests of tianshou.data.utils.converter: numpy/torch conversion and the HDF5 round trip."""

import pickle
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from tianshou.data import Batch, from_hdf5, to_hdf5, to_numpy, to_torch, to_torch_as

# ---------------------------------------------------------------------------------------------
# to_numpy


def test_to_numpy_of_tensors_arrays_and_scalars() -> None:
    tensor = torch.arange(3.0, requires_grad=True)
    converted = to_numpy(tensor)
    assert isinstance(converted, np.ndarray) and converted.tolist() == [0.0, 1.0, 2.0]
    array = np.zeros(2)
    assert to_numpy(array) is array
    assert isinstance(to_numpy(1), np.ndarray) and to_numpy(1).ndim == 0
    assert to_numpy(1.5).dtype == np.float64
    assert to_numpy(None).item() is None
    assert to_numpy(to_numpy).item() is to_numpy


def test_to_numpy_of_containers() -> None:
    converted = to_numpy({"a": torch.tensor(1), "b": {"c": torch.zeros(2)}})
    assert isinstance(converted, Batch)
    assert isinstance(converted["a"], np.ndarray) and isinstance(converted.b.c, np.ndarray)
    original = Batch(t=torch.ones(2))
    copied = to_numpy(original)
    assert isinstance(copied.t, np.ndarray) and isinstance(original.t, torch.Tensor)
    stacked = to_numpy([torch.zeros(2), torch.ones(2)])
    assert isinstance(stacked, np.ndarray) and stacked.shape == (2, 2)
    assert to_numpy([1, 2]).tolist() == [1, 2]


@pytest.mark.parametrize(
    "tensors",
    [
        [torch.zeros((3, 2)), torch.zeros((3, 3))],
        [torch.zeros((2, 3)), torch.zeros((3, 3))],
        [torch.zeros(2), torch.zeros((3, 3))],
    ],
)
def test_to_numpy_rejects_unstackable_tensors(tensors: list[torch.Tensor]) -> None:
    with pytest.raises(TypeError):
        to_numpy(tensors)


# ---------------------------------------------------------------------------------------------
# to_torch


def test_to_torch_dtypes() -> None:
    batch = Batch(
        a=np.float64(1.0),
        b=Batch(c=np.ones((1,), dtype=np.float32), d=torch.ones((1,), dtype=torch.float64)),
    )
    assert to_torch(batch.a, dtype=torch.float32).dtype == torch.float32
    assert to_torch(batch.a, dtype=torch.float64).dtype == torch.float64
    as_float = to_torch(batch, dtype=torch.float32)
    assert as_float.b.c.dtype == as_float.b.d.dtype == torch.float32
    assert as_float.a.dtype == torch.float64  # a scalar leaf keeps its own precision
    assert isinstance(batch.a, np.ndarray)  # the input Batch is not modified
    assert to_torch([float("nan"), 1]).dtype == torch.float64
    assert to_torch(1).dtype == torch.int64 and to_torch(1.0).dtype == torch.float64
    assert to_torch(np.array([True])).dtype == torch.bool


def test_to_torch_of_containers_and_lists() -> None:
    arrays = [np.random.rand(3, 3), np.random.rand(3, 3)]
    stacked = to_torch(arrays)
    assert stacked.shape == (2, 3, 3)
    assert np.allclose(to_numpy(stacked), arrays)
    source = {"a": [1]}
    converted = to_torch(source)
    assert isinstance(converted["a"], torch.Tensor)
    assert source == {"a": [1]}
    empty = to_torch(np.random.rand(3, 2, 2)[[]])
    assert isinstance(empty, torch.Tensor) and empty.shape == (0, 2, 2)
    assert to_numpy(empty).shape == (0, 2, 2)


def test_to_torch_device_and_shared_memory() -> None:
    array = np.arange(3.0)
    tensor = to_torch(array, device="cpu")
    assert tensor.device.type == "cpu"
    array[0] = 9  # same dtype and device: no copy, as torch.from_numpy
    assert tensor[0] == 9


@pytest.mark.parametrize(
    "value",
    [
        [np.zeros((3, 2)), np.zeros((3, 3))],
        [np.zeros((2, 3)), np.zeros((3, 3))],
        [np.zeros(2), np.zeros((3, 3))],
        None,
        np.array([{}, "2"]),
        "text",
    ],
)
def test_to_torch_rejects_values_without_tensor_form(value: object) -> None:
    with pytest.raises(TypeError):
        to_torch(value)


def test_to_torch_keeps_the_dtype_of_scalar_leaves_and_casts_the_rest() -> None:
    row = Batch(f=np.array([1.5, 2.5]), i=np.array([3, 4]), b=np.array([True, False]))[0]
    assert type(row.f) is np.float64 and type(row.i) is np.int64  # indexing gives numpy scalars
    own = {"f": torch.float64, "i": torch.int64, "b": torch.bool}
    for source in (
        row,
        Batch(f=np.float64(1.5), i=np.int64(3), b=np.bool_(True)),
        {"f": np.float64(1.5), "i": np.int64(3), "b": np.bool_(True)},
    ):
        converted = to_torch(source, dtype=torch.float32)
        for key, expected in (("f", 1.5), ("i", 3), ("b", True)):
            leaf = converted[key]
            assert isinstance(leaf, torch.Tensor) and leaf.dtype == own[key]
            assert leaf.shape == () and leaf.item() == expected
        in_place = Batch(source) if isinstance(source, dict) else Batch(source, copy=True)
        in_place.to_torch_(dtype=torch.float32)
        assert {key: in_place[key].dtype for key in own} == own
    rows = to_torch(Batch(f=np.array([1.5]), t=torch.ones(1, dtype=torch.int64)), torch.float32)
    assert rows.f.dtype == rows.t.dtype == torch.float32  # leaves with a batch axis are cast
    assert to_torch(np.float64(1.0), dtype=torch.float32).dtype == torch.float32  # alone: cast
    assert to_torch(np.int64(7), dtype=torch.float64).dtype == torch.float64
    assert to_torch([{"a": 1}, {"a": 2}], dtype=torch.float32).a.tolist() == [1.0, 2.0]
    assert to_numpy([{"a": 1}, {"a": 2}]).a.tolist() == [1, 2]


def test_to_torch_as() -> None:
    reference = torch.zeros(1, dtype=torch.float16)
    converted = to_torch_as(np.arange(3), reference)
    assert converted.dtype == torch.float16 and converted.device == reference.device
    assert to_torch_as(Batch(a=[1.0]), reference).a.dtype == torch.float16
    with pytest.raises(TypeError, match="reference"):
        to_torch_as(np.zeros(1), np.zeros(1))  # type: ignore[call-overload]


# ---------------------------------------------------------------------------------------------
# HDF5


def write_and_read(tmp_path: Path, data: dict, **kwargs: object) -> object:
    path = tmp_path / "data.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5(data, f, **kwargs)  # type: ignore[arg-type]
    with h5py.File(path, "r") as f:
        return from_hdf5(f, allow_pickle=True)


def test_hdf5_round_trip(tmp_path: Path) -> None:
    batch = Batch(
        a=np.arange(6).reshape(2, 3),
        t=torch.ones(2),
        o=np.array([None, "x"], dtype=object),
        s="text",
        n=None,
        sub=Batch(q=np.zeros((2, 2), np.float32), empty=Batch()),
        scalar=np.array(5),
    )
    data = {"batch": batch, "count": 3, "rate": 0.5, "nested": {"x": np.ones(2)}, "items": [1, 2]}
    restored = write_and_read(tmp_path, data)
    assert isinstance(restored, dict)
    assert restored["batch"] == batch
    assert isinstance(restored["batch"].t, torch.Tensor)
    assert restored["batch"].sub.empty.is_empty()
    assert restored["count"] == 3 and restored["rate"] == 0.5
    assert isinstance(restored["nested"], dict) and restored["nested"]["x"].tolist() == [1.0, 1.0]
    assert restored["items"] == [1, 2]


def test_hdf5_compression_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "compressed.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"b": Batch(a=np.zeros((100, 4)), s=np.array(1.0))}, f, compression="gzip")
    with h5py.File(path, "r") as f:
        assert f["b"].attrs["__data_type__"] == "Batch"
        assert f["b/a"].compression == "gzip"
        assert f["b/a"].attrs["__data_type__"] == "ndarray"
        restored = from_hdf5(f)
    assert restored["b"].a.shape == (100, 4)


def test_hdf5_tensor_device(tmp_path: Path) -> None:
    path = tmp_path / "tensor.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"t": torch.arange(3)}, f)
    with h5py.File(path, "r") as f:
        restored = from_hdf5(f, device="cpu")
    assert torch.equal(restored["t"], torch.arange(3))


def test_hdf5_unpicklable_value_is_reported(tmp_path: Path) -> None:
    with (
        h5py.File(tmp_path / "bad.hdf5", "w") as f,
        pytest.raises(NotImplementedError, match="'fn'"),
    ):
        to_hdf5({"fn": lambda x: x}, f)


def test_hdf5_foreign_dataset_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "foreign.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset("raw", data=np.zeros(3))
    with h5py.File(path, "r") as f, pytest.raises(ValueError, match=r"'/raw'.*not written"):
        from_hdf5(f)


def test_hdf5_corrupt_pickle_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset("obj", data=np.frombuffer(b"not a pickle", dtype=np.byte))
        f["obj"].attrs["__data_type__"] = "pickled_ndarray"
    with h5py.File(path, "r") as f, pytest.raises(ValueError, match="corrupt"):
        from_hdf5(f, allow_pickle=True)


def test_hdf5_unknown_group_type_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "unknown.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("g").attrs["__data_type__"] = "Mystery"
    with h5py.File(path, "r") as f, pytest.raises(ValueError, match="Mystery"):
        from_hdf5(f)


def test_hdf5_pickled_payload_matches_pickle(tmp_path: Path) -> None:
    path = tmp_path / "payload.hdf5"
    value = {1, 2}  # a set: an object array of dicts would become a nested Batch
    with h5py.File(path, "w") as f:
        to_hdf5({"obj": Batch(o=np.array([value], dtype=object))}, f)
    with h5py.File(path, "r") as f:
        payload = f["obj/o"][()]
        assert f["obj/o"].attrs["__data_type__"] == "pickled_ndarray"
        assert pickle.loads(payload.tobytes())[0] == value


def test_hdf5_refuses_pickles_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "objects.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"obj": {1, 2}, "arr": np.array([(1, 2), None], dtype=object)}, f)
    with h5py.File(path, "r") as f:
        with pytest.raises(ValueError, match=r"'/(arr|obj)'.*allow_pickle=True"):
            from_hdf5(f)
        restored = from_hdf5(f, allow_pickle=True)
        assert restored["obj"] == {1, 2} and restored["arr"][0] == (1, 2)


def test_hdf5_strings_none_and_placeholders_need_no_pickle(tmp_path: Path) -> None:
    data = {"s": "text", "n": None, "flag": True, "holes": np.full((2, 3), None, dtype=object)}
    path = tmp_path / "plain.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5(data, f)
    with h5py.File(path, "r") as f:
        restored = from_hdf5(f)
    assert restored["s"] == "text" and restored["n"] is None and restored["flag"] is True
    assert restored["holes"].shape == (2, 3) and restored["holes"].dtype == object
    assert all(v is None for v in restored["holes"].flat)


def test_hdf5_object_arrays_of_python_scalars_round_trip_without_pickle(tmp_path: Path) -> None:
    labels = np.array([["left", None, 3], [2.5, True, "\u00e9t\u00e9"]], dtype=object)
    path = tmp_path / "labels.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"labels": labels, "none": np.empty(0, dtype=object)}, f)
        assert f["labels"].attrs["__data_type__"] == "json_ndarray"
    with h5py.File(path, "r") as f:
        restored = from_hdf5(f)
    assert restored["labels"].dtype == object and restored["labels"].shape == (2, 3)
    assert [type(v) for v in restored["labels"].flat] == [type(v) for v in labels.flat]
    assert restored["labels"].tolist() == labels.tolist()


def test_hdf5_object_array_of_non_scalars_is_still_pickled(tmp_path: Path) -> None:
    path = tmp_path / "mixed.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"arr": np.array(["a", np.float32(1.0)], dtype=object)}, f)
        assert f["arr"].attrs["__data_type__"] == "pickled_ndarray"


def test_hdf5_corrupt_json_array_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "labels.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"labels": np.array(["a", "b"], dtype=object)}, f)
        f["labels"][0] = "{not json"
    with h5py.File(path, "r") as f, pytest.raises(ValueError, match=r"'/labels'.*corrupt"):
        from_hdf5(f)


def test_hdf5_checksum_detects_flipped_bytes(tmp_path: Path) -> None:
    path = tmp_path / "checked.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5({"a": np.arange(64, dtype=np.float64)}, f)
        assert f["a"].fletcher32
        chunk = f["a"].id.get_chunk_info(0)
    raw = bytearray(path.read_bytes())
    raw[chunk.byte_offset + 17] ^= 0xFF
    path.write_bytes(bytes(raw))
    with h5py.File(path, "r") as f, pytest.raises(OSError, match=r"'/a'.*corrupted"):
        from_hdf5(f)
