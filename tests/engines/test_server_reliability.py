"""Issue 18 on a real vLLM OpenAI-compatible server (CPU, tiny random model): the context length is read from the
server under the deadline, a key inside base_url reaches the server on the right path and is never shown, and the
command line's summarize reports what really wrote each summary."""
import json
import logging
import warnings

import numpy as np
import pytest
from _recording import CONTEXT, SERVED_NAME

from pyterrier_garen import GroupCorpusGraph, OpenAIEngine

pytestmark = [pytest.mark.engines, pytest.mark.usefixtures('local_network')]
KEY = 'sk-REALSERVER-40c1d9'


def test_context_length_is_the_servers(vllm_server):
    url, _ = vllm_server
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        assert OpenAIEngine(url, SERVED_NAME, timeout=30).context_length == CONTEXT


def test_a_key_in_the_query_of_base_url_reaches_the_real_server_and_is_never_shown(vllm_server, caplog):
    url, _ = vllm_server
    caplog.set_level(logging.DEBUG)
    engine = OpenAIEngine(f'{url}?api-key={KEY}', SERVED_NAME, timeout=60, max_retries=0)
    answer = engine.generate([[{'role': 'user', 'content': 'hello'}]], max_tokens=4)[0]
    assert answer.completion_tokens > 0  # the query did not break the path (/v1/chat/completions?api-key=...)
    assert engine.context_length == CONTEXT
    shown = [repr(engine), str(vars(engine))] + [r.getMessage() for r in caplog.records]
    assert any('api-key=<hidden>' in text for text in shown)
    assert not [text[:200] for text in shown if KEY in text]


def test_cli_summarize_on_the_real_server_marks_what_the_model_did_not_write(vllm_server, cranfield, tmp_path,
                                                                          capsys):
    from pyterrier_garen.__main__ import main
    url, _ = vllm_server
    docnos = [str(d['docno']) for _, d in zip(range(12), cranfield.get_corpus_iter(verbose=False))]
    edges = np.stack([[(i + 1) % 12, (i + 2) % 12] for i in range(12)])
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape),
                                          labels=np.arange(12) // 4)
    main(['summarize', '--groups', str(groups.path), '--dataset', str(cranfield.path), '--summarizer', 'llm',
          '--model', SERVED_NAME, '--base-url', url, '--max-retries', '0', '--timeout', '120'])
    meta = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    records = [json.loads(line) for line in (groups.path / 'summaries.jsonl').read_text().splitlines()]
    assert len(records) == 3
    # random weights never write the JSON asked for: every record is an extractive fallback, and says so
    for record in records:
        if record.get('fallback'):
            assert record['fallback_reason'] == 'unusable_reply'
            assert record['provenance']['name'] == 'extractive'
            assert record['provenance']['instead_of']['model'] == SERVED_NAME
    assert meta['fallbacks'] == sum(bool(r.get('fallback')) for r in records)
    assert meta.get('fallback_reasons', {}).get('request_failed', 0) == 0


def test_a_server_whose_port_was_taken_starts_again_on_another(tiny_models, server_module, monkeypatch, tmp_path):
    """The port a server is given is free when chosen but bound only after vLLM's imports; when something took it
    meanwhile (servers started side by side take free ports for their own processes), the server starts again."""
    import socket
    held = socket.socket()
    held.bind(('127.0.0.1', 0))
    held.listen()
    taken = held.getsockname()[1]
    ports = iter([taken])
    free = server_module._free_port
    monkeypatch.setattr(server_module, '_free_port', lambda: next(ports, None) or free())
    server = server_module.Server(tiny_models['random'], tmp_path / 'server.log', light=True)
    try:
        url = server.url()
        assert server.tries == 2
        assert f':{taken}/' not in url
        assert OpenAIEngine(url, SERVED_NAME, timeout=30).context_length == CONTEXT
    finally:
        server.stop()
        held.close()
