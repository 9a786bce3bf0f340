"""GAREN's options beyond the paper (all off by default): the mechanics of each one on hand-built graphs."""
import pytest
from _toy_graph import GROUPS, R0, DictScorer, ToyGroupGraph, first_stage, worked_garen

from pyterrier_garen import GAREN
from pyterrier_garen._garen import by_links, exploit_now, fuse_first_stage, group_evidence, interleave

# the worked example of test_garen_algorithm (tests/_toy_graph.py); without options its windows are
# [a1 a2 a3 a4], [a1 a3 y1 x1], [a1 y1 y2 y3], [a1 y1 w1 x2]


def run(**kwargs):
    garen, reranker, _ = worked_garen(**kwargs)
    out = garen(first_stage(R0))
    return garen, [call.docno.tolist() for call in reranker.calls], out.docno.tolist()


def test_defaults_are_the_paper():
    _, windows, _ = run()
    assert windows == [['a1', 'a2', 'a3', 'a4'], ['a1', 'a3', 'y1', 'x1'], ['a1', 'y1', 'y2', 'y3'],
                       ['a1', 'y1', 'w1', 'x2']]
    off = dict(evidence_weight=0.0, interleave=0, switch_members=0, fusion=0.0, member_order='first_stage')
    assert run(**off)[1:] == run()[1:]
    assert 'fusion' not in repr(run()[0])
    assert 'fusion=0.5' in repr(run(fusion=0.5)[0])


def test_group_evidence():
    evidence = group_evidence(['a1', 'a3', 'x1', 'zz'], lambda d: GROUPS.get(d, -1), p=0.5)
    assert evidence == pytest.approx({0: 0.5, 1: 0.25 + 0.125})  # zz has no group: no evidence


def test_evidence_weight_follows_the_reranker():
    # t=1: top h = [a1, a3]; G1 (a3, position 1) gets evidence (1-p) p = .24; with lambda=2 its value .5 + .48 beats
    # G2's .9, so explore starts with G1 (x1), then G2 (y1)
    garen, windows, _ = run(evidence_weight=2.0)
    assert windows[1] == ['a1', 'a3', 'x1', 'y1']
    assert garen.last_trace[0]['eligible'][:2] == [1, 2]
    assert garen.last_trace[0]['evidence'] == pytest.approx({0: 0.4, 1: 0.24})
    # a small lambda does not overturn the navigator
    assert run(evidence_weight=0.1)[1][1] == ['a1', 'a3', 'y1', 'x1']
    # without the option no evidence is computed, so the trace records none
    paper = run()[0]
    steps = [('eligible' in event, 'evidence' in event) for event in paper.last_trace]
    assert steps == [(True, False)] * 3 + [(False, False)]  # three expansions, then the last window


def test_interleave_slots():
    assert interleave(['g1', 'g2', 'g3'], ['f1', 'f2'], 4, 2) == ['g1', 'f1', 'g2', 'f2']
    assert interleave(['g1'], ['f1', 'f2', 'f3'], 4, 3) == ['g1', 'f1', 'f2', 'f3']  # groups dry: first stage fills
    assert interleave(['g1', 'f1'], ['f1', 'f2'], 3, 2) == ['g1', 'f1', 'f2']  # a duplicate is taken once
    assert interleave(['g1', 'g2'], [], 2, 1) == ['g1', 'g2']


def test_interleave_in_garen():
    # t=1: the groups offer y1, x1; every second slot goes to the best unobserved first-stage document (a5)
    garen, windows, _ = run(interleave=2)
    assert windows[1] == ['a1', 'a3', 'y1', 'a5']
    for step, window in zip(garen.last_trace, windows[1:]):
        new = window[2:]
        assert new[1] in R0  # slot 2 of every expansion comes from R_0 while R_0 has unobserved documents
        assert step['backfill'] == [d for d in new if d in R0 and GROUPS[d] not in step['chosen_groups']]


def test_switch_members():
    assert exploit_now(['a3', 'x1'], GROUPS.get, [1, 2], 2)
    assert not exploit_now(['a3', 'x1'], GROUPS.get, [2], 2)  # the group holding them is not eligible
    assert not exploit_now(['a3', 'y1'], GROUPS.get, [1, 2], 2)
    for members in (1, 2):
        garen, windows, _ = run(switch_members=members, tau_switch=100)
        for step in garen.last_trace:
            if 'mode' in step:
                top = step['reranked'][:2]
                expected = 'exploit' if exploit_now(top, GROUPS.get, step['eligible'], members) else 'explore'
                assert step['mode'] == expected
    # one member is enough: t=1 a3 (G1, still open) is in the top 2 -> exploit the best group G2 (y1, y2);
    # t=2 y1 (G2) -> exploit; t=3 the top 2 are w1 (G5, exhausted) and a1 (G0, exhausted) -> explore
    garen, windows, _ = run(switch_members=1, tau_switch=100)
    assert [s['mode'] for s in garen.last_trace if 'mode' in s] == ['exploit', 'exploit', 'explore']
    assert windows[1] == ['a1', 'a3', 'y1', 'y2']
    assert [s['mode'] for s in run(tau_switch=100)[0].last_trace if 'mode' in s] == ['explore'] * 3
    # with strategy='explore' the switch is not used
    assert {s['mode'] for s in run(switch_members=1, strategy='explore')[0].last_trace if 'mode' in s} == {'explore'}


def test_fusion():
    rank0 = {'a': 0, 'b': 1}
    # x: 1/61; a: 1/62 + 1/61; b: 1/63 + 1/62
    assert fuse_first_stage(['x', 'a', 'b'], rank0, 1.0) == ['a', 'b', 'x']
    assert fuse_first_stage(['x', 'a', 'b'], rank0, 0.01) == ['x', 'a', 'b']
    _, windows, plain = run()
    _, fused_windows, fused = run(fusion=1.0)
    assert fused_windows == windows  # fusion only reorders the final ranking
    assert fused == fuse_first_stage(plain, {d: i for i, d in enumerate(R0)}, 1.0)
    assert fused != plain
    _, _, noprop = run(propagate=False)
    assert run(propagate=False, fusion=1.0)[2] == fuse_first_stage(noprop, {d: i for i, d in enumerate(R0)}, 1.0)


def test_member_order_by_links():
    assert by_links(['p', 'q', 'r'], ['a'], {'a': ['r', 'q']}.get) == ['q', 'r', 'p']  # ties keep the pool order
    assert by_links(['p', 'q', 'r'], ['a', 'b'], {'a': ['r'], 'b': ['q', 'r']}.get) == ['r', 'q', 'p']
    # G0 {a, b} is the first stage; G1 {p, q, r} lies outside it; a (the top document) links to q only
    graph = ToyGroupGraph({'a': ['q'], 'b': ['p']}, {'a': 0, 'b': 0, 'p': 1, 'q': 1, 'r': 1})
    for order, expected in (('first_stage', 'p'), ('evidence', 'q')):
        reranker = DictScorer({'a': 2, 'b': 1})
        GAREN(reranker, graph, DictScorer({'1': 1.}), window=2, keep=1, budget=3, member_order=order)(
            first_stage(['a', 'b']))
        assert reranker.calls[1].docno.tolist() == ['a', expected]


@pytest.mark.parametrize('kwargs', [{'interleave': -1}, {'switch_members': 1.5}, {'fusion': -0.1},
                                    {'evidence_weight': float('nan')}, {'member_order': 'random'}])
def test_bad_options(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        run(**kwargs)


def test_source_share_by_hand():
    from pyterrier_garen._garen import source_share
    assert source_share(0, 0, 0, 0) == 0.5  # no evidence yet: half the slots
    # first stage kept 3 of 4 -> (3+1)/(4+2) = 2/3; groups kept 0 of 6 -> 1/8; share = (2/3) / (2/3 + 1/8) = 16/19
    assert source_share(3, 4, 0, 6) == pytest.approx(16 / 19)
    assert source_share(0, 6, 3, 4) == pytest.approx(3 / 19)
    assert source_share(0, 0, 0, 0, prior=0.25) == 0.25
    # prior odds 1/3 times the rate ratio (2/3) / (1/8) = 16/3: odds 16/9, share 16/25
    assert source_share(3, 4, 0, 6, prior=0.25) == pytest.approx(16 / 25)


def test_mix_spreads_the_first_stage_slots():
    from pyterrier_garen._garen import mix
    g, f = ['g1', 'g2', 'g3', 'g4'], ['f1', 'f2', 'f3', 'f4']
    assert mix(g, f, 4, 0.5) == ['f1', 'g1', 'f2', 'g2']
    assert mix(g, f, 4, 0.25) == ['g1', 'f1', 'g2', 'g3']  # round(4 * 0.25) = 1 slot, the second
    assert mix(g, f, 4, 0.0) == g
    assert mix(g, f, 3, 1.0) == f[:3]
    assert mix(['g1'], f, 3, 0.25) == ['g1', 'f1', 'f2']  # groups dry: the first stage fills
    assert mix(['g1', 'f1'], ['f1', 'f2'], 3, 0.5) == ['f1', 'g1', 'f2']  # a duplicate is taken once
    assert mix([], [], 3, 0.5) == []


def test_adaptive_interleave_in_garen():
    garen, windows, _ = run(adaptive_interleave=0.5)
    # t=1: share 1/2 of the two slots: slot 1 the best unobserved first-stage document (a5), slot 2 the groups' y1;
    # window 2 re-ranks to a1 y1 a3 a5: the group's y1 kept (top 2), a5 not: (0+1)/(1+2) vs (1+1)/(1+2) -> 1/3;
    # window 3 keeps a1 y1: neither y2 (groups) nor a6 (first stage): 1/4 vs 2/4 -> 1/3 again
    assert windows[1] == ['a1', 'a3', 'a5', 'y1']
    assert windows[2] == ['a1', 'y1', 'y2', 'a6']  # share 1/3 of 2 slots: round(2/3) = 1, the second slot
    trace = garen.last_trace  # one step per iteration
    assert [step.get('first_stage_share') for step in trace] == pytest.approx([1 / 2, 1 / 3, 1 / 3, None])
    # (longer searches, other priors, every share recomputed from the trace: the test below)
    with pytest.raises(ValueError, match='cannot be combined with interleave=2'):
        run(adaptive_interleave=0.5, interleave=2)
    for bad in (1, 1.5, -0.1, True):
        with pytest.raises(ValueError, match=r'^adaptive_interleave must be a number in \[0, 1\)'):  # named first
            run(adaptive_interleave=bad)


def test_first_stage_floor_in_garen():
    # floor 3/4 above every share: t=1 max(1/2, 3/4) = 3/4 of the two slots is both (round(1.5) = 2): a5 a6, which
    # the reranker drops (score 0 < a3's 8); t=2 the verdicts give (0+1)/(2+2) = 1/4 vs (0+1)/(0+2) = 1/2 -> share
    # 1/3, lifted to 3/4: a7 a8; t=3 the first stage is dry (a1-a8 observed), so the groups fill both slots
    garen, windows, _ = run(adaptive_interleave=0.5, first_stage_floor=0.75)
    assert windows[:3] == [['a1', 'a2', 'a3', 'a4'], ['a1', 'a3', 'a5', 'a6'], ['a1', 'a3', 'a7', 'a8']]
    assert not set(windows[3][2:]) & set(R0)
    shares = [step.get('first_stage_share') for step in garen.last_trace]
    assert shares == pytest.approx([3 / 4, 3 / 4, 3 / 4, None])
    assert [step.get('first_stage_verdict') for step in garen.last_trace] == pytest.approx([1 / 2, 1 / 3, 1 / 4, None])
    # a floor below every share (1/2, 1/3, 1/3: test_adaptive_interleave_in_garen) changes nothing
    garen, windows, _ = run(adaptive_interleave=0.5, first_stage_floor=0.3)
    assert windows[1:3] == [['a1', 'a3', 'a5', 'y1'], ['a1', 'y1', 'y2', 'a6']]
    assert [step.get('first_stage_share') for step in garen.last_trace] == pytest.approx([1 / 2, 1 / 3, 1 / 3, None])
    # between the shares: 1/2 stays, 1/3 is lifted to 0.4 (round(0.8) = 1 slot of 2, as with 1/3: same windows)
    garen, windows, _ = run(adaptive_interleave=0.5, first_stage_floor=0.4)
    assert windows[1:3] == [['a1', 'a3', 'a5', 'y1'], ['a1', 'y1', 'y2', 'a6']]
    assert [step.get('first_stage_share') for step in garen.last_trace] == pytest.approx([1 / 2, .4, .4, None])
    assert 'first_stage_floor=0.4' in repr(garen)
    with pytest.raises(ValueError, match='first_stage_floor=0.5 needs adaptive_interleave'):
        run(first_stage_floor=0.5)
    for bad in (1, 1.5, -0.1, True):
        with pytest.raises(ValueError, match=r'^first_stage_floor must be a number in \[0, 1\)'):
            run(adaptive_interleave=0.5, first_stage_floor=bad)


@pytest.mark.parametrize('prior', [0.2, 0.7])
def test_adaptive_shares_recomputed_from_the_trace_by_the_odds_formula(prior):
    """Longer searches on a random toy graph, a prior other than 1/2: every share of every query equals the prior's
    odds times the ratio of the smoothed kept rates, counted from the trace (seen counts that differ per source)."""
    from _toy_graph import toy_components
    components, inp = toy_components(budget=60)
    keep = 4
    garen = GAREN(components.reranker, components.groups, components.navigator, window=10, keep=keep, budget=60,
                  group_budget=3, adaptive_interleave=prior, trace=True)
    garen(inp)
    checked, uneven = 0, 0
    for qid in inp.qid.unique():
        steps = [s for s in garen.last_trace if s['qid'] == qid]
        kept_fs = seen_fs = kept_g = seen_g = 0
        assert steps[0]['first_stage_share'] == pytest.approx(prior)
        for before, step in zip(steps, steps[1:]):
            if step.get('first_stage_share') is None:
                continue
            top = set(step['reranked'][:keep])
            for docno in before['expansion']:
                if docno in before['backfill']:
                    kept_fs, seen_fs = kept_fs + (docno in top), seen_fs + 1
                else:
                    kept_g, seen_g = kept_g + (docno in top), seen_g + 1
            odds = prior / (1 - prior) * ((kept_fs + 1) / (seen_fs + 2)) / ((kept_g + 1) / (seen_g + 2))
            assert step['first_stage_share'] == pytest.approx(odds / (1 + odds))
            checked += 1
            uneven += seen_fs != seen_g
    assert checked >= 6
    assert uneven >= 3  # the two sources' counts differ, so swapping them would show


def test_defaults_are_the_papers_settings():
    # paper, Implementation Details: w = 20, h = 10, budget 100, K_g = 20, tau_switch = 4; Appendix A: p = .6 and
    # alpha = .01 (non-reasoning reranking); everything beyond the paper off, no trace kept
    import random

    from _toy_graph import HashScorer
    from pyterrier_garen._navigators import VoteNavigator
    rnd = random.Random(3)
    docs = [f'd{i}' for i in range(300)]
    graph = ToyGroupGraph({d: rnd.sample(docs, 4) for d in docs}, {d: i // 10 for i, d in enumerate(docs)})
    reranker = HashScorer()
    garen = GAREN(reranker, graph, VoteNavigator())
    paper = dict(window=20, keep=10, budget=100, group_budget=20, tau_switch=4, p=.6, alpha=.01, propagate=True,
                 evidence_weight=0., interleave=0, adaptive_interleave=0., switch_members=0, fusion=0.,
                 tail_fusion=None, observed_fusion=0., feedback=0., link_feedback=0., dropped_vote=1.,
                 vote_weight=0., trace=False)
    assert {name: getattr(garen, name) for name in paper} == paper
    assert garen.strategy == 'explore_exploit'
    assert garen.final_order == 'auto'  # beyond the paper: the default chosen in docs/decisions.md (issue 16)
    out = garen(first_stage(rnd.sample(docs, 200)))
    # T = 1 + ceil((c - w) / (w - h)) = 1 + ceil(80 / 10) = 9 windows of 20: the first 20, then 10 kept + 10 new
    assert [len(call) for call in reranker.calls] == [20] * 9
    assert out.docno.nunique() == 100
    assert not getattr(garen, 'last_trace', None)


@pytest.mark.parametrize('dropped_vote', [0.0, 0.5, 1.0])
def test_dropped_documents_groups_are_the_last_resort_before_the_budget_is_left(dropped_vote):
    """r1 -> x1 (G1), x2 -> y1 (G2); R_0 = [r1, r2]; w=3, h=1, c=6. Windows by hand:
    t=1: [r1, r2], kept r1; its group G1 is scored and taken: x1, x2 (R_0 is spent)
    t=2: [r1, x1, x2], kept r1, whose group G1 is now closed; x2, dropped, links G2. With dropped_vote=0 the kept
         documents find nothing: the expansion is made again with every window document voting (the last resort)
         and G2 brings y1, y2; dropped_vote=.5 or 1 find G2 directly
    t=3: [r1, y1, y2], the budget is spent."""
    graph = ToyGroupGraph({'r1': ['x1'], 'x2': ['y1']}, {'r1': 0, 'r2': 0, 'x1': 1, 'x2': 1, 'y1': 2, 'y2': 2})
    reranker = DictScorer({'r1': 10, 'x1': 5, 'x2': 4, 'y1': 3, 'y2': 2, 'r2': 1})
    navigator = DictScorer({'1': .5, '2': .4})
    garen = GAREN(reranker, graph, navigator, window=3, keep=1, budget=6, group_budget=2, dropped_vote=dropped_vote,
                  trace=True)
    out = garen(first_stage(['r1', 'r2']))
    assert [call.docno.tolist() for call in reranker.calls] == [['r1', 'r2'], ['r1', 'x1', 'x2'], ['r1', 'y1', 'y2']]
    assert [call.docno.tolist() for call in navigator.calls] == [['1'], ['2']]
    assert sorted(out.docno) == ['r1', 'r2', 'x1', 'x2', 'y1', 'y2']
    trace = garen.last_trace
    assert [event.get('last_resort', False) for event in trace[:2]] == [False, dropped_vote == 0]
    assert trace[1]['candidates'] == ({1: 1, 2: 1} if dropped_vote in (0, 1) else {1: 1., 2: .5})


def test_the_last_resort_keeps_a_batch_equal_to_its_queries_alone():
    # q1 takes the last resort at t=2 (one more navigator request in that iteration); q2 (R_0 = [x2, r1]) finds only
    # x1 and then nothing, even with every window document voting, and ends with 3 documents
    import pandas as pd
    from _toy_graph import assert_batched_equals_per_query
    graph = ToyGroupGraph({'r1': ['x1'], 'x2': ['y1']}, {'r1': 0, 'r2': 0, 'x1': 1, 'x2': 1, 'y1': 2, 'y2': 2})
    garen = GAREN(DictScorer({'r1': 10, 'x1': 5, 'x2': 4, 'y1': 3, 'y2': 2, 'r2': 1}), graph,
                  DictScorer({'1': .5, '2': .4}), window=3, keep=1, budget=6, group_budget=2, dropped_vote=0.)
    inp = pd.concat([first_stage(['r1', 'r2']), first_stage(['x2', 'r1'], qid='q2', query='query two')],
                    ignore_index=True)
    run = assert_batched_equals_per_query(garen, inp)
    assert run.groupby('qid').size().to_dict() == {'q1': 6, 'q2': 3}


def test_the_papers_votes_have_no_last_resort():
    # q2 of the test above with dropped_vote=1: x2 votes too, so G1 and G2 are scored and explored (x1, y1); then
    # r1's G1 is closed and G2 is no candidate of [r1, x1, y1]: with every window document voting already, the
    # search ends there, without a second look and without the last_resort mark
    graph = ToyGroupGraph({'r1': ['x1'], 'x2': ['y1']}, {'r1': 0, 'r2': 0, 'x1': 1, 'x2': 1, 'y1': 2, 'y2': 2})
    navigator = DictScorer({'1': .5, '2': .4})
    garen = GAREN(DictScorer({'r1': 10, 'x1': 5, 'x2': 4, 'y1': 3, 'y2': 2, 'r2': 1}), graph, navigator, window=3,
                  keep=1, budget=6, group_budget=2, trace=True)
    assert sorted(garen(first_stage(['x2', 'r1'])).docno) == ['r1', 'x1', 'x2', 'y1']
    assert [event['expansion'] for event in garen.last_trace] == [['x1', 'y1'], []]
    assert not any('last_resort' in event for event in garen.last_trace)
    assert [call.docno.tolist() for call in navigator.calls] == [['1', '2']]
