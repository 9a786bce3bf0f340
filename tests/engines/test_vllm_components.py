"""The LLM components on an in-process vLLM engine (CPU) with the tiny models: GAREN with the listwise reranker and
the yes/no navigator, SlideGAR, RGS, and the summariser over every Cranfield group."""
import math

import numpy as np
import pandas as pd
import pytest
from _recording import CONTEXT, Recording

import pyterrier as pt

from pyterrier_garen import (GAREN, RGS, GroupCorpusGraph, HeadReranker, ListwiseReranker, LLMSummarizer, SlideGAR,
                             YesNoScorer)
from pyterrier_garen._engines import render_chat

pytestmark = pytest.mark.engines


def exact_yes_probability(engine, conversations):
    """P(yes) from the exact log-probabilities of the two tokens, asked of vLLM directly."""
    import vllm
    yes, no = (engine.tokenizer.encode(w, add_special_tokens=False)[0] for w in ('yes', 'no'))
    prompts = [{'prompt_token_ids': engine.tokenizer.encode(render_chat(engine.tokenizer, c),
                                                            add_special_tokens=False)} for c in conversations]
    params = vllm.SamplingParams(temperature=0.0, max_tokens=1, logprob_token_ids=[yes, no])
    result = []
    for out in engine.llm.generate(prompts, params, use_tqdm=False):
        logprobs = out.outputs[0].logprobs[0]
        ly, ln = logprobs[yes].logprob, logprobs[no].logprob
        result.append(math.exp(ly) / (math.exp(ly) + math.exp(ln)))
    return result


def check_accounting(component, recording, tokenizer):
    """The component's counters are the engine's own counts; every prompt fits the context with its answer."""
    prompt_tokens, completion_tokens = recording.tokens()
    assert component.prompt_tokens == prompt_tokens
    assert component.completion_tokens == completion_tokens
    assert component.calls == len(recording.log)
    for _, conversations, generations, max_tokens in recording.log:
        for conversation, generation in zip(conversations, generations, strict=True):
            ids = tokenizer.encode(render_chat(tokenizer, conversation), add_special_tokens=False)
            assert generation.prompt_tokens == len(ids)
            assert generation.prompt_tokens + max_tokens <= CONTEXT


def test_yes_no_scores_are_exact_probabilities(vllm_random, cran_first_stage, cranfield):
    rows = cranfield.text_loader('text')(cran_first_stage.groupby('qid').head(5))
    recording = Recording(vllm_random)
    scorer = YesNoScorer(recording)
    scores = scorer(rows)['score'].to_numpy()
    assert ((scores > 0) & (scores < 1)).all()
    assert len(np.unique(scores.round(6))) > len(scores) // 2  # not one stand-in value (0.5) for every row
    conversations = recording.log[0][1]
    assert scores == pytest.approx(exact_yes_probability(vllm_random, conversations), abs=1e-6)
    check_accounting(scorer, recording, vllm_random.tokenizer)


def test_the_scorer_s_answer_words_reach_vllm(vllm_random, cran_first_stage, cranfield):
    """yes= and no= on the real engine: swapped, every score is one minus the default's; a word the tokenizer splits
    stops the run (an AnswerTokenError, not a score of 0 per row)."""
    from pyterrier_garen import AnswerTokenError
    rows = cranfield.text_loader('text')(cran_first_stage.groupby('qid').head(3))
    default = YesNoScorer(vllm_random)(rows)['score'].to_numpy()
    swapped = YesNoScorer(vllm_random, yes='no', no='yes')(rows)['score'].to_numpy()
    assert swapped == pytest.approx(1 - default, abs=1e-6)
    split = 'yesnoyesnoyes'
    assert len(vllm_random.tokenizer.encode(split, add_special_tokens=False)) > 1
    recording = Recording(vllm_random)
    with pytest.raises(AnswerTokenError, match=f"^'{split}' is \\d+ tokens for "):
        YesNoScorer(recording, yes=split)(rows)
    assert recording.log == []


def test_scripted_listwise_answer_reorders_and_parses(vllm_scripted, cran_first_stage, cranfield):
    rows = cranfield.text_loader('text')(cran_first_stage.groupby('qid').head(3))
    reranker = ListwiseReranker(vllm_scripted, window=3, stride=1)
    out = reranker(rows)
    assert reranker.malformed == 0
    assert reranker.calls == 1  # every query's window in one engine call
    for qid, before in rows.groupby('qid', sort=False):
        docnos = before.sort_values('rank')['docno'].tolist()
        after = out[out.qid == qid].sort_values('rank')['docno'].tolist()
        assert after == [docnos[1], docnos[0], docnos[2]]  # the script: [2] > [1] > [3]


def test_the_head_call_on_the_engine_reorders_each_head_in_one_engine_call(vllm_scripted, cran_first_stage, cranfield):
    recording = Recording(vllm_scripted)
    reranker = ListwiseReranker(recording, window=3, stride=1)
    out = HeadReranker(cranfield.text_loader('text') >> reranker, depth=3)(cran_first_stage)
    assert len(recording.log) == 1  # every query's head in one engine call
    assert reranker.malformed == 0
    for qid, before in cran_first_stage.groupby('qid', sort=False):
        docnos = before.sort_values('rank')['docno'].tolist()
        after = out[out.qid == qid].sort_values('rank')['docno'].tolist()
        # the script ranks [2] > [1] > [3]; the rest keeps its order below the head
        assert after == [docnos[1], docnos[0], docnos[2]] + docnos[3:]
    check_accounting(reranker, recording, vllm_scripted.tokenizer)


def test_garen_one_engine_call_per_iteration_and_batched_equals_per_query(
        vllm_scripted, vllm_random, cran_groups_bm25, cran_first_stage, cranfield):
    rerank_engine, navigate_engine = Recording(vllm_scripted), Recording(vllm_random)
    reranker, navigator = ListwiseReranker(rerank_engine), YesNoScorer(navigate_engine)
    garen = GAREN(cranfield.text_loader('text') >> reranker, cran_groups_bm25, navigator, budget=40)
    out = garen(cran_first_stage)
    stats = garen.last_stats
    queries = cran_first_stage.qid.nunique()
    assert len(rerank_engine.log) == stats.reranker_calls.max()  # lock-step: all queries share each call
    assert len(rerank_engine.log[0][1]) == queries
    assert len(navigate_engine.log) == stats.navigator_calls.max()
    # the script names 3 of the 20 documents of a window: every answer is parsed, counted as malformed, and used
    assert reranker.malformed == reranker.prompts
    for _, run in out.groupby('qid'):
        assert run.docno.is_unique
        assert len(run) <= 40
        assert (np.diff(run.score.to_numpy()) < 0).all()
    navigator_scores = np.concatenate([[g.probability for g in entry[2]] for entry in navigate_engine.log])
    assert ((navigator_scores > 0) & (navigator_scores < 1)).all()
    check_accounting(reranker, rerank_engine, vllm_scripted.tokenizer)
    check_accounting(navigator, navigate_engine, vllm_random.tokenizer)
    single = pd.concat([garen(df) for _, df in cran_first_stage.groupby('qid', sort=False)], ignore_index=True)
    pd.testing.assert_frame_equal(out.reset_index(drop=True), single.reset_index(drop=True))


def test_slidegar_with_the_listwise_reranker(vllm_scripted, cran_bm25_graph, cran_first_stage, cranfield):
    reranker = ListwiseReranker(vllm_scripted)
    slide = SlideGAR(cranfield.text_loader('text') >> reranker, cran_bm25_graph, budget=40)
    out = slide(cran_first_stage)
    for _, run in out.groupby('qid'):
        assert run.docno.is_unique
        assert (np.diff(run.score.to_numpy()) < 0).all()
    assert reranker.malformed == reranker.prompts > 0
    single = pd.concat([slide(df) for _, df in cran_first_stage.groupby('qid', sort=False)], ignore_index=True)
    pd.testing.assert_frame_equal(out.reset_index(drop=True), single.reset_index(drop=True))


class _Windows(pt.Transformer):
    """Passes every call to ``reranker`` and records, per query, each window sent and the order the reranker gave it."""

    listwise = True  # what it wraps is

    def __init__(self, reranker):
        self.reranker, self.seen = reranker, {}

    def transform(self, inp):
        out = self.reranker(inp)
        for qid, rows in inp.groupby('qid', sort=False):
            ranked = out[out.qid == qid].sort_values('score', ascending=False, kind='stable').docno.tolist()
            self.seen.setdefault(qid, []).append((rows.docno.tolist(), ranked))
        return out


def _reference_rgs(r0, neighbours, answers, budget, queue_size=20, window=20, stride=10):
    """RGS's reference loop (its `insert`), written out on its own, answered by the reranker's recorded verdicts in
    the order they came: each window it would send must be the window RGS sent."""
    answers, queue, queued, expanded = list(answers), [], set(), set()

    def insert(new):
        queue.extend(new)
        end = len(queue)
        while end > 0:
            span = queue[max(0, end - window):end]
            if all(d in queued for d in span):
                break
            if len(span) > 1 or end == len(queue):  # a last window of one document is not sent (it orders nothing)
                sent, ranked = answers.pop(0)
                assert sent == span
                queue[max(0, end - window):end] = ranked
            end -= stride
        queued.update(new)
        del queue[queue_size:]

    insert(r0[:budget // 5])
    count = budget // 5
    while count < budget:
        todo = [d for d in queue if d not in expanded]
        if not todo:
            break
        expanded.add(todo[0])
        new = [d for d in neighbours(todo[0]) if d not in queued][:budget - count]
        insert(new)
        count += len(new)
    assert answers == []  # nothing sent that the reference would not send
    return queue


def test_rgs_sends_its_reference_windows_to_the_listwise_reranker(vllm_scripted, cran_bm25_graph, cran_first_stage,
                                                                  cranfield):
    spy = _Windows(cranfield.text_loader('text') >> ListwiseReranker(vllm_scripted))
    out = RGS(spy, cran_bm25_graph, budget=40, final_order='paper')(cran_first_stage)  # the queue first, as it is

    def neighbours(docno):
        return list(dict.fromkeys(str(n) for n in cran_bm25_graph.neighbours(docno) if str(n) != docno))

    sizes = set()
    for qid, first in cran_first_stage.groupby('qid', sort=False):
        r0 = first.sort_values('rank').docno.astype(str).tolist()
        queue = _reference_rgs(r0, neighbours, spy.seen[qid], budget=40)
        assert out[out.qid == qid].docno.tolist()[:len(queue)] == queue
        sizes.update(len(sent) for sent, _ in spy.seen[qid])
    # every window was the reference's (checked above, window by window); among them the seeds' (8), full ones (20)
    # and none of one document
    assert {8, 20} <= sizes
    assert min(sizes) > 1


def test_summarizer_over_every_group_survives_repairs_failures_and_interruption(
        vllm_random, cran_bm25_graph, cranfield, tmp_path):
    groups = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'groups')
    assert groups.num_groups >= 100
    # large documents: first prompts fill the context, so a repair round must make room for the failed reply
    options = {'max_doc_tokens': 512, 'max_tokens': 48, 'batch_size': 32}
    interrupted = Recording(vllm_random, interrupt_after=3)  # the first batch (answer + repair round) completes
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(LLMSummarizer(interrupted, **options), cranfield, batch_size=32)
    assert len(interrupted.log) == 2
    partial = tmp_path / 'groups' / 'summaries.partial.jsonl'
    assert len(partial.read_text().splitlines()) == 32  # the finished batch is on disk
    unlucky = groups.group_members(40)[0]
    recording = Recording(vllm_random, fail=lambda c: f'({unlucky})' in c[-1]['content'])
    summarizer = LLMSummarizer(recording, **options)
    groups.summarize(summarizer, cranfield, batch_size=32)
    assert sum(len(entry[1]) for entry in recording.log if 'could not be used' not in entry[1][0][-1]['content']) \
        >= groups.num_groups - 32 - 1  # only the groups the interrupted run had not finished were asked again
    records = [groups.summary_record(g) for g in range(groups.num_groups)]
    assert all(r['fallback'] for r in records)  # random weights never write JSON: every group falls back, counted
    assert summarizer.fallbacks == groups.num_groups - 32
    assert summarizer.failed == 1
    assert 'failed' in records[40]['error']
    for _, _, generations, max_tokens in recording.log:
        assert all(g.prompt_tokens + max_tokens <= CONTEXT for g in generations)
    assert max(g.prompt_tokens for entry in recording.log for g in entry[2]) > CONTEXT - 48 - 400  # near full
