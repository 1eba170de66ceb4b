"""Replay buffers: the circular base buffer, its managers, and the prioritized and HER variants.

``tianshou.data.buffer.base`` is kept as an alias of :mod:`.buffer_base` (its 1.x name) so buffers
pickled by older versions still load.
"""

import sys

from tianshou.data.buffer import buffer_base

sys.modules.setdefault("tianshou.data.buffer.base", buffer_base)
