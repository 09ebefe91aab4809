"""Stand-ins for the Kit modules Isaac Lab 2.3.x imports (omni, carb, isaacsim, usdrt), for tests only.

Isaac Lab 2.3 imports Omniverse Kit modules at module level. Without Isaac Sim they
do not exist, so a meta-path finder fabricates permissive modules for them: every
attribute is a class that can be subclassed, called, indexed and iterated, so the
env/sim/scene/manager/sensor modules import and the real ``step()`` bodies run with
fake objects. Never use this for Isaac Lab 3.x: stubbing ``omni`` flips
``isaaclab.utils.version.has_kit()`` into Kit mode.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

STUBBED_ROOTS = ("omni", "carb", "isaacsim", "usdrt", "pxr")


class _StubMeta(type):
    """Metaclass so that attributes of stub *classes* are stubs too (``carb.settings.get_settings()``)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{cls.__qualname__}.{name}")

    def __iter__(cls):  # ``for x in stub``
        return iter(())

    def __len__(cls) -> int:
        return 0

    def __bool__(cls) -> bool:
        return False


class _Stub(metaclass=_StubMeta):
    """Instances accept anything and return stubs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{type(self).__qualname__}.{name}")()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Stub()

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __getitem__(self, key: Any) -> Any:
        return _Stub()


_CLASSES: dict[str, type] = {}


def _stub_class(qualname: str) -> type:
    cls = _CLASSES.get(qualname)
    if cls is None:
        cls = _StubMeta(qualname.rsplit(".", 1)[-1], (_Stub,), {"__qualname__": qualname, "__module__": "kit_stub"})
        _CLASSES[qualname] = cls
    return cls


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        if full in sys.modules:
            return sys.modules[full]
        value = _stub_class(full)
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _StubModule(spec.name)
        mod.__path__ = []  # a package, so submodules import
        mod.__file__ = f"<kit stub {spec.name}>"
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        parent, _, child = module.__name__.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], child, module)


class KitStubFinder(importlib.abc.MetaPathFinder):
    """Fabricates any module under :data:`STUBBED_ROOTS`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".", 1)[0] in STUBBED_ROOTS:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def install() -> None:
    """Put the stand-ins first on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, KitStubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, KitStubFinder())
