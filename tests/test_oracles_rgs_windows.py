"""RGS's windows over its queue, as its reference code places them (``insert`` in
``xuhaike/BGE-Reasoner-BRIGHT``'s ``run_retrieval.py``): the windows end at the queue's length, then ``stride`` higher
each time while above 0, so the top window can be shorter than ``window`` and a full window at the top is followed
by a shorter one over its head. Until session 40 RGS used RankGPT's pass (the last window starts at 0 and is
full), which differs at the top of the queue: a pointwise scorer ranked the same, a listwise reranker did not.

The schedule is pinned by hand below, and against an independent port of the reference loop with a reranker whose
verdicts depend on the whole window (so any other schedule would also end in another queue).
"""
import random
import zlib

import pyterrier as pt
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen._baselines import RGS
from pyterrier_garen._driver import queue_windows


@pytest.mark.parametrize(('num_docs', 'window', 'stride', 'spans'), [
    (0, 20, 10, []),
    (1, 20, 10, [(0, 1)]),                                       # a single document is still ranked once
    (20, 20, 10, [(0, 20), (0, 10)]),                            # the full top window, then its head again
    (36, 20, 10, [(16, 36), (6, 26), (0, 16), (0, 6)]),          # a queue of 20 plus 16 neighbours
    (21, 20, 10, [(1, 21), (0, 11)]),                            # the last window, [0, 1), would order nothing
    (7, 4, 2, [(3, 7), (1, 5), (0, 3)]),
    (3, 1, 1, [(2, 3), (1, 2), (0, 1)]),                         # window 1: every window holds one document
])
def test_queue_windows_end_stride_apart_from_the_bottom(num_docs, window, stride, spans):
    assert queue_windows(num_docs, window, stride) == spans


def test_rgs_seeds_and_expansions_take_the_reference_windows():
    scores = {'r1': 9, 'r2': 8, 'r3': 7, 'r4': 6, 'n1': 10, 'n2': 5, 'n3': 1}
    reranker = DictScorer(scores)
    model = RGS(reranker, ToyGroupGraph({'r1': ['n1', 'n2', 'n3']}, {}), budget=7, queue_size=7, window=4, stride=2,
                seed_size=4, final_order='paper')
    out = model(first_stage(['r1', 'r2', 'r3', 'r4']))
    # seeds (all new), 4 documents: [0, 4) stays r1 r2 r3 r4, then [0, 2) = r1 r2 again.
    # expand r1: n1 n2 n3 (budget 7 - 4 = 3) -> [r1 r2 r3 r4 n1 n2 n3]; windows end at 7, 5, 3 (1 is one document):
    #   [3, 7) r4 n1 n2 n3 -> n1 r4 n2 n3;  [1, 5) r2 r3 n1 r4 -> n1 r2 r3 r4;  [0, 3) r1 n1 r2 -> n1 r1 r2.
    # RankGPT's pass would have sent [r1 r2 r3 r4] once for the seeds and ended with [0, 4) = r1 n1 r2 r3.
    assert [call.docno.tolist() for call in reranker.calls] == [
        ['r1', 'r2', 'r3', 'r4'], ['r1', 'r2'],
        ['r4', 'n1', 'n2', 'n3'], ['r2', 'r3', 'n1', 'r4'], ['r1', 'n1', 'r2']]
    assert out.docno.tolist() == ['n1', 'r1', 'r2', 'r3', 'r4', 'n2', 'n3']


def window_verdict(docno, window):
    """A listwise verdict: the document's score depends on which other documents share its window."""
    return zlib.crc32(('|'.join(sorted(window)) + '>' + docno).encode()) / 2 ** 32


class WindowScorer(pt.Transformer):
    """Scores each call's rows with :func:`window_verdict` (one call = one window here: a single query)."""

    def __init__(self):
        self.calls = []

    def transform(self, inp):
        window = inp.docno.tolist()
        self.calls.append(window)
        return inp.assign(score=[window_verdict(d, window) for d in window])


def reference_rgs(r0, adjacency, budget, queue_size, window, stride, seeds):
    """RGS's reference loop, written out on its own: returns the windows it ranks and its final queue."""
    sent, queue, queued, expanded = [], [], set(), set()

    def insert(new):
        queue.extend(new)
        end = len(queue)
        while end > 0:
            span = queue[max(0, end - window):end]
            if all(d in queued for d in span):
                break
            sent.append(list(span))
            ranked = sorted(span, key=lambda d: -window_verdict(d, span))  # ties impossible in practice
            queue[max(0, end - window):end] = ranked
            end = max(0, end - stride)
        queued.update(new)
        del queue[queue_size:]

    start = r0[:seeds]
    insert(start)
    count = len(start)
    while count < budget:
        todo = [d for d in queue if d not in expanded]
        if not todo:
            break
        expanded.add(todo[0])
        new = [d for d in adjacency.get(todo[0], []) if d not in queued][:budget - count]
        insert(new)
        count += len(new)
    return sent, queue


@pytest.mark.parametrize('seed', range(6))
def test_rgs_matches_an_independent_port_of_its_reference_loop(seed):
    rng = random.Random(seed)
    docs = [f'd{i}' for i in range(300)]
    adjacency = {d: rng.sample([x for x in docs if x != d], 8) for d in docs}
    r0 = rng.sample(docs, 120)
    budget, queue_size, seeds = rng.choice([(100, 20, 20), (60, 15, 12), (45, 20, 9)])
    sent, queue = reference_rgs(r0, adjacency, budget, queue_size, window=20, stride=10, seeds=seeds)
    reranker = WindowScorer()
    out = RGS(reranker, ToyGroupGraph(adjacency, {}), budget=budget, queue_size=queue_size, seed_size=seeds,
              final_order='paper')(first_stage(r0))
    # the reference also sends the one-document windows that can end a pass; they order nothing
    assert reranker.calls == [w for w in sent if len(w) > 1]
    assert out.docno.tolist()[:len(queue)] == queue
