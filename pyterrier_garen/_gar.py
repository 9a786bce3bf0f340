"""``pyterrier_adaptive.GAR`` as PyTerrier can inspect it (so ``pt.Experiment`` validates it without a warning)."""
from __future__ import annotations

from typing import List, Optional

import pandas as pd
import pyterrier as pt
import pyterrier_adaptive

from ._params import Rebuildable

__all__ = ['GAR']

OUTPUT_COLUMNS = ['qid', 'query', 'docno', 'rank', 'score', 'iteration']


class GAR(Rebuildable, pyterrier_adaptive.GAR):
    """Graph-based Adaptive Re-ranking, exactly ``pyterrier_adaptive.GAR``, plus what PyTerrier's inspection needs.

    ``pyterrier_adaptive.GAR`` fails on an empty frame, which is how ``pt.Experiment`` finds out what a pipeline
    produces, so every experiment with it printed a "Pipeline Validation Report". This subclass declares its
    output columns (``transform_outputs``), returns an empty frame for an empty input (without a scorer call) and
    has a ``repr`` that names its settings. Scores are those of the original.

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
        # the parent stores every argument under its own name (batch_size=None: the scorer's, else 16)
        super().__init__(scorer, corpus_graph, num_results=num_results, batch_size=batch_size, backfill=backfill,
                         enabled=enabled, verbose=verbose)

    def transform_outputs(self, inp_columns: List[str]) -> List[str]:
        pt.validate.result_frame(inp_columns, extra_columns=['query', 'score'], context=self)
        return list(OUTPUT_COLUMNS)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=['query', 'score'], context=self)
        if len(inp) == 0:
            return pd.DataFrame({c: pd.Series(dtype=object if c in ('qid', 'query', 'docno') else float)
                                 for c in OUTPUT_COLUMNS})
        return super().transform(inp)
