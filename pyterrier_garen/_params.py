"""Parameter checks and the one ``__repr__`` mechanism shared by every transformer, engine and summariser."""
from __future__ import annotations

import inspect
import math
import os
import re
from enum import Enum
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ['check_positive', 'check_probability', 'check_nonnegative', 'check_int', 'check_number', 'check_bool',
           'check_choice', 'check_optional_positive', 'check_groups', 'check_graph', 'described',
           'check_model', 'parse_group_ids', 'init_arguments',
           'rebuild_repr', 'Rebuildable']

# The one vocabulary of parameter checks. Every message reads "<name> must be <range>, got <value!r>" (plus a note
# where one helps), and no check accepts a bool as a number: True == 1 in Python, yet ``fusion=True`` or
# ``window=True`` is a mistake, not a weight or a size.


def is_int(value: Any) -> bool:
    """A Python or NumPy integer that is not a bool."""
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))


def is_real(value: Any) -> bool:
    """A Python or NumPy integer or float that is not a bool (NaN and infinity included)."""
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))


def _fail(name: str, value: Any, expected: str, note: str = '') -> None:
    raise ValueError(f'{name} must be {expected}, got {value!r}' + (f' ({note})' if note else ''))


def _int_range(low: Optional[int], high: Optional[int]) -> str:
    if low is not None and high is not None:
        return f'an integer from {low} to {high}'
    if low == 1:
        return 'a positive integer'
    return f'an integer >= {low}' if low is not None else (f'an integer <= {high}' if high is not None else
                                                            'an integer')


def check_int(name: str, value: Any, *, low: Optional[int] = None, high: Optional[int] = None,
              none_ok: bool = False, note: str = '') -> None:
    """``ValueError`` unless ``value`` is an integer (not a bool) in ``[low, high]`` (or ``None`` when allowed)."""
    if value is None and none_ok:
        return
    if not is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        _fail(name, value, _int_range(low, high) + (' or None' if none_ok else ''), note)


def check_head_rerank(head_rerank: Any) -> None:
    """``ValueError`` unless ``head_rerank`` (documents re-ranked once more per query) is 0 (none) or at least 2:
    the one check of ``GAREN``, ``build_systems``, ``compare``, the sweep and their command lines."""
    check_int('head_rerank', head_rerank, low=0, note='documents re-ranked once more per query, 0 = none')
    if head_rerank == 1:
        raise ValueError('head_rerank must be 0 (none) or at least 2: one document has no order to change')


def check_number(name: str, value: Any, *, low: Optional[float] = None, high: Optional[float] = None,
                 low_open: bool = False, high_open: bool = False, none_ok: bool = False, note: str = '') -> None:
    """``ValueError`` unless ``value`` is a finite real number (not a bool) in the range given.

    ``low``/``high`` bound it, inclusive unless ``low_open``/``high_open``; ``None`` passes when ``none_ok``.
    """
    if value is None and none_ok:
        return
    ok = is_real(value) and math.isfinite(value) and \
        (low is None or (value > low if low_open else value >= low)) and \
        (high is None or (value < high if high_open else value <= high))
    if not ok:
        if low is not None and high is not None and low_open and high_open:
            expected = f'a number strictly between {low:g} and {high:g}'
        elif low is not None and high is not None:
            expected = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        elif low is not None:
            expected = f"a finite number {'>' if low_open else '>='} {low:g}"
        elif high is not None:
            expected = f"a finite number {'<' if high_open else '<='} {high:g}"
        else:
            expected = 'a finite number'
        _fail(name, value, expected + (' or None' if none_ok else ''), note)


def check_positive(**values: Any) -> None:
    """``ValueError`` for any parameter that is not a positive integer (``name=value`` pairs)."""
    for name, value in values.items():
        check_int(name, value, low=1)


def check_optional_positive(**values: Any) -> None:
    """``ValueError`` for any parameter that is neither ``None`` nor a positive integer."""
    for name, value in values.items():
        check_int(name, value, low=1, none_ok=True)


def check_probability(**values: Any) -> None:
    """``ValueError`` for any parameter that is not a finite number strictly between 0 and 1."""
    for name, value in values.items():
        check_number(name, value, low=0, high=1, low_open=True, high_open=True)


def check_nonnegative(**values: Any) -> None:
    """``ValueError`` for any parameter that is not a finite number >= 0 (NaN and infinity included)."""
    for name, value in values.items():
        check_number(name, value, low=0)


def check_bool(**values: Any) -> None:
    """``ValueError`` for any parameter that is not ``True`` or ``False`` (a string such as ``'no'`` is truthy)."""
    for name, value in values.items():
        if not isinstance(value, (bool, np.bool_)):
            _fail(name, value, 'True or False')


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """``ValueError`` unless ``value`` is one of ``choices``."""
    if isinstance(value, (bool, np.bool_)) or value not in tuple(choices):
        _fail(name, value, f'one of {tuple(choices)}')


GROUP_API = ('group_of', 'group_members', 'num_groups')


def check_groups(groups: Any, owner: str, *, needs: Sequence[str] = GROUP_API) -> None:
    """Raise ``TypeError`` when ``groups`` is not a group graph (e.g. a plain corpus graph), naming the fix."""
    missing = [name for name in needs if not hasattr(groups, name)]
    if missing:
        if isinstance(groups, (str, os.PathLike)):
            raise TypeError(f'{owner} needs a group graph (a GroupCorpusGraph), got {described(groups)}; open it '
                            'first: GroupCorpusGraph(path)')
        raise TypeError(f'{owner} needs a group graph (a GroupCorpusGraph), got {type(groups).__name__} without '
                        f'{", ".join(missing)}; build one with GroupCorpusGraph.from_corpus_graph(graph, path)')


def described(value: Any) -> str:
    """A wrong argument as a message names it: ``the path '...'`` for a path, else its type's name."""
    return f'the path {str(value)!r}' if isinstance(value, (str, os.PathLike)) else type(value).__name__


def check_graph(graph: Any, owner: str) -> None:
    """Raise ``TypeError`` when ``graph`` has no ``neighbours`` (a path, ``None``, an index), naming the fix."""
    if hasattr(graph, 'neighbours'):
        return
    if isinstance(graph, (str, os.PathLike)):
        raise TypeError(f'{owner} needs a corpus graph, got {described(graph)}; open it first: '
                        'GroupCorpusGraph(path), or pt.Artifact.load(path) for a pyterrier-adaptive graph')
    raise TypeError(f'{owner} needs a corpus graph with neighbours(docno) (a GroupCorpusGraph or a pyterrier-adaptive '
                    f'CorpusGraph), got {described(graph)}')


#: what each role of model in a search is, for the message of :func:`check_model`
_MODEL_ROLES = {
    'reranker': 'a pt.Transformer that scores (qid, query, docno) rows, e.g. garen.VectorScorer(prepared.vectors)',
    'scorer': 'a pt.Transformer that scores (qid, query, docno) rows, e.g. garen.VectorScorer(prepared.vectors)',
    'navigator': 'a pt.Transformer that scores groups, e.g. garen.VoteNavigator() or '
                 'garen.CentroidNavigator(groups, prepared.vectors)',
}


def check_model(owner: str, role: str, model: Any) -> None:
    """Raise ``TypeError`` when a search's ``role`` model (``reranker``, ``navigator``, ``scorer``) is ``None`` or
    cannot be called, naming what it must be (it would fail only when the search first calls it)."""
    if model is None or not callable(model):
        raise TypeError(f'{owner} needs a {role}: {_MODEL_ROLES[role]}; got {type(model).__name__}')


_GROUP_ID = re.compile('[0-9]+')


def parse_group_ids(values: Sequence[Any], num_groups: int, owner: Any) -> np.ndarray:
    """Group ids from a navigator frame's ``docno`` column; ``ValueError`` naming the first id that is not one."""
    ids = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        text = str(value).strip()
        # ASCII digits only: int() alone would read '1_0' as group 10 and a full-width '３' as group 3
        gid = int(text) if _GROUP_ID.fullmatch(text) else -1
        if not 0 <= gid < num_groups:
            raise ValueError(f'{owner!r}: docno {value!r} is not a group id of this artifact (ids run from 0 to '
                             f'{num_groups - 1}); a group navigator scores group ids, as GAREN sends them '
                             '(DocGAREN\'s navigator scores documents: give it a document scorer such as '
                             'VectorScorer)')
        ids[i] = gid
    return ids


def _value_repr(value: Any) -> str:
    if isinstance(value, Enum):  # enums accept their value, so the value rebuilds the object
        return repr(value.value)
    if type(value).__name__ == 'DataFrame' and hasattr(value, 'columns'):  # e.g. qrels: a size, not every row
        return f'<DataFrame of {len(value)} rows>'
    return repr(value)


def init_arguments(obj: Any) -> List[Tuple[str, inspect.Parameter, Any]]:
    """``(name, parameter, value)`` of every ``__init__`` argument of ``obj``, read back from where it is stored.

    An argument is stored under its own name; one kept under another attribute (because the plain name is a computed
    property, such as an engine's ``context_length``) is named in the class attribute ``_repr_attributes``
    (``{'argument': 'attribute'}``); a ``**kwargs`` argument is a dict under its own name (absent: ``{}``).
    Secrets are not special here: they are stored as :class:`~pyterrier_garen._engines._base.Secret` objects, whose repr
    is ``'<hidden>'`` wherever they are shown.
    """
    stored = getattr(type(obj), '_repr_attributes', {})
    out = []
    for name, param in inspect.signature(type(obj).__init__).parameters.items():
        if name == 'self' or param.kind == param.VAR_POSITIONAL:
            continue
        if param.kind == param.VAR_KEYWORD:
            value = getattr(obj, name, None)
            out.append((name, param, dict(value) if isinstance(value, dict) else {}))
        else:
            out.append((name, param, getattr(obj, stored.get(name, name))))
    return out


def rebuild_repr(obj: Any) -> str:
    """``Class(positional, ..., keyword=value, ...)`` from the ``__init__`` arguments (:func:`init_arguments`).

    Arguments with a default are shown only when they differ from it; a ``**kwargs`` dict is shown as its keywords.
    The result evaluates back to an equivalent object when every argument's own repr does, so it is safe as a row
    name in ``pt.Experiment``.
    """
    args = []
    for name, param, value in init_arguments(obj):
        if param.kind == param.VAR_KEYWORD:
            args += [f'{key}={_value_repr(v)}' for key, v in value.items()]
        elif param.kind == param.KEYWORD_ONLY or param.default is not param.empty:
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
    """The one mechanism behind every repr and every ``pt.inspect`` answer of the package's objects.

    ``__repr__`` is :func:`rebuild_repr`; ``attributes()`` (PyTerrier's ``HasAttributes`` protocol) reports the same
    :func:`init_arguments`, so ``pt.inspect.transformer_apply_attributes(t)`` rebuilds ``t`` from exactly what its
    repr shows, whatever private caches the object keeps.
    """

    def __repr__(self) -> str:
        return rebuild_repr(self)

    def attributes(self) -> list:
        """The ``__init__`` arguments as ``pt.inspect.TransformerAttribute`` s (see :func:`init_arguments`)."""
        from pyterrier.inspect import TransformerAttribute
        return [TransformerAttribute(name=name, value=value, init_default_value=param.default,
                                     init_parameter_kind=param.kind) for name, param, value in init_arguments(self)]
