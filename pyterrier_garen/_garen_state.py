"""GAREN's per-query bookkeeping and its per-call view of the group graph, kept cheap for the expansion step.

Every iteration of :meth:`~pyterrier_garen.GAREN._expand` asks the same questions about groups: the groups of the
window's neighbours, whether a group still holds an unobserved document, a group's unobserved members in order, the
groups of the unobserved first-stage documents. The answers here lean on what only grows during a search (the
observed documents, the scored groups), so each costs what changed since the last one rather than a rescan, and on
a :class:`~pyterrier_garen.GroupCorpusGraph` the neighbours' groups come straight from its id arrays. The answers
are the same as those of the plain definitions (``tests/test_garen_state.py`` compares both routes).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from itertools import compress, islice
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ._driver import QueryState

__all__ = ['GARENState', 'GroupView', 'by_value']


class GroupView:
    """What GAREN asks of a group graph during one ``transform`` call, memoised for all queries of the call.

    On a GroupCorpusGraph the groups of each document's neighbours (and its docno and group look-ups) are memoised
    on the graph itself, so later calls on the same graph (another system of an experiment, the next batch of
    queries) reuse them; they depend on the graph alone. The memo holds one small tuple per document met in a
    window; the graph empties its memos when one exceeds ``GroupCorpusGraph.memo_limit`` entries.

    A group's members are taken to be exactly the documents whose ``group_of`` is that group (true of every group
    graph the package builds), so "the group still holds an unobserved member" is a count: observed members against
    the group's size.

    Args:
        groups: the group graph (``neighbours``, ``group_of``, ``group_members``, ``summary``).
    """

    def __init__(self, groups: Any):
        self.groups = groups
        self.group_of: Callable[[str], int] = groups.group_of
        self._native = _native(groups)
        if self._native:
            groups.trim_caches()  # the memos below live on the graph across calls: keep them bounded
        # docno -> the groups of N_k(d) (see vote_groups); a GroupCorpusGraph keeps them across calls, as it keeps
        # its docno and group look-ups (they depend on the graph alone)
        self.neighbour_groups: Dict[str, Tuple[int, ...]] = groups._neighbour_groups_cache if self._native else {}
        self._members: Dict[int, List[str]] = {}
        self.sizes: Dict[int, int] = _Memo(self.size)  # gid -> number of distinct members, computed when first asked
        self._summaries: Dict[int, str] = {}
        if self._native:
            self._edges, self._group_ids = groups.edges_data, groups.group_ids
            self._offsets = groups._group_offsets

    def groups_of(self, docnos: Sequence[str]) -> List[int]:
        """``Omega(d)`` of each docno (one vectorised look-up when the graph offers ``groups_of``).

        On a GroupCorpusGraph the answers also go into the memo of its ``group_of``, so that first-stage docnos seen
        before (they recur across queries and calls) cost one dict look-up each.
        """
        if self._native:
            memo = self.groups._group_cache
            try:
                return list(map(memo.__getitem__, docnos))
            except KeyError:  # some not asked about before
                pass
            found = np.asarray(self.groups.groups_of(docnos)).tolist()
            memo.update(zip(map(str, docnos), found))
            return found
        if hasattr(self.groups, 'groups_of'):
            return np.asarray(self.groups.groups_of(docnos)).tolist()
        return [self.group_of(d) for d in docnos]

    def prime(self, window: Sequence[str]) -> None:
        """Fill :attr:`neighbour_groups` for the documents of ``window`` (a GroupCorpusGraph only; else
        :func:`~pyterrier_garen._garen.vote_groups` fills it through ``neighbours`` and ``group_of``).

        Each entry is ``tuple(set(groups of N_k(d)) - {-1})`` over the neighbours in the graph's order, so it is the
        very tuple (members and order) that the docno route builds.
        """
        cache = self.neighbour_groups
        new = [d for d in window if d not in cache]
        if not self._native or not new:
            return
        ids = self.groups.doc_ids(new)
        known = ids >= 0
        for docno in compress(new, (~known).tolist()):
            cache[docno] = ()
        rows = self._edges[ids[known]]
        keep = (rows != ids[known][:, None]).tolist()  # N_k(d) leaves d itself (the padding of short lists) out
        for docno, row_groups, row_keep in zip(compress(new, known.tolist()), self._group_ids[rows].tolist(), keep):
            cache[docno] = tuple(set(compress(row_groups, row_keep)) - {-1})

    def size(self, gid: int) -> int:
        """Number of distinct members of a group (use :attr:`sizes`, its memo)."""
        if self._native:
            return int(self._offsets[gid + 1] - self._offsets[gid]) if 0 <= gid < len(self._offsets) - 1 else 0
        return len(set(self.members(gid)))

    def members(self, gid: int) -> List[str]:
        """The group's members as docnos, in the graph's member order (do not modify)."""
        found = self._members.get(gid)
        if found is None:
            found = self._members[gid] = list(map(str, self.groups.group_members(gid)))
        return found

    def summary(self, gid: int) -> str:
        """The group's text for the navigator (``''`` when it has none)."""
        found = self._summaries.get(gid)
        if found is None:
            found = self._summaries[gid] = self.groups.summary(gid) or ''
        return found


class _Memo(dict):
    """A dict that computes a missing value with ``compute(key)`` and keeps it."""

    def __init__(self, compute: Callable[[Any], Any]):
        super().__init__()
        self.compute = compute

    def __missing__(self, key):
        value = self[key] = self.compute(key)
        return value


def _native(groups: Any) -> bool:
    """Whether ``groups`` is a GroupCorpusGraph whose look-ups are its own (none overridden by a subclass)."""
    # looked up, not imported (_group_graph imports the searches): without the module loaded there is no such graph
    GroupCorpusGraph = getattr(sys.modules.get(__package__ + '._group_graph'), 'GroupCorpusGraph', None)
    return GroupCorpusGraph is not None and isinstance(groups, GroupCorpusGraph) and all(
        getattr(type(groups), name) is getattr(GroupCorpusGraph, name)
        for name in ('neighbours', 'group_of', 'groups_of', 'doc_ids', 'group_members', 'group_member_ids'))


@dataclass
class GARENState(QueryState):
    """A query's :class:`QueryState` plus GAREN's bookkeeping of the groups it has met.

    Everything here grows monotonically with the search, as ``observed`` and the navigator cache do.
    """
    members: Dict[int, List[str]] = field(default_factory=dict)  # group -> members in expansion order
    best_rank: Dict[int, int] = field(default_factory=dict)  # group -> best first-stage rank of a member
    first_open: Dict[int, int] = field(default_factory=dict)  # group -> position of its first unobserved member
    r0_groups: Optional[List[int]] = None  # Omega(d) of every document of R_0 (set by start)
    observed_in: Dict[int, int] = field(default_factory=dict)  # group -> its observed members (first `counted` docs)
    counted: int = 0
    fill_from: int = 0  # R_0 before this position holds no document whose group the fill rule could still add
    sources: Dict[str, int] = field(default_factory=dict)  # last expansion: docno -> 0 first stage, 1 group, 2 k-NN
    # the shares' evidence (adaptive_interleave, frontier): kept and seen expansion documents of each source in turn
    source_counts: List[int] = field(default_factory=lambda: [0, 0, 0, 0, 0, 0])

    def start(self, view: GroupView) -> None:
        """On the first expansion: the groups of ``R_0`` and each group's best first-stage rank."""
        if self.r0_groups is not None:
            return
        self.r0_groups = view.groups_of(self.r0) if self.r0 else []
        # from the bottom up, so that each group's best (smallest) rank is the one written last
        self.best_rank.update(zip(reversed(self.r0_groups), range(len(self.r0_groups) - 1, -1, -1)))

    def ordered(self, view: GroupView, gid: int) -> List[str]:
        """A group's members in expansion order: first-stage rank order, then members absent from ``R_0`` in the
        graph's member order."""
        found = self.members.get(gid)
        if found is None:
            rank0, docs = self.rank0, view.members(gid)
            found = self.members[gid] = sorted((d for d in docs if d in rank0), key=rank0.__getitem__) + \
                [d for d in docs if d not in rank0]
        return found

    def pool(self, view: GroupView, gid: int) -> List[str]:
        """A group's unobserved members in expansion order."""
        found, observed = self.ordered(view, gid), self.observed
        i = self.first_open.get(gid, 0)  # observation only grows, so the first unobserved member only moves on
        while i < len(found) and found[i] in observed:
            i += 1
        self.first_open[gid] = i
        return [d for d in islice(found, i, None) if d not in observed]

    def count_observed(self, view: GroupView) -> None:
        """Bring ``observed_in`` up to date with the documents observed since the last count."""
        if self.counted < len(self.observed):
            counts, group_of = self.observed_in, view.group_of
            for docno in islice(self.observed, self.counted, None):
                g = group_of(docno)
                if g != -1:
                    counts[g] = counts.get(g, 0) + 1
            self.counted = len(self.observed)

    def is_open(self, view: GroupView, gid: int) -> bool:
        """Whether a group still holds an unobserved member."""
        self.count_observed(view)
        return self.observed_in.get(gid, 0) < view.sizes[gid]

    def fill_groups(self) -> Iterator[int]:
        """The groups of the unobserved documents of ``R_0``, in rank order (the fill rule of ``select_groups``)."""
        r0, groups, observed, scored = self.r0, self.r0_groups, self.observed, self.cache
        i = self.fill_from  # a prefix of observed documents and groups without one or already scored stays so
        while i < len(r0) and (r0[i] in observed or groups[i] == -1 or groups[i] in scored):
            i += 1
        self.fill_from = i
        return (gid for docno, gid in zip(islice(r0, i, None), islice(groups, i, None)) if docno not in observed)


def by_value(groups: List[int], value: Callable[[int], float], votes: Dict[int, int],
             best_rank: Dict[int, int]) -> List[int]:
    """``groups`` (distinct, as GAREN passes them; duplicates are kept) sorted by ``(-value(g), -votes.get(g, 0),
    best_rank.get(g, inf), g)``: the order of the eligible groups.

    One sort by value (the navigator's scores rarely tie), then each run of equal values by the rest of the key.
    """
    values = list(map(value, groups))
    order = sorted(range(len(groups)), key=values.__getitem__, reverse=True)  # equal values keep their order
    out = [groups[i] for i in order]
    if len(set(values)) == len(values):  # no ties (the usual case): nothing more to sort
        return out
    values = [values[i] for i in order]
    start = 0
    for end in range(1, len(out) + 1):
        if end == len(out) or values[end] != values[start]:
            if end - start > 1:
                out[start:end] = sorted(out[start:end], key=lambda g: (-votes.get(g, 0), best_rank.get(g, math.inf),
                                                                       g))
            start = end
    return out
