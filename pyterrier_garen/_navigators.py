"""Navigators: transformers that score ``(query, group)`` rows for GAREN (paper Section 4.2.1).

GAREN sends ``qid, query, docno=<group id>, text=<group summary>, vote`` rows. :class:`VoteNavigator` is the
paper's connectivity ablation (no model); :class:`CentroidNavigator` and :class:`SummaryNavigator` are the CPU
embedding navigators over MiniLM; :class:`YesNoScorer` is the paper's LLM navigator (Qwen3-Reranker protocol:
``score = P(yes)``), which also works as a pointwise document reranker.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from ._engines import Conversation, Engine, UsageStats, truncate_each, yes_no_each
from ._params import Rebuildable, check_groups, check_optional_positive, parse_group_ids
from ._prompts import THINK_PREFILL, PromptTemplate, clean_text, fit_query, warn_cut_queries, warn_empty_texts
from ._vectors import VectorComponent, unit

__all__ = ['VoteNavigator', 'CentroidNavigator', 'SummaryNavigator', 'YesNoScorer']


class VoteNavigator(Rebuildable, pt.Transformer):
    """The connectivity heuristic of the GAREN ablation: a group's score is its vote.

    The vote (paper Eq. 11) is the number of window documents with a k-NN neighbour in the group; GAREN passes it
    in the ``vote`` column of the rows it sends to its navigator. No model and no summary is used.

    Required input columns: ``['qid', 'docno', 'vote']``

    Output columns: the input columns plus ``score`` (= ``vote``, as float)
    """

    def __init__(self):
        pass

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Score each row by its ``vote``.

        Raises:
            pyterrier.validate.InputValidationError: if ``vote`` is missing (use this navigator inside GAREN, which
                supplies it).
        """
        pt.validate.columns(inp, includes=['qid', 'docno', 'vote'], context=self)
        return inp.assign(score=inp['vote'].astype(float))


class CentroidNavigator(VectorComponent):
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


    def centroids(self) -> np.ndarray:
        """Unit-length centroid of every group (computed once, ``(num_groups, dim)``)."""
        if self._centroids is None:
            check_groups(self.groups, 'CentroidNavigator', needs=('group_ids', 'num_groups', 'docnos_list'))
            docnos = self.groups.docnos_list()
            found = self._found_in_vectors(docnos)
            if found == 0:
                raise ValueError(f'{self!r}: none of the {len(docnos)} documents of the groups is in the vectors '
                                 f'{self.vectors!r}; the vectors are of another corpus, encode this one '
                                 '(encode_corpus) and pass that FlexIndex')
            if found < len(docnos):
                warnings.warn(f'{self!r}: {len(docnos) - found} of {len(docnos)} group documents have no stored '
                              'vector (another corpus version?); their groups\' centroids leave them out', stacklevel=3)
            docvecs = self._doc_vectors(docnos)
            sums = np.zeros((self.groups.num_groups, docvecs.shape[1]), dtype=np.float64)
            np.add.at(sums, np.asarray(self.groups.group_ids, dtype=np.int64), docvecs)
            self._centroids = unit(sums).astype(np.float32)
        return self._centroids

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.check_rows(inp)
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        centroids = self.centroids()
        gids = parse_group_ids(inp['docno'].tolist(), self.groups.num_groups, self)
        qvecs = self._queries(list(inp['query']))
        cvecs = centroids[gids]
        return self.with_scores(inp, np.einsum('ij,ij->i', qvecs, cvecs))


class SummaryNavigator(VectorComponent):
    """Embedding navigator: ``score = cos(query vector, vector of the group's summary text)``.

    Summary vectors are encoded once per group, on first use. Rows: ``qid, query, docno=<group id>, text``
    (GAREN adds ``text``, the group summary).

    Args:
        groups: the :class:`GroupCorpusGraph` (with summaries).
        encoder: the encoder used for queries and summaries; defaults to the packaged MiniLM.
    """

    takes_vectors = False

    def __init__(self, groups, encoder=None):
        super().__init__(None, encoder)
        self.groups = groups
        self._summary_vecs: Dict[int, np.ndarray] = {}


    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.check_rows(inp)
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        check_groups(self.groups, 'SummaryNavigator', needs=('summary', 'num_groups'))
        if getattr(self.groups, 'has_summaries', True) is False:  # every summary '': all groups would score alike
            raise ValueError(f'{self!r}: {self.groups!r} holds no summaries, so every group would get the same score; '
                             'summarise the groups first (groups.summarize(garen.ExtractiveSummarizer(), dataset); '
                             'garen.prepare does it), or navigate with garen.CentroidNavigator(groups, vectors), '
                             'which needs none')
        gids = parse_group_ids(inp['docno'].tolist(), self.groups.num_groups, self).tolist()
        missing = sorted(set(gids) - set(self._summary_vecs))
        if missing:
            texts = [self.groups.summary(g) for g in missing]
            vecs = unit(np.asarray(self.model.encode_docs(texts), dtype=np.float32))
            self._summary_vecs.update(zip(missing, vecs))
        qvecs = self._queries(list(inp['query']))
        svecs = np.stack([self._summary_vecs[g] for g in gids])
        return self.with_scores(inp, np.einsum('ij,ij->i', qvecs, svecs))


Instruction = Union[str, Mapping, Callable[[Any, str], str]]


class YesNoScorer(Rebuildable, pt.Transformer, UsageStats):
    """Pointwise LLM scorer: ``score`` = P(yes) that the document meets the query (Qwen3-Reranker protocol).

    Required input columns: ``['qid', 'query', 'docno', text_field]``. Output: the input rows with ``score`` in
    [0, 1] and ``rank``.

    Each row becomes a conversation: a system message asking for a "yes" or "no" judgement, the user turn
    ``<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {doc}`` and an assistant turn that starts with an
    empty think block. The engine generates one token restricted to yes/no; the score is the softmax over their
    logits. All rows of a frame go to the engine in one call (or calls of ``batch_size`` rows).

    As GAREN's navigator the rows are ``qid, query, docno=<group id>, text=<group summary>``; it also serves as a
    pointwise reranker over documents. A request that fails (after the engine's own retries) costs only its row:
    it scores 0 (the row is not preferred), :attr:`failed` is incremented and a warning names the query and error.

    Attributes:
        failed: rows scored 0 because their engine request failed (reset by :meth:`reset_stats`).
    """

    def __init__(self, engine: Engine, *,
                 instruction: Instruction = 'Given a query, retrieve relevant passages that answer the query',
                 text_field: str = 'text', max_doc_tokens: Optional[int] = None, batch_size: Optional[int] = None,
                 yes: str = 'yes', no: str = 'no'):
        """
        Args:
            engine: the LLM engine (shared with the reranker and summariser).
            instruction: the task instruction: a string, a mapping ``qid -> instruction``, or a callable
                ``(qid, query) -> instruction`` (BRIGHT uses one instruction per domain).
            text_field: the column holding the document (or group summary) text.
            max_doc_tokens: most tokens per document; None: as many as the context allows.
            batch_size: rows per engine call; None: all rows in one call.
            yes: the answer word whose probability is the score; it must be one token of the model (the prompt
                asks for "yes" or "no"; a tokenizer that splits ``'yes'`` may keep ``'Yes'`` or ``' yes'`` whole).
            no: the other answer word, one token too.

        Raises:
            AnswerTokenError: on the first call, when ``yes`` or ``no`` is not one token of the engine's model (the
                run stops: scoring every row 0 would hide it).
        """
        check_optional_positive(batch_size=batch_size, max_doc_tokens=max_doc_tokens)
        for name, word in (('yes', yes), ('no', no)):
            if not isinstance(word, str) or not word:
                raise ValueError(f'{name} must be a non-empty string (an answer word of the model), got {word!r}')
        if yes == no:
            raise ValueError(f'yes and no must differ (both are {yes!r}): P(yes) would be 0.5 for every row')
        self.yes, self.no = yes, no
        self.engine = engine
        self.instruction = instruction
        self.text_field = text_field
        self.max_doc_tokens = max_doc_tokens
        self.batch_size = batch_size
        self.template = PromptTemplate('yes_no')
        self.reset_stats()

    @property
    def prompt_hash(self) -> str:
        """SHA-256 prefix of the prompt file in use."""
        return self.template.hash

    def reset_stats(self) -> None:
        UsageStats.reset_stats(self)
        self.failed = 0
        self.cut_queries = 0
        self.empty_texts = 0
        self._said_empty = False

    def stats(self) -> Dict[str, int]:
        return {**UsageStats.stats(self), 'failed': self.failed}

    def instruction_for(self, qid: Any, query: str) -> str:
        """The instruction used for a query."""
        if isinstance(self.instruction, str):
            return self.instruction
        if isinstance(self.instruction, Mapping):
            for key in (qid, str(qid)):
                if key in self.instruction:
                    return str(self.instruction[key])
            raise ValueError(f'{self!r}: no instruction for qid {qid!r}; add it to the instruction mapping or pass '
                             'a single string')
        if callable(self.instruction):
            return str(self.instruction(qid, query))
        raise TypeError(f'instruction must be a str, a mapping qid -> str or a callable (qid, query) -> str; '
                        f'got {type(self.instruction).__name__}')

    def conversation(self, instruction: str, query: str, doc: str) -> Conversation:
        """The conversation for one row (doc already truncated), ending with the empty-think prefill."""
        messages = self.template.messages(instruction=instruction, query=query, doc=doc)
        return messages + [{'role': 'assistant', 'content': THINK_PREFILL}]

    def doc_budget(self, instruction: str, query: str) -> int:
        """Tokens allowed for a row's document: what fits the context (at least 16), capped by ``max_doc_tokens``."""
        overhead = self.engine.count_conversation_tokens(self.conversation(instruction, query, ''))
        fit = max(16, self.engine.context_length - overhead - 8)
        return fit if self.max_doc_tokens is None else min(int(self.max_doc_tokens), fit)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno', self.text_field], context=self)
        if len(inp) == 0:
            return pt.model.add_ranks(inp.copy().assign(score=pd.Series(dtype=float)))
        frame = inp.reset_index(drop=True)
        budgets: Dict[Tuple[Any, str], Tuple[str, int, str]] = {}
        rows = []
        cut_queries, query_budget = 0, 0
        for qid, query, text in zip(frame['qid'], frame['query'], frame[self.text_field], strict=True):
            query = clean_text(query)
            if (qid, query) not in budgets:
                instruction = self.instruction_for(qid, query)
                shown, query_budget, cut = fit_query(self.engine, query)
                cut_queries += cut
                budgets[qid, query] = (instruction, self.doc_budget(instruction, shown), shown)
            instruction, budget, shown = budgets[qid, query]
            rows.append((instruction, budget, shown, clean_text(text)))
        warn_cut_queries(self, cut_queries, query_budget, self.engine.context_length)
        warn_empty_texts(self, [row[3] for row in rows], self.text_field)
        docs = truncate_each(self.engine, [row[3] for row in rows], [row[1] for row in rows])
        conversations = [self.conversation(instruction, query, doc)
                         for (instruction, _, query, _), doc in zip(rows, docs, strict=True)]
        size = self.batch_size or len(conversations)
        scores: List[float] = []
        failed = []
        for start in range(0, len(conversations), size):
            batch = conversations[start:start + size]
            generations, errors = yes_no_each(self.engine, batch, yes=self.yes, no=self.no)
            self._record_each(generations)
            for k, (generation, error) in enumerate(zip(generations, errors, strict=True)):
                probability = None if generation is None else _usable_probability(generation.probability)
                if generation is None:
                    failed.append(f'qid {frame["qid"].iloc[start + k]!r}: {error}')
                elif probability is None:
                    failed.append(f'qid {frame["qid"].iloc[start + k]!r}: the engine gave probability '
                                  f'{generation.probability!r}, not a number in [0, 1]')
                scores.append(0.0 if probability is None else probability)
        if failed:
            self.failed += len(failed)
            warnings.warn(f'{self!r}: {len(failed)} rows scored 0 because the engine request failed or its answer '
                          'was unusable '
                          f'({"; ".join(failed[:3])}{"; ..." if len(failed) > 3 else ""})', stacklevel=2)
        return pt.model.add_ranks(frame.assign(score=np.asarray(scores, dtype=float)))


def _usable_probability(value) -> Optional[float]:
    """``value`` as a float in [0, 1], else ``None`` (None, NaN, out of range, not a number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0.0 <= number <= 1.0 else None  # NaN fails both comparisons
