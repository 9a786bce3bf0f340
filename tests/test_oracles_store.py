"""Oracles for the summary store: which record wins on resume, another summariser's run set aside (never lost), and
what navigation reads; on a hand-built artifact of 8 documents in 4 groups (no collection needed)."""
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyterrier_garen import GroupCorpusGraph, Summarizer
from pyterrier_garen._summaries import SummaryStore

DOCNOS = [f'd{i}' for i in range(8)]
CORPUS = [{'docno': d, 'text': f'text of {d}'} for d in DOCNOS]


class Scripted(Summarizer):
    """Records ``{'concept': '<tag> <group>', 'summary': 'members ...'}``; raises after ``fail_after`` calls."""

    def __init__(self, tag, fail_after=None):
        self.tag, self.fail_after, self.batches = tag, fail_after, []

    def config(self):
        return {'name': 'scripted', 'model': self.tag, 'prompt_hash': None}

    def summarize(self, groups):
        if self.fail_after is not None and len(self.batches) >= self.fail_after:
            raise KeyboardInterrupt('killed')
        self.batches.append([g['group'] for g in groups])
        return [{'concept': f'{self.tag} {g["group"]}', 'summary': 'members ' + ' '.join(d['docno'] for d in g['docs'])}
                for g in groups]


@pytest.fixture
def groups(tmp_path):
    edges = np.array([[(i + 1) % 8] for i in range(8)])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', DOCNOS, edges, np.ones(edges.shape),
                                        labels=[0, 0, 1, 1, 2, 2, 3, 3])


def test_resume_keeps_the_first_run_and_summarises_the_rest_once(groups):
    first = Scripted('A', fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(first, CORPUS, batch_size=2)
    assert first.batches == [[0, 1]]
    again = Scripted('A')
    groups.summarize(again, CORPUS, batch_size=2)
    assert again.batches == [[2, 3]]  # groups 0 and 1 are not summarised again
    assert [groups.summary(g) for g in range(4)] == ['A 0: members d0 d1', 'A 1: members d2 d3',
                                                     'A 2: members d4 d5', 'A 3: members d6 d7']
    assert groups.meta['summaries']['count'] == 4
    assert not (groups.path / 'summaries.partial.jsonl').exists()


def test_the_first_record_of_a_group_wins_on_resume(groups):
    store = groups.summary_store()
    store.begin({'name': 'x'})
    assert store.add([{'group': 1, 'concept': 'first', 'summary': 's'}]) == 1
    # a retried batch (e.g. from a Ray actor) brings group 1 again: ignored, in memory and on disk
    retried = [{'group': 1, 'concept': 'second', 'summary': 's'}, {'group': 2, 'concept': 'c', 'summary': 's'}]
    assert store.add(retried) == 1
    # a partial file written by an older run that did append the duplicate: reopening keeps the first line of group 1
    with (groups.path / 'summaries.partial.jsonl').open('at') as fout:
        fout.write(json.dumps({'group': 1, 'concept': 'third', 'summary': 's'}) + '\n')
    reopened = SummaryStore(groups.path, 4)
    done = reopened.begin({'name': 'x'})
    assert {g: r['concept'] for g, r in done.items()} == {1: 'first', 2: 'c'}
    assert reopened.missing() == [0, 3]
    reopened.add([{'group': g, 'concept': f'late {g}', 'summary': 's'} for g in (3, 1, 0)])
    reopened.finish({'name': 'x'})
    assert [r['concept'] for r in reopened.read(expected=4)] == ['late 0', 'first', 'c', 'late 3']


def _run_files(path):
    return sorted(f.name for f in path.iterdir() if f.name.startswith('summaries.partial'))


def test_another_summarisers_run_is_set_aside_and_resumes_when_it_runs_again(groups):
    """An interrupted LLM run (hours of GPU time) blocked every other summariser, and the only way forward the error
    offered (overwrite) discarded it: now the other summariser runs, and the interrupted run waits, whole."""
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    partial = (groups.path / 'summaries.partial.jsonl').read_bytes()
    records, started = groups.summary_store().shelf(Scripted('A').config())
    key = hashlib.sha256(json.dumps(Scripted('A').config(), sort_keys=True).encode()).hexdigest()[:12]
    assert (records.name, started.name) == (f'summaries.partial.{key}.jsonl', f'summaries.partial.{key}.json')
    other = Scripted('B')
    with pytest.warns(UserWarning, match=r"held an unfinished run of another summariser \({'model': 'A', .*\); it is "
                                         rf'kept as {records.name} and resumes when that summariser runs here again'):
        groups.summarize(other, CORPUS, batch_size=2)
    assert other.batches == [[0, 1], [2, 3]]  # nothing of A's run is taken
    assert groups.summary(0) == 'B 0: members d0 d1'
    assert records.read_bytes() == partial  # A's records, byte for byte
    assert json.loads(started.read_text())['summarizer'] == Scripted('A').config()
    assert _run_files(groups.path) == sorted([records.name, started.name])
    # A again: B's finished summaries stand in the way (overwrite replaces them), and A's run resumes where it stopped
    with pytest.raises(FileExistsError, match='already has summaries made by .*overwrite=True'):
        groups.summarize(Scripted('A'), CORPUS, batch_size=2)
    resumed = Scripted('A')
    groups.summarize(resumed, CORPUS, batch_size=2, overwrite=True)
    assert resumed.batches == [[2, 3]]
    assert [groups.summary(g) for g in (0, 3)] == ['A 0: members d0 d1', 'A 3: members d6 d7']
    assert _run_files(groups.path) == []


def test_the_records_alone_of_a_run_set_aside_still_resume(groups):
    """A kill between the two renames of setting a run aside leaves its records moved and its run record in place."""
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    store = groups.summary_store()
    records, _ = store.shelf(Scripted('A').config())
    (groups.path / 'summaries.partial.jsonl').rename(records)
    resumed = Scripted('A')
    groups.summarize(resumed, CORPUS, batch_size=2)  # the run record in place, its records set aside: both found
    assert resumed.batches == [[2, 3]]
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('C', fail_after=1), CORPUS, batch_size=2, overwrite=True)
    records, started = store.shelf(Scripted('C').config())
    (groups.path / 'summaries.partial.jsonl').rename(records)
    (groups.path / 'summaries.partial.json').unlink()  # only the records left, set aside
    again = Scripted('C', fail_after=0)
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(again, CORPUS, batch_size=2, overwrite=True)
    # the run record written for the records alone names their summariser, as a run's own would
    record = json.loads((groups.path / 'summaries.partial.json').read_text())
    assert (record['summarizer'], record['overwrite']) == (Scripted('C').config(), False)
    assert time.time() - 60 < record['started'] <= time.time()  # when it was taken back: the run's own time
    finished = Scripted('C')
    groups.summarize(finished, CORPUS, batch_size=2, overwrite=True)
    assert finished.batches == [[2, 3]]


def test_overwrite_restarts_this_summarisers_run_unless_that_run_was_an_overwrite(groups):
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    with pytest.raises(KeyboardInterrupt):  # overwrite: A's earlier records are not taken ...
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=1, overwrite=True)
    lines = (groups.path / 'summaries.partial.jsonl').read_text().splitlines()
    assert [json.loads(line)['group'] for line in lines] == [0]
    # ... and the same call again after the interruption resumes the run it started
    again = Scripted('A')
    groups.summarize(again, CORPUS, batch_size=1, overwrite=True)
    assert again.batches == [[1], [2], [3]]
    # over finished summaries of the same summariser, overwrite summarises again from the start
    redo = Scripted('A', fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(redo, CORPUS, batch_size=1, overwrite=True)
    assert redo.batches == [[0], [1]]
    rerun = Scripted('A')
    groups.summarize(rerun, CORPUS, batch_size=1, overwrite=True)
    assert rerun.batches == [[2], [3]]


def test_finished_summaries_are_not_replaced_without_overwrite(groups):
    groups.summarize(Scripted('A'), CORPUS, batch_size=4)
    same = Scripted('A')
    groups.summarize(same, CORPUS)
    assert same.batches == []  # the same summariser over finished summaries: nothing to do
    with pytest.raises(FileExistsError, match='overwrite=True'):
        groups.summarize(Scripted('B'), CORPUS)
    assert groups.summary(3) == 'A 3: members d6 d7'
    reopened = GroupCorpusGraph(groups.path)
    assert reopened.summary(3) == 'A 3: members d6 d7'


def test_navigation_text_is_concept_colon_summary(groups):
    class Partial(Summarizer):
        def summarize(self, batch):
            return [{'concept': '  ' if g['group'] == 2 else f'c{g["group"]}', 'summary': f' s{g["group"]} '}
                    for g in batch]
    groups.summarize(Partial(), CORPUS)
    # a blank concept gives the summary alone; both are stripped
    assert [groups.summary(g) for g in range(4)] == ['c0: s0', 'c1: s1', 's2', 'c3: s3']
    # a summariser without its own config() is recorded by its class name
    assert groups.meta['summaries']['summarizer'] == {'name': 'Partial'}
    assert groups.summary_record(0)['provenance'] == {'name': 'Partial', 'model': None, 'prompt_hash': None}


class Failing(Scripted):
    """Scripted, but the engine request of the groups in ``failing`` fails (a marked extractive record)."""

    def __init__(self, tag, failing=(), fail_after=None):
        super().__init__(tag, fail_after)
        self.failing = set(failing)

    def summarize(self, groups):
        records = super().summarize(groups)
        return [{**r, 'fallback': True, 'fallback_reason': 'request_failed'} if g['group'] in self.failing else r
                for g, r in zip(groups, records)]


def test_an_interrupted_retry_of_failed_groups_resumes(groups):
    """The run that retries the failed groups of finished summaries has the finished run's summariser; its unfinished
    run was taken for a leftover of the finished one and deleted, so its retried groups were asked again."""
    with pytest.warns(UserWarning, match='2 of 4 groups got an extractive summary'):
        groups.summarize(Failing('A', failing={2, 3}), CORPUS, batch_size=1, max_failed_share=1)
    retry = Failing('A', fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(retry, CORPUS, batch_size=1)
    assert retry.batches == [[2]]
    again = Failing('A')
    groups.summarize(again, CORPUS, batch_size=1)
    assert again.batches == [[3]]  # group 2 was retried already
    assert groups.meta['summaries']['fallbacks'] == 0
    assert _run_files(groups.path) == []


def test_resuming_this_summarisers_own_run_says_nothing(groups):
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no "another summariser" warning: the run is this one's
        groups.summarize(Scripted('A'), CORPUS, batch_size=2)
    assert _run_files(groups.path) == []


@pytest.mark.parametrize('text', ['5', '["A"]', '{"started": 1.5}', 'null'])
def test_a_run_record_that_names_no_summariser_is_refused_unless_overwrite(groups, text):
    (groups.path / 'summaries.partial.json').write_text(text)
    (groups.path / 'summaries.partial.jsonl').write_text(json.dumps({'group': 0, 'concept': 'old'}) + '\n')
    with pytest.raises(ValueError, match=r'summaries.partial.json \(the config of an unfinished summarisation\) is not '
                                         r'a JSON object naming its summariser; pass overwrite=True \(--overwrite\)'):
        groups.summarize(Scripted('A'), CORPUS, batch_size=2)
    fresh = Scripted('A')
    groups.summarize(fresh, CORPUS, batch_size=2, overwrite=True)  # the record cannot be read: nothing to resume
    assert fresh.batches == [[0, 1], [2, 3]]
    assert groups.summary(0) == 'A 0: members d0 d1'


def test_a_resume_under_other_engine_settings_sets_the_first_run_aside_instead_of_mixing(groups):
    """Summaries cut to a 4,096-token context and summaries cut to 8,192 are two runs, not one."""
    from pyterrier_garen import LLMSummarizer

    from _stub_engine import StubEngine

    class Sized(StubEngine):
        def __init__(self, context, fail_after=None):
            super().__init__()
            self.context, self.fail_after, self.calls_made = context, fail_after, 0

        @property
        def context_length(self):
            return self.context

        def output_settings(self):
            return {'max_model_len': self.context}

        def generate(self, conversations, **kwargs):
            if self.fail_after is not None and self.calls_made >= self.fail_after:
                raise KeyboardInterrupt('killed')
            self.calls_made += 1
            return super().generate(conversations, **kwargs)

    small = LLMSummarizer(Sized(4096, fail_after=1), batch_size=None)
    assert small.config()['engine'] == {'max_model_len': 4096}
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(small, CORPUS, batch_size=2)
    records, _ = groups.summary_store().shelf(small.config())
    larger = LLMSummarizer(Sized(8192), batch_size=None)
    with pytest.warns(UserWarning, match=rf"another summariser .*'engine': {{'max_model_len': 4096}}.*kept as "
                                         rf'{records.name}'):
        groups.summarize(larger, CORPUS, batch_size=2)
    assert larger.engine.calls_made == 2  # every group under the larger context, none taken from the smaller
    assert groups.meta['summaries']['summarizer']['engine'] == {'max_model_len': 8192}
    assert records.is_file()  # the 4,096 run waits, whole


def test_a_kill_while_a_run_is_taken_back_loses_none_of_its_records(groups, monkeypatch):
    """Taking a run back moved its records first: killed before its run record followed, the records lay there
    without one, and the next run of another summariser, starting afresh, removed them."""
    from pyterrier_garen import _summaries
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    with pytest.warns(UserWarning, match='kept as'):
        with pytest.raises(KeyboardInterrupt):
            groups.summarize(Scripted('B', fail_after=0), CORPUS, batch_size=2)  # A set aside, B started
    records, record = groups.summary_store().shelf(Scripted('A').config())
    kept = records.read_bytes()
    real = os.replace
    taken_back = []

    def killed_between_a_s_two_renames(source, target):
        if Path(source) in (records, record):
            if taken_back:
                raise KeyboardInterrupt('killed between the two renames')
            taken_back.append(source)
        real(source, target)
    monkeypatch.setattr(_summaries.os, 'replace', killed_between_a_s_two_renames)
    with pytest.warns(UserWarning, match='kept as'):  # B is set aside, then A taken back: killed half way
        with pytest.raises(KeyboardInterrupt):
            groups.summarize(Scripted('A'), CORPUS, batch_size=2)
    monkeypatch.setattr(_summaries.os, 'replace', real)
    assert len(taken_back) == 1
    # another summariser now: A's records, wherever the kill left them, are set aside again, not removed
    with pytest.warns(UserWarning, match=r"another summariser \({'model': 'A'"):
        groups.summarize(Scripted('C'), CORPUS, batch_size=2)
    assert records.read_bytes() == kept
    resumed = Scripted('A')
    groups.summarize(resumed, CORPUS, batch_size=2, overwrite=True)
    assert resumed.batches == [[2, 3]]
