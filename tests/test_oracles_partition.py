"""Oracles for the partition (``_partition.py``) on graphs small enough to work by hand: what symmetrising keeps,
how groups are numbered, what the recursion counts and reports, and the modularity of the result."""
import re
import time

import numpy as np
import pytest

from pyterrier_garen._partition import Partition, leiden_partition, symmetrise


def test_symmetrise_drops_what_leiden_must_not_see():
    # node 0: edges to 1 (weight 0.2), 2 (inf), 0 (self loop); node 1: to 0 (0.6, the larger of the pair), 2 (nan);
    # node 2: to 1 (-0.5, negative), 0 (0.4, the only finite weight of the pair 0-2)
    edges = np.array([[1, 2, 0], [0, 2, 2], [1, 0, 0]])
    weights = np.array([[0.2, np.inf, 1.0], [0.6, np.nan, 0.0], [-0.5, 0.4, 0.0]])
    pairs, w = symmetrise(edges, weights, 3)
    assert pairs.tolist() == [[0, 1], [0, 2]]
    assert w.tolist() == [0.6, 0.4]
    # nothing left (self loops only): an empty edge list of the right shape
    pairs, w = symmetrise(np.array([[0], [1]]), np.array([[1.0], [1.0]]), 2)
    assert pairs.shape == (0, 2)
    assert len(w) == 0
    # a zero weight is dropped too (node 2 -> 1 alone)
    pairs, w = symmetrise(np.array([[1], [0], [1]]), np.array([[1.0], [1.0], [0.0]]), 3)
    assert pairs.tolist() == [[0, 1]]
    for bad in (-1, 1):  # a target below 0 or at num_nodes
        with pytest.raises(ValueError, match='edge targets'):
            symmetrise(np.array([[bad]]), np.array([[1.0]]), 1)
    for edges, weights, n in [(np.array([[1, 0]]), np.array([[1.0]]), 1),   # shapes differ
                              (np.array([1, 0]), np.array([1.0, 1.0]), 2),   # not (n, k)
                              (np.array([[1], [0]]), np.ones((2, 1)), 3)]:   # not num_nodes rows
        with pytest.raises(ValueError, match='must both be'):
            symmetrise(edges, weights, n)


def test_symmetrise_takes_int32_ids_of_a_graph_past_2_31_pairs():
    # pair keys are min * n + max: with n = 70,000 they pass 2^31, so int32 ids must be widened first
    n = 70_000
    edges = ((np.arange(n) + 1) % n).astype(np.int32).reshape(n, 1)  # a ring: i -> i + 1
    pairs, w = symmetrise(edges, np.ones((n, 1), dtype=np.float32), n)
    assert len(pairs) == n
    assert pairs[-2:].tolist() == [[n - 3, n - 2], [n - 2, n - 1]]
    assert pairs[0].tolist() == [0, 1]
    assert pairs[1].tolist() == [0, n - 1]


def triangles():
    """Two triangles {0, 2, 4} and {1, 3, 5} with unit weights, and node 6 with self loops only."""
    neighbours = {0: [2, 4], 2: [0, 4], 4: [0, 2], 1: [3, 5], 3: [1, 5], 5: [1, 3], 6: [6, 6]}
    edges = np.array([neighbours[i] for i in range(7)])
    return edges, np.ones(edges.shape)


def test_groups_are_numbered_by_their_smallest_node_and_modularity_is_by_hand():
    part = leiden_partition(*triangles(), max_group_size=3)
    assert part.labels.tolist() == [0, 1, 0, 1, 0, 1, 2]  # the group of 0 is 0, of 1 is 1, node 6 alone is 2
    assert part.labels.dtype == np.int64
    # m = 6 unit edges; each triangle: 3 inside, degree sum 6 -> 2 * (3/6 - (6/12)^2) = 0.5; node 6 adds nothing
    assert part.modularity == pytest.approx(0.5)
    assert part.leiden_calls == 1  # no group over the limit: no second run
    assert part.unsplittable == []
    assert part.num_groups == 3
    assert part.sizes().tolist() == [3, 3, 1]


def test_groups_over_the_limit_that_leiden_cannot_split_are_reported():
    # two 4-cliques {0, 2, 4, 6} and {1, 3, 5, 7}: over the limit of 3, and a clique has no split of positive gain
    nodes = {0: [0, 2, 4, 6], 1: [1, 3, 5, 7]}
    edges = np.array([[j for j in nodes[i % 2] if j != i] for i in range(8)])
    part = leiden_partition(edges, np.ones(edges.shape), max_group_size=3)
    assert part.labels.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert part.leiden_calls == 3  # the whole graph, then each clique once
    assert part.unsplittable == [0, 1]
    # at the limit (4) nothing is re-partitioned
    part = leiden_partition(edges, np.ones(edges.shape), max_group_size=4)
    assert (part.leiden_calls, part.unsplittable) == (1, [])


def test_an_empty_graph_and_a_graph_without_edges():
    empty = leiden_partition(np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3)))
    assert empty.labels.tolist() == []
    assert empty.num_groups == 0
    assert empty.sizes().tolist() == []
    # no edge survives symmetrising: every node is its own group, numbered by id, modularity 0
    alone = leiden_partition(np.array([[0], [1], [2]]), np.ones((3, 1)))
    assert alone.labels.tolist() == [0, 1, 2]
    assert alone.modularity == 0.0
    assert Partition(np.array([1, 0, 1])).sizes().tolist() == [1, 2]


def clique(n):
    edges = np.array([[j for j in range(n) if j != i] for i in range(n)])
    return edges, np.ones(edges.shape)


def test_the_default_limit_is_20_and_the_run_is_quiet(capsys):
    # a clique of 21 is over the paper's limit of 20 (one more Leiden run, reported unsplittable); one of 20 is not
    over = leiden_partition(*clique(21))
    assert (over.leiden_calls, over.unsplittable) == (2, [0])
    at = leiden_partition(*clique(20))
    assert (at.leiden_calls, at.unsplittable) == (1, [])
    assert capsys.readouterr().err == ''  # no progress bar unless verbose
    assert leiden_partition(*clique(3), max_group_size=2).unsplittable == [0]  # 2 is the smallest limit


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'resolution': 0}, 'resolution must be a finite number > 0, got 0'),
    ({'resolution': -1.0}, 'resolution must be a finite number > 0, got -1.0'),
    ({'randomness': 0}, 'randomness must be a finite number > 0, got 0'),
    ({'randomness': -0.5}, 'randomness must be a finite number > 0, got -0.5'),
    ({'max_group_size': 1}, 'max_group_size must be an integer >= 2, got 1'),
    ({'tolerance': -1.0}, 'tolerance must be a finite number >= 0, got -1.0'),
    ({'seed': 1.5}, 'seed must be an integer, got 1.5'),
    ({'iterations': 2.5}, 'iterations must be an integer, got 2.5'),
])
def test_partition_parameters_are_checked_by_name(kwargs, message):
    with pytest.raises(ValueError, match=f'^{re.escape(message)}'):
        leiden_partition(*clique(3), **kwargs)


@pytest.mark.parametrize('backend', ['igraph', 'leidenalg'])
def test_weighted_modularity_at_another_resolution(backend):
    # triangle {0, 2, 4} of weight 1, triangle {1, 3, 5} of weight 3 (node 6 alone): m = 3 + 9 = 12, and at
    # resolution 0.5, Q = sum over groups of L/m - 0.5 (d / 2m)^2 = (3/12 - 0.5 (6/24)^2) + (9/12 - 0.5 (18/24)^2)
    # = 0.21875 + 0.46875 = 0.6875 (unweighted it would be 0.75, at resolution 1 it is 0.375)
    edges, _ = triangles()
    weights = np.repeat(np.where(np.arange(7) % 2 == 1, 3.0, 1.0)[:, None], 2, axis=1)
    part = leiden_partition(edges, weights, resolution=0.5, backend=backend)
    assert part.labels.tolist() == [0, 1, 0, 1, 0, 1, 2]
    assert part.modularity == pytest.approx(0.6875)


def test_stage_times_are_durations_of_this_call():
    started, cpu_started = time.perf_counter(), time.process_time()
    part = leiden_partition(*clique(21))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert set(part.seconds) == set(part.cpu_seconds) == {'symmetrise', 'leiden', 'split'}
    # each stage is measured inside the call, so the stages add up to at most what the caller measured around it
    assert all(s >= 0 for s in part.seconds.values())
    assert sum(part.seconds.values()) <= wall + 1e-9
    assert all(s >= 0 for s in part.cpu_seconds.values())
    assert sum(part.cpu_seconds.values()) <= cpu + 1e-9


def test_which_leiden_runs_with_which_arguments(monkeypatch):
    from pyterrier_garen import _partition
    calls = []

    def spy(name):
        real = getattr(_partition, name)

        def run(*args, **kwargs):
            calls.append((name, {k: v for k, v in kwargs.items() if k in ('randomness', 'iterations', 'tolerance',
                                                                         'backend')}))
            return real(*args, **kwargs)
        monkeypatch.setattr(_partition, name, run)
    for name in ('_leiden_until_settled', '_run_leiden', '_split_groups'):
        spy(name)
    leiden_partition(*clique(21), randomness=0.01, tolerance=0.5)  # igraph, until settled: the tolerance applies
    assert calls == [('_leiden_until_settled', {'randomness': 0.01, 'tolerance': 0.5}),
                     ('_split_groups', {'randomness': 0.01, 'backend': 'igraph', 'iterations': -1})]
    calls.clear()
    leiden_partition(*clique(21), randomness=0.01, iterations=2)  # a fixed number of iterations: one plain run
    assert calls == [('_run_leiden', {'randomness': 0.01, 'backend': 'igraph', 'iterations': 2}),
                     ('_split_groups', {'randomness': 0.01, 'backend': 'igraph', 'iterations': 2})]
    calls.clear()
    leiden_partition(*clique(21), backend='leidenalg')
    # leidenalg: one plain run of the whole graph, then _split_groups runs it once per group over the limit
    assert [name for name, _ in calls] == ['_run_leiden', '_split_groups', '_run_leiden']
    assert {kwargs['backend'] for _, kwargs in calls} == {'leidenalg'}


def test_a_group_at_the_limit_next_to_one_over_it_is_left_alone():
    # a 5-clique (nodes 0-4) over the limit 4 and a 4-clique (5-8) at it: only the first is re-partitioned, and the
    # edges of the second stay out of that run
    edges = [[j for j in range(5) if j != i] for i in range(5)] + [[j for j in range(5, 9) if j != i] + [i]
                                                                     for i in range(5, 9)]
    part = leiden_partition(np.array(edges), np.ones((9, 4)), max_group_size=4)
    assert part.labels.tolist() == [0] * 5 + [1] * 4
    assert (part.leiden_calls, part.unsplittable) == (2, [0])


def test_verbose_shows_the_re_partitioning(capsys):
    leiden_partition(*clique(21), verbose=True)
    assert 're-partitioning large groups' in capsys.readouterr().err


def _knn(rows):
    """A k-NN graph in np_topk layout from neighbour lists (short rows padded with the node itself, weight 0)."""
    k = max(map(len, rows))
    edges = np.array([r + [i] * (k - len(r)) for i, r in enumerate(rows)])
    return edges, np.where(edges == np.arange(len(rows))[:, None], 0, 1.0).astype(np.float32)


def test_parts_of_a_split_group_never_take_the_label_of_an_untouched_group():
    # Two 15-cliques joined by 10 edges (nodes 0-29; degree sum 220 on each side), 300 separate 10-cliques, then a
    # 6-clique (the last nodes). In the whole graph (m = 13,735) merging the pair gains modularity:
    # 10/m > (220 * 220) / (2 m^2). Alone
    # (m = 220) splitting it does: 10/220 < 1/2. So the top level gives 302 groups, the 6-clique holding the
    # largest label, and only the pair (30 > 20) is partitioned again, into its two cliques: 303 groups, each
    # planted clique exactly one of them, numbered by its smallest node.
    rows = [[j for j in range(15) if j != i] for i in range(15)]
    rows += [[15 + j for j in range(15) if j != i] for i in range(15)]
    for c in range(10):
        rows[c].append(15 + c)
    for start in range(30, 3030, 10):
        rows += [[start + j for j in range(10) if j != i] for i in range(10)]
    rows += [[3030 + j for j in range(6) if j != i] for i in range(6)]
    part = leiden_partition(*_knn(rows), max_group_size=20)
    planted = np.concatenate([[0] * 15, [1] * 15, np.repeat(np.arange(2, 302), 10), [302] * 6])
    assert part.leiden_calls == 2
    assert part.num_groups == 303
    np.testing.assert_array_equal(part.labels, planted)
    assert part.unsplittable == []


def _burn(cpu_seconds):
    """Spend ``cpu_seconds`` of process CPU time (and at least as much wall-clock time)."""
    until = time.process_time() + cpu_seconds
    while time.process_time() < until:
        pass


def test_each_stage_time_is_its_own_stage(monkeypatch):
    import igraph  # noqa: F401  (imported here first, its import time would count in the leiden stage)

    import pyterrier_garen._partition as partition
    costs = {'symmetrise': 0.10, 'leiden': 0.30, 'split': 0.20}  # distinct, so a moved boundary shows
    for name, attr in (('symmetrise', 'symmetrise'), ('leiden', '_leiden_until_settled'), ('split', '_split_groups')):
        original = getattr(partition, attr)

        def slow(*args, _original=original, _cost=costs[name], **kwargs):
            out = _original(*args, **kwargs)
            _burn(_cost)
            return out
        monkeypatch.setattr(partition, attr, slow)
    part = leiden_partition(*clique(21))  # one group over the limit: one split run
    assert part.leiden_calls == 2
    for name, cost in costs.items():
        # the real work on 21 nodes takes milliseconds; a boundary moved by another stage's time is >= 0.1 off
        assert cost <= part.cpu_seconds[name] < cost + 0.08, (name, part.cpu_seconds)
        assert part.seconds[name] >= cost, (name, part.seconds)
