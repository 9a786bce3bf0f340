"""Graph -> groups: Leiden (modularity) with recursive re-partitioning of large groups (paper §4.1, App. A)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import List, Literal, Tuple

import numpy as np

__all__ = ['leiden_partition', 'Partition', 'symmetrise']

Backend = Literal['igraph', 'leidenalg']


@dataclass
class Partition:
    """Result of :func:`leiden_partition`.

    Attributes:
        labels: group id of every node (``int64``), groups numbered by their smallest node id.
        unsplittable: ids of groups larger than the limit that Leiden could not split further.
        modularity: modularity of the first (top-level) Leiden partition of the whole graph.
        leiden_calls: number of Leiden runs (1 + recursive re-partitions).
    """
    labels: np.ndarray
    unsplittable: List[int] = field(default_factory=list)
    modularity: float = float('nan')
    leiden_calls: int = 0

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
    weights = np.asarray(weights, dtype=np.float64)
    if edges.shape != weights.shape or edges.ndim != 2 or edges.shape[0] != num_nodes:
        raise ValueError(f'edges {edges.shape} and weights {weights.shape} must both be (num_nodes={num_nodes}, k)')
    src = np.repeat(np.arange(num_nodes, dtype=np.int64), edges.shape[1])
    dst = edges.reshape(-1)
    w = weights.reshape(-1)
    if len(dst) and (dst.max() >= num_nodes or dst.min() < 0):
        raise ValueError(f'edge targets must lie in [0, {num_nodes}); found {dst.min()}..{dst.max()}')
    keep = (src != dst) & (w > 0) & np.isfinite(w)
    src, dst, w = src[keep], dst[keep], w[keep]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    key = lo * num_nodes + hi
    order = np.lexsort((-w, key))  # per pair, the largest weight first
    key, w = key[order], w[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, w = key[first], w[first]
    return np.stack([key // num_nodes, key % num_nodes], axis=1), w


def _leiden(num_nodes: int, pairs: np.ndarray, w: np.ndarray, *, resolution: float, randomness: float,
            seed: int, backend: Backend) -> Tuple[np.ndarray, float]:
    import igraph
    graph = igraph.Graph(n=num_nodes, edges=pairs.tolist(), directed=False)
    graph.es['weight'] = w.tolist()
    if backend == 'igraph':
        # igraph draws from a Python RNG object; give it a private, seeded one and restore the default after.
        igraph.set_random_number_generator(random.Random(seed))
        try:
            clustering = graph.community_leiden(objective_function='modularity', weights='weight',
                                                resolution=resolution, beta=randomness, n_iterations=-1)
        finally:
            igraph.set_random_number_generator(random)
        membership = clustering.membership
    elif backend == 'leidenalg':
        import leidenalg
        # RBConfiguration at resolution 1.0 is modularity; leidenalg fixes its own refinement randomness.
        part = leidenalg.RBConfigurationVertexPartition(graph, weights='weight', resolution_parameter=resolution)
        optimiser = leidenalg.Optimiser()
        optimiser.set_rng_seed(seed)
        while optimiser.optimise_partition(part) > 0:
            pass
        membership = part.membership
    else:
        raise ValueError(f'unknown Leiden backend {backend!r}; use "igraph" (fast default) or "leidenalg" (reference)')
    membership = np.asarray(membership, dtype=np.int64)
    modularity = graph.modularity(membership.tolist(), weights='weight', resolution=resolution) if len(w) else 0.
    return membership, float(modularity)


def leiden_partition(edges: np.ndarray, weights: np.ndarray, *, max_group_size: int = 20, resolution: float = 1.0,
                     randomness: float = 0.001, seed: int = 42, backend: Backend = 'igraph',
                     verbose: bool = False) -> Partition:
    """Partition a k-NN corpus graph into groups of at most ``max_group_size`` documents where possible.

    The graph is symmetrised (:func:`symmetrise`), Leiden optimises modularity over it, and every group larger
    than ``max_group_size`` is partitioned again on its induced subgraph, recursively, while Leiden still finds a
    non-trivial split (more than one part). Groups it cannot split (e.g. near-duplicate documents) stay large and
    are listed in :attr:`Partition.unsplittable`. Same inputs and seed give the same labels.

    Args:
        edges: ``(n, k)`` neighbour ids (``np_topk`` layout).
        weights: ``(n, k)`` similarities of those edges.
        max_group_size: the re-partitioning threshold (paper: 20).
        resolution: modularity resolution (paper: 1.0).
        randomness: Leiden refinement randomness, igraph's ``beta`` (paper: 0.001).
        seed: random seed.
        backend: ``'igraph'`` (``community_leiden``, fast) or ``'leidenalg'`` (the reference implementation).
        verbose: show a progress bar over re-partitioned groups.
    """
    if max_group_size < 2:
        raise ValueError(f'max_group_size must be at least 2, got {max_group_size}')
    num_nodes = int(np.asarray(edges).shape[0])
    pairs, w = symmetrise(edges, weights, num_nodes)
    if num_nodes == 0:
        return Partition(np.zeros(0, dtype=np.int64))
    labels, modularity = _leiden(num_nodes, pairs, w, resolution=resolution, randomness=randomness, seed=seed,
                                 backend=backend)
    calls = 1
    # adjacency in CSR form, to cut induced subgraphs quickly
    both = np.concatenate([pairs, pairs[:, ::-1]])
    both_w = np.concatenate([w, w])
    order = np.argsort(both[:, 0], kind='stable')
    nbr, nbr_w = both[order, 1], both_w[order]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(both[:, 0], minlength=num_nodes))])

    groups: List[np.ndarray] = [np.sort(m) for m in _members(labels)]
    final: List[np.ndarray] = []
    unsplittable_nodes: List[np.ndarray] = []
    pending = [g for g in groups if len(g) > max_group_size]
    final.extend(g for g in groups if len(g) <= max_group_size)
    progress = None
    if verbose:
        import pyterrier as pt
        progress = pt.tqdm(desc='re-partitioning large groups', unit='group')
    while pending:
        nodes = pending.pop()
        local = np.full(num_nodes, -1, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        sub_src, sub_dst, sub_w = [], [], []
        for i, node in enumerate(nodes):
            nb = nbr[offsets[node]:offsets[node + 1]]
            nw = nbr_w[offsets[node]:offsets[node + 1]]
            j = local[nb]
            sel = j > i
            sub_src.append(np.full(int(sel.sum()), i))
            sub_dst.append(j[sel])
            sub_w.append(nw[sel])
        sub_pairs = np.stack([np.concatenate(sub_src), np.concatenate(sub_dst)], axis=1) if len(nodes) else \
            np.zeros((0, 2), dtype=np.int64)
        sub_labels, _ = _leiden(len(nodes), sub_pairs, np.concatenate(sub_w), resolution=resolution,
                                randomness=randomness, seed=seed, backend=backend)
        calls += 1
        if progress is not None:
            progress.update()
        parts = [nodes[m] for m in _members(sub_labels)]
        if len(parts) <= 1:
            unsplittable_nodes.append(nodes)
            final.append(nodes)
            continue
        for part in parts:
            (pending if len(part) > max_group_size else final).append(np.sort(part))
    if progress is not None:
        progress.close()
    # number groups by their smallest node id, so labels do not depend on the order of the work queue
    final.sort(key=lambda g: int(g[0]))
    out = np.empty(num_nodes, dtype=np.int64)
    for gid, nodes in enumerate(final):
        out[nodes] = gid
    unsplittable = sorted(int(out[n[0]]) for n in unsplittable_nodes)
    return Partition(out, unsplittable=unsplittable, modularity=modularity, leiden_calls=calls)


def _members(labels: np.ndarray) -> List[np.ndarray]:
    order = np.argsort(labels, kind='stable')
    counts = np.bincount(labels)
    return [m for m in np.split(order, np.cumsum(counts)[:-1]) if len(m)]
