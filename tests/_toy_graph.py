"""A tiny in-memory group graph and counting toy models for the online-algorithm tests."""
import hashlib
from typing import Dict, List, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt


class ToyGroupGraph:
    """The group-graph interface GAREN uses, built from explicit adjacency lists and group labels.

    Args:
        adjacency: ``{docno: [neighbour docnos, most similar first]}``.
        groups: ``{docno: group id}``; members of a group keep the order of ``groups``.
        summaries: ``{group id: summary}``.
    """

    def __init__(self, adjacency: Dict[str, Sequence[str]], groups: Dict[str, int],
                 summaries: Dict[int, str] = None):
        self.adjacency = {d: list(n) for d, n in adjacency.items()}
        self.groups = dict(groups)
        self.summaries = summaries or {}
        self.members: Dict[int, List[str]] = {}
        for docno, gid in groups.items():
            self.members.setdefault(gid, []).append(docno)
        self.num_groups = len(self.members)

    def neighbours(self, docno: str) -> List[str]:
        return list(self.adjacency.get(docno, []))

    def group_of(self, docno: str) -> int:
        return self.groups.get(docno, -1)

    def group_members(self, gid: int) -> List[str]:
        return list(self.members[gid])

    def summary(self, gid: int) -> str:
        return self.summaries.get(gid, f'summary of group {gid}')


class DictScorer(pt.Transformer):
    """Scores rows by a fixed ``{docno: score}`` dict (default 0) and records every call's input frame."""

    def __init__(self, scores: Dict[str, float], default: float = 0.):
        self.scores = scores
        self.default = default
        self.calls: List[pd.DataFrame] = []

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.calls.append(inp.copy())
        return inp.assign(score=[float(self.scores.get(d, self.default)) for d in inp['docno']])

    @property
    def num_calls(self) -> int:
        return len(self.calls)


def first_stage(docnos: Sequence[str], qid: str = 'q1', query: str = 'query one') -> pd.DataFrame:
    """A first-stage result frame ranking ``docnos`` in the given order."""
    n = len(docnos)
    return pd.DataFrame({'qid': qid, 'query': query, 'docno': list(docnos),
                         'score': [float(n - i) for i in range(n)], 'rank': list(range(n))})


class HashScorer(pt.Transformer):
    """Scores rows by a hash of (query text, docno): every query ranks the same documents differently, so a driver
    that matched answers to the wrong query would change the output. Records every call's input frame."""

    def __init__(self, salt: str = ''):
        self.salt = salt
        self.calls: List[pd.DataFrame] = []

    def score(self, query: str, docno: str) -> float:
        digest = hashlib.blake2b(f'{self.salt}\x1f{query}\x1f{docno}'.encode(), digest_size=8).digest()
        return int.from_bytes(digest, 'big') / 2 ** 64

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.calls.append(inp.copy())
        return inp.assign(score=[self.score(q, d) for q, d in zip(inp['query'], inp['docno'])])

    @property
    def num_calls(self) -> int:
        return len(self.calls)


# ---------------------------------------------------------------------------------------------------------------------
# the worked example of GAREN (tests/test_garen_algorithm.py derives its windows by hand; the option tests start from
# it). Groups, members in this order: G0 a1 a2 | G1 a3 x1 x2 | G2 a4 y1 y2 y3 | G3 z1 z2 | G4 a5 a6 a7 a8 | G5 w1.
# With window=4, keep=2, budget=10, group_budget=2, tau_switch=1 its windows are
# [a1 a2 a3 a4], [a1 a3 y1 x1], [a1 y1 y2 y3], [a1 y1 w1 x2].

GROUPS = {'a1': 0, 'a2': 0, 'a3': 1, 'x1': 1, 'x2': 1, 'a4': 2, 'y1': 2, 'y2': 2, 'y3': 2,
          'z1': 3, 'z2': 3, 'a5': 4, 'a6': 4, 'a7': 4, 'a8': 4, 'w1': 5}
ADJACENCY = {'a1': ['x1', 'y1'], 'a2': ['y2', 'z1'], 'a3': ['x2', 'a1'], 'a4': ['y3', 'a3'],
             'x1': ['z2', 'a1'], 'y1': ['w1', 'y1']}  # y1 lists itself (padding): ignored
R0 = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']
RERANK = {'a1': 10, 'a2': 5, 'a3': 8, 'a4': 1, 'y1': 9, 'x1': 2, 'y2': 3, 'y3': 7, 'w1': 11, 'x2': 0}
NAVIGATE = {'0': .2, '1': .5, '2': .9, '3': .7, '4': .1, '5': .8}
WORKED_PARAMS = dict(window=4, keep=2, budget=10, group_budget=2, tau_switch=1, trace=True)


def worked_garen(**kwargs):
    """``(garen, reranker, navigator)`` of the worked example; ``kwargs`` override :data:`WORKED_PARAMS`."""
    from pyterrier_garen import GAREN
    reranker, navigator = DictScorer(RERANK), DictScorer(NAVIGATE)
    garen = GAREN(reranker, ToyGroupGraph(ADJACENCY, GROUPS), navigator, **{**WORKED_PARAMS, **kwargs})
    return garen, reranker, navigator


def toy_components(budget: int = 40, seed: int = 0):
    """Components of every registered system over a random toy group graph, and a three-query first stage.

    60 documents in 6 groups of 10, 4 random neighbours each; each query's first stage ranks 30 of them, so the
    queries share documents (an answer matched by docno only would be caught). The reranker and navigator are
    query-dependent :class:`HashScorer` s. Returns ``(components, first_stage_frame)``.
    """
    import numpy as np

    from pyterrier_garen._registry import Components
    rng = np.random.default_rng(seed)
    docs = [f'd{i}' for i in range(60)]
    graph = ToyGroupGraph({d: list(rng.choice(docs, 4, replace=False)) for d in docs},
                          {d: i // 10 for i, d in enumerate(docs)})
    inp = pd.concat([first_stage(list(rng.choice(docs, 30, replace=False)), qid=f'q{i}', query=f'query {i}')
                     for i in range(3)], ignore_index=True)
    components = Components(first_stage=pt.Transformer.identity(), reranker=HashScorer(), groups=graph,
                            navigator=HashScorer('navigator'), budget=budget)
    return components, inp


def assert_batched_equals_per_query(pipeline, inp: pd.DataFrame) -> pd.DataFrame:
    """``pipeline`` over all queries of ``inp`` at once equals it over each query alone; returns the batched run."""
    batched = pipeline(inp).reset_index(drop=True)
    alone = pd.concat([pipeline(inp[inp.qid == qid]) for qid in inp.qid.unique()], ignore_index=True)
    pd.testing.assert_frame_equal(batched, alone)
    assert set(batched.qid) == set(inp.qid)
    return batched


def planted(num_clusters: int = 6, size: int = 8, k: int = 5, seed: int = 0):
    """A k-NN graph with planted clusters: strong edges (0.9) inside a cluster, one weak edge (0.1) to the next.

    Returns ``(edges, weights, truth)``: ``(n, k)`` arrays by position and the planted cluster of each node.
    """
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
