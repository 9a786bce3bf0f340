"""Any PyTerrier reranker inside GAREN (issue 19): a cross-encoder (a tiny local model, no download) and an arbitrary
text-reading pt.Transformer, fed text by pt.text.get_text. Oracle: GAREN with the reranker fetching text itself gives
the same output as GAREN with a scorer that looks the same scores up by (qid, docno), computed directly from the
collection's texts (an independent route)."""
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import GAREN, CrossEncoderScorer, VoteNavigator, prepare, with_text
from pyterrier_garen.synthetic import make_synthetic


@pytest.fixture(scope='module')
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('text-rerankers')
    dataset = make_synthetic(tmp / 'synthetic', docs_per_topic=8, queries_per_topic=1)
    prepared = prepare(dataset, tmp / 'w', graph='bm25', vectors=False, k=4, max_group_size=6)
    topics = dataset.get_topics().head(3)
    first = prepared.bm25_index.bm25(num_results=40)(topics)
    texts = {d['docno']: d['text'] for d in dataset.get_corpus_iter(verbose=False)}
    return dataset, prepared.groups, topics, first, texts


def _lookup(scores):
    return pt.apply.doc_score(lambda row: scores[(str(row['qid']), str(row['docno']))], batch_size=None)


def _garen(reranker, groups):
    return GAREN(reranker, groups, VoteNavigator(), window=6, keep=3, budget=24, group_budget=4)


def _same_run(a, b):
    cols = ['qid', 'docno', 'rank', 'iteration', 'group']
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True))
    assert (a.groupby('qid').size() == 24).all()


def test_any_text_transformer_inside_garen(setup):
    dataset, groups, topics, first, texts = setup

    def overlap(row):  # query words found in the text, ties broken by the text's length
        words = set(row['query'].lower().split())
        text = row['text'].lower().split()
        return sum(w in words for w in text) + 1e-3 * len(text)
    fetched = with_text(dataset, pt.apply.doc_score(overlap))
    direct = {(str(q), d): overlap({'query': query, 'text': texts[d]})
              for q, query in zip(topics['qid'], topics['query']) for d in texts}
    got = _garen(fetched, groups)(first)
    _same_run(got, _garen(_lookup(direct), groups)(first))
    assert 'text' not in first.columns  # the text came from pt.text.get_text inside the reranker


def test_a_cross_encoder_inside_garen(setup, tmp_path):
    st = pytest.importorskip('sentence_transformers', reason='the cpu extra (sentence-transformers) is not installed')
    from _tiny_encoder import build_tiny_cross_encoder
    dataset, groups, topics, first, texts = setup
    folder = build_tiny_cross_encoder(tmp_path / 'tiny-ce', list(texts.values()) + list(topics['query']))
    scorer = CrossEncoderScorer(str(folder), batch_size=16)
    model = st.CrossEncoder(str(folder))
    pairs = [(str(q), query, d) for q, query in zip(topics['qid'], topics['query']) for d in texts]
    predicted = model.predict([(query, texts[d]) for _, query, d in pairs], batch_size=len(pairs))
    direct = {(q, d): float(s) for (q, _, d), s in zip(pairs, predicted)}
    assert len({round(v, 4) for v in direct.values()}) > len(direct) // 2  # a model that tells documents apart
    got = _garen(with_text(dataset, scorer), groups)(first)
    _same_run(got, _garen(_lookup(direct), groups)(first))
    assert repr(scorer) == f'CrossEncoderScorer({str(folder)!r}, batch_size=16)'


def test_the_cross_encoder_needs_text(setup, tmp_path):
    _, _, topics, first, _ = setup
    with pytest.raises(Exception, match='text'):
        CrossEncoderScorer('unused')(first)


NOT_A_FUNCTION = 'a factory spec may name this, and is refused: it cannot be called'


def overlap_reranker(prepared):
    """A reranker factory for ``--reranker factory:test_text_rerankers:overlap_reranker``."""
    def score(row):
        return sum(w in set(row['query'].lower().split()) for w in row['text'].lower().split())
    return with_text(prepared.dataset, pt.apply.doc_score(score))


def test_compare_chooses_among_registered_rerankers(setup, tmp_path):
    from pyterrier_garen import compare
    from pyterrier_garen._text_rerankers import RERANKERS, build_reranker
    assert set(RERANKERS) == {'minilm', 'cross-encoder', 'factory'}
    dataset, groups, topics, first, texts = setup

    class Prepared:
        pass
    prepared = Prepared()
    prepared.dataset = dataset
    reranker, text = build_reranker('factory:test_text_rerankers:overlap_reranker', prepared)
    assert text == 'test_text_rerankers:overlap_reranker(prepared)'
    scored = reranker(first.head(5))
    assert list(scored['score']) == [sum(w in set(q.lower().split()) for w in texts[d].lower().split())
                                     for q, d in zip(first.head(5)['query'], first.head(5)['docno'])]
    with pytest.raises(ValueError, match='needs a model'):
        build_reranker('cross-encoder', prepared)
    for spec, message in (('bogus', 'unknown reranker .bogus.: use one of minilm, cross-encoder, factory'),
                          ('cross-encoder', 'needs a model'),
                          ('factory:test_text_rerankers', r'--reranker factory:MODULE:FUNCTION, got '
                                                          r'factory:test_text_rerankers$'),
                          ('factory:no_such_module_zz:f', r"^--reranker factory:no_such_module_zz:f: cannot find f in "
                                                          r"no_such_module_zz \(ModuleNotFoundError: No module named "
                                                          r"'no_such_module_zz'\)$"),
                          ('factory:test_text_rerankers:nope', 'cannot find nope in test_text_rerankers '
                                                               r'\(AttributeError: '),
                          ('factory:test_text_rerankers:NOT_A_FUNCTION', '^--reranker factory:test_text_rerankers:'
                                                                         'NOT_A_FUNCTION: NOT_A_FUNCTION is a str, '
                                                                         'not a function of prepared$')):
        with pytest.raises(ValueError, match=message):
            compare(dataset, reranker=spec, workdir=tmp_path / 'never-built')
        assert not (tmp_path / 'never-built').exists()  # refused before anything was built
