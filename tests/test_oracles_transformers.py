"""Oracles for the in-process Hugging Face engine (pyterrier_garen._engines._transformers) on a scripted tokenizer
and model: the device and dtype it picks, the end tokens it stops at, left-padded batches (longest first), the
context check at its edge, where an answer ends (end token, length, the earliest stop string and the fewest tokens
holding it), ``generate``'s arguments and input order, and ``yes_no``'s exact two-token softmax, with unscored
answers counted (the thirty-eighth mutation run, docs/testing.md). The tiny real models run in
tests/test_llm_transformers.py.

The tokenizer has one token per character (its id: the character's code), one for each of the words ``yes`` (3)
and ``no`` (4), and two special tokens, 1 (end of turn) and 2 (padding); its chat template writes ``U:<content>``
per message and ``|A:`` for the generation prompt.
"""
import math
import types
import warnings

import pytest

torch = pytest.importorskip('torch', reason='TransformersEngine needs torch (the cpu extra)')

from pyterrier_garen._engines import _transformers  # noqa: E402
from pyterrier_garen._engines._base import AnswerTokenError, Generation  # noqa: E402
from pyterrier_garen._engines._transformers import TransformersEngine  # noqa: E402

EOS, PAD = 1, 2
WORDS = {'yes': [3], 'no': [4]}  # two whole words that are one token each


@pytest.fixture(autouse=True)
def one_thread():
    """torch on one thread here: these tensors are tiny, and a mutation run forks its workers after running these
    tests, where a pool of torch threads left behind waits for ever."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Tokenizer:
    def __init__(self, pad=PAD, eos=EOS):
        self.pad_token_id, self.eos_token_id = pad, eos
        self.padding_side = 'right'

    def encode(self, text, add_special_tokens=True):  # as in Hugging Face: special tokens unless told otherwise
        assert add_special_tokens is False
        return WORDS[text] if text in WORDS else [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=False):
        assert skip_special_tokens is True
        return ''.join(chr(i) for i in ids if i not in (EOS, PAD))

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
        assert (tokenize, add_generation_prompt) == (False, True)
        return ''.join(f'U:{m["content"]}' for m in messages) + '|A:' + ''.join(f'{k}={v}' for k, v in kwargs.items())


class LM:
    """A scripted causal LM: ``generate`` continues each prompt with ``answers[prompt text]`` (padded with PAD to
    the longest), ``__call__`` gives ``logits[prompt text]`` at the last position (zeros elsewhere)."""

    def __init__(self, answers=None, logits=None, max_position_embeddings=64, eos=EOS):
        self.answers, self.logits = answers or {}, logits or {}
        self.config = types.SimpleNamespace(max_position_embeddings=max_position_embeddings)
        self.generation_config = types.SimpleNamespace(eos_token_id=eos)
        self.calls = []

    def to(self, device):
        self.device = device
        return self

    def eval(self):
        return self

    def _prompts(self, input_ids, attention_mask):
        return [''.join(chr(i) for i, m in zip(row.tolist(), mask.tolist()) if m) for row, mask in
                zip(input_ids, attention_mask)]

    def generate(self, *, input_ids, attention_mask, **kwargs):
        prompts = self._prompts(input_ids, attention_mask)
        self.calls.append(('generate', prompts, input_ids.tolist(), attention_mask.tolist(), kwargs))
        answers = [self.answers[p] for p in prompts]
        width = max(len(a) for a in answers)
        rows = [row.tolist() + a + [PAD] * (width - len(a)) for row, a in zip(input_ids, answers)]
        return torch.tensor(rows)

    def __call__(self, *, input_ids, attention_mask):
        prompts = self._prompts(input_ids, attention_mask)
        self.calls.append(('forward', prompts))
        logits = torch.zeros((len(prompts), input_ids.shape[1], 128))
        for row, prompt in enumerate(prompts):
            for token, value in self.logits[prompt].items():
                logits[row, -1, token] = value
        return types.SimpleNamespace(logits=logits)


@pytest.fixture
def hub(monkeypatch):
    """``transformers`` replaced: the model and tokenizer named by the test are returned."""
    made = types.SimpleNamespace(lm=LM(), tokenizer=Tokenizer(), loads=[])

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(model):
            made.loads.append(('tokenizer', model))
            return made.tokenizer

    class AutoModelForCausalLM:
        @staticmethod
        def from_pretrained(model, dtype):
            made.loads.append(('model', model, dtype))
            return made.lm
    fake = types.SimpleNamespace(AutoTokenizer=AutoTokenizer, AutoModelForCausalLM=AutoModelForCausalLM)
    real = _transformers._require
    monkeypatch.setattr(_transformers, '_require',
                        lambda name, *a, **k: fake if name == 'transformers' else real(name, *a, **k))
    return made


def chat(text):
    return [{'role': 'user', 'content': text}]


# -- construction ----------------------------------------------------------------------------------------------------
def test_loading_on_the_cpu(hub, monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: False)
    engine = TransformersEngine('org/tiny')
    assert hub.loads == [('tokenizer', 'org/tiny'), ('model', 'org/tiny', torch.float32)]  # float32 on the CPU
    assert hub.lm.device == torch.device('cpu')
    assert hub.tokenizer.padding_side == 'left'
    assert (engine._pad_id, engine._eos_ids, engine.batch_size) == (PAD, {EOS}, 8)
    assert repr(engine) == "TransformersEngine('org/tiny')"


@pytest.mark.parametrize(('cuda', 'mps', 'device'), [(True, True, 'cuda'), (False, True, 'mps'), (False, False, 'cpu')])
def test_the_first_device_available(hub, monkeypatch, cuda, mps, device):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: mps)
    TransformersEngine('m')
    assert hub.lm.device == torch.device(device)
    assert hub.loads[-1][2] == (torch.float32 if device == 'cpu' else 'auto')  # the model's own dtype off the CPU


def test_without_an_mps_backend_the_cpu(hub, monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    monkeypatch.setattr(torch, 'backends', types.SimpleNamespace())
    TransformersEngine('m')
    assert hub.lm.device == torch.device('cpu')


@pytest.mark.parametrize(('dtype', 'expected'), [('bfloat16', torch.bfloat16), (torch.float16, torch.float16)])
def test_a_dtype_by_name_or_object(hub, dtype, expected):
    engine = TransformersEngine('m', device='cpu', dtype=dtype)
    assert hub.loads[-1] == ('model', 'm', expected)
    assert engine.dtype == dtype  # as given, for the repr


@pytest.mark.parametrize(('eos', 'tokenizer_eos', 'expected'), [
    (EOS, 7, {EOS}), ([EOS, 9], 7, {EOS, 9}), ((9, None), 7, {9}), (None, 7, {7}), (None, None, set()),
])
def test_the_end_tokens(hub, eos, tokenizer_eos, expected):
    hub.lm = LM(eos=eos)
    hub.tokenizer = Tokenizer(eos=tokenizer_eos)
    assert TransformersEngine('m', device='cpu')._eos_ids == expected


def test_padding_falls_back_to_the_end_token(hub):
    hub.tokenizer = Tokenizer(pad=None, eos=5)
    assert TransformersEngine('m', device='cpu')._pad_id == 5


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'batch_size': 0}, 'batch_size must be a positive integer, got 0'),
    ({'context_length': 0}, 'context_length must be a positive integer'),
])
def test_bad_sizes_are_refused_before_loading(hub, kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformersEngine('m', **kwargs)
    assert hub.loads == []


def test_the_context_length(hub):
    assert TransformersEngine('m', device='cpu').context_length == 64
    assert TransformersEngine('m', device='cpu', context_length=10).context_length == 10
    hub.lm = LM(max_position_embeddings=None)
    assert TransformersEngine('m', device='cpu').context_length == 8192
    hub.lm = LM(max_position_embeddings=0)
    assert TransformersEngine('m', device='cpu').context_length == 8192
    engine = TransformersEngine('m', device='cpu', context_length=10, batch_size=3,
                                chat_template_kwargs={'think': False})
    assert repr(engine) == ("TransformersEngine('m', device='cpu', batch_size=3, context_length=10, "
                            "chat_template_kwargs={'think': False})")


# -- batches and the context -----------------------------------------------------------------------------------------
def test_batches_are_left_padded_longest_first(hub):
    engine = TransformersEngine('m', device='cpu', batch_size=2)
    batches = list(engine._batches([[5], [6, 7, 8], [], [9, 10]]))
    assert [b[0] for b in batches] == [[1, 3], [0, 2]]  # longest first; equal lengths keep their order
    (_, ids, mask), (_, ids2, mask2) = batches
    assert ids.tolist() == [[6, 7, 8], [PAD, 9, 10]]
    assert mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert ids2.tolist() == [[5], [PAD]]  # an empty prompt: all padding
    assert mask2.tolist() == [[1], [0]]
    assert ids.dtype == mask.dtype == torch.long


def test_the_context_check_at_its_edge(hub):
    engine = TransformersEngine('m', device='cpu', context_length=10)
    engine._check_length([[0] * 6, [0] * 2], 4)  # 6 + 4 = 10 fits
    with pytest.raises(ValueError) as refused:
        engine._check_length([[0] * 2, [0] * 7], 4)
    assert str(refused.value) == ("a prompt of 7 tokens plus 4 answer tokens exceeds the context of 10 tokens of 'm'; "
                                  'shorten the input')


# -- where an answer ends ----------------------------------------------------------------------------------------------
def ids(text):
    return [ord(c) for c in text]


@pytest.mark.parametrize(('tokens', 'stop', 'max_tokens', 'expected'), [
    (ids('abc') + [EOS] + ids('zz'), None, 10, ('abc', 4, 'stop')),      # cut at the end token, counted
    ([EOS], None, 5, ('', 1, 'stop')),
    (ids('abcd'), None, 4, ('abcd', 4, 'length')),                       # the budget used up
    (ids('ab'), None, 4, ('ab', 2, 'stop')),                             # ended early without an end token
    (ids('a[1] > [2]'), [' > '], 20, ('a[1]', 7, 'stop')),               # the fewest tokens holding ' > '
    (ids('xyABzAB'), ['AB', 'z'], 20, ('xy', 4, 'stop')),                # the earliest stop string wins
    (ids('xyz'), ['', 'q'], 20, ('xyz', 3, 'stop')),                     # an empty or absent stop string is ignored
    (ids('xy') + [PAD, PAD] + ids('z'), ['z'], 20, ('xy', 5, 'stop')),   # special tokens are not text
    (ids('abcd'), ['cd'], 4, ('ab', 4, 'stop')),                         # a stop string at the very end: not 'length'
])
def test_where_an_answer_ends(hub, tokens, stop, max_tokens, expected):
    engine = TransformersEngine('m', device='cpu')
    generation = engine._finish(tokens, stop, max_tokens)
    assert (generation.text, generation.completion_tokens, generation.finish_reason) == expected


# -- generate ----------------------------------------------------------------------------------------------------------
def test_generate_answers_in_input_order_with_exact_counts(hub):
    prompts = ['U:hi|A:', 'U:a longer one|A:', 'U:mid size|A:']
    hub.lm = LM(answers={prompts[0]: ids('one') + [EOS], prompts[1]: ids('two!'), prompts[2]: ids('3') + [EOS]})
    engine = TransformersEngine('m', device='cpu', batch_size=2)
    out = engine.generate([chat('hi'), chat('a longer one'), chat('mid size')], max_tokens=4)
    assert [(g.text, g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in out] == [
        ('one', 7, 4, 'stop'), ('two!', 17, 4, 'length'), ('3', 13, 2, 'stop')]
    assert all(isinstance(g, Generation) for g in out)
    first, second = hub.lm.calls
    assert (first[1], second[1]) == ([prompts[1], prompts[2]], [prompts[0]])  # longest first, two a batch
    assert first[4] == {'max_new_tokens': 4, 'do_sample': False, 'temperature': None, 'top_p': None, 'top_k': None,
                        'repetition_penalty': 1.0, 'pad_token_id': PAD, 'eos_token_id': [EOS], 'stop_strings': None,
                        'tokenizer': None}


def test_generate_with_stop_strings_and_template_variables(hub):
    prompt = 'U:q|A:think=False'
    hub.lm = LM(answers={prompt: ids('[2] > [1]') + [EOS]}, eos=[9, EOS])
    engine = TransformersEngine('m', device='cpu', chat_template_kwargs={'think': False})
    answer, = engine.generate([chat('q')], max_tokens=20, stop=(' > ',))
    assert (answer.text, answer.completion_tokens) == ('[2]', 6)  # '[2] > ' is six tokens
    kwargs = hub.lm.calls[0][4]
    assert (kwargs['eos_token_id'], kwargs['stop_strings'], kwargs['tokenizer']) == ([EOS, 9], [' > '], hub.tokenizer)


def test_generate_with_no_end_token_known(hub):
    hub.lm = LM(answers={'U:q|A:': ids('ok')}, eos=None)
    hub.tokenizer = Tokenizer(eos=None)
    TransformersEngine('m', device='cpu').generate([chat('q')], max_tokens=2)
    assert hub.lm.calls[0][4]['eos_token_id'] is None


def test_nothing_to_generate_and_a_prompt_too_long(hub):
    engine = TransformersEngine('m', device='cpu', context_length=12)
    assert engine.generate([], max_tokens=5) == []
    with pytest.raises(ValueError, match='a prompt of 8 tokens plus 5 answer tokens exceeds the context of 12'):
        engine.generate([chat('ok'), chat('abc')], max_tokens=5)  # U:ok|A: is 7 tokens (12 fits), U:abc|A: 8
    assert hub.lm.calls == []  # refused before any model call


# -- yes / no ----------------------------------------------------------------------------------------------------------
Y, N = ord('y'), ord('n')


def test_yes_no_is_the_softmax_of_the_two_logits(hub):
    hub.lm = LM(logits={'U:a|A:': {Y: 2.0, N: 0.5}, 'U:bb|A:': {Y: -1.0, N: 1.0}, 'U:c|A:': {Y: 3.0, N: 3.0}})
    engine = TransformersEngine('m', device='cpu', batch_size=2)
    out = engine.yes_no([chat('a'), chat('bb'), chat('c')], yes='y', no='n')
    expected = [1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(2.0)), 0.5]
    assert [g.text for g in out] == ['y', 'n', 'y']  # a tie answers yes
    assert [g.probability for g in out] == pytest.approx(expected, abs=1e-6)
    assert [(g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in out] == [
        (6, 1, 'length'), (7, 1, 'length'), (6, 1, 'length')]
    assert [c[0] for c in hub.lm.calls] == ['forward', 'forward']


def test_unusable_logits_are_unscored_and_counted(hub):
    hub.lm = LM(logits={'U:a|A:': {Y: float('nan'), N: 0.0}, 'U:b|A:': {Y: -math.inf, N: -math.inf},
                        'U:c|A:': {Y: 1.0, N: 0.0}})
    engine = TransformersEngine('m', device='cpu')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        out = engine.yes_no([chat('a'), chat('b'), chat('c')], yes='y', no='n')
    assert [(g.text, g.probability) for g in out[:2]] == [('y', 0.5), ('y', 0.5)]
    assert out[2].probability == pytest.approx(1 / (1 + math.exp(-1.0)), abs=1e-6)
    assert engine.unscored_yes_no == 2
    assert [str(w.message) for w in caught] == [
        f'{engine!r}: 2 yes/no answers came without usable log-probabilities for either token; they score P(yes) = '
        '0.5, which carries no preference (does the server return logprobs?) (counted in engine.unscored_yes_no; '
        'warned once)']


def test_yes_no_needs_single_tokens_and_room_for_one_token(hub):
    engine = TransformersEngine('m', device='cpu', context_length=7)
    assert engine.yes_no([], yes='y', no='n') == []
    with pytest.raises(AnswerTokenError) as refused:
        engine.yes_no([chat('a')], yes='yeah', no='n')
    assert str(refused.value) == ("'yeah' is 4 tokens for 'm' ([121, 101, 97, 104]); yes/no scoring compares the "
                                  'probabilities of two single-token answers: give YesNoScorer (or engine.yes_no) '
                                  "yes= and no= words that this model's tokenizer keeps whole, e.g. 'Yes' or ' yes'")
    with pytest.raises(AnswerTokenError, match=r"yes='y' and no='y' are the same token \(121\) for 'm'"):
        engine.yes_no([chat('a')], yes='y', no='y')
    with pytest.raises(ValueError, match='a prompt of 7 tokens plus 1 answer tokens exceeds the context of 7'):
        engine.yes_no([chat('ab')], yes='y', no='n')
    assert hub.lm.calls == []


def test_yes_and_no_by_default_and_a_token_the_model_rules_out(hub):
    hub.lm = LM(logits={'U:a|A:': {3: 0.0, 4: -math.inf}, 'U:b|A:': {3: -math.inf, 4: 0.0}})
    engine = TransformersEngine('m', device='cpu')
    out = engine.yes_no([chat('a'), chat('b')])
    assert [(g.text, g.probability) for g in out] == [('yes', 1.0), ('no', 0.0)]  # scored: one token is ruled out
    assert engine.unscored_yes_no == 0


@pytest.mark.parametrize('missing', ['torch', 'transformers'])
def test_without_torch_or_transformers_the_error_names_the_extra(monkeypatch, missing):
    import sys
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError) as refused:
        TransformersEngine('m')
    assert str(refused.value) == (f"TransformersEngine needs the '{missing}' package, which is not installed; install "
                                  f"the extra with `pip install -e '.[cpu]' (in a clone of pyterrier-garen)` (or "
                                  f'`pip install {missing}`)')


def test_a_generation_config_without_end_tokens(hub):
    hub.lm = LM()
    hub.lm.generation_config = types.SimpleNamespace()
    assert TransformersEngine('m', device='cpu')._eos_ids == {EOS}  # the tokenizer's


def test_a_stop_string_in_the_first_token(hub):
    generation = TransformersEngine('m', device='cpu')._finish(ids('abc'), ['a'], 10)
    assert (generation.text, generation.completion_tokens, generation.finish_reason) == ('', 1, 'stop')



# -- YesNoScorer's answer words reach the engine -----------------------------------------------------------------------
def _scorer_input():
    import pandas as pd
    return pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['x', 'x'], 'docno': ['d1', 'd2'], 'text': ['a', 'b']})


class ByDocument(dict):
    """Logits keyed by the document a YesNoScorer prompt shows (its prompt is too long to spell out here)."""

    def __getitem__(self, prompt):
        (doc,) = [d for d in self if f'<Document>: {d}' in prompt]
        return dict.__getitem__(self, doc)


def test_the_scorer_s_answer_words_are_the_two_tokens_compared(hub):
    from pyterrier_garen import YesNoScorer
    # the logits of 'y' (121) and 'n' (110) decide; those of the words 'yes' (3) and 'no' (4) are ignored
    hub.lm = LM(logits=ByDocument(a={121: 2.0, 110: 0.0, 3: -9.0, 4: 9.0}, b={121: 0.0, 110: 1.0}),
                max_position_embeddings=4096)
    scorer = YesNoScorer(TransformersEngine('m', device='cpu'), yes='y', no='n')
    out = scorer(_scorer_input())
    assert out.set_index('docno')['score'].to_dict() == pytest.approx(
        {'d1': 1 / (1 + math.exp(-2.0)), 'd2': 1 / (1 + math.exp(1.0))}, abs=1e-6)
    assert scorer.failed == 0
    default = YesNoScorer(TransformersEngine('m', device='cpu'))(_scorer_input())  # the words yes (3) and no (4)
    assert default.set_index('docno')['score'].to_dict() == pytest.approx(
        {'d1': 1 / (1 + math.exp(18.0)), 'd2': 0.5}, abs=1e-6)


def test_an_answer_word_of_several_tokens_stops_the_scorer_instead_of_scoring_every_row_0(hub):
    from pyterrier_garen import YesNoScorer
    hub.lm = LM(max_position_embeddings=4096)
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no "rows scored 0" warning either: the run stops
        with pytest.raises(AnswerTokenError, match=r"^'Yes' is 3 tokens for 'm' \(\[89, 101, 115\]\);"):
            YesNoScorer(TransformersEngine('m', device='cpu'), yes='Yes', no='no')(_scorer_input())
    assert hub.lm.calls == []


@pytest.mark.parametrize(('yes', 'no', 'problem'), [('', 'no', 'yes must be a non-empty string'),
                                                    ('yes', None, 'no must be a non-empty string'),
                                                    ('ja', 'ja', 'yes and no must differ')])
def test_the_scorer_refuses_answer_words_that_cannot_work(yes, no, problem):
    from pyterrier_garen import YesNoScorer
    with pytest.raises(ValueError, match=problem):
        YesNoScorer(object(), yes=yes, no=no)


def test_the_settings_that_change_what_the_model_writes_are_reported(hub):
    assert TransformersEngine('m', device='cpu').output_settings() == {}
    assert TransformersEngine('m', device='cpu', batch_size=2).output_settings() == {}
    engine = TransformersEngine('m', device='cpu', dtype=torch.bfloat16, context_length=512,
                                chat_template_kwargs={'x': 1})
    assert engine.output_settings() == {'dtype': 'torch.bfloat16', 'context_length': 512,
                                        'chat_template_kwargs': {'x': 1}}
    assert TransformersEngine('m', device='cpu', dtype='float32').output_settings() == {'dtype': 'float32'}
