"""OpenAIEngine against a real vLLM OpenAI-compatible server (CPU, tiny random model) must give what the in-process
engine gives: the same greedy text, the same exact P(yes), the same token counts, the same GAREN run."""
import numpy as np
import pandas as pd
import pytest
from _recording import SERVED_NAME

from pyterrier_garen import GAREN, ListwiseReranker, OpenAIEngine, YesNoScorer

pytestmark = [pytest.mark.engines, pytest.mark.usefixtures('local_network')]


@pytest.fixture(scope='module')
def engines(vllm_server):
    url, path = vllm_server
    return {'completions': OpenAIEngine(url, SERVED_NAME, tokenizer=str(path), max_concurrency=8),
            'chat': OpenAIEngine(url, SERVED_NAME, max_concurrency=8)}


def conversations(topics, prefill=False):
    result = []
    for query in topics['query']:
        conversation = [{'role': 'system', 'content': 'Answer the question in a few words.'},
                        {'role': 'user', 'content': query}]
        if prefill:
            conversation.append({'role': 'assistant', 'content': '<think>\n\n</think>\n\n'})
        result.append(conversation)
    return result


@pytest.mark.parametrize('endpoint', ['completions', 'chat'])
def test_greedy_text_is_the_in_process_text(engines, endpoint, vllm_random, cranfield):
    batch = conversations(cranfield.get_topics().head(12))
    local = vllm_random.generate(batch, max_tokens=40)
    served = engines[endpoint].generate(batch, max_tokens=40)
    assert [g.text for g in served] == [g.text for g in local]
    assert [(g.prompt_tokens, g.completion_tokens) for g in served] == \
        [(g.prompt_tokens, g.completion_tokens) for g in local]


@pytest.mark.parametrize('endpoint', ['completions', 'chat'])
def test_yes_no_is_restricted_and_exact(engines, endpoint, vllm_random, cranfield):
    batch = conversations(cranfield.get_topics().head(12), prefill=True)
    local = vllm_random.yes_no(batch)
    served = engines[endpoint].yes_no(batch)
    assert {g.text for g in served} <= {'yes', 'no'}
    assert [g.text for g in served] == [g.text for g in local]
    probabilities = np.array([g.probability for g in served])
    assert ((probabilities > 0) & (probabilities < 1)).all()
    assert probabilities == pytest.approx([g.probability for g in local], abs=1e-5)
    assert engines[endpoint].inexact_yes_no == 0


def test_garen_through_the_server_is_the_in_process_run(engines, vllm_random, cran_groups_bm25, cran_first_stage,
                                                        cranfield):
    first_stage = cran_first_stage[cran_first_stage.qid.isin(cran_first_stage.qid.unique()[:2])]
    runs, components = [], []
    for engine in (vllm_random, engines['completions']):
        reranker, navigator = ListwiseReranker(engine), YesNoScorer(engine)
        garen = GAREN(cranfield.text_loader('text') >> reranker, cran_groups_bm25, navigator, budget=30)
        runs.append(garen(first_stage))
        components.append((reranker.stats(), navigator.stats()))
    pd.testing.assert_frame_equal(runs[0], runs[1])
    assert components[0] == components[1]  # calls, prompts, tokens and malformed answers: counted alike
