"""CPU default components over stored MiniLM vectors: a pointwise reranker and two embedding navigators.

They are weaker than the LLM components (an embedding similarity is not a reasoning reranker) but need no GPU and
no download, so the whole GAREN pipeline runs on a laptop and in CI. Query vectors are cached by query text and
document vectors come from a ``pyterrier_dr.FlexIndex``: nothing is re-encoded per query or per iteration.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np
import pandas as pd
import pyterrier as pt

__all__ = ['VectorScorer', 'CentroidNavigator', 'SummaryNavigator']


class _QueryVectors:
    """Encodes query texts once and keeps their vectors (unit length)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.cache: Dict[str, np.ndarray] = {}

    def __call__(self, queries) -> np.ndarray:
        missing = sorted({q for q in queries if q not in self.cache})
        if missing:
            vecs = _unit(np.asarray(self.encoder.encode_queries(missing), dtype=np.float32))
            self.cache.update(zip(missing, vecs))
        return np.stack([self.cache[q] for q in queries]) if len(queries) else np.zeros((0, 0), np.float32)


def _unit(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=-1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


class _VectorComponent(pt.Transformer):
    """Shared plumbing: the FlexIndex, the encoder and the cached query vectors."""

    def __init__(self, vectors, encoder=None):
        self.vectors = vectors
        if encoder is None:
            from ._graphs import minilm_encoder
            encoder = minilm_encoder()
        self.encoder = encoder
        self._queries = _QueryVectors(encoder)

    def _doc_vectors(self, docnos) -> np.ndarray:
        """Unit vectors of docnos; zero vectors for docnos the index does not hold."""
        from ._graphs import lookup_ids
        lookup, dvecs, _ = self.vectors.payload()
        ids = lookup_ids(lookup, docnos)
        ok = ids >= 0
        out = np.zeros((len(ids), dvecs.shape[1]), dtype=np.float32)
        out[ok] = _unit(np.asarray(dvecs[ids[ok]], dtype=np.float32))
        return out

    @staticmethod
    def _with_scores(inp: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
        out = inp.assign(score=scores.astype(np.float64))
        return pt.model.add_ranks(out.drop(columns=['rank'], errors='ignore'))


class VectorScorer(_VectorComponent):
    """Pointwise reranker: ``score = cos(query vector, stored document vector)``.

    Required input columns: ``qid, query, docno``. Output: the input rows with ``score`` and ``rank``.
    Documents missing from the vector index score 0.

    Args:
        vectors: a ``pyterrier_dr.FlexIndex`` holding the corpus vectors (see :func:`encode_corpus`).
        encoder: the query encoder (``encode_queries``); defaults to the packaged MiniLM.
    """

    def __repr__(self):
        return f'VectorScorer({self.vectors!r})'

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno'])
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        qvecs = self._queries(list(inp['query']))
        dvecs = self._doc_vectors(list(inp['docno']))
        return self._with_scores(inp, np.einsum('ij,ij->i', qvecs, dvecs))


class CentroidNavigator(_VectorComponent):
    """Embedding navigator: ``score = cos(query vector, mean of the group members' unit vectors)``.

    Needs no summary. Rows are GAREN's navigator frame: ``qid, query, docno=<group id>`` (other columns ignored).

    Args:
        groups: the :class:`GroupCorpusGraph`.
        vectors: the ``pyterrier_dr.FlexIndex`` of the same corpus.
        encoder: the query encoder; defaults to the packaged MiniLM.
    """

    def __init__(self, groups, vectors, encoder=None):
        super().__init__(vectors, encoder)
        self.groups = groups
        self._centroids: Optional[np.ndarray] = None

    def __repr__(self):
        return f'CentroidNavigator({self.groups!r}, {self.vectors!r})'

    def centroids(self) -> np.ndarray:
        """Unit-length centroid of every group (computed once, ``(num_groups, dim)``)."""
        if self._centroids is None:
            docvecs = self._doc_vectors(self.groups.docnos_list())
            sums = np.zeros((self.groups.num_groups, docvecs.shape[1]), dtype=np.float64)
            np.add.at(sums, np.asarray(self.groups.group_ids, dtype=np.int64), docvecs)
            self._centroids = _unit(sums).astype(np.float32)
        return self._centroids

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno'])
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        qvecs = self._queries(list(inp['query']))
        cvecs = self.centroids()[inp['docno'].astype(int).to_numpy()]
        return self._with_scores(inp, np.einsum('ij,ij->i', qvecs, cvecs))


class SummaryNavigator(_VectorComponent):
    """Embedding navigator: ``score = cos(query vector, vector of the group's summary text)``.

    Summary vectors are encoded once per group, on first use. Rows: ``qid, query, docno=<group id>, text``
    (GAREN adds ``text``, the group summary).

    Args:
        groups: the :class:`GroupCorpusGraph` (with summaries).
        encoder: the encoder used for queries and summaries; defaults to the packaged MiniLM.
    """

    def __init__(self, groups, encoder=None):
        super().__init__(None, encoder)
        self.groups = groups
        self._summary_vecs: Dict[int, np.ndarray] = {}

    def __repr__(self):
        return f'SummaryNavigator({self.groups!r})'

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno'])
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        gids = inp['docno'].astype(int).tolist()
        missing = sorted(set(gids) - set(self._summary_vecs))
        if missing:
            texts = [self.groups.summary(g) for g in missing]
            vecs = _unit(np.asarray(self.encoder.encode_docs(texts), dtype=np.float32))
            self._summary_vecs.update(zip(missing, vecs))
        qvecs = self._queries(list(inp['query']))
        svecs = np.stack([self._summary_vecs[g] for g in gids])
        return self._with_scores(inp, np.einsum('ij,ij->i', qvecs, svecs))
