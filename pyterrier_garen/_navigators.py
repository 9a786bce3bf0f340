"""Navigators: transformers that score ``(query, group)`` rows for GAREN."""
from __future__ import annotations

import pandas as pd
import pyterrier as pt

__all__ = ['VoteNavigator']


class VoteNavigator(pt.Transformer):
    """The connectivity heuristic of the GAREN ablation: a group's score is its vote.

    The vote (paper Eq. 11) is the number of window documents with a k-NN neighbour in the group; GAREN passes it
    in the ``vote`` column of the rows it sends to its navigator. No model and no summary is used.

    Required input columns: ``['qid', 'docno', 'vote']``

    Output columns: the input columns plus ``score`` (= ``vote``, as float)
    """

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Score each row by its ``vote``.

        Raises:
            pyterrier.validate.InputValidationError: if ``vote`` is missing (use this navigator inside GAREN, which
                supplies it).
        """
        pt.validate.columns(inp, includes=['qid', 'docno', 'vote'], context=self)
        return inp.assign(score=inp['vote'].astype(float))

    def __repr__(self):
        return 'VoteNavigator()'
