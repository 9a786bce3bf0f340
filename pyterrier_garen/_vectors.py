"""Stored-vector plumbing shared by the embedding reranker and navigators: query vectors encoded once, document
vectors read from a ``pyterrier_dr.FlexIndex`` (nothing is re-encoded per query or per iteration)."""
from __future__ import annotations

import os
import warnings
from typing import Dict

import numpy as np
import pandas as pd
import pyterrier as pt

from ._frames import check_present
from ._params import Rebuildable, described

__all__ = ['QueryVectors', 'VectorComponent', 'unit']


class QueryVectors:
    """Encodes query texts once and keeps their vectors (unit length)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.cache: Dict[str, np.ndarray] = {}

    def __call__(self, queries) -> np.ndarray:
        missing = sorted({q for q in queries if q not in self.cache})
        if missing:
            vecs = unit(np.asarray(self.encoder.encode_queries(missing), dtype=np.float32))
            self.cache.update(zip(missing, vecs))
        return np.stack([self.cache[q] for q in queries]) if len(queries) else np.zeros((0, 0), np.float32)


def unit(vecs: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vecs, axis=-1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


class VectorComponent(Rebuildable, pt.Transformer):
    """Shared plumbing: the FlexIndex, the encoder and the cached query vectors.

    ``encoder`` stays as given (``None`` = the packaged MiniLM, loaded on first use), so the repr rebuilds the object.
    """

    #: rows scored -inf because their cosine was not finite (over every call; warned once)
    nonfinite_scores: int = 0
    #: whether the constructor takes the corpus vectors before the encoder (SummaryNavigator does not)
    takes_vectors: bool = True

    def __init__(self, vectors, encoder=None):
        if callable(getattr(encoder, 'payload', None)) or isinstance(encoder, (str, os.PathLike)):
            # the corpus vectors (or their folder) where the encoder goes, e.g. SummaryNavigator(groups,
            # prepared.vectors) as CentroidNavigator(groups, prepared.vectors) is written: an AttributeError
            # (no encode_docs) at the first navigator call, after the first stage and the reranker had run
            kind = type(self).__name__
            fix = (f'{kind} takes no vectors (it encodes the summaries): {kind}(groups), or {kind}(groups, '
                   'encoder=prepared.encoder)' if not self.takes_vectors else
                   'pass the encoder that encoded the vectors (encoder=prepared.encoder), or None for the packaged '
                   'MiniLM')
            raise TypeError(f'{kind}: the encoder must be a pyterrier_dr bi-encoder (with encode_queries), got '
                            f'{described(encoder)}; {fix}')
        self.vectors = vectors
        self.encoder = encoder
        self._model = None  # the encoder in use, loaded on first use (not `_encoder`: pt.inspect would read that)
        self._query_vectors = None

    @property
    def model(self):
        """The encoder in use (``encoder``, else the packaged MiniLM, loaded once)."""
        if self._model is None:
            if self.encoder is not None:
                self._model = self.encoder
            else:
                from ._graphs import minilm_encoder
                self._model = minilm_encoder()
        return self._model

    @property
    def _queries(self) -> QueryVectors:
        if self._query_vectors is None:
            self._query_vectors = QueryVectors(self.model)
        return self._query_vectors

    def _doc_vectors(self, docnos) -> np.ndarray:
        """Unit vectors of docnos; zero vectors for docnos the index does not hold."""
        from ._graphs import lookup_ids
        lookup, dvecs, _ = self._payload()
        ids = lookup_ids(lookup, docnos)
        ok = ids >= 0
        out = np.zeros((len(ids), dvecs.shape[1]), dtype=np.float32)
        out[ok] = unit(np.asarray(dvecs[ids[ok]], dtype=np.float32))
        return out

    def _payload(self):
        """The FlexIndex's ``(docno lookup, vectors, metadata)``; ``TypeError`` naming the fix when ``vectors`` is no
        FlexIndex (a path, the groups, ``prepare``'s result)."""
        if not callable(getattr(self.vectors, 'payload', None)):
            raise TypeError(f'{type(self).__name__} needs the corpus vectors as a pyterrier_dr.FlexIndex, got '
                            f'{described(self.vectors)}; '
                            'pass prepared.vectors (garen.prepare), the result of garen.encode_corpus, or '
                            'pyterrier_dr.FlexIndex(path) for a built index folder')
        return self.vectors.payload()

    def _found_in_vectors(self, docnos) -> int:
        """How many of ``docnos`` have a stored vector."""
        from ._graphs import lookup_ids
        lookup, _, _ = self._payload()
        return int((lookup_ids(lookup, docnos) >= 0).sum())

    def check_rows(self, inp: pd.DataFrame) -> None:
        """Refuse input without the columns every vector component reads, or rows without a value in them."""
        pt.validate.columns(inp, includes=['qid', 'query', 'docno'], context=self)
        check_present(inp, ('qid', 'query', 'docno'), self, 'rows')

    def with_scores(self, inp: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
        """The input rows with ``score`` and ``rank``; a cosine that is not finite (a stored or encoded vector
        holding NaN or inf) scores ``-inf``, ranked last, with a warning naming the rows."""
        scores = np.asarray(scores, dtype=np.float64)
        broken = ~np.isfinite(scores)
        if broken.any():
            if not self.nonfinite_scores:
                examples = list(dict.fromkeys(str(d) for d in inp['docno'].to_numpy()[broken]))[:3]
                warnings.warn(f'{self!r}: {int(broken.sum())} of {len(scores)} rows have no finite cosine (a stored '
                              f'vector or the query\'s holds NaN or inf; docno {examples}); they score -inf and rank '
                              'last (counted in nonfinite_scores; warned once). Re-encode those documents '
                              '(encode_corpus) or check the encoder', stacklevel=3)
            self.nonfinite_scores += int(broken.sum())
            scores = np.where(broken, -np.inf, scores)
        out = inp.assign(score=scores)
        return pt.model.add_ranks(out.drop(columns=['rank'], errors='ignore'))
