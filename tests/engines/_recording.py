"""An engine wrapper for the real-engine tier: passes every call to a real engine and records what went in and out,
so tests can check prompt sizes and token accounting against the engine's own counts; it can also make chosen
requests fail (a request that failed after its retries) or interrupt a run."""
from pyterrier_garen._engines import Engine

SERVED_NAME = 'tiny'
CONTEXT = 4096
SCRIPT = '[2] > [1] > [3]'
# the arguments both vLLM engines get (in-process and server), so that they decode the same model the same way
VLLM_ARGS = {'enforce_eager': True, 'max_model_len': CONTEXT, 'dtype': 'float32'}


class Recording(Engine):
    def __init__(self, engine, *, fail=None, interrupt_after=None):
        self.engine = engine
        self.model = engine.model
        self.fail = fail  # conversation -> bool: raise for the batch holding it (as a failed request would)
        self.interrupt_after = interrupt_after  # raise KeyboardInterrupt on this call (1-based)
        self.log = []  # (method, conversations, generations, max_tokens)

    def __repr__(self):
        return f'Recording({self.engine!r})'

    @property
    def context_length(self):
        return self.engine.context_length

    def count_tokens(self, text):
        return self.engine.count_tokens(text)

    def truncate(self, text, max_tokens):
        return self.engine.truncate(text, max_tokens)

    def truncate_many(self, texts, max_tokens):
        return self.engine.truncate_many(texts, max_tokens)

    def count_conversation_tokens(self, conversation):
        return self.engine.count_conversation_tokens(conversation)

    def _check(self, conversations):
        if self.interrupt_after is not None and len(self.log) + 1 >= self.interrupt_after:
            raise KeyboardInterrupt('interrupted by the test')
        if self.fail is not None and any(self.fail(c) for c in conversations):
            raise RuntimeError('request failed after 3 attempts (simulated by the test)')

    def generate(self, conversations, *, max_tokens, stop=None):
        self._check(conversations)
        generations = self.engine.generate(conversations, max_tokens=max_tokens, stop=stop)
        self.log.append(('generate', list(conversations), generations, max_tokens))
        return generations

    def yes_no(self, conversations, *, yes='yes', no='no'):
        self._check(conversations)
        generations = self.engine.yes_no(conversations, yes=yes, no=no)
        self.log.append(('yes_no', list(conversations), generations, 1))
        return generations

    def calls(self, method):
        return [entry for entry in self.log if entry[0] == method]

    def tokens(self):
        """(prompt, completion) tokens as the wrapped engine counted them."""
        return (sum(g.prompt_tokens for entry in self.log for g in entry[2]),
                sum(g.completion_tokens for entry in self.log for g in entry[2]))
