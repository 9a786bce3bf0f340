"""Oracles for the extractive summariser, the summary records and the summary store (``_summaries.py``), by hand.

The group below is chosen so that the plausible variants give other texts: salience ``tf * df`` (``tf`` alone ranks
``gases`` above ``heat``), centrality divided by the square root of the number of distinct terms (dividing by the
number itself puts ``Heat flows.`` first), terms of three letters or more without stop words, one title per
document with a title and the first two sentences of one without.
"""
import errno
import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from pyterrier_garen import _summaries
from pyterrier_garen._atomic import ResourceError
from pyterrier_garen._summaries import (PARTIAL, PARTIAL_META, REQUEST_FAILED, SUMMARIES, UNUSABLE_REPLY,
                                        ExtractiveSummarizer, FailureBudget, SummaryStore, failed_request, stamp)

GROUP = [
    # terms: heat transfer rarefied gases | gases conduct heat gases gases ("in" is too short)
    {'docno': 'a', 'title': 'Heat transfer in rarefied gases', 'text': 'Gases conduct heat. Gases gases.'},
    # no title: its first two sentences are candidates; terms heat flows pressure rises slowly third sentence
    {'docno': 'b', 'text': 'Heat flows. Pressure rises slowly. Third sentence.'},
]
# tf: heat 3, gases 4, each other term 1; df: heat 2, every other term 1. Salience tf * df: heat 6, gases 4, others 1
# (ties by term). Centrality = summed salience of distinct terms / sqrt(count):
#   'Heat transfer in rarefied gases'  (6 + 1 + 1 + 4) / 2        = 6.0
#   'Heat flows.'                      (6 + 1) / sqrt(2)          = 4.95
#   'Pressure rises slowly.'           3 / sqrt(3)                = 1.73


def test_extractive_summary_worked_example():
    s = ExtractiveSummarizer(num_terms=4, num_terms_concept=3, num_sentences=2)
    record = s.summarize_one(GROUP)
    assert record == {'concept': 'heat gases conduct',
                      'summary': 'Key terms: heat, gases, conduct, flows. Heat transfer in rarefied gases. Heat flows.'}
    # every sentence when asked for more; a title gets its full stop, a sentence keeps its own
    record = ExtractiveSummarizer(num_terms=2, num_terms_concept=1, num_sentences=5).summarize_one(GROUP)
    assert record == {'concept': 'heat', 'summary': 'Key terms: heat, gases. Heat transfer in rarefied gases. '
                                                    'Heat flows. Pressure rises slowly.'}
    # the cap cuts the summary, not the concept
    assert ExtractiveSummarizer(num_terms=4, max_chars=20).summarize_one(GROUP)['summary'] == 'Key terms: heat, gas'
    # summarize: one record per group, in order
    assert s.summarize([{'group': 7, 'docs': GROUP}, {'group': 3, 'docs': GROUP[1:]}]) == [
        s.summarize_one(GROUP), s.summarize_one(GROUP[1:])]


def test_extractive_summary_drops_repeated_sentences_and_empty_groups():
    docs = [{'docno': 'a', 'title': 'Alpha beta.'}, {'docno': 'b', 'title': 'alpha beta.'},
            {'docno': 'c', 'title': 'Gamma'}]
    # alpha and beta: tf 2 * df 2 = 4; gamma 1. The second spelling of the same title is a repeat (case-insensitive)
    record = ExtractiveSummarizer(num_sentences=3).summarize_one(docs)
    assert record == {'concept': 'alpha beta gamma', 'summary': 'Key terms: alpha, beta, gamma. Alpha beta. Gamma.'}
    # a document without a term adds a sentence of centrality 0, after the others
    record = ExtractiveSummarizer(num_sentences=3).summarize_one([{'docno': 'x', 'text': 'Of it. Gamma ray.'}])
    assert record == {'concept': 'gamma ray', 'summary': 'Key terms: gamma, ray. Gamma ray. Of it.'}
    assert ExtractiveSummarizer().summarize_one([]) == {'concept': '', 'summary': 'Key terms: .'}


def test_extractive_config_names_its_parameters():
    config = ExtractiveSummarizer(num_terms=5).config()
    assert config['name'] == 'extractive'
    assert config['model'] is None
    assert config['params'] == {'num_terms': 5, 'num_terms_concept': 3, 'num_sentences': 4, 'max_chars': 1200}
    assert config['prompt_hash'] != ExtractiveSummarizer().config()['prompt_hash']
    assert ExtractiveSummarizer(num_terms=5).config() == config


def test_failed_request_and_stamp():
    assert failed_request({'fallback': True, 'fallback_reason': REQUEST_FAILED})
    assert not failed_request({'fallback': True, 'fallback_reason': UNUSABLE_REPLY})
    assert not failed_request({'fallback_reason': REQUEST_FAILED})  # not a fallback at all
    # records written before fallback_reason existed: by their error text
    assert failed_request({'fallback': True, 'error': 'engine request failed: timeout'})
    assert not failed_request({'fallback': True, 'error': 'reply not JSON'})
    assert not failed_request({'fallback': True})
    assert not failed_request(None)
    provenance = {'name': 'llm', 'model': 'm', 'prompt_hash': 'h'}
    assert stamp({'concept': 'c'}, 4, provenance) == {'concept': 'c', 'group': 4, 'provenance': provenance}
    made_by = {'name': 'extractive', 'model': None, 'prompt_hash': 'e'}
    assert stamp({'fallback': True, 'fallback_provenance': made_by}, 2, provenance) == {
        'fallback': True, 'group': 2, 'provenance': {**made_by, 'instead_of': provenance}}
    default = stamp({'fallback': True}, 2, provenance)['provenance']
    assert default['name'] == 'extractive'
    assert default['instead_of'] == provenance


def test_failure_budget_counts_against_the_share():
    failed = {'fallback': True, 'fallback_reason': REQUEST_FAILED, 'error': 'engine request failed: down'}
    unusable = {'fallback': True, 'fallback_reason': UNUSABLE_REPLY}
    budget = FailureBudget(10, 0.2)  # at most 2 of 10 may fail
    budget.count([failed, unusable, {'concept': 'ok'}, failed])
    assert (budget.seen, len(budget.failed), len(budget.unusable), budget.exceeded) == (4, 2, 1, False)
    budget.count([failed])
    assert budget.exceeded
    error = budget.error(Path('/x'))
    assert (error.failed, error.total) == (3, 10)
    assert FailureBudget(3, 0).exceeded is False
    zero = FailureBudget(3, 0)
    zero.count([failed])
    assert zero.exceeded
    for bad in (True, -0.1, 1.5, '0.1'):
        with pytest.raises(ValueError, match='max_failed_share'):
            FailureBudget(3, bad)


def test_failure_budget_error_says_whether_the_run_stopped_early():
    failed = {'fallback': True, 'fallback_reason': REQUEST_FAILED, 'error': 'engine request failed: down'}
    early = FailureBudget(10, 0.1)
    early.count([failed, {'concept': 'ok'}, failed])  # 3 of 10 seen when the share (1) was exceeded
    assert 'engine request failed (stopped after 3 groups), more than max_failed_share=0.1 allows (e.g. engine ' \
           'request failed: down). The 1 other records are kept in /x/summaries.partial.jsonl; ' \
           in str(early.error(Path('/x')))
    complete = FailureBudget(2, 0)
    complete.count([failed, {'concept': 'ok'}])  # every group seen: no "stopped" clause
    assert '2 groups to summarise could not be summarised by the model: their engine request failed, more than ' \
           'max_failed_share=0 allows' in str(complete.error(Path('/x')))


# ---------------------------------------------------------------------------------------------------------------------
# the summary store on its own (tests/test_oracles_store.py drives it through GroupCorpusGraph.summarize)

FAILED = {'concept': '', 'summary': 'x', 'fallback': True, 'fallback_reason': REQUEST_FAILED}


def test_store_resume_retries_failed_records_and_keeps_a_finished_runs_records(tmp_path):
    store = SummaryStore(tmp_path, 3)
    assert store.missing() == [0, 1, 2]  # a fresh store knows no record
    before = time.time()
    assert store.begin({'name': 'a'}) == {}
    started = json.loads((tmp_path / PARTIAL_META).read_text())
    assert started['summarizer'] == {'name': 'a'}
    assert before <= started['started'] <= time.time()
    store.add([{'group': 0, 'concept': 'c0'}, {'group': 1, **FAILED}])
    # resuming: the record whose engine request failed is not finished, so the run retries its group
    again = SummaryStore(tmp_path, 3)
    assert again.begin({'name': 'a'}) == {0: {'group': 0, 'concept': 'c0'}}
    assert again.missing() == [1, 2]
    # a fresh run that starts from a finished run's records (keep): the good ones count, the failed one not
    fresh = SummaryStore(tmp_path, 3)
    done = fresh.begin({'name': 'a'}, overwrite=True, keep=[{'group': 2, 'concept': 'c2'}, {'group': 0, **FAILED}])
    assert done == {2: {'group': 2, 'concept': 'c2'}}
    assert [json.loads(line)['group'] for line in (tmp_path / PARTIAL).read_text().splitlines()] == [2]
    # discarding twice (or with nothing there) is not an error
    fresh.discard_partial()
    fresh.discard_partial()
    assert not (tmp_path / PARTIAL).exists()
    assert not (tmp_path / PARTIAL_META).exists()


def test_store_read_names_the_lines_and_checks_the_count(tmp_path):
    store = SummaryStore(tmp_path, 3)
    lines = [{'group': 1, 'concept': 'a'}, {'group': 0, 'concept': 'b'}]
    (tmp_path / SUMMARIES).write_text(''.join(json.dumps(r) + '\n' for r in lines))
    assert store.read() == [lines[1], lines[0], None]
    assert store.read(expected=2) == [lines[1], lines[0], None]
    with pytest.raises(ValueError, match=r'holds 2 records, pt_meta.json says 3; the file is damaged .*: summarise '
                                         r'again with overwrite=True \(--overwrite\)'):
        store.read(expected=3)
    (tmp_path / SUMMARIES).write_text(''.join(json.dumps(r) + '\n' for r in lines + [{'group': 1}]))
    with pytest.raises(ValueError, match=r'summaries.jsonl line 3 repeats group 1 \(first on line 1\)'):
        store.read()
    (tmp_path / SUMMARIES).write_text(json.dumps(lines[0]) + '\n{"group": 7}\n')
    with pytest.raises(ValueError, match='summaries.jsonl line 2 names unknown group 7'):
        store.read()


def test_store_add_accepts_group_ids_in_range_and_names_the_file_on_a_full_disk(tmp_path, monkeypatch):
    store = SummaryStore(tmp_path, 3)
    store.begin({'name': 'a'})
    with pytest.raises(ValueError, match='group 3, but group ids run from 0 to 2'):
        store.add([{'group': 3}])
    assert store.add([{'group': 2}, {'group': 2, 'concept': 'again'}]) == 1

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(_summaries, 'open_no_follow', full)
    with pytest.raises(ResourceError, match=re.escape(f'cannot write {tmp_path / PARTIAL}: no space left')):
        store.add([{'group': 0}])


def test_store_finish_counts_the_fallbacks_and_why(tmp_path):
    store = SummaryStore(tmp_path, 3)
    store.begin({'name': 'a'})
    store.add([{'group': 1, 'concept': 'b'}])
    with pytest.raises(ValueError, match=r'2 groups have no summary yet \(e.g. \[0, 2\]\)'):
        store.finish({'name': 'a'})
    store.add([{'group': 2, **FAILED}, {'group': 0, 'fallback': True, 'fallback_reason': UNUSABLE_REPLY}])
    assert store.finish({'name': 'a'}) == {
        'summarizer': {'name': 'a'}, 'count': 3, 'fallbacks': 2,
        'fallback_reasons': {REQUEST_FAILED: 1, UNUSABLE_REPLY: 1},
        'fallback_summarizer': ExtractiveSummarizer().config(),
        'run_started': json.loads((tmp_path / PARTIAL_META).read_text())['started']}  # which run wrote them
    # summaries.jsonl holds every group in id order
    assert [json.loads(line)['group'] for line in (tmp_path / SUMMARIES).read_text().splitlines()] == [0, 1, 2]
    clean = SummaryStore(tmp_path / 'clean', 1)
    clean.path.mkdir()
    clean.begin({'name': 'a'})
    clean.add([{'group': 0}])
    assert clean.finish({'name': 'a'}) == {'summarizer': {'name': 'a'}, 'count': 1, 'fallbacks': 0,
                                           'run_started': clean.started}


def test_extractive_centrality_divides_by_the_root_and_keeps_own_punctuation():
    # kappa: tf 2 * df 2 = 4; lambda omega sigma theta: 1 each. Centrality: 'Kappa.' 4 / 1 = 4, 'Lambda omega sigma
    # theta.' 4 / sqrt(4) = 2 (multiplying by the root would give 8 and put it first); the second 'Kappa.' repeats
    docs = [{'docno': 'a', 'text': 'Kappa. Lambda omega sigma theta.'}, {'docno': 'b', 'text': 'Kappa.'}]
    assert ExtractiveSummarizer(num_sentences=2).summarize_one(docs)['summary'] == (
        'Key terms: kappa, lambda, omega, sigma, theta. Kappa. Lambda omega sigma theta.')
    # a sentence without a term has centrality 0, below 'Zeta.' (1 / 1); 1 would tie and sort 'Of it.' first
    assert ExtractiveSummarizer().summarize_one([{'docno': 'x', 'text': 'Zeta. Of it.'}])['summary'] == (
        'Key terms: zeta. Zeta. Of it.')
    # titles ending in ? or ! keep their mark; a document with neither title nor text adds nothing. heat: tf 2 *
    # df 2 = 4, stop 1 ('why' is a stop word): 'Why heat?' 4 / 1 = 4 before 'Stop heat!' 5 / sqrt(2) = 3.5
    docs = [{'docno': 'a', 'title': 'Why heat?'}, {'docno': 'b', 'title': 'Stop heat!'}, {'docno': 'c'}]
    assert ExtractiveSummarizer().summarize_one(docs)['summary'] == 'Key terms: heat, stop. Why heat? Stop heat!'


def test_extractive_defaults_and_prompt_hash_by_an_independent_route():
    params = {'num_terms': 12, 'num_terms_concept': 3, 'num_sentences': 4, 'max_chars': 1200}
    config = ExtractiveSummarizer().config()
    assert config['params'] == params
    # the hash is of the parameters as JSON with sorted keys, first 12 hex digits
    text = '{"max_chars": 1200, "num_sentences": 4, "num_terms": 12, "num_terms_concept": 3}'
    assert config['prompt_hash'] == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_check_record_refuses_what_is_not_a_record(tmp_path):
    store = SummaryStore(tmp_path, 3)
    for line, words in [('{"group": NaN}', 'not JSON'), ('{"group": 1, "concept": Infinity}', 'not JSON'),
                        ('{"group": true}', '"group" must be an integer'),
                        ('{"group": 3}', 'names unknown group 3'),
                        ('{"group": 0, "concept": 5}', '"concept" must be a string'),
                        ('{"group": 0, "summary": ["x"]}', '"summary" must be a string')]:
        (tmp_path / SUMMARIES).write_text(line + '\n')
        with pytest.raises(ValueError, match=re.escape(words)):
            store.read()


def test_failure_budget_messages_and_the_full_share():
    failed = {'fallback': True, 'fallback_reason': REQUEST_FAILED, 'error': 'engine request failed: down'}
    budget = FailureBudget(10, 0.2)
    budget.count([failed, {'concept': 'ok'}, failed, {'concept': 'ok'}, failed])
    message = str(budget.error(Path('/x')))
    assert message.startswith('3 of the 10 groups to summarise could not be summarised by the model: their engine '
                              'request failed (stopped after 5 groups), more than max_failed_share=0.2 allows')
    assert 'The 2 other records are kept in /x/summaries.partial.jsonl' in message
    budget.count([{'concept': 'ok'}] * 5)
    assert '(stopped after' not in str(budget.error(Path('/x')))  # every group seen
    # 1 is allowed (never an error); the unusable replies are named in the warning
    everything = FailureBudget(2, 1)
    everything.count([failed, {'fallback': True, 'fallback_reason': UNUSABLE_REPLY, 'error': 'reply not JSON'}])
    assert not everything.exceeded
    with pytest.warns(UserWarning, match='groups got an extractive summary') as caught:
        everything.warn()
    assert [str(w.message)[:60] for w in caught] == [
        '1 of 2 groups got an extractive summary because their engine',
        "1 of 2 groups got an extractive summary because the model's "]
    assert 'e.g. reply not JSON' in str(caught[1].message)
