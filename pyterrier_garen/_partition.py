"""Graph -> groups: Leiden (modularity) with recursive re-partitioning of large groups (paper §4.1, App. A)."""
from __future__ import annotations


import math
import random
import time
from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional, Tuple

import numpy as np

from ._params import check_int, check_number

__all__ = ['leiden_partition', 'Partition', 'symmetrise']

Backend = Literal['igraph', 'leidenalg']
#: igraph Leiden iterations per run (``n_iterations``; negative = until stable)
ITERATIONS = -1
#: Whole-graph Leiden stops once PATIENCE iterations in a row (after the first) each raised modularity by less than
#: TOLERANCE (0: igraph's "until an iteration improves nothing"); on graphs of at least LARGE_GRAPH nodes, where an
#: iteration's gain is a sum over many nodes and does not jump back up, LARGE_PATIENCE such iterations suffice.
#: Chosen by measurement, see docs/scale.md.
TOLERANCE, PATIENCE = 1e-4, 2
LARGE_GRAPH, LARGE_PATIENCE = 100_000, 1
#: Version of the partitioning procedure, stored in every artifact's ``partition`` metadata. Raise it with any change
#: that can give other labels for the same graph, parameters and seed: a build that finds an artifact of another
#: version then warns that its groups came from other code (artifacts written before versions were stored are 1).
PARTITION_VERSION = 1


@dataclass
class Partition:
    """Result of :func:`leiden_partition`.

    Attributes:
        labels: group id of every node (``int64``), groups numbered by their smallest node id.
        unsplittable: ids of groups larger than the limit that Leiden could not split further.
        modularity: modularity of the first (top-level) Leiden partition of the whole graph.
        leiden_calls: number of Leiden runs (1 + recursive re-partitions).
        cpu_seconds: the same stages' process CPU time (steadier than wall clock on a shared machine).
        seconds: wall-clock time of each stage: ``symmetrise``, ``leiden`` (the whole graph) and ``split`` (the
            recursive re-partitioning).
    """
    labels: np.ndarray
    unsplittable: List[int] = field(default_factory=list)
    modularity: float = float('nan')
    leiden_calls: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)
    cpu_seconds: Dict[str, float] = field(default_factory=dict)

    @property
    def num_groups(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    def sizes(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.num_groups)


def symmetrise(edges: np.ndarray, weights: np.ndarray, num_nodes: int) -> Tuple[np.ndarray, np.ndarray]:
    """Undirected weighted edge list of a k-NN graph.

    Self-loops (pyterrier-adaptive pads short neighbour lists with the node itself) and non-positive weights
    are dropped; an edge found in both directions keeps the larger weight.

    Returns:
        ``(pairs, w)``: an ``(m, 2)`` array with ``pairs[:, 0] < pairs[:, 1]``, sorted, and the weights.
    """
    edges = np.asarray(edges, dtype=np.int64)
    weights = np.asarray(weights)
    if weights.dtype not in (np.float32, np.float64):  # the maximum is taken in the given precision, then widened
        weights = weights.astype(np.float64)
    if edges.shape != weights.shape or edges.ndim != 2 or edges.shape[0] != num_nodes:
        raise ValueError(f'edges {edges.shape} and weights {weights.shape} must both be (num_nodes={num_nodes}, k)')
    if edges.size and (edges.max() >= num_nodes or edges.min() < 0):
        raise ValueError(f'edge targets must lie in [0, {num_nodes}); found {edges.min()}..{edges.max()}')
    rows = np.arange(num_nodes, dtype=np.int64)[:, None]
    keep = (edges != rows) & (weights > 0) & np.isfinite(weights)
    src = np.broadcast_to(rows, edges.shape)[keep]
    dst, w = edges[keep], weights[keep]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    del src, dst, keep
    key = lo * num_nodes
    key += hi
    order = np.argsort(key)  # edges found in both directions become neighbours; their order does not matter
    key = key[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if len(key) else np.zeros(0, np.int64)
    del key
    w = np.maximum.reduceat(w[order], starts).astype(np.float64) if len(starts) else np.zeros(0)
    first = order[starts]
    pairs = np.empty((len(starts), 2), dtype=np.int64)
    pairs[:, 0], pairs[:, 1] = lo[first], hi[first]
    return pairs, w


def _graph(num_nodes: int, pairs: np.ndarray, w: np.ndarray, *, backend: Backend = 'igraph'):
    """The undirected igraph graph of an edge list; its weights ride along as ``graph['w']`` (a list).

    For the leidenalg backend the weights are also the edge attribute ``weight``, which leidenalg reads. The igraph
    backend passes the list straight to Leiden and skips the attribute (one 10M-item conversion less at 1M docs).
    """
    import igraph
    # pairs of Python ints are the fastest input igraph takes (an ndarray or a list of lists costs about twice as
    # much); a zip iterator, not a list, so that no list of 10M tuples is held at once (zip reuses its tuple)
    graph = igraph.Graph(n=num_nodes, edges=zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()), directed=False)
    weights = w.tolist()
    if backend != 'igraph':
        graph.es['weight'] = weights
    graph['w'] = weights
    return graph


def _run_leiden(graph, *, resolution: float, randomness: float, seed: int, backend: Backend,
                iterations: int = -1) -> Tuple[np.ndarray, Optional[float]]:
    """Membership of one Leiden run optimising modularity, seeded with ``seed``, and its modularity (igraph only).

    ``iterations`` is igraph's ``n_iterations`` (a negative number: until an iteration improves nothing);
    leidenalg always optimises until nothing improves. igraph's core is called directly (``GraphBase``), without
    the ``VertexClustering`` wrapper: re-partitioning makes tens of thousands of small calls. The quality igraph
    reports for the modularity objective is the modularity of the partition (with the same resolution).
    """
    if backend == 'igraph':
        import igraph
        # igraph draws from a Python RNG object; give it a private, seeded one and restore the default after.
        igraph.set_random_number_generator(random.Random(seed))
        try:
            membership, quality = igraph.GraphBase.community_leiden(
                graph, edge_weights=graph['w'], node_weights=None, node_in_weights=None, resolution=resolution,
                normalize_resolution=True, beta=randomness, initial_membership=None, n_iterations=iterations)
        finally:
            igraph.set_random_number_generator(random)
        return np.asarray(membership, dtype=np.int64), float(quality)
    if backend == 'leidenalg':
        import leidenalg
        # RBConfiguration at resolution 1.0 is modularity; leidenalg fixes its own refinement randomness.
        part = leidenalg.RBConfigurationVertexPartition(graph, weights='weight', resolution_parameter=resolution)
        optimiser = leidenalg.Optimiser()
        optimiser.set_rng_seed(seed)
        while optimiser.optimise_partition(part) > 0:
            pass
        return np.asarray(part.membership, dtype=np.int64), None
    raise ValueError(f'unknown Leiden backend {backend!r}; use "igraph" (fast default) or "leidenalg" (reference)')


def _leiden_until_settled(graph, *, resolution: float, randomness: float, seed: int, tolerance: float,
                          patience: int = PATIENCE) -> Tuple[np.ndarray, float]:
    """igraph Leiden (modularity) iterated until ``patience`` iterations in a row gain less than ``tolerance``.

    Each iteration is one igraph run started from the previous membership, drawing from the same seeded random
    stream, so with ``tolerance=0`` this is exactly ``n_iterations=-1`` (it stops at the first iteration that
    improves nothing). On large graphs the last iterations move a handful of nodes for a gain in the fifth decimal
    at the full cost of a pass over every edge: about 10 CPU-s each at 1M documents.
    """
    import igraph
    igraph.set_random_number_generator(random.Random(seed))
    try:
        membership, quality, low = None, -math.inf, 0
        while True:
            new, new_quality = igraph.GraphBase.community_leiden(
                graph, edge_weights=graph['w'], node_weights=None, node_in_weights=None, resolution=resolution,
                normalize_resolution=True, beta=randomness, initial_membership=membership, n_iterations=1)
            if not math.isfinite(new_quality):  # no edges: nothing to improve
                membership, quality = new, 0.
                break
            if new_quality <= quality:  # stable: igraph's own stopping rule
                break
            low = low + 1 if new_quality - quality < tolerance else 0
            membership, quality = new, new_quality
            if low >= patience:
                break
    finally:
        igraph.set_random_number_generator(random)
    return np.asarray(membership, dtype=np.int64), float(quality)


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind='stable')`` for keys in ``[0, bound)``, as a radix sort when they fit in 16 bits.

    NumPy sorts integers of at most 16 bits stably with a radix sort, several times faster than the merge sort it
    uses for wider ones (about 0.3 against 1.1 CPU-s for 10M keys); the order is the same.
    """
    if bound <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind='stable')
    return np.argsort(keys, kind='stable')


def _split_groups(group: np.ndarray, u: np.ndarray, v: np.ndarray, w: np.ndarray, *, resolution: float,
                  randomness: float, seed: int, backend: Backend, iterations: int = -1) -> np.ndarray:
    """Leiden (modularity) on the induced subgraph of each of several groups, one run per group.

    Every subgraph is cut out of the edge list with one stable sort and slicing (no per-group array over the whole
    graph, no per-node Python loop), so one recursion level costs O(m log m) plus one small Leiden run per group.
    Local node ids follow node id order and each run is seeded with ``seed``, as when the groups are split one by
    one.

    Args:
        group: group (``0..G-1``) of each node of all groups, the nodes in increasing id order.
        u, v: the edges inside the groups, as positions in that node order, sorted by ``(u, v)`` with ``u < v``;
            ``w`` their weights.

    Returns:
        The part of every node inside its group (``0..parts-1`` per group).
    """
    num_groups = int(group.max()) + 1 if len(group) else 0
    by_group = _stable_order(group, num_groups)  # nodes of group 0 in id order, then group 1, ...
    node_starts = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=num_groups))])
    local = np.empty(len(group), dtype=np.int64)
    local[by_group] = np.arange(len(group)) - node_starts[group[by_group]]
    edge_group = group[u]
    # local ids grow with node ids inside a group, so a stable sort by group keeps every group's edges sorted by
    # (local u, local v): the order of a three-key lexsort, at a fraction of its cost
    order = _stable_order(edge_group, num_groups)
    sub_u, sub_v, sub_w = local[u[order]], local[v[order]], w[order]
    del order
    edge_starts = np.concatenate([[0], np.cumsum(np.bincount(edge_group, minlength=num_groups))])
    parts = np.empty(len(group), dtype=np.int64)
    if backend != 'igraph':
        for g in range(num_groups):
            size = int(node_starts[g + 1] - node_starts[g])
            es, ee = edge_starts[g], edge_starts[g + 1]
            graph = _graph(size, np.stack([sub_u[es:ee], sub_v[es:ee]], axis=1), sub_w[es:ee], backend=backend)
            parts[by_group[node_starts[g]:node_starts[g + 1]]] = _run_leiden(
                graph, resolution=resolution, randomness=randomness, seed=seed, backend=backend,
                iterations=iterations)[0]
        return parts
    # igraph: the same runs with the per-call Python work cut to slicing lists converted once (tens of thousands
    # of small runs at 1M documents, where graph construction and wrappers cost more than Leiden itself)
    import igraph
    u_list, v_list, weight_list = sub_u.tolist(), sub_v.tolist(), sub_w.tolist()
    node_bounds, edge_bounds = node_starts.tolist(), edge_starts.tolist()
    out: List[int] = []
    rng = random.Random(seed)
    igraph.set_random_number_generator(rng)  # igraph keeps this object: re-seeding it restarts the same stream
    try:
        for g in range(num_groups):
            es, ee = edge_bounds[g], edge_bounds[g + 1]
            graph = igraph.GraphBase(node_bounds[g + 1] - node_bounds[g], zip(u_list[es:ee], v_list[es:ee]), False)
            rng.seed(seed)
            membership, _ = igraph.GraphBase.community_leiden(
                graph, edge_weights=weight_list[es:ee], node_weights=None, node_in_weights=None,
                resolution=resolution, normalize_resolution=True, beta=randomness, initial_membership=None,
                n_iterations=iterations)
            out.extend(membership)
    finally:
        igraph.set_random_number_generator(random)
    parts[by_group] = out
    return parts


def leiden_partition(edges: np.ndarray, weights: np.ndarray, *, max_group_size: int = 20, resolution: float = 1.0,
                     randomness: float = 0.001, seed: int = 42, backend: Backend = 'igraph',
                     iterations: int = ITERATIONS, tolerance: float = TOLERANCE, patience: Optional[int] = None,
                     verbose: bool = False) -> Partition:
    """Partition a k-NN corpus graph into groups of at most ``max_group_size`` documents where possible.

    The graph is symmetrised (:func:`symmetrise`), Leiden optimises modularity over it, and every group larger
    than ``max_group_size`` is partitioned again on its induced subgraph, recursively, while Leiden still finds a
    non-trivial split (more than one part). Groups it cannot split (e.g. near-duplicate documents) stay large and
    are listed in :attr:`Partition.unsplittable`. Same inputs and seed give the same labels.

    The recursion goes level by level: the subgraphs of all groups still over the limit are cut out of the edge
    list at once with sorting and slicing (:func:`_split_groups`), so the work outside Leiden itself is a few
    vectorised passes over the edges per level, linear in the size of the graph however many groups need
    splitting.

    Args:
        edges: ``(n, k)`` neighbour ids (``np_topk`` layout).
        weights: ``(n, k)`` similarities of those edges.
        max_group_size: the re-partitioning threshold (paper: 20).
        resolution: modularity resolution (paper: 1.0).
        randomness: Leiden refinement randomness, igraph's ``beta`` (paper: 0.001).
        seed: random seed.
        backend: ``'igraph'`` (``community_leiden``, fast) or ``'leidenalg'`` (the reference implementation).
        iterations: igraph's ``n_iterations`` for every Leiden run (negative: until an iteration improves
            nothing); leidenalg always runs until nothing improves.
        tolerance: with ``iterations < 0``, the whole-graph run also stops once ``patience`` iterations in a row
            (after the first) each raised modularity by less than this (0: only when an iteration improves
            nothing). Re-partitioning runs always go until nothing improves (small graphs: cheap).
        patience: see ``tolerance``; default ``PATIENCE`` (2), or ``LARGE_PATIENCE`` (1) on graphs of at least
            ``LARGE_GRAPH`` (100,000) nodes.
        verbose: show a progress bar over re-partitioned groups.
    """
    check_int('max_group_size', max_group_size, low=2)
    check_number('resolution', resolution, low=0, low_open=True)
    check_number('randomness', randomness, low=0, low_open=True)
    check_number('tolerance', tolerance, low=0)
    check_int('seed', seed)
    check_int('iterations', iterations)
    if patience is not None:
        check_int('patience', patience, low=1)
    if iterations == 0:
        raise ValueError('iterations must be a non-zero integer (negative: until settled), got 0')
    if backend not in ('igraph', 'leidenalg'):
        raise ValueError(f'unknown Leiden backend {backend!r}; use "igraph" (fast default) or "leidenalg" (reference)')
    num_nodes = int(np.asarray(edges).shape[0])
    started, cpu_started = time.perf_counter(), time.process_time()
    pairs, w = symmetrise(edges, weights, num_nodes)
    if num_nodes == 0:
        return Partition(np.zeros(0, dtype=np.int64))
    seconds = {'symmetrise': time.perf_counter() - started}
    cpu = {'symmetrise': time.process_time() - cpu_started}
    graph = _graph(num_nodes, pairs, w, backend=backend)
    if backend == 'igraph' and iterations < 0:
        if patience is None:
            patience = LARGE_PATIENCE if num_nodes >= LARGE_GRAPH else PATIENCE
        labels, modularity = _leiden_until_settled(graph, resolution=resolution, randomness=randomness, seed=seed,
                                                   tolerance=tolerance, patience=patience)
    else:
        labels, modularity = _run_leiden(graph, resolution=resolution, randomness=randomness, seed=seed,
                                         backend=backend, iterations=iterations)
    if modularity is None or not len(w):
        modularity = float(graph.modularity(labels.tolist(), weights=graph['w'], resolution=resolution)) \
            if len(w) else 0.
    del graph
    seconds['leiden'] = time.perf_counter() - started - seconds['symmetrise']
    cpu['leiden'] = time.process_time() - cpu_started - cpu['symmetrise']
    calls, next_label = 1, int(labels.max()) + 1
    unsplittable: List[int] = []
    # the nodes of groups still over the limit, and the edges inside those groups
    sizes = np.bincount(labels)
    active = np.flatnonzero(sizes[labels] > max_group_size)
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    keep = same & (sizes[labels[pairs[:, 0]]] > max_group_size)
    pairs, w = pairs[keep], w[keep]
    del same, keep
    # the edges as positions in ``active`` (kept up to date level by level): a gather, not a binary search
    position = np.empty(num_nodes, dtype=np.int64)
    position[active] = np.arange(len(active))
    u, v = position[pairs[:, 0]], position[pairs[:, 1]]
    del pairs, position
    progress = None
    if verbose:
        import pyterrier as pt
        progress = pt.tqdm(desc='re-partitioning large groups', unit='group')
    while len(active):
        _, group = np.unique(labels[active], return_inverse=True)
        group = group.reshape(-1)
        community = _split_groups(group, u, v, w, resolution=resolution, randomness=randomness, seed=seed,
                                  backend=backend, iterations=iterations)
        calls += int(group.max()) + 1
        # the parts: (group, community) pairs, numbered after every label used so far
        key = group * len(active) + community
        part_key, part = np.unique(key, return_inverse=True)
        part = part.reshape(-1)
        part_group = part_key // len(active)
        labels[active] = next_label + part
        split = np.bincount(part_group)[part_group] > 1  # per part: did its group split at all?
        unsplittable.extend(int(next_label + p) for p in np.flatnonzero(~split))
        next_label += len(part_key)
        pending = split & (np.bincount(part) > max_group_size)
        if progress is not None:
            progress.update(int(group.max()) + 1)
        node_pending = pending[part]
        keep = (part[u] == part[v]) & node_pending[u]
        renumber = np.cumsum(node_pending) - 1  # positions among the nodes still pending
        u, v, w = renumber[u[keep]], renumber[v[keep]], w[keep]
        active = active[node_pending]
    if progress is not None:
        progress.close()
    # number groups by their smallest node id, so labels do not depend on how the work was ordered
    raw, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(raw), dtype=np.int64)
    rank[np.argsort(first, kind='stable')] = np.arange(len(raw))
    out = rank[inverse.reshape(-1)]
    final_unsplittable = sorted(int(rank[i]) for i in np.searchsorted(raw, unsplittable))
    seconds['split'] = time.perf_counter() - started - seconds['symmetrise'] - seconds['leiden']
    cpu['split'] = time.process_time() - cpu_started - cpu['symmetrise'] - cpu['leiden']
    return Partition(out, unsplittable=final_unsplittable, modularity=modularity, leiden_calls=calls,
                     seconds=seconds, cpu_seconds=cpu)
