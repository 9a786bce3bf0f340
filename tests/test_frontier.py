"""GAREN's k-NN frontier (``frontier``, beyond the paper): the documents it offers, the slots it takes, the shares it
learns, worked by hand on toy graphs."""
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage, toy_components

from pyterrier_garen import GAREN
from pyterrier_garen._garen import frontier


def test_frontier_by_hand():
    neighbours = {'a': ['x', 'y', 'z'], 'b': ['y', 'w'], 'c': ['w', 'x', 'v']}.get
    # y and w: two linkers each, y first listed (by a, the best placed); x: one linker (c does not count: not in top)
    assert frontier(['a', 'b'], neighbours, {'z'}, 5) == ['y', 'x', 'w']
    assert frontier(['a', 'b'], neighbours, {'z'}, 2) == ['y', 'x']
    # with b best placed: y, w and x have two linkers each, in the order b, a, c first list them (y w, then x);
    # z and v one each (a lists z before c lists v)
    assert frontier(['b', 'a', 'c'], neighbours, set(), 5) == ['y', 'w', 'x', 'z', 'v']
    assert frontier(['a'], neighbours, {'x', 'y', 'z'}, 3) == []  # everything already observed
    assert frontier([], neighbours, set(), 3) == []


def _search(**kwargs):
    # R0 = a b c d, all in G0; G1 = {p, q, r} lies outside the first stage (graph order p q r); a, the best of the
    # first window, lists r (so G1 is its only candidate group); the navigator prefers G1
    graph = ToyGroupGraph({'a': ['r']}, {'a': 0, 'b': 0, 'c': 0, 'd': 0, 'p': 1, 'q': 1, 'r': 1})
    reranker = DictScorer({'a': 3, 'b': 2, 'c': 1})
    garen = GAREN(reranker, graph, DictScorer({'1': 1.}), window=3, keep=1, budget=5, trace=True, **kwargs)
    garen(first_stage(['a', 'b', 'c', 'd']))
    return garen, [call.docno.tolist() for call in reranker.calls]


def test_frontier_takes_its_share_of_the_slots():
    # off: explore round-robin over G1 (pool p q r) and G0 (pool d): p, d
    assert _search()[1][1] == ['a', 'p', 'd']
    # prior 1/2 of two slots: slot 1 (round(0.5) = 1 grows) is the frontier's r, slot 2 the groups' p
    garen, windows = _search(frontier=0.5)
    assert windows[1] == ['a', 'r', 'p']
    step = garen.last_trace[0]
    assert step['frontier'] == ['r']
    assert step['frontier_share'] == 0.5
    assert step['chosen_groups'] == [1]
    assert step['backfill'] == []
    # prior 1/4: round(0.25) = 0, round(0.5) = 1: the second slot is the frontier's
    assert _search(frontier=0.25)[1][1] == ['a', 'p', 'r']


@pytest.mark.parametrize(('prior', 'first_stage_prior'), [(0.3, 0.0), (0.6, 0.4)])
def test_frontier_shares_recomputed_from_the_trace_by_the_odds_formula(prior, first_stage_prior):
    """Longer searches on a random toy graph: the frontier's share is its prior's odds times the ratio of the smoothed
    kept rates of frontier and group documents; the first stage's share (with ``adaptive_interleave``) weighs the
    first stage against groups and frontier together. Counts are taken from the trace."""
    components, inp = toy_components(budget=60)
    keep = 4
    garen = GAREN(components.reranker, components.groups, components.navigator, window=10, keep=keep, budget=60,
                  group_budget=3, frontier=prior, adaptive_interleave=first_stage_prior, trace=True)
    garen(inp)

    def share(p, kept_a, seen_a, kept_b, seen_b):
        odds = p / (1 - p) * ((kept_a + 1) / (seen_a + 2)) / ((kept_b + 1) / (seen_b + 2))
        return odds / (1 + odds)

    checked = from_frontier = 0
    for qid in inp.qid.unique():
        steps = [s for s in garen.last_trace if s['qid'] == qid]
        counts = {'first': [0, 0], 'groups': [0, 0], 'frontier': [0, 0]}
        assert steps[0]['frontier_share'] == pytest.approx(prior)
        for before, step in zip(steps, steps[1:]):
            if 'frontier_share' not in step:
                continue
            top = set(step['reranked'][:keep])
            for docno in before['expansion']:
                source = 'frontier' if docno in before['frontier'] else 'first' if docno in before['backfill'] \
                    else 'groups'
                counts[source][0] += docno in top
                counts[source][1] += 1
            from_frontier += len(before['frontier'])
            assert step['frontier_share'] == pytest.approx(share(prior, *counts['frontier'], *counts['groups']))
            if first_stage_prior:
                others = [counts['groups'][i] + counts['frontier'][i] for i in (0, 1)]
                assert step['first_stage_share'] == pytest.approx(share(first_stage_prior, *counts['first'], *others))
            else:
                assert 'first_stage_share' not in step
            checked += 1
    assert checked >= 6
    assert from_frontier >= 6


def test_frontier_off_is_the_search_without_it():
    components, inp = toy_components(budget=30)

    def search(**kwargs):
        out = GAREN(components.reranker, components.groups, components.navigator, window=10, keep=4, budget=30,
                    group_budget=3, adaptive_interleave=0.35, **kwargs)(inp)
        return list(zip(out.qid, out.docno, out.iteration))
    assert search() == search(frontier=0.0)
    assert search() != search(frontier=0.5)


@pytest.mark.parametrize('bad', [1, 1.5, -0.1, True, float('nan'), 'half'])
def test_bad_frontier(bad):
    # named at the start of the message (the note further on says "frontier" too)
    with pytest.raises(ValueError, match=r'^frontier must be a number in \[0, 1\)'):
        _search(frontier=bad)


def test_a_group_pick_the_frontier_lists_beyond_its_offers_stays_the_groups():
    # a, the best of the first window, lists s, t, p (one link each, so the frontier offers them in that order);
    # G1 = {p, q, r} is the navigator's favourite. Two slots at share 1/2: slot 1 is the frontier's s, slot 2 the
    # groups' p. The frontier offers only as many documents as there are slots (s, t), so p, which it lists third,
    # came from G1: it counts as the groups' (chosen group 1), not the frontier's
    graph = ToyGroupGraph({'a': ['s', 't', 'p']}, {'a': 0, 'b': 0, 'c': 0, 'd': 0, 'p': 1, 'q': 1, 'r': 1, 's': 2,
                                                   't': 2})
    reranker = DictScorer({'a': 3, 'b': 2, 'c': 1})
    garen = GAREN(reranker, graph, DictScorer({'1': 1.}), window=3, keep=1, budget=5, trace=True, frontier=0.5)
    garen(first_stage(['a', 'b', 'c', 'd']))
    assert [call.docno.tolist() for call in reranker.calls] == [['a', 'b', 'c'], ['a', 's', 'p']]
    step = garen.last_trace[0]
    assert step['frontier'] == ['s']
    assert step['chosen_groups'] == [1]
