"""A function's execution environments, as Lambda keeps them: each runs one event at a time with its
own module state (a Powertools resolver keeps the current event on itself), and up to ``limit`` run
at once. A request never waits for another function, nor for another event of the same function
while an environment is free or may still be made."""

from __future__ import annotations

import importlib.util
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

_serial = itertools.count()


class Instances:
    def __init__(self, name: str, path: Path, limit: int) -> None:
        self.name = name
        self.path = path
        self.limit = max(1, limit)
        self._idle: list[ModuleType] = []
        self._made = 0
        self._cond = threading.Condition()

    def _new(self) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"sluice_function_{self.name}_{next(_serial)}", self.path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def warm(self) -> None:
        """Make the first environment now, so a handler that cannot import fails at start."""
        with self._cond:
            if self._made:
                return
            self._made = 1
        module = self._new()
        with self._cond:
            self._idle.append(module)
            self._cond.notify()

    @contextmanager
    def checkout(self) -> Iterator[ModuleType]:
        with self._cond:
            while not self._idle and self._made >= self.limit:
                self._cond.wait()
            module = self._idle.pop() if self._idle else None
            if module is None:
                self._made += 1
        if module is None:
            try:
                module = self._new()
            except BaseException:
                with self._cond:
                    self._made -= 1
                    self._cond.notify()
                raise
        try:
            yield module
        finally:
            with self._cond:
                self._idle.append(module)
                self._cond.notify()
