"""The analysis instruments: simulated reranker/navigator of controlled strength, and GAREN reachability analysis."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import GAREN, GroupCorpusGraph, SlidingWindowReranker
from pyterrier_garen.analysis import (SimulatedNavigator, SimulatedReranker, gold_group_status, navigator_quality,
                                      stable_noise)

QRELS = pd.DataFrame({'qid': ['1', '1', '1', '1', '1', '2', '2', '1'],
                      'docno': ['d3', 'd1', 'd4', 'd0', 'd2', 'd1', 'd5', 'd6'],
                      'label': [5, 4, 3, 2, 1, 2, 1, -1]})


def rows(pairs):
    return pd.DataFrame({'qid': [q for q, _ in pairs], 'query': 'some query', 'docno': [d for _, d in pairs]})


def pairs(n=300):
    return [(str(q), f'd{d}') for q in range(1, 4) for d in range(n // 3)]


def scores_of(frame):
    return dict(zip(zip(frame.qid, frame.docno), frame.score))


def test_noise_free_reranker_gives_the_qrels_order():
    docs = ['d9', 'd2', 'd0', 'd6', 'd4', 'd1', 'd3', 'd8']  # d6 has a negative code: counts as unjudged
    first = pd.DataFrame({'qid': '1', 'query': 'q', 'docno': docs, 'rank': range(len(docs)),
                          'score': np.arange(len(docs), 0, -1.)})
    out = SlidingWindowReranker(SimulatedReranker(QRELS), window=len(docs), stride=4, budget=len(docs))(first)
    judged = QRELS[(QRELS.qid == '1') & (QRELS.label > 0)].sort_values('label', ascending=False).docno.tolist()
    assert out.docno.tolist() == judged + ['d9', 'd6', 'd8']  # unjudged (label 0) keep their input order
    scored = SimulatedReranker(QRELS)(first)
    assert scores_of(scored)[('1', 'd3')] == 5.0
    assert scores_of(scored)[('1', 'd9')] == 0.0
    assert scores_of(scored)[('1', 'd6')] == 0.0


def test_binary_labels():
    out = SimulatedReranker(QRELS, binary=True)(rows([('1', 'd3'), ('1', 'd2'), ('1', 'd9'), ('2', 'd1')]))
    assert out.score.tolist() == [1.0, 1.0, 0.0, 1.0]


def test_noise_is_fixed_per_document_across_batches():
    reranker = SimulatedReranker(QRELS, noise=0.5, seed=3)
    everything = scores_of(reranker(rows(pairs())))
    shuffled = pairs()
    np.random.default_rng(0).shuffle(shuffled)
    assert scores_of(reranker(rows(shuffled))) == everything
    one_by_one = {}
    for pair in pairs()[::17]:
        one_by_one.update(scores_of(reranker(rows([pair]))))
    assert one_by_one == {k: everything[k] for k in one_by_one}
    again = scores_of(SimulatedReranker(QRELS, noise=0.5, seed=3)(rows(pairs()[:40])))
    assert again == {k: everything[k] for k in again}


def test_noise_is_the_same_in_another_process():
    sample = pairs()[:30]
    code = ('import json, sys; from pyterrier_garen.analysis import stable_noise; '
            'print(json.dumps([stable_noise(q, d, 0.5, 3) for q, d in json.loads(sys.argv[1])]))')
    env = {**os.environ, 'PYTHONHASHSEED': '12345'}
    done = subprocess.run([sys.executable, '-c', code, json.dumps(sample)], capture_output=True, text=True,
                          env=env, check=True)
    assert json.loads(done.stdout) == [stable_noise(q, d, 0.5, 3) for q, d in sample]


def test_noise_scale_and_independence():
    draws = np.array([stable_noise('q', f'd{i}', 2.0, 0) for i in range(4000)])
    assert abs(draws.mean()) < 0.1
    assert abs(draws.std() - 2.0) < 0.1
    other_seed = np.array([stable_noise('q', f'd{i}', 2.0, 1) for i in range(4000)])
    assert abs(np.corrcoef(draws, other_seed)[0, 1]) < 0.05
    assert stable_noise('q', 'd1', 0.0, 0) == 0.0
    reranker = SimulatedReranker(QRELS, noise=1.0, seed=0)
    out = scores_of(reranker(rows([('1', 'd3'), ('1', 'd9')])))
    assert out[('1', 'd3')] == pytest.approx(5.0 + stable_noise('1', 'd3', 1.0, 0))
    assert out[('1', 'd9')] == pytest.approx(stable_noise('1', 'd9', 1.0, 0))


def test_bad_input_errors():
    with pytest.raises(ValueError, match='label'):
        SimulatedReranker(QRELS.drop(columns=['label']))
    with pytest.raises(ValueError, match='noise'):
        SimulatedReranker(QRELS, noise=-1)
    with pytest.raises(ValueError, match='aggregate'):
        SimulatedNavigator(QRELS, None, aggregate='sum')
    with pytest.raises(Exception, match='docno'):
        SimulatedReranker(QRELS)(pd.DataFrame({'qid': ['1']}))
    assert 'noise=0.5' in repr(SimulatedReranker(QRELS, noise=0.5))


@pytest.fixture
def graph(tmp_path):
    """d0 - d1 - ... - d9 chain (each links to the next two); groups {d0,d1,d2} {d3,d4,d5} {d6,d7} {d8,d9}."""
    docnos = [f'd{i}' for i in range(10)]
    edges = np.array([[min(i + 1, 9), min(i + 2, 9)] for i in range(10)])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape),
                                        labels=[0, 0, 0, 1, 1, 1, 2, 2, 3, 3])


def test_simulated_navigator(graph):
    nav_rows = pd.DataFrame({'qid': '1', 'query': 'q', 'docno': ['0', '1', '2', '3'], 'text': '', 'vote': 0})
    best = SimulatedNavigator(QRELS, graph)(nav_rows)
    assert best.score.tolist() == [4.0, 5.0, 0.0, 0.0]  # max member label: d1 (4) / d3 (5)
    mean = SimulatedNavigator(QRELS, graph, aggregate='mean')(nav_rows)
    assert mean.score.tolist() == pytest.approx([(2 + 4 + 1) / 3, (5 + 3) / 3, 0, 0])
    noisy = SimulatedNavigator(QRELS, graph, noise=0.3, seed=1)(nav_rows)
    assert noisy.score.tolist() == pytest.approx([s + stable_noise('1', f'group:{g}', 0.3, 1)
                                                 for s, g in zip(best.score, range(4))])


def first(docnos, qid='1'):
    return pd.DataFrame({'qid': qid, 'query': 'q', 'docno': docnos, 'rank': range(len(docnos)),
                         'score': np.arange(len(docnos), 0, -1.)})


def test_gold_group_status_and_navigator_quality(graph):
    qrels = pd.DataFrame({'qid': '1', 'docno': ['d0', 'd4', 'd5', 'd8'], 'label': 1})
    # w=2, h=1, c=4 -> 3 iterations of one new document; the oracle navigator prefers group 1 (d4, d5)
    garen = GAREN(SimulatedReranker(qrels), graph, SimulatedNavigator(qrels, graph), window=2, keep=1, budget=4,
                  group_budget=1, strategy='explore', trace=True)
    out = garen(first(['d0', 'd1']))
    status = gold_group_status(garen.last_trace, graph, qrels).set_index('docno')
    observed = set(out.docno)
    assert status.observed.to_dict() == {d: d in observed for d in status.index}
    assert (status.stage == 'observed').to_dict() == status.observed.to_dict()
    assert status.loc['d0', 'iteration'] == 1
    # step by step: every trace entry that marks a group scored/selected is reflected in the flags
    trace = garen.last_trace
    for docno, row in status.iterrows():
        gid = graph.group_of(docno)
        assert row.candidate == any(gid in step.get('candidates', {}) for step in trace)
        assert row.scored == any(gid in step.get('scored', {}) for step in trace)
        assert row.selected == any(gid in step.get('chosen_groups', []) for step in trace)
    assert status.loc['d8', 'stage'] in ('not candidate', 'not scored', 'not selected')
    quality = navigator_quality(trace, graph, qrels).iloc[0]
    assert quality.scored == len({g for step in trace for g in step.get('scored', {})})
    assert quality.best_gold_rank == 1.0  # the oracle navigator ranks a gold group first


def test_gold_group_status_stages(graph):
    qrels = pd.DataFrame({'qid': '1', 'docno': ['d0', 'd3', 'd6', 'd8', 'd9'], 'label': 1})
    trace = [{'qid': '1', 'iteration': 1, 'window': ['d0', 'd1'], 'candidates': {1: 2, 2: 1, 3: 1},
              'scored': {1: .9, 2: .1}, 'chosen_groups': [1]},
             {'qid': '1', 'iteration': 2, 'window': ['d0', 'd4'], 'scored': {}, 'chosen_groups': []}]
    status = gold_group_status(trace, graph, qrels).set_index('docno')
    assert status.stage.to_dict() == {'d0': 'observed', 'd3': 'not observed', 'd6': 'not selected',
                                      'd8': 'not scored', 'd9': 'not scored'}
    quality = navigator_quality(trace, graph, qrels).iloc[0]
    # gold groups 0, 1, 2, 3; scored 1 (.9) and 2 (.1), both gold: no non-gold group scored -> AUC undefined
    assert quality.gold_scored == 2
    assert np.isnan(quality.auc)
    assert quality.best_gold_rank == 1
    quality = navigator_quality(trace, graph, qrels[qrels.docno == 'd6']).iloc[0]
    assert quality.auc == 0.0
    assert quality.best_gold_rank == 2.0
