"""Group summaries: the summariser interface, an extractive summariser that needs no model, and the summary store
of a :class:`~pyterrier_garen.GroupCorpusGraph` folder (finished records, resumable partial run)."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ._atomic import resource_errors
from ._params import Rebuildable
from ._io import atomic_write, open_no_follow, write_json

__all__ = ['Summarizer', 'ExtractiveSummarizer', 'GroupDocs', 'SummaryStore']

SUMMARIES = 'summaries.jsonl'
PARTIAL = 'summaries.partial.jsonl'
PARTIAL_META = 'summaries.partial.json'

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


class ExtractiveSummarizer(Rebuildable, Summarizer):
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


class SummaryStore:
    """The summaries of one artifact folder: ``summaries.jsonl`` when finished, else a resumable partial run.

    A run appends records to ``summaries.partial.jsonl`` (flushed and fsynced per call of :meth:`add`) next to
    ``summaries.partial.json`` (the summariser's config). Reopening the same run keeps every finished record, so an
    interrupted summarisation continues where it stopped; each group is accepted once (a record for a group already
    recorded is ignored), so a retried batch never duplicates. :meth:`finish` writes ``summaries.jsonl`` atomically.

    Args:
        path: the artifact folder.
        num_groups: number of groups (ids ``0 .. num_groups - 1``).
    """

    def __init__(self, path: Path, num_groups: int):
        self.path = Path(path)
        self.num_groups = int(num_groups)
        self.done: Dict[int, Dict[str, Any]] = {}

    @property
    def partial_file(self) -> Path:
        return self.path / PARTIAL

    @property
    def final_file(self) -> Path:
        return self.path / SUMMARIES

    def begin(self, config: Dict[str, Any], *, overwrite: bool = False) -> Dict[int, Dict[str, Any]]:
        """Start or resume a run of the summariser with ``config``; returns the records already finished.

        Raises:
            FileExistsError: an unfinished run of another summariser is there (``overwrite=True`` discards it).
        """
        partial, meta = self.path / PARTIAL, self.path / PARTIAL_META
        self.done = {}
        if meta.is_file() and not overwrite:
            try:
                with open_no_follow(meta, 'rt') as fin:
                    previous = json.load(fin)
            except ValueError:
                raise ValueError(f'{meta} (the config of an unfinished summarisation) is not valid JSON; pass '
                                 'overwrite=True (--overwrite) to start the summaries again') from None
            if not isinstance(previous, dict) or previous.get('summarizer') != config:
                raise FileExistsError(f'{partial} holds an unfinished run of another summariser '
                                      f'({previous.get("summarizer") if isinstance(previous, dict) else previous}); '
                                      'pass overwrite=True to discard it')
            self.done = _read_partial(partial, self.num_groups)
        else:
            partial.unlink(missing_ok=True)
            write_json(meta, {'summarizer': config, 'started': time.time()})
        return dict(self.done)

    def missing(self) -> List[int]:
        """Group ids without a record yet, in id order."""
        return [g for g in range(self.num_groups) if g not in self.done]

    def add(self, records: Iterable[Dict[str, Any]]) -> int:
        """Append records (each with its ``group``) to the partial file; returns how many were new."""
        new = []
        for record in records:
            gid = int(record['group'])
            if not 0 <= gid < self.num_groups:
                raise ValueError(f'summary record for group {gid}, but group ids run from 0 to {self.num_groups - 1}')
            if gid not in self.done:
                self.done[gid] = record
                new.append(record)
        if new:
            with resource_errors(self.partial_file), open_no_follow(self.partial_file, 'at') as fout:
                for record in new:
                    fout.write(json.dumps(record) + '\n')
                fout.flush()
                os.fsync(fout.fileno())
        return len(new)

    def finish(self, config: Dict[str, Any]) -> Dict[str, Any]:
        """Write ``summaries.jsonl`` (every group, in id order) and drop the partial run; returns the metadata
        entry to record in ``pt_meta.json``.

        Raises:
            ValueError: some groups have no record yet.
        """
        missing = self.missing()
        if missing:
            raise ValueError(f'{len(missing)} groups have no summary yet (e.g. {missing[:5]}); summarise them first')
        atomic_write(self.final_file, ''.join(json.dumps(self.done[gid]) + '\n' for gid in range(self.num_groups)))
        return {'summarizer': config, 'count': self.num_groups,
                'fallbacks': sum(bool(r.get('fallback')) for r in self.done.values())}

    def discard_partial(self) -> None:
        """Remove the partial run's files (after :meth:`finish` has been recorded)."""
        (self.path / PARTIAL).unlink(missing_ok=True)
        (self.path / PARTIAL_META).unlink(missing_ok=True)

    def read(self, expected: Optional[int] = None) -> List[Optional[Dict[str, Any]]]:
        """The finished records by group id (``None`` for a group without one).

        Raises:
            ValueError: a line is not a valid record, names an unknown group, or the count differs from ``expected``.
        """
        records: List[Optional[Dict[str, Any]]] = [None] * self.num_groups
        first: Dict[int, int] = {}
        with open_no_follow(self.final_file, 'rb') as fin:  # a link is refused: the artifact's files lie inside it
            for lineno, raw in enumerate(fin, start=1):
                record = _check_record(raw, f'{self.final_file} line {lineno}', self.num_groups)
                gid = record['group']
                if gid in first:
                    raise ValueError(f'{self.final_file} line {lineno} repeats group {gid} (first on line '
                                     f'{first[gid]}); the file is damaged: summarise again with overwrite=True')
                first[gid] = lineno
                records[gid] = record
        found = sum(r is not None for r in records)
        if expected is not None and found != expected:
            raise ValueError(f'{self.final_file} holds {found} records, pt_meta.json says {expected}')
        return records


def _check_record(raw: bytes, where: str, num_groups: int) -> Dict[str, Any]:
    """One line of ``summaries.jsonl`` as a record: a JSON object with an integer ``group`` in range and string
    or null ``concept`` and ``summary`` (strict JSON); a ValueError naming the line otherwise."""
    fix = 'the file is damaged: summarise again with overwrite=True (--overwrite)'
    try:
        record = json.loads(raw.decode('utf8'), parse_constant=_not_json_number)
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f'{where} is not a valid summary record (not JSON); {fix}') from None
    if not isinstance(record, dict):
        raise ValueError(f'{where} is not a valid summary record (a JSON {type(record).__name__}, not an object); '
                         f'{fix}')
    gid = record.get('group')
    if isinstance(gid, bool) or not isinstance(gid, int):
        raise ValueError(f'{where} is not a valid summary record ("group" must be an integer, got {gid!r}); {fix}')
    if not 0 <= gid < num_groups:
        raise ValueError(f'{where} names unknown group {gid} (group ids run from 0 to {num_groups - 1}); {fix}')
    for key in ('concept', 'summary'):  # missing or null reads as no text; any other type is not a summary
        if record.get(key) is not None and not isinstance(record[key], str):
            raise ValueError(f'{where} is not a valid summary record ("{key}" must be a string, got '
                             f'{record.get(key)!r}); {fix}')
    return record


def _not_json_number(name: str):
    raise ValueError(f'{name} is not strict JSON')


def _read_partial(path: Path, num_groups: int) -> Dict[int, Dict[str, Any]]:
    """Finished records of an interrupted summarisation.

    A torn last line (killed mid-write) is dropped silently; any other line that is not a valid record (garbage, a
    group id out of range) is named in one warning with the file and line numbers, its group is summarised again,
    and the file is rewritten with the valid records only. The first record of a group wins.
    """
    import warnings
    done: Dict[int, Dict[str, Any]] = {}
    if not path.is_file() and not path.is_symlink():
        return done
    with open_no_follow(path, 'rb') as fin:
        data = fin.read()
    keep = data.rfind(b'\n') + 1
    bad: List[int] = []
    for lineno, raw in enumerate(data[:keep].split(b'\n')[:-1], start=1):
        if not raw.strip():
            continue
        try:
            record = _check_record(raw, str(path), num_groups)  # the same rules as the finished file's
            gid = record['group']
        except ValueError:
            bad.append(lineno)
            continue
        done.setdefault(gid, record)
    if bad:
        shown = ', '.join(map(str, bad[:5])) + (', ...' if len(bad) > 5 else '')
        warnings.warn(f'{path}: {len(bad)} unreadable lines (line {shown}) skipped; {len(done)} valid records kept, '
                      'the groups of the unreadable lines are summarised again', stacklevel=3)
    if bad or keep < len(data):  # rewrite: valid records only, so the next append starts on a fresh line
        atomic_write(path, ''.join(json.dumps(r) + '\n' for r in done.values()))
    return done
