"""First-stage fusion as a pipeline stage of its own: ``system >> FirstStageFusion(first_stage, weight)``.

Any system's final ranking can be mixed with the first-stage ranking it started from, so a table that gives one
system this help can give it to all of them (``compare --fusion W``, ``strength_sweep.py --fusion W``).
"""
from __future__ import annotations

import warnings
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from ._frames import check_distinct_qids, check_present, numeric_order, ranked_groups, renumber
from ._params import Rebuildable, check_int, check_nonnegative, check_positive

__all__ = ['FirstStageFusion', 'fuse_first_stage', 'FUSION_K', 'FUSION_HEAD']

#: Rank constant of the reciprocal-rank fusion of a final order with the first-stage order.
FUSION_K = 60
#: Documents above the tail of the depth-aware fusion (what nDCG@10 sees; GAREN's propagation depth too).
FUSION_HEAD = 10


def fuse_first_stage(order: Sequence[str], rank0: Dict[str, int], weight: float, k: int = FUSION_K, *,
                     tail_weight: Optional[float] = None, head: int = FUSION_HEAD,
                     observed: Optional[Dict[str, int]] = None, observed_weight: float = 0.) -> List[str]:
    """Reciprocal-rank fusion of a final order with the first-stage order ``R_0`` (0-based ranks in ``rank0``).

    ``score(d) = 1 / (k + i) + weight / (k + r)`` with ``i`` the 1-based position in ``order`` and ``r`` the 1-based
    first-stage rank (no second term for a document absent from ``R_0``); ties keep ``order``. With ``tail_weight``
    or ``observed_weight`` (depth-aware fusion) the first ``head`` documents of that fused order stay as they are and
    the others are sorted by ``1 / (k + i) + tail_weight / (k + r) + observed_weight / (k + o)`` (``tail_weight``
    None: ``weight``; ``o`` the 1-based rank in the search's observation order, 0-based in ``observed``).
    """
    def fused(docnos, w, v=0.):
        def score(i, docno):
            r = rank0.get(docno)
            first = w / (k + r + 1) if r is not None else 0.
            return 1 / (k + i) + first + (v / (k + observed[docno] + 1) if v else 0.)
        return [d for _, _, d in sorted((-score(i, d), i, d) for i, d in docnos)]
    out = fused(enumerate(order, start=1), weight)
    if (tail_weight is None and not observed_weight) or head >= len(out):
        return out
    placed = set(out[:head])
    rest = [(i, d) for i, d in enumerate(order, start=1) if d not in placed]
    return out[:head] + fused(rest, weight if tail_weight is None else tail_weight, observed_weight)



def _ranked(frame: pd.DataFrame, context: object) -> Dict[str, List[str]]:
    """``{qid: docnos}`` of a first-stage result frame by ``rank`` (else descending ``score``, else row order), each
    docno once, at its best-placed row (as every search reads ``R_0``), with a warning counting the others."""
    pt.validate.columns(frame, includes=['qid', 'docno'], context=context)
    check_present(frame, ('qid', 'docno'), context, 'first-stage rows')
    check_distinct_qids(pd.unique(frame['qid']), context)
    frame = numeric_order(frame, context)
    order = [c for c in ('rank', 'score') if c in frame.columns][:1]
    if order:
        frame = frame.sort_values(order, ascending='rank' in order, kind='stable')
    ranked, dropped = {}, 0
    for qid, group in frame.groupby('qid', sort=False):
        docnos = group['docno'].astype(str).tolist()
        ranked[str(qid)] = list(dict.fromkeys(docnos))
        dropped += len(docnos) - len(ranked[str(qid)])
    if dropped:
        warnings.warn(f'{context!r}: {dropped} first-stage rows repeat a docno ranked higher for the same query; '
                      'each docno counts at its best-placed row', stacklevel=4)
    return ranked


class FirstStageFusion(Rebuildable, pt.Transformer):
    """Weighted reciprocal-rank fusion of a ranking with the first-stage ranking ``R_0`` (beyond the paper).

    For each document ``d`` of the input ranking, at 1-based position ``i`` there and 1-based rank ``r`` in ``R_0``:

        ``score(d) = 1 / (k + i) + weight / (k + r)``  (no second term when ``d`` is not in ``R_0``)

    and the documents are sorted by it, ties in input order. With ``tail_weight`` (depth-aware fusion, beyond the
    paper) only the first ``head`` documents of that order are kept as they are; the documents below them are
    sorted by the same score with ``tail_weight`` in place of ``weight`` (their positions ``i`` still those of the
    input), so the head that nDCG@10 sees keeps its order while the tail leans on ``R_0`` more. ``observed_weight``
    adds ``observed_weight / (k + o)`` below the head, ``o`` the 1-based rank of the document in the order in which the
    search first looked at it: by the input's ``iteration`` column (what every adaptive search here and
    pyterrier-adaptive's GAR write; a negative or missing value, GAR's backfill, counts as last; ties in input
    order). A frame without the column (or a query with no value in it), such as plain re-ranking's, comes from a
    stage that looked at its pool in ``R_0``'s order, so there ``o`` is the document's rank in ``R_0`` (documents
    absent from ``R_0`` last, in input order). Only the input's
    documents are returned (unlike ``pyterrier_alpha.fusion.RRFusion``, which also adds documents found only in
    ``R_0``), so a re-ranker's budget and depth stay as they were. It is the fusion GAREN's ``fusion`` option
    applies inside the search:
    ``bm25 >> GAREN(..., fusion=w)`` and ``bm25 >> GAREN(...) >> FirstStageFusion(bm25, w)`` rank alike.

    Required input columns: ``['qid', 'docno']`` plus ``rank`` or ``score``. Output: the input rows (every column
    kept; of a docno repeated within a query only its best-placed row, with a warning) in the fused order, with
    ``rank`` 0-based and ``score`` strictly decreasing with it (the number of the query's documents minus the rank,
    so evaluation tools cannot re-sort ties by docno).
    """

    def __init__(self, first_stage: Union[pt.Transformer, pd.DataFrame], weight: float = 0.1, *, k: int = FUSION_K,
                 tail_weight: Optional[float] = None, head: int = FUSION_HEAD, observed_weight: float = 0.0):
        """
        Args:
            first_stage: the first stage, run on the input's queries (``qid, query``), or its result frame.
            weight: weight of the first-stage term (0 leaves the input order as it is).
            k: the rank constant of both terms.
            tail_weight: weight of the first-stage term below the first ``head`` documents (None: ``weight`` there
                too, one fusion for the whole list).
            head: documents ordered with ``weight`` when ``tail_weight`` or ``observed_weight`` is given (default 10,
                what nDCG@10 sees).
            observed_weight: weight of the observation order below the head (0 = none).

        Raises:
            ValueError: for a negative or non-finite ``weight``, ``tail_weight`` or ``observed_weight``, a
                non-positive ``k`` or a negative ``head``.
        """
        if not isinstance(first_stage, pd.DataFrame) and not callable(first_stage):
            raise TypeError('FirstStageFusion\'s first argument is the first stage (a transformer such as BM25, or '
                            f'its result frame), got {type(first_stage).__name__} {first_stage!r}; e.g. '
                            'FirstStageFusion(bm25, 0.1)')
        check_nonnegative(weight=weight, observed_weight=observed_weight)
        if tail_weight is not None:
            check_nonnegative(tail_weight=tail_weight)
        check_positive(k=k)
        check_int('head', head, low=0, note='documents above the tail')
        self.first_stage = first_stage
        self.weight = weight
        self.k = k
        self.tail_weight = tail_weight
        self.head = head
        self.observed_weight = observed_weight

    def _first(self, inp: pd.DataFrame) -> Dict[str, List[str]]:
        if isinstance(self.first_stage, pd.DataFrame):
            return _ranked(self.first_stage, self)
        if 'query' not in inp.columns:
            raise ValueError(f'{self!r}: the input has no query column, which the first stage needs to rank each '
                             "query again; keep the query column in the ranking, or give the first stage's results "
                             'as a frame (FirstStageFusion(run_frame, ...))')
        queries = inp[['qid', 'query']].drop_duplicates('qid')
        return _ranked(self.first_stage(queries), self)

    def _first_seen(self, group: pd.DataFrame, docnos: List[str], rank0: Dict[str, int]) -> np.ndarray:
        """When the search first looked at each document of one query: its ``iteration`` (negative or missing: last),
        or, without a value in that column, its rank in ``R_0`` (a document absent from ``R_0``: last)."""
        if 'iteration' in group.columns:
            raw = group['iteration']
            values = pd.to_numeric(raw, errors='coerce')
            bad = values.isna() & raw.notna()
            if bad.any():
                at = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(f'{self!r}: the input\'s iteration column must hold numbers (the step in which the '
                                 f'search first looked at each document); got {raw.iloc[at]!r} for docno '
                                 f'{docnos[at]!r}. Convert it with pd.to_numeric, or drop the column to take the first '
                                 f'stage\'s order as the observation order')
            if values.notna().any():
                return values.where(values >= 0, np.inf).to_numpy(dtype=float)
        # a re-ranker of R_0 (no search order of its own) looks at its pool in R_0's order
        return np.array([rank0.get(d, np.inf) for d in docnos], dtype=float)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Re-order every query's documents by the fused score."""
        pt.validate.columns(inp, includes=['qid', 'docno'], context=self)
        groups, dropped = ranked_groups(inp, self)
        if not groups:
            return inp.copy()
        first = self._first(inp)
        without = [qid for qid, _ in groups if str(qid) not in first]
        if without and (self.weight or self.tail_weight or self.observed_weight):
            warnings.warn(f'{self!r}: {len(without)} of the {len(groups)} queries have no first-stage ranking (e.g. '
                          f'qid {without[0]!r}; the first stage\'s qids include {sorted(first)[:3]}), so their order '
                          'is left as it was: is the first stage of these topics? (qids are compared as text)',
                          stacklevel=2)
        frames = []
        for qid, group in groups:
            docnos = group['docno'].astype(str).tolist()
            rank0 = {d: i for i, d in enumerate(first.get(str(qid), []))}
            position = {d: i for i, d in enumerate(docnos)}
            observed = None
            if self.observed_weight:
                seen = np.lexsort((np.arange(len(group)), self._first_seen(group, docnos, rank0)))
                observed = {docnos[j]: o for o, j in enumerate(seen)}
            fused = (fuse_first_stage(docnos, rank0, self.weight, self.k, tail_weight=self.tail_weight, head=self.head,
                                      observed=observed, observed_weight=self.observed_weight)
                     if self.weight or self.tail_weight is not None or self.observed_weight else docnos)
            frames.append(renumber(group.iloc[[position[d] for d in fused]].reset_index(drop=True)))
        if dropped:
            warnings.warn(f'{self!r}: dropped {dropped} duplicate docnos (kept the best-placed row of each per '
                          f'query)', stacklevel=2)
        return pd.concat(frames, ignore_index=True)
