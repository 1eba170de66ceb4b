"""Observation and action spaces beyond one flat ``Box`` or ``Discrete``: what the library's
policies and collectors agree on when an observation carries a legal-action mask, when an action
is several independent choices, and when an observation is a dict.

One module per concept:

* :mod:`tianshou.spaces.masks`: legal-action masks, the convention every discrete-action policy
  and random collection honour (the network input under ``obs``, a boolean ``mask`` beside it),
  and the functions that apply it: masking Q-values and logits, restricting a categorical
  distribution, drawing random legal actions, naming the row of an all-illegal mask.
* :mod:`tianshou.spaces.product_distributions`: product distributions over structured action
  spaces (``MultiDiscrete``, ``MultiBinary``, ``Tuple``, ``Dict``, hybrid discrete-continuous
  actions included), which the policy-gradient family samples from and learns with.
* :mod:`tianshou.spaces.dict_observations`: row operations on observation batches that may be
  dicts (a ``Batch`` of one tensor per key), for algorithms that repeat or stack observations.

The networks that read dict observations are networks, and live with the others in
:mod:`tianshou.utils.net`: :class:`~tianshou.utils.net.dict_encoder.DictEncoder` and
:class:`~tianshou.utils.net.dict_encoder.DictActionCritic` (a body, a Q-network, a ``Q(s, a)``
critic), the algorithm-specific networks of :mod:`tianshou.utils.net.dict_heads`, and
:func:`~tianshou.utils.net.common.get_dict_state_decorator` for networks written for flat input.
:class:`~tianshou.utils.space_info.SpaceInfo` describes a space's shapes for building networks.
The guide is ``docs/spaces.md``.

This package sits below the algorithms and the collectors: it depends on :mod:`tianshou.data`'s
``Batch`` only, so both may import it.
"""
