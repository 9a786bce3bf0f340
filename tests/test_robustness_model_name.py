"""A wrong model name (the server answers HTTP 404 "The model `x` does not exist") stops the run at once with one
error naming the model and the fix, as a refused key does; before, every row scored 0, every window kept its order
and every group became a fallback, with a warning that blamed a missing tokenizer (found on a real vLLM server)."""
import pandas as pd
import pytest

import pyterrier_garen as garen
from pyterrier_garen._engines import AccessRefused, ModelNotServed, OpenAIEngine
from pyterrier_garen._engines._openai import RequestFailed

from _fake_openai import ScriptedServer

pytest.importorskip('openai', reason='the openai client (vllm extra) is not installed')
pytestmark = pytest.mark.usefixtures('local_network')

VLLM_404 = b'{"error": {"message": "The model `nope` does not exist. Valid aliases: tiny.", "type": "NotFoundError"}}'
OPENAI_404 = (b'{"error": {"message": "The model `gpt-x` does not exist or you do not have access to it.", '
              b'"type": "invalid_request_error", "code": "model_not_found"}}')
ROWS = pd.DataFrame([{'qid': '1', 'query': 'wing flow', 'docno': str(i), 'text': f'text {i}', 'score': 3.0 - i,
                      'rank': i} for i in range(3)])


def _engine(server, model):
    return OpenAIEngine(server.url, model, context_length=512, max_retries=3, retry_backoff=0.01,
                        max_concurrency=1)


@pytest.mark.parametrize(('body', 'model'), [(VLLM_404, 'nope'), (OPENAI_404, 'gpt-x')])
@pytest.mark.parametrize('component', ['navigator', 'reranker', 'summarizer'])
def test_a_model_the_server_does_not_serve_stops_the_run_at_once(body, model, component):
    with ScriptedServer([('raw', 404, body, {'Content-Type': 'application/json'})]) as server:
        engine = _engine(server, model)
        if component == 'navigator':
            run = lambda: garen.YesNoScorer(engine)(ROWS)  # noqa: E731
        elif component == 'reranker':
            run = lambda: garen.ListwiseReranker(engine, window=3, stride=2)(ROWS)  # noqa: E731
        else:
            summarizer = garen.LLMSummarizer(engine, max_tokens=32, max_doc_tokens=16)
            run = lambda: summarizer.summarize([{'group': 0, 'docs': ROWS.to_dict('records')}])  # noqa: E731
        with pytest.raises(ModelNotServed) as stopped:
            run()
        completions = [r for r in server.requests if r.path.endswith('completions')]
        assert len(completions) == 1  # not retried, not asked again row by row
    message = str(stopped.value)
    assert isinstance(stopped.value, AccessRefused)
    assert stopped.value.exit_status == 1
    assert f"does not serve the model '{model}'" in message
    assert f'{server.url}/models' in message
    assert '--served-model-name' in message
    assert '\n' not in message


def test_a_404_that_names_no_model_still_costs_only_its_item():
    with ScriptedServer([('raw', 404, b'{"error": {"message": "Not Found"}}', {'Content-Type': 'application/json'})]) \
            as server:
        engine = _engine(server, 'tiny')
        with pytest.raises(RequestFailed, match=r'was refused \(NotFoundError'):
            engine.generate([[{'role': 'user', 'content': 'hi'}]], max_tokens=4)
        navigator = garen.YesNoScorer(engine)
        with pytest.warns(UserWarning, match='3 rows scored 0'):
            out = navigator(ROWS)
        assert list(out.score) == [0.0, 0.0, 0.0]
        assert navigator.failed == 3


def test_the_refusal_of_a_model_not_served_word_for_word_without_the_key():
    key = 'key-Zq81-not-a-pattern'
    body = (b'{"error": {"message": "The model `nope` does not exist (key ' + key.encode() + b').", '
            b'"type": "NotFoundError"}}')
    with ScriptedServer([('raw', 404, body, {'Content-Type': 'application/json'})]) as server:
        engine = OpenAIEngine(server.url, 'nope', context_length=512, max_retries=3, retry_backoff=0.01,
                              max_concurrency=1, api_key=key)
        with pytest.raises(ModelNotServed) as stopped:
            engine.generate([[{'role': 'user', 'content': 'hi'}]], max_tokens=4)
    message = str(stopped.value)
    assert key not in message
    head, tail = message.split('; the server does not serve', 1)
    assert head.startswith(f'request to {server.url} was refused (NotFoundError: ')
    assert tail == (f" the model 'nope', so no retry can fix this and the run stops: pass the name it lists at "
                    f'{server.url}/models (vllm serve --served-model-name NAME sets it)')
