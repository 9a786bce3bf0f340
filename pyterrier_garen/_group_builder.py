"""Building a :class:`~pyterrier_garen.GroupCorpusGraph`: graph arrays -> Leiden partition -> artifact folder.

The folder is written with :func:`pyterrier_garen._atomic.building` (a temporary sibling swapped into place,
``pt_meta.json`` last), so a half-built artifact is never mistaken for a built one, and only a previous
GroupCorpusGraph is ever replaced (with ``overwrite=True``).
"""
from __future__ import annotations

import hashlib
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

from ._atomic import building, exclusive, read_meta, recover, write_array
from ._graphs import check_storable_docnos, write_docnos
from ._io import write_json
from ._params import check_int, check_number
from ._summaries import PARTIAL, PARTIAL_META, SHELVED, SUMMARIES

__all__ = ['build_group_graph', 'graph_arrays', 'fingerprint', 'ARTIFACT_TYPE', 'ARTIFACT_FORMAT', 'FORMAT_VERSION']

#: The artifact's identity in ``pt_meta.json`` (read back by :class:`~pyterrier_garen.GroupCorpusGraph`).
ARTIFACT_TYPE = 'corpus_graph'
ARTIFACT_FORMAT = 'garen_groups'
PACKAGE_HINT = 'pyterrier-garen'
FORMAT_VERSION = 1


def graph_arrays(graph) -> tuple:
    """``(docnos, edges, weights)`` of any pyterrier-adaptive corpus graph (``np_topk`` fast path, else generic)."""
    if hasattr(graph, 'docnos_list') and hasattr(graph, 'group_of'):  # a GroupCorpusGraph
        return graph.docnos_list(), np.asarray(graph.edges_data), np.asarray(graph.weights_data, dtype=np.float32)
    # the np_topk format stores its docnos in ``docnos.npids`` (pyterrier-adaptive exposes no public accessor)
    lookup_path = Path(getattr(graph, 'path', '') or '.') / 'docnos.npids'
    if not hasattr(graph, 'path') or not lookup_path.is_file():
        raise TypeError(f'{graph!r} has no docnos.npids; pass a pyterrier_adaptive NpTopKCorpusGraph or use '
                        'GroupCorpusGraph.from_arrays(path, docnos, edges, weights)')
    from npids import Lookup
    with Lookup(str(lookup_path)) as lookup:
        count = len(lookup)
        docnos = [str(d) for d in lookup.fwd[np.arange(count)]]
    if hasattr(graph, 'edges_data'):
        edges, weights = np.asarray(graph.edges_data), np.asarray(graph.weights_data, dtype=np.float32)
    else:  # any CorpusGraph: ask for every node's neighbours by internal id
        pairs = [graph.neighbours(i, weights=True) for i in range(count)]
        edges = np.stack([np.asarray(p[0]) for p in pairs])
        weights = np.stack([np.asarray(p[1], dtype=np.float32) for p in pairs])
    return docnos, edges, weights


def build_group_graph(path: Union[str, Path], docnos: Sequence[str], edges: np.ndarray, weights: np.ndarray, *,
                labels: Optional[Sequence[int]] = None, max_group_size: int = 20, resolution: float = 1.0,
                randomness: float = 0.001, seed: int = 42, backend: str = 'igraph', overwrite: bool = False,
                verbose: bool = False, source: Optional[Dict[str, Any]] = None,
                check_reused: Optional[Callable[[Path], None]] = None) -> Path:
    """Write an artifact from raw arrays: ``docnos`` (n), ``edges``/``weights`` (n, k) by position; returns its path.

    With ``labels`` (one group label per document) the partition is taken as given instead of running Leiden
    (useful for hand-built graphs in tests and for partitions computed elsewhere). ``check_reused(path)`` runs
    before an artifact already at ``path`` is reused (GroupCorpusGraph passes its ``validate`` without the
    summaries: a file damaged at its own size is refused rather than reused).
    """
    from ._partition import PARTITION_VERSION, leiden_partition
    path = Path(path)
    docnos = [str(d) for d in docnos]
    edges = _positions(edges)
    weights = np.asarray(weights, dtype=np.float32)
    n = len(docnos)
    if not n:
        raise ValueError(f'no documents to group for {path}: a GroupCorpusGraph needs at least one document (is the '
                         'collection or its corpus graph empty?)')
    if edges.ndim != 2 or edges.shape[0] != n or weights.shape != edges.shape:
        raise ValueError(f'edges {edges.shape} and weights {weights.shape} must both have shape ({n}, k)')
    if edges.shape[1] == 0:
        raise ValueError(f'edges {edges.shape} hold no neighbour per document (k = 0); give each document at least '
                         'one (a document without neighbours lists its own position, as pyterrier-adaptive pads)')
    _check_edges(edges, weights, n)
    # the partition's settings are checked whether Leiden runs or the labels are given: they are recorded either way
    check_int('max_group_size', max_group_size, low=1 if labels is not None else 2)
    check_number('resolution', resolution, low=0, low_open=True)
    check_number('randomness', randomness, low=0, low_open=True)
    check_int('seed', seed)
    given = _labels(labels, n) if labels is not None else None
    if len(set(docnos)) != n:
        seen: set = set()
        repeated = next(d for d in docnos if d in seen or seen.add(d))
        raise ValueError(f'docnos must be unique: {repeated!r} is given {docnos.count(repeated)} times (docnos are '
                         'compared as text, so 12 and "12" are one)')
    check_storable_docnos(docnos)  # before any work: a docno npids cannot give back would fail at the very end
    # store documents in string-sorted docno order: npids then round-trips every docno (see docs/decisions.md)
    order = np.argsort(np.asarray(docnos, dtype=object), kind='stable')
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    sorted_docnos = [docnos[i] for i in order]
    edges = new_id[edges[order]] if n else edges
    weights = weights[order]
    params = {'max_group_size': max_group_size, 'resolution': resolution, 'randomness': randomness,
              'seed': seed, 'backend': backend if labels is None else 'given'}
    # a second run asking for the same groups waits for the first, then reuses them (or says how they differ)
    with exclusive(path):
        recover(path)  # an interrupted swap of an earlier rebuild is undone before anything is compared
        existing = read_meta(path) if not path.is_symlink() else None
        ours = existing is not None and (existing.get('type'), existing.get('format')) == (ARTIFACT_TYPE,
                                                                                            ARTIFACT_FORMAT)
        if ours and not overwrite:
            stored = {k: existing.get('partition', {}).get(k) for k in params}
            same_graph = existing.get('graph_sha256') == fingerprint(sorted_docnos, edges)
            diff = {k: (stored[k], params[k]) for k in params if stored[k] != params[k]}
            if not diff and same_graph:
                if check_reused is not None:  # a damaged file is named as such, not taken for another input
                    check_reused(path)
                other = _other_input(path, existing, weights, given, order)
                if other is None:
                    _warn_if_other_version(path, existing, labels is None)
                    return path
                raise FileExistsError(f'{path} already holds a GroupCorpusGraph of this graph, built from {other}; '
                                      'pass overwrite=True (--overwrite) to rebuild it')
            raise FileExistsError(f'{path} already holds a GroupCorpusGraph built differently (stored, requested): '
                                  f'{diff or "other graph"}; pass overwrite=True (--overwrite) to rebuild it')
        if ours and overwrite:
            _check_only_artifact_files(path)
        started = time.time()
        if labels is None:
            params['version'] = PARTITION_VERSION
            part = leiden_partition(edges, weights, max_group_size=max_group_size, resolution=resolution,
                                    randomness=randomness, seed=seed, backend=backend, verbose=verbose)
            group_labels, unsplittable, modularity, calls = part.labels, part.unsplittable, part.modularity, \
                part.leiden_calls
            stages = {name: round(float(value), 3) for name, value in part.seconds.items()}
            cpu_stages = {name: round(float(value), 3) for name, value in part.cpu_seconds.items()}
            # strict JSON: no NaN
            modularity = float(modularity) if modularity is not None and np.isfinite(modularity) else None
        else:
            raw = given
            # labels 0..G-1 (all used) are kept as group ids; anything else is renumbered in sorted label order
            _, group_labels = np.unique(raw, return_inverse=True)
            group_labels = group_labels.reshape(-1)[order]
            unsplittable, modularity, calls, stages, cpu_stages = [], None, 0, {}, {}  # no Leiden run: no modularity
        num_groups = int(group_labels.max()) + 1 if n else 0
        member_order = np.argsort(group_labels, kind='stable')
        offsets = np.concatenate([[0], np.cumsum(np.bincount(group_labels, minlength=num_groups))])
        sizes = np.diff(offsets)
        over = [int(g) for g in np.nonzero(sizes > max_group_size)[0]]
        if over and labels is None:
            # below 1, modularity favours fewer groups: a whole collection can stay one group that no level splits
            hint = (f'; resolution={resolution:g} is below 1, which favours fewer and larger groups: raise it (the '
                    'paper uses 1.0)') if resolution < 1 else ''
            warnings.warn(f'{len(over)} groups stay larger than max_group_size={max_group_size} because Leiden found '
                          f'no split (near-duplicate documents?): groups {over[:10]}, the largest of '
                          f'{int(sizes.max())} documents{hint}', stacklevel=2)
        meta = {
            'type': ARTIFACT_TYPE, 'format': ARTIFACT_FORMAT, 'package_hint': PACKAGE_HINT,
            'format_version': FORMAT_VERSION, 'doc_count': n, 'k': int(edges.shape[1]), 'num_groups': num_groups,
            'partition': {**params, 'unsplittable': [int(g) for g in unsplittable], 'over_limit': over,
                          'modularity': modularity, 'leiden_calls': calls,
                          'seconds': round(time.time() - started, 3), 'stage_seconds': stages,
                          'stage_cpu_seconds': cpu_stages},
            'source_graph': source, 'graph_sha256': fingerprint(sorted_docnos, edges), 'summaries': None,
            'weights_sha256': _weights_fingerprint(weights),
        }
        # build beside the target and swap it in (pt_meta.json last): a half-built folder is never taken for a built
        # one, an existing artifact is replaced only when it is a GroupCorpusGraph and overwrite=True, and only once
        # the new one is complete; stale temporaries of killed builds are removed (see _atomic.building)
        with building(path, (ARTIFACT_TYPE, ARTIFACT_FORMAT), overwrite=overwrite) as tmp:
            write_array(edges.astype(np.uint32), tmp / 'edges.u32.np')
            write_array(weights.astype(np.float16), tmp / 'weights.f16.np')
            write_docnos(sorted_docnos, tmp / 'docnos.npids')
            meta['docnos_bytes'] = (tmp / 'docnos.npids').stat().st_size  # lets opening spot a truncated lookup
            write_array(group_labels.astype(np.uint32), tmp / 'group_of.u32.np')
            write_array(offsets.astype(np.uint64), tmp / 'group_offsets.u64.np')
            write_array(member_order.astype(np.uint32), tmp / 'group_members.u32.np')
            write_json(tmp / 'pt_meta.json', meta)  # last: its presence marks a complete artifact
    return path


def _labels(labels: Any, n: int) -> np.ndarray:
    """``labels`` as one group label per document: a flat sequence (or one column) of ``n`` numbers or texts, none
    missing."""
    raw = np.asarray(labels, dtype=object)
    if raw.ndim == 2 and raw.shape[1:] == (1,):  # a column
        raw, labels = raw[:, 0], np.asarray(labels)[:, 0]
    if raw.ndim != 1:
        raise ValueError(f'labels must hold one group label per document ({n}), a flat sequence; got one of shape '
                         f'{raw.shape}')
    if len(raw) != n:
        raise ValueError(f'labels has {len(raw)} entries, expected one per document ({n})')
    missing = [i for i, value in enumerate(raw) if value is None or (isinstance(value, float) and value != value)]
    if missing:
        raise ValueError(f'labels[{missing[0]}] is missing (None or NaN; {len(missing)} like this): every document '
                         'needs its group label')
    kinds = {type(value).__name__ for value in raw if not isinstance(value, (int, np.integer))}
    if kinds and not all(isinstance(value, str) for value in raw):
        try:
            return np.asarray(labels, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f'labels mix numbers and {", ".join(sorted(kinds))}: give every document a label of one '
                             'kind (numbers, or texts)') from None
    return np.asarray(labels)


def _positions(edges) -> np.ndarray:
    """``edges`` as int64 document positions; refuses fractions, non-numbers and non-finite values (a cast would
    silently truncate or wrap them into some other document)."""
    raw = np.asarray(edges)
    if raw.size and raw.dtype.kind == 'f':
        whole = np.isfinite(raw) & (raw == np.round(raw))
        if not whole.all():
            at, _ = _first(~whole)
            raise ValueError(f'edges{list(at)} = {float(raw[at])} is not a whole document position; edges hold the '
                             'positions (0 .. n-1) of each document\'s neighbours in docnos')
    elif raw.size and raw.dtype.kind not in 'iub':
        raise ValueError(f'edges must hold integer document positions (0 .. n-1), got an array of {raw.dtype}')
    return raw.astype(np.int64)


def _first(mask: np.ndarray) -> tuple:
    """``(position of the first true entry, number of true entries)`` of a boolean array that has one."""
    return tuple(int(i) for i in np.argwhere(mask)[0]), int(mask.sum())


def _check_edges(edges: np.ndarray, weights: np.ndarray, n: int) -> None:
    """Every neighbour is one of the ``n`` documents and every weight is a finite number that float16 (the
    artifact's weights) holds; the shapes are checked already. pyterrier-adaptive pads a short neighbour list with
    the document itself, never with -1."""
    bad = (edges < 0) | (edges >= n)
    if bad.any():
        at, count = _first(bad)
        raise ValueError(f'edges{list(at)} = {int(edges[at])} is not a document position (0 .. {n - 1}; out of '
                         f'range: {count} of {edges.size} edges). Pad a short neighbour list with the '
                         'document\'s own position, not with -1 or n')
    finite = np.isfinite(weights)
    if not finite.all():
        at, count = _first(~finite)
        raise ValueError(f'weights{list(at)} = {float(weights[at])} is not a finite number (NaN or infinite: '
                         f'{count} of {weights.size} weights). Replace them (e.g. np.nan_to_num, or 0 '
                         'to drop the edge: Leiden ignores non-positive weights) and build again')
    large = np.abs(weights) > np.finfo(np.float16).max
    if large.any():
        at, count = _first(large)
        raise ValueError(f'weights{list(at)} = {float(weights[at]):g} does not fit the artifact\'s float16 weights '
                         f'(at most 65504 in size: {count} of {weights.size} weights are larger); rescale '
                         'them (e.g. divide by the largest) and build again')


def _warn_if_other_version(path: Path, meta: Dict[str, Any], leiden: bool) -> None:
    """Warn when a reused artifact's groups were made by another version of the partitioning procedure."""
    from ._partition import PARTITION_VERSION
    if not leiden:  # labels given by the caller: no procedure to differ
        return
    stored = meta.get('partition', {}).get('version', 1)
    if stored != PARTITION_VERSION:
        warnings.warn(f'{path} holds groups made by partition version {stored!r}; this pyterrier-garen makes '
                      f'version {PARTITION_VERSION}, which can give other groups for the same graph and seed. It is '
                      'reused as it is; to build it again, pass overwrite=True (its summaries are then made again)',
                      stacklevel=3)


def fingerprint(docnos: Sequence[str], edges: np.ndarray) -> str:
    """SHA-256 of the docnos and edges (in stored order): tells whether a rebuild request names the same graph.

    The docnos are joined by newlines, as every artifact so far records them; where a docno holds a newline that
    join is ambiguous (``['a\\nb', 'c']`` against ``['a', 'b\\nc']``), so each docno is then written with its
    length first."""
    if any('\n' in d for d in docnos):
        digest = hashlib.sha256(b'length-prefixed')
        for docno in docnos:
            data = docno.encode()
            digest.update(len(data).to_bytes(8, 'little') + data)
    else:
        digest = hashlib.sha256('\n'.join(docnos).encode())
    digest.update(np.ascontiguousarray(edges, dtype=np.uint32).tobytes())
    return digest.hexdigest()


def _weights_fingerprint(weights: np.ndarray) -> str:
    """SHA-256 of the weights as the artifact stores them (float16, in stored order)."""
    return hashlib.sha256(np.ascontiguousarray(weights, dtype=np.float16).tobytes()).hexdigest()


def _other_input(path: Path, meta: Dict[str, Any], weights: np.ndarray, labels: Optional[Sequence[int]],
                 order: np.ndarray) -> Optional[str]:
    """What differs between an existing artifact of the same graph and parameters and a request (``None``: nothing):
    other weights (by the recorded ``weights_sha256``, else the stored weights themselves) or, for a partition
    given as labels, other groups (up to their numbering)."""
    stored = meta.get('weights_sha256')
    if stored is None:  # an artifact from before the weights were recorded: compare the stored weights
        old = np.fromfile(path / 'weights.f16.np', dtype=np.float16)
        same = old.size == weights.size and old.tobytes() == np.ascontiguousarray(weights, np.float16).tobytes()
    else:
        same = stored == _weights_fingerprint(weights)
    if not same:
        return 'other weights'
    if labels is not None:
        _, given = np.unique(np.asarray(labels), return_inverse=True)
        have = np.fromfile(path / 'group_of.u32.np', dtype=np.uint32).astype(np.int64)
        if have.shape != (len(order),) or not np.array_equal(_canonical(have), _canonical(given.reshape(-1)[order])):
            return 'other labels (another partition)'
    return None


def _canonical(labels: np.ndarray) -> np.ndarray:
    """Group labels renumbered in order of first appearance: two labellings of one partition become equal."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind='stable')] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


#: every file a GroupCorpusGraph's folder holds: the build's, then the summary store's (and the runs it set aside,
#: named by SHELVED)
ARTIFACT_FILES = frozenset({'pt_meta.json', 'edges.u32.np', 'weights.f16.np', 'docnos.npids', 'group_of.u32.np',
                            'group_offsets.u64.np', 'group_members.u32.np', SUMMARIES, PARTIAL, PARTIAL_META})


def _check_only_artifact_files(path: Path) -> None:
    """Refuse to replace an artifact folder that also holds the user's own files: ``overwrite`` replaces the whole
    folder, and nothing a user owns is ever deleted."""
    others = sorted(entry.name for entry in path.iterdir()
                    if entry.name not in ARTIFACT_FILES and not SHELVED.fullmatch(entry.name))
    if others:
        raise FileExistsError(f'{path} holds files that are not part of the GroupCorpusGraph ({", ".join(others[:5])}'
                              f'{" ..." if len(others) > 5 else ""}); overwrite=True replaces the whole folder, so '
                              'move them out of it (or build at another path), then rebuild')
