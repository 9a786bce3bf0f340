"""Margins at no more reranker work (``analysis.cost_matched_margins``, ``examples/cost_matched.py``), pinned by hand.

Every expected value is worked out in the comments from the toy rows and costs; the paired test of one collection is
also checked against scipy's own paired t-test.
"""
import math

import pandas as pd
import pytest
from scipy import stats

from pyterrier_garen import analysis

from _scripts import load_script
from test_claims import rows

# documents sent per query: GAREN+ 80 / 180 / 380 at budgets 50 / 100 / 200 in both collections;
# RGS 250 / 420 / 600 in c1 and 70 / 170 / 500 in c2; SlideGAR 90 / 182 / 389 in c1 and 90 / 178 / 389 in c2
COSTS = pd.DataFrame(
    [(c, 'GAREN+', b, s) for c in ('c1', 'c2') for b, s in ((50, 80), (100, 180), (200, 380))]
    + [('c1', 'RGS', b, s) for b, s in ((50, 250), (100, 420), (200, 600))]
    + [('c2', 'RGS', b, s) for b, s in ((50, 70), (100, 170), (200, 500))]
    + [('c1', 'SlideGAR', b, s) for b, s in ((50, 90), (100, 182), (200, 389))]
    + [('c2', 'SlideGAR', b, s) for b, s in ((50, 90), (100, 178), (200, 389))],
    columns=['collection', 'system', 'budget', 'sent']).assign(calls=1.0, distinct=0.0)


def table():
    """nDCG@10 of GAREN+ rises with the budget (.50 / .60 / .70 in c1, .40 / .45 / .50 in c2); R@100 is nDCG + .2.
    RGS: .55 / .65 / .66 in c1 and .42 / .52 / .60 in c2. SlideGAR: .52 / .58 / .68 in c1, .41 / .44 / .49 in c2.
    One noise seed (0), one partition (42), sigma 1."""
    garen = {'c1': (.50, .60, .70), 'c2': (.40, .45, .50)}
    rgs = {'c1': (.55, .65, .66), 'c2': (.42, .52, .60)}
    slide = {'c1': (.52, .58, .68), 'c2': (.41, .44, .49)}
    specs = []
    for name, values in (('GAREN+', garen), ('RGS', rgs), ('SlideGAR', slide)):
        for c, triple in values.items():
            for budget, v in zip((50, 100, 200), triple):
                specs.append((c, name, 'sigma=1', 0, 42, budget, v, v + .2))
    return rows(*specs)


def test_each_baseline_against_the_system_at_its_largest_budget_of_no_more_cost():
    out = analysis.cost_matched_margins(table(), COSTS, 'GAREN+', ['RGS', 'SlideGAR'], measures=['nDCG@10'])
    got = {(r['baseline'], r['budget']): r for _, r in out.iterrows()}
    # RGS at 50: c2's RGS sends 70, below GAREN+'s smallest cost (80): the cell is left out
    assert sorted(got) == [('RGS', 100), ('RGS', 200), ('SlideGAR', 50), ('SlideGAR', 100), ('SlideGAR', 200)]
    # RGS at 100: c1 allows 420 -> GAREN+ at 200 (380); c2 allows 170 -> GAREN+ at 50 (80)
    row = got[('RGS', 100)]
    assert row.system_budget == 'c1:200 c2:50'
    assert (row.baseline_sent, row.system_sent) == (pytest.approx((420 + 170) / 2), pytest.approx((380 + 80) / 2))
    # GAREN+ (.70 + .40) / 2 = .55 against RGS (.65 + .52) / 2 = .585: -.035 (c1 +.05, c2 -.12)
    assert (row.value, row.baseline_value, row.delta) == (pytest.approx(.55), pytest.approx(.585),
                                                          pytest.approx(-.035))
    assert not row.holds
    assert (row['delta:c1'], row['delta:c2']) == (pytest.approx(.05), pytest.approx(-.12))
    # RGS at 200: 600 and 500 both allow GAREN+ at 200 (380): .60 against .63
    row = got[('RGS', 200)]
    assert (row.system_budget, row.value, row.baseline_value) == (200, pytest.approx(.60), pytest.approx(.63))
    # SlideGAR at 100: c1 allows 182 -> GAREN+ 100 (180); c2 allows 178 < 180 -> GAREN+ 50 (80)
    row = got[('SlideGAR', 100)]
    assert row.system_budget == 'c1:100 c2:50'
    assert (row.value, row.baseline_value) == (pytest.approx((.60 + .40) / 2), pytest.approx((.58 + .44) / 2))
    # SlideGAR at 50 (90 in both): GAREN+ 50 (80): (.50 + .40) / 2 = .45 against .465
    row = got[('SlideGAR', 50)]
    assert (row.system_budget, row.value, row.baseline_value) == (50, pytest.approx(.45), pytest.approx(.465))
    assert list(out.columns) == ['baseline', 'budget', 'reranker', 'measure', 'system_budget', 'baseline_sent',
                                 'system_sent', 'baseline_value', 'value', 'delta', 'holds', 'delta:c1', 'delta:c2']


def test_slack_lets_the_system_send_a_share_more():
    # with slack .02, c2's SlideGAR at 100 allows 178 * 1.02 = 181.56 >= 180: GAREN+ at 100 in both collections;
    # .0112 is not enough (179.99 < 180)
    out = analysis.cost_matched_margins(table(), COSTS, 'GAREN+', ['SlideGAR'], budgets=[100], measures=['R@100'],
                                        slack=.02)
    assert out.system_budget.tolist() == [100]
    # R@100 = nDCG@10 + .2: GAREN+ (.80 + .65) / 2 = .725, SlideGAR (.78 + .64) / 2 = .71
    assert (out.value[0], out.baseline_value[0], out.delta[0]) == (pytest.approx(.725), pytest.approx(.71),
                                                                    pytest.approx(.015))
    assert bool(out.holds[0])
    tight = analysis.cost_matched_margins(table(), COSTS, 'GAREN+', ['SlideGAR'], budgets=[100], measures=['R@100'],
                                          slack=.0112)
    assert tight.system_budget.tolist() == ['c1:100 c2:50']


def test_the_paired_test_is_per_query_at_the_matched_budgets():
    """One collection, two noise seeds: per query, GAREN+ at 200 minus RGS at 100, averaged over the seeds."""
    specs, per = [], []
    ours = {0: [.5, .7, .2, .9], 1: [.6, .7, .3, .8]}    # GAREN+ at 200, per query, per noise seed
    theirs = {0: [.4, .6, .4, .5], 1: [.5, .8, .2, .6]}  # RGS at 100
    for seed in (0, 1):
        for name, budget, values in (('GAREN+', 200, ours[seed]), ('RGS', 100, theirs[seed]),
                                     ('GAREN+', 100, [0.] * 4), ('GAREN+', 50, [0.] * 4)):
            mean = sum(values) / 4
            specs.append(('c1', name, 'sigma=1', seed, 42, budget, mean, mean))
            per += [{'collection': 'c1', 'system': name, 'reranker': 'simulated', 'sigma': 1.0,
                     'noise_seed': float(seed), 'partition_seed': 42, 'budget': budget, 'qid': f'q{i}',
                     'nDCG@10': v, 'R@100': v} for i, v in enumerate(values)]
    costs = COSTS[COSTS.collection == 'c1']
    out = analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['RGS'], budgets=[100],
                                        measures=['nDCG@10'], perquery=pd.DataFrame(per))
    # per query (seed 0, seed 1): q0 (.1, .1) q1 (.1, -.1) q2 (-.2, .1) q3 (.4, .2) -> means .1, 0, -.05, .3
    diffs = [.1, 0., -.05, .3]
    assert out.system_budget.tolist() == [200]
    assert out.delta[0] == pytest.approx(sum(diffs) / 4)
    expected = stats.ttest_1samp(diffs, 0).pvalue
    assert out.p[0] == pytest.approx(expected)
    assert out.verdict[0] == ('tie' if expected >= .05 else 'ahead')
    low, high = stats.t.interval(.95, 3, loc=sum(diffs) / 4, scale=stats.sem(diffs))
    assert (out.low[0], out.high[0]) == (pytest.approx(low), pytest.approx(high))


def test_a_bad_cost_table_is_refused_naming_the_problem():
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), COSTS.drop(columns='sent'))
    assert str(info.value) == ('the cost table has no column sent; write it with bench/reranker_load.py --out '
                               '(collection, budget, system, sent, ...)')
    missing = COSTS[~((COSTS.system == 'RGS') & (COSTS.budget == 200) & (COSTS.collection == 'c2'))]
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), missing, 'GAREN+', ['RGS'])
    assert str(info.value) == ('the cost table has no row for RGS at budget 200 on c2 (for sigma=1 or for every '
                               'reranker); measure it with bench/reranker_load.py --out (the same collections, '
                               'systems and budgets)')
    twice = pd.concat([COSTS, COSTS.iloc[[0]].assign(sent=81)], ignore_index=True)
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), twice)
    assert str(info.value) == ('the cost table gives GAREN+ at budget 50 on c1 two costs (80 and 81); keep one '
                               'measurement per system and budget')
    negative = COSTS.assign(sent=COSTS.sent.where(COSTS.index != 3, -1))
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), negative)
    assert str(info.value) == ("the cost table's sent must be a number of documents >= 0; got -1 for GAREN+ at "
                               'budget 50 on c2')
    with pytest.raises(ValueError, match='slack must be'):
        analysis.cost_matched_margins(table(), COSTS, slack=-.1)
    # an exact duplicate row is one measurement
    again = pd.concat([COSTS, COSTS.iloc[[0]]], ignore_index=True)
    assert len(analysis.cost_matched_margins(table(), again, 'GAREN+', ['RGS'])) == 4


def test_the_command(tmp_path, capsys):
    script = load_script('examples/cost_matched.py')
    frame = table().drop(columns='collection')
    files = []
    for c in ('c1', 'c2'):
        path = tmp_path / f'{c}.csv'
        table()[table().collection == c].drop(columns='collection').to_csv(path, index=False)
        files.append(f'{c}={path}')
    assert len(frame) == 18
    costs = tmp_path / 'costs.csv'
    COSTS.to_csv(costs, index=False)
    script.main([*files, '--costs', str(costs), '--system', 'GAREN+', '--baselines', 'RGS', 'SlideGAR',
                 '--rerankers', 'sigma=1', '--budgets', '100'])
    out = capsys.readouterr().out
    assert '| RGS | 100 | sigma=1 | nDCG@10 | c1:200 c2:50 | 295.0000 | 230.0000 | 0.5850 | 0.5500 | -0.0350 | no |' \
        in out
    assert 'holds in 0 of 4 cells' in out
    # a second cost file with RGS's own cost under sigma 1 on c2 (400): GAREN+ runs 200 in both collections
    own = tmp_path / 'rgs-sigma1.csv'
    pd.DataFrame([('c2', 'RGS', 100, 400., 'sigma=1')],
                 columns=['collection', 'system', 'budget', 'sent', 'reranker']).to_csv(own, index=False)
    script.main([*files, '--costs', str(costs), str(own), '--system', 'GAREN+', '--baselines', 'RGS',
                 '--rerankers', 'sigma=1', '--budgets', '100'])
    out = capsys.readouterr().out
    assert '| RGS | 100 | sigma=1 | nDCG@10 | 200 | 410.0000 | 380.0000 | 0.5850 | 0.6000 | +0.0150 | yes |' in out
    # RGS at 50 in c2 sends 70, below GAREN+'s smallest cost (80): no cell, and the table says why
    script.main([*files, '--costs', str(costs), '--baselines', 'RGS', '--rerankers', 'sigma=1', '--budgets', '50'])
    assert "no cell: in some collection GAREN+'s smallest budget already sends more documents than the baseline at " \
        'each budget asked for' in capsys.readouterr().out
    # without --baselines, the default three less the system itself (no SlideGAR-against-SlideGAR refusal)
    script.main([*files, '--costs', str(costs), '--system', 'SlideGAR', '--rerankers', 'sigma=1', '--budgets', '100'])
    assert 'SlideGAR at no more documents sent than each of GAR, RGS' in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        script.main([*files, '--costs', str(tmp_path / 'none.csv')])
    assert 'none.csv' in str(exit_.value)
    assert math.isfinite(COSTS.sent.sum())


def test_edges_of_the_match_equal_costs_ties_and_cells_left_out():
    specs = [
        # c1 and c2: GAREN+ at 50 sends 80, exactly what SlideGAR sends at 50 after this change: allowed (<=)
        *[(c, 'GAREN+', r, 0, 42, b, v, v) for c in ('c1', 'c2') for r in ('sigma=0.5', 'sigma=1')
          for b, v in ((50, .5), (100, .6))],
        # SlideGAR equals GAREN+ at 50: the margin is 0 and holds
        *[(c, 'SlideGAR', r, 0, 42, 50, .5, .5) for c in ('c1', 'c2') for r in ('sigma=0.5', 'sigma=1')],
        # RGS at 100 ran with sigma .5 in c1 only: that cell is left out (and needs no cost), sigma 1 is not
        ('c1', 'RGS', 'sigma=0.5', 0, 42, 100, .9, .9),
        *[(c, 'RGS', 'sigma=1', 0, 42, 100, .7, .7) for c in ('c1', 'c2')],
    ]
    costs = pd.concat([COSTS[COSTS.system != 'SlideGAR'],
                       pd.DataFrame([(c, 'SlideGAR', 50, 80.) for c in ('c1', 'c2')],
                                    columns=['collection', 'system', 'budget', 'sent'])], ignore_index=True)
    out = analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['RGS', 'SlideGAR'], measures=['nDCG@10'])
    assert list(zip(out.baseline, out.budget, out.reranker, out.system_budget)) == [
        # RGS at 100 with sigma 1: c1 allows 420 -> GAREN+ 100 (180; 200 was not run); c2 allows 170 -> GAREN+ 50
        ('RGS', 100, 'sigma=1', 'c1:100 c2:50'),
        ('SlideGAR', 50, 'sigma=0.5', 50), ('SlideGAR', 50, 'sigma=1', 50)]
    assert out.delta.tolist()[1:] == [0.0, 0.0]
    assert out.holds.tolist() == [False, True, True]  # RGS: (.6 + .5) / 2 - .7 = -.15
    # only the rerankers asked for
    only = analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['SlideGAR'], rerankers=['sigma=1'],
                                         measures=['nDCG@10'])
    assert only.reranker.tolist() == ['sigma=1']
    # nothing to compare: the columns all the same
    none = analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['GAR'], measures=['nDCG@10'])
    assert none.empty
    assert list(none.columns) == ['baseline', 'budget', 'reranker', 'measure', 'system_budget', 'baseline_sent',
                                  'system_sent', 'baseline_value', 'value', 'delta', 'holds', 'delta:c1', 'delta:c2']


def test_alpha_sets_the_verdict_and_the_interval():
    specs, per = [], []
    for name, budget, values in (('GAREN+', 100, [.5, .7, .3, .8]), ('SlideGAR', 100, [.4, .6, .1, .6])):
        mean = sum(values) / 4
        specs.append(('c1', name, 'sigma=1', 0, 42, budget, mean, mean))
        per += [{'collection': 'c1', 'system': name, 'reranker': 'simulated', 'sigma': 1.0, 'noise_seed': 0.0,
                 'partition_seed': 42, 'budget': budget, 'qid': f'q{i}', 'nDCG@10': v, 'R@100': v}
                for i, v in enumerate(values)]
    diffs = [.1, .1, .2, .2]  # mean .15, p of the paired test about .014
    p = stats.ttest_1samp(diffs, 0).pvalue
    assert .01 < p < .05
    for alpha, verdict in ((.05, 'ahead'), (.01, 'tie')):
        out = analysis.cost_matched_margins(rows(*specs), COSTS[COSTS.collection == 'c1'], 'GAREN+', ['SlideGAR'],
                                            measures=['nDCG@10'], perquery=pd.DataFrame(per), alpha=alpha)
        assert (out.verdict[0], out.p[0]) == (verdict, pytest.approx(p))
        low, high = stats.t.interval(1 - alpha, 3, loc=.15, scale=stats.sem(diffs))
        assert (out.low[0], out.high[0]) == (pytest.approx(low), pytest.approx(high))
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError) as info:
            analysis.cost_matched_margins(rows(*specs), COSTS, alpha=bad)
        assert str(info.value).startswith('alpha must be')
        assert 'the significance level, e.g. 0.05' in str(info.value)
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(rows(*specs), COSTS, slack=-.1)
    assert "the share of the baseline's cost the system may send beyond it" in str(info.value)


def test_the_cost_table_is_read_strictly():
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), {'sent': [1]})
    assert str(info.value).startswith('the cost table has no column collection, system, budget, sent;')
    words = COSTS.astype({'sent': object})
    words.loc[2, 'sent'] = 'many'
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), words)
    assert str(info.value) == ("the cost table's sent must be a number of documents >= 0; got many for GAREN+ at "
                               'budget 200 on c1')
    # a cost of 0 or below 1 is a cost (a system that sends nothing)
    free = pd.concat([COSTS, pd.DataFrame([('c1', 'BM25', 100, 0.), ('c2', 'BM25', 100, .5)],
                                          columns=['collection', 'system', 'budget', 'sent'])], ignore_index=True)
    assert len(analysis.cost_matched_margins(table(), free, 'GAREN+', ['RGS'])) == 4
    # the same cost written twice agrees to 1e-9; 1000 and 1000.005 are two measurements
    for extra, refused in ((1e-10, False), (5e-9, True), (.005, True)):
        twice = pd.concat([COSTS, COSTS.iloc[[0]].assign(sent=80 + extra)], ignore_index=True)
        if refused:
            with pytest.raises(ValueError, match='two costs'):
                analysis.cost_matched_margins(table(), twice)
        else:
            analysis.cost_matched_margins(table(), twice)
    big = COSTS.assign(sent=COSTS.sent * 1000 / 80)
    with pytest.raises(ValueError, match=r'two costs \(1000 and 1000\.005\)'):
        analysis.cost_matched_margins(table(), pd.concat([big, big.iloc[[0]].assign(sent=1000.005)]))


def test_budget_values_average_partitions_then_seeds_then_collections():
    specs = [
        # c1, seed 0: partitions 42 and 43 (.4 and .6 -> .5); seed 1: .7 -> c1 = (.5 + .7) / 2 = .6
        ('c1', 'GAREN+', 'sigma=1', 0, 42, 100, .4, 0.), ('c1', 'GAREN+', 'sigma=1', 0, 43, 100, .6, 0.),
        ('c1', 'GAREN+', 'sigma=1', 1, 42, 100, .7, 0.),
        # c2: .2 -> the mean over collections (.6 + .2) / 2 = .4, not the mean of the four rows (.475)
        ('c2', 'GAREN+', 'sigma=1', 0, 42, 100, .2, 0.),
        # budget 200 in c1 only: NaN (not every collection); RGS at 100 in both: (.3 + .5) / 2
        ('c1', 'GAREN+', 'sigma=1', 0, 42, 200, .9, 0.),
        ('c1', 'RGS', 'sigma=1', 0, 42, 100, .3, 0.), ('c2', 'RGS', 'sigma=1', 0, 42, 100, .5, 0.),
        ('c1', 'RGS', 'MiniLM', 0, 42, 100, .1, 0.), ('c2', 'RGS', 'MiniLM', 0, 42, 100, .3, 0.),
    ]
    out = analysis.budget_values(rows(*specs), ['RGS', 'GAREN+', 'GAR'], 'nDCG@10')
    assert list(out.columns) == ['reranker', 'system', 100, 200]
    assert out[['reranker', 'system']].values.tolist() == [['sigma=1', 'RGS'], ['sigma=1', 'GAREN+'],
                                                           ['MiniLM', 'RGS']]
    assert out[100].tolist() == [pytest.approx(.4), pytest.approx(.4), pytest.approx(.2)]
    assert math.isnan(out[200][1])
    assert math.isnan(out[200][0])
    only = analysis.budget_values(rows(*specs), ['RGS'], 'nDCG@10', rerankers=['MiniLM'])
    assert only.values.tolist() == [['MiniLM', 'RGS', pytest.approx(.2)]]


def _per_query(collection, name, budget, seed, values):
    return [{'collection': collection, 'system': name, 'reranker': 'simulated', 'sigma': 1.0,
             'noise_seed': float(seed), 'partition_seed': 42, 'budget': budget, 'qid': f'q{i}', 'nDCG@10': v,
             'R@100': v} for i, v in enumerate(values)]


def test_two_collections_are_tested_apart_with_the_same_qids():
    """Both collections number their queries q0.. : each collection's differences are its own (a stratum each)."""
    specs, per = [], []
    values = {('c1', 'GAREN+'): [.5, .7, .2], ('c1', 'RGS'): [.4, .6, .4],
              ('c2', 'GAREN+'): [.9, .8, .7, .6], ('c2', 'RGS'): [.6, .6, .6, .6]}
    for (c, name), vals in values.items():
        budget = 200 if name == 'GAREN+' and c == 'c1' else 100 if name == 'RGS' else 50
        mean = sum(vals) / len(vals)
        specs.append((c, name, 'sigma=1', 0, 42, budget, mean, mean))
        per += _per_query(c, name, budget, 0, vals)
    out = analysis.cost_matched_margins(rows(*specs), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'],
                                        perquery=pd.DataFrame(per))
    # c1: RGS at 100 (420) -> GAREN+ at 200; c2: RGS at 100 (170) -> GAREN+ at 50
    assert out.system_budget.tolist() == ['c1:200 c2:50']
    c1, c2 = [.1, .1, -.2], [.3, .2, .1, 0.]
    assert out.p[0] == pytest.approx(analysis.stratified_paired_test([c1, c2]))
    assert out.delta[0] == pytest.approx((sum(c1) / 3 + sum(c2) / 4) / 2)
    # without c2's per-query rows there is no test: '-'
    missing = pd.DataFrame([r for r in per if r['collection'] == 'c1'])
    out = analysis.cost_matched_margins(rows(*specs), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'],
                                        perquery=missing)
    assert out.verdict.tolist() == ['-']
    assert math.isnan(out.p[0])


def test_defaults_seeds_a_baseline_lacks_and_the_row_a_bad_cost_names():
    # the defaults: GAREN+ against GAR, SlideGAR and RGS (no GAR rows here), both measures, every budget
    out = analysis.cost_matched_margins(table(), COSTS)
    assert sorted(set(out.baseline)) == ['RGS', 'SlideGAR']
    assert len(out) == 2 * 5  # RGS at 100 and 200, SlideGAR at 50, 100 and 200; nDCG@10 and R@100
    # RGS ran noise seed 1 only where GAREN+ ran seed 0: no pair, which is refused (as a seed RGS lacks among
    # several would be), naming the cell; with the pair there the cell is kept
    specs = [*[('c1', 'GAREN+', r, 0, 42, 100, .5, .5) for r in ('sigma=0.5', 'sigma=1')],
             ('c1', 'RGS', 'sigma=0.5', 1, 42, 100, .4, .4), ('c1', 'RGS', 'sigma=1', 0, 42, 100, .4, .4)]
    with pytest.raises(ValueError, match=r'^c1: RGS with sigma=0\.5 \(RGS at budget 100, GAREN\+ at 100\) has no run '
                                         r'with noise seed 0, which GAREN\+ has'):
        analysis.cost_matched_margins(rows(*specs), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'])
    out = analysis.cost_matched_margins(rows(*specs), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'],
                                        rerankers=['sigma=1'])
    assert out.reranker.tolist() == ['sigma=1']
    # a cost of 0 before the negative one: the message names the negative one
    bad = pd.concat([pd.DataFrame([('c1', 'BM25', 100, 0.)], columns=['collection', 'system', 'budget', 'sent']),
                     COSTS.assign(sent=COSTS.sent.where(COSTS.index != 5, -2))], ignore_index=True)
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), bad)
    assert str(info.value).endswith('got -2.0 for GAREN+ at budget 200 on c2')


def test_rows_only_where_both_ran_and_values_for_every_system_asked():
    # GAREN+ did not run c2 with sigma 1: no cell there, and RGS's c2 cost is not needed
    specs = [('c1', 'GAREN+', 'sigma=1', 0, 42, 100, .5, .5), ('c1', 'RGS', 'sigma=1', 0, 42, 100, .4, .4),
             ('c2', 'RGS', 'sigma=1', 0, 42, 100, .4, .4)]
    costs = COSTS[~((COSTS.collection == 'c2') & (COSTS.system == 'RGS'))]
    assert analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['RGS']).empty
    # budget_values: an absent system between two present ones leaves the later one in; nothing asked, no rows
    values = analysis.budget_values(rows(*specs), ['RGS', 'GAR', 'GAREN+'])
    assert values.system.tolist() == ['RGS', 'GAREN+']  # GAREN+ lacks c2: NaN, but a row
    assert values[100].tolist()[0] == pytest.approx(.4)
    assert math.isnan(values[100].tolist()[1])
    empty = analysis.budget_values(rows(*specs), ['GAR'], 'R@100')
    assert empty.empty
    assert list(empty.columns) == ['reranker', 'system']


def test_a_cost_of_one_reranker_comes_before_the_cost_for_every_reranker():
    """RGS's work depends on the reranker (it re-ranks its queue after every expansion); a row naming a reranker
    holds for it, a row without one for every other."""
    specs = [(c, name, r, 0, 42, b, v, v) for c in ('c1', 'c2') for r in ('sigma=0.25', 'sigma=1')
             for name, b, v in (('GAREN+', 100, .6), ('GAREN+', 200, .7), ('RGS', 100, .65))]
    # with sigma .25, c2's RGS sends 400 at budget 100 (its own row): GAREN+ runs 200 there, as in c1 (420)
    own = pd.DataFrame([('c2', 'RGS', 100, 400., 'sigma=0.25')],
                       columns=['collection', 'system', 'budget', 'sent', 'reranker'])
    costs = pd.concat([COSTS.assign(reranker=None), own], ignore_index=True)
    out = analysis.cost_matched_margins(rows(*specs), costs, 'GAREN+', ['RGS'], measures=['nDCG@10'])
    # sigma 1 has no row of its own: c2's RGS sends 170 (the row for every reranker), GAREN+ runs no budget there
    assert list(zip(out.reranker, out.system_budget)) == [('sigma=0.25', 200)]
    assert out.baseline_sent.tolist() == [pytest.approx((420 + 400) / 2)]
    # two costs of one row with the same reranker are refused, naming it
    twice = pd.concat([costs, own.assign(sent=401.)], ignore_index=True)
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(rows(*specs), twice, 'GAREN+', ['RGS'])
    assert str(info.value) == ('the cost table gives RGS at budget 100 on c2 with sigma=0.25 two costs (400 and 401); '
                               'keep one measurement per system and budget')


def test_a_collection_the_cost_table_names_otherwise_is_named_with_what_it_holds(tmp_path, capsys):
    # bench/reranker_load.py --collections /data/mine writes the folder's path; the sweep was named mine=...: the
    # error blamed a missing measurement ('measure it with bench/reranker_load.py') that the table holds
    by_path = COSTS.assign(collection=COSTS.collection.map({'c1': '/data/c1', 'c2': '/data/c2'}))
    with pytest.raises(ValueError) as info:
        analysis.cost_matched_margins(table(), by_path, 'GAREN+', ['RGS'])
    assert str(info.value) == ("the cost table has no row for the collection 'c1': it names '/data/c1', '/data/c2'; "
                               'give the collection the name the cost table gives it (bench/reranker_load.py '
                               '--collections writes each as given, a folder by its path), or rename it in the '
                               'cost table')
    # a collection named '007' stays '007' in the cost file the command reads (it was read as the number 7)
    script = load_script('examples/cost_matched.py')
    path = tmp_path / 'c1.csv'
    table()[table().collection == 'c1'].drop(columns='collection').to_csv(path, index=False)
    costs = tmp_path / 'costs.csv'
    COSTS[COSTS.collection == 'c1'].assign(collection='007').to_csv(costs, index=False)
    script.main([f'007={path}', '--costs', str(costs), '--baselines', 'RGS', '--rerankers', 'sigma=1', '--budgets',
                 '100'])
    # c1 alone: RGS at 100 sends 420 -> GAREN+ at 200 (380): .70 against .65
    assert '| RGS | 100 | sigma=1 | nDCG@10 | 200 | 420.0000 | 380.0000 | 0.6500 | 0.7000 | +0.0500 | yes |' \
        in capsys.readouterr().out
