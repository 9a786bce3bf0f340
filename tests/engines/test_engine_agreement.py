"""The three engines agree on the tiny models: TransformersEngine (transformers, batched left-padded greedy) and
VLLMEngine give the same greedy text and token counts and P(yes) within 1e-3 (the server is compared to
VLLMEngine in test_server.py)."""
import pytest

from pyterrier_garen import ListwiseReranker, TransformersEngine

pytestmark = pytest.mark.engines


@pytest.fixture(scope='module')
def hf_engines(tiny_models):
    return {kind: TransformersEngine(str(path), device='cpu', batch_size=4) for kind, path in tiny_models.items()}


def chats(cranfield, n, prefill=False):
    result = []
    for query in cranfield.get_topics().head(n)['query']:
        conversation = [{'role': 'user', 'content': f'What is known about: {query}'}]
        if prefill:
            conversation.append({'role': 'assistant', 'content': '<think>\n\n</think>\n\n'})
        result.append(conversation)
    return result


def test_same_greedy_text_and_token_counts(hf_engines, vllm_random, cranfield):
    batch = chats(cranfield, 10)
    ours = hf_engines['random'].generate(batch, max_tokens=32)
    theirs = vllm_random.generate(batch, max_tokens=32)
    assert [g.text for g in ours] == [g.text for g in theirs]
    assert [(g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in ours] == \
        [(g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in theirs]


def test_same_yes_probability(hf_engines, vllm_random, cranfield):
    batch = chats(cranfield, 16, prefill=True)
    ours = hf_engines['random'].yes_no(batch)
    theirs = vllm_random.yes_no(batch)
    assert [g.probability for g in ours] == pytest.approx([g.probability for g in theirs], abs=1e-3)
    assert [g.text for g in ours] == [g.text for g in theirs]


def test_scripted_model_stop_strings_and_end_of_turn(hf_engines, vllm_scripted, cranfield):
    batch = chats(cranfield, 3)
    for stop in (None, [' > [3]'], ['[1]']):
        ours = hf_engines['scripted'].generate(batch, max_tokens=10, stop=stop)
        theirs = vllm_scripted.generate(batch, max_tokens=10, stop=stop)
        assert [(g.text, g.completion_tokens, g.finish_reason) for g in ours] == \
            [(g.text, g.completion_tokens, g.finish_reason) for g in theirs], stop


def test_listwise_reranker_gives_the_same_run(hf_engines, vllm_scripted, cran_first_stage, cranfield):
    rows = cranfield.text_loader('text')(cran_first_stage.groupby('qid').head(20))
    runs = [ListwiseReranker(engine)(rows) for engine in (hf_engines['scripted'], vllm_scripted)]
    assert runs[0][['qid', 'docno', 'rank']].equals(runs[1][['qid', 'docno', 'rank']])
