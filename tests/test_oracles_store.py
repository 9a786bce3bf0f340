"""Oracles for the summary store: which record wins on resume, the refusal to resume another summariser's run, and
what navigation reads; on a hand-built artifact of 8 documents in 4 groups (no collection needed)."""
import json

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


def test_resuming_another_summarisers_run_is_refused_and_loses_nothing(groups):
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    partial = (groups.path / 'summaries.partial.jsonl').read_bytes()
    other = Scripted('B')
    with pytest.raises(FileExistsError, match=r"another summariser .*'model': 'A'.*overwrite=True"):
        groups.summarize(other, CORPUS, batch_size=2)
    assert other.batches == []  # refused before any summariser call
    assert (groups.path / 'summaries.partial.jsonl').read_bytes() == partial
    assert not groups.has_summaries
    # the same summariser still resumes the kept run
    resumed = Scripted('A')
    groups.summarize(resumed, CORPUS, batch_size=2)
    assert resumed.batches == [[2, 3]]


def test_overwrite_discards_the_other_run(groups):
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(Scripted('A', fail_after=1), CORPUS, batch_size=2)
    other = Scripted('B')
    groups.summarize(other, CORPUS, batch_size=2, overwrite=True)
    assert other.batches == [[0, 1], [2, 3]]  # nothing of A's run is reused
    assert groups.summary(0) == 'B 0: members d0 d1'
    assert groups.meta['summaries']['summarizer'] == other.config()


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
