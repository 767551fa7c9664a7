"""A small thread-safe LRU of rendered output (SVG charts, page fragments), keyed by what would change it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class RenderCache:
    """Holds up to `size` renderings; a size of 0 keeps nothing and renders every time."""

    def __init__(self, size: int = 256) -> None:
        self._items: OrderedDict[Hashable, str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get_or_render(self, key: Hashable, render: Callable[[], str]) -> str:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        rendered = render()
        with self._lock:
            self._items[key] = rendered
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return rendered
