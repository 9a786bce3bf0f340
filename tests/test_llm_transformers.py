"""TransformersEngine on the tiny models (transformers only, no vLLM): batched left-padded greedy decoding equals one
conversation at a time, P(yes) is the exact two-token softmax of the next-token logits, exact token accounting."""
import math

import pytest

pytest.importorskip('transformers', reason='TransformersEngine needs transformers (the cpu extra)')
torch = pytest.importorskip('torch', reason='TransformersEngine needs torch (the cpu extra)')

from pyterrier_garen import ListwiseReranker, TransformersEngine, YesNoScorer, build_tiny_model  # noqa: E402
from pyterrier_garen._engines import render_chat  # noqa: E402
from pyterrier_garen._prompts import THINK_PREFILL  # noqa: E402


@pytest.fixture(scope='module')
def engines(tmp_path_factory):
    root = tmp_path_factory.mktemp('tiny-hf')
    random = TransformersEngine(str(build_tiny_model(root / 'random')), device='cpu', batch_size=3)
    scripted = TransformersEngine(str(build_tiny_model(root / 'scripted', scripted=True, script='[2] > [1] > [3]')),
                                  device='cpu', batch_size=3)
    return random, scripted


def chats(n, prefill=False):
    words = 'flow heat wing surface pressure boundary layer speed theory results'.split()
    result = []
    for i in range(n):
        conversation = [{'role': 'user', 'content': ' '.join(words[:1 + (i * 3) % len(words)]) + f' question {i}?'}]
        if prefill:
            conversation.append({'role': 'assistant', 'content': THINK_PREFILL})
        result.append(conversation)
    return result


def test_batched_generation_equals_one_at_a_time(engines):
    engine = engines[0]
    batch = chats(5)  # prompts of different lengths: left padding inside batches of 3
    together = engine.generate(batch, max_tokens=8)
    alone = [engine.generate([c], max_tokens=8)[0] for c in batch]
    assert [g.text for g in together] == [g.text for g in alone]
    assert [(g.prompt_tokens, g.completion_tokens) for g in together] == \
        [(g.prompt_tokens, g.completion_tokens) for g in alone]
    for conversation, generation in zip(batch, together, strict=True):
        ids = engine.tokenizer.encode(render_chat(engine.tokenizer, conversation), add_special_tokens=False)
        assert generation.prompt_tokens == len(ids)
        assert generation.completion_tokens <= 8


def test_yes_probability_is_the_softmax_of_the_two_logits(engines):
    engine = engines[0]
    batch = chats(5, prefill=True)
    generations = engine.yes_no(batch)
    yes, no = (engine.tokenizer.encode(w, add_special_tokens=False)[0] for w in ('yes', 'no'))
    for conversation, generation in zip(batch, generations, strict=True):
        ids = engine.tokenizer.encode(render_chat(engine.tokenizer, conversation), add_special_tokens=False)
        with torch.no_grad():
            logits = engine.lm(input_ids=torch.tensor([ids])).logits[0, -1]
        expected = 1 / (1 + math.exp(float(logits[no] - logits[yes])))
        assert generation.probability == pytest.approx(expected, abs=1e-5)
        assert 0 < generation.probability < 1
        assert generation.text == ('yes' if expected >= 0.5 else 'no')
        assert (generation.prompt_tokens, generation.completion_tokens) == (len(ids), 1)


def test_scripted_model_stop_strings_and_the_listwise_reranker(engines):
    import pandas as pd
    engine = engines[1]
    full, = engine.generate(chats(1), max_tokens=10)
    assert (full.text, full.completion_tokens, full.finish_reason) == ('[2] > [1] > [3]', 4, 'stop')  # with <|im_end|>
    cut, = engine.generate(chats(1), max_tokens=10, stop=[' > [3]'])
    assert (cut.text, cut.completion_tokens, cut.finish_reason) == ('[2] > [1]', 3, 'stop')
    short, = engine.generate(chats(1), max_tokens=2)
    assert (short.text, short.completion_tokens, short.finish_reason) == ('[2] > [1]', 2, 'length')
    rows = pd.DataFrame({'qid': ['q'] * 3, 'query': ['wing flow'] * 3, 'docno': ['a', 'b', 'c'],
                         'text': ['first text', 'second text', 'third text']})
    reranker = ListwiseReranker(engine, window=3, stride=1)
    assert reranker(rows).sort_values('rank')['docno'].tolist() == ['b', 'a', 'c']
    assert reranker.malformed == 0
    navigator = YesNoScorer(engines[0])
    scores = navigator(rows)['score']
    assert ((scores > 0) & (scores < 1)).all()
    assert (navigator.calls, navigator.prompts, navigator.completion_tokens) == (1, 3, 3)


def test_prompts_beyond_the_context_are_refused_and_repr_rebuilds(engines):
    engine = engines[0]
    with pytest.raises(ValueError, match='exceeds the context'):
        engine.generate([[{'role': 'user', 'content': 'word ' * 5000}]], max_tokens=8)
    assert repr(engine).startswith("TransformersEngine('")
    assert "device='cpu'" in repr(engine)
    assert engine.context_length == 4096


def test_a_cut_never_splits_a_character_on_either_route(engines):
    """A byte-level tokenizer spreads an emoji over several tokens: a cut between them decoded to U+FFFD, a character
    the document did not have, which re-encoded to more tokens than the cut kept. Both routes (this tokenizer, and a
    server's /tokenize + /detokenize, here answered by the same tokenizer) cut before the character."""
    from pyterrier_garen._engines._tokens import ServerTokenizer
    engine = engines[0]
    tok = engine.tokenizer

    def post(path, body):
        if path == '/tokenize':
            return {'tokens': tok.encode(body['prompt'], add_special_tokens=False)}
        return {'prompt': tok.decode(body['tokens'])}
    server = ServerTokenizer(post, lambda fn, items: [fn(item) for item in items], 'm')
    text = 'ab ' + '\U0001F600' * 6
    assert len(tok.encode('\U0001F600', add_special_tokens=False)) > 1  # the case: one character, several tokens
    for limit in range(0, engine.count_tokens(text) + 1):
        cut = engine.truncate(text, limit)
        assert text.startswith(cut), (limit, cut)
        assert engine.count_tokens(cut) <= limit
        assert server.truncate_many([text], limit) == [cut]
