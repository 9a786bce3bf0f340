"""Group summarisers: the interface shared by all summarisers, and an extractive one that needs no model."""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from typing import Any, Dict, List, Sequence

__all__ = ['Summarizer', 'ExtractiveSummarizer', 'GroupDocs']

# One group handed to a summariser: {'group': int, 'docs': [{'docno': str, 'text': str, 'title'?: str}, ...]}
GroupDocs = Dict[str, Any]


class Summarizer:
    """Interface of a group summariser, used by :meth:`GroupCorpusGraph.summarize`.

    A summariser receives a batch of groups (each a dict ``{'group': int, 'docs': [doc, ...]}`` where a doc is
    ``{'docno', 'text'[, 'title']}``) and returns one record per group, in the same order. A record is a dict with
    at least ``concept`` (a short label) and ``summary`` (a few sentences); other JSON-serialisable keys are kept
    (e.g. ``fallback``: True when a model answer could not be used). Only ``concept`` and ``summary`` are used
    for navigation.
    """

    def summarize(self, groups: Sequence[GroupDocs]) -> List[Dict[str, Any]]:
        raise NotImplementedError()

    def config(self) -> Dict[str, Any]:
        """What to record in the artifact so that the summaries can be reproduced (name, model id, prompt hash)."""
        return {'name': type(self).__name__}


_TOKEN = re.compile(r"[a-z][a-z0-9\-]{2,}")
_SENTENCE = re.compile(r'(?<=[.!?])\s+')
_STOP = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other
our ours out over own same she should so some such than that the their theirs them then there these they this
those through to too under until up very was we were what when where which while who whom why will with would
you your yours using used use based study studies result results method methods show shows shown paper present
presented given obtained found new one two three may however within without well also via et al thus
""".split())


def _terms(text: str) -> List[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class ExtractiveSummarizer(Summarizer):
    """A model-free summariser: salient terms of the group plus its most central titles or sentences.

    * ``concept``: the ``num_terms_concept`` most salient terms (term frequency in the group, weighted by the
      number of member documents using the term, ties by term);
    * ``summary``: ``"Key terms: ...."`` followed by the ``num_sentences`` most central titles/first sentences,
      where centrality is the summed salience of a sentence's distinct terms divided by the square root of its
      length. Deterministic: the same group gives the same text.

    Args:
        num_terms: salient terms listed in the summary.
        num_terms_concept: salient terms used as the concept label.
        num_sentences: central sentences (titles when documents have them) in the summary.
        max_chars: cap on the summary length in characters.
    """

    def __init__(self, *, num_terms: int = 12, num_terms_concept: int = 3, num_sentences: int = 4,
                 max_chars: int = 1200):
        self.num_terms = num_terms
        self.num_terms_concept = num_terms_concept
        self.num_sentences = num_sentences
        self.max_chars = max_chars

    def __repr__(self):
        return (f'ExtractiveSummarizer(num_terms={self.num_terms}, num_terms_concept={self.num_terms_concept}, '
                f'num_sentences={self.num_sentences}, max_chars={self.max_chars})')

    def config(self) -> Dict[str, Any]:
        params = {'num_terms': self.num_terms, 'num_terms_concept': self.num_terms_concept,
                  'num_sentences': self.num_sentences, 'max_chars': self.max_chars}
        digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
        return {'name': 'extractive', 'model': None, 'params': params, 'prompt_hash': digest}

    def summarize(self, groups: Sequence[GroupDocs]) -> List[Dict[str, Any]]:
        return [self.summarize_one(group['docs']) for group in groups]

    def summarize_one(self, docs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
        tf: Counter = Counter()
        df: Counter = Counter()
        units = []  # candidate sentences: one title (or first sentences) per document
        for doc in docs:
            text = f"{doc.get('title') or ''} {doc.get('text') or ''}"
            terms = _terms(text)
            tf.update(terms)
            df.update(set(terms))
            title = (doc.get('title') or '').strip()
            if title:
                units.append(title)
            else:
                sentences = [s.strip() for s in _SENTENCE.split((doc.get('text') or '').strip()) if s.strip()]
                units.extend(sentences[:2])
        salience = {t: tf[t] * df[t] for t in tf}
        ranked_terms = sorted(salience, key=lambda t: (-salience[t], t))
        concept = ' '.join(ranked_terms[:self.num_terms_concept])

        def centrality(sentence: str) -> float:
            distinct = set(_terms(sentence))
            if not distinct:
                return 0.
            return sum(salience.get(t, 0) for t in distinct) / math.sqrt(len(distinct))

        seen = set()
        central = []
        for sentence in sorted(units, key=lambda s: (-centrality(s), s)):
            key = sentence.lower()
            if key in seen:
                continue
            seen.add(key)
            central.append(sentence if sentence.endswith(('.', '!', '?')) else sentence + '.')
            if len(central) >= self.num_sentences:
                break
        summary = 'Key terms: ' + ', '.join(ranked_terms[:self.num_terms]) + '.'
        if central:
            summary += ' ' + ' '.join(central)
        return {'concept': concept, 'summary': summary[:self.max_chars]}
