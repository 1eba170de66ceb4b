"""Minari data sets as replay buffers, and replay buffers as Minari data sets.

`Minari <https://minari.farama.org>`_ is the Farama Foundation's format for offline RL data (the
successor of D4RL). A Minari episode of ``N`` steps holds ``N + 1`` observations (the reset
observation and one per step), ``N`` actions, rewards and ``terminations``/``truncations``
flags. :func:`load_minari_buffer` lays the episodes of a data set out one after the other in a
:class:`~tianshou.data.ReplayBuffer` (``obs`` are an episode's first ``N`` observations,
``obs_next`` its last ``N``), ready for an offline algorithm; :func:`save_minari_dataset` writes
a buffer out as a data set; :func:`minari_normalized_score` turns test returns into D4RL-style
normalised scores.

Data sets live under ``$MINARI_DATASETS_PATH`` (default ``~/.minari/datasets``). Nothing here
downloads: fetch a public data set once with ``minari download <dataset id>``.

Minari is an optional dependency (the ``offline`` extra:
``pip install -c constraints.txt -e '.[offline]'`` from the checkout); it is imported when one of
these functions is called.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.utils.converter import to_numpy

if TYPE_CHECKING:
    from gymnasium.envs.registration import EnvSpec
    from minari import EpisodeData, MinariDataset

__all__ = [
    "load_minari_buffer",
    "load_minari_dataset",
    "minari_normalized_score",
    "save_minari_dataset",
]

_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def load_minari_dataset(dataset_id: str) -> "MinariDataset":
    """The local Minari data set ``dataset_id`` (never downloaded).

    :raises FileNotFoundError: if it is not under ``$MINARI_DATASETS_PATH`` (default
        ``~/.minari/datasets``); the message names the ``minari download`` command that fetches it.
    """
    import minari
    from minari.storage.datasets_root_dir import get_dataset_path

    try:
        return minari.load_dataset(dataset_id)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the Minari dataset {dataset_id!r} is not in {get_dataset_path()} "
            f"(MINARI_DATASETS_PATH); download it with `minari download {dataset_id}`, or point "
            "MINARI_DATASETS_PATH at the folder that holds it"
        ) from None


def _as_dataset(dataset: "str | MinariDataset") -> "MinariDataset":
    return load_minari_dataset(dataset) if isinstance(dataset, str) else dataset


# ---------------------------------------------------------------------------- spaces
def _check_space(value: Any, space: gym.Space, where: str) -> None:
    """Raise a ValueError unless ``value``, a stack of samples (an array, or a dict of them for a
    ``Dict`` space), has the structure and per-sample shape of ``space``."""
    if isinstance(space, spaces.Dict):
        keys = sorted(value) if isinstance(value, dict) else None
        if keys != sorted(space.spaces):
            raise ValueError(
                f"{where} must be a dict with the keys {sorted(space.spaces)} of its Dict space, "
                f"got {keys if keys is not None else type(value).__name__}"
            )
        for key, subspace in space.spaces.items():
            _check_space(value[key], subspace, f"{where}[{key!r}]")
        return
    if not isinstance(space, _ARRAY_SPACES):
        raise ValueError(
            f"{where}: {type(space).__name__} spaces are not supported; supported are Box, "
            "Discrete, MultiDiscrete, MultiBinary and (for observations) Dict spaces of these"
        )
    shape = np.shape(value)[1:]
    if shape != space.shape:
        raise ValueError(
            f"{where} has samples of shape {shape}, but its space {space} has shape {space.shape}"
        )


def _check_action_space(space: gym.Space) -> None:
    if not isinstance(space, _ARRAY_SPACES):
        raise ValueError(
            f"the action space must be a Box, Discrete, MultiDiscrete or MultiBinary space, "
            f"got {space}"
        )


def _tree_map(fn: Any, *trees: Any) -> Any:
    """``fn`` applied leaf by leaf to arrays, or dicts of them, that share one structure."""
    if isinstance(trees[0], dict):
        return {key: _tree_map(fn, *(tree[key] for tree in trees)) for key in trees[0]}
    return fn(*trees)


# ---------------------------------------------------------------------------- loading
def load_minari_buffer(
    dataset: "str | MinariDataset",
    episode_indices: Sequence[int] | npt.NDArray[np.integer] | None = None,
) -> ReplayBuffer:
    """A full :class:`~tianshou.data.ReplayBuffer` holding the episodes of a Minari data set.

    The episodes are laid out one after the other, each step a transition with ``obs``,
    ``act``, ``rew``, ``terminated``, ``truncated``, ``done`` and ``obs_next`` (the episode's
    next observation). Observations of a ``Dict`` space become nested
    :class:`~tianshou.data.Batch` observations; actions may be discrete or continuous. Arrays
    keep the data set's dtypes; the step infos are not loaded.

    An episode whose last step is neither terminated nor truncated (data cut off mid-episode)
    gets ``truncated=True`` on that step, so that the buffer does not join it to the next
    episode (n-step returns and ``buffer.next`` stop there). Every other flag is kept as stored.

    :param dataset: a data set, or the id of a local one (see :func:`load_minari_dataset`).
    :param episode_indices: the ids of the episodes to load, in this order (ids as listed in
        ``dataset.episode_indices``); None loads them all.
    :raises FileNotFoundError: if a data set id is not available locally.
    :raises ValueError: if no episode is selected, an id is not in the data set, the spaces are
        not supported, or an episode's arrays do not fit its spaces or each other.
    """
    dataset = _as_dataset(dataset)
    _check_action_space(dataset.action_space)
    ids = _selected_episodes(dataset, episode_indices)
    columns: dict[str, list[Any]] = {key: [] for key in ("obs", "act", "rew", "term", "trunc")}
    columns["obs_next"] = []
    for episode in dataset.iterate_episodes(ids):
        for key, value in _episode_columns(episode, dataset).items():
            columns[key].append(value)
    obs, obs_next = (_tree_map(_concat, *columns[key]) for key in ("obs", "obs_next"))
    terminated, truncated = np.concatenate(columns["term"]), np.concatenate(columns["trunc"])
    return ReplayBuffer.from_data(
        obs=Batch(obs) if isinstance(obs, dict) else obs,
        act=np.concatenate(columns["act"]),
        rew=np.concatenate(columns["rew"]),
        terminated=terminated,
        truncated=truncated,
        done=terminated | truncated,
        obs_next=Batch(obs_next) if isinstance(obs_next, dict) else obs_next,
    )


def _concat(*arrays: np.ndarray) -> np.ndarray:
    return np.concatenate(arrays)


def _selected_episodes(
    dataset: "MinariDataset", episode_indices: Sequence[int] | np.ndarray | None
) -> np.ndarray:
    available = np.asarray(dataset.episode_indices)
    if episode_indices is None:
        ids = available
    else:
        ids = np.asarray(episode_indices)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise ValueError(f"episode_indices must be a sequence of integers, got {ids!r}")
        unknown = np.setdiff1d(ids, available)
        if unknown.size:
            raise ValueError(
                f"episodes {unknown.tolist()} are not in the dataset {dataset.id!r}, whose "
                f"episode ids are {_abbreviated(available)}"
            )
    if ids.size == 0:
        raise ValueError(f"no episodes to load from the dataset {dataset.id!r}")
    return ids.astype(np.int64)


def _abbreviated(ids: np.ndarray) -> str:
    if len(ids) <= 10:
        return str(ids.tolist())
    return "[" + ", ".join(str(i) for i in ids[:5]) + f", ..., {ids[-1]}]"


def _episode_columns(episode: "EpisodeData", dataset: "MinariDataset") -> dict[str, Any]:
    """One episode's transitions: its observations split into ``obs`` and ``obs_next``."""
    where = f"episode {episode.id} of the dataset {dataset.id!r}"
    num_steps = len(episode.rewards)
    observations = episode.observations
    _check_space(observations, dataset.observation_space, f"the observations of {where}")
    _check_space(episode.actions, dataset.action_space, f"the actions of {where}")
    counts = {
        "observations": (num_steps + 1, {len(leaf) for leaf in _leaves(observations)}),
        "actions": (num_steps, {len(episode.actions)}),
        "terminations": (num_steps, {len(episode.terminations)}),
        "truncations": (num_steps, {len(episode.truncations)}),
    }
    for name, (needed, found) in counts.items():
        if found != {needed}:
            raise ValueError(
                f"{where} has {num_steps} rewards, so it needs {needed} {name}; found "
                f"{sorted(found)}"
            )
    terminated = np.asarray(episode.terminations, dtype=bool)
    truncated = np.asarray(episode.truncations, dtype=bool)
    early = np.flatnonzero((terminated | truncated)[:-1])
    if early.size:
        raise ValueError(
            f"{where} ends (terminated or truncated) at step {early[0]}, before its last step "
            f"{num_steps - 1}; an episode may only end at its last step"
        )
    if num_steps and not (terminated[-1] or truncated[-1]):
        truncated = truncated.copy()
        truncated[-1] = True
    return {
        "obs": _tree_map(lambda leaf: np.asarray(leaf)[:-1], observations),
        "obs_next": _tree_map(lambda leaf: np.asarray(leaf)[1:], observations),
        "act": np.asarray(episode.actions),
        "rew": np.asarray(episode.rewards),
        "term": terminated,
        "trunc": truncated,
    }


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    return [tree]


# ---------------------------------------------------------------------------- saving
def save_minari_dataset(
    buffer: ReplayBuffer,
    dataset_id: str,
    env: "str | gym.Env | EnvSpec",
    jpeg_encoding: bool = False,
    **dataset_kwargs: Any,
) -> "MinariDataset":
    """Write the transitions of ``buffer`` as the new Minari data set ``dataset_id``.

    Each (sub-)buffer is read in chronological order and split into episodes after every step
    with ``done``. An unfinished episode at the end of a (sub-)buffer is written with
    ``truncated=True`` on its last step, as Minari's own ``DataCollector`` writes an episode cut
    short by a reset: the data stop there, so the episode was cut. Within an episode each
    step's ``obs_next`` must be the next step's ``obs``, as a
    :class:`~tianshou.data.Collector` stores them (a ValueError names the first step where it
    is not); an episode's observations are its steps' ``obs`` and its last step's ``obs_next``.

    Actions are written as stored. A ``Collector`` stores a policy's raw actions, before
    ``map_action``: with action scaling they lie in [-1, 1] rather than the env's bounds (the
    same for MuJoCo tasks, whose bounds are [-1, 1]). Step infos are not written.

    :param buffer: the transitions; any :class:`~tianshou.data.ReplayBuffer`, including a
        ``VectorReplayBuffer`` (one episode stream per sub-buffer), that stores ``obs_next``.
    :param dataset_id: the new id, ``[namespace/]name-v<version>``; it must not exist yet under
        ``$MINARI_DATASETS_PATH``.
    :param env: the env (or its id or spec) the data come from; its spaces must fit the data.
        Its spec, if it has one, lets users ``recover_environment()`` from the data set.
    :param jpeg_encoding: store image observations JPEG-compressed (lossy, smaller); by default
        they are stored exactly, so that loading gives back the buffer's observations.
    :param dataset_kwargs: passed on to ``minari.create_dataset_from_buffers``: ``eval_env``,
        ``algorithm_name``, ``author``, ``author_email``, ``code_permalink``, ``description``,
        ``requirements``, ``data_format``, and ``ref_min_score``/``ref_max_score`` for
        :func:`minari_normalized_score` (a ``ref_max_score`` without ``ref_min_score`` makes
        Minari measure a random policy over ``num_episodes_average_score`` episodes).
    :raises ValueError: if the buffer is empty, lacks ``obs_next``, holds multi-dimensional
        rewards, does not fit the env's spaces, or is not made of consecutive episodes; or if
        the data set exists already.
    """
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    if len(buffer) == 0:
        raise ValueError("cannot save an empty buffer as a Minari dataset")
    observation_space, action_space = _env_spaces(env)
    _check_action_space(action_space)
    rows, ends = _chronological_episodes(buffer)
    steps = _read_steps(buffer, rows)
    _check_space(steps["obs"], observation_space, "the buffer's obs")
    _check_space(steps["act"], action_space, "the buffer's act")
    if steps["rew"].ndim != 1:
        raise ValueError(
            f"Minari stores one reward per step, but the buffer's rewards have shape "
            f"{steps['rew'].shape[1:]} per step"
        )
    _check_continuity(steps, ends, rows)
    truncated = steps["truncated"] | (ends & ~steps["terminated"])
    episodes = []
    for start, stop in _episode_bounds(ends):
        episodes.append(
            EpisodeBuffer(
                observations=_episode_observations(steps, start, stop),
                actions=steps["act"][start:stop],
                rewards=steps["rew"][start:stop],
                terminations=steps["terminated"][start:stop],
                truncations=truncated[start:stop],
            )
        )
    return minari.create_dataset_from_buffers(
        dataset_id, episodes, env=env, jpeg_encoding=jpeg_encoding, **dataset_kwargs
    )


def _env_spaces(env: "str | gym.Env | EnvSpec") -> tuple[gym.Space, gym.Space]:
    if isinstance(env, gym.Env):
        return env.observation_space, env.action_space
    made = gym.make(env)
    try:
        return made.observation_space, made.action_space
    finally:
        made.close()


def _chronological_episodes(buffer: ReplayBuffer) -> tuple[np.ndarray, np.ndarray]:
    """All stored rows, each sub-buffer oldest first, and whether each row ends an episode (its
    ``done`` flag, or the last row of its sub-buffer)."""
    rows = buffer._chronological()
    sub_buffer = np.searchsorted(buffer.subbuffer_edges, rows, side="right") - 1
    ends = np.asarray(buffer.done[rows], dtype=bool).copy()
    ends[:-1] |= sub_buffer[1:] != sub_buffer[:-1]
    ends[-1] = True
    return rows, ends


def _read_steps(buffer: ReplayBuffer, rows: np.ndarray) -> dict[str, Any]:
    """The unstacked step data of ``rows`` as arrays (dicts of arrays for dict observations)."""
    try:
        obs_next = buffer.get(rows, "obs_next", stack_num=1)
    except KeyError:
        raise ValueError(
            "saving a Minari dataset needs the buffer's obs_next (each episode's last "
            "observation), which this buffer does not store (e.g. ignore_obs_next=True)"
        ) from None
    steps = {
        key: buffer.get(rows, key, stack_num=1)
        for key in ("obs", "act", "rew", "terminated", "truncated")
    }
    steps["obs_next"] = obs_next
    return {key: _plain(value) for key, value in steps.items()}


def _plain(value: Any) -> Any:
    """``value`` as a numpy array, or a (nested) dict of them for a Batch."""
    if isinstance(value, Batch):
        return {key: _plain(item) for key, item in value.items()}
    return to_numpy(value)


def _check_continuity(steps: dict[str, Any], ends: np.ndarray, rows: np.ndarray) -> None:
    """Raise unless every step's ``obs_next`` is the next step's ``obs`` within an episode."""
    within = ~ends[:-1]
    for obs_next, obs in zip(_leaves(steps["obs_next"]), _leaves(steps["obs"]), strict=True):
        differs = (obs_next[:-1] != obs[1:]).reshape(len(within), -1).any(axis=1)
        bad = np.flatnonzero(differs & within)
        if bad.size:
            first = bad[0]
            raise ValueError(
                f"row {rows[first]}'s obs_next differs from row {rows[first + 1]}'s obs, though "
                "they are consecutive steps of one episode (no done between them); the buffer "
                "must hold whole consecutive episodes, as a Collector stores them"
            )


def _episode_observations(steps: dict[str, Any], start: int, stop: int) -> Any:
    """The ``N + 1`` observations Minari stores for the episode of rows ``start:stop``: the
    steps' ``obs`` and the last step's ``obs_next``."""
    return _tree_map(
        lambda obs, obs_next: np.concatenate([obs[start:stop], obs_next[stop - 1 : stop]]),
        steps["obs"],
        steps["obs_next"],
    )


def _episode_bounds(ends: np.ndarray) -> list[tuple[int, int]]:
    stops = np.flatnonzero(ends) + 1
    starts = np.concatenate([[0], stops[:-1]])
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


# ---------------------------------------------------------------------------- scores
def minari_normalized_score(dataset: "str | MinariDataset", returns: npt.ArrayLike) -> np.ndarray:
    """D4RL-style normalised scores of episode ``returns``:
    ``100 * (return - ref_min_score) / (ref_max_score - ref_min_score)``.

    0 is the data set's reference random policy, 100 its reference expert (Fu et al. 2020,
    "D4RL: Datasets for Deep Data-Driven Reinforcement Learning"). The reference scores come
    from the data set's metadata (``minari.get_normalized_score``, which gives fractions, times
    100); the MuJoCo and D4RL data sets have them.

    :param dataset: a data set, or the id of a local one.
    :param returns: undiscounted episode returns (a number or an array).
    :return: the scores, shaped like ``returns``.
    :raises ValueError: if the data set's metadata lack ``ref_min_score`` or ``ref_max_score``.
    """
    import minari

    dataset = _as_dataset(dataset)
    try:
        fraction = minari.get_normalized_score(dataset, np.asarray(returns, dtype=np.float64))
    except ValueError as err:
        raise ValueError(
            f"the Minari dataset {dataset.id!r} has no reference scores (ref_min_score and "
            "ref_max_score in its metadata), so its returns cannot be normalised; pass them to "
            "save_minari_dataset or DataCollector.create_dataset when creating a dataset"
        ) from err
    return 100.0 * np.asarray(fraction)
