"""Simulated scorers of controlled strength (analysis instruments, re-exported by :mod:`pyterrier_garen.analysis`).

They read the relevance judgements: label plus a fixed Gaussian noise drawn from a stable hash, so the same document
always gets the same score across runs, processes and batch compositions. Never retrieval models.
"""
from __future__ import annotations

import hashlib
import warnings
from statistics import NormalDist
from typing import Any, Dict, List, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from ._params import Rebuildable, check_choice, check_int, check_number, parse_group_ids

__all__ = ['SimulatedReranker', 'SimulatedNavigator', 'ListwiseView', 'stable_noise']


_NORMAL = NormalDist()


def stable_noise(qid: Any, key: Any, sigma: float, seed: int) -> float:
    """A standard-normal draw fixed by ``(qid, key, sigma, seed)``, times ``sigma``.

    The draw comes from a BLAKE2b digest of the four values (mapped to a uniform number in (0, 1), then through the
    normal inverse CDF), so it is the same in every run, process and batch; Python's salted ``hash`` is not used.
    """
    if sigma == 0:
        return 0.0
    text = '\x1f'.join((str(qid), str(key), repr(float(sigma)), str(int(seed))))
    digest = hashlib.blake2b(text.encode('utf8'), digest_size=8).digest()
    uniform = ((int.from_bytes(digest, 'big') >> 11) + 0.5) / 2 ** 53
    return float(sigma) * _NORMAL.inv_cdf(uniform)


def _label_lookup(qrels: pd.DataFrame, binary: bool, context: str) -> Dict[Tuple[str, str], float]:
    missing = [c for c in ('qid', 'docno', 'label') if c not in getattr(qrels, 'columns', ())]
    if missing:
        raise ValueError(f'{context}: qrels must be a DataFrame with qid, docno and label columns; missing {missing} '
                         '(e.g. pass dataset.get_qrels())')
    numbers = pd.to_numeric(qrels['label'], errors='coerce').to_numpy(dtype=float)  # '2' read from text is 2
    bad = np.flatnonzero(~np.isfinite(numbers))
    if len(bad):
        row = qrels.iloc[bad[0]]
        raise ValueError(f'{context}: qrels labels must be finite numbers (relevance grades); {len(bad)} are not, '
                         f'the first for qid {row["qid"]!r}, docno {row["docno"]!r}: {row["label"]!r}; fix or drop '
                         'those rows of the qrels')
    labels = np.clip(numbers, 0, None)  # negative codes (-1, -100 excluded) count as 0
    if binary:
        labels = (labels > 0).astype(float)
    keys = list(zip(qrels['qid'].astype(str), qrels['docno'].astype(str)))
    if not keys:
        warnings.warn(f'{context}: the qrels hold no judgement, so every document scores 0 plus the noise: a random '
                      'scorer (pass dataset.get_qrels() of a judged collection, or keep it on purpose as a random '
                      'control)', stacklevel=3)
    lookup: Dict[Tuple[str, str], float] = {}
    for key, label in zip(keys, labels.tolist()):
        if lookup.setdefault(key, label) != label:
            raise ValueError(f'{context}: the qrels judge qid {key[0]!r}, docno {key[1]!r} twice with different labels '
                             f'({lookup[key]:g} and {label:g}); keep one judgement per pair')
    return lookup


def _check_noise(noise: float, seed: int, context: str) -> None:
    try:
        check_number('noise (sigma)', noise, low=0)
        check_int('seed', seed)
    except ValueError as ex:
        raise ValueError(f'{context}: {ex}') from None


def _scored(inp: pd.DataFrame, scores: List[float]) -> pd.DataFrame:
    """``inp`` with ``score`` and the 0-based ``rank`` by descending score per query (ties: input order).

    Computed with numpy instead of ``pt.model.add_ranks``: GAR calls a reranker once per small batch, and the
    pandas overhead dominated sweeps with this cheap scorer.
    """
    scores = np.asarray(scores, dtype=np.float64)
    codes = pd.factorize(inp['qid'].to_numpy())[0]
    order = np.lexsort((np.arange(len(scores)), -scores, codes))
    starts = np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return inp.assign(score=scores, rank=ranks)


class SimulatedReranker(Rebuildable, pt.Transformer):
    """ANALYSIS INSTRUMENT, not a retrieval model: a pointwise scorer of controlled strength that reads the qrels.

    ``score(q, d) = label(q, d) + sigma * z(q, d)``, with ``label`` the judged grade (0 when unjudged; negative codes
    count as 0) and ``z`` a standard-normal draw fixed by ``(qid, docno, sigma, seed)`` (:func:`stable_noise`): the
    same document always gets the same score, whatever run, process or batch it is scored in. ``noise=0`` orders
    documents exactly by their labels; a larger ``noise`` gives a weaker reranker. Use it wherever a reranker goes
    (GAREN, GAR, SlideGAR, RGS, re-ranking) to measure a method as a function of reranker strength.

    At ``noise=0`` every document of one label ties with the others, and the searches order ties as the documents
    arrived. That order steers which neighbours they follow: GAR, SlideGAR and RGS find fewer relevant documents
    with it than with ``noise=1e-6``, which keeps the label order and breaks the ties (docs/decisions.md, "The
    exact oracle ties"). For a perfect reranker in a search, use a tiny ``noise``.

    Required input columns: ``['qid', 'docno']``. Output: the input rows with ``score`` and ``rank``.
    """

    def __init__(self, qrels: pd.DataFrame, *, noise: float = 0.0, seed: int = 0, binary: bool = False):
        """
        Args:
            qrels: relevance judgements, ``qid, docno, label``.
            noise: standard deviation ``sigma`` of the Gaussian noise added to the label.
            seed: noise seed; another seed gives another (equally strong) reranker.
            binary: use ``label > 0`` as the label (e.g. for collections whose codes are not graded gains).

        Raises:
            ValueError: on qrels without ``qid, docno, label``, a label that is not a finite number (labels read as
                text, ``'2'``, are numbers), one ``(qid, docno)`` judged twice with different labels (as the
                scorer reads them) or a negative/non-finite ``noise``. Qrels without any row are warned about: the
                scorer is then random.
        """
        _check_noise(noise, seed, 'SimulatedReranker')
        self.qrels = qrels
        self.noise = noise
        self.seed = seed
        self.binary = binary
        self._labels = _label_lookup(qrels, binary, 'SimulatedReranker')

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Score every ``(qid, docno)`` row."""
        pt.validate.columns(inp, includes=['qid', 'docno'], context=self)
        labels, sigma, seed = self._labels, float(self.noise), int(self.seed)
        scores = [labels.get((q, d), 0.0) + stable_noise(q, d, sigma, seed)
                  for q, d in zip(inp['qid'].astype(str), inp['docno'].astype(str))]
        return _scored(inp, scores)


class SimulatedNavigator(Rebuildable, pt.Transformer):
    """ANALYSIS INSTRUMENT, not a retrieval model: a group-level navigator of controlled strength that reads the qrels.

    ``score(q, g) = agg(label(q, d) for d in members(g)) + sigma * z(q, g)`` with ``agg`` the ``max`` or ``mean``
    member label (0 for unjudged members) and ``z`` a fixed standard-normal draw per ``(qid, group, sigma, seed)``
    (independent of :class:`SimulatedReranker`'s draws). It takes GAREN's navigator rows (``docno`` = the group id).

    Required input columns: ``['qid', 'docno']``. Output: the input rows with ``score`` and ``rank``.
    """

    def __init__(self, qrels: pd.DataFrame, groups: Any, *, noise: float = 0.0, seed: int = 0,
                 aggregate: str = 'max', binary: bool = False):
        """
        Args:
            qrels: relevance judgements, ``qid, docno, label``.
            groups: the group graph (``group_members(gid)``), e.g. a :class:`~pyterrier_garen.GroupCorpusGraph`.
            noise: standard deviation ``sigma`` of the noise.
            seed: noise seed.
            aggregate: ``'max'`` (best member label) or ``'mean'`` (share-weighted relevance of the group).
            binary: use ``label > 0`` as the label.

        Raises:
            ValueError: on bad qrels (as :class:`SimulatedReranker`), noise or ``aggregate``.
        """
        _check_noise(noise, seed, 'SimulatedNavigator')
        try:
            check_choice('aggregate', aggregate, ('max', 'mean'))
        except ValueError as ex:
            raise ValueError(f'SimulatedNavigator: {ex}') from None
        self.qrels = qrels
        self.groups = groups
        self.noise = noise
        self.seed = seed
        self.aggregate = aggregate
        self.binary = binary
        self._labels = _label_lookup(qrels, binary, 'SimulatedNavigator')

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Score every ``(qid, group id)`` row."""
        pt.validate.columns(inp, includes=['qid', 'docno'], context=self)
        labels, sigma, seed = self._labels, float(self.noise), int(self.seed)
        agg = max if self.aggregate == 'max' else (lambda xs: sum(xs) / len(xs))
        scores = []
        gids = parse_group_ids(inp['docno'].tolist(), self.groups.num_groups, self)  # a document row is named
        for q, g, gid in zip(inp['qid'].astype(str), inp['docno'].astype(str), gids):
            members = [str(m) for m in self.groups.group_members(int(gid))]
            value = agg([labels.get((q, m), 0.0) for m in members]) if members else 0.0
            scores.append(value + stable_noise(q, f'group:{g}', sigma, seed))
        return _scored(inp, scores)


class ListwiseView(Rebuildable, pt.Transformer):
    """ANALYSIS INSTRUMENT: a reranker seen as a listwise one, whose scores only order the documents of one call.

    Each query's rows of a call are ordered by the wrapped reranker's score (ties in input order) and scored
    ``n - position``, as :class:`~pyterrier_garen.ListwiseReranker` scores its answers; it declares
    ``listwise = True``. It measures what a search does with window-relative evidence alone (``final_order``) with
    the same verdicts as the pointwise reranker it wraps.

    Required input columns: those of the wrapped reranker. Output: its rows with ``score`` and ``rank``.
    """
    listwise = True

    def __init__(self, reranker: pt.Transformer):
        self.reranker = reranker

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        out = self.reranker(inp).reset_index(drop=True)
        codes = pd.factorize(out['qid'].to_numpy())[0]
        order = np.lexsort((np.arange(len(out)), -out['score'].to_numpy(dtype=float), codes))
        counts = np.bincount(codes)  # rows per query (empty for an empty frame)
        first = np.r_[0, np.cumsum(counts)[:-1]]  # start of each query in the sorted rows
        position = np.empty(len(out), dtype=np.int64)
        position[order] = np.arange(len(order)) - first[codes[order]]
        return out.assign(score=(counts[codes] - position).astype(float), rank=position)
