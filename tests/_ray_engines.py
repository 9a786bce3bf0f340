"""Summariser and engine recipes for the Ray tests (built inside Ray actors from a SummarizerSpec / EngineSpec).

:class:`ProbedSummarizer` is the real :class:`~pyterrier_garen.LLMSummarizer` on a real engine, plus test probes:

* every record also stores the engine's raw replies for its group (``raw``), so comparing records compares the
  generations themselves, not only the parsed or fallback text;
* the docnos of every group it is asked to summarise are appended to a file per process in ``log_dir``;
* ``failures`` maps docnos to ``'raise'`` or ``'exit'``: a batch holding such a document raises, or kills its worker
  process (as a crash or a preempted node would); once per docno (a marker file in ``marker_dir``, created
  atomically, remembers it across processes), or every time with ``once=False``.
"""
import os
import re
from pathlib import Path

from pyterrier_garen import LLMSummarizer

_DOCNO = re.compile(r'^\[\d+\] \(([^)]*)\)', re.M)


class _Recording:
    """Delegates to an engine and keeps ``(docnos shown, reply)`` for every conversation it generates for."""

    def __init__(self, engine):
        self._engine = engine
        self.replies = []

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def generate(self, conversations, **kwargs):
        generations = self._engine.generate(conversations, **kwargs)
        for conversation, generation in zip(conversations, generations):
            docnos = [d for m in conversation if m['role'] == 'user' for d in _DOCNO.findall(m['content'])]
            self.replies.append((docnos, generation.text))
        return generations


class ProbedSummarizer(LLMSummarizer):
    def __init__(self, engine, *, failures=None, once=True, marker_dir=None, log_dir=None, **kwargs):
        super().__init__(_Recording(engine), **kwargs)
        self.failures = failures or {}
        self.once = once
        self.marker_dir = marker_dir
        self.log_dir = log_dir

    def config(self):
        return {**super().config(), 'probed': True}

    def _probe(self, groups):
        docnos = [str(d['docno']) for g in groups for d in g['docs']]
        if self.log_dir:
            with open(Path(self.log_dir) / f'{os.getpid()}.log', 'a') as fout:
                fout.write(''.join(f'{d}\n' for d in docnos))
        for docno, mode in self.failures.items():
            if docno not in docnos:
                continue
            if self.once:
                try:  # only the first process to get here fails
                    fd = os.open(Path(self.marker_dir) / f'{docno}.failed', os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    continue
                os.close(fd)
            if mode == 'exit':
                os._exit(1)
            raise RuntimeError(f'injected failure on a batch holding document {docno}')

    def summarize(self, groups):
        self._probe(groups)
        self.engine.replies = []
        records = super().summarize(groups)
        for group, record in zip(groups, records):
            first = str(group['docs'][0]['docno'])
            record['raw'] = [text for docnos, text in self.engine.replies if docnos and docnos[0] == first]
        return records


def ray_test_engine(model_dir):
    """The engine of the Ray tests: TransformersEngine on the tiny local model (random weights, greedy)."""
    import pytest

    pytest.importorskip('transformers', reason='the cpu extra (transformers) is not installed')
    from pyterrier_garen import EngineSpec, build_tiny_model
    path = build_tiny_model(Path(model_dir) / 'tiny', num_layers=1, hidden_size=64, num_heads=2)
    return EngineSpec('transformers', model=str(path), device='cpu', batch_size=8)
