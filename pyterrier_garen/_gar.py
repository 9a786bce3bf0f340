"""``pyterrier_adaptive.GAR`` as PyTerrier can inspect it (so ``pt.Experiment`` validates it without a warning)."""
from __future__ import annotations

import copy
import warnings
from typing import List, Optional

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_adaptive

from ._driver import _call, warn_budget_covers_collection, warn_listwise_scores, warn_unknown_docnos
from ._frames import check_one_query_per_qid, check_present, keep_query_columns, numeric_order, query_columns
from ._params import Rebuildable, check_bool, check_graph, check_int, check_model

__all__ = ['GAR']

OUTPUT_COLUMNS = ['qid', 'query', 'docno', 'rank', 'score', 'iteration']


class GAR(Rebuildable, pyterrier_adaptive.GAR):
    """Graph-based Adaptive Re-ranking, exactly ``pyterrier_adaptive.GAR``, plus what PyTerrier's inspection needs.

    ``pyterrier_adaptive.GAR`` fails on an empty frame, which is how ``pt.Experiment`` finds out what a pipeline
    produces, so every experiment with it printed a "Pipeline Validation Report". This subclass declares its
    output columns (``transform_outputs``), returns an empty frame for an empty input (without a scorer call) and
    has a ``repr`` that names its settings, and warns, as every search here does, when ``num_results`` is at least
    the number of documents of the graph. Scores are the scorer's, except as the next paragraph says. GAR ranks
    every batch's documents together by score, so it needs a scorer whose scores compare across calls; it warns
    when its scorer declares ``listwise = True`` (SlideGAR is GAR's form for listwise rerankers).

    The scorer's answers reach the algorithm as they reach every other search of this package: exactly the rows
    asked, in the order asked, with a score of ``-inf`` (ranked last, and a warning that counts them) where the
    scorer gave NaN, an infinite score or no row, and without rows it was not asked about. The original takes
    whatever the scorer returns, so a NaN score landed anywhere in its ranking and a foreign row entered it.
    Every returned score is finite and follows the rank: from the first document without a usable score on
    (then the backfill, which the original would score ``-inf``, all equal, so that an evaluation ordered them by
    docno), scores go on below the lowest finite score, one apart.

    The first stage is read as every search here reads its own: docnos as text (``pyterrier_adaptive`` takes an
    integer for an internal id), ties of score in ``rank`` order whatever the order of the rows, a NaN score last,
    and one row per docno of a query (the best-placed one, with a warning).

    Required input columns: ``qid, query, docno, score``. Output columns: ``qid, query, docno, rank, score,
    iteration``.

    Args:
        scorer: scores ``(qid, query, docno, score)`` rows.
        corpus_graph: a pyterrier-adaptive ``CorpusGraph`` (e.g. a :class:`~pyterrier_garen.GroupCorpusGraph`).
        num_results: documents scored per query (the budget ``c``).
        batch_size: documents scored per scorer call (default: the scorer's ``batch_size``, else 16).
        backfill: fill up to ``num_results`` from the first stage when the graph runs out.
        enabled: ``False`` scores the first stage only (plain re-ranking).
        verbose: a progress bar over queries.
    """

    def __init__(self, scorer: pt.Transformer, corpus_graph, *, num_results: int = 1000,
                 batch_size: Optional[int] = None, backfill: bool = True, enabled: bool = True, verbose: bool = False):
        check_int('num_results', num_results, low=1, note='documents scored per query, the budget')
        check_int('batch_size', batch_size, low=1, none_ok=True, note="documents per scorer call; None: the scorer's")
        check_model('GAR', 'scorer', scorer)
        check_bool(backfill=backfill, enabled=enabled, verbose=verbose)
        if corpus_graph is not None:  # None: named when it is run
            check_graph(corpus_graph, 'GAR')
        # the parent stores every argument under its own name (batch_size=None: the scorer's, else 16)
        super().__init__(scorer, corpus_graph, num_results=num_results, batch_size=batch_size, backfill=backfill,
                         enabled=enabled, verbose=verbose)
        warn_listwise_scores(scorer, context='GAR', use='GAR ranks the documents of all its batches together by score',
                             fix='use SlideGAR (GAR for listwise rerankers) or a pointwise scorer')

    def transform_outputs(self, inp_columns: List[str]) -> List[str]:
        pt.validate.result_frame(inp_columns, extra_columns=['query', 'score'], context=self)
        return list(OUTPUT_COLUMNS) + query_columns(inp_columns, taken=OUTPUT_COLUMNS)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=['query', 'score'], context=self)
        if len(inp) == 0:
            return keep_query_columns(pd.DataFrame({c: pd.Series(dtype=object if c in ('qid', 'query', 'docno')
                                                                  else float) for c in OUTPUT_COLUMNS}), inp)
        check_graph(self.corpus_graph, 'GAR')
        check_present(inp, ('qid', 'docno', 'query'), self, 'input rows')
        check_one_query_per_qid(inp, self)
        inp = _first_stage(inp, self)
        warn_budget_covers_collection(self.num_results, self.corpus_graph, context='GAR')
        warn_unknown_docnos(inp.groupby('qid', sort=False)['docno'].agg(list), self.corpus_graph, context='GAR')
        run = copy.copy(self)
        run.scorer = _UsableScores(self.scorer)
        out = pyterrier_adaptive.GAR.transform(run, inp)
        return keep_query_columns(_finite_scores(out), inp)


def _first_stage(inp: pd.DataFrame, context: GAR) -> pd.DataFrame:
    """GAR's first stage read as every search here reads its own: docnos as text (``pyterrier_adaptive`` takes an
    integer for an internal id, so an integer docno would expand another document's neighbours), rows by descending
    score with ties by ``rank`` (else the input order; the original breaks them by the order of its input rows), a
    NaN score last, and one row per docno of a query (its best-placed one, with a warning; the original kept the
    last row's score at the first row's place)."""
    inp = numeric_order(inp, context, 'score')
    score = inp['score'].to_numpy(dtype=float)
    columns = {'docno': inp['docno'].astype(str), 'score': np.where(np.isnan(score), -np.inf, score)}
    by, ascending = ['score'], [False]
    if 'rank' in inp.columns:
        columns['rank'] = numeric_order(inp, context, 'rank')['rank']
        by, ascending = ['score', 'rank'], [False, True]
    inp = inp.assign(**columns).sort_values(by, ascending=ascending, kind='stable')
    duplicated = inp.duplicated(['qid', 'docno']).to_numpy()
    if duplicated.any():
        warnings.warn(f'{context!r}: dropped {int(duplicated.sum())} duplicate docnos (kept the best-placed row of '
                      'each per query)', stacklevel=3)
        inp = inp[~duplicated]
    return inp


class _UsableScores(pt.Transformer):
    """A scorer as the driver of this package's searches calls it (``_driver._call``): the rows asked, in order,
    with ``-inf`` where the scorer's answer is unusable."""

    def __init__(self, scorer: pt.Transformer):
        self.scorer = scorer

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        # GAR asks for at least one document per call (GAR.transform returns early for an empty input)
        inp = inp.reset_index(drop=True)
        groups = list(inp.groupby('qid', sort=False).indices.items())
        if 'rank' not in inp.columns:  # the batch order as a rank, as every search of this package sends it (so a
            rank = np.empty(len(inp), dtype=np.int64)  # wrapper that checks its scorer's columns, such as
            for _, rows in groups:  # pyterrier_caching's scorer caches, takes GAR's calls too)
                rank[rows] = np.arange(len(rows))
            inp = inp.assign(rank=rank)
        columns = [c for c in inp.columns if c not in ('qid', 'query')]
        requests = [(qid, inp['query'].iat[rows[0]], {c: inp[c].to_numpy()[rows] for c in columns})
                    for qid, rows in groups]
        scores = _call(self.scorer, requests, 'reranker')
        order = np.concatenate([rows for _, rows in groups])
        return inp.iloc[order].assign(score=np.concatenate(scores)).reset_index(drop=True)


def _finite_scores(out: pd.DataFrame) -> pd.DataFrame:
    """GAR's output with every score finite and in rank order: from a query's first ``-inf`` on (documents the
    scorer gave no usable score, then any backfill, which the original scores ``-inf - 1 - i``), scores go on
    below the query's lowest finite score, one apart."""
    scores = out['score'].to_numpy(dtype=float)
    if np.isfinite(scores).all():
        return out
    scores = scores.copy()
    for rows in out.groupby('qid', sort=False).indices.values():
        mine = scores[rows]
        bad = np.flatnonzero(~np.isfinite(mine))
        if len(bad) == 0:
            continue
        start = bad[0]
        floor = mine[:start].min() if start else 0.
        mine[start:] = floor - 1 - np.arange(len(mine) - start)
        scores[rows] = mine
    return out.assign(score=scores)
