"""The GroupCorpusGraph artifact: a pyterrier-adaptive corpus graph plus a Leiden partition and group summaries."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np
import pyterrier as pt
from pyterrier_adaptive import CorpusGraph

from ._graphs import lookup_ids
from ._summaries import Summarizer

__all__ = ['GroupCorpusGraph', 'ArtifactError']

FORMAT_VERSION = 1
PARTIAL = 'summaries.partial.jsonl'
PARTIAL_META = 'summaries.partial.json'
SUMMARIES = 'summaries.jsonl'


class ArtifactError(ValueError):
    """A GroupCorpusGraph folder is incomplete, truncated or inconsistent with its ``pt_meta.json``."""


def _write_json(path: Path, data: Dict[str, Any]) -> None:
    """Write JSON atomically (temporary file in the same folder, then rename)."""
    tmp = path.with_name(path.name + '.tmp')
    with tmp.open('wt') as fout:
        json.dump(data, fout, indent=1, sort_keys=True)
        fout.flush()
        os.fsync(fout.fileno())
    os.replace(tmp, path)


def _graph_arrays(graph) -> tuple:
    """``(docnos, edges, weights)`` of any pyterrier-adaptive corpus graph (``np_topk`` fast path, else generic)."""
    if isinstance(graph, GroupCorpusGraph):
        return graph.docnos_list(), np.asarray(graph.edges_data), np.asarray(graph.weights_data, dtype=np.float32)
    lookup = getattr(graph, '_docnos', None)
    if lookup is None:
        raise TypeError(f'{graph!r} has no docno lookup; pass a pyterrier_adaptive NpTopKCorpusGraph or use '
                        'GroupCorpusGraph.from_arrays(path, docnos, edges, weights)')
    count = len(lookup)
    docnos = [str(d) for d in lookup.fwd[np.arange(count)]]
    if hasattr(graph, 'edges_data'):
        edges, weights = np.asarray(graph.edges_data), np.asarray(graph.weights_data, dtype=np.float32)
    else:  # any CorpusGraph: ask for every node's neighbours by internal id
        pairs = [graph.neighbours(i, weights=True) for i in range(count)]
        edges = np.stack([np.asarray(p[0]) for p in pairs])
        weights = np.stack([np.asarray(p[1], dtype=np.float32) for p in pairs])
    return docnos, edges, weights


class GroupCorpusGraph(CorpusGraph):
    """A corpus graph whose documents are partitioned into small groups, each with an optional summary.

    It is a :class:`pyterrier_adaptive.CorpusGraph` (``neighbours(docno)`` works, so
    ``pyterrier_adaptive.GAR(scorer, groups)`` runs over it) and the factory of GAREN transformers
    (:meth:`garen`). Files (all raw arrays, JSON and JSONL; no pickle):

    * ``edges.u32.np`` / ``weights.f16.np`` / ``docnos.npids``: pyterrier-adaptive's ``np_topk`` layout, docnos in
      string-sorted order (so the npids lookup round-trips);
    * ``group_of.u32.np``: group id of every document; ``group_offsets.u64.np`` + ``group_members.u32.np``: the
      members of every group (CSR, members in id order);
    * ``summaries.jsonl``: one record per group (``group``, ``concept``, ``summary``, ``provenance``), once
      :meth:`summarize` has finished;
    * ``pt_meta.json`` (written last): type ``corpus_graph``, format ``garen_groups`` and every build parameter.

    Arrays are memory-mapped; opening checks their sizes against ``pt_meta.json`` and the first use of each
    array checks its id ranges, raising :class:`ArtifactError` on a truncated or tampered artifact.

    Load with ``pt.Artifact.load(path)`` or ``GroupCorpusGraph(path)``; build with :meth:`from_corpus_graph`.
    """
    ARTIFACT_TYPE = 'corpus_graph'
    ARTIFACT_FORMAT = 'garen_groups'
    ARTIFACT_PACKAGE_HINT = 'pyterrier-garen'

    def __init__(self, path: Union[str, Path]):
        super().__init__(path)
        meta_path = self.path / 'pt_meta.json'
        if not meta_path.is_file():
            raise FileNotFoundError(f'{str(self.path)!r} is not a built GroupCorpusGraph (no pt_meta.json); build '
                                    'it with GroupCorpusGraph.from_corpus_graph(graph, path)')
        with meta_path.open('rt') as fin:
            self.meta: Dict[str, Any] = json.load(fin)
        if (self.meta.get('type'), self.meta.get('format')) != (self.ARTIFACT_TYPE, self.ARTIFACT_FORMAT):
            raise ArtifactError(f'{str(self.path)!r} holds a {self.meta.get("type")}.{self.meta.get("format")} '
                                'artifact, not corpus_graph.garen_groups; load it with pt.Artifact.load(path)')
        try:
            self.doc_count = int(self.meta['doc_count'])
            self.k = int(self.meta['k'])
            self.num_groups = int(self.meta['num_groups'])
        except (KeyError, TypeError, ValueError) as ex:
            raise ArtifactError(f'{meta_path} lacks a valid doc_count, k or num_groups') from ex
        expected = {
            'edges.u32.np': self.doc_count * self.k * 4,
            'weights.f16.np': self.doc_count * self.k * 2,
            'group_of.u32.np': self.doc_count * 4,
            'group_offsets.u64.np': (self.num_groups + 1) * 8,
            'group_members.u32.np': self.doc_count * 4,
            'docnos.npids': None,
        }
        for name, size in expected.items():
            file = self.path / name
            if not file.is_file():
                raise ArtifactError(f'{file} is missing; the artifact is incomplete, rebuild or re-download it')
            if size is not None and file.stat().st_size != size:
                raise ArtifactError(f'{file} has {file.stat().st_size} bytes, expected {size} for '
                                    f'{self.doc_count} docs, k={self.k}, {self.num_groups} groups (truncated?)')

    def __repr__(self):
        return f'GroupCorpusGraph({str(self.path)!r})'

    # -- arrays (memory-mapped, validated on first use) ---------------------------------------------------------
    def _map(self, name: str, dtype, shape=None) -> np.ndarray:
        # a plain ndarray view of the memory map: same pages, without np.memmap's slow per-item __getitem__
        arr = np.memmap(self.path / name, mode='r', dtype=dtype).view(np.ndarray)
        return arr.reshape(shape) if shape is not None else arr

    @cached_property
    def edges_data(self) -> np.ndarray:
        edges = self._map('edges.u32.np', np.uint32, (self.doc_count, self.k))
        if edges.size and int(edges.max()) >= self.doc_count:
            raise ArtifactError(f'{self.path}/edges.u32.np names a document id >= doc_count={self.doc_count}')
        return edges

    @cached_property
    def weights_data(self) -> np.ndarray:
        return self._map('weights.f16.np', np.float16, (self.doc_count, self.k))

    @cached_property
    def group_ids(self) -> np.ndarray:
        """Group id of every document, by internal id."""
        group_of = self._map('group_of.u32.np', np.uint32)
        if group_of.size and int(group_of.max()) >= self.num_groups:
            raise ArtifactError(f'{self.path}/group_of.u32.np names a group >= num_groups={self.num_groups}')
        return group_of

    @cached_property
    def _group_offsets(self) -> np.ndarray:
        offsets = self._map('group_offsets.u64.np', np.uint64).astype(np.int64)
        if offsets[0] != 0 or offsets[-1] != self.doc_count or np.any(np.diff(offsets) < 0):
            raise ArtifactError(f'{self.path}/group_offsets.u64.np is not a valid offset table')
        return offsets

    @cached_property
    def _group_members(self) -> np.ndarray:
        members = self._map('group_members.u32.np', np.uint32)
        if members.size and int(members.max()) >= self.doc_count:
            raise ArtifactError(f'{self.path}/group_members.u32.np names a document id >= doc_count')
        return members

    @cached_property
    def _docnos(self):
        from npids import Lookup
        lookup = Lookup(self.path / 'docnos.npids')
        if len(lookup) != self.doc_count:
            raise ArtifactError(f'{self.path}/docnos.npids holds {len(lookup)} docnos, expected {self.doc_count}')
        return lookup

    # -- documents ----------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.doc_count

    def docnos_list(self) -> List[str]:
        """All docnos by internal id."""
        return [str(d) for d in self._docnos.fwd[np.arange(self.doc_count)]]

    @cached_property
    def _id_cache(self) -> Dict[str, int]:
        return {}

    def doc_id(self, docno: str) -> int:
        """Internal id of a docno, -1 when it is not in the graph (memoised: online search asks repeatedly)."""
        docno = str(docno)
        did = self._id_cache.get(docno)
        if did is None:
            did = self._id_cache[docno] = int(lookup_ids(self._docnos, [docno])[0])
        return did

    def doc_ids(self, docnos: Sequence[str]) -> np.ndarray:
        """Internal ids of several docnos (-1 for those not in the graph)."""
        return np.asarray([self.doc_id(d) for d in docnos], dtype=np.int64)

    def neighbours(self, docid: Union[int, str], weights: bool = False):
        """The k nearest neighbours of a document (pyterrier-adaptive's interface).

        An internal id gives an array of ids; a docno gives an array of docnos. A docno that is not in the graph
        has no neighbours (an empty result) rather than an error.
        """
        as_str = isinstance(docid, str)
        if as_str:
            docid = self.doc_id(docid)
            if docid < 0:
                empty = np.array([], dtype=object)
                return (empty, np.array([], dtype=np.float16)) if weights else empty
        neigh = self.edges_data[docid]
        if as_str:
            neigh = self._docnos.fwd[neigh]
        if weights:
            return neigh, self.weights_data[docid]
        return neigh

    # -- groups -------------------------------------------------------------------------------------------------
    def group_of(self, docno: str) -> int:
        """Group id of a docno, -1 when the docno is not in the graph."""
        did = self.doc_id(docno)
        return self._group_list[did] if did >= 0 else -1

    @cached_property
    def _group_list(self) -> List[int]:
        return self.group_ids.tolist()

    def groups_of(self, docnos: Sequence[str]) -> np.ndarray:
        """Group ids of several docnos (-1 for those not in the graph)."""
        ids = self.doc_ids(docnos)
        out = np.full(len(ids), -1, dtype=np.int64)
        out[ids >= 0] = self.group_ids[ids[ids >= 0]]
        return out

    def group_member_ids(self, group_id: int) -> np.ndarray:
        """Internal ids of a group's members, in id order."""
        if not 0 <= int(group_id) < self.num_groups:
            raise IndexError(f'group {group_id} does not exist; group ids run from 0 to {self.num_groups - 1}')
        start, end = self._group_offsets[int(group_id)], self._group_offsets[int(group_id) + 1]
        return np.asarray(self._group_members[start:end], dtype=np.int64)

    def group_members(self, group_id: int) -> List[str]:
        """Docnos of a group's members, in a fixed order (string order of docnos)."""
        return [str(d) for d in self._docnos.fwd[self.group_member_ids(group_id)]]

    @property
    def group_sizes(self) -> np.ndarray:
        return np.diff(self._group_offsets)

    def group_stats(self) -> Dict[str, Any]:
        """Number of groups and their size distribution (min, max, mean, median, #over the limit)."""
        sizes = self.group_sizes
        limit = self.meta.get('partition', {}).get('max_group_size')
        return {
            'docs': self.doc_count, 'groups': self.num_groups,
            'min': int(sizes.min()) if len(sizes) else 0, 'max': int(sizes.max()) if len(sizes) else 0,
            'mean': float(sizes.mean()) if len(sizes) else 0., 'median': float(np.median(sizes)) if len(sizes) else 0.,
            'singletons': int((sizes == 1).sum()),
            'over_limit': int((sizes > limit).sum()) if limit else 0,
            'unsplittable': list(self.meta.get('partition', {}).get('unsplittable', [])),
        }

    # -- summaries ----------------------------------------------------------------------------------------------
    @property
    def has_summaries(self) -> bool:
        return self.meta.get('summaries') is not None and (self.path / SUMMARIES).is_file()

    @cached_property
    def _summary_records(self) -> List[Optional[Dict[str, Any]]]:
        records: List[Optional[Dict[str, Any]]] = [None] * self.num_groups
        if not self.has_summaries:
            return records
        with (self.path / SUMMARIES).open('rt', encoding='utf8') as fin:
            for lineno, line in enumerate(fin, start=1):
                try:
                    record = json.loads(line)
                    gid = int(record['group'])
                except (ValueError, KeyError, TypeError) as ex:
                    raise ArtifactError(f'{self.path / SUMMARIES} line {lineno} is not a valid summary record') from ex
                if not 0 <= gid < self.num_groups:
                    raise ArtifactError(f'{self.path / SUMMARIES} line {lineno} names unknown group {gid}')
                records[gid] = record
        expected = self.meta['summaries'].get('count')
        found = sum(r is not None for r in records)
        if expected is not None and found != expected:
            raise ArtifactError(f'{self.path / SUMMARIES} holds {found} records, pt_meta.json says {expected}')
        return records

    def summary_record(self, group_id: int) -> Optional[Dict[str, Any]]:
        """The stored summary record of a group (``None`` without summaries)."""
        if not 0 <= int(group_id) < self.num_groups:
            raise IndexError(f'group {group_id} does not exist; group ids run from 0 to {self.num_groups - 1}')
        return self._summary_records[int(group_id)]

    def summary(self, group_id: int) -> str:
        """The group's text for a navigator: ``"<concept>: <summary>"``, or ``''`` without summaries."""
        record = self.summary_record(group_id)
        if not record:
            return ''
        concept, summary = str(record.get('concept') or '').strip(), str(record.get('summary') or '').strip()
        return f'{concept}: {summary}' if concept else summary

    def summarize(self, summarizer: Summarizer, corpus: Union[Iterable[Dict[str, Any]], Any], *,
                  batch_size: int = 16, overwrite: bool = False, verbose: bool = False) -> 'GroupCorpusGraph':
        """Summarise every group and store the summaries in the artifact. Resumable.

        Records are appended to ``summaries.partial.jsonl`` batch by batch (flushed to disk); a rerun after an
        interruption reuses every finished record and continues with the remaining groups. When all groups are
        done, ``summaries.jsonl`` is written atomically and ``pt_meta.json`` records the summariser's config.

        Args:
            summarizer: a :class:`~pyterrier_garen.Summarizer` (``ExtractiveSummarizer()``, ``LLMSummarizer(...)``).
            corpus: a dataset (``get_corpus_iter()``) or an iterable of ``{'docno', 'text'[, 'title']}`` dicts.
            batch_size: groups per summariser call (one engine call per batch for LLM summarisers).
            overwrite: replace existing summaries (or a partial run made with another summariser).
            verbose: show a progress bar.

        Returns:
            ``self``, with the summaries available.
        """
        config = summarizer.config()
        if self.has_summaries and not overwrite:
            if self.meta['summaries'].get('summarizer') == config:
                return self
            raise FileExistsError(f'{self.path} already has summaries made by {self.meta["summaries"]["summarizer"]}; '
                                  'pass overwrite=True to replace them')
        partial, partial_meta = self.path / PARTIAL, self.path / PARTIAL_META
        done: Dict[int, Dict[str, Any]] = {}
        if partial_meta.is_file() and not overwrite:
            with partial_meta.open('rt') as fin:
                previous = json.load(fin)
            if previous.get('summarizer') != config:
                raise FileExistsError(f'{partial} holds an unfinished run of another summariser '
                                      f'({previous.get("summarizer")}); pass overwrite=True to discard it')
            done = _read_partial(partial)
        else:
            partial.unlink(missing_ok=True)
            _write_json(partial_meta, {'summarizer': config, 'started': time.time()})
        todo = [g for g in range(self.num_groups) if g not in done]
        if todo:
            texts = self._member_texts(corpus, todo)
            provenance = {k: config.get(k) for k in ('name', 'model', 'prompt_hash')}
            progress = pt.tqdm(total=self.num_groups, initial=len(done), desc='summarising groups', unit='group',
                               disable=not verbose)
            with partial.open('at', encoding='utf8') as fout:
                for start in range(0, len(todo), batch_size):
                    batch = [{'group': g, 'docs': texts[g]} for g in todo[start:start + batch_size]]
                    records = summarizer.summarize(batch)
                    if len(records) != len(batch):
                        raise RuntimeError(f'{summarizer!r} returned {len(records)} records for {len(batch)} groups')
                    for group, record in zip(batch, records):
                        record = {**record, 'group': group['group'], 'provenance': provenance}
                        fout.write(json.dumps(record) + '\n')
                        done[group['group']] = record
                    fout.flush()
                    os.fsync(fout.fileno())
                    progress.update(len(batch))
            progress.close()
        final = self.path / SUMMARIES
        tmp = final.with_name(final.name + '.tmp')
        with tmp.open('wt', encoding='utf8') as fout:
            for gid in range(self.num_groups):
                fout.write(json.dumps(done[gid]) + '\n')
        os.replace(tmp, final)
        fallbacks = sum(bool(r.get('fallback')) for r in done.values())
        self.meta['summaries'] = {'summarizer': config, 'count': self.num_groups, 'fallbacks': fallbacks}
        _write_json(self.path / 'pt_meta.json', self.meta)
        partial.unlink(missing_ok=True)
        partial_meta.unlink(missing_ok=True)
        self.__dict__.pop('_summary_records', None)
        return self

    def _member_texts(self, corpus, group_ids: Sequence[int]) -> Dict[int, List[Dict[str, Any]]]:
        wanted = np.zeros(self.doc_count, dtype=bool)
        for gid in group_ids:
            wanted[self.group_member_ids(gid)] = True
        docs_iter = corpus.get_corpus_iter(verbose=False) if hasattr(corpus, 'get_corpus_iter') else corpus
        docs: Dict[str, Dict[str, Any]] = {}
        for doc in docs_iter:
            did = self.doc_id(str(doc['docno']))
            if did >= 0 and wanted[did]:
                docs[str(doc['docno'])] = {k: doc[k] for k in ('docno', 'title', 'text') if k in doc}
        missing = int(wanted.sum()) - len(docs)
        if missing:
            warnings.warn(f'{missing} documents of the groups to summarise are not in the corpus given; they are '
                          'summarised as empty documents', stacklevel=3)
        return {gid: [docs.get(d, {'docno': d, 'text': ''}) for d in self.group_members(gid)] for gid in group_ids}

    # -- transformers -------------------------------------------------------------------------------------------
    def garen(self, reranker: pt.Transformer, navigator: pt.Transformer, **kwargs) -> pt.Transformer:
        """A :class:`~pyterrier_garen.GAREN` transformer over these groups (keyword arguments pass through)."""
        from ._garen import GAREN
        return GAREN(reranker, self, navigator, **kwargs)

    def gar(self, scorer: pt.Transformer, **kwargs) -> pt.Transformer:
        """``pyterrier_adaptive.GAR`` over this graph (keyword arguments pass through)."""
        from pyterrier_adaptive import GAR
        return GAR(scorer, self, **kwargs)

    # -- building -----------------------------------------------------------------------------------------------
    @classmethod
    def from_corpus_graph(cls, graph, path: Union[str, Path], *, max_group_size: int = 20, resolution: float = 1.0,
                          randomness: float = 0.001, seed: int = 42, backend: str = 'igraph',
                          overwrite: bool = False, verbose: bool = False) -> 'GroupCorpusGraph':
        """Partition a pyterrier-adaptive corpus graph into groups with Leiden and write the artifact.

        See :func:`pyterrier_garen._partition.leiden_partition` for the algorithm and parameters. When ``path``
        already holds an artifact built with the same parameters and graph it is reused; with other parameters a
        :class:`FileExistsError` says what differs (pass ``overwrite=True`` to rebuild).

        Args:
            graph: any pyterrier-adaptive ``CorpusGraph`` (e.g. ``NpTopKCorpusGraph``, a FlexIndex graph).
            path: output folder.
            max_group_size: re-partition groups larger than this (paper: 20).
            resolution: modularity resolution (paper: 1.0).
            randomness: Leiden randomness (paper: 0.001).
            seed: random seed; the same seed gives byte-identical group files.
            backend: ``'igraph'`` (fast default) or ``'leidenalg'`` (reference).
            overwrite: rebuild even if ``path`` holds an artifact.
            verbose: progress bars.
        """
        docnos, edges, weights = _graph_arrays(graph)
        source = {'path': str(getattr(graph, 'path', '')), 'meta': getattr(graph, 'meta', None),
                  'class': type(graph).__name__}
        return cls.from_arrays(path, docnos, edges, weights, max_group_size=max_group_size, resolution=resolution,
                               randomness=randomness, seed=seed, backend=backend, overwrite=overwrite,
                               verbose=verbose, source=source)

    @classmethod
    def from_arrays(cls, path: Union[str, Path], docnos: Sequence[str], edges: np.ndarray, weights: np.ndarray, *,
                    labels: Optional[Sequence[int]] = None, max_group_size: int = 20, resolution: float = 1.0,
                    randomness: float = 0.001, seed: int = 42, backend: str = 'igraph', overwrite: bool = False,
                    verbose: bool = False, source: Optional[Dict[str, Any]] = None) -> 'GroupCorpusGraph':
        """Write an artifact from raw arrays: ``docnos`` (n), ``edges``/``weights`` (n, k) by position.

        With ``labels`` (one group label per document) the partition is taken as given instead of running Leiden
        (useful for hand-built graphs in tests and for partitions computed elsewhere).
        """
        from ._graphs import write_docnos
        from ._partition import leiden_partition
        path = Path(path)
        docnos = [str(d) for d in docnos]
        edges = np.asarray(edges, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float32)
        n = len(docnos)
        if edges.ndim != 2 or edges.shape[0] != n or weights.shape != edges.shape:
            raise ValueError(f'edges {edges.shape} and weights {weights.shape} must both have shape ({n}, k)')
        if len(set(docnos)) != n:
            raise ValueError('docnos must be unique')
        # store documents in string-sorted docno order: npids then round-trips every docno (see DESIGN.md)
        order = np.argsort(np.asarray(docnos, dtype=object), kind='stable')
        new_id = np.empty(n, dtype=np.int64)
        new_id[order] = np.arange(n)
        sorted_docnos = [docnos[i] for i in order]
        edges = new_id[edges[order]] if n else edges
        weights = weights[order]
        params = {'max_group_size': max_group_size, 'resolution': resolution, 'randomness': randomness,
                  'seed': seed, 'backend': backend if labels is None else 'given'}
        if (path / 'pt_meta.json').exists() and not overwrite:
            existing = cls(path)
            stored = {k: existing.meta.get('partition', {}).get(k) for k in params}
            same_graph = existing.meta.get('graph_sha256') == _fingerprint(sorted_docnos, edges)
            if stored == params and same_graph:
                return existing
            diff = {k: (stored[k], params[k]) for k in params if stored[k] != params[k]}
            raise FileExistsError(f'{path} already holds a GroupCorpusGraph built differently (stored, requested): '
                                  f'{diff or "other graph"}; pass overwrite=True to rebuild it')
        started = time.time()
        if labels is None:
            part = leiden_partition(edges, weights, max_group_size=max_group_size, resolution=resolution,
                                    randomness=randomness, seed=seed, backend=backend, verbose=verbose)
            group_labels, unsplittable, modularity, calls = part.labels, part.unsplittable, part.modularity, \
                part.leiden_calls
        else:
            raw = np.asarray(labels)
            if len(raw) != n:
                raise ValueError(f'labels has {len(raw)} entries, expected one per document ({n})')
            # labels 0..G-1 (all used) are kept as group ids; anything else is renumbered in sorted label order
            _, group_labels = np.unique(raw, return_inverse=True)
            group_labels = group_labels.reshape(-1)[order]
            unsplittable, modularity, calls = [], float('nan'), 0
        num_groups = int(group_labels.max()) + 1 if n else 0
        member_order = np.argsort(group_labels, kind='stable')
        offsets = np.concatenate([[0], np.cumsum(np.bincount(group_labels, minlength=num_groups))])
        sizes = np.diff(offsets)
        over = [int(g) for g in np.nonzero(sizes > max_group_size)[0]]
        if over and labels is None:
            warnings.warn(f'{len(over)} groups stay larger than max_group_size={max_group_size} because Leiden found '
                          f'no split (near-duplicate documents?): groups {over[:10]}', stacklevel=2)
        meta = {
            'type': cls.ARTIFACT_TYPE, 'format': cls.ARTIFACT_FORMAT, 'package_hint': cls.ARTIFACT_PACKAGE_HINT,
            'format_version': FORMAT_VERSION, 'doc_count': n, 'k': int(edges.shape[1]), 'num_groups': num_groups,
            'partition': {**params, 'unsplittable': [int(g) for g in unsplittable], 'over_limit': over,
                          'modularity': modularity, 'leiden_calls': calls,
                          'seconds': round(time.time() - started, 3)},
            'source_graph': source, 'graph_sha256': _fingerprint(sorted_docnos, edges), 'summaries': None,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f'.{path.name}.', dir=path.parent))
        try:
            edges.astype(np.uint32).tofile(tmp / 'edges.u32.np')
            weights.astype(np.float16).tofile(tmp / 'weights.f16.np')
            write_docnos(sorted_docnos, tmp / 'docnos.npids')
            group_labels.astype(np.uint32).tofile(tmp / 'group_of.u32.np')
            offsets.astype(np.uint64).tofile(tmp / 'group_offsets.u64.np')
            member_order.astype(np.uint32).tofile(tmp / 'group_members.u32.np')
            _write_json(tmp / 'pt_meta.json', meta)  # last: its presence marks a complete artifact
            os.chmod(tmp, 0o755)
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(path)


def _fingerprint(docnos: Sequence[str], edges: np.ndarray) -> str:
    """SHA-256 of the docnos and edges (in stored order): tells whether a rebuild request names the same graph."""
    digest = hashlib.sha256('\n'.join(docnos).encode())
    digest.update(np.ascontiguousarray(edges, dtype=np.uint32).tobytes())
    return digest.hexdigest()


def _read_partial(path: Path) -> Dict[int, Dict[str, Any]]:
    """Finished records of an interrupted summarisation; a torn last line (killed mid-write) is dropped."""
    done: Dict[int, Dict[str, Any]] = {}
    if not path.is_file():
        return done
    with path.open('rb') as fin:
        data = fin.read()
    keep = data.rfind(b'\n') + 1
    if keep < len(data):  # cut the torn tail so the next append starts on a fresh line
        with path.open('r+b') as fout:
            fout.truncate(keep)
    for line in data[:keep].decode('utf8').splitlines():
        if line.strip():
            record = json.loads(line)
            done[int(record['group'])] = record
    return done
