"""Shared-memory observation layout: placement, round trips and the errors users see."""

import mmap

import numpy as np
import pytest
from gymnasium import spaces

from tianshou.env.worker.shared_obs import Slot, make_views, plan_layout, read_obs, write_obs


def test_layout_places_aligned_leaves_in_space_order() -> None:
    space = spaces.Dict(
        {
            "a": spaces.Box(0, 1, (3,), np.float32),
            "b": spaces.Tuple((spaces.Discrete(4), spaces.MultiBinary(5))),
        }
    )
    layout, size = plan_layout(space)
    assert layout == {
        "a": Slot(0, (3,), "<f4"),
        "b": (Slot(64, (), "<i8"), Slot(128, (5,), "|i1")),
    }
    assert size == 192


def test_round_trip_of_nested_observation() -> None:
    space = spaces.Dict(
        {"img": spaces.Box(0, 255, (4, 4), np.uint8), "pos": spaces.MultiDiscrete([3, 3])}
    )
    layout, size = plan_layout(space)
    views = make_views(layout, mmap.mmap(-1, size))
    obs = {"img": np.arange(16, dtype=np.uint8).reshape(4, 4), "pos": np.array([2, 1])}
    write_obs(views, obs)
    copy = read_obs(views)
    np.testing.assert_array_equal(copy["img"], obs["img"])
    np.testing.assert_array_equal(copy["pos"], obs["pos"])
    write_obs(views, {"img": np.zeros((4, 4), np.uint8), "pos": np.zeros(2, np.int64)})
    assert copy["img"].sum() == np.arange(16).sum()  # reads are copies, not views


def test_unsupported_space_names_its_path() -> None:
    space = spaces.Dict({"text": spaces.Text(5)})
    with pytest.raises(TypeError, match=r"observation_space\['text'\] is a Text"):
        plan_layout(space)


def test_mismatching_observations_are_rejected() -> None:
    layout, size = plan_layout(spaces.Dict({"x": spaces.Box(0, 1, (2,))}))
    views = make_views(layout, mmap.mmap(-1, size))
    with pytest.raises(ValueError, match=r"observation\['x'\] has shape \(3,\)"):
        write_obs(views, {"x": np.zeros(3)})
    with pytest.raises(ValueError, match=r"has shape \(1,\)"):  # never broadcast
        write_obs(views, {"x": np.zeros(1)})
    write_obs(views, {"x": np.array([[0.25, 0.5]])})  # same elements, other shape: reshaped
    np.testing.assert_array_equal(read_obs(views)["x"], [0.25, 0.5])
    with pytest.raises(TypeError, match="should be a dict"):
        write_obs(views, np.zeros(2))
    with pytest.raises(KeyError):
        write_obs(views, {"y": np.zeros(2)})
