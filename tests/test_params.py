"""One vocabulary of parameter checks: bools are not numbers, every numeric parameter is checked, and every message
names the parameter, the value and the range (or choices)."""
import math
import re

import numpy as np
import pytest
from _stub_engine import StubEngine
from _toy_graph import DictScorer, ToyGroupGraph

import pyterrier_garen as garen
import pyterrier_garen.synthetic
from pyterrier_garen import _params

SCORER = DictScorer({})
GRAPH = ToyGroupGraph({'a': ['b']}, {'a': 0, 'b': 0})


def _garen(**kwargs):
    return garen.GAREN(SCORER, GRAPH, garen.VoteNavigator(), **kwargs)


CASES = [
    # (constructor, keyword arguments, message): the cases of issue 17, then others of the same classes
    (_garen, {'tau_switch': -3}, 'tau_switch must be an integer >= 0, got -3'),
    (_garen, {'tau_switch': 2.5}, 'tau_switch must be an integer >= 0, got 2.5'),
    (_garen, {'tau_switch': True}, 'tau_switch must be an integer >= 0, got True'),
    (_garen, {'fusion': True}, 'fusion must be a finite number >= 0, got True'),
    (_garen, {'fusion': math.nan}, 'fusion must be a finite number >= 0, got nan'),
    (_garen, {'propagate': 'no'}, "propagate must be True or False, got 'no'"),
    (_garen, {'propagate': 0}, 'propagate must be True or False, got 0'),
    (_garen, {'alpha': True}, 'alpha must be a finite number >= 0, got True'),
    (_garen, {'p': True}, 'p must be a number strictly between 0 and 1, got True'),
    (_garen, {'evidence_weight': False}, 'evidence_weight must be a finite number >= 0, got False'),
    (_garen, {'evidence_weight': -0.5}, 'evidence_weight must be a finite number >= 0, got -0.5'),
    (_garen, {'interleave': 1.5}, 'interleave must be an integer >= 0, got 1.5'),
    (_garen, {'switch_members': True}, 'switch_members must be an integer >= 0, got True'),
    (_garen, {'group_budget': -1}, 'group_budget must be an integer >= 0, got -1'),
    (_garen, {'group_budget': np.float64(3)}, 'group_budget must be an integer >= 0, got'),
    (_garen, {'member_order': 'random'}, "member_order must be one of ('first_stage', 'evidence'), got 'random'"),
    (_garen, {'strategy': 'greedy'}, "strategy must be one of ('explore', 'exploit', 'explore_exploit'), got "
                                     "'greedy'"),
    (_garen, {'trace': 'yes'}, "trace must be True or False, got 'yes'"),
    (_garen, {'window': True}, 'window must be a positive integer, got True'),
    (_garen, {'budget': 0}, 'budget must be a positive integer, got 0'),
    (lambda **kw: garen.ListwiseReranker(StubEngine(), **kw), {'window': 2.5},
     'window must be a positive integer, got 2.5'),
    (lambda **kw: garen.ListwiseReranker(StubEngine(), **kw), {'window': 4, 'stride': 5},
     'stride must be an integer <= 4, got 5'),
    (lambda **kw: garen.ListwiseReranker(StubEngine(), **kw), {'max_tokens': 0},
     'max_tokens must be a positive integer or None, got 0'),
    (lambda **kw: garen.ListwiseReranker(StubEngine(), **kw), {'prompt': 'chat'},
     "prompt must be one of ('rankllm', 'reasoning'), got 'chat'"),
    (lambda **kw: garen.YesNoScorer(StubEngine(), **kw), {'batch_size': 2.5},
     'batch_size must be a positive integer or None, got 2.5'),
    (lambda **kw: garen.YesNoScorer(StubEngine(), **kw), {'max_doc_tokens': -5},
     'max_doc_tokens must be a positive integer or None, got -5'),
    (lambda **kw: garen.YesNoScorer(StubEngine(), **kw), {'batch_size': True},
     'batch_size must be a positive integer or None, got True'),
    (lambda **kw: garen.LLMSummarizer(StubEngine(), **kw), {'retries': -1}, 'retries must be an integer >= 0, got -1'),
    (lambda **kw: garen.LLMSummarizer(StubEngine(), **kw), {'batch_size': 0},
     'batch_size must be a positive integer or None, got 0'),
    (lambda **kw: garen.LLMSummarizer(StubEngine(), **kw), {'max_tokens': 2.0},
     'max_tokens must be a positive integer, got 2.0'),
    (lambda **kw: garen.SlideGAR(SCORER, GRAPH, **kw), {'budget': 2.5}, 'budget must be a positive integer, got 2.5'),
    (lambda **kw: garen.RGS(SCORER, GRAPH, **kw), {'queue_size': 0}, 'queue_size must be a positive integer, got 0'),
    (lambda **kw: garen.RayOptions(**kw), {'workers': 1.5}, 'workers must be a positive integer, got 1.5'),
    (lambda **kw: garen.RayOptions(**kw), {'max_retries': -1}, 'max_retries must be an integer >= 0, got -1'),
    (lambda **kw: garen.leiden_partition(np.zeros((0, 1), dtype=int), np.zeros((0, 1)), **kw),
     {'max_group_size': 1}, 'max_group_size must be an integer >= 2, got 1'),
    (lambda **kw: garen.leiden_partition(np.zeros((0, 1), dtype=int), np.zeros((0, 1)), **kw),
     {'seed': True}, 'seed must be an integer, got True'),
    (lambda **kw: garen.synthetic.planted_knn_graph(**kw), {'num_docs': 1}, 'num_docs must be an integer >= 2, got 1'),
    (lambda **kw: garen.synthetic.planted_knn_graph(10, **kw), {'p_topic': True},
     'p_topic must be a number in [0, 1], got True'),
]


@pytest.mark.parametrize(('make', 'kwargs', 'message'), CASES,
                         ids=[f'{i}-{next(iter(c[1]))}' for i, c in enumerate(CASES)])
def test_bad_parameters_are_refused_with_name_value_and_range(make, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(**kwargs)


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'max_concurrency': 0}, 'max_concurrency must be a positive integer, got 0'),
    ({'max_concurrency': 2.5}, 'max_concurrency must be a positive integer, got 2.5'),
    ({'top_logprobs': True}, 'top_logprobs must be a positive integer, got True'),
    ({'context_length': -1}, 'context_length must be a positive integer or None, got -1'),
    ({'timeout': 0}, 'timeout must be a finite number > 0, got 0'),
    ({'max_retries': 1.0}, 'max_retries must be an integer >= 0, got 1.0'),
])
def test_engine_parameters(kwargs, message):
    pytest.importorskip('openai', reason='OpenAIEngine needs the openai client (the openai extra)')
    with pytest.raises(ValueError, match=re.escape(message)):
        garen.OpenAIEngine('http://localhost:1/v1', 'model', **kwargs)


def test_good_values_pass_including_numpy_numbers():
    model = _garen(tau_switch=np.int64(0), fusion=np.float32(0.5), group_budget=0, propagate=np.bool_(False),
                   p=0.25, alpha=0)
    assert model.tau_switch == 0
    garen.ListwiseReranker(StubEngine(), window=4, stride=4)
    garen.YesNoScorer(StubEngine(), batch_size=None, max_doc_tokens=1)


def test_the_vocabulary():
    _params.check_number('x', 1, low=0, high=1)  # closed bounds include the ends
    with pytest.raises(ValueError, match=r'x must be a number in \(0, 1\], got 0'):
        _params.check_number('x', 0, low=0, high=1, low_open=True)
    with pytest.raises(ValueError, match='x must be a finite number, got inf'):
        _params.check_number('x', math.inf)
    with pytest.raises(ValueError, match=r'n must be an integer from 1 to 3, got 4 \(why\)'):
        _params.check_int('n', 4, low=1, high=3, note='why')
    _params.check_int('n', None, none_ok=True)
    with pytest.raises(ValueError, match=r"c must be one of \(1, 2\), got True"):
        _params.check_choice('c', True, (1, 2))  # True == 1, yet it is not the choice 1
