"""Result-frame plumbing shared by every search: reading the first stage, writing rankings, graph look-ups."""
from __future__ import annotations

import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

__all__ = ['RESULT_COLUMNS', 'first_stage', 'ranking_frame', 'neighbour_lookup', 'clean_queries',
           'check_present', 'check_one_query_per_qid', 'ranked_groups', 'renumber', 'numeric_order',
           'check_distinct_qids', 'query_columns', 'keep_query_columns', 'check_ordered']

RESULT_COLUMNS = ['qid', 'query', 'docno', 'score', 'rank']


def check_ordered(inp: pd.DataFrame, context: Any) -> None:
    """``ValueError`` naming ``context`` unless the frame has a ``rank`` or a ``score`` column to order it by."""
    if not {'rank', 'score'} & set(inp.columns):
        raise ValueError(f'{context!r}: the input needs a rank or score column to order its documents; got '
                         f'{list(inp.columns)}. Give it one (e.g. frame.assign(rank=frame.groupby("qid").cumcount()) '
                         'when each query\'s rows are in rank order)')


def first_stage(inp: pd.DataFrame, context: Optional[pt.Transformer] = None) -> List[Tuple[Any, str, List[str]]]:
    """``[(qid, query, R_0)]`` with ``R_0`` the docnos by ``rank`` (else descending ``score``).

    Duplicate docnos of a query keep their first occurrence in that order, with a warning. A frame with neither
    column is refused (:func:`check_ordered`), as every stage here refuses it: its row order may be no ranking.
    """
    pt.validate.result_frame(inp, extra_columns=['query'], context=context)
    check_ordered(inp, context)
    check_present(inp, ('qid', 'docno', 'query'), context, 'first-stage rows')
    inp = numeric_order(inp, context)
    # One pass of NumPy over row positions instead of sorting, deduplicating and grouping the frame itself: with
    # pandas' Arrow-backed strings every frame-wide step (a sort's take, duplicated, groupby) converts whole string
    # columns, about 40 ms for 93 queries x 1000 rows against 10 here. The order is the same: rows by ``rank``
    # (else descending ``score``, ties in input order, pandas' stable sort of that one column), queries in order
    # of first appearance in that order, the first occurrence of each docno kept.
    by = 'rank' if 'rank' in inp.columns else 'score'
    positions = inp[by].reset_index(drop=True).sort_values(ascending=by == 'rank', kind='stable').index.to_numpy()
    codes, qids = pd.factorize(inp['qid'], sort=False)
    check_distinct_qids(qids, context)
    if len(inp):
        _check_one_query(inp, codes, qids, context)
    codes = codes[positions]
    first = np.full(len(qids), len(positions))
    np.minimum.at(first, codes, np.arange(len(positions)))
    by_appearance = np.argsort(first, kind='stable')  # qid codes in order of first appearance after sorting
    renumber = np.empty(len(qids), dtype=np.int64)
    renumber[by_appearance] = np.arange(len(qids))
    codes = renumber[codes]
    qids = qids.take(by_appearance)
    rows = positions[np.argsort(codes, kind='stable')]  # grouped by query, each in rank order
    counts = np.bincount(codes, minlength=len(qids))
    ends = np.cumsum(counts)
    docnos = inp['docno'].astype(str).to_numpy(dtype=object)[rows]
    queries = inp['query'].iloc[rows[ends - counts]].to_numpy(dtype=object)  # each query's first row
    out, dropped = [], 0
    for qid, query, docs in zip(qids, queries, np.split(docnos, ends[:-1])):
        kept = list(dict.fromkeys(docs.tolist()))
        dropped += len(docs) - len(kept)
        out.append((qid, query, kept))
    if dropped:
        warnings.warn(f'{context!r}: dropped {dropped} duplicate docnos (kept the first occurrence of each '
                      f'per query)', stacklevel=3)
    return out


def check_present(frame: pd.DataFrame, columns: Sequence[str], context: Any, rows: str) -> None:
    """Refuse rows without a value (None/NaN) in any of ``columns``, naming how many and their qids: a groupby
    would drop a row without a qid, and a docno or query would become the text 'nan'."""
    for column in columns:
        empty = frame[column].isna().to_numpy()
        if empty.any():
            where = '' if column == 'qid' else f' (qids {sorted({str(q) for q in frame.qid[empty]})[:5]})'
            raise ValueError(f'{context!r}: {int(empty.sum())} {rows} have no {column} (None/NaN){where}; every row '
                             f'needs its {column}')


def numeric_order(frame: pd.DataFrame, context: Any, column: Optional[str] = None) -> pd.DataFrame:
    """``frame`` with the column that orders its documents (``column``, else ``rank``, else ``score``) as numbers.

    A run read with ``dtype=str`` holds its numbers as text, which sorts '9' above '12'; such a column is read as
    the numbers it holds. A value that is no number is refused, naming the column, the value and the fix.
    """
    column = column or next((c for c in ('rank', 'score') if c in frame.columns), None)
    if column is None or pd.api.types.is_numeric_dtype(frame[column]):
        return frame
    raw = frame[column]
    values = pd.to_numeric(raw, errors='coerce')
    bad = (values.isna() & raw.notna()).to_numpy()
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise ValueError(f'{context!r}: the input\'s {column} column orders its documents and must hold numbers; got '
                         f'{raw.iloc[at]!r} (qid {frame.qid.iloc[at]!r}, docno {frame.docno.iloc[at]!r}; '
                         f'{int(bad.sum())} rows like this). Give every row a number, or drop the column')
    return frame.assign(**{column: values.to_numpy()})


def check_distinct_qids(qids: Sequence[Any], context: Any) -> None:
    """Refuse distinct qids that are the same text (``1`` and ``'1'``): results and the reranker's answers name a
    query by its qid as text, so two such queries would be merged and take each other's scores."""
    seen: Dict[str, Any] = {}
    for qid in qids:  # distinct values (pd.factorize / pd.unique: 1, 1.0 and numpy's 1 are one value)
        other = seen.setdefault(str(qid), qid)
        if other is not qid:
            raise ValueError(f'{context!r}: the qids {other!r} ({type(other).__name__}) and {qid!r} '
                             f'({type(qid).__name__}) are different values with the same text, and would be merged '
                             'into one query; give every qid one type (e.g. topics.assign(qid=topics.qid.astype(str)))')


def check_one_query_per_qid(frame: pd.DataFrame, context: Any = None) -> None:
    """Refuse rows where one qid carries two different query texts (they would be searched as one query), or two
    qids with the same text (``1`` and ``'1'``)."""
    if frame.empty:
        return
    codes, qids = pd.factorize(frame['qid'], sort=False)
    check_distinct_qids(qids, context)
    _check_one_query(frame, codes, qids, context)


def _check_one_query(frame: pd.DataFrame, codes: np.ndarray, qids: Any, context: Any) -> None:
    """:func:`check_one_query_per_qid` given ``pd.factorize(frame['qid'], sort=False)`` (rows without a qid or a
    query are not counted, as in a groupby)."""
    texts, _ = pd.factorize(frame['query'], sort=False)
    known = (codes >= 0) & (texts >= 0)
    width = int(texts.max()) + 1 if len(texts) else 1
    pairs = np.unique(codes[known].astype(np.int64) * width + texts[known])
    counts = np.bincount(pairs // width, minlength=len(qids))
    clashing = np.flatnonzero(counts > 1)  # codes number the qids in order of first appearance
    if len(clashing):
        qid = qids[clashing[0]]
        clash = frame.loc[codes == clashing[0], 'query']
        examples = list(dict.fromkeys(clash[clash.notna()]))[:2]
        raise ValueError(f'{context!r}: qid {qid!r} carries {int(counts[clashing[0]])} different queries (e.g. '
                         f'{examples[0]!r} and {examples[1]!r}; {len(clashing)} qids like this); each qid must name '
                         'one query: give the queries distinct qids')


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


def query_columns(columns: Sequence[str], taken: Sequence[str] = ()) -> List[str]:
    """The query columns among ``columns`` that a search passes on, besides ``qid`` and ``query``: PyTerrier's
    (``pt.model.query_columns``: ``query_0`` and every other name starting with ``q``, stashed results), less the
    names in ``taken`` (the search's own output columns), in the order of ``columns`` (PyTerrier's own list follows
    a set's order, which changes from one process to the next)."""
    names = set(pt.model.query_columns(pd.DataFrame(columns=list(columns)), qid=False))  # a set's order: not used
    return [c for c in columns if c in names and c != 'query' and c not in taken]  # in the input's order


def keep_query_columns(out: pd.DataFrame, inp: pd.DataFrame) -> pd.DataFrame:
    """``out`` with the query columns of ``inp`` (:func:`query_columns`), each query's values from its first row.

    A query column has one value per query, so every document of a search's ranking, found through the graph or
    not, carries it, as after any PyTerrier re-ranker (``pt.rewrite.reset()`` needs ``query_0``).
    """
    names = query_columns(inp.columns, taken=out.columns)
    if not names:
        return out
    firsts = inp.drop_duplicates('qid')
    return out.assign(**{c: out['qid'].map(dict(zip(firsts['qid'], firsts[c]))) for c in names})


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


def ranked_groups(inp: pd.DataFrame, context: object) -> Tuple[List[Tuple[object, pd.DataFrame]], int]:
    """Every query's rows of a result frame in its order (``rank`` ascending, else ``score`` descending; ties in
    row order), one row per docno (its best-placed one): ``([(qid, rows)], duplicates dropped)``.

    Raises ``ValueError`` naming ``context`` when the frame has neither a ``rank`` nor a ``score`` column, when a
    row has no qid, docno or (where the column is there) query, or when one qid carries two query texts.
    """
    check_ordered(inp, context)
    check_present(inp, [c for c in ('qid', 'docno', 'query') if c in inp.columns], context, 'input rows')
    if 'query' in inp.columns:
        check_one_query_per_qid(inp, context)
    else:
        check_distinct_qids(pd.unique(inp['qid']), context)
    inp = numeric_order(inp, context)
    order = 'rank' if 'rank' in inp.columns else 'score'
    groups, dropped = [], 0
    for qid, group in inp.groupby('qid', sort=False):
        group = group.sort_values(order, ascending=order == 'rank', kind='stable').reset_index(drop=True)
        repeated = group['docno'].astype(str).duplicated().to_numpy()
        if repeated.any():
            dropped += int(repeated.sum())
            group = group[~repeated].reset_index(drop=True)
        groups.append((qid, group))
    return groups, dropped


def renumber(group: pd.DataFrame) -> pd.DataFrame:
    """One query's rows in their final order: ``rank`` 0-based, ``score`` the number of rows minus the rank (strictly
    decreasing, so evaluation tools cannot re-sort ties by docno)."""
    n = len(group)
    return group.assign(score=np.arange(n, 0, -1, dtype=float), rank=np.arange(n))
