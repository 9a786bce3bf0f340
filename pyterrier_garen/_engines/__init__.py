"""LLM engines shared by the reranker, the navigator and the summariser.

This package is the only part of pyterrier_garen that touches vLLM, the ``openai`` client or ``transformers``, and
it imports them lazily (inside the functions that need them), so ``import pyterrier_garen`` stays light.

An :class:`Engine` answers batches of chat conversations (``[{'role': ..., 'content': ...}, ...]``). A conversation
whose last message has role ``assistant`` is a *prefill*: the model continues that message (the navigator uses this
for the empty think block of the Qwen3-Reranker protocol). Three engines are provided, and give the same answers for
the same model (greedy text, token counts, ``P(yes)``):

* :class:`VLLMEngine`: an in-process ``vllm.LLM`` (offline batch inference, prefix caching, greedy decoding);
* :class:`OpenAIEngine`: any OpenAI-compatible server (``vllm serve``, SGLang, a hosted API), with bounded
  concurrency, timeouts, retries and round-robin over several servers (data parallel);
* :class:`TransformersEngine`: a Hugging Face ``transformers`` model in this process (laptops, Macs, CPU boxes).

Engines know nothing of the components built on them: ``ListwiseReranker(engine)``, ``YesNoScorer(engine)`` and
``LLMSummarizer(engine)`` share one engine and keep their own :class:`UsageStats` (calls, prompts, prompt and
completion tokens).
"""
from ._base import (AccessRefused, AnswerTokenError, Conversation, Engine, Generation, Secret, UsageStats,
                    generate_each, no_information, redact, resolve_api_key, softmax_yes, truncate_each, usable_logprob,
                    yes_no_each)
from ._tokens import ServerTokenizer, render_chat, split_prefill
from ._openai import DeadlineExceeded, InvalidResponseError, ModelNotServed, OpenAIEngine, RequestRefused
from ._transformers import TransformersEngine
from ._vllm import EngineStartError, EngineStopped, VLLMEngine

__all__ = ['Engine', 'Generation', 'UsageStats', 'VLLMEngine', 'OpenAIEngine', 'TransformersEngine', 'Conversation',
           'Secret', 'generate_each', 'yes_no_each', 'resolve_api_key', 'redact', 'render_chat', 'split_prefill',
           'softmax_yes', 'RequestRefused', 'InvalidResponseError', 'DeadlineExceeded', 'ModelNotServed',
           'truncate_each', 'ServerTokenizer', 'AccessRefused', 'usable_logprob', 'no_information', 'EngineStartError',
           'EngineStopped', 'AnswerTokenError']
