"""Collections: local folders in the ``shared/data`` format, and BRIGHT's excluded-document rule."""
from __future__ import annotations

import json
import os
import warnings
from functools import cached_property
from pathlib import Path
from typing import Dict, Iterator, List, Literal, Optional, Union

import pandas as pd
import pyterrier as pt

__all__ = ['LocalDataset', 'remove_excluded', 'RemoveExcluded', 'data_dir', 'load_dataset']

DATA_ENV = 'GAREN_DATA'


def data_dir(name: Optional[str] = None) -> Path:
    """Folder of the shared test collections (``$GAREN_DATA``, else ``../shared/data`` next to the project).

    Args:
        name: a collection name (e.g. ``'scifact'``); when given, the path of that collection's folder.
    """
    base = os.environ.get(DATA_ENV)
    if base:
        root = Path(base)
    else:
        candidates = [Path.cwd().parent / 'shared' / 'data', Path(__file__).resolve().parents[2] / 'shared' / 'data']
        root = next((c for c in candidates if c.is_dir()), candidates[0])
    return root / name if name else root


class LocalDataset(pt.datasets.Dataset):
    """A PyTerrier dataset over a folder holding ``docs.jsonl``, ``queries.tsv`` and ``qrels.txt``.

    * ``docs.jsonl``: one JSON object per line, ``{"docno": str, "text": str}`` plus an optional ``"title"``;
    * ``queries.tsv``: ``qid<TAB>query``;
    * ``qrels.txt``: TREC format ``qid iteration docno relevance``.

    It can be used wherever a ``pt.get_dataset(...)`` object can: ``get_corpus_iter()`` for indexing,
    ``get_topics()`` / ``get_qrels()`` for ``pt.Experiment``, and ``text_loader()`` for ``pt.text.get_text``.

    Problems in the files raise :class:`ValueError` naming the file and line (malformed JSON, missing docno,
    duplicate docno, a query line without a tab); qrels that name unknown documents or queries are harmless for
    evaluation and produce one warning with counts.

    Args:
        path: the folder of the collection.
    """

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f'collection folder {str(self.path)!r} does not exist; pass a folder holding '
                                    'docs.jsonl, queries.tsv and qrels.txt (or set $GAREN_DATA)')
        for name in ('docs.jsonl', 'queries.tsv'):
            if not (self.path / name).is_file():
                raise FileNotFoundError(f'{name} is missing from the collection folder {str(self.path)!r}')

    def __repr__(self):
        return f'LocalDataset({str(self.path)!r})'

    @property
    def name(self) -> str:
        return self.path.name

    # -- documents ----------------------------------------------------------------------------------------------
    def _read_docs(self) -> Iterator[Dict[str, str]]:
        with (self.path / 'docs.jsonl').open('rt', encoding='utf8') as fin:
            for lineno, line in enumerate(fin, start=1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as ex:
                    raise ValueError(f'{self.path / "docs.jsonl"} line {lineno}: not valid JSON ({ex.msg}); '
                                     'each line must be one JSON object like {"docno": "d1", "text": "..."}') from ex
                if not isinstance(doc, dict) or not isinstance(doc.get('docno'), (str, int)) or doc['docno'] == '':
                    raise ValueError(f'{self.path / "docs.jsonl"} line {lineno}: a document needs a non-empty "docno"')
                out = {'docno': str(doc['docno']), 'text': str(doc.get('text') or '')}
                if 'title' in doc:
                    out['title'] = str(doc.get('title') or '')
                yield out

    @cached_property
    def _docs(self) -> Dict[str, Dict[str, str]]:
        docs: Dict[str, Dict[str, str]] = {}
        for lineno, doc in enumerate(self._read_docs(), start=1):
            if doc['docno'] in docs:
                raise ValueError(f'{self.path / "docs.jsonl"}: duplicate docno {doc["docno"]!r} (document {lineno}); '
                                 'docnos must be unique')
            docs[doc['docno']] = doc
        return docs

    def docnos(self) -> List[str]:
        """All docnos in file order."""
        return list(self._docs)

    def has_titles(self) -> bool:
        return any('title' in d for d in self._docs.values())

    def get_corpus_iter(self, *, verbose: bool = True) -> Iterator[Dict[str, str]]:
        """Iterate over ``{'docno', 'text'[, 'title']}`` dicts (validated: unique, non-empty docnos)."""
        docs = self._docs.values()
        if verbose:
            docs = pt.tqdm(docs, desc=f'{self.name} docs', unit='doc')
        yield from docs

    def get_corpus_lang(self) -> Optional[str]:
        return 'en'

    def text_loader(self, fields: Union[List[str], str, Literal['*']] = '*', *, verbose: bool = False):
        """A transformer adding document fields (``text``, ``title``) by ``docno``, for ``pt.text.get_text``."""
        return _TextLoader(self, fields)

    # -- topics and qrels ---------------------------------------------------------------------------------------
    def get_topics(self, variant: Optional[str] = None) -> pd.DataFrame:
        rows = []
        seen = set()
        with (self.path / 'queries.tsv').open('rt', encoding='utf8') as fin:
            for lineno, line in enumerate(fin, start=1):
                line = line.rstrip('\n')
                if not line.strip():
                    continue
                if '\t' not in line:
                    raise ValueError(f'{self.path / "queries.tsv"} line {lineno}: expected "qid<TAB>query", '
                                     f'got {line!r}')
                qid, query = line.split('\t', 1)
                if qid in seen:
                    raise ValueError(f'{self.path / "queries.tsv"} line {lineno}: duplicate qid {qid!r}')
                seen.add(qid)
                rows.append((qid, query))
        return pd.DataFrame(rows, columns=['qid', 'query'])

    def get_topics_lang(self) -> Optional[str]:
        return 'en'

    def get_qrels(self, variant: Optional[str] = None, *, binary: bool = False) -> pd.DataFrame:
        """Qrels as ``qid, docno, label``. ``binary=True`` maps rel>0 to 1 and everything else to 0."""
        path = self.path / 'qrels.txt'
        if not path.is_file():
            raise FileNotFoundError(f'qrels.txt is missing from {str(self.path)!r}; it is needed for evaluation')
        rows = []
        with path.open('rt', encoding='utf8') as fin:
            for lineno, line in enumerate(fin, start=1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 4:
                    raise ValueError(f'{path} line {lineno}: expected "qid 0 docno relevance", got {line.strip()!r}')
                try:
                    label = int(parts[3])
                except ValueError as ex:
                    raise ValueError(f'{path} line {lineno}: relevance {parts[3]!r} is not an integer') from ex
                rows.append((parts[0], parts[2], label))
        qrels = pd.DataFrame(rows, columns=['qid', 'docno', 'label'])
        unknown_docs = int((~qrels.docno.isin(self._docs.keys())).sum())
        unknown_qids = int((~qrels.qid.isin(set(self.get_topics().qid))).sum())
        if unknown_docs or unknown_qids:
            warnings.warn(f'{path}: {unknown_docs} qrels name docnos and {unknown_qids} name qids that are not in the '
                          'collection; they cannot be retrieved and only lower recall', stacklevel=2)
        if binary:
            qrels['label'] = (qrels.label > 0).astype(int)
        return qrels


class _TextLoader(pt.Transformer):
    def __init__(self, dataset: LocalDataset, fields: Union[List[str], str] = '*'):
        self.dataset = dataset
        self.fields = fields

    def __repr__(self):
        return f'{self.dataset!r}.text_loader({self.fields!r})'

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['docno'])
        fields = ['text', 'title'] if self.fields == '*' else (
            [self.fields] if isinstance(self.fields, str) else list(self.fields))
        if self.fields == '*' and not self.dataset.has_titles():
            fields = ['text']
        docs = self.dataset._docs
        out = inp.copy()
        for field in fields:
            out[field] = [docs.get(d, {}).get(field, '') for d in inp.docno]
        return out


def load_dataset(spec: str):
    """A dataset from a folder path (the ``shared/data`` format) or a PyTerrier/ir_datasets id (``irds:...``)."""
    if os.path.isdir(spec):
        return LocalDataset(spec)
    if (data_dir() / spec).is_dir():
        return LocalDataset(data_dir() / spec)
    if ':' not in spec:
        raise FileNotFoundError(f'{spec!r} is neither a collection folder nor a collection under {data_dir()}; pass '
                                'a folder with docs.jsonl, queries.tsv and qrels.txt, or an id like irds:beir/scifact')
    return pt.get_dataset(spec)


def remove_excluded(run: pd.DataFrame, qrels: pd.DataFrame, *, excluded_label: int = -100) -> pd.DataFrame:
    """Remove, per query, the documents that the qrels mark as excluded (BRIGHT) from a run, then re-rank.

    ir_datasets encodes BRIGHT's ``excluded_ids`` as qrels with relevance -100; BRIGHT's own evaluation drops
    these documents from the run before scoring, so the documents below move up. The excluded qrels themselves
    are also removed from the returned qrels' view by :class:`RemoveExcluded`.

    Args:
        run: a result frame (``qid, docno, score`` [, ``rank``]).
        qrels: qrels frame (``qid, docno, label``).
        excluded_label: the label that marks an excluded document.

    Returns:
        The run without excluded (qid, docno) pairs, ranks recomputed from the scores.
    """
    excluded = qrels.loc[qrels.label == excluded_label, ['qid', 'docno']]
    if len(excluded) == 0 or len(run) == 0:
        return run
    key = pd.MultiIndex.from_frame(run[['qid', 'docno']].astype(str))
    drop = key.isin(pd.MultiIndex.from_frame(excluded.astype(str)))
    out = run.loc[~drop].copy()
    if 'rank' in out.columns:
        out = pt.model.add_ranks(out.drop(columns=['rank']))
    return out


class RemoveExcluded(pt.Transformer):
    """A transformer applying :func:`remove_excluded` with fixed qrels; put it last in a pipeline.

    Example::

        ds = pt.get_dataset('irds:bright/biology')
        qrels = ds.get_qrels()
        pipe = bm25 >> garen >> RemoveExcluded(qrels)
        pt.Experiment([pipe], ds.get_topics(), qrels[qrels.label >= 0], ['nDCG@10'])
    """

    def __init__(self, qrels: pd.DataFrame, *, excluded_label: int = -100):
        self.qrels = qrels
        self.excluded_label = excluded_label

    def __repr__(self):
        return f'RemoveExcluded(<qrels: {len(self.qrels)} rows>, excluded_label={self.excluded_label})'

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'docno', 'score'])
        return remove_excluded(inp, self.qrels, excluded_label=self.excluded_label)
