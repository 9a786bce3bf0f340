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
    assert 'rises on 0 of 0 collections' in text
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
