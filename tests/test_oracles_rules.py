"""Oracles for rules of GAREN and the baselines that the worked examples left unpinned (an audit against the paper,
shared/DESIGN.md and shared/BASELINES.md): each expected value is worked out by hand in the comments, at a setting
where the plausible alternative named there gives another answer. Each was checked to fail on that alternative.
"""
import numpy as np
import pytest
from _toy_graph import ADJACENCY, GROUPS, NAVIGATE, R0, RERANK, DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen import GAREN, GroupCorpusGraph
from pyterrier_garen._baselines import RGS, SlideGAR


def windows(reranker):
    return [call.docno.tolist() for call in reranker.calls]


def navigated(navigator):
    return [(call.docno.tolist(), call.vote.tolist()) for call in navigator.calls]


# ---------------------------------------------------------------------------------------------------------------------
# GAREN, paper Eq. 5 / Eq. 11: N_k(d) is d's neighbours without d itself (short k-NN lists are padded with the
# document itself; docs/decisions.md: "the library pads them with self-loops, which partitioning and GAREN ignore")

def _self_padded_graph(kind, tmp_path):
    """a, a2 in group A; c alone in group C; b, b2 in group B. a lists itself first, then b; c lists b2."""
    adjacency = {'a': ['a', 'b'], 'a2': ['a', 'a2'], 'b': ['b2', 'b'], 'b2': ['b', 'b2'], 'c': ['b2', 'c']}
    labels = {'a': 0, 'a2': 0, 'c': 1, 'b': 2, 'b2': 2}
    if kind == 'toy':
        return ToyGroupGraph(adjacency, labels)
    docnos = list(adjacency)
    edges = np.array([[docnos.index(n) for n in adjacency[d]] for d in docnos])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape, dtype=np.float32),
                                        labels=[labels[d] for d in docnos])


@pytest.mark.parametrize('kind', ['toy', 'artifact'])
def test_a_document_listed_among_its_own_neighbours_does_not_vote_for_its_group(kind, tmp_path):
    graph = _self_padded_graph(kind, tmp_path)
    group_a, group_b = graph.group_of('a'), graph.group_of('b')
    navigator = DictScorer({})
    garen = GAREN(DictScorer({'a': 1.}), graph, navigator, window=2, keep=1, budget=3, group_budget=2, trace=True)
    garen(first_stage(['a', 'c', 'r2', 'r3']))  # r2, r3 are in no group: the fill rule finds nothing
    # W_1 = [a, c]. N_k(a) = {b} (a itself left out), N_k(c) = {b2}: one candidate, B, with vote 2. A (a2 still
    # unobserved) is no candidate: K_g = 2 is left half empty. Counting a's self-link would make A a candidate with
    # vote 1, and the navigator would see [B, A] with votes [2, 1].
    assert garen.last_trace[0]['candidates'] == {group_b: 2}
    assert navigated(navigator) == [([str(group_b)], [2])]
    assert group_a not in garen.last_trace[0]['eligible']


# ---------------------------------------------------------------------------------------------------------------------
# GAREN, budget allocation (Appendix E; DESIGN.md): candidates with equal votes are ordered by the best first-stage
# rank of ANY member of the group (an observed one included), then group id

def test_equal_votes_go_to_the_best_first_stage_rank_of_any_member_observed_or_not():
    # R_0 = p q r2 r3 r4 b1 r6 r7 r8 a1 (ranks 0..9). Groups: A = {p, a1}, B = {b1}, Q = {q}; r* have none.
    # W_1 = [p, q]: N_k(p) = {b1} -> B, N_k(q) = {a1} -> A: both vote 1.
    # A's best rank is 0 (p, in the window, observed); B's is 5 (b1). K_g = 1 -> A is scored.
    # Ranking by the best rank of the UNOBSERVED members instead would put B (5) before A (a1 at 9); by id alone,
    # A (0) before B (1) too, so B gets id 0 here to tell the two apart.
    groups = {'p': 1, 'a1': 1, 'b1': 0, 'q': 2}
    graph = ToyGroupGraph({'p': ['b1'], 'q': ['a1']}, groups)
    navigator = DictScorer({})
    r0 = ['p', 'q', 'r2', 'r3', 'r4', 'b1', 'r6', 'r7', 'r8', 'a1']
    GAREN(DictScorer({}), graph, navigator, window=2, keep=1, budget=3, group_budget=1)(first_stage(r0))
    assert navigated(navigator)[0] == (['1'], [1])


# ---------------------------------------------------------------------------------------------------------------------
# GAREN, the fill rule (Appendix E: "fill the remaining budget by scanning the first-stage pool in rank order and
# adding the groups of the top-ranked uncovered documents"), through the whole loop

FILL_GROUPS = {'w0': 0, 'w9': 0, 'c1': 1, 'd3': 1, 'd4': 4, 'd5': 4, 'd6': 6, 'd7': 7}  # w1, d2: no group
FILL_R0 = ['w0', 'w1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7']


def test_the_fill_rule_scans_the_unobserved_first_stage_in_rank_order():
    graph = ToyGroupGraph({'w0': ['c1']}, FILL_GROUPS)
    reranker, navigator = DictScorer({'w0': 10.}), DictScorer({'1': .1, '4': .9, '6': .5, '7': .3})
    garen = GAREN(reranker, graph, navigator, window=2, keep=1, budget=4, group_budget=3, trace=True)
    garen(first_stage(FILL_R0))
    # t=1: W_1 = [w0, w1]; the one candidate is G1 (w0 -> c1), vote 1; two more groups from R_0 in rank order:
    #      w0, w1 observed (G0 must not come from w0, although w9 keeps it open), d2 has no group, d3's G1 is taken
    #      already, d4 -> G4, d5 -> G4 again, d6 -> G6: K_g = 3 reached (d7's G7 waits).
    #      Eligible by score: G4 .9, G6 .5, G1 .1; explore, n = w - h = 1: G4's first member in R_0 order, d4.
    # t=2: W_2 = [w0, d4]; the candidate G1 is cached, so the whole budget goes to the fill: d3 (G1), d5 (G4), d6 (G6)
    #      are in scored groups, d4 is observed -> G7 alone (vote 0).
    #      Eligible: the candidate G1 (.1) and the fill group G7 (.3); the cached G4 (.9) and G6 (.5) are no
    #      candidates of W_2 and not eligible -> G7's d7.
    # t=3: W_3 = [w0, d7]; 4 documents: the budget is spent.
    assert navigated(navigator) == [(['1', '4', '6'], [1, 0, 0]), (['7'], [0])]
    assert windows(reranker) == [['w0', 'w1'], ['w0', 'd4'], ['w0', 'd7']]
    assert [step.get('eligible') for step in garen.last_trace] == [[4, 6, 1], [7, 1], None]


# ---------------------------------------------------------------------------------------------------------------------
# GAREN, a budget that the steps of w - h do not divide: the last expansion takes only what is left of the budget,
# the first documents of the explore or exploit order (worked example of tests/_toy_graph.py: w=4, h=2, K_g=2,
# tau_switch=1; without a cut its windows are [a1 a2 a3 a4], [a1 a3 y1 x1], [a1 y1 y2 y3], [a1 y1 w1 x2])

@pytest.mark.parametrize(('budget', 'expected'), [
    # c=5: after W_1 one slot is left; explore's round-robin starts with the best group, G2 (.9): y1, not G1's x1
    (5, [['a1', 'a2', 'a3', 'a4'], ['a1', 'a3', 'y1']]),
    # c=9: T = 1 + ceil(5 / 2) = 4; the last expansion has one slot; exploit over G5 (.8), G1 (.5): w1, not x2
    (9, [['a1', 'a2', 'a3', 'a4'], ['a1', 'a3', 'y1', 'x1'], ['a1', 'y1', 'y2', 'y3'], ['a1', 'y1', 'w1']]),
])
def test_the_last_expansion_is_cut_to_the_budget_left(budget, expected):
    reranker = DictScorer(RERANK)
    garen = GAREN(reranker, ToyGroupGraph(ADJACENCY, GROUPS), DictScorer(NAVIGATE), window=4, keep=2, budget=budget,
                  group_budget=2, tau_switch=1)
    out = garen(first_stage(R0))
    assert windows(reranker) == expected
    assert len(out) == budget


# ---------------------------------------------------------------------------------------------------------------------
# SlideGAR (BASELINES.md; Mandeep-Rathee/llmgar slide_gar.py, _update_frontier(S = top_b)): the frontier holds the
# unseen neighbours of the KEPT top b only, taken in the order of their source's rank (pseudo-score 1/(rank+1))

def test_slidegar_frontier_comes_from_the_kept_top_in_rank_order():
    scores = {'r1': 5, 'r2': 4, 'r3': 3, 'r4': 2}
    r6 = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']
    # w=4, b=2, c=6. Step 1: [r1 r2 r3 r4] -> unchanged, kept [r1, r2]; room min(2, 6 - 4) = 2; the frontier's turn.
    # r1 (1/1) lists n1, r2 (1/2) lists n2: frontier [n1, n2]; n2 first would be the rank order reversed.
    reranker = DictScorer(scores)
    SlideGAR(reranker, ToyGroupGraph({'r1': ['n1'], 'r2': ['n2'], 'r3': ['n3']}, {}), window=4, keep=2, budget=6)(
        first_stage(r6))
    assert windows(reranker) == [['r1', 'r2', 'r3', 'r4'], ['r1', 'r2', 'n1', 'n2']]
    # r2's only neighbour is r1 (seen): the frontier is [n1] alone and the window takes 3 documents. A frontier
    # from the whole ranked window would add r3's n3 (r3 was dropped, not kept).
    reranker = DictScorer(scores)
    SlideGAR(reranker, ToyGroupGraph({'r1': ['n1'], 'r2': ['r1'], 'r3': ['n3']}, {}), window=4, keep=2, budget=6)(
        first_stage(r6))
    assert windows(reranker)[:2] == [['r1', 'r2', 'r3', 'r4'], ['r1', 'r2', 'n1']]


# ---------------------------------------------------------------------------------------------------------------------
# RGS, final_order='paper': Q, then the documents truncated from Q, the most recently truncated first

def test_rgs_paper_order_puts_the_latest_truncated_first():
    reranker = DictScorer({'r1': 1, 'r2': 2, 'n1': 3, 'n2': 0, 'n3': .5})
    graph = ToyGroupGraph({'r1': ['n1'], 'r2': ['n3'], 'n1': ['n2']}, {})
    model = RGS(reranker, graph, budget=5, queue_size=2, window=2, stride=1, seed_size=2, final_order='paper')
    out = model(first_stage(['r1', 'r2', 'r3']))
    # L = 2. 1: seeds [r1 r2] -> [r2 r1]; expand r2: n3.
    # 2: Q [r2 r1 n3]: window [r1 n3] -> same; [r2 r1] has nothing new: stop. Truncate n3. Expand r1: n1.
    # 3: Q [r2 r1 n1]: [r1 n1] -> [n1 r1]; [r2 n1] -> [n1 r2]: Q [n1 r2 | r1]; truncate r1. Expand n1: n2 (1 left).
    # 4: Q [n1 r2 n2]: [r2 n2] -> same; [n1 r2] nothing new. Truncate n2. 5 documents seen: stop.
    # Q, then n2 (truncated at 4), r1 (at 3), n3 (at 2); by score the tail would be r1 n3 n2, oldest first n3 r1 n2
    assert windows(reranker) == [['r1', 'r2'], ['r1', 'n3'], ['r1', 'n1'], ['r2', 'n1'], ['r2', 'n2']]
    assert out.docno.tolist() == ['n1', 'r2', 'n2', 'r1', 'n3']
