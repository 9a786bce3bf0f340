"""Model output is read in linear time with a cap: pathological replies that were quadratic (40 KB of whitespace,
unclosed <think> tags, unclosed fences) are parsed quickly and still give a valid permutation or a named error
(issue 9, "Faults never hang"). The bound is generous: a quadratic parser needs minutes on these inputs."""
import re
import time

import pytest

from pyterrier_garen._llm_summarizer import extract_json, parse_summary
from pyterrier_garen._prompts import MAX_REPLY_CHARS, cap_reply, drop_think_blocks, fenced_blocks
from pyterrier_garen._rerankers import check_ranking

BIG = 400_000
PATHOLOGICAL = {
    'whitespace': ' ' * BIG,
    'unclosed think': '<think>' * (BIG // 7),
    'unclosed fences': '```' * (BIG // 3),
    'brackets and spaces': ('[' + ' ' * 200) * (BIG // 201),
    'document words': 'Document ' * (BIG // 9),
    'open braces': '{' * BIG,
    'long chain': '[1] > ' * (BIG // 6),
}


@pytest.mark.parametrize('name', list(PATHOLOGICAL))
def test_pathological_replies_are_fast(name):
    text = PATHOLOGICAL[name]
    started = time.monotonic()
    permutation, problem = check_ranking(text, 20)
    record, error = parse_summary(text)
    assert time.monotonic() - started < 5.0
    assert sorted(permutation) == list(range(20))
    assert record is None
    assert error


def test_answer_after_a_huge_trace_is_still_found():
    reply = 'x ' * (MAX_REPLY_CHARS * 2) + '</think> <answer> [2] > [1] > [3] </answer>'
    assert check_ranking(reply, 3) == ([1, 0, 2], None)
    assert extract_json('<think>' + 'y' * BIG + '</think> {"concept": "c", "summary": "s"}') == {'concept': 'c',
                                                                                                 'summary': 's'}


@pytest.mark.parametrize('text', ['a <think>x</think> b <THINK>y</Think> c', '<think>open', 'no tags',
                                  '<think>a<think>b</think>c</think>d', '</think>x<think>'])
def test_drop_think_blocks_matches_the_regular_expression(text):
    assert drop_think_blocks(text) == re.sub(r'<think>.*?</think>', ' ', text, flags=re.S | re.I)


@pytest.mark.parametrize('text', ['```json\n{"a": 1}\n``` and ```{"b": 2}```', '```unclosed', '``````', 'plain'])
def test_fenced_blocks_match_the_regular_expression(text):
    expected = [m.group(1).strip() for m in re.finditer(r'```(?:json|JSON)?\s*(.*?)```', text, re.S)]
    assert fenced_blocks(text) == expected


def test_cap_keeps_the_tail():
    assert cap_reply('a' * MAX_REPLY_CHARS + 'END').endswith('END')
    assert len(cap_reply('a' * (3 * MAX_REPLY_CHARS))) == MAX_REPLY_CHARS
    assert cap_reply(12) == '12'
