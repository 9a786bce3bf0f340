"""An engine made before its server is up (or while it restarts) assumes 8192 tokens for that moment only: the next
use asks the server again and keeps its real max_model_len. Before, the guess was kept for good, so on a real vLLM
server started late with --max-model-len 1024 every summary prompt was sized for 8192 tokens and refused (HTTP 400)."""
import pytest

from pyterrier_garen._engines import OpenAIEngine

from _fake_openai import FakeOpenAIServer

pytest.importorskip('openai', reason='the openai client (vllm extra) is not installed')
pytestmark = pytest.mark.usefixtures('local_network')


def test_a_failed_context_length_request_is_asked_again_once_the_server_answers():
    with FakeOpenAIServer(max_model_len=1024) as server:
        server.models = ('fail',)  # not ready yet: HTTP 500 on /v1/models
        engine = OpenAIEngine(server.url, 'fake-model', max_retries=0, timeout=10)
        with pytest.warns(UserWarning, match='could not read the context length .* assuming 8192 tokens'):
            assert engine.context_length == 8192
        failed = len(server.gets)
        server.models = None  # the server is up
        # within context_retry_s of the failure the guess stands without a request (a server without a models
        # list would be asked at every prompt)
        assert engine.context_length == 8192
        assert len(server.gets) == failed
        engine.context_retry_s = 0.0
        engine._context_retry_at = 0.0  # as when the time has passed
        assert engine.context_length == 1024
        asked = len(server.gets)
        assert engine.context_length == 1024  # an answer is kept: not asked again
        assert len(server.gets) == asked
        assert 'context_length=1024' in repr(engine)


def test_an_answer_that_is_not_a_length_is_kept_as_the_documented_guess():
    with FakeOpenAIServer(max_model_len=0) as server:
        engine = OpenAIEngine(server.url, 'fake-model', max_retries=0, timeout=10)
        with pytest.warns(UserWarning, match='reports max_model_len=0'):
            assert engine.context_length == 8192
        asked = len(server.gets)
        assert engine.context_length == 8192
        assert len(server.gets) == asked


def test_a_model_listed_without_a_length_is_an_answer_kept_not_a_failure():
    # a server that lists the model without max_model_len (not vLLM) answered: 8192 is kept, it is not asked again
    with FakeOpenAIServer(max_model_len=None) as server:
        engine = OpenAIEngine(server.url, 'fake-model', max_retries=0, timeout=10)
        engine.context_retry_s = 0.0  # a failure would be asked again at once
        assert engine.context_length == 8192
        asked = len(server.gets)
        assert asked == 1
        assert engine.context_length == 8192
        assert len(server.gets) == asked
        assert 'context_length=8192' in repr(engine)
