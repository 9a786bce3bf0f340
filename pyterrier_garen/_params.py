"""Parameter checks and the one ``__repr__`` mechanism shared by every transformer, engine and summariser."""
from __future__ import annotations

import inspect
from enum import Enum
from typing import Any

import numpy as np

__all__ = ['check_positive', 'rebuild_repr', 'Rebuildable']


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` for any parameter that is not a positive integer."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f'{name} must be a positive integer, got {value!r}')


def _value_repr(value: Any) -> str:
    if isinstance(value, Enum):  # enums accept their value, so the value rebuilds the object
        return repr(value.value)
    return repr(value)


def rebuild_repr(obj: Any) -> str:
    """``Class(positional, ..., keyword=value, ...)`` from the ``__init__`` arguments, stored under their own names.

    Keyword-only arguments are shown only when they differ from their default; names listed in the class attribute
    ``_secret_params`` (e.g. an API key) are never shown. The result evaluates back to an equivalent object when every
    argument's own repr does, so it is safe as a row name in ``pt.Experiment``.
    """
    hidden = set(getattr(type(obj), '_secret_params', ()))
    args = []
    for name, param in inspect.signature(type(obj).__init__).parameters.items():
        if name == 'self' or name in hidden or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        value = getattr(obj, name)
        if param.kind == param.KEYWORD_ONLY or param.default is not param.empty:
            default = param.default
            if default is not param.empty and (value is default or _equal(value, default)):
                continue
            args.append(f'{name}={_value_repr(value)}')
        else:
            args.append(_value_repr(value))
    return f'{type(obj).__name__}({", ".join(args)})'


def _equal(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except Exception:  # e.g. arrays or frames, whose == is element-wise
        return False


class Rebuildable:
    """Mixin giving a class :func:`rebuild_repr` as its ``__repr__``."""

    def __repr__(self) -> str:
        return rebuild_repr(self)
