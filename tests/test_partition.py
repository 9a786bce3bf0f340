import numpy as np
import pytest
from _toy_graph import planted

from pyterrier_garen._partition import leiden_partition, symmetrise


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
    for bad in (-1e-3, float('nan'), True):
        with pytest.raises(ValueError, match='tolerance'):
            leiden_partition(edges, weights, tolerance=bad)
    with pytest.raises(ValueError, match='iterations'):
        leiden_partition(edges, weights, iterations=0)


def _igraph_leiden(edges, weights, seed, n_iterations, resolution=1.0):
    """igraph's public API, seeded as the builder seeds it: the independent route."""
    import random

    import igraph

    from pyterrier_garen._partition import _graph
    n = len(edges)
    pairs, w = symmetrise(edges, weights, n)
    graph = _graph(n, pairs, w, backend='leidenalg')  # with the 'weight' edge attribute
    igraph.set_random_number_generator(random.Random(seed))
    try:
        found = graph.community_leiden(objective_function='modularity', weights='weight', resolution=resolution,
                                       beta=0.001, n_iterations=n_iterations)
    finally:
        igraph.set_random_number_generator(random)
    return graph, np.asarray(found.membership)


def _canon(labels):
    """Labels renumbered by first appearance: the same partition gives the same array (igraph's numbering may
    differ when it starts from a given membership; leiden_partition renumbers groups this way too)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _noisy_graph():
    from pyterrier_garen.synthetic import planted_knn_graph
    # weak structure (most edges go anywhere), so Leiden needs several iterations to settle
    edges, weights, _, _ = planted_knn_graph(2000, k=6, p_subtopic=0.2, p_topic=0.1, seed=4)
    return edges, weights


@pytest.mark.parametrize('seed', [42, 5])
def test_zero_tolerance_is_igraphs_until_stable(seed):
    from pyterrier_garen._partition import _graph, _leiden_until_settled
    edges, weights = _noisy_graph()
    graph, expected = _igraph_leiden(edges, weights, seed, n_iterations=-1, resolution=0.8)
    pairs, w = symmetrise(edges, weights, len(edges))
    labels, quality = _leiden_until_settled(_graph(len(edges), pairs, w), resolution=0.8, randomness=0.001,
                                            seed=seed, tolerance=0.)
    np.testing.assert_array_equal(_canon(labels), _canon(expected))
    # the quality igraph reports is the modularity of the partition (at that resolution), as Partition reports it
    assert quality == pytest.approx(graph.modularity(expected.tolist(), weights='weight', resolution=0.8), abs=1e-12)


def test_tolerance_stops_after_patience_small_gains():
    from pyterrier_garen._partition import PATIENCE, _graph, _leiden_until_settled
    edges, weights = _noisy_graph()
    pairs, w = symmetrise(edges, weights, len(edges))
    graph = _graph(len(edges), pairs, w)
    # every gain after the first iteration is below a tolerance of 1, so the loop stops after 1 + PATIENCE
    # iterations: as many public-API runs of
    # one iteration each, each starting from the last, on one seeded random stream
    import random

    import igraph
    assert PATIENCE == 2
    labels, _ = _leiden_until_settled(graph, resolution=1.0, randomness=0.001, seed=42, tolerance=1.)
    public = _graph(len(edges), pairs, w, backend='leidenalg')
    igraph.set_random_number_generator(random.Random(42))
    try:
        membership = None
        for _ in range(1 + PATIENCE):  # the first iteration, then PATIENCE small gains
            membership = public.community_leiden(objective_function='modularity', weights='weight', beta=0.001,
                                                 n_iterations=1, initial_membership=membership).membership
    finally:
        igraph.set_random_number_generator(random)
    np.testing.assert_array_equal(_canon(labels), _canon(np.asarray(membership)))
    full, _ = _leiden_until_settled(graph, resolution=1.0, randomness=0.001, seed=42, tolerance=0.)
    assert not np.array_equal(_canon(labels), _canon(full)), 'this graph must need more than two iterations to settle'
    # the default tolerance: deterministic, and within 0.002 of the settled modularity
    a = leiden_partition(edges, weights, seed=42)
    b = leiden_partition(edges, weights, seed=42)
    np.testing.assert_array_equal(a.labels, b.labels)
    settled = leiden_partition(edges, weights, seed=42, tolerance=0)
    assert a.modularity >= settled.modularity - 0.002


def _public_iterations(edges, weights, seed, count):
    """``count`` public-API Leiden runs of one iteration each, each from the last, on one seeded random stream."""
    import random

    import igraph

    from pyterrier_garen._partition import _graph
    pairs, w = symmetrise(edges, weights, len(edges))
    public = _graph(len(edges), pairs, w, backend='leidenalg')
    igraph.set_random_number_generator(random.Random(seed))
    try:
        membership = None
        for _ in range(count):
            membership = public.community_leiden(objective_function='modularity', weights='weight', beta=0.001,
                                                 n_iterations=1, initial_membership=membership).membership
    finally:
        igraph.set_random_number_generator(random)
    return _canon(np.asarray(membership))


def test_large_graphs_stop_after_one_small_gain(monkeypatch):
    import pyterrier_garen._partition as partition
    edges, weights = _noisy_graph()  # 2000 nodes; every gain after the first iteration is below a tolerance of 1
    whole = dict(max_group_size=10**6, seed=42, tolerance=1.)  # no re-partitioning: the whole-graph labels
    two, three = _public_iterations(edges, weights, 42, 2), _public_iterations(edges, weights, 42, 3)
    assert not np.array_equal(two, three)
    assert partition.LARGE_GRAPH > len(edges)  # below the threshold: the first iteration, then two small gains
    np.testing.assert_array_equal(leiden_partition(edges, weights, **whole).labels, three)
    monkeypatch.setattr(partition, 'LARGE_GRAPH', len(edges))  # at the threshold: one small gain ends it
    np.testing.assert_array_equal(leiden_partition(edges, weights, **whole).labels, two)
    np.testing.assert_array_equal(leiden_partition(edges, weights, patience=2, **whole).labels, three)
    monkeypatch.setattr(partition, 'LARGE_GRAPH', len(edges) + 1)
    np.testing.assert_array_equal(leiden_partition(edges, weights, patience=1, **whole).labels, two)
    with pytest.raises(ValueError, match='patience'):
        leiden_partition(edges, weights, patience=0)


def _reference_partition(edges, weights, max_group_size, seed=42):
    """The recursion written plainly, one group at a time (as before the level-wise rewrite)."""
    from pyterrier_garen._partition import _graph, _run_leiden
    n = len(edges)
    pairs, w = symmetrise(edges, weights, n)
    opts = dict(resolution=1.0, randomness=0.001, seed=seed, backend='igraph')
    labels = _run_leiden(_graph(n, pairs, w), **opts)[0]
    final, pending = [], [np.flatnonzero(labels == g) for g in range(labels.max() + 1)]
    while pending:
        nodes = pending.pop()
        if len(nodes) <= max_group_size:
            final.append(nodes)
            continue
        inside = np.isin(pairs[:, 0], nodes) & np.isin(pairs[:, 1], nodes)
        local = np.searchsorted(nodes, pairs[inside])
        sub = _run_leiden(_graph(len(nodes), local, w[inside]), **opts)[0]
        parts = [nodes[sub == p] for p in range(sub.max() + 1)]
        if len(parts) == 1:
            final.append(nodes)
        else:
            pending.extend(parts)
    out = np.empty(n, dtype=np.int64)
    for gid, nodes in enumerate(sorted(final, key=lambda g: g[0])):
        out[nodes] = gid
    return out


@pytest.mark.parametrize('seed', [0, 1])
def test_level_wise_recursion_equals_plain_recursion(seed):
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, _, _ = planted_knn_graph(2000, k=8, seed=seed)
    part = leiden_partition(edges, weights, max_group_size=20, tolerance=0)  # the reference runs until stable
    np.testing.assert_array_equal(part.labels, _reference_partition(edges, weights, 20))
    assert part.leiden_calls > 20  # many groups were re-partitioned, over several levels
    assert set(part.seconds) == {'symmetrise', 'leiden', 'split'}


def test_planted_knn_graph_structure():
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, topics, subtopics = planted_knn_graph(5000, k=16, seed=3)
    again = planted_knn_graph(5000, k=16, seed=3)
    np.testing.assert_array_equal(edges, again[0])
    assert edges.shape == weights.shape == (5000, 16)
    assert edges.min() >= 0
    assert edges.max() < 5000
    assert not (edges == np.arange(5000)[:, None]).any()
    assert (np.diff(weights, axis=1) <= 0).all()  # np_topk rows: most similar first
    # subtopics nest inside topics, and most edges stay inside the topic
    assert all(len(set(topics[subtopics == s])) == 1 for s in np.unique(subtopics)[:200])
    assert (topics[edges] == topics[:, None]).mean() > 0.85
    part = leiden_partition(edges, weights, max_group_size=20)
    top = np.bincount(part.labels)
    assert top.max() <= 20
    assert part.leiden_calls > 1
    assert part.modularity > 0.8
    # groups are pure: nearly every group lies inside one planted topic
    purity = np.mean([np.bincount(topics[part.labels == g]).max() / top[g] for g in range(part.num_groups)])
    assert purity > 0.95
    with pytest.raises(ValueError, match='p_subtopic'):
        planted_knn_graph(100, p_subtopic=0.8, p_topic=0.5)


@pytest.mark.parametrize('bound', [1, 3, 1 << 16, (1 << 16) + 1, 1 << 20])
def test_stable_order_is_a_stable_sort_at_the_16_bit_edge(bound):
    from pyterrier_garen._partition import _stable_order
    rng = np.random.default_rng(bound)
    keys = rng.integers(0, bound, size=5000)
    keys[:3] = bound - 1  # the largest key (65535 fits the radix path, 65536 does not) and ties among equal keys
    order = _stable_order(keys, bound)
    # the reference: sort by (key, position), which is what stability means
    np.testing.assert_array_equal(order, np.lexsort((np.arange(len(keys)), keys)))
