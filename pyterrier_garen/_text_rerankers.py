"""Any PyTerrier reranker inside GAREN: a cross-encoder (sentence-transformers ``CrossEncoder``) and the recipe that
feeds document text to any text-reading ``pt.Transformer``.

GAREN (like GAR, SlideGAR, RGS and the sliding window) hands its reranker frames of ``qid, query, docno`` rows, a
window at a time, and compares the scores it gets back across windows and iterations. So a reranker works inside
GAREN when it (1) adds a ``score`` to every row it is given and (2) scores a (query, document) pair the same
whichever window it arrives in: pointwise rerankers (cross-encoders, bi-encoder scorers, BM25 re-scoring) do; a
listwise reranker's scores are positions within its window, which GAREN's ``ListwiseReranker`` handles itself.
Rerankers that read text need the text fetched first: :func:`with_text` is ``pt.text.get_text(dataset, field) >>
reranker``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ._params import Rebuildable, check_positive

__all__ = ['CrossEncoderScorer', 'with_text']


def with_text(dataset, reranker: pt.Transformer, *, field: str = 'text') -> pt.Transformer:
    """``pt.text.get_text(dataset, field) >> reranker``: a text-reading reranker, ready to pass to GAREN.

    Args:
        dataset: where the text comes from: a ``LocalDataset``, a PyTerrier dataset, or anything
            ``pt.text.get_text`` accepts (an index with stored text, a ``pt.text.TextLoader``).
        reranker: any ``pt.Transformer`` that scores ``qid, query, docno, <field>`` rows (pointwise).
        field: the text column the reranker reads.
    """
    return pt.text.get_text(dataset, field) >> reranker


class CrossEncoderScorer(Rebuildable, pt.Transformer):
    """Pointwise cross-encoder reranker: ``score = CrossEncoder(query, text)`` (sentence-transformers).

    Required input columns: ``qid, query, docno, <text_field>`` (fetch the text with :func:`with_text`). Output: the
    input rows with ``score`` and ``rank``. Scores depend only on the (query, text) pair, so they are comparable
    across GAREN's windows and iterations.

    Args:
        model: a ``sentence_transformers.CrossEncoder`` model name or local folder (or a loaded ``CrossEncoder``),
            e.g. ``'cross-encoder/ms-marco-MiniLM-L-6-v2'`` where downloads are allowed.
        text_field: the column holding document text.
        batch_size: pairs per model call.
        max_length: most tokens per (query, text) pair (default: the model's).
        device: torch device (default: the CrossEncoder's choice).
        verbose: progress bars.
    """

    def __init__(self, model, *, text_field: str = 'text', batch_size: int = 32, max_length: Optional[int] = None,
                 device: Optional[str] = None, verbose: bool = False):
        check_positive(batch_size=batch_size)
        self.model = model
        self.text_field = text_field
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.verbose = verbose
        self._model = None

    @property
    def cross_encoder(self):
        """The loaded ``sentence_transformers.CrossEncoder`` (loaded on first use)."""
        if self._model is None:
            if isinstance(self.model, str):
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as ex:
                    raise ImportError('CrossEncoderScorer needs sentence-transformers: pip install -e ".[cpu]" (in a '
                                      'clone of pyterrier-garen)') from ex
                from ._encoding import _quiet_loading
                kwargs = {'device': self.device} if self.device else {}
                if self.max_length:
                    kwargs['max_length'] = self.max_length
                with _quiet_loading():  # no "Loading weights" bar on every load
                    self._model = CrossEncoder(self.model, **kwargs)
            else:
                self._model = self.model
        return self._model

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno', self.text_field], context=self)
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        from ._prompts import text_or_empty  # a missing text is an empty one, not the word 'nan'
        pairs = [(str(q), text_or_empty(t)) for q, t in zip(inp['query'], inp[self.text_field])]
        scores = np.asarray(self.cross_encoder.predict(pairs, batch_size=self.batch_size,
                                                       show_progress_bar=self.verbose), dtype=np.float64)
        out = inp.assign(score=scores.reshape(len(pairs), -1)[:, 0])
        return pt.model.add_ranks(out)  # replaces a rank the input had; `out` is a copy, changed in place


# ---------------------------------------------------------------------------------------------------------------------
# the rerankers `compare --reranker` chooses from
# ---------------------------------------------------------------------------------------------------------------------
def _minilm(prepared, arg):
    from ._rerankers import VectorScorer
    return VectorScorer(prepared.vectors, prepared.encoder), 'MiniLM cosine over stored vectors (VectorScorer)'


def _cross_encoder(prepared, arg):
    return (with_text(prepared.dataset, CrossEncoderScorer(arg)),
            f'cross-encoder {arg} over the document text (CrossEncoderScorer)')


def _factory_function(arg: str):
    """The function named by ``factory:MODULE:FUNCTION`` (imported, not called); ``ValueError`` naming the spec."""
    import functools
    import importlib
    module, _, attr = arg.partition(':')
    if not module or not attr:
        raise ValueError(f'--reranker factory:MODULE:FUNCTION, got factory:{arg}')
    try:
        fn = functools.reduce(getattr, attr.split('.'), importlib.import_module(module))
    except (ImportError, AttributeError) as ex:
        raise ValueError(f'--reranker factory:{arg}: cannot find {attr} in {module} ({type(ex).__name__}: {ex})') \
            from None
    if not callable(fn):
        raise ValueError(f'--reranker factory:{arg}: {attr} is a {type(fn).__name__}, not a function of prepared')
    return fn


def _factory(prepared, arg):
    built = _factory_function(arg)(prepared)
    if not isinstance(built, pt.Transformer):  # else it fails later, deep inside a search, naming another role
        raise TypeError(f'--reranker factory:{arg} returned {type(built).__name__}, not a pt.Transformer; return a '
                        'transformer that adds a score to every (qid, docno) row it is given (wrap a function of a '
                        'frame in pt.apply.generic)')
    return built, f'{arg}(prepared)'


#: ``name -> builder(prepared, argument) -> (transformer, description)``; ``compare --reranker NAME[:ARGUMENT]``
RERANKERS = {
    'minilm': _minilm,
    'cross-encoder': _cross_encoder,
    'factory': _factory,
}


def check_reranker(spec: str) -> None:
    """Refuse a ``compare --reranker`` spec that cannot work before anything is built: an unknown name (the message
    lists :data:`RERANKERS`), a cross-encoder without a model, or a factory that cannot be imported or called."""
    name, _, arg = str(spec).partition(':')
    if name not in RERANKERS:
        raise ValueError(f'unknown reranker {spec!r}: use one of {", ".join(RERANKERS)} (minilm, '
                         'cross-encoder:NAME_OR_FOLDER, factory:package.module:function)')
    if name == 'cross-encoder' and not arg:
        raise ValueError('the cross-encoder reranker needs a model: --reranker cross-encoder:NAME_OR_FOLDER')
    if name == 'cross-encoder':
        from ._encoding import check_model_folder
        check_model_folder(arg, spec)  # before anything is prepared or retrieved
    if name == 'factory':
        _factory_function(arg)


def build_reranker(spec: str, prepared):
    """``(reranker, description)`` for a ``compare --reranker`` spec: ``minilm`` (default, the stored-vector
    scorer), ``cross-encoder:NAME_OR_FOLDER`` (a sentence-transformers CrossEncoder over the text) or
    ``factory:package.module:function`` (``function(prepared)`` returns any pointwise ``pt.Transformer``).

    Raises:
        ValueError: the spec cannot work (:func:`check_reranker`).
    """
    check_reranker(spec)
    name, _, arg = str(spec).partition(':')
    return RERANKERS[name](prepared, arg)
