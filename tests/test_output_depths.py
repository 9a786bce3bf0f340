"""The two summaries of bench/output_depths.py, on a table whose margins and falls are worked out by hand."""
import pandas as pd
from _scripts import load_script

bench = load_script('bench/output_depths.py')
NAMES = [str(m) for m in bench.MEASURES]


def _table():
    """Two collections, budgets 50 and 100, one fusion. Every measure of a row holds the same value, so each
    summary's cell can be read off the values below."""
    values = {  # (collection, budget): {system: value}
        ('a', 50): {'Rerank': .1, 'GAR': .30, 'SlideGAR': .35, 'RGS': .20, 'GAREN': .2, 'GAREN+': .40},
        ('a', 100): {'Rerank': .1, 'GAR': .30, 'SlideGAR': .25, 'RGS': .20, 'GAREN': .9, 'GAREN+': .20},
        ('b', 50): {'Rerank': .2, 'GAR': .50, 'SlideGAR': .10, 'RGS': .10, 'GAREN': .4, 'GAREN+': .45},
        ('b', 100): {'Rerank': .1, 'GAR': .50, 'SlideGAR': .60, 'RGS': .10, 'GAREN': .4, 'GAREN+': .70},
    }
    return pd.DataFrame([{'collection': c, 'budget': b, 'fusion': .1, 'system': s, **dict.fromkeys(NAMES, v)}
                         for (c, b), row in values.items() for s, v in row.items()])


def test_margins_take_the_best_baseline_of_each_collection():
    out = bench.margins(_table()).set_index('budget')
    # budget 50: a .40 - .35 = +.05, b .45 - .50 = -.05 -> mean 0, ahead on one
    # budget 100: a .20 - .30 = -.10, b .70 - .60 = +.10 -> mean 0 again; GAREN (.9 on a) is not a baseline
    assert set(out.loc[50, NAMES]) == {'+0.0000 (1/2)'}
    assert set(out.loc[100, NAMES]) == {'+0.0000 (1/2)'}
    table = _table()
    table.loc[(table.system == 'GAREN+') & (table.collection == 'a') & (table.budget == 50), NAMES] = .55
    assert set(bench.margins(table).set_index('budget').loc[50, NAMES]) == {'+0.0750 (1/2)'}  # (.20 - .05) / 2


def test_growth_marks_each_fall_in_the_systems_order():
    out = bench.growth(_table())
    assert list(out.system) == bench.SYSTEMS
    cells = out.set_index('system')[NAMES[0]]
    # means over a and b: GAR .40 -> .40 (no fall), SlideGAR .225 -> .425, GAREN+ .425 -> .45, Rerank .15 -> .10
    assert cells['GAR'] == '0.4000  0.4000 '
    assert cells['SlideGAR'] == '0.2250  0.4250 '
    assert cells['GAREN+'] == '0.4250  0.4500 '
    assert cells['Rerank'] == '0.1500  0.1000!'
    assert cells['RGS'] == '0.1500  0.1500 '
