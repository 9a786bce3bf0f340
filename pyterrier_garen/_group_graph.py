"""The GroupCorpusGraph artifact: a pyterrier-adaptive corpus graph plus a Leiden partition and group summaries."""
from __future__ import annotations

import os
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyterrier as pt
from pyterrier_adaptive import CorpusGraph

from ._atomic import exclusive, read_meta, recover, resource_error, resource_errors
from ._checks import GROUP_FILES, ArtifactError, check_links, read_meta_file
from ._docno_index import DocnoIndex
from ._group_builder import (ARTIFACT_FORMAT, ARTIFACT_TYPE, FORMAT_VERSION, PACKAGE_HINT, build_group_graph,
                             graph_arrays)
from ._io import write_json
from ._params import _GROUP_ID
from ._summaries import (MAX_FAILED_SHARE, SUMMARIES, FailureBudget, Summarizer, SummaryStore, failed_request,
                         remove_leftovers, stamp, summarize_batch)

__all__ = ['GroupCorpusGraph', 'ArtifactError']


def _count(value) -> int:
    """A count from ``pt_meta.json``: an integer (``True``, ``1.5`` or ``"3"`` are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value


class GroupCorpusGraph(CorpusGraph):
    """A corpus graph whose documents are partitioned into small groups, each with an optional summary.

    It is a :class:`pyterrier_adaptive.CorpusGraph` (``neighbours(docno)`` works, so
    ``pyterrier_adaptive.GAR(scorer, groups)`` runs over it) and the factory of every search over it, as a
    ``PisaIndex`` is of its retrievers: :meth:`garen`, :meth:`doc_garen`, :meth:`gar`, :meth:`slidegar` and
    :meth:`rgs` (sliding-window re-ranking follows no graph, so it has none). Files (all raw arrays, JSON and
    JSONL; no pickle):

    * ``edges.u32.np`` / ``weights.f16.np`` / ``docnos.npids``: pyterrier-adaptive's ``np_topk`` layout, docnos in
      string-sorted order (so the npids lookup round-trips);
    * ``group_of.u32.np``: group id of every document; ``group_offsets.u64.np`` + ``group_members.u32.np``: the
      members of every group (CSR, members in id order);
    * ``summaries.jsonl``: one record per group (``group``, ``concept``, ``summary``, ``provenance``), once
      :meth:`summarize` has finished;
    * ``pt_meta.json`` (written last): type ``corpus_graph``, format ``garen_groups`` and every build parameter.

    Arrays are memory-mapped; opening checks their sizes against ``pt_meta.json`` and the first use of each
    array checks its id ranges, raising :class:`ArtifactError` on a truncated or tampered artifact.

    Load with ``pt.Artifact.load(path)`` or ``GroupCorpusGraph(path)``; build with :meth:`from_corpus_graph` (the
    builder is :mod:`pyterrier_garen._group_builder`); summaries live in its :meth:`summary_store`.
    """
    ARTIFACT_TYPE = ARTIFACT_TYPE
    ARTIFACT_FORMAT = ARTIFACT_FORMAT
    ARTIFACT_PACKAGE_HINT = PACKAGE_HINT
    #: entries each look-up memo (docno ids, groups, members, neighbours' groups) may hold before it is emptied and
    #: refilled on use; ``None``: unbounded. The memos are caches of the graph's own arrays, so emptying one never
    #: changes a result; it bounds a long-running process's memory (an entry is one docno's look-up, or one group's
    #: member list).
    memo_limit: Optional[int] = 1_000_000

    def to_hf(self, repo: str, **kwargs) -> None:
        """``pt.Artifact.to_hf``; when the Hub cannot be reached, one ``ConnectionError`` line naming the cause and
        the offline route (``build_package`` + a static server or a file, see ``pyterrier_garen._sharing``)."""
        from ._sharing import hub_errors
        with hub_errors(f'to_hf({repo!r})'):
            return super().to_hf(repo, **kwargs)

    @classmethod
    def from_hf(cls, repo: str, branch: Optional[str] = None, **kwargs) -> 'GroupCorpusGraph':
        """``pt.Artifact.from_hf``, with the same one-line error as :meth:`to_hf` when the Hub cannot be reached."""
        from ._sharing import hub_errors
        with hub_errors(f'from_hf({repo!r})'):
            return super().from_hf(repo, branch, **kwargs)

    def __init__(self, path: Union[str, Path]):
        super().__init__(path)
        recover(self.path)  # an interrupted rebuild's swap is undone first (the old artifact is restored)
        meta_path = self.path / 'pt_meta.json'
        if not meta_path.is_file() and not meta_path.is_symlink():
            if self.path.is_dir() and GROUP_FILES & set(os.listdir(self.path)):
                raise FileNotFoundError(f'{meta_path} is missing: {str(self.path)!r} holds the files of a '
                                        'GroupCorpusGraph but not its pt_meta.json, so it is damaged; rebuild it '
                                        '(build-groups --overwrite, or GroupCorpusGraph.from_corpus_graph(graph, '
                                        'path, overwrite=True)) or re-download it')
            raise FileNotFoundError(f'{str(self.path)!r} is not a built GroupCorpusGraph (no pt_meta.json); build '
                                    'it with GroupCorpusGraph.from_corpus_graph(graph, path)')
        self.meta: Dict[str, Any] = read_meta_file(self.path, fix='the artifact is damaged, rebuild or re-download it')
        if self.meta.get('type') is None and self.meta.get('format') is None:
            raise ArtifactError(f'{meta_path} names no artifact type and format; the artifact is damaged, rebuild or '
                                're-download it')
        if (self.meta.get('type'), self.meta.get('format')) != (self.ARTIFACT_TYPE, self.ARTIFACT_FORMAT):
            raise ArtifactError(f'{str(self.path)!r} holds a {self.meta.get("type")}.{self.meta.get("format")} '
                                'artifact, not corpus_graph.garen_groups; load it with pt.Artifact.load(path)')
        try:
            self.doc_count, self.k, self.num_groups = (_count(self.meta[key]) for key in ('doc_count', 'k',
                                                                                        'num_groups'))
        except (KeyError, TypeError, ValueError) as ex:
            raise ArtifactError(f'{meta_path} lacks a valid doc_count, k or num_groups') from ex
        version = self.meta.get('format_version')
        if version != FORMAT_VERSION:
            raise ArtifactError(f'{meta_path} has format_version {version!r}, but this pyterrier-garen reads version '
                                f'{FORMAT_VERSION}; rebuild the artifact with this version (or use the version that '
                                'wrote it)')
        if min(self.doc_count, self.k, self.num_groups) < 0 or self.num_groups > max(self.doc_count, 0):
            raise ArtifactError(f'{meta_path}: doc_count={self.doc_count}, k={self.k}, num_groups={self.num_groups} '
                                'do not describe a partition')
        check_links(self.path, any_link=True)  # no file of a GroupCorpusGraph is ever a link
        expected = {
            'edges.u32.np': self.doc_count * self.k * 4,
            'weights.f16.np': self.doc_count * self.k * 2,
            'group_of.u32.np': self.doc_count * 4,
            'group_offsets.u64.np': (self.num_groups + 1) * 8,
            'group_members.u32.np': self.doc_count * 4,
            'docnos.npids': self.meta.get('docnos_bytes'),
        }
        summaries = self.path / SUMMARIES
        if self.meta.get('summaries') is not None and (summaries.exists() or summaries.is_symlink()):
            expected[SUMMARIES] = None  # a missing one opens: summarize repairs it, reading a summary names the fix
        for name, size in expected.items():
            file = self.path / name
            if not file.is_file():
                what = 'is not a file' if file.exists() or file.is_symlink() else 'is missing'
                raise ArtifactError(f'{file} {what}; the artifact is incomplete, rebuild or re-download it')
            with resource_errors(file, 'read'):
                found = file.stat().st_size
            if size is not None and found != size:
                raise ArtifactError(f'{file} has {found} bytes, expected {size} for '
                                    f'{self.doc_count} docs, k={self.k}, {self.num_groups} groups (truncated?)')
        _ = self._docnos  # opens the lookup: a truncated or foreign docnos.npids fails here, not mid-search

    def __repr__(self):
        return f'GroupCorpusGraph({str(self.path)!r})'

    def __getstate__(self) -> Dict[str, Any]:
        """Pickled as its folder and settings: what it opened or memoised (every cached property: the memory maps,
        the docno look-up, the memos) is left out and reopens on first use, so a search over the groups pickles and
        deep-copies after a run as before it."""
        opened = {name for klass in type(self).__mro__ for name, attr in vars(klass).items()
                  if isinstance(attr, cached_property)}
        return {name: value for name, value in self.__dict__.items() if name not in opened}

    # -- arrays (memory-mapped, validated on first use) ---------------------------------------------------------
    def _map(self, name: str, dtype, shape=None) -> np.ndarray:
        # a plain ndarray view of the memory map: same pages, without np.memmap's slow per-item __getitem__
        with resource_errors(self.path / name, 'read'):
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
        try:
            lookup = Lookup(self.path / 'docnos.npids')
            count = len(lookup)
        except OSError as ex:
            if resource_error(ex, self.path / 'docnos.npids', 'read') is not ex:  # no permission: not damage
                raise resource_error(ex, self.path / 'docnos.npids', 'read') from None
            raise ArtifactError(f'{self.path}/docnos.npids cannot be read ({type(ex).__name__}: {ex}); it is truncated '
                                'or damaged, rebuild or re-download the artifact') from None
        except Exception as ex:  # noqa: BLE001 - npids raises assorted errors on a damaged file
            raise ArtifactError(f'{self.path}/docnos.npids cannot be read ({type(ex).__name__}: {ex}); it is truncated '
                                'or damaged, rebuild or re-download the artifact') from None
        if count != self.doc_count:
            raise ArtifactError(f'{self.path}/docnos.npids holds {count} docnos, expected {self.doc_count}')
        return lookup

    def _package_files(self):
        """Files for ``build_package``: the artifact's own files only. Refuses any that resolves outside the
        artifact (a link planted in a shared artifact must not pull other files into a package); leaves out the
        temporaries of an interrupted write."""
        from ._checks import is_temporary
        if self.meta.get('summaries') is not None and not self.has_summaries:
            raise ArtifactError(f'{self._lost_summaries()}; refusing to package it')
        root = os.path.realpath(self.path)
        for rel, source in super()._package_files():
            if is_temporary(os.path.basename(rel)):
                continue
            if isinstance(source, str):
                real = os.path.realpath(source)
                if os.path.commonpath([root, real]) != root:
                    raise ArtifactError(f'{source} resolves to {real}, outside the artifact {self.path}; refusing to '
                                        'package it (remove the link)')
            yield rel, source

    def validate(self, *, summaries: bool = True) -> Dict[str, Any]:
        """Check the whole artifact (opening checks only sizes): id ranges, that the partition arrays agree with
        each other, that every docno round-trips, that docnos and edges are those that were built (fingerprint in
        ``pt_meta.json``) and, unless ``summaries=False``, that the summaries are readable (then not counted: 0).

        Returns:
            ``{'docs', 'groups', 'summaries', 'ok': True}`` when everything holds.

        Raises:
            ArtifactError: listing every problem found.
        """
        from ._graphs import check_docnos
        from ._group_builder import _weights_fingerprint, fingerprint
        problems: List[str] = []
        try:
            check_links(self.path, any_link=True)
        except ArtifactError as ex:
            problems.append(str(ex))
        for check in ('edges_data', 'group_ids', '_group_offsets', '_group_members'):
            try:
                getattr(self, check)
            except ArtifactError as ex:
                problems.append(str(ex))
        if not problems:
            members, offsets, group_of = self._group_members, self._group_offsets, self.group_ids
            if len(members) and np.bincount(members, minlength=self.doc_count).max() != 1:
                problems.append('group_members.u32.np lists some documents twice and others not at all')
            member_group = np.repeat(np.arange(self.num_groups), np.diff(offsets))
            wrong = np.nonzero(group_of[members] != member_group)[0] if len(members) else []
            if len(wrong):
                doc = int(members[wrong[0]])
                problems.append(f'{len(wrong)} members are listed in a group that group_of.u32.np disagrees with '
                                f'(e.g. document {doc} is listed in group {int(member_group[wrong[0]])}, but group_of '
                                f'says {int(group_of[doc])})')
            if self.num_groups and (np.diff(offsets) == 0).any():
                problems.append(f'{int((np.diff(offsets) == 0).sum())} groups have no member')
            problems.extend(self._partition_problems(np.diff(offsets)))
            weights = np.asarray(self.weights_data, dtype=np.float32)
            if not np.isfinite(weights).all():
                problems.append(f'weights.f16.np holds {int((~np.isfinite(weights)).sum())} weights that are NaN or '
                                'infinite (a build writes only finite ones); the file was damaged or replaced')
            elif self.meta.get('weights_sha256') and _weights_fingerprint(weights) != self.meta['weights_sha256']:
                problems.append('weights.f16.np differs from what was built (weights_sha256 in pt_meta.json); the '
                                'file was replaced or tampered with')
        for key in ('graph_sha256', 'docnos_bytes'):
            if not self.meta.get(key):
                problems.append(f'pt_meta.json records no {key}, which every build writes (it lets the edges and '
                                'docnos be checked); the record was edited, rebuild the artifact')
        try:
            check_docnos(self._docnos)
        except ValueError as ex:
            problems.append(str(ex))
        stored = self.meta.get('graph_sha256')
        if not problems and stored and fingerprint(self.docnos_list(), np.asarray(self.edges_data)) != stored:
            problems.append('docnos.npids or edges.u32.np differ from what was built (graph_sha256 in pt_meta.json); '
                            'the files were replaced or tampered with')
        count = 0
        if summaries and self.meta.get('summaries') is not None and not self.has_summaries:
            problems.append(self._lost_summaries())
        elif summaries and self.meta.get('summaries') is not None:
            try:
                count = sum(r is not None for r in self.summary_store().read(
                    expected=self._summaries_entry().get('count')))
            except (OSError, ValueError) as ex:
                problems.append(str(ex))
        if problems:
            raise ArtifactError(f'{self.path} failed validation: ' + '; '.join(problems))
        return {'docs': self.doc_count, 'groups': self.num_groups, 'summaries': count, 'ok': True}

    def _partition_problems(self, sizes: np.ndarray) -> List[str]:
        """What the partition record and the group sizes say against each other: a group over ``max_group_size``
        that the record does not list (``unsplittable`` or, for given labels, ``over_limit``), and listed groups that
        do not exist."""
        part = self.meta.get('partition') or {}
        limit = part.get('max_group_size')
        listed = set(part.get('unsplittable') or []) | set(part.get('over_limit') or [])
        problems = []
        strange = sorted(g for g in listed if not (isinstance(g, int) and 0 <= g < self.num_groups))
        if strange:
            problems.append(f'pt_meta.json lists groups {strange[:5]} as over the size limit, but the artifact has '
                            f'groups 0 .. {self.num_groups - 1}')
        if isinstance(limit, int) and len(sizes):
            unlisted = [int(g) for g in np.flatnonzero(sizes > limit) if int(g) not in listed]
            if unlisted:
                problems.append(f'{len(unlisted)} groups are larger than max_group_size={limit} but not recorded as '
                                f'such (e.g. group {unlisted[0]} of {int(sizes[unlisted[0]])} documents); the '
                                'partition was replaced or tampered with')
        return problems

    # -- documents ----------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.doc_count

    def docnos_list(self) -> List[str]:
        """All docnos by internal id."""
        return [str(d) for d in self._docnos.fwd[np.arange(self.doc_count)]]

    @cached_property
    def _id_cache(self) -> Dict[str, int]:
        return {}

    @cached_property
    def _docno_index(self) -> DocnoIndex:
        return DocnoIndex(self._docnos)

    _MEMOS = ('_id_cache', '_group_cache', '_member_cache', '_neighbour_groups_cache')

    def clear_caches(self) -> None:
        """Empty the look-up memos (docno ids, groups, members, neighbours' groups); they refill on use."""
        for name in self._MEMOS:
            memo = self.__dict__.get(name)
            if memo is not None:
                memo.clear()  # in place: searches of a running call hold references to them

    def trim_caches(self) -> List[str]:
        """Empty each memo that holds more than :attr:`memo_limit` entries; returns the names of those emptied.

        Called when a docno's id or a group's members are first looked up, and by GAREN at the start of each call,
        so each memo stays within about ``memo_limit`` entries (plus what one call adds) however many queries a
        process serves.
        """
        limit = self.memo_limit
        if limit is None:
            return []
        emptied = []
        for name in self._MEMOS:
            memo = self.__dict__.get(name)
            if memo is not None and len(memo) > limit:
                memo.clear()
                emptied.append(name)
        return emptied

    def doc_id(self, docno: str) -> int:
        """Internal id of a docno, -1 when it is not in the graph (memoised: online search asks repeatedly)."""
        docno = str(docno)
        did = self._id_cache.get(docno)
        if did is None:
            self.trim_caches()
            did = self._id_cache[docno] = self._docno_index.id_of(docno)  # a few µs, tables memory-mapped
        return did

    def doc_ids(self, docnos: Sequence[str]) -> np.ndarray:
        """Internal ids of several docnos (-1 for those not in the graph); one lookup call for all new ones."""
        docnos = list(map(str, docnos))
        cache = self._id_cache
        ids = list(map(cache.get, docnos))
        if None in ids:
            self.trim_caches()
            new = [d for d in dict.fromkeys(docnos) if d not in cache]
            cache.update(zip(new, self._docno_index.ids_of(new)))
            ids = list(map(cache.__getitem__, docnos))
        return np.array(ids, dtype=np.int64)

    def neighbours(self, docid: Union[int, str], weights: bool = False):
        """The k nearest neighbours of a document (pyterrier-adaptive's interface).

        An internal id gives an array of ids; a docno gives an array of docnos. A docno that is not in the graph
        has no neighbours (an empty result) rather than an error. As in pyterrier-adaptive's format, a document with
        fewer than k neighbours lists itself in the places left; callers that want its distinct neighbours drop the
        document itself and repeats (the searches do).
        """
        as_str = isinstance(docid, str)
        if as_str:
            docid = self.doc_id(docid)
            if docid < 0:
                empty = np.array([], dtype=object)
                return (empty, np.array([], dtype=np.float16)) if weights else empty
        elif isinstance(docid, (bool, np.bool_)) or not isinstance(docid, (int, np.integer)) \
                or not 0 <= docid < self.doc_count:
            raise IndexError(f'document id {docid!r} is not in {self!r}: internal ids run from 0 to '
                             f'{self.doc_count - 1} (pass a docno string to look a document up by docno)')
        neigh = self.edges_data[docid]
        if as_str:
            neigh = self._docnos.fwd[neigh]
        if weights:
            return neigh, self.weights_data[docid]
        return neigh

    # -- groups -------------------------------------------------------------------------------------------------
    def group_of(self, docno: str) -> int:
        """Group id of a docno, -1 when the docno is not in the graph (memoised for the docnos asked about).

        As :meth:`doc_id`, it reads ``str(docno)``: ``5`` asks for docno ``'5'`` and ``5.0`` for ``'5.0'``.
        """
        if type(docno) is not str:
            if isinstance(docno, (list, tuple, set, np.ndarray, pd.Series, pd.Index)):
                raise TypeError(f'group_of takes one docno, got a {type(docno).__name__}; use groups_of(docnos) for '
                                'several')
            docno = str(docno)  # the memo's key is the docno's text, not an equal number
        gid = self._group_cache.get(docno)
        if gid is None:
            did = self.doc_id(docno)
            gid = self._group_cache[docno] = int(self.group_ids[did]) if did >= 0 else -1
        return gid

    @cached_property
    def _group_cache(self) -> Dict[str, int]:
        return {}

    @cached_property
    def _member_cache(self) -> Dict[int, List[str]]:
        return {}

    @cached_property
    def _neighbour_groups_cache(self) -> Dict[str, Tuple[int, ...]]:
        """docno -> the distinct groups of its neighbours, as GAREN's expansion step computes them (memo)."""
        return {}

    def groups_of(self, docnos: Sequence[str]) -> np.ndarray:
        """Group ids of several docnos (-1 for those not in the graph)."""
        if isinstance(docnos, (str, bytes)):  # its characters would be looked up one by one
            raise TypeError(f'groups_of takes a sequence of docnos, got the single docno {docnos!r}; use '
                            'group_of(docno), or groups_of([docno])')
        ids = self.doc_ids(docnos)
        out = np.full(len(ids), -1, dtype=np.int64)
        out[ids >= 0] = self.group_ids[ids[ids >= 0]]
        return out

    def _group_id(self, group_id: Any) -> int:
        """``group_id`` as an int in ``0 .. num_groups - 1``; ``TypeError`` for what is no group id (a docno, a float,
        a bool), ``IndexError`` for one out of range. A string of digits is read as the number it holds: a
        navigator's rows carry the group id as text in their ``docno`` column."""
        if isinstance(group_id, str) and _GROUP_ID.fullmatch(group_id):  # ASCII digits, as navigator frames' ids
            group_id = int(group_id)
        if isinstance(group_id, (bool, np.bool_)) or not isinstance(group_id, (int, np.integer)):
            hint = (' (a docno? its group is group_of(docno))' if isinstance(group_id, str) else '')
            raise TypeError(f'a group id is an integer from 0 to {self.num_groups - 1}, got {group_id!r}{hint}')
        if not 0 <= group_id < self.num_groups:
            raise IndexError(f'group {group_id} does not exist; group ids run from 0 to {self.num_groups - 1}')
        return int(group_id)

    def group_member_ids(self, group_id: int) -> np.ndarray:
        """Internal ids of a group's members, in id order."""
        group_id = self._group_id(group_id)
        start, end = self._group_offsets[group_id], self._group_offsets[group_id + 1]
        return np.asarray(self._group_members[start:end], dtype=np.int64)

    def group_members(self, group_id: int) -> List[str]:
        """Docnos of a group's members, in a fixed order (string order of docnos); memoised per group asked about."""
        group_id = self._group_id(group_id)
        members = self._member_cache.get(group_id)
        if members is None:
            self.trim_caches()
            members = [str(d) for d in self._docnos.fwd[self.group_member_ids(group_id)]]
            self._member_cache[int(group_id)] = members
        return list(members)

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

    # -- summaries (the store is in _summaries.py) ---------------------------------------------------------------
    @property
    def has_summaries(self) -> bool:
        return self.meta.get('summaries') is not None and (self.path / SUMMARIES).is_file()

    def _reread_summaries(self) -> None:
        """Take the summaries another process may have written since this artifact was opened."""
        meta = read_meta(self.path)
        if meta is not None and meta.get('summaries') != self.meta.get('summaries'):
            self.meta['summaries'] = meta.get('summaries')
            self.__dict__.pop('_summary_records', None)

    def summary_store(self) -> SummaryStore:
        """The :class:`~pyterrier_garen._summaries.SummaryStore` of this artifact (finished and partial records)."""
        return SummaryStore(self.path, self.num_groups)

    @cached_property
    def _summary_records(self) -> List[Optional[Dict[str, Any]]]:
        if self.meta.get('summaries') is None:
            return [None] * self.num_groups
        if not self.has_summaries:  # deleted after the run recorded it: never read as groups without summaries
            raise ArtifactError(self._lost_summaries())
        try:
            return self.summary_store().read(expected=self._summaries_entry().get('count'))
        except ValueError as ex:
            raise ArtifactError(str(ex)) from ex

    def _lost_summaries(self) -> str:
        return (f'{self.path / SUMMARIES} is missing, but pt_meta.json records {self._summaries_entry().get("count")} '
                'summaries; summarise again (summarize, or groups.summarize(summarizer, dataset)), or rebuild or '
                're-download the artifact')

    def _summaries_entry(self) -> Dict[str, Any]:
        """``pt_meta.json``'s record of the summaries, checked (an edited record gave an AttributeError's traceback,
        or a message comparing a count of 30 with "30")."""
        entry = self.meta['summaries']
        count = entry.get('count') if isinstance(entry, dict) else None
        if not isinstance(entry, dict):
            problem = f'is {entry!r:.40}, not an object'
        elif not isinstance(entry.get('summarizer'), dict):
            problem = 'names no "summarizer"'
        elif isinstance(count, bool) or not isinstance(count, (int, type(None))):
            problem = f'has "count" {count!r}, not an integer'
        else:
            return entry
        raise ArtifactError(f'{self.path / "pt_meta.json"}: its "summaries" entry {problem}, unlike the record a '
                            'summarisation writes; it was edited or damaged: summarise again with overwrite=True '
                            '(summarize --overwrite), or rebuild or re-download the artifact')

    def summary_record(self, group_id: int) -> Optional[Dict[str, Any]]:
        """The stored summary record of a group (``None`` without summaries)."""
        return self._summary_records[self._group_id(group_id)]

    def summary(self, group_id: int) -> str:
        """The group's text for a navigator: ``"<concept>: <summary>"``, or ``''`` without summaries."""
        record = self.summary_record(group_id)
        if not record:
            return ''
        concept, summary = str(record.get('concept') or '').strip(), str(record.get('summary') or '').strip()
        return f'{concept}: {summary}' if concept else summary

    def summarize(self, summarizer: Summarizer, corpus: Union[Iterable[Dict[str, Any]], Any], *,
                  batch_size: int = 16, overwrite: bool = False, verbose: bool = False,
                  ray: Any = None, max_failed_share: float = MAX_FAILED_SHARE) -> 'GroupCorpusGraph':
        """Summarise every group and store the summaries in the artifact. Resumable.

        Records are appended to the :meth:`summary_store` batch by batch (flushed to disk); a rerun after an
        interruption reuses every finished record and continues with the remaining groups. When all groups are
        done, ``summaries.jsonl`` is written atomically and ``pt_meta.json`` records the summariser's config.

        Groups whose engine request failed get a marked extractive record (``fallback_reason: 'request_failed'``,
        provenance naming the extractive summariser) and are retried by the next run of the same summariser, also
        once ``summaries.jsonl`` is finished; ``pt_meta.json`` counts the fallbacks and their reasons. When more than
        ``max_failed_share`` of the groups to summarise failed, the run stops as soon as that is certain and raises
        :class:`~pyterrier_garen._summaries.SummariesFailedError` (the finished records stay in the partial run).

        Args:
            summarizer: a :class:`~pyterrier_garen.Summarizer` (``ExtractiveSummarizer()``, ``LLMSummarizer(...)``).
            corpus: a dataset (``get_corpus_iter()``) or an iterable of ``{'docno', 'text'[, 'title']}`` dicts.
            batch_size: groups per summariser call (one engine call per batch for LLM summarisers).
            overwrite: replace existing summaries: those of another summariser (an unfinished run of this one resumes),
                else this summariser's own (its unfinished run starts again, unless that run was started with
                ``overwrite`` too, so that the same call repeated after an interruption resumes). An unfinished run
                of another summariser is never discarded: it is set aside, with a warning, and resumes when that
                summariser runs here again (:meth:`~pyterrier_garen._summaries.SummaryStore.begin`).
            verbose: show a progress bar.
            ray: run the batches in a Ray actor pool: ``True`` (a local cluster, or ``$RAY_ADDRESS``), a cluster
                address, or :class:`~pyterrier_garen.RayOptions`; ``summarizer`` is then a model-free summariser or
                a :class:`~pyterrier_garen.SummarizerSpec` (each actor builds its own engine). Same batches, same
                records, resumable the same way (``docs/scale.md``).
            max_failed_share: the largest share (0 to 1) of the groups to summarise whose engine request may fail
                before the run is an error (default 0.1; 0: any failure is an error; 1: never).

        Returns:
            ``self``, with the summaries available.
        """
        from ._params import check_positive
        check_positive(batch_size=batch_size)
        budget = FailureBudget(0, max_failed_share)  # checks the share before any work
        if isinstance(summarizer, type) or not callable(getattr(summarizer, 'summarize', None) or
                                                         getattr(summarizer, 'build', None)):
            what = f'the class {summarizer.__name__}' if isinstance(summarizer, type) else type(summarizer).__name__
            raise TypeError(f'summarize needs a summariser instance (garen.ExtractiveSummarizer(), '
                            f'garen.LLMSummarizer(engine)), got {what}')
        from ._ray import as_recipe, ray_options, summarize_batches
        ray = ray_options(ray)
        if ray:
            summarizer = as_recipe(summarizer)  # a live engine is refused here, before any work
        elif hasattr(summarizer, 'build') and not hasattr(summarizer, 'summarize'):
            summarizer = summarizer.build()  # a SummarizerSpec, run in this process
        config = summarizer.config()
        # a second run summarising the same groups waits for the first, then keeps (or resumes) what it wrote
        with exclusive(self.path):
            self._reread_summaries()
            remove_leftovers(self.path)  # temporaries of a killed write; the partial run of a finished one
            keep = None
            try:
                others = self.has_summaries and self._summaries_entry()['summarizer'] != config
            except ArtifactError:  # an edited record: replaced with overwrite, else its error names that fix
                if not overwrite:
                    raise
                others = True
            if self.has_summaries and not overwrite:
                if others:
                    raise FileExistsError(f'{self.path} already has summaries made by '
                                          f'{self.meta["summaries"]["summarizer"]}; pass overwrite=True '
                                          '(--overwrite) to replace them')
                keep = [r for r in self._summary_records if r is not None]
                if not any(map(failed_request, keep)):
                    return self
            store = self.summary_store()
            # overwrite replaces what stands in the way: another summariser's summaries (this one's unfinished run,
            # if any, resumes), else this summariser's own work (its unfinished run starts again, unless that run
            # was started with overwrite too: the same command run again after an interruption)
            done = store.begin(config, overwrite=overwrite and not others, keep=keep)
            todo = store.missing()
            budget.total = len(todo)
            if todo:
                texts = self._member_texts(corpus, todo)
                provenance = {k: config.get(k) for k in ('name', 'model', 'prompt_hash')}
                progress = pt.tqdm(total=self.num_groups, initial=len(done), desc='summarising groups', unit='group',
                                   disable=not verbose)
                batches = [[{'group': g, 'docs': texts[g]} for g in todo[start:start + batch_size]]
                           for start in range(0, len(todo), batch_size)]
                # on Ray, batches come back in any order, a retried one possibly twice: the store accepts each group
                # once
                if ray:
                    results = (records for records, _ in summarize_batches(summarizer, batches, options=ray,
                                                                            config=config, verbose=verbose))
                else:
                    results = (summarize_batch(summarizer, batch) for batch in batches)
                try:
                    for records in results:
                        stamped = [stamp(record, gid, provenance) for gid, record in records]
                        budget.count(r for r in stamped if int(r['group']) not in store.done)
                        progress.update(store.add(stamped))
                        if budget.exceeded:
                            break
                finally:
                    results.close()  # a generator: stopping early ends a Ray session at once
                    progress.close()
                if budget.exceeded:
                    raise budget.error(self.path)
                budget.warn()
            if self.meta.get('summaries') is not None:  # replacing: pt_meta.json never describes other records than
                self.meta['summaries'] = None  # the file holds (the finished partial run stays until the end)
                write_json(self.path / 'pt_meta.json', self.meta)
                _step('summaries-unset')
            self.meta['summaries'] = store.finish(config)
            _step('summaries-written')
            if ray:
                self.meta['summaries']['ray'] = ray.describe()
            write_json(self.path / 'pt_meta.json', self.meta)
            store.discard_partial()
            self.__dict__.pop('_summary_records', None)
            return self

    def _member_texts(self, corpus, group_ids: Sequence[int]) -> Dict[int, List[Dict[str, Any]]]:
        wanted = np.zeros(self.doc_count, dtype=bool)
        for gid in group_ids:
            wanted[self.group_member_ids(gid)] = True
        docs_iter = corpus.get_corpus_iter(verbose=False) if hasattr(corpus, 'get_corpus_iter') else corpus
        docs: Dict[str, Dict[str, Any]] = {}
        inside = outside = 0
        for doc in docs_iter:
            did = self.doc_id(str(doc['docno']))
            if did < 0:
                outside += 1
            else:
                inside += 1
                if wanted[did]:
                    docs[str(doc['docno'])] = {k: doc[k] for k in ('docno', 'title', 'text') if k in doc}
        if outside > inside:  # a larger collection sharing these docnos (two collections numbered 1..N), or groups
            # built over part of this one (a quick trial): told, not refused, since both look alike from here
            warnings.warn(f'the corpus given holds {outside} documents that are not in these groups, and only {inside} '
                          f'that are (the groups hold {self.doc_count}): if these groups were built from another '
                          'collection that numbers its documents alike, their summaries describe the wrong texts; '
                          'pass the collection they were built from', stacklevel=3)
        missing = int(wanted.sum()) - len(docs)
        if missing * 2 > int(wanted.sum()):  # most of them: another collection than the one the groups come from
            absent = []
            for did in np.flatnonzero(wanted):
                docno = str(self._docnos.fwd[int(did)])
                if docno not in docs:
                    absent.append(docno)
                    if len(absent) == 3:
                        break
            raise ValueError(f'{missing} of the {int(wanted.sum())} documents of the groups to summarise are not in '
                             f'the corpus given (e.g. {absent}): is it the collection these groups were built from? '
                             'Pass that collection; nothing was summarised')
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
        """``pyterrier_adaptive.GAR`` over this graph, inspectable by ``pt.Experiment`` (keyword arguments pass
        through; see :class:`pyterrier_garen._gar.GAR`)."""
        from ._gar import GAR
        return GAR(scorer, self, **kwargs)

    def slidegar(self, reranker: pt.Transformer, **kwargs) -> pt.Transformer:
        """A :class:`~pyterrier_garen.SlideGAR` transformer over this graph (keyword arguments pass through)."""
        from ._baselines import SlideGAR
        return SlideGAR(reranker, self, **kwargs)

    def rgs(self, reranker: pt.Transformer, **kwargs) -> pt.Transformer:
        """A :class:`~pyterrier_garen.RGS` transformer over this graph (keyword arguments pass through)."""
        from ._baselines import RGS
        return RGS(reranker, self, **kwargs)

    def doc_garen(self, reranker: pt.Transformer, navigator: pt.Transformer, **kwargs) -> pt.Transformer:
        """A :class:`~pyterrier_garen.DocGAREN` transformer (document-level navigation) over this graph."""
        from ._baselines import DocGAREN
        return DocGAREN(reranker, self, navigator, **kwargs)

    # -- building (see _group_builder.py) ----------------------------------------------------------------------
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
        docnos, edges, weights = graph_arrays(graph)
        source = {'path': str(getattr(graph, 'path', '')), 'meta': getattr(graph, 'meta', None),
                  'class': type(graph).__name__}
        return cls(build_group_graph(path, docnos, edges, weights, max_group_size=max_group_size,
                                     resolution=resolution, randomness=randomness, seed=seed, backend=backend,
                                     overwrite=overwrite, verbose=verbose, source=source,
                                     check_reused=_check_reused))

    @classmethod
    def from_arrays(cls, path: Union[str, Path], docnos: Sequence[str], edges: np.ndarray, weights: np.ndarray,
                    **kwargs) -> 'GroupCorpusGraph':
        """Write an artifact from raw arrays: ``docnos`` (n), ``edges``/``weights`` (n, k) by position.

        Keyword arguments are those of :func:`pyterrier_garen._group_builder.build_group_graph` (e.g. ``labels``:
        one group label per document, taken as the partition instead of running Leiden).
        """
        return cls(build_group_graph(path, docnos, edges, weights, **{'check_reused': _check_reused, **kwargs}))


def _check_reused(path: Path) -> None:
    """Before a reuse: the files on disk must be what was built, or a file damaged at its own size (a flipped byte
    in the weights, the members or ``group_of``) is reused as if it were the artifact's: every check of
    :meth:`GroupCorpusGraph.validate` but the summaries' (they have their own reader)."""
    try:
        GroupCorpusGraph(path).validate(summaries=False)
    except ArtifactError as ex:
        raise ArtifactError(f'{ex}; rebuild the groups with overwrite=True (build-groups --overwrite), or delete '
                            f'{path} and rerun prepare') from None


def _step(name: str) -> None:
    """A point between two writes of :meth:`GroupCorpusGraph.summarize` (tests interrupt it here)."""
