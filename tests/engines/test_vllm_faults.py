"""Faults of the in-process vLLM engine on the tiny random model: a call interrupted inside vLLM (Ctrl-C in a
notebook reaches only this process, so vLLM's engine keeps running) leaves nothing for the next call."""
import signal

import pytest

pytestmark = pytest.mark.engines


def chat(text):
    return [{'role': 'user', 'content': text}]


def test_an_interrupted_generate_leaves_no_request_for_the_next_call(vllm_random):
    """Before, vLLM kept the interrupted call's requests and the next call returned their answers too (67 answers
    for 3 prompts, after generating all of them); the summariser then stopped with "the engine returned 67 answers"."""
    conversations = [chat(f'wing lift number {i}') for i in range(3)]
    expected = [g.text for g in vllm_random.generate(conversations, max_tokens=8)]

    def interrupt(*_):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):  # 32 answers of 3,000 tokens: minutes on a CPU
            vllm_random.generate([chat(f'flow number {i} ' * 20) for i in range(32)], max_tokens=3000)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert vllm_random.llm.llm_engine.get_num_unfinished_requests() == 0
    again = vllm_random.generate(conversations, max_tokens=8)
    assert [g.text for g in again] == expected
    assert [g.completion_tokens for g in again] == [8, 8, 8]
