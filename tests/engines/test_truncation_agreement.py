"""Documents that must be cut are cut at the same token by a vLLM server (through its /tokenize and /detokenize)
and by the in-process engine, for tokenizers of very different characters-per-token ratios: the navigator's and the
listwise reranker's prompts are identical, P(yes) agrees within 1e-3 and the listwise ranking is the same.

The measured differences are shown in pytest's warnings summary (category ``Measured``)."""
import warnings

import numpy as np
import pandas as pd
import pytest
from _recording import SERVED_NAME, Recording

from pyterrier_garen import ListwiseReranker, OpenAIEngine, YesNoScorer
from pyterrier_garen._engines._tokens import estimate_truncate

pytestmark = [pytest.mark.engines, pytest.mark.usefixtures('local_network')]

# max_model_len of the servers started here: Cranfield's long documents do not fit it; the small vocabulary (about
# 2 characters per token) needs more room for the listwise prompt's own text
CONTEXTS = {'small': 1024, 'large': 512, 'separate': 512}


@pytest.fixture(scope='module')
def long_rows(cranfield):
    """48 (query, document) rows: 4 queries, each with the 12 longest Cranfield documents (full length)."""
    docs = pd.DataFrame(cranfield.get_corpus_iter(verbose=False))
    docs = docs.assign(length=docs['text'].str.len()).sort_values(['length', 'docno'], ascending=[False, True])
    topics = cranfield.get_topics().head(4)
    rows = [{'qid': q.qid, 'query': q.query, 'docno': d.docno, 'text': d.text, 'rank': r}
            for q in topics.itertuples() for r, d in enumerate(docs.head(12).itertuples())]
    return pd.DataFrame(rows)


@pytest.fixture(scope='module')
def servers(tokenizer_models, server_pool):
    """``{kind: Server}``: the three servers start side by side (each is mostly one interpreter importing vLLM, so two
    cores start them in about the time of two), in the light layout (the server's model worker inside its engine
    core; the random model's server in test_server.py has vLLM's default layout, and is stopped here first to free
    its memory)."""
    server_pool.stop('random')
    started = {kind: server_pool.start(f'tokenizer-{kind}', tokenizer_models[kind], context=context, light=True)
               for kind, context in CONTEXTS.items()}
    yield started
    for kind in started:
        server_pool.stop(f'tokenizer-{kind}')


@pytest.fixture(scope='module')
def local_engines(tokenizer_models):
    """``{kind: in-process engine}``, made on first use, in the light layout (they compute little); closed together."""
    from conftest import vllm_engine
    engines = {}
    yield engines, lambda kind: vllm_engine(tokenizer_models[kind], light=True, max_model_len=CONTEXTS[kind])
    for engine in engines.values():
        engine.close()


@pytest.fixture(scope='module', params=list(CONTEXTS))
def engine_pair(request, servers, local_engines):
    """``(kind, server engine, in-process engine)`` for one tokenizer kind."""
    kind = request.param
    engines, make = local_engines
    if kind not in engines:
        engines[kind] = make(kind)
    return kind, OpenAIEngine(servers[kind].url(), SERVED_NAME, max_concurrency=8), engines[kind]


class Measured(UserWarning):
    """A measured agreement, shown in pytest's warnings summary (not a problem)."""


def _report(kind, what, value):
    warnings.warn(Measured(f'[truncation agreement] {kind}: {what} = {value}'), stacklevel=2)


def test_documents_are_cut_at_the_same_token(engine_pair, long_rows):
    kind, served, local = engine_pair
    texts = list(long_rows['text'].unique())
    ratio = sum(map(len, texts)) / sum(local.count_tokens(t) for t in texts)
    _report(kind, 'characters per token (the 12 longest Cranfield documents)', f'{ratio:.2f}')
    for budget in (37, 200):
        cut = served.truncate_many(texts, budget)
        assert cut == local.truncate_many(texts, budget)
        assert [local.count_tokens(t) <= budget for t in cut] == [True] * len(cut)
        assert sum(c != t for c, t in zip(cut, texts, strict=True)) == len(texts)  # every one had to be cut
    assert served.token_source == 'server'
    # the 4-characters estimate would have cut elsewhere (what the server tokenizer is there to avoid)
    assert [estimate_truncate(t, 200, 4.0) for t in texts] != local.truncate_many(texts, 200)


def test_navigator_prompts_and_yes_probabilities_agree(engine_pair, long_rows):
    kind, served, local = engine_pair
    recordings = [Recording(served), Recording(local)]
    scores = [YesNoScorer(r)(long_rows)['score'].to_numpy() for r in recordings]
    prompts = [[c for entry in r.calls('yes_no') for c in entry[1]] for r in recordings]
    assert prompts[0] == prompts[1]
    docs = [c[-2]['content'] for c in prompts[0]]
    assert sum(len(d) < len(t) for d, t in zip(docs, long_rows['text'], strict=True)) >= len(docs) // 2
    sent = [[g.prompt_tokens for entry in r.calls('yes_no') for g in entry[2]] for r in recordings]
    assert sent[0] == sent[1]  # the server rendered the prompt the in-process engine tokenized
    assert max(sent[1]) <= CONTEXTS[kind] - 1
    difference = float(np.abs(scores[0] - scores[1]).max())
    _report(kind, f'P(yes) max |server - in-process| over {len(docs)} rows', f'{difference:.2e}')
    assert difference <= 1e-3


def test_listwise_prompts_and_ranking_agree(engine_pair, long_rows):
    kind, served, local = engine_pair
    rows = long_rows[long_rows.qid.isin(long_rows.qid.unique()[:2])].groupby('qid').head(8)
    recordings = [Recording(served), Recording(local)]
    rerankers = [ListwiseReranker(r, window=4, stride=2, max_tokens=24) for r in recordings]
    runs = [reranker(rows) for reranker in rerankers]
    assert [reranker.failed for reranker in rerankers] == [0, 0]
    prompts = [[c for entry in r.calls('generate') for c in entry[1]] for r in recordings]
    assert len(prompts[0]) == 6  # 2 queries x 3 windows of 8 documents
    assert prompts[0] == prompts[1]
    docs = [line for c in prompts[0] for line in c[-1]['content'].splitlines() if line[:1] == '[']
    shortest = rows['text'].str.len().min()  # the 8 longest documents: about 3,000 characters or more
    assert sum(len(d) < shortest / 2 for d in docs) >= len(docs) // 2  # the window's documents were cut
    texts = [[g.text for entry in r.calls('generate') for g in entry[2]] for r in recordings]
    assert texts[0] == texts[1]
    same = runs[0][['qid', 'docno', 'rank']].reset_index(drop=True).equals(
        runs[1][['qid', 'docno', 'rank']].reset_index(drop=True))
    _report(kind, f'listwise: identical prompts {len(prompts[0])}/{len(prompts[0])}, same ranking', same)
    assert same
