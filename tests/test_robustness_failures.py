"""A run that failed must not report success (issue 18, class 1): summaries whose engine request failed are marked
as extractive fallbacks (in summaries.jsonl and pt_meta.json), retried by the next run, and a run where more than
``max_failed_share`` of the groups failed is an error that says how many and why."""
import json
import re
import warnings

import numpy as np
import pytest

from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph, LLMSummarizer

from _stub_engine import StubEngine

NUM_GROUPS = 10
DOCNOS = [f'd{i:02d}' for i in range(NUM_GROUPS * 3)]
CORPUS = [{'docno': d, 'text': f'ocean tide number {i} and sea shore {i % 3}'} for i, d in enumerate(DOCNOS)]
EXTRACTIVE = {k: ExtractiveSummarizer().config()[k] for k in ('name', 'model', 'prompt_hash')}


class FlakyEngine(StubEngine):
    """The stub engine whose requests fail (as an OpenAIEngine's do after its retries) for the groups holding one of
    ``down`` (all groups: ``down=None``); ``log`` keeps the first docno of every conversation asked."""

    def __init__(self, down=None, **kwargs):
        super().__init__(**kwargs)
        self.down, self.asked = down, []

    def generate(self, conversations, *, max_tokens, stop=None):
        for conversation in conversations:
            self.asked.append(re.search(r'^\[1\] \(([^)]*)\)', conversation[-1]['content'], re.M).group(1))
            if self.down is None or any(f'({d})' in conversation[-1]['content'] for d in self.down):
                raise RuntimeError('request to http://127.0.0.1:9/v1 failed after 4 attempts (InternalServerError: '
                                   "Error code: 500 - {'error': 'boom'})")
        return super().generate(conversations, max_tokens=max_tokens, stop=stop)


def _groups(tmp_path):
    edges = np.stack([[(i + 1) % len(DOCNOS), (i + 2) % len(DOCNOS)] for i in range(len(DOCNOS))])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', DOCNOS, edges, np.ones(edges.shape),
                                        labels=np.arange(len(DOCNOS)) // 3)


def _records(groups):
    return [json.loads(line) for line in (groups.path / 'summaries.jsonl').read_text().splitlines()]


def _meta(groups):
    return json.loads((groups.path / 'pt_meta.json').read_text())['summaries']


def test_failed_requests_are_marked_and_provenance_names_the_extractive_summariser(tmp_path):
    groups = _groups(tmp_path)
    down = [groups.group_members(7)[0]]
    summarizer = LLMSummarizer(FlakyEngine(down), retries=0)
    with pytest.warns(UserWarning, match=r'1 of 10 groups got an extractive summary because their engine request '
                                         r'failed \(e.g. engine request failed: RuntimeError: request to'):
        groups.summarize(summarizer, CORPUS, batch_size=5)  # 1 of 10 is within the default share of 0.1
    records = _records(groups)
    llm = {k: summarizer.config()[k] for k in ('name', 'model', 'prompt_hash')}
    for record in records:
        if record['group'] == 7:
            assert record['fallback'] is True
            assert record['fallback_reason'] == 'request_failed'
            assert record['provenance'] == {**EXTRACTIVE, 'instead_of': llm}
            assert 'InternalServerError' in record['error']
        else:
            assert 'fallback' not in record
            assert record['provenance'] == llm
    meta = _meta(groups)
    assert meta['fallbacks'] == 1
    assert meta['fallback_reasons'] == {'request_failed': 1, 'unusable_reply': 0}
    assert meta['fallback_summarizer'] == ExtractiveSummarizer().config()


def test_a_rerun_retries_only_the_failed_groups(tmp_path):
    groups = _groups(tmp_path)
    down = [groups.group_members(2)[0]]
    with pytest.warns(UserWarning, match='1 of 10 groups'):
        groups.summarize(LLMSummarizer(FlakyEngine(down), retries=0), CORPUS, batch_size=5)
    before = _records(groups)
    working = FlakyEngine(down=[])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        GroupCorpusGraph(groups.path).summarize(LLMSummarizer(working, retries=0), CORPUS, batch_size=5)
    assert sorted(working.asked) == sorted(down)  # the failed groups only, each once
    after = _records(groups)
    assert [r for r in after if r['group'] != 2] == [r for r in before if r['group'] != 2]
    assert not any(r.get('fallback') for r in after)
    assert _meta(groups)['fallbacks'] == 0
    assert not (groups.path / 'summaries.partial.jsonl').exists()
    again = FlakyEngine(down=[])
    GroupCorpusGraph(groups.path).summarize(LLMSummarizer(again, retries=0), CORPUS, batch_size=5)
    assert again.asked == []  # nothing left to retry


def test_unusable_replies_are_marked_counted_and_kept(tmp_path):
    groups = _groups(tmp_path)
    engine = FlakyEngine(down=[], responder=lambda c: 'no JSON here')
    with pytest.warns(UserWarning, match=r"10 of 10 groups got an extractive summary because the model's reply could "
                                         r'not be used \(e.g. no JSON object found in the reply\)'):
        groups.summarize(LLMSummarizer(engine, retries=0), CORPUS, batch_size=5, max_failed_share=0)
    assert {r['fallback_reason'] for r in _records(groups)} == {'unusable_reply'}
    assert _meta(groups)['fallback_reasons'] == {'request_failed': 0, 'unusable_reply': 10}
    rerun = FlakyEngine(down=[], responder=lambda c: 'no JSON here')
    GroupCorpusGraph(groups.path).summarize(LLMSummarizer(rerun, retries=0), CORPUS, batch_size=5)
    assert rerun.asked == []  # greedy decoding would answer the same: not asked again


@pytest.mark.parametrize(('share', 'batches'), [(0.0, 1), (0.25, 3), (0.5, 6)])
def test_too_many_failures_stop_the_run_as_soon_as_that_is_certain(tmp_path, share, batches):
    groups = _groups(tmp_path)
    engine = FlakyEngine()  # every request fails
    words = (rf'^{batches} of the 10 groups to summarise could not be summarised by the model: their engine request '
             rf'failed \(stopped after {batches} groups\), more than max_failed_share={share:g}')
    with pytest.raises(RuntimeError, match=words) as info:
        groups.summarize(LLMSummarizer(engine, retries=0), CORPUS, batch_size=1, max_failed_share=share)
    assert len(engine.asked) == batches  # floor(share * 10) failures are allowed, the next one stops the run
    assert type(info.value).__name__ == 'SummariesFailedError'
    assert (info.value.failed, info.value.total, info.value.exit_status) == (batches, 10, 1)
    assert 'rerun the same command, which retries only the failed groups' in str(info.value)
    assert not (groups.path / 'summaries.jsonl').exists()
    assert 'summaries' not in json.loads((groups.path / 'pt_meta.json').read_text()) or _meta(groups) is None


def test_failures_within_the_share_finish_and_the_partial_run_is_resumed(tmp_path):
    """A run that fails above the share keeps its good records; the rerun asks only for the rest."""
    groups = _groups(tmp_path)
    down = [groups.group_members(g)[0] for g in range(5, 10)]
    with pytest.raises(RuntimeError, match='^5 of the 10 groups'):
        groups.summarize(LLMSummarizer(FlakyEngine(down), retries=0), CORPUS, batch_size=5, max_failed_share=0.3)
    working = FlakyEngine(down=[])
    GroupCorpusGraph(groups.path).summarize(LLMSummarizer(working, retries=0), CORPUS, batch_size=5)
    assert sorted(working.asked) == sorted(down)
    assert not any(r.get('fallback') for r in _records(groups))


@pytest.mark.parametrize('share', [-0.1, 1.5, float('nan'), True, '0.1'])
def test_bad_max_failed_share(tmp_path, share):
    groups = _groups(tmp_path)
    with pytest.raises(ValueError, match='max_failed_share must be a number from 0 to 1'):
        groups.summarize(ExtractiveSummarizer(), CORPUS, max_failed_share=share)
    assert not (groups.path / 'summaries.partial.json').exists()
