"""Where a document is cut: OpenAIEngine counts and truncates with the server's own tokenizer (vLLM's /tokenize and
/detokenize, here the fake server's one-token-per-word tokenizer), the same way for every component that cuts text
to fit a context; only a server without those endpoints falls back to the 4-characters estimate, warned once."""
import json
import warnings

import pandas as pd
import pytest

from pyterrier_garen import ListwiseReranker, LLMSummarizer, YesNoScorer
from pyterrier_garen._engines import OpenAIEngine
from pyterrier_garen._engines._tokens import estimate_truncate

pytest.importorskip('openai', reason='the openai client (openai extra) is not installed')
pytestmark = pytest.mark.usefixtures('local_network')

MODEL = 'fake-model'
LONG = ' '.join(f'w{i}' for i in range(40))  # 40 fake tokens, 159 characters (~40 estimated tokens as well)
WORDY = ' '.join(['incomprehensibilities'] * 12)  # 12 fake tokens, 263 characters (~66 estimated tokens)


def _posts(server, path):
    return [body for _, p, _, body in server.requests if p == path]


def _estimate_warnings(caught):
    return [w for w in caught if 'estimate 4 characters per token' in str(w.message)]


def test_truncation_uses_the_server_tokenizer(fake_openai):
    server = fake_openai()
    engine = OpenAIEngine(server.url, MODEL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert engine.truncate(LONG, 5) == 'w0 w1 w2 w3 w4'
        assert engine.count_tokens(WORDY) == 12  # the estimate would say 66
        assert engine.truncate(WORDY, 12) == WORDY  # fits: sent back unchanged, no /detokenize
        assert engine.truncate_many([LONG, WORDY, 'short'], 3) == ['w0 w1 w2', ' '.join(['incomprehensibilities'] * 3),
                                                                   'short']
    assert engine.token_source == 'server'
    assert not _estimate_warnings(caught)
    tokenized = _posts(server, '/tokenize')
    assert all(body['add_special_tokens'] is False and body['model'] == MODEL for body in tokenized)
    assert sorted(body['prompt'] for body in tokenized) == sorted([LONG, WORDY, 'short'])  # each text asked once
    assert [body['tokens'] for body in _posts(server, '/detokenize')][0] == [server.vocab[f'w{i}'] for i in range(5)]


def test_a_conversation_is_counted_as_the_server_renders_it(fake_openai):
    server = fake_openai()
    engine = OpenAIEngine(server.url, MODEL, chat_template_kwargs={'enable_thinking': False})
    conversation = [{'role': 'system', 'content': 'Judge.'}, {'role': 'user', 'content': 'a b c'},
                    {'role': 'assistant', 'content': '<think> </think>'}]
    # the fake renders "role: content" lines: system: Judge. / user: a b c / assistant: <think> </think>
    assert engine.count_conversation_tokens(conversation) == 2 + 4 + 3
    assert engine.count_conversation_tokens(conversation[:2]) == 2 + 4 + 1  # plus the assistant's turn opener
    body = _posts(server, '/tokenize')[0]
    assert body['continue_final_message'] is True
    assert body['add_generation_prompt'] is False
    assert body['messages'][-1] == {'role': 'assistant', 'content': '<think> </think>'}
    assert body['chat_template_kwargs'] == {'enable_thinking': False}


def test_a_batch_of_texts_is_tokenized_concurrently(fake_openai):
    server = fake_openai(delay=0.05)
    engine = OpenAIEngine(server.url, MODEL, max_concurrency=8)
    texts = [f'{LONG} doc{k}' for k in range(8)]
    assert engine.truncate_many(texts, 2) == ['w0 w1'] * 8
    assert server.max_in_flight >= 2
    assert len(_posts(server, '/tokenize')) == 8
    assert len(_posts(server, '/detokenize')) == 8


def test_without_a_server_tokenizer_the_estimate_is_used_and_warned_once(fake_openai):
    server = fake_openai(generic=True)
    engine = OpenAIEngine(server.url, MODEL, vllm_extensions=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert engine.truncate(WORDY, 12) == estimate_truncate(WORDY, 12, 4.0)
        assert engine.truncate(WORDY, 12) != WORDY  # cut, although the model's tokenizer would keep all of it
        assert engine.count_tokens(WORDY) == 66
        engine.truncate_many([LONG, WORDY], 3)
    assert engine.token_source == 'estimate'
    shown = _estimate_warnings(caught)
    assert len(shown) == 1
    message = str(shown[0].message)
    assert 'documents are cut at other places' in message
    assert 'tokenizer=' in message
    assert '/tokenize' in message
    assert len(_posts(server, '/tokenize')) == 1  # asked once, then never again


def test_a_given_tokenizer_is_loaded_offline_or_refused_with_the_fix(tmp_path):
    pytest.importorskip('transformers', reason='tokenizer= needs transformers (the cpu extra)')
    with pytest.raises(ValueError, match='not downloaded here'):
        OpenAIEngine('http://127.0.0.1:1/v1', MODEL, tokenizer=str(tmp_path / 'no-such-tokenizer'))


def test_navigator_cuts_documents_with_the_server_tokenizer(fake_openai):
    server = fake_openai()
    engine = OpenAIEngine(server.url, MODEL, context_length=4096)
    scorer = YesNoScorer(engine, max_doc_tokens=7)
    frame = pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['tides', 'tides'], 'docno': ['d1', 'd2'],
                          'text': [LONG, WORDY]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        scorer(frame)
    assert not _estimate_warnings(caught)
    sent = [json.dumps(body) for body in _posts(server, '/v1/chat/completions')]
    assert any('w0 w1 w2 w3 w4 w5 w6' in text and 'w7' not in text for text in sent)
    assert any(text.count('incomprehensibilities') == 7 for text in sent)  # 7 tokens; the estimate keeps 1


def test_listwise_window_and_summary_prompts_cut_with_the_server_tokenizer(fake_openai):
    server = fake_openai()
    engine = OpenAIEngine(server.url, MODEL, context_length=4096)
    frame = pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['tides', 'tides'], 'docno': ['d1', 'd2'],
                          'text': [LONG, WORDY], 'rank': [0, 1]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        ListwiseReranker(engine, prompt='rankllm', window=2, stride=1, max_doc_tokens=10)(frame)
        LLMSummarizer(engine, max_doc_tokens=10).summarize([{'group': 0, 'docs': [
            {'docno': 'd1', 'title': '', 'text': LONG}, {'docno': 'd2', 'title': '', 'text': WORDY}]}])
    assert not _estimate_warnings(caught)
    window, summary = [json.dumps(body['messages']) for body in _posts(server, '/v1/chat/completions')][:2]
    for prompt in (window, summary):
        assert 'w0 w1 w2 w3 w4 w5 w6 w7 w8 w9' in prompt
        assert 'w10' not in prompt
        assert prompt.count('incomprehensibilities') == 10  # 10 tokens; the estimate keeps 1


def _byte_decoder(text):
    """A byte-level tokenizer's decode: one id per UTF-8 byte; a cut inside a character decodes to U+FFFD."""
    ids = list(text.encode('utf-8'))
    asked = []

    def decode(keep):
        asked.append(keep)
        return bytes(ids[:keep]).decode('utf-8', errors='replace')
    return decode, asked


@pytest.mark.parametrize(('keep', 'cut', 'asked'), [
    (3, 'ab ', [3]),                   # on a character boundary: as decoded
    (4, 'ab ', [4, 3]),                # one byte of the emoji: one id given back
    (6, 'ab ', [6, 5, 4, 3]),          # three bytes of it: three ids given back
    (7, 'ab \U0001f600', [7]),
    (9, 'ab \U0001f600', [9, 8, 7]),  # two bytes of the next one
    (0, '', [0]),
])
def test_a_cut_gives_back_up_to_three_ids_to_end_on_a_whole_character(keep, cut, asked):
    from pyterrier_garen._engines._tokens import whole_characters
    text = 'ab \U0001f600\U0001f600'
    decode, seen = _byte_decoder(text)
    assert whole_characters(decode, text, keep) == cut
    assert seen == asked


def test_a_cut_keeps_a_replacement_character_the_text_has_and_passes_none_on():
    from pyterrier_garen._engines._tokens import whole_characters
    text = 'a\ufffd\U0001f600'  # the document has U+FFFD itself: no id is given back for it
    decode, seen = _byte_decoder(text)
    assert whole_characters(decode, text, 5) == 'a\ufffd\ufffd'
    assert seen == [5]
    assert whole_characters(lambda keep: None, 'ab', 1) is None  # a server that cannot decode: None, as before
    decode, seen = _byte_decoder('\U0001f600\U0001f600')
    assert whole_characters(decode, '\U0001f600\U0001f600', 1) == ''  # one byte kept: back to nothing, then stop
    assert seen == [1, 0]


def test_a_cut_gives_back_three_ids_at_most_and_never_below_none():
    from pyterrier_garen._engines._tokens import whole_characters
    asked = []

    def broken(keep):  # a decoder whose every cut ends in U+FFFD
        asked.append(keep)
        return 'a' * keep + '\ufffd'
    assert whole_characters(broken, 'text', 10) == 'a' * 7 + '\ufffd'
    assert asked == [10, 9, 8, 7]
    asked.clear()
    assert whole_characters(broken, 'text', 1) == '\ufffd'
    assert asked == [1, 0]
