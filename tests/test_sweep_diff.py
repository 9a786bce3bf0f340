"""bench/sweep_diff.py: two sweeps' per-query values matched row by row, with values worked out by hand."""
import math

import pandas as pd
import pytest
from _scripts import load_script

diff = load_script('bench/sweep_diff.py')


def _per_query(values, *, system='GAREN', sigma=0.5, noise_seed=0, budget=100, partition_seeds=(42,)):
    """Per-query rows as ``load_per_query`` gives them: ``values`` = ``{qid: (nDCG@10, R@100)}`` (or, per partition
    seed, ``{seed: {qid: ...}}``)."""
    by_seed = values if isinstance(next(iter(values.values())), dict) else {s: values for s in partition_seeds}
    return pd.DataFrame([{'collection': 'c', 'system': system, 'reranker': 'simulated' if sigma == sigma else 'MiniLM',
                          'sigma': sigma, 'noise_seed': noise_seed, 'partition_seed': seed, 'budget': budget,
                          'qid': qid, 'nDCG@10': n, 'R@100': r}
                         for seed, rows in by_seed.items() for qid, (n, r) in rows.items()])


def test_means_deltas_counts_and_the_paired_test_over_the_shared_queries():
    a = _per_query({'1': (.5, .2), '2': (.3, .4), '3': (.9, .9), '4': (.1, .1)})
    b = _per_query({'1': (.4, .2), '2': (.4, .4), '3': (.6, .9)})  # query 4 only in a: left out
    out = diff.compare(a, b, ('x', 'y')).set_index('measure')
    ndcg = out.loc['nDCG@10']
    assert ndcg['x'] == pytest.approx((.5 + .3 + .9) / 3)
    assert ndcg['y'] == pytest.approx((.4 + .4 + .6) / 3)
    assert ndcg['delta'] == pytest.approx((.1 - .1 + .3) / 3)
    assert (ndcg['higher'], ndcg['lower'], ndcg['queries']) == (2, 1, 3)
    # paired t over d = (.1, -.1, .3): mean .1, sd .2, t = .1 / (.2 / sqrt 3) = .866 on 2 degrees of freedom
    assert ndcg['p'] == pytest.approx(0.4778, abs=1e-4)
    recall = out.loc['R@100']
    assert (recall['delta'], recall['higher'], recall['lower']) == (0, 0, 0)
    assert math.isnan(recall['p'])  # nothing to test when every difference is 0


def test_partition_seeds_are_averaged_per_query_before_the_test():
    a = _per_query({42: {'1': (.2, 0), '2': (.6, 0)}, 43: {'1': (.4, 0), '2': (.2, 0)}})
    b = _per_query({'1': (.1, 0), '2': (.5, 0)}, partition_seeds=(42,))
    row = diff.compare(a, b).set_index('measure').loc['nDCG@10']
    # a per query: 1 -> .3, 2 -> .4; b: .1, .5 -> differences +.2, -.1
    assert row['A'] == pytest.approx(.35)
    assert row['delta'] == pytest.approx(.05)
    assert (row['higher'], row['lower'], row['queries']) == (1, 1, 2)


def test_rows_match_on_every_key_and_minilm_keeps_no_sigma():
    a = pd.concat([_per_query({'1': (.5, .5)}, budget=100), _per_query({'1': (.5, .5)}, budget=200),
                   _per_query({'1': (.7, .5)}, sigma=math.nan, noise_seed=math.nan)])
    b = pd.concat([_per_query({'1': (.4, .5)}, budget=200), _per_query({'1': (.5, .5)}, sigma=1.0),
                   _per_query({'1': (.6, .5)}, sigma=math.nan, noise_seed=math.nan)])
    out = diff.compare(a, b)
    ndcg = out[out.measure == 'nDCG@10']
    assert sorted(zip(ndcg.budget, ndcg.reranker)) == [(100, 'MiniLM'), (200, 'simulated')]
    assert ndcg.set_index('reranker').delta.round(6).to_dict() == {'simulated': .1, 'MiniLM': .1}
    assert ndcg.set_index('reranker').sigma.isna().to_dict() == {'simulated': False, 'MiniLM': True}


def test_summary_splits_at_the_level_band_and_counts_the_tests():
    table = pd.DataFrame({'measure': ['R@100'] * 5, 'system': ['S'] * 5, 'budget': [100, 100, 200, 200, 200],
                          'delta': [0.0005, 0.0004999, -0.0004999, -0.0005, 0.03],
                          'p': [0.01, 0.5, math.nan, 0.04, 0.06]})
    row = diff.summary(table).loc[('R@100', 'S')]
    assert row[['above', 'level', 'below']].tolist() == [2, 2, 1]
    assert row['mean'] == pytest.approx((0.0005 + 0.0004999 - 0.0004999 - 0.0005 + 0.03) / 5)
    assert (row['low'], row['high']) == (-0.0005, 0.03)
    assert (row['above p<0.05'], row['below p<0.05']) == (1, 1)  # p = .06 and a NaN p count for neither
    by_budget = diff.summary(table, ('measure', 'system', 'budget'))
    assert by_budget.loc[('R@100', 'S', 100), ['above', 'level', 'below']].tolist() == [1, 1, 0]
    assert by_budget.loc[('R@100', 'S', 200), 'mean'] == pytest.approx((-0.0004999 - 0.0005 + 0.03) / 3)


def test_main_prints_both_measures_and_refuses_sweeps_with_nothing_in_common(tmp_path, capsys):
    from pyterrier_garen import analysis
    for name, frame in (('a', _per_query({'1': (.5, .2), '2': (.3, .4)})),
                        ('b', _per_query({'1': (.4, .2), '2': (.4, .4)})),
                        ('c', _per_query({'1': (.4, .2), '2': (.4, .4)}, system='GAR'))):
        csv = tmp_path / f'{name}.csv'
        table = frame.groupby(['system', 'reranker', 'sigma', 'noise_seed', 'partition_seed', 'budget'],
                              dropna=False)[['nDCG@10', 'R@100']].mean().reset_index()
        table.to_csv(csv, index=False)
        frame.drop(columns='collection').to_csv(analysis.per_query_path(csv), index=False)
    diff.main(['--a', f'c={tmp_path / "a.csv"}', '--b', f'c={tmp_path / "b.csv"}', '--names', 'new', 'old'])
    printed = capsys.readouterr().out
    assert 'nDCG@10: new - old' in printed
    assert 'R@100: new - old' in printed
    with pytest.raises(SystemExit, match='no row in common'):
        diff.main(['--a', f'c={tmp_path / "a.csv"}', '--b', f'c={tmp_path / "c.csv"}'])
    with pytest.raises(SystemExit):
        diff.main(['--a', f'c={tmp_path / "a.csv"}', '--b', 'nocollection'])


def test_means_count_each_collection_once_and_say_where_the_first_is_ahead():
    table = pd.DataFrame({
        'collection': ['c1', 'c2', 'c3', 'c1'], 'system': ['S', 'S', 'S', 'T'], 'reranker': ['simulated'] * 4,
        'sigma': [.5] * 4, 'noise_seed': [0] * 4, 'budget': [100] * 4, 'measure': ['R@100'] * 4,
        'A': [.5, .3, .7, .2], 'B': [.4, .3, .8, .2], 'delta': [.1, 0., -.1, 0.], 'higher': 0, 'lower': 0,
        'queries': [300, 3, 10, 5], 'p': math.nan})
    out = diff.means(table).set_index('system')
    assert out.loc['S', 'A'] == pytest.approx(.5)  # (.5 + .3 + .7) / 3, not weighted by queries
    assert out.loc['S', 'B'] == pytest.approx(.5)
    assert out.loc['S', 'delta'] == pytest.approx(0)
    assert (out.loc['S', 'ahead'], out.loc['S', 'collections']) == (1, 3)
    assert (out.loc['T', 'ahead'], out.loc['T', 'collections']) == (0, 1)
