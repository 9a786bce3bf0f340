"""Paired tests of issue 16's margins (``analysis.stratified_paired_test``, ``baseline_margins(perquery=...)``,
``load_per_query``, ``sweep_verdict.py --paired``), pinned by hand.

The statistic and its degrees of freedom are worked out in the comments; only Student's t distribution function comes
from scipy (and, for one collection, scipy's own one-sample t-test as an independent route).
"""
import math

import pandas as pd

import pyterrier_garen as garen
import pytest
from scipy import stats

from pyterrier_garen import analysis

from _scripts import load_script


def test_one_collection_is_the_paired_t_test():
    deltas = [1., 2., 3., 6.]
    # mean 3, sample variance (4 + 1 + 0 + 9) / 3 = 14/3, standard error sqrt(14/3 / 4), t = 3 / 1.0801 = 2.7775, 3 dof
    t = 3 / math.sqrt(14 / 3 / 4)
    assert analysis.stratified_paired_test([deltas]) == pytest.approx(2 * stats.t.sf(t, 3))
    assert analysis.stratified_paired_test([deltas]) == pytest.approx(stats.ttest_1samp(deltas, 0).pvalue)


def test_two_collections_by_hand():
    # a: mean 2, variance 1; b: mean 0, variance 1; D = (2 + 0) / 2 = 1, not the pooled mean of the six (also 1 here)
    # SE = sqrt(1/3 + 1/3) / 2 = sqrt(2/3) / 2, t = sqrt(6); Welch-Satterthwaite: (1/12 + 1/12)^2 / (2 (1/12)^2 / 2) = 4
    assert analysis.stratified_paired_test([[1, 2, 3], [-1, 0, 1]]) == pytest.approx(2 * stats.t.sf(math.sqrt(6), 4))
    # unequal sizes: a = [0, 2] (mean 1, variance 2), b = [1, 1, 1, 1] (mean 1, no spread): D = 1, the pooled mean of
    # the six would be 1 too, but b adds nothing to the error: SE = sqrt(2/2) / 2 = .5, t = 2, dof = 1 (a alone):
    # Student's t with one degree of freedom is Cauchy, p = 1 - 2 atan(2) / pi = .2952
    assert analysis.stratified_paired_test([[0, 2], [1, 1, 1, 1]]) == pytest.approx(1 - 2 * math.atan(2) / math.pi)
    # the collections weigh alike whatever their sizes: a = [3, 5] (mean 4) and b = eight zeros around 0 (mean 0):
    # D = 2, where the pooled mean of the ten would be .8; SE^2 = (2/2)/4 + (var_b/8)/4
    b = [1, -1] * 4  # mean 0, sample variance 8/7
    se = math.sqrt((2 / 2 + 8 / 7 / 8) / 4)
    parts = (2 / 2 / 4, 8 / 7 / 8 / 4)
    dof = sum(parts) ** 2 / (parts[0] ** 2 / 1 + parts[1] ** 2 / 7)
    assert analysis.stratified_paired_test([[3, 5], b]) == pytest.approx(2 * stats.t.sf(2 / se, dof))


def test_a_standard_error_of_exactly_one():
    # [0, 2]: mean 1, sample variance 2, SE sqrt(2 / 2) = 1, t = 1 with 1 dof (Cauchy): p = 1 - 2 atan(1) / pi = .5;
    # the interval at .5 is 1 -/+ t(.75, 1) = 1 -/+ tan(pi / 4) = (0, 2)
    assert analysis.stratified_paired_test([[0, 2]]) == pytest.approx(.5)
    assert analysis.stratified_paired_interval([[0, 2]], .5) == pytest.approx((0, 2))


def test_edges():
    assert math.isnan(analysis.stratified_paired_test([]))
    assert math.isnan(analysis.stratified_paired_test([[1, 2], [3]]))  # one query: no variance
    assert analysis.stratified_paired_test([[0, 0], [0, 0, 0]]) == 1.0  # nothing differs
    assert analysis.stratified_paired_test([[.5, .5], [.5, .5]]) == 0.0  # every query better by the same amount


def per_query_rows():
    """S and B on collections a (3 queries) and b (2), sigma 1, noise seeds 0 and 1, budget 100, partition 42."""
    values = {  # (collection, system, seed): nDCG@10 per query; R@100 is nDCG@10 / 2 for S, the same for B
        ('a', 'S', 0): [.5, .6, .7], ('a', 'B', 0): [.4, .6, .5],
        ('a', 'S', 1): [.5, .8, .7], ('a', 'B', 1): [.4, .6, .9],
        ('b', 'S', 0): [.3, .9], ('b', 'B', 0): [.2, .8],
        ('b', 'S', 1): [.3, .7], ('b', 'B', 1): [.2, .8],
    }
    out = []
    for (collection, system, seed), ndcg in values.items():
        for q, v in enumerate(ndcg):
            out.append({'collection': collection, 'system': system, 'reranker': 'simulated', 'sigma': 1.0,
                        'noise_seed': float(seed), 'partition_seed': 42, 'budget': 100, 'qid': f'0{q}',
                        'nDCG@10': v, 'R@100': v / 2 if system == 'S' else v})
    return pd.DataFrame(out)


def means(perquery):
    keys = ['collection', 'system', 'reranker', 'sigma', 'noise_seed', 'partition_seed', 'budget']
    return perquery.groupby(keys, dropna=False)[['nDCG@10', 'R@100']].mean().reset_index()


def test_margins_with_per_query_values_by_hand():
    perquery = per_query_rows()
    out = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery)
    ndcg, recall = (out[out.measure == m].iloc[0] for m in ('nDCG@10', 'R@100'))
    # per query, S - B averaged over the two seeds: a: (.1 + .1) / 2 = .1, (0 + .2) / 2 = .1, (.2 - .2) / 2 = 0;
    # b: (.1 + .1) / 2 = .1, (.1 - .1) / 2 = 0; D = (.0667 + .05) / 2 = .0583 = the table's delta
    assert ndcg.delta == pytest.approx((.2 / 3 + .05) / 2)
    assert ndcg.p == pytest.approx(analysis.stratified_paired_test([[.1, .1, 0], [.1, 0]]))
    # by hand: a mean .0667, variance .00333 over 3; b mean .05, variance .005 over 2; D = .0583, SE^2 =
    # (.00333/3 + .005/2) / 4 = .000903, t = 1.9415; dof = .000903^2 / (.000278^2/2 + .000625^2/1) = 1.899; p = .1984
    assert ndcg.p == pytest.approx(.1984, abs=2e-4)
    assert ndcg.p > .05
    assert ndcg.verdict == 'tie'
    # R@100: S is half of its nDCG@10, B its own: per query a: (.25-.4 + .25-.4)/2 = -.15, (.3-.6 + .4-.6)/2 = -.25,
    # (.35-.5 + .35-.9)/2 = -.35; b: (.15-.2 + .15-.2)/2 = -.05, (.45-.8 + .35-.8)/2 = -.4
    assert recall.delta == pytest.approx((-.25 + -.225) / 2)
    assert recall.p == pytest.approx(analysis.stratified_paired_test([[-.15, -.25, -.35], [-.05, -.4]]))
    assert recall.verdict == 'tie'  # p .197: five queries do not show the gap at .05
    # a lenient level turns the nDCG@10 tie (p .198) into a lead and the R@100 tie into a loss
    lenient = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery, alpha=.2)
    assert lenient.verdict.tolist() == ['ahead', 'behind']
    assert analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery, alpha=.01).verdict.tolist() == \
        ['tie', 'tie']
    # without per-query values the table has no p column (the committed verdict blocks stay as they were)
    assert 'p' not in analysis.baseline_margins(means(perquery), 'S', ['B']).columns


def test_interval_by_hand():
    # one collection: the paired t interval, by scipy's own one-sample route as an independent check
    deltas = [1., 2., 3., 6.]
    ci = stats.ttest_1samp(deltas, 0).confidence_interval(0.9)
    assert analysis.stratified_paired_interval([deltas], .9) == pytest.approx((ci.low, ci.high))
    # two collections (test_two_collections_by_hand): D = 1, SE = sqrt(2/3) / 2, 4 dof; t(.975, 4) = 2.7764
    half = 2.7764 * math.sqrt(2 / 3) / 2
    assert analysis.stratified_paired_interval([[1, 2, 3], [-1, 0, 1]]) == pytest.approx((1 - half, 1 + half),
                                                                                           abs=1e-4)
    # edges: no spread gives the point; too few queries give NaN; a level outside (0, 1) is refused by name
    assert analysis.stratified_paired_interval([[.5, .5], [.5, .5]]) == (.5, .5)
    assert all(math.isnan(v) for v in analysis.stratified_paired_interval([[1, 2], [3]]))
    for level in (1.0, 0.0, -.5, 1.5):
        with pytest.raises(ValueError, match=r'\blevel\b'):
            analysis.stratified_paired_interval([deltas], level)
    table = means(per_query_rows())
    for alpha in (0, 1, 1.5):
        with pytest.raises(ValueError, match=r'\balpha\b'):
            analysis.baseline_margins(table, 'S', ['B'], perquery=per_query_rows(), alpha=alpha)
        with pytest.raises(ValueError, match=r'\balpha\b'):
            analysis.budget_monotonicity(table, ['S'], alpha=alpha)


def test_margins_interval_agrees_with_the_verdict():
    perquery = per_query_rows()
    out = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery)
    ndcg = out[out.measure == 'nDCG@10'].iloc[0]
    # D = .0583, SE = sqrt(.000903) = .03005, 1.899 dof (test_margins_with_per_query_values_by_hand):
    # t(.975, 1.899) is about 4.5, so the interval is about .0583 -/+ .135 and holds 0 (p .198: a tie)
    assert (ndcg.low + ndcg.high) / 2 == pytest.approx(ndcg.delta)
    half = stats.t.ppf(.975, 1.899) * math.sqrt(.000903)
    assert (ndcg.low, ndcg.high) == pytest.approx((ndcg.delta - half, ndcg.delta + half), abs=2e-3)
    assert ndcg.low < 0 < ndcg.high
    # at alpha .2 the tie is a lead and the 80% interval lies above 0; R@100's lies below it
    lenient = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery, alpha=.2)
    assert lenient.verdict.tolist() == ['ahead', 'behind']
    assert (lenient.low > 0).tolist() == [True, False]
    assert (lenient.high < 0).tolist() == [False, True]


def test_monotonicity_worst_step_by_hand(tmp_path, capsys):
    values = {  # (system, partition, budget): R@100 per query of collection a, MiniLM
        ('S', 42, 100): [.5, .6, .7], ('S', 42, 200): [.4, .6, .9],
        ('S', 43, 100): [.5, .6, .7], ('S', 43, 200): [.4, .4, .7],
        ('F', 42, 100): [.5, .6, .7], ('F', 42, 200): [.4, .5, .6],  # falls by .1 on every query
        ('R', 42, 50): [.3, .2, .1], ('R', 42, 100): [.5, .5, .5], ('R', 42, 200): [.6, .7, .8],
    }
    out = []
    for (system, pseed, budget), recall in values.items():
        for q, v in enumerate(recall):
            out.append({'collection': 'a', 'system': system, 'reranker': 'MiniLM', 'sigma': math.nan,
                        'noise_seed': math.nan, 'partition_seed': pseed, 'budget': budget, 'qid': f'q{q}',
                        'nDCG@10': 0., 'R@100': v})
    perquery = pd.DataFrame(out)
    mono = analysis.budget_monotonicity(means(perquery), ['S', 'F', 'R'], perquery=perquery).set_index('system')
    # S, averaged over its two partitions: 100 -> (.5, .6, .7), 200 -> (.4, .5, .8); per query -.1, -.1, +.1:
    # mean -.0333, sample variance .01333, SE .0667, t = -.5 with 2 dof; p = 1 - .5 / sqrt(.25 + 2) = 2/3
    assert mono.loc['S', 'worst_step'] == pytest.approx(-.1 / 3)
    assert not mono.loc['S', 'never_falls']
    assert mono.loc['S', 'p'] == pytest.approx(2 / 3)
    assert mono.loc['S', 'step_verdict'] == 'tie'
    # F: -.1 on every query, no spread: a fall beyond any noise
    assert (mono.loc['F', 'p'], mono.loc['F', 'step_verdict']) == (0.0, 'falls')
    # R: steps 50 -> 100 (+.2, +.3, +.4: mean .3) and 100 -> 200 (+.1, +.2, +.3: mean .2); the worst is the second:
    # SE sqrt(.01 / 3), t = 3.4641, 2 dof: p = 1 - 3.4641 / sqrt(12 + 2) = .0742, a tie at .05 and a rise at .1
    assert mono.loc['R', 'worst_step'] == pytest.approx(.2)
    assert mono.loc['R', 'p'] == pytest.approx(1 - math.sqrt(12) / math.sqrt(14))
    assert mono.loc['R', 'step_verdict'] == 'tie'
    lenient = analysis.budget_monotonicity(means(perquery), ['R'], perquery=perquery, alpha=.1)
    assert lenient.step_verdict.tolist() == ['rises']
    # at exactly the level, a tie (p must be below alpha)
    level = mono.loc['R', 'p']
    assert analysis.budget_monotonicity(means(perquery), ['R'], perquery=perquery, alpha=level).step_verdict.tolist() \
        == ['tie']
    # a per-query file without one of the step's budgets: no test
    partial = perquery[~((perquery.system == 'F') & (perquery.budget == 200))]
    assert analysis.budget_monotonicity(means(perquery), ['F'], perquery=partial).step_verdict.tolist() == ['-']
    # without per-query values the table keeps its columns
    assert 'p' not in analysis.budget_monotonicity(means(perquery), ['S']).columns
    # the command line: table 1 gains p and step_verdict, and a count of the worst steps' verdicts
    a = write_sweep(tmp_path, 'a', perquery)
    load_script('examples/sweep_verdict.py').main([f'a={a}', '--system', 'S', '--baselines', 'B', '--monotone', 'S',
                                                   'F', 'R', '--rerankers', 'MiniLM', '--paired'])
    text = capsys.readouterr().out
    assert '| a | S | MiniLM | - | - | 0.6000 | 0.5667 | -0.0333 | no | 0.6667 | tie |' in text
    assert '1 of 3 rows never fall; worst steps: 0 rises, 2 tie, 1 falls at p < 0.05' in text


def test_margins_pair_only_the_systems_seeds():
    perquery = per_query_rows()
    extra = perquery[(perquery.system == 'B') & (perquery.noise_seed == 1)].assign(noise_seed=2.0, **{'nDCG@10': 0.})
    both = pd.concat([perquery[~((perquery.system == 'S') & (perquery.noise_seed == 1))], extra], ignore_index=True)
    out = analysis.baseline_margins(means(both), 'S', ['B'], perquery=both)
    # S has seed 0 only, so B's seeds 1 and 2 do not count: per query a: .1, 0, .2; b: .1, .1
    assert out.iloc[0].p == pytest.approx(analysis.stratified_paired_test([[.1, 0, .2], [.1, .1]]))


def write_sweep(tmp_path, name, perquery):
    table = means(perquery).drop(columns='collection')
    path = tmp_path / f'{name}.csv'
    table.to_csv(path, index=False)
    perquery.drop(columns='collection').to_csv(analysis.per_query_path(path), index=False,
                                               compression={'method': 'gzip', 'mtime': 0})
    return path


def test_load_per_query_checks_its_csv(tmp_path):
    assert analysis.per_query_path('x/a.csv').as_posix() == 'x/a.perquery.csv.gz'
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    b = write_sweep(tmp_path, 'b', perquery[perquery.collection == 'b'])
    loaded = analysis.load_per_query({'a': a, 'b': [b]})
    assert len(loaded) == len(perquery)
    assert sorted(set(loaded.qid)) == ['00', '01', '02']  # read as text: no leading zero lost
    assert loaded.groupby('collection').qid.nunique().to_dict() == {'a': 3, 'b': 2}
    # a per-query file of another run: its means no longer give the CSV's values
    other = perquery[perquery.collection == 'a'].copy()
    other.loc[other.index[0], 'R@100'] += .3
    other.drop(columns='collection').to_csv(analysis.per_query_path(a), index=False, compression='gzip')
    with pytest.raises(ValueError, match=r'a\.perquery\.csv\.gz does not match .*a\.csv: S simulated sigma=1\.0 '
                                         r'noise_seed=0\.0 budget=100 differs or is missing \(1 rows\)'):
        analysis.load_per_query({'a': a})
    analysis.per_query_path(b).unlink()
    with pytest.raises(FileNotFoundError, match=r"no per-query values at .*b\.perquery\.csv\.gz for .*b\.csv "
                                                r"\(collection 'b'\): .*rerun the command in .*b\.csv\.json"):
        analysis.load_per_query({'b': b})
    # no CSV at all: said so, not that its per-query file is missing (whose record does not exist either)
    with pytest.raises(FileNotFoundError) as missing:
        analysis.load_per_query({'c': tmp_path / 'c.csv'})
    assert str(missing.value) == f"no sweep CSV at {tmp_path / 'c.csv'} (collection 'c')"


def test_qids_pandas_reads_as_missing_stay_text(tmp_path):
    # a collection's qids 'NA', 'nan', 'null' (any qid of the queries file is one): the per-query file was refused
    # as one with "3 rows have no qid; rerun the command", which no rerun could mend; MiniLM's missing sigma and
    # noise seed stay missing
    perquery = per_query_rows()
    perquery = perquery[perquery.collection == 'a']
    perquery = perquery.assign(qid=perquery.qid.map({'00': 'NA', '01': 'nan', '02': 'null'}))
    minilm = perquery[perquery.noise_seed == 0].assign(reranker='MiniLM', sigma=math.nan, noise_seed=math.nan)
    rows = pd.concat([perquery, minilm], ignore_index=True)
    loaded = analysis.load_per_query({'a': write_sweep(tmp_path, 'a', rows)})
    assert sorted(set(loaded.qid)) == ['NA', 'nan', 'null']
    assert loaded.qid.map(type).eq(str).all()
    assert loaded[loaded.reranker == 'MiniLM'][['sigma', 'noise_seed']].isna().all().all()
    assert len(loaded) == 18
    margins = analysis.baseline_margins(means(rows), 'S', ['B'], perquery=loaded, rerankers=['sigma=1'])
    # noise seeds averaged per query: S - B = (.1 + .1) / 2, (0 + .2) / 2, (.2 - .2) / 2 on nDCG@10
    assert margins.set_index('measure').loc['nDCG@10', 'p'] == pytest.approx(
        analysis.stratified_paired_test([[.1, .1, 0]]))


def test_sweep_verdict_paired(tmp_path, capsys):
    script = load_script('examples/sweep_verdict.py')
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    b = write_sweep(tmp_path, 'b', perquery[perquery.collection == 'b'])
    common = [f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B', '--rerankers', 'sigma=1']
    script.main(common)
    plain = capsys.readouterr().out
    assert '| p | verdict |' not in plain
    assert ' at p < ' not in plain
    script.main(common + ['--paired'])
    text = capsys.readouterr().out
    p = analysis.stratified_paired_test([[.1, .1, 0], [.1, 0]])
    low, high = analysis.stratified_paired_interval([[.1, .1, 0], [.1, 0]])
    # S: a (.6 + .6667) / 2, b (.6 + .5) / 2 -> .5917; B: a (.5 + .6333) / 2, b .5 -> .5333; per seed .1 and .0167
    assert ('| 100 | sigma=1 | nDCG@10 | B | 0.5333 | 0.5917 | +0.0583 | yes | +0.0167 | +0.1000 | +0.0667 | '
            f'+0.0500 | {low:+.4f} | {high:+.4f} | {p:.4f} | tie |') in text
    assert low < 0 < high
    assert '1 of 2 cells hold; 0 ahead, 2 tie, 0 behind at p < 0.05' in text
    script.main(common + ['--paired', '--alpha', '0.2'])
    assert '1 of 2 cells hold; 1 ahead, 0 tie, 1 behind at p < 0.2' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        script.main(common + ['--paired', '--alpha', '1'])
    assert '--alpha 1: the significance level must lie strictly between 0 and 1' in capsys.readouterr().err
    analysis.per_query_path(b).unlink()
    with pytest.raises(SystemExit, match='no per-query values at'):
        script.main(common + ['--paired'])


# the mutation run of session 16 (docs/testing.md, "The tenth run"): what the tests above left open


def test_a_per_query_cell_of_another_budget_or_reranker_does_not_count():
    perquery = per_query_rows()
    apart = {'nDCG@10': (perquery.system == 'B').astype(float)}  # S 0, B 1: a difference of its own
    noise = [perquery.assign(budget=200, **apart),  # same reranker, other budget
             perquery.assign(sigma=.5, **apart)]  # same budget, other reranker
    both = pd.concat([perquery, *noise], ignore_index=True)
    out = analysis.baseline_margins(means(both), 'S', ['B'], perquery=both, budgets=[100], rerankers=['sigma=1'])
    assert out.iloc[0].p == pytest.approx(analysis.stratified_paired_test([[.1, .1, 0], [.1, 0]]))


def test_verdict_at_the_level_and_without_a_baseline(monkeypatch):
    perquery = per_query_rows()
    p = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery).p.iloc[0]
    at = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery, alpha=p)
    assert at.verdict.iloc[0] == 'tie'  # p equal to the level is no evidence
    assert analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery,
                                     alpha=p * (1 + 1e-9)).verdict.iloc[0] == 'ahead'
    # per-query rows without the baseline: no test, and no verdict either way
    alone = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery[perquery.system == 'S'])
    assert alone.p.isna().all()
    assert alone.verdict.tolist() == ['-', '-']
    # ... or without one collection: the mean over collections cannot be tested on the others alone
    part = analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=perquery[perquery.collection == 'a'])
    assert part.p.isna().all()
    assert part.verdict.tolist() == ['-', '-']
    # a mean difference at exactly the tolerance with no spread is a tie (the tolerance made exact: .25)
    monkeypatch.setattr('pyterrier_garen._claims.TOLERANCE', .25)
    assert analysis.stratified_paired_test([[.25, .25], [.25, .25]]) == 1.0
    assert analysis.stratified_paired_test([[.5, .5], [.5, .5]]) == 0.0


def test_load_per_query_minilm_rows_missing_rows_and_small_differences(tmp_path):
    assert analysis.per_query_path('x/b.table').as_posix() == 'x/b.table.perquery.csv.gz'  # no .csv to drop
    perquery = per_query_rows()
    minilm = perquery[perquery.noise_seed == 0].assign(reranker='MiniLM', sigma=math.nan, noise_seed=math.nan)
    rows = pd.concat([perquery, minilm], ignore_index=True)
    a = write_sweep(tmp_path, 'a', rows[rows.collection == 'a'])
    loaded = analysis.load_per_query({'a': a})  # MiniLM rows (no sigma, no seed) are matched too
    assert (loaded.reranker == 'MiniLM').sum() == 6
    ours = analysis.baseline_margins(means(rows), 'S', ['B'], perquery=rows, rerankers=['MiniLM'])
    assert ours.iloc[0].p == pytest.approx(analysis.stratified_paired_test([[.1, 0, .2], [.1, .1]]))
    # a configuration the CSV has and the per-query file lacks
    side = analysis.per_query_path(a)
    part = rows[(rows.collection == 'a') & ~((rows.system == 'B') & (rows.noise_seed == 1))]
    part.drop(columns='collection').to_csv(side, index=False, compression='gzip')
    with pytest.raises(ValueError, match=r'B simulated sigma=1\.0 noise_seed=1\.0 budget=100 differs or is missing'):
        analysis.load_per_query({'a': a})
    # a mean that moves by 5e-9 (1.5e-8 on one of three queries): more than the check's 1e-9
    moved = rows[rows.collection == 'a'].copy()
    moved.loc[moved.index[0], 'nDCG@10'] += 1.5e-8
    moved.drop(columns='collection').to_csv(side, index=False, compression='gzip')
    with pytest.raises(ValueError, match='does not match'):
        analysis.load_per_query({'a': a})


def weighted_rows():
    """S, B1 and B2 at fusion weights .1 and 1 on collections c1 and c2 (three queries each), sigma 1, seed 0,
    budget 100. Per query the nDCG@10 values are mean - .01, mean, mean + .01 (S at its chosen weight, 1: the
    spread is wider, mean - .1, mean, mean + .1); R@100 is one value for every query."""
    means = {  # (weight, system, collection): (nDCG@10, R@100)
        (.1, 'S', 'c1'): (.50, .7), (.1, 'S', 'c2'): (.30, .7),
        (1., 'S', 'c1'): (.60, .7), (1., 'S', 'c2'): (.30, .7),
        (.1, 'B1', 'c1'): (.44, .6), (.1, 'B1', 'c2'): (.44, .6),
        (1., 'B1', 'c1'): (.40, .8), (1., 'B1', 'c2'): (.40, .8),
        (.1, 'B2', 'c1'): (.30, .7), (.1, 'B2', 'c2'): (.50, .7),
        (1., 'B2', 'c1'): (.70, .9),  # B2: no c2 at 1
    }
    out = {.1: [], 1.: []}
    for (w, system, collection), (ndcg, recall) in means.items():
        spread = .1 if (w, system) == (1., 'S') else .01
        for q, v in enumerate((ndcg - spread, ndcg, ndcg + spread)):
            out[w].append({'collection': collection, 'system': system, 'reranker': 'simulated', 'sigma': 1.0,
                           'noise_seed': 0.0, 'partition_seed': 42, 'budget': 100, 'qid': f'q{q}',
                           'nDCG@10': v, 'R@100': recall})
    return {w: pd.DataFrame(rows) for w, rows in out.items()}


def test_fusion_weight_margins_by_hand():
    perqueries = weighted_rows()
    tables = {w: means(frame) for w, frame in perqueries.items()}
    values, margins = analysis.fusion_weight_margins(tables, 'S', ['B1', 'B2'], perqueries=perqueries)
    values = values.set_index(['measure', 'system'])
    # nDCG@10, mean over c1 and c2: S .40 at .1, .45 at 1 -> 1; B1 .44 at .1, .40 at 1 -> .1; B2 .40 at .1, and no
    # value at 1 (c2 missing: the .70 of c1 alone must not win) -> .1
    assert values.loc[('nDCG@10', 'S'), [.1, 1.]].tolist() == pytest.approx([.40, .45])
    assert math.isnan(values.loc[('nDCG@10', 'B2'), 1.])
    assert values.best_weight.tolist() == [1., .1, .1, .1, 1., .1]  # nDCG@10: S B1 B2, then R@100: S B1 B2
    # R@100: S .7 at both weights -> the lighter, .1; B1 .6 / .8 -> 1; B2 .7 at .1 only -> .1
    ndcg, recall = (margins[margins.measure == m].iloc[0] for m in ('nDCG@10', 'R@100'))
    # S at 1 (.45) against the best baseline at its own weight: B1 at .1 (.44) beats B2 at .1 (.40): +.01; per
    # collection the best baseline of that collection: c1 .60 - max(.44, .30) = .16, c2 .30 - max(.44, .50) = -.20
    assert (ndcg.weight, ndcg.best, ndcg.best_weight) == (1., 'B1', .1)
    assert (ndcg.best_value, ndcg.value, ndcg.delta) == pytest.approx((.44, .45, .01))
    assert (ndcg['delta:c1'], ndcg['delta:c2']) == pytest.approx((.16, -.20))
    # paired over the chosen weights' queries: c1 S at 1 (.5 .6 .7) - B1 at .1 (.43 .44 .45) = .07 .16 .25;
    # c2 (.2 .3 .4) - (.43 .44 .45) = -.23 -.14 -.05; S's rows at .1 would give .06 .06 .06 and -.15 -.14 -.13
    assert ndcg.p == pytest.approx(analysis.stratified_paired_test([[.07, .16, .25], [-.23, -.14, -.05]]))
    assert ndcg.verdict == 'tie'
    # R@100: S at .1 (.7) against B1 at 1 (.8), the better of B1 and B2 (.7): -.1 on every query, so p = 0, behind
    assert (recall.weight, recall.best, recall.best_weight) == (.1, 'B1', 1.)
    assert recall.delta == pytest.approx(-.1)
    assert recall.verdict == 'behind'
    # without per-query rows: the same cells, no test columns
    plain = analysis.fusion_weight_margins(tables, 'S', ['B1', 'B2'])[1]
    assert 'p' not in plain.columns
    assert plain.delta.tolist() == pytest.approx([.01, -.1])


def test_fusion_weight_margins_refuses_what_it_cannot_weigh():
    tables = {w: means(frame) for w, frame in weighted_rows().items()}
    with pytest.raises(ValueError, match='no fusion weights'):
        analysis.fusion_weight_margins({}, 'S')
    with pytest.raises(ValueError, match='^fusion weight must be'):
        analysis.fusion_weight_margins({-1.: tables[.1]}, 'S')
    with pytest.raises(ValueError, match=r"the table of fusion weight 1 has no row of 'X'; its systems are "
                                         r"\['B1', 'B2', 'S'\]"):
        analysis.fusion_weight_margins({1.: tables[1.]}, 'X')
    with pytest.raises(ValueError, match=r'per-query rows are for fusion weights \[0\.1\], the tables for '
                                         r'\[0\.1, 1\.0\]'):
        analysis.fusion_weight_margins(tables, 'S', perqueries={.1: weighted_rows()[.1]})
    # a cell where the system has no complete weight is left out of the margins (B2 alone lacks c2 at 1)
    only_one = {1.: tables[1.]}
    values, margins = analysis.fusion_weight_margins(only_one, 'S', ['B1', 'B2'])
    assert len(margins) == 0
    assert values.best_weight.isna().tolist() == [False, False, True] * 2


def test_a_system_with_its_own_fusion_is_not_chosen_at_weight_0():
    """At weight 0 (no shared stage) GAREN+ runs its own fusion and the baselines none: fusion_weights.py called
    GAREN+ best at weight 0 and compared it, fused, with baselines that were not."""
    tables = {w: means(frame) for w, frame in weighted_rows().items()}
    # at weight 0, S is far ahead (its own fusion), B1 and B2 as at .1
    zero = tables[.1].copy()
    zero.loc[zero.system == 'S', 'nDCG@10'] = .9
    tables = {0.: zero, **tables}
    values, margins = analysis.fusion_weight_margins(tables, 'S', ['B1', 'B2'], own_fusion=['S'])
    values = values.set_index(['measure', 'system'])
    assert math.isnan(values.loc[('nDCG@10', 'S'), 0.])
    assert values.loc[('nDCG@10', 'B1'), 0.] == pytest.approx(.44)  # the others' weight 0 stands
    ndcg = margins[margins.measure == 'nDCG@10'].iloc[0]
    assert (ndcg.weight, ndcg.delta) == pytest.approx((1., .01))  # as without weight 0: S at 1 against B1
    assert ndcg.best_weight == 0.  # B1's .44 at 0 equals its .44 at .1: the lighter weight
    # a system not named in own_fusion is taken at weight 0 like any other
    fused = analysis.fusion_weight_margins(tables, 'S', ['B1', 'B2'], own_fusion=[])[1]
    assert fused[fused.measure == 'nDCG@10'].iloc[0].weight == 0.
    assert analysis.fusion_weight_margins(tables, 'S', ['B1', 'B2'])[1].equals(fused)  # the registry's, not S
    assert garen.system_names(own_fusion=True) == ['GAREN+']  # declared in the registry, beside its factory


def test_fusion_weights_command(tmp_path, capsys):
    script = load_script('examples/fusion_weights.py')
    perqueries = weighted_rows()
    args = []
    for w, frame in perqueries.items():
        for c in ('c1', 'c2'):
            part = frame[frame.collection == c]
            if len(part):
                args.append(f'{w:g}:{c}={write_sweep(tmp_path, f"w{w:g}-{c}", part)}')
    common = args + ['--system', 'S', '--baselines', 'B1', 'B2', '--margin-budgets', '100']
    script.main(common + ['--paired'])
    text = capsys.readouterr().out
    # the values by hand in test_fusion_weight_margins_by_hand: S .40 / .45, best 1; B2 has no value at 1
    assert '| 100 | sigma=1 | nDCG@10 | S | 0.4000 | 0.4500 | 1 |' in text
    assert '| 100 | sigma=1 | nDCG@10 | B2 | 0.4000 | - | 0.1 |' in text
    p = analysis.stratified_paired_test([[.07, .16, .25], [-.23, -.14, -.05]])
    assert '| 100 | sigma=1 | nDCG@10 | 1 | B1 | 0.1 | 0.4400 | 0.4500 | +0.0100 | yes |' in text
    assert f'{p:.4f} | tie |' in text
    assert '1 of 2 cells hold; 0 ahead, 1 tie, 1 behind at p < 0.05' in text
    assert '| 200 |' not in text  # a budget no sweep ran: no rows
    assert '| 1 | c1 |' in text
    assert 'no provenance record beside 4 of 4 files' in text
    script.main(common)
    assert '| p | verdict |' not in capsys.readouterr().out
    # weight 0: S named as running its own fusion there is left out at 0 and said to be
    zero = [a.replace('0.1:', '0:', 1) for a in args if a.startswith('0.1:')]
    script.main(zero + args + ['--system', 'S', '--baselines', 'B1', 'B2', '--margin-budgets', '100',
                               '--own-fusion', 'S'])
    text = capsys.readouterr().out
    assert ('weight 0 has no shared stage: S ran there with its own fusion, the others with none, so it is left out '
            'at weight 0 (-)') in text
    assert '| 100 | sigma=1 | nDCG@10 | S | - | 0.4000 | 0.4500 | 1 |' in text
    assert '| 100 | sigma=1 | nDCG@10 | B1 | 0.4400 | 0.4400 | 0.4000 | 0 |' in text
    with pytest.raises(SystemExit, match='expected WEIGHT:COLLECTION=PATH'):
        script.main([args[0].split(':', 1)[1]])
    with pytest.raises(SystemExit, match='expected WEIGHT:COLLECTION=PATH'):
        script.main(['nan:' + args[0].split(':', 1)[1]])
    with pytest.raises(SystemExit, match='every weight must name the same collections; got 0.1: c1, c2; 1: c1'):
        script.main([a for a in args if not a.startswith('1:c2')])
    # a weight its file's record contradicts (the sweep ran with --fusion 0.1, given as 1) is refused, naming both
    from pyterrier_garen._provenance import write_sidecar
    mislabelled = next(a for a in args if a.startswith('1:c1='))
    path = mislabelled.split('=', 1)[1]
    write_sidecar(path, command='python examples/strength_sweep.py --dataset c1 --fusion 0.1 --out x.csv')
    with pytest.raises(SystemExit) as refused:
        script.main(common)
    assert str(refused.value) == (f'error: 1:c1={path}: its record says the sweep ran with --fusion 0.1 (python '
                                  'examples/strength_sweep.py --dataset c1 --fusion 0.1 --out x.csv); give it as '
                                  f'0.1:c1={path}')
    write_sidecar(path, command='python examples/strength_sweep.py --dataset c1 --fusion=1 --out x.csv')
    script.main(common)  # the record agrees (written --fusion=1)
    assert '| 100 | sigma=1 | nDCG@10 | S | 0.4000 | 0.4500 | 1 |' in capsys.readouterr().out


@pytest.mark.parametrize(('command', 'weight'), [
    ('-', None), (None, None), ('python examples/strength_sweep.py --out x.csv', 0.0),
    ('python examples/strength_sweep.py --fusion 0.3 --tail-fusion 0.05 --out x.csv', 0.3),
    ("python examples/strength_sweep.py --fusion=3 --out 'a b.csv'", 3.0),
    ('python examples/strength_sweep.py --fusion', 0.0), ('python x.py --fusion W', None), ("python 'x.py", None)])
def test_the_weight_a_recorded_command_ran_with(command, weight):
    script = load_script('examples/fusion_weights.py')
    assert script.recorded_weight(command) == weight


def two_cell_rows():
    """GAREN+, GAR, SlideGAR and RGS at weights .1 and 1, collections c1 and c2, budgets 100 and 200, sigma 1 (seed
    0) and MiniLM, three queries each. Every cell has GAREN+ at .2 and the baselines at .3, except budget 200 with
    MiniLM: GAREN+ .50 / .60 (weights .1 / 1), GAR .55 / .52, SlideGAR .40 / .58, RGS .30 / .30. Per query the
    value is the mean - .02, the mean, the mean + .02; GAREN+ at 1 in that cell spreads by .05. R@100 is .7."""
    special = {('GAREN+', .1): .50, ('GAREN+', 1.): .60, ('GAR', .1): .55, ('GAR', 1.): .52,
               ('SlideGAR', .1): .40, ('SlideGAR', 1.): .58, ('RGS', .1): .30, ('RGS', 1.): .30}
    out = {.1: [], 1.: []}
    for w in out:
        for system in ('GAREN+', 'GAR', 'SlideGAR', 'RGS'):
            for collection in ('c1', 'c2'):
                for budget in (100, 200):
                    for r in ('sigma=1', 'MiniLM'):
                        mean = special[(system, w)] if (budget, r) == (200, 'MiniLM') else \
                            .2 if system == 'GAREN+' else .3
                        spread = .05 if (system, w, budget, r) == ('GAREN+', 1., 200, 'MiniLM') else .02
                        for q, v in enumerate((mean - spread, mean, mean + spread)):
                            out[w].append({'collection': collection, 'system': system,
                                           'reranker': 'MiniLM' if r == 'MiniLM' else 'simulated',
                                           'sigma': math.nan if r == 'MiniLM' else 1.0,
                                           'noise_seed': math.nan if r == 'MiniLM' else 0.0,
                                           'partition_seed': 42, 'budget': budget, 'qid': f'q{q}',
                                           'nDCG@10': v, 'R@100': .7})
    return {w: pd.DataFrame(rows) for w, rows in out.items()}


def test_fusion_weight_margins_picks_each_cell_by_its_own_rows():
    perqueries = two_cell_rows()
    tables = {w: means(frame) for w, frame in perqueries.items()}
    # the defaults: GAREN+ against GAR, SlideGAR and RGS; budget 200 with MiniLM only; sigma 2 is in no table
    values, margins = analysis.fusion_weight_margins(tables, budgets=[200], rerankers=['sigma=2', 'MiniLM'],
                                                     perqueries=perqueries)
    assert set(values.budget) == {200}
    assert set(values.reranker) == {'MiniLM'}
    ndcg = margins[margins.measure == 'nDCG@10'].iloc[0]
    # GAREN+ best at 1 (.60); GAR at .1 (.55), SlideGAR at 1 (.58), RGS .30 at both -> .1: SlideGAR at 1, +.02
    assert (ndcg.weight, ndcg.best, ndcg.best_weight) == (1., 'SlideGAR', 1.)
    assert (ndcg.best_value, ndcg.value, ndcg.delta) == pytest.approx((.58, .60, .02))
    # per query (.55 .60 .65) - (.56 .58 .60) = -.01 .02 .05 in both collections; p about .18: a tie at .05
    deltas = [[-.01, .02, .05], [-.01, .02, .05]]
    assert ndcg.p == pytest.approx(analysis.stratified_paired_test(deltas))
    assert .05 < ndcg.p < .2
    assert ndcg.verdict == 'tie'
    # alpha reaches the test: at .2 the same margin is ahead
    lenient = analysis.fusion_weight_margins(tables, budgets=[200], rerankers=['MiniLM'], perqueries=perqueries,
                                             alpha=.2)[1]
    assert lenient.verdict.tolist() == ['ahead', 'tie']  # R@100: .7 for all, nothing differs
    # every other cell: GAREN+ .2 against .3 at both weights, -.1
    rest = analysis.fusion_weight_margins(tables, budgets=[100], rerankers=['sigma=1'])[1]
    assert rest.delta.tolist() == pytest.approx([-.1, 0.])
    assert rest.best_weight.tolist() == [.1, .1]  # ties at every weight: the lighter
    # nothing asked for that the tables have: empty tables with their columns
    values, margins = analysis.fusion_weight_margins(tables, budgets=[400])
    assert list(values.columns) == ['budget', 'reranker', 'measure', 'system', .1, 1., 'best_weight']
    assert values.empty
    assert margins.empty
    assert list(margins.columns[:6]) == ['budget', 'reranker', 'measure', 'weight', 'best', 'best_weight']
