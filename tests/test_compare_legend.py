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
                     'the first stage (measured in docs/results.md, "RGS\'s unspent budget"). It re-ranks its queue '
                     'after every expansion, so for the same budget it sends the reranker more documents than the '
                     'other searches (bench/reranker_load.py counts them).']
    assert 'RGS:' not in format_comparison(_table(['BM25', 'GAREN']))


def test_budget_spent_names_the_systems_below_the_budget_on_some_query():
    from pyterrier_garen._compare import budget_spent
    counts = {'GAR': pd.Series({'1': 10, '2': 10, '3': 10}),
              'SlideGAR': pd.Series({'1': 10, '2': 9, '3': 10}),
              'RGS': pd.Series({'1': 4, '2': 10}),  # no row for query 3: it counts 0
              'GAREN': pd.Series({'1': 10, '2': 10, '3': 10, '9': 1})}  # a query not asked about is not counted
    assert budget_spent(counts, ['1', '2', 3], 10) == {
        'SlideGAR': {'mean': 9.7, 'short': 1, 'queries': 3},
        'RGS': {'mean': 4.7, 'short': 2, 'queries': 3}}
    assert budget_spent(counts, ['1'], 4) == {}  # exactly the budget is spent
    assert budget_spent({'BM25': pd.Series(dtype=int)}, ['1', '2'], 5) == {
        'BM25': {'mean': 0.0, 'short': 2, 'queries': 2}}


def test_the_budget_line_says_who_spent_less_and_why():
    from pyterrier_garen._compare import spent_legend
    spent = {'SlideGAR': {'mean': 395.3, 'short': 7, 'queries': 225}, 'RGS': {'mean': 228.5, 'short': 1, 'queries': 1}}
    assert spent_legend(spent, 400) == (
        'Budget spent: fewer than 400 documents per query (mean) for SlideGAR 395.3 (7 of 225 queries short), RGS '
        '228.5 (1 of 1 query short). A search stops short when nothing new is left within its reach; BM25 and plain '
        're-ranking hold at most what the first stage found (docs/results.md, "every search spends its budget"). '
        'SlideGAR(fill=True) takes the rest from the neighbours of the documents it dropped (measured in '
        'docs/results.md, "SlideGAR\'s fill").')
    del spent['SlideGAR']  # the fill is named only under a short SlideGAR
    assert spent_legend(spent, 400) == (
        'Budget spent: fewer than 400 documents per query (mean) for RGS 228.5 (1 of 1 query short). A search stops '
        'short when nothing new is left within its reach; BM25 and plain re-ranking hold at most what the first '
        'stage found (docs/results.md, "every search spends its budget").')
    spent['SlideGAR'] = {'mean': 395.3, 'short': 7, 'queries': 225}
    assert spent_legend({}, 100) == ''
    table = _table(['BM25', 'GAR'])
    table.attrs['run'] = {'collection': 'c', 'documents': 9, 'queries': 1, 'total_queries': 1, 'judged_queries': 1,
                          'labels': 'l', 'excluded_removed': False, 'budget': 400, 'first_stage': 'f',
                          'reranker': 'r', 'navigator': 'n', 'groups': 'g', 'spent': spent}
    assert format_comparison(table).endswith(spent_legend(spent, 400))
    del table.attrs['run']['spent']  # a record written before the count was kept
    assert 'Budget spent' not in format_comparison(table)


def test_a_table_of_the_baseline_alone_prints_empty_comparison_cells():
    # pt.Experiment gives the baseline's own row None in every comparison column; alone, the column holds only None
    table = _table(['GAREN']).assign(**{'R@100 +': [None], 'R@100 -': [None], 'R@100 p-value': [None]})
    row = format_comparison(table).splitlines()[1]
    assert row.split() == ['GAREN', '0.5', '0.7']
    assert 'None' not in format_comparison(table)


def test_the_groups_line_says_when_leiden_left_a_group_over_the_limit():
    from pyterrier_garen._compare import _over_limit
    assert _over_limit({'over_limit': 0, 'max': 20}) == ''
    assert _over_limit({'over_limit': 1, 'max': 34}) == '; 1 group larger that Leiden could not split, up to 34'
    assert _over_limit({'over_limit': 3, 'max': 25}) == '; 3 groups larger that Leiden could not split, up to 25'


def _doc_navigation_parts():
    """20 first-stage documents, each with 3 neighbours of its own that no other document links to (60 in all), and
    a scorer that records what it is asked."""
    import pyterrier as pt
    from _toy_graph import DictScorer, ToyGroupGraph, first_stage
    heads = [f'd{i}' for i in range(20)]
    adjacency = {d: [f'{d}n{j}' for j in range(3)] for d in heads}
    groups = {d: i for i, d in enumerate(heads)}
    groups.update({n: i for i, d in enumerate(heads) for n in adjacency[d]})  # a document's neighbours share its group
    graph = ToyGroupGraph(adjacency, groups)
    scores = {d: float(i) for i, d in enumerate(sorted(groups))}
    return graph, pt.Transformer.from_df(first_stage(heads)), DictScorer(scores), DictScorer({})


def test_garen_doc_navigates_by_the_reranker_beyond_the_budget():
    """What GAREN_DOC_LEGEND says, counted by hand: at budget 30 GAREN-doc re-ranks the 20 first-stage documents, then
    its navigator (the reranker, build_systems' default) scores all 60 unobserved neighbours of that window, and 10 of
    them enter the second window: the reranker scored 20 + 60 = 80 distinct documents, and was sent 20 + 60 + 20 =
    100. GAREN, whose navigator is a model of its own, has its reranker score exactly its 30."""
    import types
    import warnings

    from pyterrier_garen import build_systems
    graph, first, reranker, navigator = _doc_navigation_parts()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        pipes = build_systems(types.SimpleNamespace(groups=graph), reranker, navigator, budget=30, first_stage=first,
                              systems=['GAREN-doc'])
        run = pipes['GAREN-doc'](first.df[['qid', 'query']].drop_duplicates())
    assert len(run) == 30  # the budget, as its rows count it
    sent = [d for call in reranker.calls for d in call['docno']]
    assert (len(set(sent)), len(sent)) == (80, 100)
    graph, first, reranker, navigator = _doc_navigation_parts()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        build_systems(types.SimpleNamespace(groups=graph), reranker, navigator, budget=30, first_stage=first,
                      systems=['GAREN'])['GAREN'](first.df[['qid', 'query']].drop_duplicates())
    assert len({d for call in reranker.calls for d in call['docno']}) == 30


def test_a_garen_doc_row_says_its_navigator_is_the_reranker():
    table = _table(['BM25', 'GAREN', 'GAREN-doc'])
    table.attrs['run'] = {'collection': 'c', 'documents': 9, 'queries': 1, 'total_queries': 1, 'judged_queries': 1,
                          'labels': 'l', 'excluded_removed': False, 'budget': 100, 'first_stage': 'f',
                          'reranker': 'r', 'navigator': 'n', 'groups': 'g', 'doc_navigator': 'reranker'}
    lines = [line for line in format_comparison(table).splitlines() if line.startswith('GAREN-doc:')]
    assert lines == ['GAREN-doc: its navigator scores documents, and here it is the reranker itself, so it has the '
                     "reranker's score of every unobserved neighbour of each window before choosing which to "
                     're-rank: the reranker scores several times the budget in distinct documents per query '
                     '(bench/reranker_load.py counts them), so its row is not at the budget of the others.']
    no_row = _table(['BM25', 'GAREN'])
    no_row.attrs['run'] = table.attrs['run']
    assert 'GAREN-doc:' not in format_comparison(no_row)
    del table.attrs['run']['doc_navigator']  # a record written before compare said it (its own navigator unknown)
    assert 'GAREN-doc:' not in format_comparison(table)

