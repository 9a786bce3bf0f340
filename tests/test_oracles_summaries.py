"""Oracles for the extractive summariser and the summary records (``_summaries.py``), worked by hand.

The group below is chosen so that the plausible variants give other texts: salience ``tf * df`` (``tf`` alone ranks
``gases`` above ``heat``), centrality divided by the square root of the number of distinct terms (dividing by the
number itself puts ``Heat flows.`` first), terms of three letters or more without stop words, one title per
document with a title and the first two sentences of one without.
"""
from pathlib import Path

import pytest

from pyterrier_garen._summaries import (REQUEST_FAILED, UNUSABLE_REPLY, ExtractiveSummarizer, FailureBudget,
                                        failed_request, stamp)

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
