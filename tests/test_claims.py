"""Issue 16's claims over sweep tables (pyterrier_garen._claims, examples/sweep_verdict.py), pinned by hand.

Every expected value below is worked out in the comments from the toy rows, not by running the code.
"""
import math

import pandas as pd
import pytest

from pyterrier_garen import analysis

from _scripts import load_script

NAN = math.nan


def rows(*specs):
    """(collection, system, reranker label, noise seed, partition seed, budget, nDCG@10, R@100) -> sweep rows."""
    out = []
    for collection, system, r, seed, pseed, budget, ndcg, recall in specs:
        minilm = r == 'MiniLM'
        out.append({'collection': collection, 'system': system, 'reranker': 'MiniLM' if minilm else 'simulated',
                    'sigma': NAN if minilm else float(r.split('=')[1]), 'noise_seed': NAN if minilm else float(seed),
                    'partition_seed': pseed, 'budget': budget, 'nDCG@10': ndcg, 'R@100': recall})
    return pd.DataFrame(out)


def test_monotonicity_by_hand():
    table = rows(
        # falls by .05 from 100 to 200
        ('a', 'GAREN+', 'sigma=0.5', 0, 42, 50, 0, .50), ('a', 'GAREN+', 'sigma=0.5', 0, 42, 100, 0, .60),
        ('a', 'GAREN+', 'sigma=0.5', 0, 42, 200, 0, .55),
        # two partitions: (.4 + .6) / 2 = .5, (.5 + .5) / 2 = .5, (.5 + .7) / 2 = .6: a flat step is no fall
        ('a', 'GAREN', 'MiniLM', None, 42, 50, 0, .4), ('a', 'GAREN', 'MiniLM', None, 43, 50, 0, .6),
        ('a', 'GAREN', 'MiniLM', None, 42, 100, 0, .5), ('a', 'GAREN', 'MiniLM', None, 43, 100, 0, .5),
        ('a', 'GAREN', 'MiniLM', None, 42, 200, 0, .5), ('a', 'GAREN', 'MiniLM', None, 43, 200, 0, .7),
        # budgets 50 and 200 only: one step of +.1, budget 100 shown as missing
        ('b', 'GAREN+', 'sigma=1', 1, 42, 50, 0, .3), ('b', 'GAREN+', 'sigma=1', 1, 42, 200, 0, .4),
        # one budget: nothing to check; another system: not asked for
        ('b', 'GAREN+', 'sigma=2', 1, 42, 100, 0, .9),
        ('a', 'GAR', 'sigma=0.5', 0, 42, 50, 0, .9), ('a', 'GAR', 'sigma=0.5', 0, 42, 100, 0, .1))
    out = analysis.budget_monotonicity(table)
    assert list(out.columns) == ['collection', 'system', 'reranker', 'noise_seed', 50, 100, 200, 'worst_step',
                                 'never_falls']
    got = {(r.collection, r.system, r.reranker, r.noise_seed): r for r in out.itertuples(index=False)}
    assert set(got) == {('a', 'GAREN+', 'sigma=0.5', 0), ('a', 'GAREN', 'MiniLM', -1), ('b', 'GAREN+', 'sigma=1', 1)}
    fall = got['a', 'GAREN+', 'sigma=0.5', 0]
    assert fall.worst_step == pytest.approx(-.05)
    assert not fall.never_falls
    flat = got['a', 'GAREN', 'MiniLM', -1]
    assert (flat[4], flat[5], flat[6]) == pytest.approx((.5, .5, .6))
    assert flat.never_falls
    assert flat.worst_step == pytest.approx(0)
    gap = got['b', 'GAREN+', 'sigma=1', 1]
    assert math.isnan(gap[5])
    assert gap.worst_step == pytest.approx(.1)
    assert gap.never_falls
    only = analysis.budget_monotonicity(table, ['GAREN+'], rerankers=['sigma=1'])
    assert len(only) == 1
    assert only.collection.iloc[0] == 'b'
    assert analysis.budget_monotonicity(table, ['GAR'], measure='nDCG@10').never_falls.tolist() == [True]


def margin_table():
    """Two collections, system S against B1 and B2 at budget 100, sigma 1, noise seeds 0 and 1.

    nDCG@10 per (seed 0, seed 1): a: S (.50, .60), B1 (.60, .56) and a seed 2 only B1 ran (.99), B2 (.40, .40);
    b: S (.70, .74), B1 (.60, .62), B2 (.66, .70).
    R@100: S .65 everywhere, B1 and B2 .70 everywhere (a tie between the baselines).
    """
    specs = []
    for collection, values in {'a': {'S': (.50, .60), 'B1': (.60, .56, .99), 'B2': (.40, .40)},
                               'b': {'S': (.70, .74), 'B1': (.60, .62), 'B2': (.66, .70)}}.items():
        for system, per_seed in values.items():
            for seed, ndcg in enumerate(per_seed):
                specs.append((collection, system, 'sigma=1', seed, 42, 100, ndcg, .65 if system == 'S' else .70))
    # budget 200: B2 was not run on b, so the cell is incomplete and left out
    specs += [(c, s, 'sigma=1', 0, 42, 200, .5, .5) for c in 'ab' for s in ('S', 'B1', 'B2') if (c, s) != ('b', 'B2')]
    return rows(*specs)


def test_margins_by_hand():
    out = analysis.baseline_margins(margin_table(), 'S', ['B1', 'B2'])
    assert out.budget.tolist() == [100, 100]  # budget 200 incomplete
    ndcg, recall = (out[out.measure == m].iloc[0] for m in ('nDCG@10', 'R@100'))
    # per collection over S's seeds 0 and 1: a: S .55, B1 .58 (not .7167 with seed 2), B2 .40;
    # b: S .72, B1 .61, B2 .68. Means: S .635, B1 .595, B2 .54 -> best B1, delta +.04.
    assert ndcg.best == 'B1'
    assert (ndcg.value, ndcg.best_value, ndcg.delta) == pytest.approx((.635, .595, .04))
    assert ndcg.holds
    # per seed, mean over collections: seed 0: S .60 - B1 .60 = 0; seed 1: S .67 - B1 .59 = +.08
    assert (ndcg.delta_min, ndcg.delta_max) == pytest.approx((0, .08))
    # per collection against that collection's best: a: .55 - .58; b: .72 - .68 (B2 is b's best)
    assert (ndcg['delta:a'], ndcg['delta:b']) == pytest.approx((-.03, .04))
    # R@100: B1 and B2 tie at .70, the first named wins; S .65 misses by .05
    assert recall.best == 'B1'
    assert recall.delta == pytest.approx(-.05)
    assert not recall.holds
    assert analysis.baseline_margins(margin_table(), 'S', ['B2', 'B1']).best.tolist() == ['B1', 'B2']


def test_margins_tie_within_tolerance_holds():
    # .1 + .2 is 0.30000000000000004 in floating point: a tie, not a win of the baseline
    table = rows(('a', 'S', 'MiniLM', None, 42, 100, .3, .3), ('a', 'B', 'MiniLM', None, 42, 100, .1 + .2, .1 + .2))
    assert .3 - (.1 + .2) < 0
    out = analysis.baseline_margins(table, 'S', ['B'], rerankers=['MiniLM'])
    assert out.holds.all()
    assert (out.delta.abs() < 1e-9).all()
    assert out.delta_min.tolist() == out.delta.tolist()  # MiniLM has one "seed"


def test_margin_spread_counts_partitions_by_hand():
    # MiniLM has no noise seed: its spread is over the system's partitions. S on partitions 42 and 43 in both
    # collections, 44 on a only (not a run of every collection, so not in the spread); B once (its row is the same
    # for every partition, so it is given on 42 only).
    # nDCG@10: a: S .50 (42), .56 (43), .89 (44); b: S .70 (42), .60 (43); B .52 on a, .64 on b.
    table = rows(('a', 'S', 'MiniLM', None, 42, 100, .50, .5), ('a', 'S', 'MiniLM', None, 43, 100, .56, .5),
                 ('a', 'S', 'MiniLM', None, 44, 100, .89, .5), ('b', 'S', 'MiniLM', None, 42, 100, .70, .5),
                 ('b', 'S', 'MiniLM', None, 43, 100, .60, .5),
                 ('a', 'B', 'MiniLM', None, 42, 100, .52, .5), ('b', 'B', 'MiniLM', None, 42, 100, .64, .5))
    ndcg = analysis.baseline_margins(table, 'S', ['B'], measures=['nDCG@10']).iloc[0]
    # value: a's mean over its partitions (.50 + .56 + .89) / 3 = .65, b's (.70 + .60) / 2 = .65 -> .65;
    # B (.52 + .64) / 2 = .58 -> delta +.07
    assert (ndcg.value, ndcg.best_value, ndcg.delta) == pytest.approx((.65, .58, .07))
    # runs: partition 42: (.50 + .70) / 2 - .58 = +.02; partition 43: (.56 + .60) / 2 - .58 = 0
    assert (ndcg.delta_min, ndcg.delta_max) == pytest.approx((0, .02))


def test_strength_response_by_hand():
    table = rows(
        # a: sigma 2 (.60, .62), sigma 0.25 (.65, .61) -> rises +.05 and -.01, mean +.02
        ('a', 'S', 'sigma=2', 0, 42, 100, 0, .60), ('a', 'S', 'sigma=2', 1, 42, 100, 0, .62),
        ('a', 'S', 'sigma=0.25', 0, 42, 100, 0, .65), ('a', 'S', 'sigma=0.25', 1, 42, 100, 0, .61),
        # b: equal, so no rise; the seed 1 only sigma 2 has is not paired
        ('b', 'S', 'sigma=2', 0, 42, 100, 0, .5), ('b', 'S', 'sigma=2', 1, 42, 100, 0, .1),
        ('b', 'S', 'sigma=0.25', 0, 42, 100, 0, .5),
        # c: no strong reranker; another budget and another system do not count
        ('c', 'S', 'sigma=2', 0, 42, 100, 0, .5), ('a', 'S', 'sigma=0.25', 0, 42, 200, 0, .99),
        ('a', 'T', 'sigma=0.25', 0, 42, 100, 0, .99))
    out = analysis.strength_response(table, 'S').set_index('collection')
    assert list(out.index) == ['a', 'b']
    assert (out.loc['a', 'weak'], out.loc['a', 'strong'], out.loc['a', 'rise']) == pytest.approx((.61, .63, .02))
    assert (out.loc['a', 'rise_min'], out.loc['a', 'rise_max']) == pytest.approx((-.01, .05))
    assert out.loc['a', 'rises']
    assert out.loc['a', 'seeds'] == 2
    assert not out.loc['b', 'rises']
    assert out.loc['b', 'seeds'] == 1
    assert out.loc['b', 'weak'] == pytest.approx(.5)
    flipped = analysis.strength_response(table, 'S', weak=0.25, strong=2).set_index('collection')
    assert flipped.loc['a', 'rise'] == pytest.approx(-.02)
    assert not flipped.loc['a', 'rises']


def write(tmp_path, name, frame):
    path = tmp_path / name
    frame.drop(columns='collection').to_csv(path, index=False)
    return path


def test_load_sweeps_joins_parts_and_refuses_clashes(tmp_path):
    base = rows(('x', 'S', 'sigma=1', 0, 42, 100, .5, .6), ('x', 'S', 'MiniLM', None, 42, 100, .4, .7))
    first = write(tmp_path, 'first.csv', base)
    same = write(tmp_path, 'same.csv', base.iloc[[1]])
    table = analysis.load_sweeps({'x': [first, same], 'y': str(first)})
    assert len(table) == 4
    assert sorted(set(table.collection)) == ['x', 'y']
    other = base.iloc[[1]].assign(**{'R@100': .71})
    clash = write(tmp_path, 'clash.csv', other)
    with pytest.raises(ValueError, match=r'different values in .*clash\.csv.*first\.csv|first\.csv.*clash\.csv'):
        analysis.load_sweeps({'x': [first, clash]})
    old = write(tmp_path, 'old.csv', base.drop(columns='budget'))
    with pytest.raises(ValueError, match='no column budget'):
        analysis.load_sweeps({'x': old})
    with pytest.raises(FileNotFoundError, match="collection 'x'"):
        analysis.load_sweeps({'x': tmp_path / 'none.csv'})
    with pytest.raises(ValueError, match='no sweep CSVs'):
        analysis.load_sweeps({})


def test_sweep_verdict_command(tmp_path, capsys):
    script = load_script('examples/sweep_verdict.py')
    table = margin_table()
    a = write(tmp_path, 'a.csv', table[table.collection == 'a'])
    b = write(tmp_path, 'b.csv', table[table.collection == 'b'])
    out_dir = tmp_path / 'verdict'
    script.main([f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B1', 'B2', '--monotone', 'S', 'B1',
                 '--rerankers', 'sigma=1', '--csv-dir', str(out_dir)])
    text = capsys.readouterr().out
    # budgets 100 and 200 for seed 0 of S and B1 in both collections: 4 rows, R@100 .65 or .70 -> .5, all falls
    assert '0 of 4 rows never fall' in text
    assert '1 of 2 cells hold' in text
    assert '| 100 | sigma=1 | nDCG@10 | B1 | 0.5950 | 0.6350 | +0.0400 | yes |' in text
    assert 'skipped: no collection has S at budget 100 with both sigma 2 and sigma 0.25 (the CSVs hold budgets 100 ' \
        '200 and sigmas 1; see --response-budget, --weak, --strong)' in text  # was 'rises on 0 of 0 collections'
    assert pd.read_csv(out_dir / 'margins.csv').shape[0] == 2
    with pytest.raises(SystemExit, match='no rows of GAREN\\+'):
        script.main([f'a={a}'])
    script.main([f'a={a}', '--system', 'S', '--baselines', 'B1', 'GAR'])
    assert 'skipped: no rows of GAR in the CSVs' in capsys.readouterr().out
    with pytest.raises(SystemExit, match='expected COLLECTION=PATH'):
        script.main([str(a)])
    with pytest.raises(SystemExit, match='no sweep CSV at'):
        script.main([f'a={tmp_path / "missing.csv"}', '--system', 'S'])
    # one budget only: table 1 says so instead of an empty table; the files' provenance comes last
    one = write(tmp_path, 'one.csv', table[(table.collection == 'a') & (table.budget == 100)])
    _record(one, code='dddd4444', date='2026-12-03', queries=5, command='python z', packages={'numpy': '2.1'})
    script.main([f'a={one}', '--system', 'S', '--baselines', 'B1'])
    text = capsys.readouterr().out
    assert 'skipped: one budget (100) in the CSVs' in text
    assert f'| a | {one} | recorded | dddd4444 | 2026-12-03 | 5 |' in text
    assert text.rstrip().endswith('- every file was written by code dddd4444 with the same package versions')


def test_sweep_verdict_says_which_rows_it_left_out(tmp_path, capsys):
    # a: sigma 0.5 and 2, b: sigma 0.5 and 1. The sigma=2 rows (S falls .2 there) are not among the default
    # --rerankers, and sigma=1 is not in every collection: both left tables 1 and 2 without a word
    script = load_script('examples/sweep_verdict.py')
    specs = []
    for collection, other in (('a', 'sigma=2'), ('b', 'sigma=1')):
        for system in ('S', 'B1'):
            for r in ('sigma=0.5', other):
                fall = .2 if (system, r) == ('S', 'sigma=2') else 0
                specs += [(collection, system, r, 0, 42, 100, .5, .6),
                          (collection, system, r, 0, 42, 200, .5, .6 - fall)]
    table = rows(*specs)
    a, b = (write(tmp_path, f'{c}.csv', table[table.collection == c]) for c in 'ab')
    script.main([f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B1', '--monotone', 'S'])
    text = capsys.readouterr().out
    assert ('left out: the CSVs also hold sigma=2, which --rerankers does not name (tables 1 and 2 show sigma=0.5 '
            'sigma=1); name it in --rerankers to see its rows\n') in text
    assert '3 of 3 rows never fall' in text  # a and b at sigma=0.5, b at sigma=1
    assert ('\nleft out, as not every collection has them for S, B1: a: S has no rows for sigma=1 at budget 100, '
            'sigma=1 at budget 200; a: B1 has no rows for sigma=1 at budget 100, sigma=1 at budget 200\n') in text
    assert '4 of 4 cells hold' in text  # sigma=0.5 at budgets 100 and 200, both measures
    script.main([f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B1', '--monotone', 'S', '--rerankers',
                 'sigma=0.5', 'sigma=2'])
    text = capsys.readouterr().out
    assert ('left out: the CSVs also hold sigma=1, which --rerankers does not name (tables 1 and 2 show sigma=0.5 '
            'sigma=2); name it in --rerankers to see its rows\n') in text
    assert '2 of 3 rows never fall' in text  # sigma=2 in a falls by .2
    assert '| a | S | sigma=2 | 0 | 0.6000 | 0.4000 | -0.2000 | no |' in text


def _record(path, **fields):
    """A provenance record beside ``path`` as strength_sweep.py writes it, with chosen code and packages."""
    import json

    from pyterrier_garen._provenance import file_digest, sidecar_path
    sidecar_path(path).write_text(json.dumps({'file': path.name, 'sha256': file_digest(path), **fields}))


def test_sweep_provenance_and_its_notes(tmp_path):
    base = rows(('x', 'S', 'sigma=1', 0, 42, 100, .5, .6))
    one, two, bare, edited, broken = (write(tmp_path, f'{n}.csv', base) for n in
                                      ('one', 'two', 'bare', 'edited', 'broken'))
    _record(one, code='aaaa1111', date='2026-12-01', queries=7, command='python x', packages={'numpy': '2.1'})
    _record(two, code='aaaa1111', date='2026-12-02', queries=9, command='python y', packages={'numpy': '2.1'})
    provenance = analysis.sweep_provenance({'x': [one, two]})
    assert provenance[['status', 'code', 'date', 'queries']].values.tolist() == [
        ['recorded', 'aaaa1111', '2026-12-01', '7'], ['recorded', 'aaaa1111', '2026-12-02', '9']]
    assert analysis.provenance_notes(provenance) == [
        'every file was written by code aaaa1111 with the same package versions']
    # another code version and another numpy; a file with no record; one edited after its record; one unreadable
    _record(two, code='bbbb2222', packages={'numpy': '2.2', 'torch': '2.13.0'})
    _record(edited, code='eeee5555', packages={'numpy': '2.1'})  # a changed file still tells its code
    edited.write_text(edited.read_text() + 'GAREN,simulated,1.0,0,42,100,0.1,0.2\n')
    (tmp_path / 'broken.csv.json').write_text('[1, 2')
    provenance = analysis.sweep_provenance({'x': [one, two, bare], 'y': [edited, broken]})
    assert provenance.status.tolist() == ['recorded', 'recorded', 'missing', 'changed', 'unreadable']
    assert provenance.code.tolist() == ['aaaa1111', 'bbbb2222', '-', 'eeee5555', '-']
    assert analysis.provenance_notes(provenance) == [
        f'no provenance record beside 1 of 5 files (written by hand or before records existed): {bare}',
        f'an unreadable provenance record beside 1 of 5 files: {broken}',
        f'1 of 5 files changed after their provenance record was written (the record no longer describes them): '
        f'{edited}',
        'the files were written by 3 code versions (aaaa1111, bbbb2222, eeee5555): a difference between them may '
        'be the code, not the systems',
        'package versions differ between the files: numpy (2.1, 2.2); torch (2.13.0, absent)']
    _record(one, code='cccc3333+changes', packages={})
    assert analysis.provenance_notes(analysis.sweep_provenance({'x': one})) == [
        'the files were written by code with uncommitted changes (cccc3333+changes)']
    (tmp_path / 'broken.csv.json').write_text('[1, 2]')  # JSON, but not a record
    assert analysis.sweep_provenance({'y': broken}).status.tolist() == ['unreadable']
    with pytest.raises(FileNotFoundError, match="collection 'x'"):
        analysis.sweep_provenance({'x': tmp_path / 'none.csv'})


def test_write_and_read_sidecar_round_trip(tmp_path):
    import hashlib

    import pyterrier_garen as garen
    from pyterrier_garen._redact import remember
    path = tmp_path / 'run.csv'
    path.write_text('a,b\n1,2\n')
    remember('sk-provenance-secret-0123')
    side = garen.write_sidecar(path, command='python s.py --key sk-provenance-secret-0123', queries=3)
    assert side == tmp_path / 'run.csv.json'
    assert 'sk-provenance-secret-0123' not in side.read_text()
    record = garen.read_sidecar(path)
    assert record['status'] == 'recorded'
    assert record['sha256'] == hashlib.sha256(b'a,b\n1,2\n').hexdigest()
    assert (record['file'], record['queries'], record['command']) == ('run.csv', 3, 'python s.py --key <hidden>')
    assert garen.read_sidecar(tmp_path / 'other.csv') == {'status': 'missing'}
    path.write_text('a,b\n1,3\n')
    assert garen.read_sidecar(path)['status'] == 'changed'


# ---------------------------------------------------------------------------------------------------------------------
# the ninth mutation run (docs/testing.md): orders, defaults, boundaries and options the tests above left open

from pyterrier_garen import _claims  # noqa: E402


def order_table():
    """Collections given as vaswani, then cranfield; simulated noises 10 and 2 (10 sorts before 2 as text);
    GAREN+ and the three default baselines at budgets 100 and 200, noise seed 3, on an index that is not 0..n-1.

    R@100 of GAREN+ per (budget 100, 200): sigma=10 (.3, .4), sigma=2 (.5, .6); every baseline .45 / .55.
    nDCG@10: GAREN+ .5, every baseline .4.
    """
    specs = []
    for collection in ('vaswani', 'cranfield'):
        for r, (low, high) in (('sigma=10', (.3, .4)), ('sigma=2', (.5, .6))):
            for budget, recall in ((100, low), (200, high)):
                specs.append((collection, 'GAREN+', r, 3, 42, budget, .5, recall))
                specs += [(collection, b, r, 3, 42, budget, .4, recall + .15 if r == 'sigma=10' else .45)
                          for b in ('GAR', 'SlideGAR', 'RGS')]
    table = rows(*specs)
    return table.set_axis(range(1000, 1000 + len(table)), axis=0)


def test_rows_follow_the_input_order_on_any_index():
    table = order_table()
    mono = analysis.budget_monotonicity(table, ['GAREN+'])
    # the collections as given (not sorted), each reranker once per collection
    assert mono.collection.tolist() == ['vaswani', 'vaswani', 'cranfield', 'cranfield']
    assert mono.reranker.tolist() == ['sigma=10', 'sigma=2', 'sigma=10', 'sigma=2']
    assert mono.noise_seed.tolist() == [3, 3, 3, 3]
    assert mono.noise_seed.dtype.kind == 'i'  # printed as 3, not 3.0
    margins = analysis.baseline_margins(table)  # GAREN+ against GAR, SlideGAR, RGS by default
    assert list(margins.columns[-2:]) == ['delta:vaswani', 'delta:cranfield']
    # the rerankers by noise (2 before 10), then the measures
    assert margins.reranker.tolist() == ['sigma=2', 'sigma=2', 'sigma=10', 'sigma=10'] * 2
    assert margins.budget.tolist() == [100] * 4 + [200] * 4
    # sigma=2, budget 100, R@100: .50 - .45; sigma=10, budget 200, R@100: .40 - .55
    first = margins[(margins.budget == 100) & (margins.reranker == 'sigma=2') & (margins.measure == 'R@100')]
    assert first.delta.tolist() == pytest.approx([.05])
    last = margins[(margins.budget == 200) & (margins.reranker == 'sigma=10') & (margins.measure == 'R@100')]
    assert last.delta.tolist() == pytest.approx([-.15])
    response = analysis.strength_response(table, weak=10, strong=2)  # GAREN+ by default
    assert response.collection.tolist() == ['vaswani', 'cranfield']
    assert response.rise.tolist() == pytest.approx([.2, .2])  # .5 - .3 at budget 100
    assert response.seeds.tolist() == [1, 1]


def test_a_table_without_collection_is_one_unnamed_collection():
    table = order_table()
    table = table[table.collection == 'cranfield'].drop(columns='collection')
    mono = analysis.budget_monotonicity(table, ['GAREN+'])
    assert mono.collection.tolist() == ['', '']
    margins = analysis.baseline_margins(table)
    assert 'delta:' in margins.columns
    assert analysis.strength_response(table, weak=10, strong=2).collection.tolist() == ['']


def test_ties_at_the_tolerance_hold_and_do_not_rise(monkeypatch):
    # with the tolerance at .25, steps of exactly -.25 are ties: .75 -> .5 never falls, .75 -> .25 falls; a rise of
    # exactly .25 is no rise, one of .5 is (quarters are exact in binary floating point)
    monkeypatch.setattr(_claims, 'TOLERANCE', .25)
    table = rows(('a', 'S', 'sigma=1', 0, 42, 100, 0, .75), ('a', 'S', 'sigma=1', 0, 42, 200, 0, .5),
                 ('a', 'S', 'sigma=2', 0, 42, 100, 0, .75), ('a', 'S', 'sigma=2', 0, 42, 200, 0, .25))
    mono = analysis.budget_monotonicity(table, ['S']).set_index('reranker')
    assert mono.loc['sigma=1', 'never_falls']
    assert not mono.loc['sigma=2', 'never_falls']
    margins = rows(('a', 'S', 'MiniLM', None, 42, 100, .5, .5), ('a', 'B', 'MiniLM', None, 42, 100, .75, 1.0))
    out = analysis.baseline_margins(margins, 'S', ['B']).set_index('measure')
    assert out.loc['nDCG@10', 'holds']
    assert not out.loc['R@100', 'holds']
    response = rows(('a', 'S', 'sigma=2', 0, 42, 100, 0, .25), ('a', 'S', 'sigma=0.25', 0, 42, 100, 0, .5),
                    ('b', 'S', 'sigma=2', 0, 42, 100, 0, .25), ('b', 'S', 'sigma=0.25', 0, 42, 100, 0, .75))
    assert analysis.strength_response(response, 'S').rises.tolist() == [False, True]


def test_margin_options_and_incomplete_cells():
    table = order_table()
    only = analysis.baseline_margins(table, budgets=[200], rerankers=['sigma=10'])
    assert (only.budget.tolist(), only.reranker.tolist()) == ([200, 200], ['sigma=10', 'sigma=10'])
    # sigma=2 lacks RGS in cranfield: left out, and sigma=10 after it still counted
    gap = table[~((table.sigma == 2) & (table.system == 'RGS') & (table.collection == 'cranfield'))]
    assert analysis.baseline_margins(gap, budgets=[100]).reranker.tolist() == ['sigma=10', 'sigma=10']
    # no complete cell: no rows, the columns still there
    none = analysis.baseline_margins(gap, budgets=[100], rerankers=['sigma=2'])
    assert none.empty
    assert list(none.columns) == ['budget', 'reranker', 'measure', 'best', 'best_value', 'value', 'delta', 'holds',
                                  'delta_min', 'delta_max', 'delta:vaswani', 'delta:cranfield']
    # no seed that every collection has: the seed range is the mean delta itself
    moved = table.assign(noise_seed=table.noise_seed.where(table.collection == 'vaswani', 4.0))
    out = analysis.baseline_margins(moved, budgets=[100], rerankers=['sigma=2'])
    assert out.delta.tolist() == pytest.approx([.1, .05])  # nDCG@10 .5 - .4, R@100 .5 - .45
    assert out.delta_min.tolist() == out.delta.tolist() == out.delta_max.tolist()


def test_response_skips_a_collection_and_goes_on():
    table = rows(
        # a: no strong reranker; b: the two strengths on different seeds (nothing paired); c: a rise of .1
        ('a', 'GAREN+', 'sigma=2', 0, 42, 100, 0, .5),
        ('b', 'GAREN+', 'sigma=2', 0, 42, 100, 0, .5), ('b', 'GAREN+', 'sigma=0.25', 1, 42, 100, 0, .9),
        ('c', 'GAREN+', 'sigma=2', 0, 42, 100, 0, .5), ('c', 'GAREN+', 'sigma=0.25', 0, 42, 100, 0, .6))
    out = analysis.strength_response(table)
    assert out.collection.tolist() == ['c']
    assert out.rise.tolist() == pytest.approx([.1])


def test_monotonicity_budget_only_a_skipped_row_has():
    # S has budgets 100 and 200; T only 400 (one budget: no row), so column 400 is all missing, as floats
    table = rows(('a', 'S', 'sigma=1', 0, 42, 100, 0, .5), ('a', 'S', 'sigma=1', 0, 42, 200, 0, .6),
                 ('a', 'T', 'sigma=1', 0, 42, 400, 0, .7))
    out = analysis.budget_monotonicity(table, ['S', 'T'])
    assert len(out) == 1
    assert out[400].dtype.kind == 'f'
    assert math.isnan(out[400].iloc[0])


def test_load_sweeps_columns_and_the_first_clash_named(tmp_path):
    base = rows(('x', 'S', 'sigma=1', 0, 42, 100, .5, .6), ('x', 'S', 'sigma=1', 0, 42, 200, .5, .7))
    first = write(tmp_path, 'first.csv', base)
    table = analysis.load_sweeps({'x': first})
    assert list(table.columns) == list(base.columns.drop('collection')) + ['collection']
    assert list(table.index) == [0, 1]
    # both rows clash; the message names the first (budget 100)
    clash = write(tmp_path, 'clash.csv', base.assign(**{'R@100': [.61, .71]}))
    with pytest.raises(ValueError, match='budget=100 has different values'):
        analysis.load_sweeps({'x': [first, clash]})


def test_provenance_fields_as_recorded(tmp_path):
    base = rows(('x', 'S', 'sigma=1', 0, 42, 100, .5, .6))
    one, two, three = (write(tmp_path, f'{n}.csv', base) for n in ('one', 'two', 'three'))
    _record(one, code='aaaa1111', command='python one.py', packages='not a mapping')  # no date, no queries
    _record(two, code='bbbb2222', command='python two.py', packages={'numpy': '2.1'})
    table = analysis.sweep_provenance({'x': [one, two, three]})
    assert table.command.tolist() == ['python one.py', 'python two.py', '-']
    assert table.date.tolist() == ['-', '-', '-']
    assert table.packages.tolist() == [{}, {'numpy': '2.1'}, {}]
    empty = analysis.sweep_provenance({})
    assert list(empty.columns) == ['collection', 'file', 'status', 'code', 'date', 'queries', 'command', 'packages']
    notes = analysis.provenance_notes(analysis.sweep_provenance({'x': [one, two]}))
    assert notes[0] == ('the files were written by 2 code versions (aaaa1111, bbbb2222): a difference between them '
                        'may be the code, not the systems')
    bare = analysis.provenance_notes(analysis.sweep_provenance({'x': [three, three]}))
    assert bare == [f'no provenance record beside 2 of 2 files (written by hand or before records existed): '
                    f'{three}, {three}']


def report_table():
    """One collection; GAREN, GAREN+ and the three baselines at budgets 50, 100 and 200, simulated noises 0.25,
    0.5 and 2 (noise seed 0).

    GAREN+ R@100 per budget (50, 100, 200): sigma=0.25 (.70, .80, .90), sigma=0.5 (.60, .70, .85), sigma=2
    (.50, .65, .75); its nDCG@10 falls with the budget at sigma=0.25 only (.9, .8, .7), .5 elsewhere.
    GAREN equals GAREN+ minus .1 in both, except R@100 at sigma=2: minus .2; every baseline has R@100 .6 and
    nDCG@10 .4.
    """
    recall = {'sigma=0.25': (.70, .80, .90), 'sigma=0.5': (.60, .70, .85), 'sigma=2': (.50, .65, .75)}
    specs = []
    for r, values in recall.items():
        for budget, rec, ndcg in zip((50, 100, 200), values, (.9, .8, .7) if r == 'sigma=0.25' else (.5,) * 3):
            specs.append(('a', 'GAREN+', r, 0, 42, budget, ndcg, rec))
            specs.append(('a', 'GAREN', r, 0, 42, budget, ndcg - .1, rec - (.2 if r == 'sigma=2' else .1)))
            specs += [('a', b, r, 0, 42, budget, .4, .6) for b in ('GAR', 'SlideGAR', 'RGS')]
    return rows(*specs)


def test_claims_report_defaults_and_options():
    table = report_table()
    report = analysis.claims_report(table)
    mono, margins, response = report['monotonicity'], report['margins'], report['response']
    # the default rerankers present: sigma 0.25 and 0.5 (not 2, not the absent sigma=1 and MiniLM)
    assert sorted(set(mono.reranker)) == ['sigma=0.25', 'sigma=0.5']
    assert len(mono) == 4
    assert mono.never_falls.all()
    assert list(mono.columns[4:7]) == [50, 100, 200]
    assert margins.budget.tolist() == [100, 100, 100, 100, 200, 200, 200, 200]
    assert margins.reranker.tolist() == ['sigma=0.25', 'sigma=0.25', 'sigma=0.5', 'sigma=0.5'] * 2
    # budget 100, sigma 2 -> 0.25: .65 -> .80
    assert response.rise.tolist() == pytest.approx([.15])
    falls = analysis.claims_report(table, monotone_measure='nDCG@10')['monotonicity']
    assert falls.set_index(['system', 'reranker']).never_falls.to_dict() == {
        ('GAREN+', 'sigma=0.25'): False, ('GAREN', 'sigma=0.25'): False,
        ('GAREN+', 'sigma=0.5'): True, ('GAREN', 'sigma=0.5'): True}
    # another budget and strengths: budget 200, sigma 0.5 -> 0.25: .85 -> .90
    moved = analysis.claims_report(table, budget=200, weak=0.5, strong=0.25)['response']
    assert moved.rise.tolist() == pytest.approx([.05])
    # another system: GAREN, budget 100, sigma 2 -> 0.5: .65 - .2 -> .70 - .1 (GAREN+ would rise by .05)
    garen = analysis.claims_report(table, 'GAREN', weak=2, strong=0.5, margin_budgets=[50])
    assert garen['response'].rise.tolist() == pytest.approx([.15])
    assert garen['margins'].budget.tolist() == [50] * 4
    # GAREN at budget 50 (nDCG@10, R@100): sigma=0.25 (.9 - .1, .7 - .1), sigma=0.5 (.5 - .1, .6 - .1)
    assert garen['margins'].value.tolist() == pytest.approx([.8, .6, .4, .5])


def test_monotonicity_summary_by_hand():
    """Rows counted per system and reranker across collections and seeds, in first-seen order."""
    mono = pd.DataFrame([
        # system, reranker, worst_step, never_falls, step_verdict
        ('GAREN+', 'sigma=1', -.03, False, 'falls'),
        ('GAR', 'sigma=1', .02, True, 'rises'),
        ('GAREN+', 'sigma=1', 0., True, 'tie'),       # a flat row never falls and is a tie
        ('GAREN+', 'MiniLM', -.001, False, 'tie'),
        ('GAREN+', 'sigma=1', -.05, False, '-'),      # no per-query rows: counted in none of the verdicts
        ('GAR', 'sigma=1', .04, True, 'rises'),
    ], columns=['system', 'reranker', 'worst_step', 'never_falls', 'step_verdict'])
    mono.insert(0, 'collection', ['a', 'a', 'b', 'a', 'c', 'b'])
    mono.insert(3, 100, [.5, .4, .6, .7, NAN, .2])   # budget columns as budget_monotonicity names them
    mono.insert(4, 200, [.47, .42, .6, .699, .3, .24])
    out = analysis.monotonicity_summary(mono)
    assert list(out.columns) == ['system', 'reranker', 'rows', 100, 200, 'never_falls', 'worst_step', 'rises', 'tie',
                                 'falls']
    # GAREN+ sigma=1: (.5 + .6) / 2 at 100 (the row without budget 100 left out), (.47 + .6 + .3) / 3 at 200
    assert out[100].tolist() == pytest.approx([.55, .3, .7])
    assert out[200].tolist() == pytest.approx([1.37 / 3, .33, .699])
    assert out[['system', 'reranker']].values.tolist() == [['GAREN+', 'sigma=1'], ['GAR', 'sigma=1'],
                                                          ['GAREN+', 'MiniLM']]
    plus, gar, minilm = (r for r in out.itertuples(index=False))
    assert (plus.rows, plus.never_falls, plus.rises, plus.tie, plus.falls) == (3, 1, 0, 1, 1)
    assert plus.worst_step == pytest.approx(-.05)
    assert (gar.rows, gar.never_falls, gar.rises, gar.tie, gar.falls) == (2, 2, 2, 0, 0)
    assert gar.worst_step == pytest.approx(.02)   # the most negative of .02 and .04: a positive worst stays so
    assert (minilm.rows, minilm.never_falls, minilm.tie) == (1, 0, 1)
    # without the paired test: no verdict columns
    plain = analysis.monotonicity_summary(mono.drop(columns='step_verdict'))
    assert list(plain.columns) == ['system', 'reranker', 'rows', 100, 200, 'never_falls', 'worst_step']
    assert plain.rows.tolist() == [3, 2, 1]
    with pytest.raises(ValueError, match=r'missing column\(s\) never_falls.*budget_monotonicity'):
        analysis.monotonicity_summary(mono.drop(columns='never_falls'))
    # the table as --csv-dir writes it and pandas reads it back: budget columns named '100', '200'
    reread = analysis.monotonicity_summary(mono.rename(columns={100: '100', 200: '200'}))
    assert list(reread.columns) == ['system', 'reranker', 'rows', '100', '200', 'never_falls', 'worst_step', 'rises',
                                    'tie', 'falls']
    assert reread['100'].tolist() == pytest.approx([.55, .3, .7])
    empty = analysis.monotonicity_summary(mono.iloc[:0])
    assert empty.empty
    assert list(empty.columns) == list(out.columns)


def test_sweep_verdict_monotone_summary(tmp_path, capsys):
    """--monotone-summary prints table 1 per system and reranker (here over the margin table's budget steps)."""
    script = load_script('examples/sweep_verdict.py')
    table = margin_table()
    a = write(tmp_path, 'a.csv', table[table.collection == 'a'])
    b = write(tmp_path, 'b.csv', table[table.collection == 'b'])
    script.main([f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B1', 'B2', '--monotone', 'S', 'B1',
                 '--rerankers', 'sigma=1', '--monotone-summary'])
    text = capsys.readouterr().out
    # S: .65 -> .50 in both collections (seed 0); B1: .70 -> .50 in both
    assert '| system | reranker | rows | 100 | 200 | never_falls | worst_step |\n' in text
    assert '| S | sigma=1 | 2 | 0.6500 | 0.5000 | 0 | -0.1500 |' in text
    assert '| B1 | sigma=1 | 2 | 0.7000 | 0.5000 | 0 | -0.2000 |' in text
    assert '0 of 4 rows never fall' in text
