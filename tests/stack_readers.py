"""The training stacks' own readers of token files, loaded without torch.

`megatron-core` and `datatrove` import torch only for type names and tensors (PyPI's torch is 500 MB+, and
the readers need none of it), so where torch is not installed a stand-in is put in place while they are
imported, then taken out of `sys.modules` again, so that no other test (transformers checks for torch) sees
it. Megatron's reader is loaded from `megatron/core/datasets/indexed_dataset.py` alone: the package's
`__init__` imports the whole model code. `install: pip install --no-deps megatron-core datatrove` (and
datatrove's light dependencies).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
import types
from contextlib import contextmanager

import numpy as np


class _AnythingType(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything

    def __or__(cls, other):
        return _Anything

    __ror__ = __or__

    def __getitem__(cls, item):
        return _Anything


class _Anything(metaclass=_AnythingType):
    """Whatever torch name a module uses at import time (a type in a signature, a base class, a decorator)."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else _Anything()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _TorchModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything


class _TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _TorchModule(spec.name)
        module.__path__ = []
        module.__version__ = "2.6.0"
        # What datatrove's reader calls on the ids it reads: NumPy arrays stand in for tensors.
        module.as_tensor = lambda data, dtype=None: np.asarray(data)
        return module

    def exec_module(self, module) -> None:
        pass


@contextmanager
def _torch_stand_in():
    if importlib.util.find_spec("torch") is not None:
        yield
        return
    finder = _TorchFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [name for name in sys.modules if name == "torch" or name.startswith("torch.")]:
            del sys.modules[name]


def megatron_indexed_dataset() -> types.ModuleType | None:
    """`megatron.core.datasets.indexed_dataset`, or None where megatron-core is not installed."""
    if "megatron.core.datasets.indexed_dataset" in sys.modules:
        return sys.modules["megatron.core.datasets.indexed_dataset"]
    spec = importlib.util.find_spec("megatron")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = spec.submodule_search_locations[0]
    if not os.path.exists(os.path.join(root, "core", "datasets", "indexed_dataset.py")):
        return None
    for name, path in (("megatron", root), ("megatron.core", os.path.join(root, "core"))):
        package = types.ModuleType(name)
        package.__path__ = [path]
        sys.modules.setdefault(name, package)
    if "megatron.core.utils" not in sys.modules:  # the one helper the reader imports from it
        utils = types.ModuleType("megatron.core.utils")
        utils.log_single_rank = lambda logger, level, *args, **kwargs: logger.log(level, *args, **kwargs)
        sys.modules[utils.__name__] = utils
    with _torch_stand_in():
        import megatron.core.datasets.indexed_dataset as indexed_dataset
    logging.getLogger(indexed_dataset.__name__).setLevel(logging.WARNING)
    return indexed_dataset


def datatrove_folder_dataset() -> type | None:
    """datatrove's `DatatroveFolderDataset`, or None where datatrove (or a dependency) is not installed."""
    try:
        with _torch_stand_in():
            from datatrove.utils.dataset import DatatroveFolderDataset
    except ImportError:
        return None
    return DatatroveFolderDataset
