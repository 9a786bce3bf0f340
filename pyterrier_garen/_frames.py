"""Result-frame plumbing shared by every search: reading the first stage, writing rankings, graph look-ups."""
from __future__ import annotations

import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

__all__ = ['RESULT_COLUMNS', 'first_stage', 'ranking_frame', 'neighbour_lookup', 'clean_queries',
           'check_one_query_per_qid']

RESULT_COLUMNS = ['qid', 'query', 'docno', 'score', 'rank']


def first_stage(inp: pd.DataFrame, context: Optional[pt.Transformer] = None) -> List[Tuple[Any, str, List[str]]]:
    """``[(qid, query, R_0)]`` with ``R_0`` the docnos by ``rank`` (else descending ``score``, else input order).

    Duplicate docnos of a query keep their first occurrence in that order, with a warning.
    """
    pt.validate.result_frame(inp, extra_columns=['query'], context=context)
    for column in ('qid', 'docno', 'query'):
        empty = inp[column].isna().to_numpy()
        if empty.any():
            where = '' if column == 'qid' else f' (qids {sorted({str(q) for q in inp.qid[empty]})[:5]})'
            raise ValueError(f'{context!r}: {int(empty.sum())} first-stage rows have no {column} (None/NaN){where}; '
                             f'every row needs its {column}')
    check_one_query_per_qid(inp, context)
    order = [c for c in ('rank', 'score') if c in inp.columns][:1]
    frame = inp.sort_values(order, ascending='rank' in order, kind='stable') if order else inp
    frame = frame.assign(docno=frame['docno'].astype(str))
    duplicated = frame.duplicated(['qid', 'docno']).to_numpy()
    if duplicated.any():
        warnings.warn(f'{context!r}: dropped {duplicated.sum()} duplicate docnos (kept the first occurrence of each '
                      f'per query)', stacklevel=3)
        frame = frame[~duplicated]
    # the groups of frame.groupby('qid', sort=False), without a frame per query: qids in order of first appearance
    codes, qids = pd.factorize(frame['qid'], sort=False)
    order = np.argsort(codes, kind='stable')
    ends = np.cumsum(np.bincount(codes, minlength=len(qids)))
    docnos = np.split(frame['docno'].to_numpy(dtype=object)[order], ends[:-1])
    queries = frame['query'].to_numpy(dtype=object)[order]
    return [(qid, queries[end - len(docs)], docs.tolist()) for qid, end, docs in zip(qids, ends.tolist(), docnos)]


def check_one_query_per_qid(frame: pd.DataFrame, context: Any = None) -> None:
    """Refuse rows where one qid carries two different query texts (they would be searched as one query)."""
    if frame.empty:
        return
    counts = frame.groupby('qid', sort=False)['query'].nunique()
    clashing = counts[counts > 1]
    if len(clashing):
        qid = clashing.index[0]
        texts = list(dict.fromkeys(frame.loc[frame.qid == qid, 'query']))[:2]
        raise ValueError(f'{context!r}: qid {qid!r} carries {int(clashing.iloc[0])} different queries (e.g. '
                         f'{texts[0]!r} and {texts[1]!r}; {len(clashing)} qids like this); each qid must name one '
                         'query: give the queries distinct qids')


#: control characters (and NUL) that no search engine should see in a query; tabs and newlines included
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')


def clean_queries(topics: pd.DataFrame, source: Any = 'the topics') -> pd.DataFrame:
    """Topics with control characters (NUL, tabs, newlines, ...) in ``query`` replaced by spaces, counted in one
    warning naming the qids (PISA fails from inside on a NUL); a query left empty is an error naming its qid."""
    if 'query' not in topics.columns or topics.empty:
        return topics
    queries = topics['query'].astype(str)
    dirty = queries.str.contains(_CONTROL).to_numpy()
    if not dirty.any():
        return topics
    cleaned = queries.str.replace(_CONTROL, ' ', regex=True).str.split().str.join(' ')
    qids = [str(q) for q in topics.qid[dirty]]
    empty = [str(q) for q, text in zip(topics.qid, cleaned) if not text]
    if empty:
        raise ValueError(f'{source}: the queries of qids {empty[:5]} hold nothing but control characters; give them '
                         'query text')
    warnings.warn(f'{source}: {int(dirty.sum())} queries held control characters (NUL, tab, newline, ...), replaced '
                  f'by spaces before searching (qids {qids[:5]})', stacklevel=2)
    return topics.assign(query=cleaned.to_numpy())


def ranking_frame(rankings: List[Tuple[Any, str, List[str], Dict[str, Sequence]]],
                  columns: Sequence[str] = ()) -> pd.DataFrame:
    """Result frame of ``[(qid, query, docnos, {column: values})]``, score strictly decreasing with rank."""
    lengths = [len(docnos) for _, _, docnos, _ in rankings]
    ranks = np.concatenate([np.arange(n) for n in lengths]) if rankings else np.zeros(0, dtype=int)
    frame = pd.DataFrame({
        'qid': np.repeat([r[0] for r in rankings], lengths).astype(object),
        'query': np.repeat([r[1] for r in rankings], lengths).astype(object),
        'docno': np.concatenate([np.asarray(r[2], dtype=object) for r in rankings]) if rankings else [],
        'score': np.repeat(np.asarray(lengths, dtype=float), lengths) - ranks,
        'rank': ranks,
    }, columns=RESULT_COLUMNS)
    for col in columns:
        frame[col] = np.concatenate([np.asarray(r[3][col], dtype=int) for r in rankings]) if rankings else []
        frame[col] = frame[col].astype(int)
    return frame


def neighbour_lookup(graph: Any) -> Callable[[str], List[str]]:
    """Cached ``N_k(d)`` of a graph with ``neighbours(docno)``: docnos as ``str``, without ``d``, ``[]`` if unknown."""
    cache: Dict[str, List[str]] = {}

    def neighbours(docno: str) -> List[str]:
        if docno not in cache:
            try:
                found = graph.neighbours(docno)
            except (LookupError, ValueError):  # pyterrier-adaptive graphs raise on docnos they do not hold
                found = ()
            cache[docno] = list(dict.fromkeys(str(n) for n in found if str(n) != docno))
        return cache[docno]
    return neighbours
