"""GAREN: group-aware adaptive re-ranking (paper Algorithm 1, Section 4.3, Appendix E).

This module holds the pure steps of the algorithm (iterations, votes, the navigator budget, expansion, propagation),
the window loop of Algorithm 1 written as a per-query coroutine (:func:`window_loop`), and the :class:`GAREN`
transformer. Batching across queries is the search driver's job (:mod:`pyterrier_garen._driver`).
"""
from __future__ import annotations

import math
from collections import Counter, abc
from functools import partial
from itertools import chain
from enum import Enum
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyterrier as pt

from ._driver import EVENT, QueryState, Search, WindowSearch, check_final_order, resolve_final_order
from ._fusion import fuse_first_stage
from ._garen_state import GARENState, GroupView, by_value
from ._params import (check_bool, check_choice, check_groups, check_head_rerank, check_int, check_nonnegative,
                      check_number, check_probability)
from ._verdicts import group_feedback, link_feedback, weighted_votes

__all__ = ['GAREN', 'Strategy', 'num_iterations', 'vote_groups', 'select_groups', 'take', 'propagate',
           'by_last_placement', 'window_loop', 'group_evidence', 'interleave', 'mix', 'source_share', 'exploit_now',
           'by_links', 'frontier', 'fuse_first_stage', 'group_feedback', 'link_feedback', 'weighted_votes']

#: Depth of the final ranking whose documents carry evidence b(d) in Group-Driven Evidence Propagation (paper Eq. 8).
PROPAGATION_DEPTH = 10
Expand = Callable[[QueryState, int, List[str], int], Search]


class Strategy(str, Enum):
    """Window expansion strategy (paper Section 4.2.2). Accepts plain strings, e.g. ``'explore'``."""
    EXPLORE = 'explore'
    EXPLOIT = 'exploit'
    EXPLORE_EXPLOIT = 'explore_exploit'


# ---------------------------------------------------------------------------------------------------------------------
# pure algorithm steps

def num_iterations(budget: int, window: int, keep: int) -> int:
    """The paper's number of iterations ``T = 1 + ceil((c - w) / (w - h))`` (1 when the budget ``c`` does not exceed
    ``w``): what :func:`window_loop` takes when every window is full."""
    return 1 + max(0, math.ceil((budget - window) / (window - keep)))


def vote_groups(window: Sequence[str], neighbours: Callable[[str], Sequence[str]],
                group_of: Callable[[str], int], *, cache: Optional[Dict[str, Tuple[int, ...]]] = None
                ) -> Dict[int, int]:
    """Candidate groups of a window and their votes (paper Eq. 5 and Eq. 11).

    Args:
        window: the window ``W_t``.
        neighbours: ``N_k(d)``, the k-NN neighbours of a document (without the document itself).
        group_of: ``Omega(d)``, the group id of a document (-1 when it has none).
        cache: optional memo ``{docno: groups of its neighbours}`` shared across calls (windows overlap).

    Returns:
        ``{group: vote}`` for every group of ``G^cand_t``, where vote = number of window documents with a neighbour
        in the group; groups in order of first appearance.
    """
    found_per_doc = [linked_groups(docno, neighbours, group_of, cache) for docno in window]
    return dict(Counter(chain.from_iterable(found_per_doc)))  # counted in order of first appearance


def linked_groups(docno: str, neighbours: Callable[[str], Sequence[str]], group_of: Callable[[str], int],
                  cache: Optional[Dict[str, Tuple[int, ...]]] = None) -> Tuple[int, ...]:
    """The distinct groups of ``N_k(d)`` (without -1), memoised in ``cache`` when given (see :func:`vote_groups`)."""
    found = cache.get(docno) if cache is not None else None
    if found is None:
        found = tuple(set(map(group_of, neighbours(docno))) - {-1})
        if cache is not None:
            cache[docno] = found
    return found


def select_groups(votes: Dict[int, int], scored: Dict[int, float], budget: int, *, best_rank: Dict[int, int],
                  is_open: Callable[[int], bool], fill: Iterable[int]) -> List[int]:
    """Groups the navigator scores in this iteration (paper Appendix E, "Budget allocation").

    Unscored candidate groups that still hold unobserved documents are ranked by vote, ties by the best first-stage
    rank of any member, then group id; the top ``K_g`` are taken. When fewer exist, the budget is filled with the
    groups of the best-ranked unobserved first-stage documents.

    Args:
        votes: ``{group: vote}`` of the candidate groups ``G^cand_t``.
        scored: the navigator cache ``Pi_q`` (groups already scored are never scored again).
        budget: ``K_g``.
        best_rank: best first-stage rank of any member of a group (groups absent from ``R_0`` rank last).
        is_open: whether a group still holds unobserved documents.
        fill: groups of the unobserved documents of ``R_0``, in rank order.

    Returns:
        The groups to score, candidates first.
    """
    chosen: List[int] = []
    if budget > 0:  # sort the unscored candidates, then test openness only until the budget is met
        for gid in _by_vote_then_rank(votes, scored, best_rank):
            if is_open(gid):
                chosen.append(gid)
                if len(chosen) >= budget:
                    break
    taken = set(chosen)
    for gid in fill:
        if len(chosen) >= budget:
            break
        if gid != -1 and gid not in scored and gid not in taken:
            chosen.append(gid)
            taken.add(gid)
    return chosen


def _by_vote_then_rank(votes: Dict[int, int], scored: Dict[int, float], best_rank: Dict[int, int]) -> Iterator[int]:
    """The unscored groups of ``votes`` by descending vote, then best first-stage rank (absent last), then id.

    Sorted one vote at a time, as the consumer reaches it: most candidates share the lowest votes and are never
    reached.
    """
    by_vote: Dict[int, List[int]] = {}
    for gid, vote in votes.items():
        if gid not in scored:
            by_vote.setdefault(vote, []).append(gid)
    for vote in sorted(by_vote, reverse=True):
        yield from sorted(by_vote[vote], key=lambda g: (best_rank.get(g, math.inf), g))


def take(pools: Sequence[Sequence[str]], n: int, *, round_robin: bool) -> List[str]:
    """Expansion documents ``X_t`` from ordered pools (paper Section 4.2.2).

    Args:
        pools: per eligible group (in descending navigator score), its unobserved documents in order.
        n: number of documents to take (``w - h``, or what is left of the budget).
        round_robin: explore (one document from each pool in turn) if True, exploit (exhaust the best pool, then
            the next) if False.

    Returns:
        Up to ``n`` documents, without duplicates.
    """
    if round_robin:  # depth by depth; touches a pool only when its turn comes (pools may be computed lazily)
        def rounds():
            depth, more = 0, True
            while more:
                more = False
                for pool in pools:
                    if depth < len(pool):
                        more = True
                        yield pool[depth]
                depth += 1
        order = rounds()
    else:
        order = (docno for pool in pools for docno in pool)
    out: Dict[str, None] = {}
    for docno in order:
        if len(out) >= n:
            break
        out.setdefault(docno)
    return list(out)


def propagate(final: Sequence[str], observed: Iterable[str], last: Dict[str, Tuple[int, int]],
              group_of: Callable[[str], int], p: float, alpha: float, *,
              order: Optional[Sequence[str]] = None, head: Optional[int] = None) -> List[str]:
    """Group-Driven Evidence Propagation (paper Section 4.3, Eq. 8-9); returns the final order of the observed docs.

    ``b(d) = (1-p) p^(rank(d)-1)`` for the top :data:`PROPAGATION_DEPTH` documents of the last re-ranked window
    ``W~_T`` (0 otherwise) and ``score(d) = b(d) + alpha * sum(b(d') for observed d' with Omega(d') = Omega(d))``.
    The sum includes ``d`` itself (the paper's condition does not exclude it); documents without a group (-1) get no
    group term. Ties (most documents score 0) keep the order in which the reranker last placed them: later
    iterations first, then window position.

    Args:
        final: ``W~_T``.
        observed: every observed document.
        last: ``(iteration, position)`` of the last re-ranked window each document appeared in.
        group_of: ``Omega(d)``.
        p: RBP decay ``p``.
        alpha: propagation weight ``alpha``.
        order: (beyond the paper) when given, ties keep this order of the observed documents instead of the last
            placement (see GAREN's ``final_order``).
        head: (beyond the paper, with ``order``) when given, only the first ``head`` documents of the propagated order
            are taken; the others follow ``order`` (group membership alone does not lift a document there).
    """
    base = {d: (1 - p) * p ** i for i, d in enumerate(final[:PROPAGATION_DEPTH])}
    position = {d: i for i, d in enumerate(order)} if order is not None else None
    bonus: Dict[int, float] = {}
    for docno, b in base.items():
        gid = group_of(docno)
        if gid != -1:
            bonus[gid] = bonus.get(gid, 0.) + b

    def key(docno):
        gid = group_of(docno)
        score = base.get(docno, 0.) + (alpha * bonus.get(gid, 0.) if gid != -1 else 0.)
        if position is not None:
            return -score, position[docno]
        return -score, -last[docno][0], last[docno][1]
    ranked = sorted(observed, key=key)
    if head is None or order is None:
        return ranked
    placed = set(ranked[:head])
    return ranked[:head] + [d for d in order if d not in placed]


def by_last_placement(observed: Iterable[str], last: Dict[str, Tuple[int, int]]) -> List[str]:
    """Observed documents in the order the reranker last placed them: later iterations first, then position."""
    return sorted(observed, key=lambda d: (-last[d][0], last[d][1]))


# ---------------------------------------------------------------------------------------------------------------------
# options beyond the paper (all off by default; see GAREN's keyword arguments)

MEMBER_ORDERS = ('first_stage', 'evidence')


def group_evidence(top: Sequence[str], group_of: Callable[[str], int], p: float) -> Dict[int, float]:
    """Reranker evidence per group: ``sum((1-p) p^i)`` over the group's members at 0-based position ``i`` of ``top``.

    ``top`` is the current top ``h`` of the re-ranked window ``W~_t[:h]``; documents without a group add nothing.
    """
    evidence: Dict[int, float] = {}
    for i, docno in enumerate(top):
        gid = group_of(docno)
        if gid != -1:
            evidence[gid] = evidence.get(gid, 0.) + (1 - p) * p ** i
    return evidence


def interleave(from_groups: Sequence[str], from_first_stage: Sequence[str], n: int, every: int) -> List[str]:
    """Up to ``n`` expansion documents where slots ``every, 2*every, ...`` (1-based) come from the first stage.

    When one source runs dry the other fills its slots; duplicates are taken once.
    """
    return _fill_slots(from_groups, from_first_stage, n, lambda position: position % every == 0)


def mix(from_groups: Sequence[str], from_first_stage: Sequence[str], n: int, share: float) -> List[str]:
    """Up to ``n`` expansion documents, a ``share`` of the slots (spread evenly) from the first stage.

    Slot ``i`` (1-based) goes to the first stage when ``round(i * share)`` grows there, so ``round(n * share)`` of
    ``n`` slots do. When one source runs dry the other fills its slots; duplicates are taken once.
    """
    return _fill_slots(from_groups, from_first_stage, n, lambda position: math.floor(position * share + 0.5) >
                       math.floor((position - 1) * share + 0.5))


def _fill_slots(from_groups: Sequence[str], from_first_stage: Sequence[str], n: int,
                first_stage_slot: Callable[[int], bool]) -> List[str]:
    """Slots ``1..n`` filled from the first stage where ``first_stage_slot(i)``, else from the groups; a source that
    runs dry leaves its slots to the other, and a document is taken once."""
    sources = [iter(from_groups), iter(from_first_stage)]
    out: Dict[str, None] = {}
    position = 0
    while len(out) < n:
        position += 1
        first = 1 if first_stage_slot(position) else 0
        docno = next(sources[first], None)
        if docno is None:
            docno = next(sources[1 - first], None)
            if docno is None:
                break
        out.setdefault(docno)
    return list(out)


def source_share(kept_first_stage: int, seen_first_stage: int, kept_groups: int, seen_groups: int,
                 prior: float = 0.5) -> float:
    """Share of the next expansion's slots for the first stage, from how often each source's documents entered the
    kept top ``h``.

    Each source's rate is ``(kept + 1) / (seen + 2)``; the share's odds are the ``prior`` share's odds times the
    ratio of the two rates, so the share is ``prior`` before any evidence and moves towards the source whose
    documents the reranker keeps.
    """
    first = prior * (kept_first_stage + 1) / (seen_first_stage + 2)
    groups = (1 - prior) * (kept_groups + 1) / (seen_groups + 2)
    return first / (first + groups)


def exploit_now(top: Sequence[str], group_of: Callable[[str], int], eligible: Iterable[int], min_members: int) -> bool:
    """Evidence-driven switch: exploit when an eligible group already holds ``min_members`` docs of the top ``h``."""
    counts: Dict[int, int] = {}
    for docno in top:
        counts[group_of(docno)] = counts.get(group_of(docno), 0) + 1
    return any(counts.get(g, 0) >= min_members for g in eligible if g != -1)


def frontier(top: Sequence[str], neighbours: Callable[[str], Sequence[str]], observed: abc.Container,
             n: int) -> List[str]:
    """Up to ``n`` unobserved k-NN neighbours of the documents of ``top``: those more documents of ``top`` list first,
    ties by the position of the best-placed document of ``top`` that lists them, then by its neighbour order."""
    links = _link_counts(top, neighbours)  # in order of first listing: best-placed linker, nearest neighbour first
    return sorted((d for d in links if d not in observed), key=lambda d: -links[d])[:n]  # stable


def _link_counts(top: Sequence[str], neighbours: Callable[[str], Sequence[str]]) -> Dict[str, int]:
    """``{docno: how many documents of top list it as a k-NN neighbour}``, in order of first listing."""
    links: Dict[str, int] = {}
    for docno in top:
        for nb in neighbours(docno):
            links[nb] = links.get(nb, 0) + 1
    return links


def by_links(pool: Sequence[str], top: Sequence[str], neighbours: Callable[[str], Sequence[str]]) -> List[str]:
    """Member-aware order: members that more documents of ``top`` list as k-NN neighbours first (stable)."""
    links = _link_counts(top, neighbours)
    return sorted(pool, key=lambda d: -links.get(d, 0))


# ---------------------------------------------------------------------------------------------------------------------
# the window loop of Algorithm 1

def window_loop(state: QueryState, expand: Expand, *, window: int, keep: int, budget: int) -> Search:
    """Algorithm 1's window loop for one query; returns the last re-ranked window ``W~_T``.

    ``W_1`` is the first-stage top ``w`` (at most ``c``). Each iteration re-ranks ``W_t``, then, while budget is
    left, ``expand(state, t, W_t, n)`` (a coroutine that may ask the navigator) returns the expansion ``X_t`` of at
    most ``n = min(w - h, c - observed)`` documents, and ``W_{t+1} = W~_t[:h] + X_t``. When every window is full
    this spends the budget in exactly ``T`` iterations (:func:`num_iterations`, the paper's count); a first stage
    shorter than ``w``, or an expansion shorter than ``n``, leaves budget that further iterations spend (the
    paper's ``T`` would leave it unspent, while GAR, SlideGAR and RGS spend theirs). An expansion that brings
    nothing new stops the search early: the same documents are never re-ranked again to fill the budget. Yields an
    :data:`EVENT` per iteration (``iteration, window, reranked``, then ``expansion``) for the trace.
    """
    current = state.r0[:min(window, budget)]
    reranked: List[str] = []
    t = 0
    while current:
        t += 1
        for docno in current:
            state.observed.setdefault(docno, t)
        reranked = yield from state.rerank(current)  # records last[d] = (t, position) and the scores
        yield EVENT, {'iteration': t, 'window': current, 'reranked': reranked}
        n = min(window - keep, budget - len(state.observed))
        if n <= 0:
            break
        expansion = yield from expand(state, t, current, n)
        yield EVENT, {'iteration': t, 'expansion': expansion}
        new = [docno for docno in expansion if docno not in state.observed]  # never re-ranked again to fill
        if not new:  # empty, or nothing new: the search ends
            break
        current = reranked[:keep] + new
    return reranked


# ---------------------------------------------------------------------------------------------------------------------
# the transformer

class GAREN(WindowSearch):
    """Group-Aware Adaptive Retrieval for Evidence Navigation (GAREN).

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score`` (the first-stage ranking
    ``R_0``; other columns, e.g. ``text``, are ignored and not carried to the output, as in pyterrier-adaptive's
    GAR: the documents found through the graph have no values for them; add text after the search with
    ``pt.text.get_text``).

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration', 'group']``: every observed document
    (at most ``budget`` per query) in the final order; ``score`` strictly decreases with rank (it is derived from the
    order, so that evaluation tools cannot re-sort ties by docno), ``iteration`` is the 1-based iteration in which the
    document first entered a window, ``group`` its group id (-1 when it is not in the graph).

    Each iteration ``t`` re-ranks the window ``W_t`` (``W_1`` = the top ``w`` of ``R_0``), scores up to ``K_g`` new
    groups around it with the navigator, and builds ``W_{t+1} = W~_t[:h] + X_t`` from the best groups (explore:
    round-robin over the eligible groups by descending navigator score; exploit: depth-first), backfilling from
    ``R_0`` when the groups run dry; it stops when the budget is spent (after ``T = 1 + ceil((c - w) / (w - h))``
    iterations when every window is full; a first stage shorter than ``w`` takes more) or earlier when nothing new
    can enter. Finally Group-Driven Evidence Propagation (:func:`propagate`) orders all observed docs.
    All queries advance in lock-step: every iteration makes ONE reranker call with the windows of all active queries
    and at most ONE navigator call with all their new groups.

    Decisions beyond the paper (see also :func:`select_groups`, :func:`propagate`):

    * a candidate group whose members were all observed is not sent to the navigator (it could never be expanded);
    * eligible groups with equal navigator scores are ordered by vote, then best first-stage rank, then group id;
    * within a group, unobserved members in first-stage rank order, members absent from ``R_0`` after them in the
      graph's member order;
    * the last expansion is cut to what is left of the budget; ``budget < window`` truncates ``W_1`` to ``budget``.

    With a pointwise reranker GAREN re-ranks only the first-stage top ``w`` directly, so it trades some top-10
    precision against plain top-``c`` re-ranking for recall beyond the first stage.

    The reranker receives ``qid, query, docno, score, rank`` rows (``score``/``rank`` encode the current window
    order) and must fetch text itself (e.g. ``pt.text.get_text(dataset, 'text') >> reranker``); each window is ordered
    by descending returned score, ties by window order. The navigator receives ``qid, query, docno, text, vote`` rows:
    ``docno`` = the group id as a string, ``text`` = ``groups.summary(gid)``, ``vote`` = its vote in that iteration (0
    for groups added by the first-stage fill rule; weighted, so possibly fractional, with ``dropped_vote < 1``).

    After :meth:`transform`, ``last_stats`` holds per-query accounting (``qid, docs_reranked, groups_scored,
    reranker_calls, navigator_calls, iterations``) and, with ``trace=True``, ``last_trace`` one dict per query and
    iteration (``qid, iteration, window, reranked, mode, candidates, scored, eligible, chosen_groups, expansion,
    backfill``).
    """
    def __init__(self,
                 reranker: pt.Transformer,
                 groups: Any,
                 navigator: pt.Transformer,
                 *,
                 window: int = 20,
                 keep: int = 10,
                 budget: int = 100,
                 group_budget: int = 20,
                 tau_switch: int = 4,
                 strategy: Strategy = Strategy.EXPLORE_EXPLOIT,
                 propagate: bool = True,
                 p: float = 0.6,
                 alpha: float = 0.01,
                 evidence_weight: float = 0.0,
                 interleave: int = 0,
                 adaptive_interleave: float = 0.0,
                 switch_members: int = 0,
                 fusion: float = 0.0,
                 tail_fusion: Optional[float] = None,
                 observed_fusion: float = 0.0,
                 member_order: str = 'first_stage',
                 final_order: str = 'auto',
                 feedback: float = 0.0,
                 link_feedback: float = 0.0,
                 dropped_vote: float = 1.0,
                 vote_weight: float = 0.0,
                 frontier: float = 0.0,
                 first_stage_floor: float = 0.0,
                 head_rerank: int = 0,
                 trace: bool = False,
                 verbose: bool = False):
        """
        Args:
            reranker: document-level reranker; scores ``(qid, query, docno)`` rows (listwise scores encode order).
            groups: the group graph (``neighbours``, ``group_of``, ``group_members``, ``summary``), e.g. a
                :class:`~pyterrier_garen.GroupCorpusGraph`.
            navigator: group-level navigator; scores ``(qid, query, docno=<group id>, text=<summary>, vote)`` rows.
            window: window size ``w``.
            keep: documents kept from one window to the next, ``h`` (``h < w``).
            budget: total number of distinct documents re-ranked per query, ``c``.
            group_budget: new groups scored by the navigator per iteration, ``K_g``.
            tau_switch: last exploring iteration ``tau_switch`` (explore while ``t <= tau_switch``).
            strategy: ``'explore_exploit'`` (paper), ``'explore'`` (always explore) or ``'exploit'`` (always exploit).
            propagate: apply Group-Driven Evidence Propagation; if False the final order is the last re-ranked window,
                then the other observed documents in the order the reranker last placed them.
            p: RBP decay ``p`` of the propagation.
            alpha: propagation weight ``alpha``.
            evidence_weight: (beyond the paper; 0 = off) ``lambda`` of the evidence-aware group value: eligible
                groups are ordered by navigator score ``+ lambda *`` :func:`group_evidence` of the current top ``h``,
                so expansion also follows what the reranker has confirmed.
            interleave: (beyond the paper; 0 = off) every ``interleave``-th expansion slot goes to the best
                unobserved first-stage document (:func:`interleave`), so more of the first stage's head is re-ranked.
            adaptive_interleave: (beyond the paper; 0 = off) the reranker decides that share instead: each
                expansion gives the first stage's best unobserved documents the share :func:`source_share` of its
                slots (:func:`mix`), from how often each source's earlier expansion documents entered the kept top
                ``h``; the value, in (0, 1), is the share of the first expansion (the prior). The source whose
                documents the reranker keeps gets more slots; a reranker that shares the navigator's embedding
                space keeps the navigator's picks, so the share then falls (docs/results.md, sixth pass;
                :func:`~pyterrier_garen.analysis.share_summary` reads it from the trace). Not with ``interleave``.
            switch_members: (beyond the paper; 0 = off, the fixed ``tau_switch``) explore until an eligible group
                holds ``switch_members`` documents of the current top ``h``, exploit in those iterations
                (:func:`exploit_now`); replaces ``tau_switch`` for ``strategy='explore_exploit'``.
            fusion: (beyond the paper; 0 = off) weight of the first-stage order in a reciprocal-rank fusion with the
                final order (:func:`fuse_first_stage`), after propagation (or none).
            tail_fusion: (beyond the paper; None = off) depth-aware fusion: below the top 10 of the fused order,
                ``tail_fusion`` replaces ``fusion`` as the first-stage weight (:func:`fuse_first_stage`).
            observed_fusion: (beyond the paper; 0 = off) below that top 10, the weight of the order in which the
                search first observed each document (iteration, then final position) in the same fusion.
            member_order: (beyond the paper) order of a group's unobserved members: ``'first_stage'`` (paper) or
                ``'evidence'``: members more k-NN-linked from the current top ``h`` first (:func:`by_links`), which
                matters for large or mixed groups.
            final_order: (beyond the paper) order of the observed documents below the kept top ``h`` before
                propagation: ``'paper'`` (the order the reranker last placed them: later iterations first, then
                window position), ``'score'`` (by the reranker's score, for rerankers whose scores compare across
                windows), ``'dropped'`` (by the position at which a window last placed them, then later iterations
                first: window-relative evidence, for listwise rerankers) or ``'auto'`` (``'dropped'`` when the
                reranker declares ``listwise = True``, else ``'score'``). Propagation then places only the top 10
                (b(d) from that order's top 10; ties by it) and the rest keep that order. See docs/decisions.md.
            feedback: (beyond the paper; 0 = off) ``beta`` of reranker feedback in navigation: eligible groups are
                ordered by their navigator value standardised over the query's scored groups (``(v - mean) / std``)
                ``+ beta *`` :func:`group_feedback`, so the groups whose documents the reranker kept rise and those
                whose documents it dropped sink.
            link_feedback: (beyond the paper; 0 = off) ``gamma``: the same standardised value also gains
                ``gamma *`` :func:`link_feedback`, the verdicts on the re-ranked documents whose k-NN neighbours lie in
                the group (groups the kept documents point into rise before any of their members was re-ranked).
            dropped_vote: (beyond the paper; 1 = paper) weight of the vote (Eq. 5/11) of a window document that the
                reranker placed below the kept top ``h`` (a kept one votes 1; :func:`weighted_votes`); 0: only the
                kept documents nominate candidate groups. An expansion that finds nothing with these votes is made
                again with every window document voting 1 (``last_resort`` in the trace), so the weight changes the
                order of looking, not how far the search reaches.
            vote_weight: (beyond the paper; 0 = off) a group's value is its navigator score ``+ vote_weight *``
                its vote, the ``vote`` column the navigator received with it (so, with ``dropped_vote=0``, the number
                of kept window documents with a k-NN neighbour in the group). It is added once, when the group is
                scored, and cached with the score; with any navigator. The weight is in the navigator's score
                units (GAREN+'s 0.02 was measured with cosines in [-1, 1]; a navigator with a wider score range needs
                a larger one for the same effect). The trace's ``scored`` keeps the navigator's own scores.
            frontier: (beyond the paper; 0 = off) a third source of expansion documents besides the groups and the
                first stage: the unobserved k-NN neighbours of the current top ``h`` (:func:`frontier`, the documents
                GAR would take next). The value, in (0, 1), is the frontier's share of the slots that do not go to
                the first stage in the first expansion (the prior); later the share follows how often each source's
                earlier expansion documents entered the kept top ``h`` (:func:`source_share`, frontier against
                groups), as ``adaptive_interleave`` does for the first stage (which then weighs itself against the
                groups and the frontier together). A document both sources offer counts as the frontier's.
            first_stage_floor: (beyond the paper; 0 = off; with ``adaptive_interleave`` only) the least share of
                every expansion's slots that goes to the first stage, whatever the verdicts: the share is
                ``max(first_stage_floor,`` :func:`source_share` ``)``. A guard for a reranker whose verdicts favour
                the groups because it shares their embedding space (a bi-encoder over the graph's own vectors), so
                that its agreement with the navigator cannot starve the first stage's head. The trace then records
                the share the verdicts gave as ``first_stage_verdict`` beside the ``first_stage_share`` used. Slots
                are whole (:func:`mix`): with ``w - h = 10`` a floor of .55 and one of .6 both give 6 slots.
            head_rerank: (beyond the paper; 0 = off) after the search, the top ``head_rerank`` documents of the
                final order go to the reranker once more (one more request per query, batched across queries, no new
                document), and their order is the reranker's answer, before propagation and fusion. With a listwise
                reranker it orders the documents below the kept top ``h`` that different windows placed; with a
                pointwise one the order is already the reranker's, so nothing changes but the cost. The stage
                :class:`~pyterrier_garen.HeadReranker` makes the same call after any system, after propagation.
            trace: record ``last_trace``.
            verbose: show a progress bar.

        Raises:
            ValueError: on a non-positive size, ``keep >= window``, an unknown strategy or a bad option value.
        """
        self.reranker = reranker
        self.groups = groups
        self.navigator = navigator
        self.window = window
        self.keep = keep
        self.budget = budget
        self.group_budget = group_budget
        self.tau_switch = tau_switch
        check_choice('strategy', strategy, [s.value for s in Strategy])
        self.strategy = Strategy(strategy)
        self.propagate = propagate
        self.p = p
        self.alpha = alpha
        self.evidence_weight = evidence_weight
        self.interleave = interleave
        self.adaptive_interleave = adaptive_interleave
        self.switch_members = switch_members
        self.fusion = fusion
        self.tail_fusion = tail_fusion
        self.observed_fusion = observed_fusion
        self.member_order = member_order
        self.final_order = final_order
        self.feedback = feedback
        self.link_feedback = link_feedback
        self.dropped_vote = dropped_vote
        self.vote_weight = vote_weight
        self.frontier = frontier
        self.first_stage_floor = first_stage_floor
        self.head_rerank = head_rerank
        self.trace = trace
        self.verbose = verbose
        self._check_sizes()
        check_probability(p=p)
        check_nonnegative(alpha=alpha)
        check_groups(groups, 'GAREN', needs=('group_of', 'group_members', 'summary', 'neighbours'))
        check_int('group_budget', group_budget, low=0, note='K_g, new groups scored per iteration')
        check_int('tau_switch', tau_switch, low=0, note='the last exploring iteration')
        check_int('interleave', interleave, low=0, note='0 = off')
        check_int('switch_members', switch_members, low=0, note='0 = off')
        check_number('evidence_weight', evidence_weight, low=0, note='0 = off')
        check_number('fusion', fusion, low=0, note='0 = off')
        check_number('tail_fusion', tail_fusion, low=0, none_ok=True, note='None = off')
        check_number('observed_fusion', observed_fusion, low=0, note='0 = off')
        check_number('feedback', feedback, low=0, note='0 = off')
        check_number('link_feedback', link_feedback, low=0, note='0 = off')
        check_number('dropped_vote', dropped_vote, low=0, high=1, note='1 = the paper: every window document votes 1')
        check_number('vote_weight', vote_weight, low=0, note='0 = off: the navigator score alone')
        check_final_order(final_order, reranker, context=type(self).__name__)
        check_choice('member_order', member_order, MEMBER_ORDERS)
        check_bool(propagate=propagate, trace=trace)
        check_number('adaptive_interleave', adaptive_interleave, low=0, high=1, high_open=True,
                     note='0 = off, else the first expansion\'s first-stage share')
        check_number('frontier', frontier, low=0, high=1, high_open=True,
                     note='0 = off, else the k-NN frontier\'s share of the first expansion\'s non-first-stage slots')
        check_number('first_stage_floor', first_stage_floor, low=0, high=1, high_open=True,
                     note="0 = off, else the least first-stage share of an expansion's slots")
        check_head_rerank(head_rerank)
        if first_stage_floor and not adaptive_interleave:
            raise ValueError(f'first_stage_floor={first_stage_floor} needs adaptive_interleave (the share it bounds '
                             f'from below); pass adaptive_interleave=0.5, or interleave=N for a fixed share')
        if adaptive_interleave and interleave:
            raise ValueError(f'adaptive_interleave={adaptive_interleave} sets the first stage\'s share of the slots '
                             f'itself; it cannot be combined with interleave={interleave}: pass one of them')

    columns = ('iteration', 'group')
    graph_param = 'groups'
    state_class = GARENState

    def _explores(self, t: int) -> bool:
        return self.strategy == Strategy.EXPLORE or (self.strategy == Strategy.EXPLORE_EXPLOIT and t <= self.tau_switch)

    def transform(self, inp):
        """Run GAREN for every query of ``inp`` (a first-stage result frame); see the class docstring."""
        self._view = GroupView(self.groups)  # what the queries of this call ask of the groups, memoised
        try:
            return super().transform(inp)
        finally:
            self._view = None

    def _search(self, state: GARENState) -> Search:
        reranked = yield from window_loop(state, self._expand, window=self.window, keep=self.keep, budget=self.budget)
        if not reranked:
            return []
        how = resolve_final_order(self.final_order, self.reranker)
        final = by_last_placement(state.observed, state.last)  # W~_T first, then the earlier windows' documents
        if how != 'paper':  # below the kept top h: every verdict the reranker gave, not when it was given
            final = self._final(state, final, min(self.keep, len(reranked)))
        if self.head_rerank and len(final) > 1:  # one more request over the top (its placements become the last)
            reranked = yield from state.rerank(final[:self.head_rerank])  # the last window W~_T now
            final = list(reranked) + final[self.head_rerank:]
        if self.propagate:
            if how == 'paper':
                final = propagate(reranked, state.observed, state.last, self.groups.group_of, self.p, self.alpha)
            else:  # propagation places the top PROPAGATION_DEPTH only: below it each document keeps its own score
                final = propagate(final, final, state.last, self.groups.group_of, self.p, self.alpha, order=final,
                                  head=PROPAGATION_DEPTH)
        if self.fusion or self.tail_fusion is not None or self.observed_fusion:
            seen = sorted(range(len(final)), key=lambda i: (state.observed[final[i]], i))
            return fuse_first_stage(final, state.rank0, self.fusion, tail_weight=self.tail_fusion,
                                    observed={final[i]: o for o, i in enumerate(seen)},
                                    observed_weight=self.observed_fusion)
        return final

    def _expand(self, state: GARENState, t: int, window: List[str], n: int, *, last_resort: bool = False) -> Search:
        """One expansion step: candidate groups, the navigator budget, explore or exploit, backfill.

        With ``dropped_vote < 1`` an expansion that finds nothing (the kept documents' groups, the frontier and
        ``R_0`` are spent) is made again with every window document voting 1 (``last_resort``): the dropped
        documents' groups are the last place to look before the search would end with budget left."""
        view = self._view
        state.start(view)
        view.prime(window)
        best_rank, is_open = state.best_rank, partial(state.is_open, view)  # each call counts new observations first
        # the current top h of W~_t (every document of W_t was just re-ranked, so last[d] = (t, position))
        top = sorted(window, key=lambda d: state.last[d][1])[:self.keep]
        if self.dropped_vote == 1 or last_resort:  # the paper's votes
            votes = vote_groups(window, state.neighbours, view.group_of, cache=view.neighbour_groups)
        else:
            votes = weighted_votes(window, set(top), self._linked(state, view), self.dropped_vote)
        chosen = select_groups(votes, state.cache, self.group_budget, best_rank=best_rank, is_open=is_open,
                               fill=state.fill_groups())
        scored = yield from state.navigate(chosen, {'docno': [str(g) for g in chosen],
                                                    'text': [view.summary(g) for g in chosen],
                                                    'vote': [votes.get(g, 0) for g in chosen]})
        if self.vote_weight:  # the vote joins the navigator score once, in the cache (Pi_q) that orders the groups
            state.cache.update({g: s + self.vote_weight * votes.get(g, 0) for g, s in scored.items()})
        evidence = group_evidence(top, view.group_of, self.p) if self.evidence_weight else {}
        value = (lambda g: state.cache[g] + self.evidence_weight * evidence.get(g, 0.)) if evidence else \
            state.cache.__getitem__
        if self.feedback or self.link_feedback:
            value = self._with_feedback(state, view, value)
        cache = state.cache  # eligible: the candidates and chosen groups that were scored and are still open
        eligible = by_value([g for g in chain(votes, (g for g in chosen if g not in votes)) if g in cache and
                             is_open(g)], value, votes, best_rank)
        if self.switch_members and self.strategy == Strategy.EXPLORE_EXPLOIT:
            explore = not exploit_now(top, view.group_of, eligible, self.switch_members)
        else:
            explore = self._explores(t)
        if self.member_order == 'evidence':
            pools = [by_links(state.pool(view, g), top, state.neighbours) for g in eligible]
        else:
            pools = _LazyPools(eligible, partial(state.pool, view))
        picked = take(pools, n, round_robin=explore)
        verdict, near_share = self._source_shares(state)
        share = None if verdict is None else max(verdict, self.first_stage_floor)  # the share the slots get
        near: set = set()
        if near_share is not None:  # the k-NN frontier takes its share of the slots the groups would fill
            offered = frontier(top, state.neighbours, state.observed, n)
            picked = mix(picked, offered, n, near_share)
            near = set(offered).intersection(picked)
        taken = set(picked)
        if self.interleave or share is not None:
            head = [d for _, d in zip(range(n), (d for d in state.unobserved_r0() if d not in taken))]
            mixed = (interleave(picked, head, n, self.interleave) if share is None else
                     mix(picked, head, n, share))
            picked = [d for d in mixed if d in taken]
            expansion = state.backfill(mixed, n)
        else:
            expansion = state.backfill(picked, n)
        if not expansion and not last_resort and self.dropped_vote != 1:
            return (yield from self._expand(state, t, window, n, last_resort=True))
        if share is not None or near_share is not None:  # where each document came from, for the next step's shares
            state.sources = {d: (2 if d in near else 1) if d in taken else 0 for d in expansion}
        from_groups = set(picked)
        event = {'iteration': t, 'mode': 'explore' if explore else 'exploit', 'candidates': votes,
                 'scored': scored, 'eligible': eligible,
                 'chosen_groups': list(dict.fromkeys(map(view.group_of, (d for d in picked if d not in near)))),
                 'backfill': [d for d in expansion if d not in from_groups]}
        if evidence:
            event['evidence'] = evidence
        if last_resort:
            event['last_resort'] = True
        if share is not None:
            event['first_stage_share'] = share
            if self.first_stage_floor:
                event['first_stage_verdict'] = verdict
        if near_share is not None:
            event['frontier'] = [d for d in expansion if d in near]
            event['frontier_share'] = near_share
        yield EVENT, event
        return expansion

    def _source_shares(self, state: GARENState) -> Tuple[Optional[float], Optional[float]]:
        """The first stage's share of the next expansion (None: ``adaptive_interleave`` is off) and the frontier's
        share of the other slots (None: ``frontier`` is off), each :func:`source_share` after counting which of
        the last expansion's documents the window just re-ranked kept in its top ``h``."""
        counts = state.source_counts  # kept, seen: first stage, groups, frontier
        for docno, source in state.sources.items():
            kept = state.last[docno][1] < self.keep  # re-ranked in that window, as every expansion document is
            counts[2 * source] += kept
            counts[2 * source + 1] += 1
        first = second = None
        if self.adaptive_interleave:  # against every other source together
            first = source_share(counts[0], counts[1], counts[2] + counts[4], counts[3] + counts[5],
                                 prior=self.adaptive_interleave)
        if self.frontier:
            second = source_share(counts[4], counts[5], counts[2], counts[3], prior=self.frontier)
        return first, second

    def _with_feedback(self, state: QueryState, view: GroupView, value: Callable[[int], float]
                       ) -> Callable[[int], float]:
        """``value`` standardised over the query's scored groups, plus ``feedback *`` :func:`group_feedback` and
        ``link_feedback *`` :func:`link_feedback`."""
        scored = np.array([v for v in state.cache.values() if math.isfinite(v)], dtype=float)
        mean = float(scored.mean()) if len(scored) else 0.
        spread = float(scored.std()) if len(scored) > 1 else 0.
        spread = spread if spread > 0 else 1.
        verdicts = group_feedback(state.last, view.group_of, self.keep) if self.feedback else {}
        links = link_feedback(state.last, self._linked(state, view), self.keep) if self.link_feedback else {}
        return lambda g: ((value(g) - mean) / spread + self.feedback * verdicts.get(g, 0.) +
                          self.link_feedback * links.get(g, 0.))

    @staticmethod
    def _linked(state: QueryState, view: GroupView) -> Callable[[str], Tuple[int, ...]]:
        """``linked(d)``: the distinct groups of ``N_k(d)``, memoised in the view (see :func:`linked_groups`)."""
        return partial(linked_groups, neighbours=state.neighbours, group_of=view.group_of, cache=view.neighbour_groups)

    def _columns(self, state, ranking):
        return {**super()._columns(state, ranking), 'group': [self.groups.group_of(d) for d in ranking]}


class _LazyPools(abc.Sequence):
    """The pools of the eligible groups, each computed when :func:`take` first reaches it."""

    def __init__(self, groups: Sequence[int], pool: Callable[[int], List[str]]):
        self.groups, self.pool, self.done = groups, pool, {}

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, i: int) -> List[str]:
        if i not in self.done:
            self.done[i] = self.pool(self.groups[i])
        return self.done[i]
