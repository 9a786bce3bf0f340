"""Prompts: chat templates shipped as package data (``pyterrier_garen/prompts/*.txt``), rendered with fields,
identified by a hash recorded wherever their output is stored."""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

__all__ = ['PromptTemplate', 'clean_text', 'PROMPT_DIR', 'THINK_PREFILL', 'MAX_REPLY_CHARS', 'cap_reply',
           'drop_think_blocks', 'fenced_blocks', 'fit_query', 'QUERY_SHARE']

Conversation = List[Dict[str, str]]
#: Assistant prefill of an empty reasoning block (Qwen3's non-thinking answer start).
THINK_PREFILL = '<think>\n\n</think>\n\n'
PROMPT_DIR = Path(__file__).parent / 'prompts'
_SECTION = re.compile(r'^=== (system|user|assistant) ===[ \t]*$', re.M)
_FIELD = re.compile(r'\{(\w+)\}')


class PromptTemplate:
    """A chat prompt stored as package data (``pyterrier_garen/prompts/<name>.txt``).

    The file holds sections introduced by ``=== system ===``, ``=== user ===`` or ``=== assistant ===`` lines; fields
    are written ``{name}`` and filled in one pass (text inserted into a field is never re-scanned, and braces that are
    not a known field, e.g. in a JSON example, stay as they are).

    Attributes:
        name: the prompt's name (file stem).
        text: the file's content.
        hash: the first 12 hex digits of the SHA-256 of the file (record it wherever the prompt's output is stored).
    """

    def __init__(self, name: str):
        path = PROMPT_DIR / f'{name}.txt'
        if not path.is_file():
            known = sorted(p.stem for p in PROMPT_DIR.glob('*.txt'))
            raise ValueError(f'unknown prompt {name!r}; the package ships {known}')
        self.name = name
        self.text = path.read_text(encoding='utf8')
        self.hash = hashlib.sha256(self.text.encode('utf8')).hexdigest()[:12]
        parts = _SECTION.split(self.text)
        self.sections = [(role, content.strip('\n')) for role, content in zip(parts[1::2], parts[2::2], strict=True)]
        if not self.sections:
            raise ValueError(f'prompt file {path} has no "=== system ===" / "=== user ===" sections')

    def __repr__(self):
        return f'PromptTemplate({self.name!r})'

    def messages(self, **values: Any) -> Conversation:
        """The conversation with the fields filled from ``values``."""
        def fill(match):
            key = match.group(1)
            return str(values[key]) if key in values else match.group(0)
        return [{'role': role, 'content': _FIELD.sub(fill, content)} for role, content in self.sections]


def text_or_empty(text: Any) -> str:
    """``text`` as a string; a missing value (``None``, a NaN of any float type, pandas' ``NA`` and ``NaT``: a gap
    pandas filled) becomes the empty string, not ``'nan'`` or ``'<NA>'``."""
    if text is None:
        return ''
    if isinstance(text, (float, np.floating)):
        return '' if np.isnan(text) else str(text)
    pandas = sys.modules.get('pandas')  # its missing values exist only once it is imported (this module does not)
    if pandas is not None and (text is pandas.NA or text is pandas.NaT):
        return ''
    return str(text)


def clean_text(text: Any) -> str:
    """One line of text: whitespace runs collapsed; ``None`` and NaN become the empty string."""
    return ' '.join(text_or_empty(text).split())


#: Model replies are read from their last this-many characters (answers come last, after any reasoning); together
#: with the linear-time helpers below this bounds the time spent on any reply, however long or malformed.
MAX_REPLY_CHARS = 100_000


def cap_reply(text: Any) -> str:
    """A reply as a string of at most :data:`MAX_REPLY_CHARS` characters (its tail)."""
    text = text if isinstance(text, str) else str(text)
    return text[-MAX_REPLY_CHARS:]


def drop_think_blocks(text: str) -> str:
    """``text`` with every closed ``<think>...</think>`` block (case-insensitive) replaced by a space.

    The same result as ``re.sub(r'<think>.*?</think>', ' ', text, flags=re.S | re.I)``, in linear time (the regular
    expression is quadratic on many unclosed ``<think>`` tags).
    """
    lower = text.lower()
    parts, pos = [], 0
    while True:
        start = lower.find('<think>', pos)
        end = lower.find('</think>', start + len('<think>')) if start >= 0 else -1
        if end < 0:
            parts.append(text[pos:])
            return ''.join(parts)
        parts.extend((text[pos:start], ' '))
        pos = end + len('</think>')


def fenced_blocks(text: str) -> List[str]:
    """Contents of the closed ```` ``` ```` code fences of ``text`` (a leading ``json`` tag and whitespace dropped),
    in linear time."""
    pieces = text.split('```')
    blocks = []
    for inner in pieces[1:-1:2]:  # odd pieces that have a closing fence after them
        inner = inner.lstrip()
        if inner[:4] in ('json', 'JSON'):
            inner = inner[4:]
        blocks.append(inner.strip())
    return blocks


#: a query may take at most 1/QUERY_SHARE of the engine's context in a prompt (at least MIN_QUERY_TOKENS tokens);
#: a longer one is cut there, so that the documents keep their room and the prompt fits
QUERY_SHARE = 8
MIN_QUERY_TOKENS = 32


def fit_query(engine: Any, query: str) -> tuple:
    """``(query, budget, cut)``: the query cut to its budget of the engine's context (see :data:`QUERY_SHARE`)."""
    budget = max(MIN_QUERY_TOKENS, int(engine.context_length) // QUERY_SHARE)
    if len(query) <= budget or engine.count_tokens(query) <= budget:  # a token is at least one character
        return query, budget, False
    return engine.truncate(query, budget), budget, True


def warn_cut_queries(component: Any, count: int, budget: int, context: int) -> None:
    """Count queries cut by :func:`fit_query` in ``component.cut_queries`` and say so."""
    if count:
        import warnings
        component.cut_queries += count
        warnings.warn(f'{component!r}: {count} queries longer than {budget} tokens (1/{QUERY_SHARE} of the context of '
                      f'{context}) were cut to that length in the prompt (counted in .cut_queries)', stacklevel=3)


def warn_empty_texts(component: Any, texts: List[str], field: str) -> None:
    """Count the rows whose (cleaned) text is empty in ``component.empty_texts``; say so the first time a whole call
    is empty.

    An empty text is judged on the query alone. A few empty documents are a collection's own (Cranfield has two), so
    they are only counted; a call where every text is empty is a missing text: groups sent to a navigator that were
    never summarised (each sends ``''``, and all tie), or documents sent without their text.
    """
    count = sum(1 for text in texts if not text.strip())
    component.empty_texts += count
    if not count or count < len(texts) or component._said_empty:
        return
    component._said_empty = True
    import warnings
    warnings.warn(f'{component!r}: all {count} rows have an empty {field!r}, so the model judges them on the query '
                  'alone and cannot tell them apart (counted in .empty_texts; said once). As a navigator: summarise '
                  'the groups first (groups.summarize(garen.ExtractiveSummarizer(), dataset); garen.prepare does '
                  "it); as a reranker: put the documents' text in that column (pt.text.get_text(dataset, 'text') in "
                  'front)', stacklevel=3)
