"""On a real vLLM server (CPU, tiny random model): a wrong model name stops the run at once with one error naming
the model and the fix, and a summariser whose prompt and answer cannot fit the server's context says so before any
request (both were per-item failures before: zero scores, kept orders, fallbacks for every group)."""
import pandas as pd
import pytest
from _recording import CONTEXT, SERVED_NAME

import pyterrier_garen as garen
from pyterrier_garen._engines import ModelNotServed

pytestmark = [pytest.mark.engines, pytest.mark.usefixtures('local_network')]
ROWS = pd.DataFrame([{'qid': '1', 'query': 'flow over a wing', 'docno': str(i), 'text': f'a wing in flow {i}',
                      'score': 3.0 - i, 'rank': i} for i in range(3)])


def test_a_wrong_model_name_stops_the_run_with_one_error(vllm_server):
    url, _ = vllm_server
    engine = garen.OpenAIEngine(url, 'no-such-model', context_length=CONTEXT, timeout=60, max_retries=2)
    for component in (garen.YesNoScorer(engine), garen.ListwiseReranker(engine, window=3, stride=2)):
        with pytest.raises(ModelNotServed, match=rf"does not serve the model 'no-such-model'.*{url}/models"):
            component(ROWS)
        assert component.failed == 0
    assert engine.token_source == 'unknown'  # /tokenize's 404 for the model was not taken for "no tokenizer"


def test_a_summary_that_cannot_fit_the_servers_context_is_one_error(vllm_server):
    url, _ = vllm_server
    engine = garen.OpenAIEngine(url, SERVED_NAME, timeout=60)
    summarizer = garen.LLMSummarizer(engine, max_tokens=CONTEXT)
    with pytest.raises(ValueError, match=rf"max_tokens={CONTEXT} are kept for the answer, more than the engine's "
                                         rf'context of {CONTEXT} tokens holds'):
        summarizer.summarize([{'group': 0, 'docs': ROWS.to_dict('records')}])
    assert summarizer.calls == 0
