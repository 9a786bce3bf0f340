import numpy as np
import pytest

from pyterrier_garen._partition import leiden_partition, symmetrise


def planted(num_clusters=6, size=8, k=5, seed=0):
    """A k-NN graph with planted clusters: strong edges inside a cluster, one weak edge to the next cluster."""
    rng = np.random.default_rng(seed)
    n = num_clusters * size
    edges = np.zeros((n, k), dtype=np.int64)
    weights = np.zeros((n, k), dtype=np.float32)
    for i in range(n):
        c = i // size
        inside = [j for j in range(c * size, (c + 1) * size) if j != i]
        chosen = list(rng.choice(inside, size=k - 1, replace=False))
        edges[i] = chosen + [((c + 1) % num_clusters) * size + i % size]
        weights[i] = [0.9] * (k - 1) + [0.1]
    return edges, weights, np.arange(n) // size


def test_symmetrise_drops_self_loops_and_keeps_max():
    edges = np.array([[1, 0], [0, 2], [1, 2]])
    weights = np.array([[0.5, 1.0], [0.7, 0.2], [0.3, 0.0]])
    pairs, w = symmetrise(edges, weights, 3)
    assert pairs.tolist() == [[0, 1], [1, 2]]  # 0-0 self loop and the zero-weight 2-2 edge are gone
    assert w.tolist() == [0.7, 0.3]


def test_symmetrise_rejects_bad_ids():
    with pytest.raises(ValueError, match='edge targets'):
        symmetrise(np.array([[5]]), np.array([[1.0]]), 1)


@pytest.mark.parametrize('backend', ['igraph', 'leidenalg'])
def test_recovers_planted_clusters(backend):
    edges, weights, truth = planted()
    part = leiden_partition(edges, weights, max_group_size=20, backend=backend)
    # same partition up to label names: every planted cluster maps to exactly one group and back
    pairs = set(zip(truth.tolist(), part.labels.tolist()))
    assert len(pairs) == len(set(truth.tolist())) == part.num_groups
    assert part.modularity > 0.5


def test_recursive_split_respects_limit():
    edges, weights, truth = planted(num_clusters=8, size=8)
    # merge pairs of clusters with strong links, so the top level finds groups of 16 > limit 10
    for i in range(len(truth)):
        if truth[i] % 2 == 0:
            edges[i, -1] = i + 8
            weights[i, -1] = 0.9
    part = leiden_partition(edges, weights, max_group_size=10)
    assert part.sizes().max() <= 10
    assert part.leiden_calls > 1
    assert part.unsplittable == []


def test_unsplittable_clique_is_reported():
    n = 30  # a clique of identical documents: Leiden finds no split, so the group stays over the limit
    edges = np.array([[j for j in range(n) if j != i][:16] for i in range(n)])
    weights = np.ones_like(edges, dtype=np.float32)
    part = leiden_partition(edges, weights, max_group_size=20)
    assert part.sizes().max() > 20
    assert part.unsplittable == [int(g) for g in np.nonzero(part.sizes() > 20)[0]]


def test_deterministic_and_seed_sensitive_labels_are_valid():
    edges, weights, _ = planted(num_clusters=10, size=12, seed=3)
    a = leiden_partition(edges, weights, max_group_size=5, seed=7)
    b = leiden_partition(edges, weights, max_group_size=5, seed=7)
    np.testing.assert_array_equal(a.labels, b.labels)
    others = [leiden_partition(edges, weights, max_group_size=5, seed=s).labels for s in (8, 9, 10)]
    assert any(not np.array_equal(a.labels, other) for other in others), 'the seed must change the partition'
    # labels are numbered by smallest member: the first node of each new group increases with the id
    firsts = [int(np.nonzero(a.labels == g)[0][0]) for g in range(a.num_groups)]
    assert firsts == sorted(firsts)


def test_bad_arguments():
    edges, weights, _ = planted()
    with pytest.raises(ValueError, match='max_group_size'):
        leiden_partition(edges, weights, max_group_size=1)
    with pytest.raises(ValueError, match='backend'):
        leiden_partition(edges, weights, backend='nope')
