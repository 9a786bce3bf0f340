"""Oracles for the components around GAREN: the yes/no estimate with one answer token missing, the summary
navigator's scores, the Leiden seed from every entry point down to Leiden, and the ``budget < window`` warning."""
import math
import types
import warnings

import numpy as np
import pandas as pd
import pytest
from _toy_graph import R0, DictScorer, ToyGroupGraph, first_stage, planted, worked_garen
from _vector_stubs import TableEncoder

import pyterrier_garen
from pyterrier_garen import GroupCorpusGraph, OpenAIEngine, SummaryNavigator, build_systems, prepare
from pyterrier_garen._registry import SYSTEM_NAMES

# ---------------------------------------------------------------------------------------------------------------------
# P(yes) when the server returns the log-probability of one answer token only


def conv(text):
    return [{'role': 'system', 'content': 'Judge.'}, {'role': 'user', 'content': text}]


@pytest.mark.parametrize(('dropped', 'text', 'expected'), [
    # 'good': log P(yes) = log .8 returned, 'no' missing; the missing token gets the lowest returned log-probability
    # ('maybe' at -9), an upper bound of its own: P = .8 / (.8 + e^-9) = .999846 (not 1, not .5, not .8)
    (' no', 'good', 0.8 / (0.8 + math.exp(-9.0))),
    # 'bad': log P(no) = log .8 returned, 'yes' missing: P = e^-9 / (e^-9 + .8) = .000154
    ('yes', 'bad', math.exp(-9.0) / (math.exp(-9.0) + 0.8)),
    # both missing: two equal floors, P = .5
    ('both', 'good', 0.5),
])
def test_yes_no_with_one_token_missing(fake_openai, dropped, text, expected):
    srv = fake_openai(generic=True)
    original = srv.top
    srv.top = lambda body, ly, ln: {k: v for k, v in original(body, ly, ln).items()
                                    if k != dropped and not (dropped == 'both' and k in ('yes', ' no'))}
    engine = OpenAIEngine(srv.url, 'fake-model', vllm_extensions=False)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the inexact-estimate warning is tested in test_llm_engines
        probability = engine.yes_no([conv(text)])[0].probability
    assert probability == pytest.approx(expected, rel=1e-9)
    if dropped != 'both':
        assert engine.inexact_yes_no == 1


# ---------------------------------------------------------------------------------------------------------------------
# SummaryNavigator: score = cos(query vector, vector of the group's summary text)

SUMMARIES = {0: 'rockets', 1: 'ships', 2: 'trains'}
SUMMARY_VECTORS = {'rockets': [3., 4.], 'ships': [0., 2.], 'trains': [-1., 0.]}


def test_summary_navigator_scores_are_cosines():
    graph = ToyGroupGraph({}, {'a': 0, 'b': 1, 'c': 2}, summaries=SUMMARIES)
    encoder = TableEncoder({'q': [2., 0.], 'r': [1., 1.]}, SUMMARY_VECTORS)
    navigator = SummaryNavigator(graph, encoder=encoder)
    rows = pd.DataFrame({'qid': ['1', '1', '1', '2'], 'query': ['q', 'q', 'q', 'r'], 'docno': ['0', '1', '2', '0'],
                         'text': ['', '', '', '']})
    out = navigator(rows)
    # q = (1, 0) after scaling: rockets (.6, .8) -> .6, ships (0, 1) -> 0, trains (-1, 0) -> -1;
    # r = (.7071, .7071): rockets -> (3 + 4) / (5 * sqrt 2) = .98995
    assert out.score.tolist() == pytest.approx([0.6, 0.0, -1.0, 7 / (5 * math.sqrt(2))], abs=1e-6)
    assert out['rank'].tolist() == [0, 1, 2, 0]
    assert sorted(encoder.encoded) == ['rockets', 'ships', 'trains']
    navigator(rows.iloc[:1])
    assert len(encoder.encoded) == 3  # each summary is encoded once, on first use
    assert len(navigator(rows.iloc[:0])) == 0


def test_summary_navigator_steers_garen():
    """The worked example of test_garen_algorithm with summary vectors that rank the groups as its NAVIGATE scores
    (.9 G2 > .8 G5 > .7 G3 > .5 G1 > .2 G0 > .1 G4) gives the same windows."""
    from _toy_graph import ADJACENCY, GROUPS, RERANK
    scores = {0: .2, 1: .5, 2: .9, 3: .7, 4: .1, 5: .8}
    summaries = {g: f'summary {g}' for g in scores}
    vectors = {f'summary {g}': [s, math.sqrt(1 - s * s)] for g, s in scores.items()}  # cos with (1, 0) = s
    reranker = DictScorer(RERANK)
    encoder = TableEncoder({'query one': [1., 0.]}, vectors)
    navigator = SummaryNavigator(ToyGroupGraph(ADJACENCY, GROUPS, summaries), encoder=encoder)
    expected_garen, expected_reranker, _ = worked_garen()
    expected = expected_garen(first_stage(R0))
    garen = pyterrier_garen.GAREN(reranker, ToyGroupGraph(ADJACENCY, GROUPS, summaries), navigator, window=4,
                                  keep=2, budget=10, group_budget=2, tau_switch=1)
    out = garen(first_stage(R0))
    assert [c.docno.tolist() for c in reranker.calls] == [c.docno.tolist() for c in expected_reranker.calls]
    assert out.docno.tolist() == expected.docno.tolist()


# ---------------------------------------------------------------------------------------------------------------------
# the Leiden seed: prepare / from_corpus_graph / partition_groups -> leiden_partition

@pytest.fixture
def leiden_seeds(monkeypatch):
    """The ``seed`` (and ``max_group_size``) of every leiden_partition call, which still runs."""
    from pyterrier_garen import _partition
    calls, real = [], _partition.leiden_partition

    def spy(*args, **kwargs):
        calls.append((kwargs.get('seed'), kwargs.get('max_group_size')))
        return real(*args, **kwargs)
    monkeypatch.setattr(_partition, 'leiden_partition', spy)
    return calls


@pytest.fixture
def source(tmp_path):
    edges, weights, _ = planted(num_clusters=10, size=12, seed=3)
    docnos = [f'd{i:03d}' for i in range(len(edges))]
    return GroupCorpusGraph.from_arrays(tmp_path / 'source', docnos, edges, weights, labels=np.zeros(len(edges)))


def _labels(groups):
    return (groups.path / 'group_of.u32.np').read_bytes()


@pytest.mark.filterwarnings('ignore:.*groups stay larger than max_group_size')
def test_from_corpus_graph_passes_the_seed_to_leiden(source, tmp_path, leiden_seeds):
    a = GroupCorpusGraph.from_corpus_graph(source, tmp_path / 'a', seed=7, max_group_size=5)
    b = GroupCorpusGraph.from_corpus_graph(source, tmp_path / 'b', seed=7, max_group_size=5)
    assert leiden_seeds == [(7, 5), (7, 5)]
    assert a.meta['partition']['seed'] == 7
    assert _labels(a) == _labels(b)  # the same seed: byte-identical group files
    others = [_labels(GroupCorpusGraph.from_corpus_graph(source, tmp_path / f's{s}', seed=s, max_group_size=5))
              for s in (8, 9, 10)]
    assert any(other != _labels(a) for other in others), 'another seed must change the partition'


@pytest.mark.filterwarnings('ignore:.*groups stay larger than max_group_size')
def test_partition_groups_passes_its_seed_and_the_other_parameters(source, tmp_path, leiden_seeds):
    from pyterrier_garen.analysis import partition_groups
    groups = GroupCorpusGraph.from_corpus_graph(source, tmp_path / 'g', seed=42, max_group_size=5)
    prepared = types.SimpleNamespace(groups=groups, graph=source, dataset=None)
    assert partition_groups(prepared, 42) is groups  # prepare's own seed: its groups
    other = partition_groups(prepared, 9)
    assert leiden_seeds == [(42, 5), (9, 5)]  # max_group_size is the prepared one, not the default 20
    assert other.meta['partition']['seed'] == 9
    assert str(other.path).endswith('g.seed9')
    direct = GroupCorpusGraph.from_corpus_graph(source, tmp_path / 'direct', seed=9, max_group_size=5)
    assert _labels(other) == _labels(direct)


def test_prepare_passes_its_seed_to_leiden(tmp_path, leiden_seeds):
    from pyterrier_garen import LocalDataset
    from pyterrier_garen.synthetic import make_synthetic
    make_synthetic(tmp_path / 'c', docs_per_topic=4, queries_per_topic=1)
    prepared = prepare(LocalDataset(tmp_path / 'c'), tmp_path / 'w', graph='bm25', vectors=False, seed=7)
    assert leiden_seeds == [(7, 20)]
    assert prepared.groups.meta['partition']['seed'] == 7
    assert '.seed7.' in prepared.groups.path.name


# ---------------------------------------------------------------------------------------------------------------------
# a budget that leaves a system no adaptive step warns, naming the systems it leaves so: a window search's first
# window takes the whole budget up to its window (20), GAR's first batch (16) comes from the first stage alone, RGS
# expands from its seeds at any budget above 1 (measured on the synthetic collection: at budget 20 SlideGAR and every
# GAREN returned only first-stage top-20 documents, GAR and RGS others; at 21 all of them others)

@pytest.mark.parametrize(('budget', 'named'), [
    (1, 'GAR, SlideGAR, RGS, GAREN, GAREN-doc'), (2, 'GAR, SlideGAR, GAREN, GAREN-doc'),
    (16, 'GAR, SlideGAR, GAREN, GAREN-doc'), (17, 'SlideGAR, GAREN, GAREN-doc'), (20, 'SlideGAR, GAREN, GAREN-doc'),
    (21, None)])
def test_a_budget_that_leaves_a_search_no_adaptive_step_warns_naming_it(budget, named):
    graph = ToyGroupGraph({}, {'a1': 0})
    prepared = types.SimpleNamespace(groups=graph)
    first = pyterrier_garen.SlidingWindowReranker(DictScorer({}), window=2, stride=1, budget=2)  # any transformer
    systems = ['BM25', 'Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN-doc']  # BM25 and Rerank never adapt
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        build_systems(prepared, DictScorer({}), DictScorer({}), budget=budget, first_stage=first, systems=systems)
    messages = [str(w.message) for w in caught if 'no adaptive step' in str(w.message)]
    if named is None:
        assert messages == []
    else:
        assert messages == [f'budget={budget} leaves {named} no adaptive step: they re-rank only the first-stage top '
                            f'{budget} (a window search looks further only at a budget above its window of 20 '
                            'documents, GAR above its batch of 16); use a larger budget, e.g. 100 as in the paper']


@pytest.mark.parametrize('name', list(SYSTEM_NAMES))
def test_each_systems_declared_limit_is_where_it_starts_to_look_beyond_the_first_stage(name):
    """What ``System.adapts_above`` declares, measured on the toy graph: at that budget the system returns only
    first-stage top-budget documents for every query; at one more, SlideGAR, GAR, RGS and the paper's GAREN return
    others for some query (GAREN+ may spend that one document on the first stage: its adaptive interleave mixes
    first-stage documents into its windows),
    and at ten more every one of them does. A system declared 0 never does, at any budget."""
    from _toy_graph import toy_components

    from pyterrier_garen import _registry
    from pyterrier_garen._compare import _window
    spec = _registry.system(name)
    limit = spec.adapts_above if spec.adapts_above is not None else _window()

    def beyond(budget):
        components, inp = toy_components(budget=budget)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            out = spec.factory(components)(inp)
        top = {q: set(g.sort_values('rank').docno[:budget]) for q, g in inp.groupby('qid')}
        return sum(len(set(g.docno) - top[q]) for q, g in out.groupby('qid'))
    if limit == 0:
        assert beyond(25) == 0
    else:
        assert beyond(limit) == 0
        assert beyond(limit + 10) > 0
        if name != 'GAREN+':
            assert beyond(limit + 1) > 0
