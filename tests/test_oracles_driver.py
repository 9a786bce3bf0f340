"""Oracles for the search driver (``_driver.py``): the sliding windows, lock-step batching, the per-query state and
the accounting, with values worked by hand at the edges where the plausible variants of the code differ."""

import pyterrier as pt
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage
from test_baselines import R6, SLIDE_GRAPH, SLIDE_SCORES

from pyterrier_garen import SlideGAR, SlidingWindowReranker
from pyterrier_garen._garen import window_loop
from pyterrier_garen._driver import (EVENT, NAVIGATE, RERANK, QueryState, Ranked, _Recorder, check_window, is_listwise,
                                     order_tail, run_batched, slide, window_starts)


def drive(search, answer):
    """Run one search coroutine by hand: ``answer(request) -> reply``; returns (requests, result)."""
    requests, reply = [], None
    try:
        while True:
            request = search.send(reply)
            requests.append((request[0], list(request[1]) if request[0] == RERANK else dict(request[1])
                             if request[0] == EVENT else request[1]))
            reply = answer(request)
    except StopIteration as stop:
        return requests, stop.value


@pytest.mark.parametrize(('num_docs', 'window', 'stride', 'starts'), [
    (0, 4, 2, []),          # nothing to re-rank: no window (not one empty window)
    (1, 4, 2, [0]),         # one document still gets its window
    (4, 4, 2, [0]),         # exactly one window
    (5, 4, 2, [1, 0]),      # the bottom window, then the top one (overlap 3)
    (10, 4, 3, [6, 3, 0]),  # stride apart from the bottom; the last one at 0
    (9, 4, 3, [5, 2, 0]),   # the last stride is shorter
])
def test_window_starts_edges(num_docs, window, stride, starts):
    assert window_starts(num_docs, window, stride) == starts


def test_slide_without_state_sorts_in_place_bottom_up():
    ranking = ['a', 'b', 'c', 'd', 'e']
    requests, _ = drive(slide(ranking, 3, 2), lambda request: list(reversed(request[1])))
    # windows [2:5] then [0:3]; each answer replaces its slice of the same list
    assert requests == [(RERANK, ['c', 'd', 'e']), (RERANK, ['a', 'b', 'e'])]
    assert ranking == ['e', 'b', 'a', 'd', 'c']
    assert drive(slide([], 3, 2), lambda request: request[1]) == ([], None)


def test_slide_stops_at_the_first_window_without_a_new_document():
    ranking = ['a', 'b', 'c', 'd', 'e', 'f']
    new = {'e', 'f', 'b'}
    # windows [3:6] (new: e, f), then [1:4] = b, c, f (new: b, f), then [0:3] = a, f, c (new: f), each reversed
    requests, _ = drive(slide(ranking, 3, 2, is_new=new.__contains__), lambda request: list(reversed(request[1])))
    assert requests == [(RERANK, ['d', 'e', 'f']), (RERANK, ['b', 'c', 'f']), (RERANK, ['a', 'f', 'c'])]
    ranking = ['a', 'b', 'c', 'd', 'e', 'f']
    requests, _ = drive(slide(ranking, 3, 2, is_new={'f'}.__contains__), lambda request: request[1])
    assert requests == [(RERANK, ['d', 'e', 'f'])]  # the next window [1:4] = b, c, d holds nothing new: stop
    assert ranking == ['a', 'b', 'c', 'd', 'e', 'f']


def test_dropped_order_puts_documents_never_re_ranked_last():
    # 'dropped': by the position in the last window that re-ranked a document; one never re-ranked (x, y) has none
    # and goes after every placed one, in the given order (not a KeyError, not first)
    last = {'b': (2, 3), 'c': (1, 1)}
    assert order_tail(['h', 'x', 'b', 'y', 'c'], 1, 'dropped', scores={}, last=last) == ['h', 'c', 'b', 'x', 'y']


class _Declares(pt.Transformer):
    """A stage that declares ``listwise`` (or, with None, declares nothing)."""

    def __init__(self, listwise=None):
        if listwise is not None:
            self.listwise = listwise

    def transform(self, inp):
        return inp


def test_is_listwise_looks_into_a_nested_pipeline():
    # the stages of ``a >> (b >> c)`` (pt.Compose, read with pt.inspect.subtransformers): the last stage that
    # declares ``listwise`` decides, over an earlier declaring stage and past later stages that declare nothing
    assert is_listwise(pt.Compose(_Declares(False), pt.Compose(_Declares(True), _Declares())))
    assert not is_listwise(pt.Compose(_Declares(True), pt.Compose(_Declares(), _Declares(False))))
    assert not is_listwise(_Declares() >> _Declares())
    assert is_listwise(_Declares(True))


def test_run_batched_serves_the_first_handler_kind_first_and_batches_the_rest():
    log = []

    def q1():
        first = yield EVENT, {'iteration': 1, 'note': 'start'}
        scores = yield NAVIGATE, {'docno': ['g1', 'g2']}
        ranked = yield RERANK, ['a', 'b']
        return first, list(scores), list(ranked)

    def q2():
        one = yield RERANK, ['c']
        two = yield RERANK, ['d']
        return list(one), list(two)

    def q3():
        return 'nothing to ask'
        yield  # a generator that finishes at once

    def handler(kind):
        def handle(requests):
            log.append((kind, [(qid, payload) for qid, _, payload in requests]))
            return [[f'{kind}:{qid}'] for qid, _, _ in requests]
        return handle

    seen = []
    results = run_batched({('q1', 'x'): q1(), ('q2', 'y'): q2(), ('q3', 'z'): q3()},
                          {NAVIGATE: handler('nav'), RERANK: handler('rr')},
                          observer=lambda key, kind, payload: seen.append((key[0], kind)))
    # navigation first (q1), then ONE reranker call for q1 and q2 together, then q2's second window alone
    assert log == [('nav', [('q1', {'docno': ['g1', 'g2']})]),
                   ('rr', [('q1', ['a', 'b']), ('q2', ['c'])]),
                   ('rr', [('q2', ['d'])])]
    assert results == {('q1', 'x'): (None, ['nav:q1'], ['rr:q1']), ('q2', 'y'): (['rr:q2'], ['rr:q2']),
                       ('q3', 'z'): 'nothing to ask'}
    # every request is observed, the event too (answered with None, never sent to a handler)
    assert seen == [('q1', EVENT), ('q1', NAVIGATE), ('q2', RERANK), ('q1', RERANK), ('q2', RERANK)]


def test_recorder_counts_calls_and_merges_events_of_one_iteration():
    recorder = _Recorder(trace=True)
    key = ('q1', 'x')
    for kind in (RERANK, NAVIGATE, RERANK):
        recorder(key, kind, None)
    recorder(key, EVENT, {'iteration': 1, 'window': ['a']})
    recorder(key, EVENT, {'iteration': 1, 'expansion': ['b']})
    recorder(key, EVENT, {'iteration': 2, 'window': ['b']})
    recorder(('q2', 'y'), EVENT, {'iteration': 2, 'window': ['c']})
    assert recorder.calls == {key: {RERANK: 2, NAVIGATE: 1}}
    assert recorder.steps == {key: [{'iteration': 1, 'window': ['a'], 'expansion': ['b']},
                                    {'iteration': 2, 'window': ['b']}],
                              ('q2', 'y'): [{'iteration': 2, 'window': ['c']}]}
    quiet = _Recorder(trace=False)
    quiet(key, EVENT, {'iteration': 1})
    quiet(key, RERANK, None)
    assert (quiet.steps, quiet.calls) == ({}, {key: {RERANK: 1}})


def test_query_state_records_requests_placements_and_scores():
    state = QueryState(['a', 'b', 'c', 'd', 'e'], lambda docno: [])
    assert state.rank0 == {'a': 0, 'b': 1, 'c': 2, 'd': 3, 'e': 4}
    requests, order = drive(state.rerank(['a', 'b']), lambda request: Ranked(['b', 'a'], [2.0, 1.5]))
    assert (requests, order) == ([(RERANK, ['a', 'b'])], ['b', 'a'])
    # a plain list as the answer (no scores): placements are recorded, scores stay as they were
    drive(state.rerank(['a', 'c']), lambda request: ['c', 'a'])
    assert state.reranks == 2
    assert state.last == {'b': (1, 0), 'a': (2, 1), 'c': (2, 0)}  # (1-based request, 0-based position)
    assert state.scores == {'b': 2.0, 'a': 1.5}
    # navigation: one request, the scores cached under the keys (as floats); no keys, no request
    requests, scores = drive(state.navigate([7, 9], {'docno': ['x', 'y']}), lambda request: [1, 0.5])
    assert requests == [(NAVIGATE, {'docno': ['x', 'y']})]
    assert scores == {7: 1.0, 9: 0.5}
    assert drive(state.navigate([], {}), lambda request: 1 / 0) == ([], {})
    assert state.cache == {7: 1.0, 9: 0.5}
    # backfill: unobserved documents of R_0 in rank order, not already chosen, up to n
    state.observed.update({'a': 1, 'c': 1})
    assert list(state.unobserved_r0()) == ['b', 'd', 'e']
    assert state.backfill(['d'], 3) == ['d', 'b', 'e']
    assert state.backfill(['x'], 2) == ['x', 'b']
    assert state.backfill(['x', 'y'], 2) == ['x', 'y']


class ListwiseDict(DictScorer):
    """A DictScorer that declares window-relative scores."""
    listwise = True


def test_auto_final_order_asks_the_searchs_own_reranker():
    # SlideGAR's worked example (tests/test_baselines.py): kept top n1 r6; below it, by the last window's position
    # ('dropped': r1 r3 r2 at position 2, then r5 n2 r4 at 3) or by score ('score': 5 4 2 1 .5 0)
    graph = ToyGroupGraph(SLIDE_GRAPH, {})

    def run(reranker):
        return SlideGAR(reranker, graph, window=4, keep=2, budget=8)(first_stage(R6)).docno.tolist()
    assert run(ListwiseDict(SLIDE_SCORES)) == ['r6', 'n1', 'r1', 'r3', 'r2', 'r5', 'n2', 'r4']
    assert run(DictScorer(SLIDE_SCORES)) == ['r6', 'n1', 'r1', 'r3', 'n2', 'r2', 'r5', 'r4']


def test_check_window_checks_each_size_itself():
    # check_window is public: it checks all three sizes itself, not only keep < window
    for args, name in [((2.5, 1, 10), 'window'), ((4, 0, 10), 'keep'), ((4, 2, 0), 'budget')]:
        with pytest.raises(ValueError, match=f'^{name} must be a positive integer'):
            check_window(*args)
    with pytest.raises(ValueError, match='must be smaller than window'):
        check_window(4, 4, 10)
    check_window(4, 3, 1)


def test_a_stride_equal_to_the_window_is_allowed():
    # stride <= window: equal strides tile the list without overlap (bottom window [2, 4), then [0, 2))
    reranker = DictScorer({'a': 1, 'b': 2, 'c': 3, 'd': 4})
    out = SlidingWindowReranker(reranker, window=2, stride=2, budget=4, final_order='paper')(
        first_stage(['a', 'b', 'c', 'd']))
    assert [call.docno.tolist() for call in reranker.calls] == [['c', 'd'], ['a', 'b']]
    assert out.docno.tolist() == ['b', 'a', 'd', 'c']
    with pytest.raises(ValueError, match=r'stride \(3\) must not exceed window \(2\)'):
        SlidingWindowReranker(reranker, window=2, stride=3)


def test_window_loop_records_each_window_and_returns_the_last_ranked_one():
    # the first window is R_0's top w = 3; each expansion brings the n = w - h = 2 documents asked for
    state = QueryState(['a', 'b', 'c', 'd'], lambda docno: [])
    extra = iter([['x', 'y'], []])

    def expand(state, t, window, n):
        assert n == 2
        return next(extra)
        yield  # a coroutine that asks nothing

    requests, last = drive(window_loop(state, expand, window=3, keep=1, budget=10), lambda request: (
        list(reversed(request[1])) if request[0] == RERANK else None))
    events = [payload for kind, payload in requests if kind == EVENT]
    assert events == [{'iteration': 1, 'window': ['a', 'b', 'c'], 'reranked': ['c', 'b', 'a']},
                      {'iteration': 1, 'expansion': ['x', 'y']},
                      {'iteration': 2, 'window': ['c', 'x', 'y'], 'reranked': ['y', 'x', 'c']},
                      {'iteration': 2, 'expansion': []}]  # an empty expansion stops the search
    assert last == ['y', 'x', 'c']
    assert state.observed == {'a': 1, 'b': 1, 'c': 1, 'x': 2, 'y': 2}
    # no first-stage document: no request, an empty last window
    assert drive(window_loop(QueryState([], lambda d: []), expand, window=3, keep=1, budget=10), None) == ([], [])


@pytest.mark.parametrize(('r0', 'expansions', 'windows'), [
    # a first stage shorter than w: T = 1 + ceil((7 - 3) / 2) = 3 would stop at 6 documents; the budget is spent
    (['a', 'b'], [['x', 'y'], ['z', 'u'], ['v']], [['a', 'b'], ['b', 'x', 'y'], ['y', 'z', 'u'], ['u', 'v']]),
    # an expansion shorter than asked: the same
    (['a', 'b', 'c'], [['x'], ['y', 'z'], ['v']], [['a', 'b', 'c'], ['c', 'x'], ['x', 'y', 'z'], ['z', 'v']]),
])
def test_window_loop_spends_the_budget_when_a_window_comes_up_short(r0, expansions, windows):
    state = QueryState(r0, lambda docno: [])
    extra = iter(expansions)
    asked = []

    def expand(state, t, window, n):
        asked.append(n)
        return next(extra)
        yield  # a coroutine that asks nothing

    requests, last = drive(window_loop(state, expand, window=3, keep=1, budget=7), lambda request: (
        list(reversed(request[1])) if request[0] == RERANK else None))
    assert [payload['window'] for kind, payload in requests if kind == EVENT and 'window' in payload] == windows
    assert asked == [2, 2, 1]  # min(w - h, c - observed); nothing asked once the budget is spent
    assert len(state.observed) == 7
    assert last == list(reversed(windows[-1]))


def test_window_loop_ends_when_an_expansion_brings_nothing_new():
    # documents already re-ranked are never re-ranked again to fill the budget: an expansion's observed documents
    # are left out of the next window, and one of observed documents only ends the search
    state = QueryState(['a', 'b', 'c'], lambda docno: [])
    extra = iter([['x', 'b'], ['y'], ['a', 'x']])

    def expand(state, t, window, n):
        return next(extra)
        yield

    requests, last = drive(window_loop(state, expand, window=3, keep=1, budget=10), lambda request: (
        list(reversed(request[1])) if request[0] == RERANK else None))
    assert [payload['window'] for kind, payload in requests if kind == EVENT and 'window' in payload] == \
        [['a', 'b', 'c'], ['c', 'x'], ['x', 'y']]
    assert last == ['y', 'x']
    assert list(state.observed) == ['a', 'b', 'c', 'x', 'y']


# ---- check_first_stage: the queries the first stage finds nothing for


def _topics(*pairs):
    import pandas as pd
    return pd.DataFrame({'qid': [q for q, _ in pairs], 'query': [t for _, t in pairs]})


def _found(*qids):
    import pandas as pd
    return pd.DataFrame({'qid': list(qids), 'docno': ['d'] * len(qids), 'score': [1.0] * len(qids)})


def test_a_first_stage_that_finds_something_for_every_query_is_silent():
    import warnings

    from pyterrier_garen._driver import check_first_stage
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        check_first_stage(_found('1', '2', '2'), _topics(('1', 'a'), ('2', 'b')), context='here')
        check_first_stage(_found(), _topics(), context='here')  # no query: nothing to say
        check_first_stage(_found(1, 2), _topics(('1', 'a'), (2, 'b')), context='here')  # ids compared as text


def test_the_queries_it_finds_nothing_for_are_counted_with_the_first_as_example():
    from pyterrier_garen._driver import check_first_stage
    long = 'w' * 70
    def sweep():  # what calls it: the warning points at the line that called this
        check_first_stage(_found('2'), _topics(('1', long), ('2', 'b'), ('3', 'c')), context='sweep')
    with pytest.warns(UserWarning, match='finds no document') as caught:
        sweep()
    assert [str(w.message) for w in caught] == [
        f"sweep: the first stage finds no document for 2 of the 3 queries (e.g. qid '1', '{'w' * 60}'); every system "
        'starts from it, so these queries are absent from every run and score 0 for all of them']
    assert caught[0].filename == __file__  # said at the caller's caller (the user's call of compare)
    assert caught[0].lineno == sweep.__code__.co_firstlineno + 3


def test_a_first_stage_that_finds_nothing_at_all_is_refused():
    import pandas as pd

    from pyterrier_garen._driver import check_first_stage
    message = ("^compare: the first stage finds no document for any of the 2 queries \\(e.g. qid '7', 'x y'\\), so "
               'every system would return nothing: no query shares an indexed term with the documents \\(after '
               'stemming and stopword removal\\); check that queries and documents are in the same language and '
               'that the queries file holds the query texts$')
    with pytest.raises(ValueError, match=message):
        check_first_stage(pd.DataFrame(), _topics(('7', 'x y'), ('8', 'z')), context='compare')
    with pytest.raises(ValueError, match=message):
        check_first_stage(_found('9'), _topics(('7', 'x y'), ('8', 'z')), context='compare')  # another query's
