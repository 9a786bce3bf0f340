"""Value assertions for the decisions of docs/decisions.md that no other test pins (each test names its decision).

Tiny hand-built inputs only: a four-document collection for PISA, arrays for the artifact and the partition.
"""
import json
import warnings

import numpy as np
import pyterrier as pt
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage, planted

from pyterrier_garen import GAREN, GroupCorpusGraph, LocalDataset, SlideGAR, leiden_partition
from pyterrier_garen._summaries import ExtractiveSummarizer

DOCS = [{'docno': 'd1', 'title': 'Zeppelin', 'text': 'airship history'},
        {'docno': 'd2', 'text': 'airship design and airship engines'},
        {'docno': 'd3', 'text': 'balloon flight airship'},
        {'docno': 'd4', 'text': '!!! ??? ...'}]  # no indexable term


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp('tiny')
    (folder / 'docs.jsonl').write_text(''.join(json.dumps(d) + '\n' for d in DOCS))
    (folder / 'queries.tsv').write_text('q1\tzeppelin\n')
    (folder / 'qrels.txt').write_text('q1 0 d1 1\n')
    return LocalDataset(folder)


# -- Collections and graphs ---------------------------------------------------------------------------------------

def test_document_text_is_title_plus_text_for_bm25(tiny, tmp_path):
    """Decision: indexing uses ``title + ' ' + text``: a term only in d1's title finds d1."""
    from pyterrier_garen import bm25_index
    index = bm25_index(tiny, tmp_path / 'bm25.pisa')
    assert index.bm25(num_results=10).search('zeppelin').docno.tolist() == ['d1']


def test_document_text_is_title_plus_text_for_encoding(tiny, tmp_path):
    """Decision: encoding uses ``title + ' ' + text`` (the encoder is sent exactly these texts)."""
    from pyterrier_garen import encode_corpus
    pytest.importorskip('pyterrier_dr')

    class Recording(pt.Transformer):
        texts = []

        def transform(self, inp):
            self.texts.extend(inp.text)
            return inp.assign(doc_vec=[np.ones(4, dtype=np.float32) * (i + 1) for i in range(len(inp))])
    encode_corpus(tiny, tmp_path / 'v.flex', encoder=Recording(), verbose=False)
    # (in the encoder's own batch order, e.g. by length: the texts matter here, not their order)
    assert sorted(Recording.texts) == sorted(['Zeppelin airship history', 'airship design and airship engines',
                                              'balloon flight airship', '!!! ??? ...'])


def test_bm25_graph_gives_a_document_without_terms_no_neighbours(tiny, tmp_path):
    """Decision: a document with no indexable term gets no neighbours (the library pads with itself, and the
    partition and GAREN drop self-loops)."""
    from pyterrier_garen import bm25_corpus_graph, bm25_index
    index = bm25_index(tiny, tmp_path / 'bm25.pisa')
    graph = bm25_corpus_graph(tiny, tmp_path / 'bm25.k2.graph', index=index, k=2)
    assert set(map(str, graph.neighbours('d4'))) <= {'d4'}
    assert 'd4' not in set(map(str, graph.neighbours('d2')))
    groups = GroupCorpusGraph.from_corpus_graph(graph, tmp_path / 'g')
    assert groups.group_members(groups.group_of('d4')) == ['d4']  # no edge joins it to anyone


def test_docnos_are_stored_in_string_order_with_edges_remapped(tmp_path):
    """Decision: docnos are stored in string-sorted order; edges follow their documents."""
    docnos = ['b', '10', 'a', '9']
    edges = np.array([[1, 2], [3, 0], [0, 1], [2, 3]])  # b -> 10, a; 10 -> 9, b; a -> b, 10; 9 -> a, 9 (self)
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape), labels=[0, 0, 1, 1])
    assert groups.docnos_list() == ['10', '9', 'a', 'b']
    assert [str(d) for d in groups.neighbours('b')] == ['10', 'a']
    assert [str(d) for d in groups.neighbours('10')] == ['9', 'b']
    assert [groups.group_of(d) for d in ('b', '10', 'a', '9')] == [0, 0, 1, 1]


# -- Groups -------------------------------------------------------------------------------------------------------

def test_leidenalg_ignores_randomness_and_records_it(tmp_path):
    """Decision: ``randomness`` applies to the igraph backend only; leidenalg's labels do not move with it, and the
    artifact still records the value asked for."""
    edges, weights, _ = planted(num_clusters=10, size=12, seed=3)
    a = leiden_partition(edges, weights, max_group_size=5, backend='leidenalg', randomness=0.001)
    b = leiden_partition(edges, weights, max_group_size=5, backend='leidenalg', randomness=0.5)
    assert np.array_equal(a.labels, b.labels)
    docnos = [f'd{i:03d}' for i in range(len(edges))]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # some planted clusters stay above 5 (unsplittable): not what is tested here
        groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights, max_group_size=5,
                                              backend='leidenalg', randomness=0.25)
    assert groups.meta['partition']['randomness'] == 0.25
    assert groups.meta['partition']['backend'] == 'leidenalg'


def test_extractive_concept_is_the_three_most_salient_terms():
    """Decision: the extractive concept is the three most salient terms (frequency in the group times the number of
    members using the term, ties by term)."""
    docs = [{'docno': '1', 'text': 'wing flutter wing tests'}, {'docno': '2', 'text': 'wing flutter models'},
            {'docno': '3', 'text': 'shock tests'}]
    # tf x df: wing 3 x 2 = 6; flutter 2 x 2 = 4; tests 2 x 2 = 4; models 1; shock 1 -> wing, flutter, tests
    record = ExtractiveSummarizer().summarize_one(docs)
    assert record['concept'] == 'wing flutter tests'
    assert record['summary'].startswith('Key terms: wing, flutter, tests, models, shock.')


# -- GAREN --------------------------------------------------------------------------------------------------------

def test_eligible_groups_with_equal_navigator_scores_by_vote_then_rank_then_id():
    """Decision: eligible groups with equal navigator scores are ordered by vote, then best first-stage rank, then
    group id (explore takes one document from each in that order)."""
    # W_1 = [r0, r1, r2, r3]. Votes: G3 2 (r0, r1), G1 1 (r2), G2 1 (r3), G4 1 (r3). G1 holds r5 (rank 5),
    # G2 holds r4 (rank 4), G4 holds no document of R_0. The navigator scores every group 0.
    # order: G3 (vote 2), G2 (rank 4), G1 (rank 5), G4 (absent from R_0): one document from each
    groups = {'r0': 0, 'r1': 0, 'r2': 0, 'r3': 0, 'r4': 2, 'r5': 1, 'x1': 1, 'x2': 2, 'x3': 3, 'x4': 4, 'x5': 3}
    adjacency = {'r0': ['x3'], 'r1': ['x5'], 'r2': ['x1'], 'r3': ['x2', 'x4']}
    reranker = DictScorer({})
    garen = GAREN(reranker, ToyGroupGraph(adjacency, groups), DictScorer({}), window=4, keep=1, budget=8,
                  group_budget=10, strategy='explore', trace=True)
    garen(first_stage(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']))
    assert garen.last_trace[0]['eligible'][:4] == [3, 2, 1, 4]
    # members: G3 x3, x5; G2 r4 (in R_0 first), x2; G1 r5, x1; G4 x4 -> round-robin, 3 slots
    assert garen.last_trace[0]['expansion'] == ['x3', 'r4', 'r5']


# -- Baselines ----------------------------------------------------------------------------------------------------

def test_slidegar_empty_pool_counts_as_a_turn():
    """Decision: an empty pool still counts as a turn (as in the authors' code)."""
    # window 4, keep 2, budget 10. Step 1: [r1 r2 r3 r4] -> r1 r2 kept. Frontier turn: r1, r2 have no neighbours,
    # empty -> R_0 gives r5, r6 (and the frontier's turn is spent). Step 2: [r1 r2 r5 r6] -> r5, r6 top (scores);
    # r5's neighbour n1 is on the frontier, but it is R_0's turn again only if the empty pool did NOT count: counted,
    # the next turn is the frontier's: n1 (with n2). Step 3: [r5 r6 n1 n2].
    graph = ToyGroupGraph({'r5': ['n1', 'n2']}, {})
    reranker = DictScorer({'r5': 9, 'r6': 8, 'r1': 2, 'r2': 1})
    SlideGAR(reranker, graph, window=4, keep=2, budget=10)(first_stage(['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7',
                                                                         'r8']))
    windows = [c.docno.tolist() for c in reranker.calls]
    assert windows[:3] == [['r1', 'r2', 'r3', 'r4'], ['r1', 'r2', 'r5', 'r6'], ['r5', 'r6', 'n1', 'n2']]

