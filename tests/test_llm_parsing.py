"""Parsing of LLM answers: listwise rankings, sliding windows and JSON summaries (no model needed)."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyterrier_garen._llm_summarizer import extract_json, parse_summary
from pyterrier_garen._driver import window_starts
from pyterrier_garen._rerankers import check_ranking, parse_ranking


@pytest.mark.parametrize(('text', 'n', 'expected'), [
    ('[2] > [3] > [1]', 3, [1, 2, 0]),
    ('<answer> [3] > [1] > [2] </answer>', 3, [2, 0, 1]),
    ('<answer>[3]>[1]>[2]', 3, [2, 0, 1]),  # stopped at </answer>, no spaces
    ('<think>maybe [1] > [2] > [3]?</think>\n[3] > [2] > [1]', 3, [2, 1, 0]),
    ('[1] is about X.</think> [2] > [1] > [3]', 3, [1, 0, 2]),  # prefilled <think>
    ('[Reasoning Trace]\nStep 1: [1] > [2] matter\nStep 2: [3]\n[Document Ranking]\n[3] > [1] > [2]', 3, [2, 0, 1]),
    ('Document [2] mentions it. Ranking: [3] > [1] > [2] > [4]. Also [1] again.', 4, [2, 0, 1, 3]),
    ('[ 2 ] > [ 1 ]', 2, [1, 0]),
    ('The order is [2], [1] and then [3]', 3, [1, 0, 2]),  # no chain: every [i] in order
])
def test_parse_ranking_examples(text, n, expected):
    assert parse_ranking(text, n) == expected


@pytest.mark.parametrize(('text', 'expected'), [
    ('[3] > [1] > [2]. This is my document ranking.', [2, 0, 1]),
    ('<answer>[3] > [1] > [2]</answer> Document ranking done.', [2, 0, 1]),
    ('<answer>[3] > [1] > [2]</answer>\n<answer>', [2, 0, 1]),
    ('<answer></answer> [3] > [1] > [2]', [2, 0, 1]),
    ('[Document Ranking]\n[3] > [1] > [2]\nThat is the document ranking.', [2, 0, 1]),
])
def test_a_mark_or_answer_tag_with_no_ranking_after_it_does_not_hide_the_ranking(text, expected):
    # the last "document ranking" mark and the last <answer> tag were taken as the start of the answer even with no
    # identifier after them: a well-formed ranking was counted as malformed and the window kept its order
    assert check_ranking(text, 3) == (expected, None)


def test_dedupe_out_of_range_and_backfill():
    permutation, problem = check_ranking('[4] > [4] > [9] > [0] > [2]', 5)
    assert permutation == [3, 1, 0, 2, 4]
    assert 'repeated' in problem
    assert 'out-of-range' in problem
    assert 'missing' in problem


@pytest.mark.parametrize('text', ['', 'I cannot rank these.', None, 12345, '<think>[1] > [2]', '[99999999999999]'])
def test_malformed_answers_keep_input_order(text):
    permutation, problem = check_ranking(text, 4)
    assert permutation == [0, 1, 2, 3]
    assert problem is not None


def test_well_formed_answer_has_no_problem():
    assert check_ranking('<answer> [2] > [1] </answer>', 2) == ([1, 0], None)
    assert check_ranking('anything', 0) == ([], None)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=40))
def test_parse_ranking_never_raises_on_any_string(text, n):
    assert sorted(parse_ranking(text, n)) == list(range(n))


_fragment = st.one_of(
    st.integers(min_value=-3, max_value=45).map(lambda i: f'[{i}]'),
    st.sampled_from([' > ', '>', ' ', '\n', '<think>', '</think>', '<answer>', '</answer>', '[Document Ranking]',
                     '[Reasoning Trace]', 'Step 1:', '[', ']', '{', '&gt;']),
    st.text(max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_fragment, max_size=60), st.integers(min_value=0, max_value=40))
def test_parse_ranking_is_a_permutation_on_ranking_like_text(fragments, n):
    permutation, problem = check_ranking(''.join(fragments), n)
    assert sorted(permutation) == list(range(n))
    assert problem is None or isinstance(problem, str)


@settings(max_examples=200, deadline=None)
@given(st.permutations(list(range(12))))
def test_parse_ranking_round_trips_a_well_formed_answer(perm):
    text = '<answer> ' + ' > '.join(f'[{i + 1}]' for i in perm) + ' </answer>'
    assert check_ranking(text, 12) == (list(perm), None)


@pytest.mark.parametrize(('n', 'window', 'stride', 'expected'), [
    (0, 20, 10, []), (5, 20, 10, [0]), (20, 20, 10, [0]), (25, 20, 10, [5, 0]), (40, 20, 10, [20, 10, 0]),
    (100, 20, 10, [80, 70, 60, 50, 40, 30, 20, 10, 0]), (21, 20, 20, [1, 0]),
])
def test_window_starts(n, window, stride, expected):
    assert window_starts(n, window, stride) == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 200), st.integers(1, 30), st.data())
def test_window_starts_cover_the_list_bottom_up(n, window, data):
    stride = data.draw(st.integers(1, window))
    starts = window_starts(n, window, stride)
    covered = {i for s in starts for i in range(s, min(n, s + window))}
    assert covered == set(range(n))
    assert starts == sorted(starts, reverse=True)
    assert (not starts or starts[-1] == 0)
    assert all(0 <= s and s + window <= max(n, window) for s in starts)
    assert all(a - b <= stride for a, b in zip(starts, starts[1:], strict=False))


# ---- JSON replies of the summariser

GOOD = {'fingerprints': [{'doc': 1}], 'common_theme': 't', 'concept': 'Blue cats', 'summary': 'Cats that are blue.'}


@pytest.mark.parametrize('text', [
    json.dumps(GOOD),
    '```json\n' + json.dumps(GOOD) + '\n```',
    'Sure! Here is the JSON:\n' + json.dumps(GOOD, indent=2) + '\nHope this helps {not json}.',
    '<think>{"concept": "wrong"}</think>' + json.dumps(GOOD),
    'prefix {broken {' + json.dumps(GOOD) + ' trailing }',
])
def test_extract_json_finds_the_object(text):
    assert extract_json(text) == GOOD
    record, error = parse_summary(text)
    assert error is None
    assert record['concept'] == 'Blue cats'
    assert record['summary'] == 'Cats that are blue.'


@pytest.mark.parametrize(('text', 'message'), [
    ('no json here', 'no JSON'),
    ('[1, 2, 3]', 'no JSON'),
    ('{"concept": "x"}', '"summary" must be a non-empty string'),
    ('{"concept": "", "summary": 3}', '"concept" must be'),
    ('{"concept": "x", "summary": "y"', 'no JSON'),
])
def test_parse_summary_reports_unusable_replies(text, message):
    record, error = parse_summary(text)
    assert record is None
    assert message in error


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet='{}[]":,0123456789 abtrue\\n', max_size=80)))
def test_extract_json_raises_only_value_error(text):
    try:
        assert isinstance(extract_json(text), dict)
    except ValueError:
        pass
    record, error = parse_summary(text)
    assert (record is None) != (error is None)


def test_extract_json_deep_nesting_is_a_value_error():
    with pytest.raises(ValueError):
        extract_json('{"a":' * 100000)


@pytest.mark.parametrize(('text', 'order'), [
    # the last identifier right at the end of the mark: the mark is the answer's start
    ('thinking: [2] > [1] Document Ranking:[3]', [2, 0, 1]),
    # a mark, then answer tags that hold the ranking
    ('Document Ranking: <answer>[2] > [1]</answer> done', [1, 0, 2]),
])
def test_a_ranking_right_after_its_mark_or_inside_tags_after_it_is_read(text, order):
    ranking, problem = check_ranking(text, 3)
    assert ranking == order
