"""Engines for the Ray tests, built inside Ray actors from an EngineSpec (so they take ``model=``).

* :class:`RulesEngine`: the rule-based stub engine under a model id;
* :class:`FaultyEngine`: wraps any engine spec; records which documents every prompt shows (one file per process in
  ``log_dir``) and fails when a prompt shows ``fail_docno``: once (a marker file remembers it across processes) or
  always, by raising or by killing its worker process.
"""
import os
import re
from pathlib import Path

from _stub_engine import StubEngine

from pyterrier_garen._llm import Engine

_DOCNO = re.compile(r'^\[\d+\] \(([^)]*)\)', re.M)


class RulesEngine(StubEngine):
    def __init__(self, *, model='stub/rules', **kwargs):
        super().__init__(**kwargs)
        self.model = model


class FaultyEngine(Engine):
    def __init__(self, *, model, inner, fail_docno=None, mode='raise', once=True, marker=None, log_dir=None):
        self.model = model
        self.inner = inner.build()
        self.fail_docno = fail_docno
        self.mode = mode
        self.once = once
        self.marker = marker
        self.log_dir = log_dir

    @property
    def context_length(self):
        return self.inner.context_length

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def truncate(self, text, max_tokens):
        return self.inner.truncate(text, max_tokens)

    def count_conversation_tokens(self, conversation):
        return self.inner.count_conversation_tokens(conversation)

    def _check(self, conversations):
        docnos = [d for c in conversations for m in c if m['role'] == 'user' for d in _DOCNO.findall(m['content'])]
        if self.log_dir:
            with open(Path(self.log_dir) / f'{os.getpid()}.log', 'a') as fout:
                fout.write(''.join(f'{d}\n' for d in docnos))
        if self.fail_docno is None or self.fail_docno not in docnos:
            return
        if self.once:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # atomic: only one process fails
            except FileExistsError:
                return
            os.close(fd)
        if self.mode == 'exit':
            os._exit(1)  # the worker process dies, as on a crash or a preempted node
        raise RuntimeError(f'injected failure on a batch showing document {self.fail_docno}')

    def generate(self, conversations, *, max_tokens, stop=None):
        self._check(conversations)
        return self.inner.generate(conversations, max_tokens=max_tokens, stop=stop)

    def yes_no(self, conversations, *, yes='yes', no='no'):
        self._check(conversations)
        return self.inner.yes_no(conversations, yes=yes, no=no)


def RAY_TEST_ENGINE(model_dir):
    """The engine spec of the Ray tests."""
    from pyterrier_garen._ray import EngineSpec
    return EngineSpec('_ray_engines:RulesEngine', model='stub/rules')
