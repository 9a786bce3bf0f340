"""``compare --reranker`` end to end (issue 19): the command line, a small synthetic collection, a tiny local
cross-encoder (no download). Oracle: the Rerank row's nDCG@10 equals the one computed by an independent route
(BM25 top 20 sorted by the cross-encoder's own ``predict`` on (query, text), evaluated with ir_measures), and the
cross-encoder is called under ``--reranker cross-encoder:FOLDER`` and never under the default ``minilm``, whose
Rerank row then differs while the BM25 row (no reranker) stays the same."""
import json

import pandas as pd
import pytest

from pyterrier_garen.__main__ import main
from pyterrier_garen.synthetic import make_synthetic

BUDGET = 20  # one window: with a pointwise reranker, Rerank's list is the top 20 sorted by score


def _run(capsys, argv, out):
    main(['compare', *argv, '--systems', 'BM25', 'Rerank', '--budget', str(BUDGET), '--quiet', '--out', str(out)])
    printed = capsys.readouterr().out
    return pd.read_csv(out).set_index('name'), printed


def test_compare_uses_the_chosen_reranker(tmp_path, capsys, monkeypatch):
    st = pytest.importorskip('sentence_transformers', reason='the cpu extra (sentence-transformers) is not installed')
    import ir_measures
    from _tiny_encoder import build_tiny_cross_encoder
    from ir_measures import nDCG

    from pyterrier_garen import LocalDataset, prepare
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    dataset = make_synthetic(tmp_path / 'collection', docs_per_topic=6, queries_per_topic=1)
    docs = {d['docno']: d for d in map(json.loads, (tmp_path / 'collection' / 'docs.jsonl').read_text().splitlines())}
    topics = dataset.get_topics()
    folder = build_tiny_cross_encoder(tmp_path / 'tiny-ce', [d['text'] for d in docs.values()] + list(topics['query']))

    calls = []
    predict = st.CrossEncoder.predict

    def counted(self, pairs, *args, **kwargs):
        calls.append(len(pairs))
        return predict(self, pairs, *args, **kwargs)
    monkeypatch.setattr(st.CrossEncoder, 'predict', counted)

    workdir = tmp_path / 'work'
    common = ['--dataset', str(tmp_path / 'collection'), '--workdir', str(workdir)]
    minilm, _ = _run(capsys, common, tmp_path / 'minilm.csv')
    assert calls == []  # the default reranker is the stored-vector scorer
    cross, printed = _run(capsys, [*common, '--reranker', f'cross-encoder:{folder}'], tmp_path / 'cross.csv')
    assert f'reranker:    cross-encoder {folder} over the document text (CrossEncoderScorer)' in printed

    # the independent route: BM25 (compare's first stage) top 20, sorted by the model's own scores
    prepared = prepare(LocalDataset(tmp_path / 'collection'), workdir)
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    first = first[first['rank'] < BUDGET]
    assert sum(calls) == len(first) > 0  # every first-stage top-20 pair scored, once
    model = predict.__get__(st.CrossEncoder(str(folder)))
    run = first[['qid', 'docno']].assign(score=model([(q, docs[d]['text']) for q, d in
                                                      zip(first['query'], first['docno'])]).astype(float))
    qrels = dataset.get_qrels().rename(columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'})
    expected = ir_measures.calc_aggregate([nDCG @ 10], qrels, run.rename(columns={'qid': 'query_id',
                                                                                  'docno': 'doc_id'}))[nDCG @ 10]
    assert cross.loc['Rerank', 'nDCG@10'] == pytest.approx(expected, abs=1e-9)
    assert cross.loc['BM25'].tolist() == minilm.loc['BM25'].tolist()
    assert cross.loc['Rerank', 'nDCG@10'] != pytest.approx(minilm.loc['Rerank', 'nDCG@10'], abs=1e-6)
