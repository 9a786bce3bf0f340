"""The scripts' output files are checked before their work (check_outputs): a folder, a file named by two flags or
an output that is also an input is refused with the fix; a missing folder above an output is created."""
import pytest
from _scripts import ROOT, load_script

from pyterrier_garen import check_outputs
from pyterrier_garen._errors import UsageError


def test_a_missing_folder_is_created_and_nothing_else_is_written(tmp_path):
    check_outputs({'--out': str(tmp_path / 'a' / 'b' / 'out.csv'), '--plot': None})
    assert (tmp_path / 'a' / 'b').is_dir()
    assert list((tmp_path / 'a' / 'b').iterdir()) == []


def test_a_folder_two_flags_on_one_file_and_an_input_are_refused(tmp_path):
    with pytest.raises(UsageError, match=r'--out .* is a folder; give the path of a file'):
        check_outputs({'--out': str(tmp_path)})
    with pytest.raises(UsageError, match='--out and --tests both name .*; give each output a file of its own'):
        check_outputs({'--out': str(tmp_path / 'x.csv'), '--tests': str(tmp_path / '.' / 'x.csv')})
    mine = tmp_path / 'costs.csv'
    mine.write_text('kept\n')
    with pytest.raises(UsageError, match='--csv .* is also an input of this command .* would be written over'):
        check_outputs({'--csv': str(mine)}, inputs=[str(mine)])
    assert mine.read_text() == 'kept\n'


def test_an_output_that_is_an_input_names_the_input_as_given(tmp_path):
    mine = tmp_path / 'costs.csv'
    mine.write_text('kept\n')
    with pytest.raises(UsageError) as refused:  # named as the command was given it, here through a '.' folder
        check_outputs({'--csv': str(mine)}, inputs=[f'{tmp_path}/./costs.csv'])
    assert str(refused.value) == (f'--csv {mine} is also an input of this command ({tmp_path}/./costs.csv) and '
                                  'would be written over; choose another output path')


def test_the_sweep_refuses_its_outputs_before_it_loads_anything(tmp_path):
    script = load_script('examples/strength_sweep.py')
    with pytest.raises(UsageError, match='--out and --tests both name'):  # not: no collection 'none' (loaded later)
        script.main(['--dataset', str(tmp_path / 'none'), '--workdir', str(tmp_path / 'w'),
                     '--out', str(tmp_path / 's.csv'), '--tests', str(tmp_path / 's.csv'), '--no-minilm'])
    assert not (tmp_path / 'w').exists()


def test_cost_matched_does_not_write_its_table_over_the_cost_table(tmp_path):
    script = load_script('examples/cost_matched.py')
    sweep, costs = tmp_path / 'c.csv', tmp_path / 'costs.csv'
    sweep.write_text('system,reranker,sigma,noise_seed,partition_seed,budget,nDCG@10,R@100\n'
                     'GAREN+,simulated,1,0,42,100,0.5,0.5\n')
    costs.write_text('collection,budget,system,sent\nc,100,GAREN+,100\n')
    with pytest.raises(UsageError, match='--csv .*costs.csv is also an input'):
        script.main([f'c={sweep}', '--costs', str(costs), '--csv', str(costs)])
    assert costs.read_text().startswith('collection,budget,system,sent\n')


def _sweep(folder, name, budget=100):
    """A strength-sweep CSV of one GAREN row and its per-query values (two queries), as the sweep writes them."""
    import pandas as pd
    keys = {'system': 'GAREN', 'reranker': 'simulated', 'sigma': 1.0, 'noise_seed': 0, 'partition_seed': 42,
            'budget': budget}
    pd.DataFrame([{**keys, 'nDCG@10': .5, 'R@100': .5}]).to_csv(folder / f'{name}.csv', index=False)
    pd.DataFrame([{**keys, 'qid': q, 'nDCG@10': v, 'R@100': .5} for q, v in (('1', .4), ('2', .6))]).to_csv(
        folder / f'{name}.perquery.csv.gz', index=False)
    return f'c={folder / f"{name}.csv"}'


@pytest.mark.parametrize(('args', 'said'), [
    (['--systems', 'Nope'], 'error: --systems Nope selects no row the two sides hold in common; choose from GAREN\n'),
    (['--budgets', '7'], 'error: --budgets 7 selects no row the two sides hold in common; choose from 100\n'),
])
def test_sweep_diff_filters_that_select_nothing_are_one_line(tmp_path, args, said):
    # were a numpy traceback (ufunc 'add' ... dtype('<U6')) from printing an empty table
    import subprocess
    import sys

    a, b = _sweep(tmp_path, 'a'), _sweep(tmp_path, 'b')
    proc = subprocess.run([sys.executable, str(ROOT / 'bench' / 'sweep_diff.py'), '--a', a, '--b', b, *args],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (2, said)
    proc = subprocess.run([sys.executable, str(ROOT / 'bench' / 'sweep_diff.py'), '--a', a, '--b', b,
                           '--out', str(tmp_path / 'a.perquery.csv.gz')], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith('error: --out ')
    assert 'is also an input of this command' in proc.stderr


@pytest.mark.parametrize(('script', 'args', 'said'), [
    ('bench/reranker_load.py', ['--queries', '-2'],  # was every query but the last two, silently
     'error: --queries must be a positive integer or None, got -2 (None: every judged query)'),
    ('bench/reranker_load.py', ['--budgets', '100', '100'], 'error: --budgets repeat 100: give each value once'),
    ('examples/final_order.py', ['--budgets', '100', '100'], 'error: --budgets repeat 100: give each value once'),
])
def test_the_measuring_scripts_check_their_numbers_before_anything_is_built(tmp_path, script, args, said):
    import subprocess
    import sys

    where = ['--collections', 'cranfield'] if script.startswith('bench') else \
        ['--dataset', str(tmp_path / 'none'), '--workdir', str(tmp_path / 'w'), '--out', str(tmp_path / 'o.csv')]
    proc = subprocess.run([sys.executable, str(ROOT / script), *where, *args], capture_output=True, text=True,
                          timeout=120, env={**__import__('os').environ, 'GAREN_DATA': str(tmp_path)})
    assert proc.returncode == 2
    assert proc.stderr.startswith(said), proc.stderr[-2000:]
    assert not (tmp_path / 'w').exists()


@pytest.mark.parametrize(('script', 'args'), [
    ('examples/sweep_verdict.py', ['--margin-budgets', '100', '100']),  # counted '16 of 16 cells hold' (8 twice)
    ('examples/fusion_weights.py', ['--rerankers', 'MiniLM', 'MiniLM']),
    ('examples/cost_matched.py', ['--baselines', 'GAR', 'GAR']),
])
def test_the_verdict_scripts_refuse_a_value_given_twice(tmp_path, capsys, script, args):
    files = ['0.1:c=none.csv'] if 'fusion' in script else ['c=none.csv']  # refused before any file is read
    costs = ['--costs', 'none.csv'] if 'cost' in script else []
    with pytest.raises(SystemExit) as ended:
        load_script(script).main([*files, *costs, *args])
    assert ended.value.code == 2
    assert f'{args[0]} repeats {args[1]}: give each value once' in capsys.readouterr().err


@pytest.mark.parametrize(('args', 'said'), [
    (['--rerankers', 'foo'], ['skipped: none of --rerankers foo is in the CSVs (they hold MiniLM sigma=0.25 '
                              'sigma=0.5 sigma=1 sigma=2)']),
    (['--weak', '7'], ['skipped: no collection has GAREN+ at budget 100 with both sigma 7 and sigma 0.25 (the CSVs '
                       'hold budgets 50 100 200 400 and sigmas 0.25 0.5 1 2; see --response-budget, --weak, '
                       '--strong)']),
])
def test_sweep_verdict_says_why_a_table_is_empty(capsys, args, said):
    # it printed '0 of 0 rows never fall' or 'rises on 0 of 0 collections' and ended with status 0 (an empty table 2
    # was explained already: 'no cell has GAREN+, GAR, ... in every collection (...)')
    sweep = ROOT / 'bench' / 'results' / 'sweeps' / 'cranfield.csv'
    load_script('examples/sweep_verdict.py').main([f'cranfield={sweep}', *args])
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith('skipped:')] == said
    assert '0 of 0 rows' not in out
    assert '0 of 0 collections' not in out


def test_an_appended_table_knows_the_cells_it_holds(tmp_path):
    import pandas as pd

    from pyterrier_garen.analysis import AppendedTable
    path = tmp_path / 'rows.csv'
    path.write_text('')  # an empty file starts with the header, as a missing one does
    table = AppendedTable(path, ['system', 'seed', 'budget', 'value'], keys=['system', 'seed', 'budget'])
    assert not table.holds(system='GAR', seed=None, budget=100)
    table.append(pd.DataFrame({'system': ['GAR', 'GAR'], 'seed': pd.Series([None, 3], dtype=object),
                               'budget': [100, 100], 'value': [.5, .6]}))
    assert table.holds(system='GAR', seed=None, budget=100)
    assert path.read_text() == 'system,seed,budget,value\nGAR,,100,0.5\nGAR,3,100,0.6\n'
    # opened again (a rerun): the cells are read back from the file, a None seed as the empty cell it was written as
    again = AppendedTable(path, ['system', 'seed', 'budget', 'value'], keys=['system', 'seed', 'budget'])
    assert again.holds(system='GAR', seed=None, budget=100)
    assert again.holds(system='GAR', seed=3, budget='100')
    assert not again.holds(system='GAR', seed=3, budget=200)
    assert not again.holds(system='RGS', seed=None, budget=100)
    with pytest.raises(ValueError, match=r"rows with the columns \['system', 'value'\] cannot go to"):
        again.append(pd.DataFrame({'system': ['GAR'], 'value': [1.]}))
    assert path.read_text().count('\n') == 3


def test_an_appended_table_starts_a_missing_file_with_one_header_and_reads_nan_as_empty(tmp_path):
    import pandas as pd

    from pyterrier_garen.analysis import AppendedTable
    path, columns, keys = tmp_path / 'rows.csv', ['system', 'sigma', 'value'], ['system', 'sigma']
    table = AppendedTable(path, columns, keys=keys)  # no file yet
    table.append(pd.DataFrame({'system': ['GAR'], 'sigma': [0.5], 'value': [1.]}))
    table.append(pd.DataFrame({'system': ['RGS'], 'sigma': [float('nan')], 'value': [2.]}))
    assert path.read_text() == 'system,sigma,value\nGAR,0.5,1.0\nRGS,,2.0\n'  # appended, the header once
    assert table.holds(system='GAR', sigma=0.5)
    assert table.holds(system='RGS', sigma=float('nan'))  # NaN is written as the empty cell
    again = AppendedTable(path, columns, keys=keys)
    assert again.holds(system='GAR', sigma=0.5)
    assert again.holds(system='RGS', sigma=float('nan'))
    assert not again.holds(system='GAR', sigma=float('nan'))
    other = tmp_path / 'other.csv'
    other.write_text('a,b\n1,2\n')
    with pytest.raises(UsageError) as refused:  # named by --out unless told another flag
        AppendedTable(other, columns, keys=keys)
    assert str(refused.value) == (f"--out {other} holds the columns ['a', 'b'], not the ['system', 'sigma', 'value'] "
                                  'this command writes; appending would put values under the wrong names: give '
                                  'another file')
