"""The reranker's verdicts as navigation evidence for GAREN (beyond the paper; every option here is off by default).

A verdict is where the last window that re-ranked a document placed it: in the kept top ``h`` (a hit) or below it
(a miss). GAREN can let verdicts steer where it looks next in three ways:

* :func:`group_feedback`: a group's own re-ranked members (``GAREN(feedback=...)``);
* :func:`link_feedback`: the groups that re-ranked documents reach through their k-NN neighbours
  (``GAREN(link_feedback=...)``), so a group rises when the documents the reranker kept point into it, even before
  any of its own members was re-ranked;
* :func:`weighted_votes`: the candidate groups' votes (paper Eq. 5/11) counted with a weight per window document,
  1 for a kept one and ``dropped`` for one the reranker placed below the top ``h`` (``GAREN(dropped_vote=...)``;
  ``dropped = 0``: only kept documents nominate groups).
"""
from __future__ import annotations

from typing import Callable, Collection, Dict, Iterable, List, Sequence, Tuple

__all__ = ['group_feedback', 'link_feedback', 'weighted_votes']

Verdicts = Dict[str, Tuple[int, int]]  # docno -> (iteration, position) of the last window that re-ranked it


def group_feedback(last: Verdicts, group_of: Callable[[str], int], keep: int) -> Dict[int, float]:
    """The reranker's verdicts on the documents taken from each group: ``(hits - misses) / (n + 1)`` per group.

    Over the ``n`` re-ranked members of a group (every document in ``last``), a hit is a member that the last window
    re-ranking it placed in the kept top ``keep`` (position < ``keep``), a miss one it placed below; so the value is
    in (-1, 1), 0 for a group with no re-ranked member, and the ``+ 1`` shrinks the verdict on few members.
    """
    return link_feedback(last, lambda docno: () if (gid := group_of(docno)) == -1 else (gid,), keep)


def link_feedback(last: Verdicts, linked: Callable[[str], Iterable[int]], keep: int) -> Dict[int, float]:
    """The verdicts carried along the k-NN graph: ``(hits - misses) / (hits + misses + 1)`` per group.

    ``linked(d)`` are the distinct groups of the k-NN neighbours of ``d`` (without -1). Over the re-ranked documents
    ``d`` (every document in ``last``) with a neighbour in a group, a hit is one placed in the kept top ``keep`` by
    the last window that re-ranked it, a miss one placed below; each document counts once per group it reaches,
    however many of its neighbours are there. Values are in (-1, 1); a group no re-ranked document reaches gets none.
    """
    counts: Dict[int, List[int]] = {}
    for docno, (_, position) in last.items():
        miss = position >= keep
        for gid in linked(docno):
            counts.setdefault(gid, [0, 0])[miss] += 1
    return {gid: (hits - misses) / (hits + misses + 1) for gid, (hits, misses) in counts.items()}


def weighted_votes(window: Sequence[str], kept: Collection[str], linked: Callable[[str], Iterable[int]],
                   dropped: float) -> Dict[int, float]:
    """Votes of the candidate groups where a window document votes 1 if kept, ``dropped`` if not (paper: all 1).

    ``linked(d)`` are the distinct groups of the k-NN neighbours of ``d`` (without -1); ``kept`` the window's kept
    top ``h``. A group's vote is the sum of the weights of the window documents that reach it; groups whose vote is
    0 (only reached from dropped documents when ``dropped = 0``) are no candidates. Groups in order of first
    appearance among the voting documents.
    """
    votes: Dict[int, float] = {}
    for docno in window:
        weight = 1.0 if docno in kept else dropped
        if weight:
            for gid in linked(docno):
                votes[gid] = votes.get(gid, 0.) + weight
    return votes
