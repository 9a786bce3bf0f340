"""One more reranker call over the top of any ranking, as a pipeline stage: ``system >> HeadReranker(reranker, 20)``.

A window search that merges window positions (``final_order='dropped'``, a listwise reranker) ranks the best rejects
of its last windows below the kept top ``h`` without ever comparing them with each other. One more call over the top
``depth`` documents puts them in the reranker's own order, at the cost of ``depth`` documents sent per query and no
new document. As a stage of its own it is offered to every system of a comparison alike (``compare --head-rerank N``,
``strength_sweep.py --head-rerank N``), before the shared first-stage fusion; GAREN makes the same call inside its
search (``GAREN(head_rerank=N)``), before its propagation.
"""
from __future__ import annotations

import warnings

import pandas as pd
import pyterrier as pt

from ._frames import ranked_groups, renumber
from ._params import Rebuildable, check_int, check_model

__all__ = ['HeadReranker']


class HeadReranker(Rebuildable, pt.Transformer):
    """Re-rank the first ``depth`` documents of every query once more with ``reranker`` (beyond the paper).

    All queries' heads go to the reranker in ONE call, as one window each (``qid, query, docno, score, rank`` rows,
    ``score``/``rank`` giving the input order, as a window search asks); the head is then sorted by the returned
    score, ties in input order, and the documents below it keep their order under it. A document the reranker
    returns no finite score for (a row dropped, NaN) goes to the bottom of the head, with a warning, as inside the
    searches. No document is added or removed, so a search's budget stays what it was; the reranker sees ``depth``
    more documents per query, all of them documents the search already re-ranked.
    After GAREN it replaces the order its propagation gave the top documents; ``GAREN(head_rerank=depth)`` makes the
    same call inside the search, before the propagation, which is how ``compare --head-rerank`` gives it to GAREN.

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``. Output: the input rows (every
    column kept, ``iteration`` included; of a docno repeated within a query only its best-placed row, with a warning)
    in the new order, with ``rank`` 0-based and ``score`` strictly decreasing with it.
    """

    def __init__(self, reranker: pt.Transformer, depth: int = 20):
        """
        Args:
            reranker: the reranker of the system it follows (pointwise or listwise; it fetches any text itself, as
                inside the searches).
            depth: documents re-ranked per query (default 20, one LLM window).

        Raises:
            ValueError: for a depth below 2 (one document has no order to change).
        """
        check_int('depth', depth, low=2, note='documents re-ranked once more per query')
        check_model('HeadReranker', 'reranker', reranker)
        self.reranker = reranker
        self.depth = depth

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Re-rank every query's head; the rest follow in input order."""
        from ._driver import rerank_handler
        pt.validate.columns(inp, includes=['qid', 'query', 'docno'], context=self)
        groups, dropped = ranked_groups(inp, self)
        if dropped:
            warnings.warn(f'{self!r}: dropped {dropped} duplicate docnos (kept the best-placed row of each per '
                          f'query)', stacklevel=2)
        if not groups:
            return inp.copy()
        requests = [(qid, group['query'].iloc[0], group['docno'].astype(str).tolist()[:self.depth])
                    for qid, group in groups]
        answers = rerank_handler(self.reranker)(requests)
        frames = []
        for (_, group), (_, _, head), ranked in zip(groups, requests, answers):
            place = {d: i for i, d in enumerate(head)}
            order = [place[d] for d in ranked] + list(range(len(head), len(group)))
            frames.append(renumber(group.iloc[order].reset_index(drop=True)))
        return pd.concat(frames, ignore_index=True)
