"""A small thread-safe LRU of rendered output (SVG charts, page fragments), keyed by what would change it
and bounded by entries and by the memory its renderings hold."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class RenderCache:
    """Holds up to `size` renderings, `max_bytes` of them in all; one larger than `max_bytes` is served
    but not kept. A size of 0 keeps nothing and renders every time."""

    def __init__(self, size: int = 256, max_bytes: int = 64 * 2**20) -> None:
        self._items: OrderedDict[Hashable, str] = OrderedDict()
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """The memory the kept renderings hold (their string objects)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get_or_render(self, key: Hashable, render: Callable[[], str]) -> str:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        rendered = render()
        cost = sys.getsizeof(rendered)
        if self._size <= 0 or cost > self._max_bytes:
            return rendered
        with self._lock:
            if key in self._items:  # rendered meanwhile by another request
                self._bytes -= sys.getsizeof(self._items[key])
            self._items[key] = rendered
            self._bytes += cost
            while len(self._items) > self._size or self._bytes > self._max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= sys.getsizeof(dropped)
        return rendered
