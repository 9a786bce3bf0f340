import json

import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import R, nDCG

from pyterrier_garen import LocalDataset, RemoveExcluded, remove_excluded
from pyterrier_garen.datasets import load_dataset


def _write(folder, docs, queries='q1\thello world\n', qrels='q1 0 d1 1\n'):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'docs.jsonl').write_text(docs)
    (folder / 'queries.tsv').write_text(queries)
    (folder / 'qrels.txt').write_text(qrels)
    return LocalDataset(folder)


def test_cranfield_counts(cranfield):
    # counts from shared/data/cranfield/SOURCE.md
    assert len(cranfield.docnos()) == 1400
    assert len(cranfield.get_topics()) == 225
    qrels = cranfield.get_qrels()
    assert len(qrels) == 1837
    assert (cranfield.get_qrels(binary=True).label == 1).sum() == 1612
    doc = next(iter(cranfield.get_corpus_iter(verbose=False)))
    assert set(doc) == {'docno', 'title', 'text'}


def test_text_loader(cranfield):
    frame = pd.DataFrame({'qid': ['1'], 'query': ['x'], 'docno': ['1']})
    out = pt.text.get_text(cranfield, 'text')(frame)
    assert out.text[0].startswith('experimental investigation of the aerodynamics')
    both = cranfield.text_loader()(frame)
    assert {'title', 'text'} <= set(both.columns)


def test_load_dataset_by_name(cranfield):
    assert isinstance(load_dataset('cranfield'), LocalDataset)


def test_usable_in_experiment(cranfield, cran_pisa):
    topics = cranfield.get_topics().head(20)
    res = pt.Experiment([cran_pisa.bm25(num_results=100)], topics, cranfield.get_qrels(binary=True),
                        [nDCG @ 10, R @ 100], names=['BM25'])
    assert 0.2 < res['nDCG@10'][0] < 0.8


def test_malformed_json_line_number(tmp_path):
    ds = _write(tmp_path / 'c', '{"docno": "d1", "text": "a"}\n{"docno": "d2", "text": \n')
    with pytest.raises(ValueError, match='line 2'):
        list(ds.get_corpus_iter(verbose=False))


def test_missing_docno(tmp_path):
    ds = _write(tmp_path / 'c', '{"text": "a"}\n')
    with pytest.raises(ValueError, match='line 1.*docno'):
        list(ds.get_corpus_iter(verbose=False))


def test_duplicate_docno(tmp_path):
    ds = _write(tmp_path / 'c', '{"docno": "d1", "text": "a"}\n{"docno": "d1", "text": "b"}\n')
    with pytest.raises(ValueError, match="duplicate docno 'd1'"):
        ds.docnos()


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match='does not exist'):
        LocalDataset(tmp_path / 'nope')
    (tmp_path / 'c').mkdir()
    with pytest.raises(FileNotFoundError, match='docs.jsonl'):
        LocalDataset(tmp_path / 'c')


def test_bad_query_line(tmp_path):
    ds = _write(tmp_path / 'c', '{"docno": "d1", "text": "a"}\n', queries='q1 no tab here\n')
    with pytest.raises(ValueError, match='line 1'):
        ds.get_topics()


def test_qrels_unknown_docno_warns_with_counts(tmp_path):
    ds = _write(tmp_path / 'c', json.dumps({'docno': 'd1', 'text': 'a'}) + '\n', qrels='q1 0 d1 1\nq1 0 zz 1\n')
    with pytest.warns(UserWarning, match='1 qrels name docnos'):
        qrels = ds.get_qrels()
    assert len(qrels) == 2


def test_bad_qrels_line(tmp_path):
    ds = _write(tmp_path / 'c', '{"docno": "d1", "text": "a"}\n', qrels='q1 0 d1\n')
    with pytest.raises(ValueError, match='line 1'):
        ds.get_qrels()


def test_remove_excluded_drops_and_reranks():
    run = pd.DataFrame({'qid': ['1'] * 4 + ['2'] * 2, 'docno': ['a', 'b', 'c', 'd', 'a', 'b'],
                        'score': [4., 3., 2., 1., 2., 1.], 'rank': [0, 1, 2, 3, 0, 1]})
    qrels = pd.DataFrame({'qid': ['1', '1', '2'], 'docno': ['b', 'c', 'b'], 'label': [-100, 1, 1]})
    out = remove_excluded(run, qrels)
    assert list(out[out.qid == '1'].docno) == ['a', 'c', 'd']
    assert list(out[out.qid == '1']['rank']) == [0, 1, 2]
    assert list(out[out.qid == '2'].docno) == ['a', 'b']  # excluded only for the query that excludes it
    assert len(RemoveExcluded(qrels)(run)) == 5


def test_remove_excluded_changes_ndcg_like_bright():
    # the excluded doc at rank 1 would push the relevant one down; BRIGHT's script drops it first
    run = pd.DataFrame({'qid': ['1', '1'], 'docno': ['x', 'rel'], 'score': [2., 1.]})
    qrels = pd.DataFrame({'qid': ['1', '1'], 'docno': ['x', 'rel'], 'label': [-100, 1]})
    import ir_measures
    before = ir_measures.calc_aggregate([nDCG @ 10], qrels[qrels.label >= 0].rename(
        columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'}),
        run.rename(columns={'qid': 'query_id', 'docno': 'doc_id'}))[nDCG @ 10]
    after = ir_measures.calc_aggregate([nDCG @ 10], qrels[qrels.label >= 0].rename(
        columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'}),
        remove_excluded(run, qrels).rename(columns={'qid': 'query_id', 'docno': 'doc_id'}))[nDCG @ 10]
    assert before < 1.0
    assert after == pytest.approx(1.0)
