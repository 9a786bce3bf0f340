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

__all__ = ['Summarizer', 'ExtractiveSummarizer', 'GroupDocs', 'SummaryStore', 'SummariesFailedError',
           'MAX_FAILED_SHARE']

SUMMARIES = 'summaries.jsonl'
PARTIAL = 'summaries.partial.jsonl'
PARTIAL_META = 'summaries.partial.json'
#: the two files of an unfinished run set aside by another summariser's run (<key>: a hash of its summariser's config)
SHELVED = re.compile(r'summaries\.partial\.[0-9a-f]{12}\.jsonl?')

#: ``fallback_reason`` of a record made by the extractive fallback because the engine request failed (retried by the
#: next run) or because the model's reply could not be used (greedy decoding would answer the same: kept)
REQUEST_FAILED = 'request_failed'
UNUSABLE_REPLY = 'unusable_reply'
#: default of ``max_failed_share``: the largest share of a run's groups whose engine request may fail before
#: :meth:`GroupCorpusGraph.summarize` stops with :class:`SummariesFailedError` instead of finishing
MAX_FAILED_SHARE = 0.1

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


def failed_request(record: Dict[str, Any]) -> bool:
    """Whether a record is an extractive fallback made because its engine request failed (the next run retries it).

    Records written before ``fallback_reason`` existed are recognised by their ``error`` text.
    """
    if not isinstance(record, dict) or not record.get('fallback'):
        return False
    reason = record.get('fallback_reason')
    if reason is not None:
        return reason == REQUEST_FAILED
    return str(record.get('error') or '').startswith('engine request failed')


class SummariesFailedError(RuntimeError):
    """Too many groups of a summarisation run could not be summarised by the model because the engine request
    failed (the server is down, overloaded, or refuses the requests). The finished records are kept; rerunning the
    same call retries the failed groups.

    Attributes:
        failed: groups whose engine request failed.
        total: groups the run had to summarise.
        exit_status: the command line's exit status for this error (1: the run failed).
    """
    exit_status = 1

    def __init__(self, message: str, *, failed: int, total: int):
        super().__init__(message)
        self.failed = failed
        self.total = total


class FailureBudget:
    """Counts the failed engine requests of one summarisation run against ``max_failed_share`` of its groups.

    Args:
        total: groups the run summarises.
        max_failed_share: the largest share of them whose request may fail (0: none; 1: any number).
    """

    def __init__(self, total: int, max_failed_share: float):
        share = max_failed_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ValueError(f'max_failed_share must be a number from 0 to 1 (the share of groups whose engine '
                             f'request may fail), got {share!r}')
        self.total, self.share = int(total), float(share)
        self.failed: List[Dict[str, Any]] = []
        self.unusable: List[Dict[str, Any]] = []
        self.seen = 0

    def count(self, records: Iterable[Dict[str, Any]]) -> None:
        for record in records:
            self.seen += 1
            if failed_request(record):
                self.failed.append(record)
            elif isinstance(record, dict) and record.get('fallback'):
                self.unusable.append(record)

    @property
    def exceeded(self) -> bool:
        """True as soon as the failures are more than the share allows (they can only grow)."""
        return len(self.failed) > self.share * self.total

    def error(self, path: Path) -> SummariesFailedError:
        stopped = '' if self.seen >= self.total else f' (stopped after {self.seen} groups)'
        return SummariesFailedError(
            f'{len(self.failed)} of the {self.total} groups to summarise could not be summarised by the model: their '
            f'engine request failed{stopped}, more than max_failed_share={self.share:g} allows '
            f'({_examples(self.failed)}). The {self.seen - len(self.failed)} other records are kept in '
            f'{path / PARTIAL}; '
            'fix the server (is it up, does it serve the model, is the key right?) and rerun the same command, which '
            'retries only the failed groups, or raise max_failed_share (--max-failed-share) to accept extractive '
            'fallbacks for them', failed=len(self.failed), total=self.total)

    def warn(self) -> None:
        import warnings
        if self.failed:
            warnings.warn(f'{len(self.failed)} of {self.total} groups got an extractive summary because their engine '
                          f'request failed ({_examples(self.failed)}); they are marked (fallback_reason '
                          f'"{REQUEST_FAILED}") and the next run of the same summarize retries them', stacklevel=3)
        if self.unusable:
            warnings.warn(f'{len(self.unusable)} of {self.total} groups got an extractive summary because the model\'s '
                          f'reply could not be used ({_examples(self.unusable)}); they are marked (fallback_reason '
                          f'"{UNUSABLE_REPLY}") and kept: greedy decoding would answer the same', stacklevel=3)


def _examples(records: Sequence[Dict[str, Any]], limit: int = 2) -> str:
    """The first distinct error texts of some records, for a message."""
    seen: List[str] = []
    for record in records:
        error = ' '.join(str(record.get('error') or 'no error recorded').split())[:200]
        if error not in seen:
            seen.append(error)
        if len(seen) == limit:
            break
    return 'e.g. ' + '; '.join(seen)


def stamp(record: Dict[str, Any], group: int, provenance: Dict[str, Any]) -> Dict[str, Any]:
    """The record as stored: its group id and its provenance. A fallback record names the summariser that really
    wrote it (the extractive one, with the model's provenance under ``instead_of``)."""
    record = {**record, 'group': group}
    if record.get('fallback'):
        made_by = record.pop('fallback_provenance', None) or _EXTRACTIVE_PROVENANCE
        record['provenance'] = {**made_by, 'instead_of': provenance}
    else:
        record['provenance'] = provenance
    return record


def summarize_batch(summarizer: Summarizer, batch: List[Dict[str, Any]]) -> List[tuple]:
    """``(group id, record)`` for each group of one batch (one summariser call)."""
    records = summarizer.summarize(batch)
    if len(records) != len(batch):
        raise RuntimeError(f'{summarizer!r} returned {len(records)} records for {len(batch)} groups')
    return [(group['group'], record) for group, record in zip(batch, records, strict=True)]


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
        self.started: Optional[float] = None  # when the run begun by :meth:`begin` first started

    @property
    def partial_file(self) -> Path:
        return self.path / PARTIAL

    @property
    def final_file(self) -> Path:
        return self.path / SUMMARIES

    def begin(self, config: Dict[str, Any], *, overwrite: bool = False,
              keep: Optional[Iterable[Dict[str, Any]]] = None) -> Dict[int, Dict[str, Any]]:
        """Start or resume a run of the summariser with ``config``; returns the records already finished.

        Records whose engine request failed (:func:`failed_request`) do not count as finished: the run retries them.
        ``keep``: records of a finished run of the same summariser that a fresh run starts from (a rerun that
        retries the failed groups of ``summaries.jsonl``).

        An unfinished run of another summariser is never discarded: it is set aside as
        ``summaries.partial.<key>.jsonl`` (``<key>``: a hash of that summariser's config, with a warning) and
        resumes when that summariser runs here again, as a run of this summariser set aside earlier resumes now.

        Args:
            overwrite: start this summariser's run again, discarding its unfinished records, unless they come from a
                run that was itself started with ``overwrite`` (the same command run again after an interruption
                resumes it); also discards an unreadable ``summaries.partial.json``.

        Raises:
            ValueError: ``summaries.partial.json`` is not valid JSON (``overwrite=True`` discards it).
        """
        import warnings
        partial, meta = self.path / PARTIAL, self.path / PARTIAL_META
        self.done = {}
        previous = self._started(overwrite)
        if previous is not None and previous.get('summarizer') != config:
            shelf = self._shelve(previous)
            warnings.warn(f'{partial} held an unfinished run of another summariser ({previous.get("summarizer")}); '
                          f'it is kept as {shelf.name} and resumes when that summariser runs here again',
                          stacklevel=3)
            previous = None
        previous = self._unshelve(config, previous)
        if previous is not None and (not overwrite or previous.get('overwrite')):
            self.started = previous.get('started')
            self.done = {g: r for g, r in _read_partial(partial, self.num_groups).items() if not failed_request(r)}
        else:
            partial.unlink(missing_ok=True)
            self.started = time.time()
            write_json(meta, {'summarizer': config, 'started': self.started, 'overwrite': bool(overwrite)})
            if keep:
                self.add(r for r in keep if not failed_request(r))
        return dict(self.done)

    def _started(self, overwrite: bool) -> Optional[Dict[str, Any]]:
        """The unfinished run's ``summaries.partial.json``: None when there is none (or, with ``overwrite``, when it
        cannot be read); a ValueError when it cannot be read."""
        meta = self.path / PARTIAL_META
        if not meta.is_file():
            return None
        try:
            with open_no_follow(meta, 'rt') as fin:
                previous = json.load(fin)
            problem = 'is not a JSON object naming its summariser'
        except ValueError:
            previous, problem = None, 'is not valid JSON'
        if isinstance(previous, dict) and 'summarizer' in previous:
            return previous
        if overwrite:
            return None
        raise ValueError(f'{meta} (the config of an unfinished summarisation) {problem}; pass overwrite=True '
                         '(--overwrite) to start the summaries again')

    def shelf(self, config: Dict[str, Any]) -> tuple:
        """The two files of ``config``'s unfinished run when set aside: ``(records, run record)``."""
        key = hashlib.sha256(json.dumps(config, sort_keys=True).encode('utf8')).hexdigest()[:12]
        return (self.path / f'{PARTIAL[:-len(".jsonl")]}.{key}.jsonl',
                self.path / f'{PARTIAL_META[:-len(".json")]}.{key}.json')

    def _shelve(self, previous: Dict[str, Any]) -> Path:
        """Set the unfinished run aside (records first, its run record last: a kill between the two renames leaves
        the run record in place, and the next run sets it aside too)."""
        records, started = self.shelf(previous['summarizer'])
        if (self.path / PARTIAL).is_file():
            if records.exists():
                raise FileExistsError(f'{records} already holds records set aside for the summariser '
                                      f'{previous["summarizer"]}, and {self.path / PARTIAL} holds more: move one of '
                                      'the two out of the folder, then run again')
            os.replace(self.path / PARTIAL, records)
        os.replace(self.path / PARTIAL_META, started)
        return records

    def _unshelve(self, config: Dict[str, Any], started: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        """Bring back ``config``'s run set aside earlier; returns the run record of ``config``'s unfinished run
        (``started`` when it is already in place), or None.

        The run record comes back first, its records last (as setting aside moves them the other way round): a kill
        in between leaves a run record in place whose records are still set aside, which the next run of either
        summariser finds, never records without a run record, which a fresh run would remove.
        """
        records, record = self.shelf(config)
        partial = self.path / PARTIAL
        if started is None and record.is_file():
            os.replace(record, self.path / PARTIAL_META)
            started = self._started(False)
        elif started is None and records.is_file() and not partial.exists():  # the records alone (their run
            started = {'summarizer': config, 'started': time.time(), 'overwrite': False}  # record lost): a run
            write_json(self.path / PARTIAL_META, started)  # record of their own first
        if started is not None and records.is_file() and not partial.exists():
            os.replace(records, partial)
        return started

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
        entry = {'summarizer': config, 'count': self.num_groups,
                 'fallbacks': sum(bool(r.get('fallback')) for r in self.done.values())}
        if self.started is not None:  # which run this was: its leftovers are told from a later run
            entry['run_started'] = self.started
        if entry['fallbacks']:  # what really wrote those records, and why
            failed = sum(failed_request(r) for r in self.done.values())
            entry['fallback_reasons'] = {REQUEST_FAILED: failed, UNUSABLE_REPLY: entry['fallbacks'] - failed}
            entry['fallback_summarizer'] = ExtractiveSummarizer().config()
        return entry

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
                                     f'{first[gid]}); the file is damaged: summarise again with overwrite=True '
                                     '(--overwrite)')
                first[gid] = lineno
                records[gid] = record
        found = sum(r is not None for r in records)
        if expected is not None and found != expected:
            raise ValueError(f'{self.final_file} holds {found} records, pt_meta.json says {expected}; the file is '
                             'damaged (cut short or emptied): summarise again with overwrite=True (--overwrite), or '
                             'rebuild or re-download the artifact')
        return records


def remove_leftovers(path: Path) -> None:
    """Before summarising: the temporaries that a killed write left inside the artifact, and the partial run of a
    summarisation whose finish was recorded (writes nothing when there is nothing to remove)."""
    from ._checks import clean_file_temporaries, read_meta_file
    with resource_errors(path):
        clean_file_temporaries(path, ('pt_meta.json', SUMMARIES, PARTIAL, PARTIAL_META))
        meta = read_meta_file(path)
        started = path / PARTIAL_META
        if meta.get('summaries') and started.is_file() and not started.is_symlink():
            try:
                run = json.loads(started.read_text(encoding='utf8'))
            except ValueError:
                return
            finished = meta['summaries']
            if isinstance(run, dict) and isinstance(finished, dict) and \
                    run.get('summarizer') == finished.get('summarizer') and \
                    run.get('started') == finished.get('run_started', run.get('started')):
                # killed between the last two steps of a finished run (not a later run of the same summariser,
                # which retries failed groups or summarises again with overwrite: that one resumes)
                SummaryStore(path, 0).discard_partial()


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
    and the file is rewritten with the valid records only. The first record of a group wins, except that a record
    whose engine request failed gives way to a later one of the same group that did not (a retry).
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
        if gid not in done or (failed_request(done[gid]) and not failed_request(record)):
            done[gid] = record  # the first record of a group wins, unless a retry succeeded where it had failed
    if bad:
        shown = ', '.join(map(str, bad[:5])) + (', ...' if len(bad) > 5 else '')
        warnings.warn(f'{path}: {len(bad)} unreadable lines (line {shown}) skipped; {len(done)} valid records kept, '
                      'the groups of the unreadable lines are summarised again', stacklevel=3)
    if bad or keep < len(data):  # rewrite: valid records only, so the next append starts on a fresh line
        atomic_write(path, ''.join(json.dumps(r) + '\n' for r in done.values()))
    return done


_EXTRACTIVE_PROVENANCE = {k: ExtractiveSummarizer().config()[k] for k in ('name', 'model', 'prompt_hash')}
