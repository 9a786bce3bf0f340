"""A Hugging Face ``transformers`` model in this process: the engine for machines without vLLM."""
from __future__ import annotations

import importlib
import math
from typing import Any, Dict, List, Optional, Sequence

from .._params import Rebuildable, check_optional_positive, check_positive
from ._base import Conversation, Engine, Generation, _require, no_information, softmax_yes, usable_logprob
from ._tokens import HFTokenizerMixin, render_chat

__all__ = ['TransformersEngine']


class TransformersEngine(Rebuildable, HFTokenizerMixin, Engine):
    """A Hugging Face ``transformers`` causal LM in this process: the engine for machines without vLLM.

    Prompts are rendered with the model's chat template (like :class:`VLLMEngine`), left-padded into batches of
    ``batch_size`` (longest first, so rows of a batch have similar lengths) and decoded greedily. Yes/no answers come
    from the next-token logits: ``P(yes)`` is the softmax over the two tokens' logits, exactly. Token counts are the
    tokenizer's: ``prompt_tokens`` is the rendered prompt's length, ``completion_tokens`` the generated tokens up to
    and including the end-of-turn token or the token that completed a stop string (as vLLM counts them).

    Args:
        model: a Hugging Face model id or a local folder.
        device: ``'cuda'``, ``'mps'``, ``'cpu'``...; None: the first of CUDA, MPS and CPU that is available.
        dtype: a torch dtype or its name (``'bfloat16'``, ``'float32'``); None: ``float32`` on CPU, the model's own
            dtype elsewhere.
        batch_size: conversations per forward batch.
        context_length: most tokens of prompt + answer; None: the model's ``max_position_embeddings``.
        chat_template_kwargs: extra variables for the chat template (e.g. ``{'enable_thinking': False}``).

    Raises:
        ImportError: ``torch`` or ``transformers`` is not installed (``pip install -e '.[cpu]'`` in a clone).
    """
    #: what besides the model changes what it writes for a prompt (see :meth:`Engine.output_settings`)
    OUTPUT_ARGUMENTS = ('dtype', 'context_length', 'chat_template_kwargs')

    _repr_attributes = {'context_length': '_context_length'}

    def __init__(self, model: str, *, device: Optional[str] = None, dtype: Any = None, batch_size: int = 8,
                 context_length: Optional[int] = None, chat_template_kwargs: Optional[dict] = None):
        torch = _require('torch', 'TransformersEngine', extra='cpu')
        transformers = _require('transformers', 'TransformersEngine', extra='cpu')
        check_positive(batch_size=batch_size)
        check_optional_positive(context_length=context_length)
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.chat_template_kwargs = chat_template_kwargs
        self._context_length = context_length
        if device is None:
            if torch.cuda.is_available():
                device = 'cuda'
            elif getattr(torch.backends, 'mps', None) is not None and torch.backends.mps.is_available():
                device = 'mps'
            else:
                device = 'cpu'
        self._device = torch.device(device)
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        if dtype is None:
            dtype = torch.float32 if self._device.type == 'cpu' else 'auto'
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model)
        self.tokenizer.padding_side = 'left'
        self.lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=dtype).to(self._device).eval()
        self._pad_id = self.tokenizer.pad_token_id
        if self._pad_id is None:
            self._pad_id = self.tokenizer.eos_token_id
        eos = getattr(self.lm.generation_config, 'eos_token_id', None)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}

    def output_settings(self) -> Dict[str, Any]:
        return self.output_settings_of({'dtype': self.dtype, 'context_length': self._context_length,
                                        'chat_template_kwargs': self.chat_template_kwargs})

    @property
    def context_length(self) -> int:
        if self._context_length is not None:
            return int(self._context_length)
        value = getattr(self.lm.config, 'max_position_embeddings', None)
        return int(value) if value else 8192

    def _prompt_ids(self, conversations: Sequence[Conversation]) -> List[List[int]]:
        return [self.tokenizer.encode(render_chat(self.tokenizer, c, self.chat_template_kwargs),
                                      add_special_tokens=False) for c in conversations]

    def _batches(self, prompts: List[List[int]]):
        """``(indices, input_ids, attention_mask)`` per batch, left-padded, longest prompts first."""
        torch = importlib.import_module('torch')
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        for start in range(0, len(order), self.batch_size):
            indices = order[start:start + self.batch_size]
            width = max(len(prompts[i]) for i in indices)
            ids = torch.full((len(indices), width), self._pad_id, dtype=torch.long)
            mask = torch.zeros((len(indices), width), dtype=torch.long)
            for row, i in enumerate(indices):
                if prompts[i]:
                    ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i], dtype=torch.long)
                    mask[row, width - len(prompts[i]):] = 1
            yield indices, ids.to(self._device), mask.to(self._device)

    def _check_length(self, prompts: List[List[int]], max_tokens: int) -> None:
        for ids in prompts:
            if len(ids) + max_tokens > self.context_length:
                raise ValueError(f'a prompt of {len(ids)} tokens plus {max_tokens} answer tokens exceeds the context '
                                 f'of {self.context_length} tokens of {self.model!r}; shorten the input')

    def _finish(self, ids: List[int], stop: Optional[Sequence[str]], max_tokens: int) -> Generation:
        """Text, token count and finish reason of one generated sequence (cut at the end token or a stop string)."""
        end = next((k for k, t in enumerate(ids) if t in self._eos_ids), None)
        if end is not None:
            ids, count, reason = ids[:end], end + 1, 'stop'
        else:
            count, reason = len(ids), ('length' if len(ids) >= max_tokens else 'stop')
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        hits = [(text.find(s), s) for s in (stop or ()) if s and s in text]
        if hits:
            position, word = min(hits)
            low, high = 1, len(ids)  # fewest tokens whose text holds the stop string
            while low < high:
                middle = (low + high) // 2
                if word in self.tokenizer.decode(ids[:middle], skip_special_tokens=True):
                    high = middle
                else:
                    low = middle + 1
            text, count, reason = text[:position], low, 'stop'
        return Generation(text=text, completion_tokens=count, finish_reason=reason)

    def generate(self, conversations, *, max_tokens, stop=None):
        if not conversations:
            return []
        torch = importlib.import_module('torch')
        prompts = self._prompt_ids(conversations)
        self._check_length(prompts, int(max_tokens))
        result: List[Optional[Generation]] = [None] * len(prompts)
        for indices, ids, mask in self._batches(prompts):
            with torch.no_grad():
                out = self.lm.generate(input_ids=ids, attention_mask=mask, max_new_tokens=int(max_tokens),
                                       do_sample=False, temperature=None, top_p=None, top_k=None,
                                       repetition_penalty=1.0, pad_token_id=self._pad_id,
                                       eos_token_id=sorted(self._eos_ids) or None,
                                       stop_strings=list(stop) if stop else None,
                                       tokenizer=self.tokenizer if stop else None)
            for row, i in enumerate(indices):
                generation = self._finish(out[row, ids.shape[1]:].tolist(), stop, int(max_tokens))
                generation.prompt_tokens = len(prompts[i])
                result[i] = generation
        return result

    def yes_no(self, conversations, *, yes='yes', no='no'):
        if not conversations:
            return []
        torch = importlib.import_module('torch')
        yes_id, no_id = self._answer_ids(yes, no)
        prompts = self._prompt_ids(conversations)
        self._check_length(prompts, 1)
        result: List[Optional[Generation]] = [None] * len(prompts)
        unscored = 0
        for indices, ids, mask in self._batches(prompts):
            with torch.no_grad():
                logits = self.lm(input_ids=ids, attention_mask=mask).logits[:, -1, :].float()
            pair = torch.log_softmax(logits, dim=-1)[:, [yes_id, no_id]].tolist()
            for row, i in enumerate(indices):
                yes_lp, no_lp = (usable_logprob(v) for v in pair[row])
                if no_information(yes_lp, no_lp, -math.inf) or None in (yes_lp, no_lp):  # NaN or -inf logits
                    unscored += 1
                    yes_lp = no_lp = 0.0
                result[i] = Generation(text=yes if yes_lp >= no_lp else no, prompt_tokens=len(prompts[i]),
                                       completion_tokens=1, finish_reason='length',
                                       probability=softmax_yes(yes_lp, no_lp, min(yes_lp, no_lp)))
        self._note_unscored(unscored)
        return result
