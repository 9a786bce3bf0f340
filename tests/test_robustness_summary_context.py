"""A context too small for the summary prompt and its answer is one clear error before anything is sent: before,
every group's request was refused by the server (HTTP 400) and the run stopped with advice to fix the server, rerun
or raise max_failed_share, none of which helps (the default max_tokens=2048 on a server with --max-model-len 512,
found on a real vLLM server)."""
import pytest

import pyterrier_garen as garen

from _stub_engine import StubEngine

DOCS = [{'docno': str(i), 'text': f'flow over a wing number {i} ' * 20} for i in range(5)]


def test_a_prompt_and_answer_larger_than_the_context_is_one_error_before_any_request():
    engine = StubEngine(context_length=512)
    summarizer = garen.LLMSummarizer(engine)  # max_tokens=2048 alone exceeds the context
    overhead = engine.count_conversation_tokens(summarizer.template.messages(n=len(DOCS), docs=''))
    with pytest.raises(ValueError, match=rf'the summary prompt takes {overhead} tokens before any document and '
                                         r"max_tokens=2048 are kept for the answer, more than the engine's context of "
                                         rf'512 tokens holds; lower max_tokens= or serve the model with a context of '
                                         rf'at least {overhead + 2048 + 48 * len(DOCS)} tokens') as refused:
        summarizer.summarize([{'group': 0, 'docs': DOCS}])
    assert engine.log == []  # nothing was sent
    assert '\n' not in str(refused.value)
    assert str(refused.value).endswith(' tokens (vllm serve --max-model-len, or max_model_len= in process; the '
                                       'summarize command: --max-tokens, --max-model-len)')  # flags that exist
    assert summarizer.failed == 0


def test_the_smallest_context_that_the_error_names_is_enough():
    engine = StubEngine(context_length=512)
    overhead = engine.count_conversation_tokens(garen.LLMSummarizer(engine, max_tokens=8).template.messages(
        n=len(DOCS), docs=''))
    engine = StubEngine(context_length=overhead + 64 + 48 * len(DOCS))
    summarizer = garen.LLMSummarizer(engine, max_tokens=64)
    [record] = summarizer.summarize([{'group': 0, 'docs': DOCS}])
    assert not record.get('fallback')
    assert summarizer.failed == 0
