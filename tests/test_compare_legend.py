"""compare explains GAREN+ wherever it prints it (issue 19): the legend line under the table names its options."""
import pandas as pd

from pyterrier_garen import format_comparison
from pyterrier_garen._compare import GAREN_PLUS


def _table(names):
    return pd.DataFrame({'name': names, 'nDCG@10': [0.5] * len(names), 'R@100': [0.7] * len(names)})


def test_garen_plus_row_comes_with_its_legend():
    text = format_comparison(_table(['BM25', 'GAREN', 'GAREN+']))
    lines = [line for line in text.splitlines() if line.startswith('GAREN+:')]
    assert len(lines) == 1
    for key, value in GAREN_PLUS.items():
        assert f'{key}={value}' in lines[0]
    assert 'beyond the paper' in lines[0]
    assert 'docs/results.md' in lines[0]


def test_no_legend_without_the_row():
    assert 'GAREN+:' not in format_comparison(_table(['BM25', 'GAREN']))


def test_an_rgs_row_says_that_rgs_can_leave_budget_unspent():
    text = format_comparison(_table(['BM25', 'RGS', 'GAREN']))
    lines = [line for line in text.splitlines() if line.startswith('RGS:')]
    assert lines == ['RGS: as its reference code, it ends when no document of its queue has an unseen neighbour '
                     'left, so it can re-rank fewer documents than the budget; RGS(backfill=True) spends the rest on '
                     'the first stage (measured in docs/results.md, "RGS\'s unspent budget").']
    assert 'RGS:' not in format_comparison(_table(['BM25', 'GAREN']))
