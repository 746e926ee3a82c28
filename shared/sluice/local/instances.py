"""A function's execution environments, as Lambda keeps them: each runs one event at a time with its
own module state, and up to ``limit`` run at once. A request never waits for another function, nor
for another event of the same function while an environment is free or may still be made.

The environments are threads of one process, where Lambda gives each a process of its own. What
Powertools keeps per process must therefore be kept per thread here: its HTTP resolvers store the
event they handle on the ``BaseRouter`` class, so two requests at once read each other's event (a
file's name paired with another upload's bytes) unless that attribute is the calling thread's."""

from __future__ import annotations

import importlib.util
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

_serial = itertools.count()


class _PerThread:
    """An attribute whose value is the calling thread's, read and written the same way on the class
    (through its metaclass) and on its instances."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._values = threading.local()

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        try:
            return self._values.value
        except AttributeError:
            raise AttributeError(self.name) from None

    def __set__(self, obj: object, value: Any) -> None:
        self._values.value = value


_ROUTER_STATE = ("current_event", "lambda_context")
_isolating = threading.Lock()


def keep_router_state_per_thread() -> None:
    """Make ``BaseRouter.current_event`` and ``BaseRouter.lambda_context`` thread-local. Powertools
    assigns them on the class (``BaseRouter.current_event = ...``), which only a descriptor on the
    metaclass intercepts; the same descriptors on the class serve the resolvers' ``self.current_event``."""
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    with _isolating:
        if isinstance(BaseRouter.__dict__.get(_ROUTER_STATE[0]), _PerThread):
            return
        fields = {name: _PerThread(name) for name in _ROUTER_STATE}
        for name, field in fields.items():
            setattr(BaseRouter, name, field)  # replaces any value set before; first, or the metaclass takes it
        BaseRouter.__class__ = type("PerThreadRouterMeta", (type(BaseRouter),), dict(fields))  # type: ignore[method-assign]


class Instances:
    def __init__(self, name: str, path: Path, limit: int) -> None:
        self.name = name
        self.path = path
        self.limit = max(1, limit)
        self._idle: list[ModuleType] = []
        self._made = 0
        self._cond = threading.Condition()
        keep_router_state_per_thread()

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
