"""Collections: local folders in the ``shared/data`` format, and BRIGHT's excluded-document rule."""
from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import sys
import unicodedata
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple, Union

import pandas as pd
import pyterrier as pt

from ._params import Rebuildable, check_number

__all__ = ['LocalDataset', 'remove_excluded', 'RemoveExcluded', 'data_dir', 'load_dataset']

DATA_ENV = 'GAREN_DATA'
_CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')  # control characters a query must not carry
DECLARATION = 'collection.json'
_INTEGER = re.compile('[-+]?[0-9]+')  # a relevance label: ASCII digits only
# a first line of queries.tsv with these two columns is a header (as a TSV export writes one), not a query
_HEADER_IDS = {'qid', 'query_id', 'query-id', 'queryid', 'id', '_id', 'topic', 'topic_id'}
_HEADER_TEXTS = {'query', 'text', 'query_text', 'title', 'question'}
_GRADES = ('write relevance labels as small integer grades (0 or below: not relevant; 1, 2, ...: relevant), '
           'as trec_eval reads them')

# Collections whose relevance codes are known not to be gains, recognised by the SHA-256 of their qrels.txt (so a
# different collection in a folder of the same name is not affected). Cranfield's codes 1..4 rank 1 = "complete
# answer" first and -1 marks on-topic documents, so only rel>0 (binary) is meaningful.
_KNOWN_BINARY = {
    'de3766abab3e87394f21e1438ddda34aaea82d1697639ead1fa3c32286ea0424':
        'Cranfield: codes 1-4 rank 1 as most relevant and are not gains',
}


def _read_lines(path: Path) -> Iterator[Tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file, with a clear error on other bytes.

    A byte-order mark is dropped at the start of every line, not only the first: files joined with ``cat`` carry
    one where each part began, and it would otherwise stay, invisible, inside that line's first id."""
    from ._atomic import resource_errors
    with resource_errors(path, 'read'):
        fin = path.open('rb')
    with fin:
        for lineno, raw in enumerate(fin, start=1):
            if raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                line = raw.decode('utf8')
            except UnicodeDecodeError as ex:
                raise ValueError(f'{path} line {lineno}: byte 0x{raw[ex.start]:02x} at column {ex.start + 1} is not '
                                 'UTF-8; re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf8)') from None
            yield lineno, line.rstrip('\r\n')


def _check_id(value: str, what: str, where: str) -> str:
    if not value:
        raise ValueError(f'{where}: empty {what}; every {what} must be a non-empty string')
    if any(c.isspace() for c in value):
        raise ValueError(f'{where}: {what} {value!r} contains whitespace, which TREC run and qrels files cannot '
                         f'hold; use {what}s without spaces or tabs')
    odd = next((c for c in value if c == '\0' or unicodedata.category(c) == 'Cs'), None)
    if odd is not None:  # a JSON escape such as \ud800 or \u0000: no index or lookup can store it as it is
        kind = 'a NUL character' if odd == '\0' else f'the lone surrogate U+{ord(odd):04X} (no valid Unicode text)'
        raise ValueError(f'{where}: {what} {value!r} contains {kind}; remove it from the {what}')
    hidden = next((c for c in value if unicodedata.category(c) == 'Cf'), None)
    if hidden is not None:  # a zero-width space or a stray BOM: two ids that print alike would differ
        raise ValueError(f'{where}: {what} {value!r} contains the invisible character U+{ord(hidden):04X} '
                         f'({unicodedata.name(hidden, "a format character")}); remove it from the {what}')
    return value


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
    * ``qrels.txt``: TREC format ``qid iteration docno relevance``;
    * ``collection.json`` (optional): ``{"relevance": "binary"}`` declares that the relevance codes are not gains
      (evaluation then uses rel>0), ``"graded"`` that they are (the default).

    It can be used wherever a ``pt.get_dataset(...)`` object can: ``get_corpus_iter()`` for indexing,
    ``get_topics()`` / ``get_qrels()`` for ``pt.Experiment``, and ``text_loader()`` for ``pt.text.get_text``.

    Files are read as UTF-8 (a leading byte-order mark is ignored). Problems raise :class:`ValueError` naming the
    file and line: bytes that are not UTF-8, malformed JSON, a missing, empty, duplicate or non-string docno, a
    ``text``/``title`` that is not a string, a query line without exactly one tab, a header line, an empty or
    duplicate qid, a file with no documents or no queries. Qrels that name unknown documents or queries are
    harmless for evaluation and produce one warning with counts and the first of each (its value and line).

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
                beir = (self.path / 'corpus.jsonl').is_file() or (self.path / 'queries.jsonl').is_file()
                raise FileNotFoundError(
                    f'{name} is missing from the collection folder {str(self.path)!r}; '
                    + ("it is laid out as BEIR's (corpus.jsonl, queries.jsonl, qrels/): write its documents as "
                       'docs.jsonl ("_id" renamed "docno"), its queries as queries.tsv ("qid<TAB>query") and its '
                       'judgements as qrels.txt ("qid 0 docno label"), or load it as irds:beir/<name>' if beir else
                       'a collection folder holds docs.jsonl, queries.tsv and qrels.txt'))

    def __repr__(self):
        return f'LocalDataset({str(self.path)!r})'

    @property
    def name(self) -> str:
        """The collection folder's name (of the folder itself for ``'.'`` or ``'..'``)."""
        return self.path.name if self.path.name not in ('', '.', '..') else self.path.resolve().name

    # -- documents ----------------------------------------------------------------------------------------------
    def _read_docs(self) -> Iterator[Tuple[int, Dict[str, str]]]:
        path = self.path / 'docs.jsonl'
        for lineno, line in _read_lines(path):
            if not line.strip():
                continue
            where = f'{path} line {lineno}'
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as ex:
                raise ValueError(f'{where}: not valid JSON ({ex.msg}); each line must be one JSON object like '
                                 '{"docno": "d1", "text": "..."}') from None
            if not isinstance(doc, dict):
                raise ValueError(f'{where}: expected a JSON object like {{"docno": "d1", "text": "..."}}, got a '
                                 f'{_json_type(doc)}')
            docno = doc.get('docno')
            if isinstance(docno, bool) or not isinstance(docno, (str, int)):
                other = [key for key in ('_id', 'doc_id', 'id', 'docid') if key in doc] if 'docno' not in doc else []
                hint = f' (this line has "{other[0]}": rename that field to "docno")' if other else ''
                raise ValueError(f'{where}: a document needs a "docno" string (or integer), got '
                                 f'{"a " + _json_type(docno) if "docno" in doc else "none"}{hint}')
            out = {'docno': _check_id(str(docno).strip() if isinstance(docno, str) else str(docno), 'docno', where),
                   'text': _text_field(doc, 'text', where)}
            if 'title' in doc:
                out['title'] = _text_field(doc, 'title', where)
            yield lineno, out

    @cached_property
    def _docs(self) -> Dict[str, Dict[str, str]]:
        docs: Dict[str, Dict[str, str]] = {}
        for lineno, doc in self._read_docs():
            if doc['docno'] in docs:
                first = next(n for n, d in self._read_docs() if d['docno'] == doc['docno'])
                raise ValueError(f'{self.path / "docs.jsonl"} line {lineno}: duplicate docno {doc["docno"]!r} (first '
                                 f'on line {first}); docnos must be unique')
            docs[doc['docno']] = doc
        if not docs:
            raise ValueError(f'{self.path / "docs.jsonl"} holds no documents; add one JSON object per line like '
                             '{"docno": "d1", "text": "..."}')
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

    def fingerprint(self) -> str:
        """SHA-256 of the collection's files (documents, queries, qrels, declaration): equal for equal content.

        It identifies what a result was measured on (a sweep's provenance records it). The offline artifacts are
        built from the documents alone, and their workdir is named by :meth:`corpus_fingerprint`."""
        return self._hash_files(('docs.jsonl', 'queries.tsv', 'qrels.txt', DECLARATION))

    def corpus_fingerprint(self) -> str:
        """SHA-256 of ``docs.jsonl`` alone, laid out as :meth:`fingerprint` lays out each file: what every offline
        artifact (index, vectors, graph, groups) is built from, so mending a query or a judgement keeps them."""
        return self._hash_files(('docs.jsonl',))

    def _hash_files(self, names) -> str:
        digest = hashlib.sha256()
        for name in names:
            file = self.path / name
            digest.update(f'{name}\0'.encode())
            if file.is_file():
                with file.open('rb') as fin:
                    for block in iter(lambda f=fin: f.read(1 << 20), b''):
                        digest.update(block)
            digest.update(b'\0')
        return digest.hexdigest()

    # -- topics and qrels ---------------------------------------------------------------------------------------
    @cached_property
    def _topics(self) -> pd.DataFrame:
        path = self.path / 'queries.tsv'
        rows = []
        seen = set()
        controls: List[int] = []
        for lineno, line in _read_lines(path):
            if not line.strip():
                continue
            where = f'{path} line {lineno}'
            parts = line.split('\t')
            if len(parts) != 2:
                got = 'no tab' if len(parts) == 1 else f'{len(parts)} columns'
                raise ValueError(f'{where}: expected two tab-separated columns "qid<TAB>query", got {got} in '
                                 f'{line[:80]!r}; replace tabs inside the query text by spaces')
            qid = _check_id(parts[0].strip(), 'qid', where)
            query = parts[1].strip()
            if not rows and qid.lower() in _HEADER_IDS and query.lower() in _HEADER_TEXTS:  # read as a query 'qid'
                raise ValueError(f'{where}: {line!r} is a header line, which queries.tsv does not have; remove it '
                                 '(every line is "qid<TAB>query")')
            if _CONTROL.search(query):  # NUL and friends: PISA fails from inside on them
                controls.append(lineno)
                query = ' '.join(_CONTROL.sub(' ', query).split())
            if not query:
                raise ValueError(f'{where}: query {qid!r} has no text; remove the line or add the query text')
            if qid in seen:
                raise ValueError(f'{where}: duplicate qid {qid!r}')
            seen.add(qid)
            rows.append((qid, query))
        if not rows:
            raise ValueError(f'{path} holds no queries; add lines "qid<TAB>query"')
        if controls:
            shown = ', '.join(map(str, controls[:5])) + (', ...' if len(controls) > 5 else '')
            warnings.warn(f'{path}: {len(controls)} queries held control characters (NUL, ...), replaced by spaces '
                          f'(line {shown})', stacklevel=3)
        return pd.DataFrame(rows, columns=['qid', 'query'])

    def get_topics(self, variant: Optional[str] = None) -> pd.DataFrame:
        return self._topics.copy()

    def get_topics_lang(self) -> Optional[str]:
        return 'en'

    @cached_property
    def relevance(self) -> Tuple[str, str]:
        """``(kind, reason)``: whether the qrels' codes are ``'graded'`` gains or only ``'binary'`` (rel>0) is meant.

        Read from ``collection.json`` (``{"relevance": "binary"}`` or ``"graded"``); a few known collections whose
        codes are not gains (Cranfield) are recognised by the content of their qrels; otherwise ``'graded'``.
        """
        declaration = self.path / DECLARATION
        if declaration.is_file():
            try:
                kind = json.loads(declaration.read_text(encoding='utf-8-sig')).get('relevance', 'graded')
            except (ValueError, AttributeError):
                raise ValueError(f'{declaration}: expected a JSON object like {{"relevance": "binary"}}') from None
            if kind not in ('binary', 'graded'):
                raise ValueError(f'{declaration}: "relevance" must be "binary" or "graded", got {kind!r}')
            return kind, f'declared in {declaration}'
        qrels = self.path / 'qrels.txt'
        if qrels.is_file():
            digest = hashlib.sha256(qrels.read_bytes()).hexdigest()
            if digest in _KNOWN_BINARY:
                return 'binary', _KNOWN_BINARY[digest]
        return 'graded', f'no {DECLARATION} declaring otherwise'

    def get_qrels(self, variant: Optional[str] = None, *, binary: bool = False) -> pd.DataFrame:
        """Qrels as ``qid, docno, label`` (labels as stored). ``binary=True`` maps rel>0 to 1, everything else to 0.

        See :attr:`relevance` for whether the collection's codes are meant as graded gains.
        """
        path = self.path / 'qrels.txt'
        if not path.is_file():
            raise FileNotFoundError(f'qrels.txt is missing from {str(self.path)!r}; it is needed for evaluation')
        rows, lines = [], []  # the judgements and the line each was read from
        seen: Dict[Tuple[str, str], int] = {}
        for lineno, line in _read_lines(path):
            parts = line.split()
            if not parts:
                continue
            where = f'{path} line {lineno}'
            if len(parts) != 4:
                raise ValueError(f'{where}: expected "qid 0 docno relevance", got {line.strip()[:80]!r}')
            if not _INTEGER.fullmatch(parts[3]):  # int() alone would read '1_0' as 10 and a full-width '３' as 3
                raise ValueError(f'{where}: relevance {parts[3]!r} is not an integer; {_GRADES}')
            label = int(parts[3])
            if not -2 ** 31 <= label < 2 ** 31:  # trec_eval and ir_measures read a label into a C int
                raise ValueError(f'{where}: relevance {parts[3]!r} is out of range; {_GRADES}')
            key = (_check_id(parts[0], 'qid', where), _check_id(parts[2], 'docno', where))
            if key in seen:
                raise ValueError(f'{where}: qid {parts[0]!r} judges docno {parts[2]!r} again (first on line '
                                 f'{seen[key]}); keep one judgement per pair')
            seen[key] = lineno
            rows.append((parts[0], parts[2], label))
            lines.append(lineno)
        if not rows:
            raise ValueError(f'{path} holds no judgements, so nothing can be evaluated; add lines "qid 0 docno '
                             'relevance", or remove the file')
        qrels = pd.DataFrame(rows, columns=['qid', 'docno', 'label'])
        docs_unknown = ~qrels.docno.isin(self._docs.keys()).to_numpy()
        qids_unknown = ~qrels.qid.isin(set(self._topics.qid)).to_numpy()
        unknown_docs, unknown_qids = int(docs_unknown.sum()), int(qids_unknown.sum())
        if (unknown_docs or unknown_qids) and not self.__dict__.get('_unknown_qrels_told'):
            self._unknown_qrels_told = True  # once per collection object: a comparison reads its qrels several times
            examples = [f'{column} {qrels[column].iat[at]!r} on line {lines[at]}' for column, unknown in
                        (('docno', docs_unknown), ('qid', qids_unknown)) if unknown.any()
                        for at in [unknown.argmax()]]  # the first of each, to find it by
            warnings.warn(f'{path}: {unknown_docs} qrels name docnos and {unknown_qids} name qids that are not in the '
                          f'collection (e.g. {", ".join(examples)}); they cannot be retrieved and only lower recall '
                          '(check that the qrels are this collection\'s, else remove those lines)',
                          stacklevel=2)
        if binary:
            qrels['label'] = (qrels.label > 0).astype(int)
        return qrels


def _json_type(value) -> str:
    return {dict: 'JSON object', list: 'JSON list', bool: 'boolean', type(None): 'null', float: 'number',
            int: 'number', str: 'string'}.get(type(value), type(value).__name__)


def _text_field(doc: dict, field: str, where: str) -> str:
    value = doc.get(field)
    if value is None:
        return ''
    if not isinstance(value, str):
        raise ValueError(f'{where}: "{field}" must be a string, got a {_json_type(value)}; join or convert it '
                         'before writing docs.jsonl')
    return value


class _TextLoader(pt.Transformer):
    def __init__(self, dataset: LocalDataset, fields: Union[List[str], str] = '*'):
        self.dataset = dataset
        self.fields = fields

    def __repr__(self):
        return f'{self.dataset!r}.text_loader({self.fields!r})'

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['docno'], context=self)
        fields = ['text', 'title'] if self.fields == '*' else (
            [self.fields] if isinstance(self.fields, str) else list(self.fields))
        if self.fields == '*' and not self.dataset.has_titles():
            fields = ['text']
        unknown = [f for f in fields if f not in ('text', 'title')]
        if unknown:  # docs.jsonl holds text and title only: any other field would be an empty text for every row
            raise ValueError(f'{self!r}: docs.jsonl documents have the fields text and title (optional), not '
                             f'{unknown}; load "text" (pt.text.get_text(dataset, \'text\')) or name that field '
                             'in the reranker (e.g. text_field=\'text\')')
        docs = self.dataset._docs
        docnos = [str(d) for d in inp.docno]  # a run's docnos may have become integers (docnos are text here)
        missing = [d for d in dict.fromkeys(docnos) if d not in docs]
        if missing:  # an empty text would be scored silently (an LLM reranker reads nothing)
            raise ValueError(f'{self!r}: {len(missing)} docno(s) of the input are not in the collection (e.g. '
                             f'{missing[:3]}): load the text from the collection the run was retrieved from')
        out = inp.copy()
        for field in fields:
            out[field] = [docs[d].get(field, '') for d in docnos]
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
    try:
        dataset = pt.get_dataset(spec)
    except KeyError as ex:
        raise ValueError(f'{spec!r} is not a known dataset id ({ex.args[0] if ex.args else ex}); see '
                         'https://ir-datasets.com for ids (irds:<id>) or pass a collection folder') from None
    _probe_download(dataset, spec)
    return dataset


def _probe_download(dataset, spec: str) -> None:
    """Read the first document so that data that is neither on disk nor downloadable fails here, in one line.

    What the downloader prints meanwhile (retries, progress bars) is held back and shown only when the probe
    succeeds, so an offline machine sees one clear error instead of a page of retries.
    """
    import tempfile

    from ._errors import DatasetUnavailableError, is_network_error
    if not hasattr(dataset, 'get_corpus_iter'):
        return
    with tempfile.TemporaryFile() as held:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        failure = None
        try:
            next(iter(dataset.get_corpus_iter(verbose=False)), None)
        except Exception as ex:  # noqa: BLE001 - classified below
            failure = ex
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        if failure is None:
            held.seek(0)
            sys.stderr.write(held.read().decode('utf8', 'replace'))
            return
    if is_network_error(failure):
        raise DatasetUnavailableError(
            f'{spec} is not downloaded yet and the network cannot be reached ({type(failure).__name__}); download '
            'it first on a machine with network access (ir_datasets keeps it under ~/.ir_datasets, or '
            '$IR_DATASETS_HOME) and copy that folder here, or pass a local collection folder') from None
    raise failure


def _check_excluded_args(qrels: Any, excluded_label: Any, context: str) -> None:
    """Refuse qrels that are no frame of ``qid, docno, label`` and a label that is no finite number (``'x'`` or
    ``None`` matched no label, so nothing was removed and nothing said so)."""
    if not isinstance(qrels, pd.DataFrame):
        raise ValueError(f'{context}: qrels must be a qrels frame (qid, docno, label), as dataset.get_qrels() gives '
                         f'it; got {type(qrels).__name__}')
    missing = [c for c in ('qid', 'docno', 'label') if c not in qrels.columns]
    if missing:
        raise ValueError(f'{context}: the qrels lack the column(s) {missing}; they need qid, docno and label '
                         f'(got {list(qrels.columns)}), as dataset.get_qrels() gives them')
    check_number('excluded_label', excluded_label, note='the label that marks an excluded document; BRIGHT: -100')


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
    _check_excluded_args(qrels, excluded_label, 'remove_excluded')
    labels = pd.to_numeric(qrels['label'], errors='coerce')  # labels read as text ('-100') are the numbers they hold
    excluded = qrels.loc[labels == excluded_label, ['qid', 'docno']]
    if len(excluded) == 0 or len(run) == 0:
        return run
    key = pd.MultiIndex.from_frame(run[['qid', 'docno']].astype(str))
    drop = key.isin(pd.MultiIndex.from_frame(excluded.astype(str)))
    out = run.loc[~drop].copy()
    if 'rank' in out.columns:
        out = pt.model.add_ranks(out.drop(columns=['rank']))
    return out


class RemoveExcluded(Rebuildable, pt.Transformer):
    """A transformer applying :func:`remove_excluded` with fixed qrels; put it last in a pipeline.

    Example::

        ds = pt.get_dataset('irds:bright/biology')
        qrels = ds.get_qrels()
        pipe = bm25 >> garen >> RemoveExcluded(qrels)
        pt.Experiment([pipe], ds.get_topics(), qrels[qrels.label >= 0], ['nDCG@10'])
    """

    def __init__(self, qrels: pd.DataFrame, *, excluded_label: int = -100):
        _check_excluded_args(qrels, excluded_label, 'RemoveExcluded')
        self.qrels = qrels
        self.excluded_label = excluded_label

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'docno', 'score'], context=self)
        return remove_excluded(inp, self.qrels, excluded_label=self.excluded_label)
