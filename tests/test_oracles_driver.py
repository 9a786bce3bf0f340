"""Oracles for the search driver (``_driver.py``): the sliding windows, lock-step batching, the per-query state and
the accounting, with values worked by hand at the edges where the plausible variants of the code differ."""
import types

import pytest

from pyterrier_garen._driver import RERANK, is_listwise, order_tail, slide, window_starts


def drive(search, answer):
    """Run one search coroutine by hand: ``answer(request) -> reply``; returns (requests, result)."""
    requests, reply = [], None
    try:
        while True:
            request = search.send(reply)
            requests.append((request[0], list(request[1]) if request[0] == RERANK else request[1]))
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


def test_is_listwise_looks_into_a_nested_pipeline():
    # PyTerrier flattens ``a >> (b >> c)``, but a combinator holding stages of its own (here a stand-in with
    # ``_transformers``) is looked into, and its last declaring stage decides, also over an earlier outer stage
    listwise, pointwise = types.SimpleNamespace(listwise=True), types.SimpleNamespace(listwise=False)
    nested = types.SimpleNamespace(_transformers=[listwise, types.SimpleNamespace()])
    assert is_listwise(types.SimpleNamespace(_transformers=[pointwise, nested]))
    assert not is_listwise(types.SimpleNamespace(_transformers=[listwise, types.SimpleNamespace(
        _transformers=[pointwise])]))
