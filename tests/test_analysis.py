import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import GroupCorpusGraph
from pyterrier_garen import analysis


@pytest.fixture
def chain(tmp_path):
    """a - b - c - d - e (each links to the next one), groups {a, b}, {c, d}, {e}."""
    docnos = ['a', 'b', 'c', 'd', 'e']
    edges = np.array([[1], [2], [3], [4], [4]])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones((5, 1)), labels=[0, 0, 1, 1, 2])


def test_doc_and_group_hops(chain):
    assert analysis.doc_hops(chain, ['a']) == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    assert analysis.doc_hops(chain, ['a'], limit=2) == {0: 0, 1: 1, 2: 2}
    assert analysis.group_hops(chain, ['a']) == {0: 0, 1: 1, 2: 2}
    assert analysis.group_hops(chain, ['c']) == {1: 0, 2: 1}  # edges are followed in their direction


def test_gold_hops_and_recall(chain):
    first = pd.DataFrame({'qid': ['q'] * 2, 'docno': ['a', 'b'], 'rank': [0, 1], 'score': [2., 1.]})
    qrels = pd.DataFrame({'qid': ['q', 'q', 'q'], 'docno': ['b', 'd', 'zz'], 'label': [1, 1, 1]})
    hops = analysis.gold_hops(chain, first, qrels, top=1, limit=6)
    assert hops.set_index('docno').doc_hop.to_dict() == {'b': 1, 'd': 3, 'zz': 7}
    assert hops.set_index('docno').group_hop.to_dict() == {'b': 0, 'd': 1, 'zz': 7}
    run = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['b', 'c'], 'rank': [0, 1]})
    table = analysis.recall_by_hop(hops, {'sys': run}).set_index('hop')
    assert table.recall.to_dict() == {1: 1.0, 3: 0.0, 7: 0.0}
    assert table.gold.to_dict() == {1: 1, 3: 1, 7: 1}


def test_gold_group_diagnostics(chain):
    qrels = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['c', 'e'], 'label': [1, 1]})
    trace = [{'qid': 'q', 'scored': {1: 0.5, 2: 0.1}, 'chosen_groups': [1]},
             {'qid': 'q', 'scored': {}, 'chosen_groups': [0]}]
    diag = analysis.gold_group_diagnostics(trace, chain, qrels)
    assert diag.to_dict('records') == [{'qid': 'q', 'gold_groups': 2, 'scored': 2, 'selected': 1}]


def test_plots_draw(tmp_path):
    import matplotlib
    matplotlib.use('Agg')
    curve = pd.DataFrame({'name': ['A', 'A', 'B', 'B'], 'budget': [50, 100, 50, 100], 'nDCG@10': [.1, .2, .3, .4]})
    ax = analysis.plot_budget_curve(curve)
    assert len(ax.lines) == 2
    table = pd.DataFrame({'system': ['A', 'A'], 'hop': [0, 1], 'gold': [3, 2], 'found': [3, 1], 'recall': [1., .5]})
    ax = analysis.plot_recall_by_hop(table)
    assert len(ax.patches) == 2
    ax.figure.savefig(tmp_path / 'plot.png')
    assert (tmp_path / 'plot.png').stat().st_size > 0


def test_first_stage_shares_and_their_summary():
    trace = [{'qid': 1, 'iteration': 1, 'first_stage_share': .35},
             {'qid': 1, 'iteration': 2, 'first_stage_share': .2},
             {'qid': 1, 'iteration': 3},  # the last window: no expansion, no share
             {'qid': 'b', 'iteration': 1, 'first_stage_share': .35},
             {'qid': 'b', 'iteration': 2, 'first_stage_share': .5},
             {'qid': 'b', 'iteration': 3, 'first_stage_share': .8},
             {'qid': 'c', 'iteration': 1, 'first_stage_share': None}]
    shares = analysis.first_stage_shares(trace)
    assert shares.values.tolist() == [['1', 1, .35], ['1', 2, .2], ['b', 1, .35], ['b', 2, .5], ['b', 3, .8]]
    got = analysis.share_summary(shares.iloc[::-1])  # order of the trace does not matter
    assert got.iteration.tolist() == ['1', '2', '3', 'last']
    assert got.queries.tolist() == [2, 2, 1, 2]
    # iteration 2: .2 and .5 -> mean .35, sample sd .3 / sqrt 2, q10 .2 + .1 * .3 = .23, q90 .47
    assert got.iloc[1, 2:].tolist() == pytest.approx([.35, .3 / 2 ** .5, .23, .47])
    # last: query 1 ends at .2 (iteration 2), b at .8 -> mean .5, q10 .26, q90 .74
    assert got.iloc[3, 2:].tolist() == pytest.approx([.5, .6 / 2 ** .5, .26, .74])
    assert np.isnan(got.loc[2, 'sd'])  # one query
    assert analysis.share_summary(analysis.first_stage_shares([])).empty
