"""Parameter checks and the one ``__repr__`` mechanism shared by every transformer, engine and summariser."""
from __future__ import annotations

import inspect
import math
from enum import Enum
from typing import Any, Sequence

import numpy as np

__all__ = ['check_positive', 'check_probability', 'check_nonnegative', 'check_groups', 'parse_group_ids',
           'rebuild_repr', 'Rebuildable']


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` for any parameter that is not a positive integer."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f'{name} must be a positive integer, got {value!r}')


def _real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def check_probability(**values: float) -> None:
    """Raise ``ValueError`` for any parameter that is not a finite number strictly between 0 and 1."""
    for name, value in values.items():
        if not _real(value) or not math.isfinite(value) or not 0 < value < 1:
            raise ValueError(f'{name} must be a number strictly between 0 and 1, got {value!r}')


def check_nonnegative(**values: float) -> None:
    """Raise ``ValueError`` for any parameter that is not a finite number >= 0 (NaN and infinity included)."""
    for name, value in values.items():
        if not _real(value) or not math.isfinite(value) or value < 0:
            raise ValueError(f'{name} must be a finite number >= 0, got {value!r}')


GROUP_API = ('group_of', 'group_members', 'num_groups')


def check_groups(groups: Any, owner: str, *, needs: Sequence[str] = GROUP_API) -> None:
    """Raise ``TypeError`` when ``groups`` is not a group graph (e.g. a plain corpus graph), naming the fix."""
    missing = [name for name in needs if not hasattr(groups, name)]
    if missing:
        raise TypeError(f'{owner} needs a group graph (a GroupCorpusGraph), got {type(groups).__name__} without '
                        f'{", ".join(missing)}; build one with GroupCorpusGraph.from_corpus_graph(graph, path)')


def parse_group_ids(values: Sequence[Any], num_groups: int, owner: Any) -> np.ndarray:
    """Group ids from a navigator frame's ``docno`` column; ``ValueError`` naming the first id that is not one."""
    ids = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        try:
            gid = int(str(value).strip())
        except ValueError:
            gid = -1
        if not 0 <= gid < num_groups:
            raise ValueError(f'{owner!r}: docno {value!r} is not a group id of this artifact (ids run from 0 to '
                             f'{num_groups - 1}); a navigator scores group ids, as GAREN sends them')
        ids[i] = gid
    return ids


def _value_repr(value: Any) -> str:
    if isinstance(value, Enum):  # enums accept their value, so the value rebuilds the object
        return repr(value.value)
    return repr(value)


def rebuild_repr(obj: Any) -> str:
    """``Class(positional, ..., keyword=value, ...)`` from the ``__init__`` arguments, stored under their own names.

    Keyword-only arguments are shown only when they differ from their default; names listed in the class attribute
    ``_secret_params`` (e.g. an API key) are never shown. An argument kept under another attribute name (because the
    plain name is a computed property, such as an engine's ``context_length``) is named in the class attribute
    ``_repr_attributes`` (``{'argument': 'attribute'}``); a ``**kwargs`` argument kept as a dict under its own name
    (e.g. ``VLLMEngine(..., **engine_args)``) is shown as its keywords. The result evaluates back to an equivalent
    object when every argument's own repr does, so it is safe as a row name in ``pt.Experiment``.
    """
    hidden = set(getattr(type(obj), '_secret_params', ()))
    stored = getattr(type(obj), '_repr_attributes', {})
    args = []
    for name, param in inspect.signature(type(obj).__init__).parameters.items():
        if param.kind == param.VAR_KEYWORD and isinstance(getattr(obj, name, None), dict):
            args += [f'{key}={_value_repr(value)}' for key, value in getattr(obj, name).items()]
            continue
        if name == 'self' or name in hidden or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        value = getattr(obj, stored.get(name, name))
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
