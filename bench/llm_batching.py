"""GAREN on a real vLLM engine: queries/s when every iteration batches all queries vs one query at a time.

    python bench/llm_batching.py                       # CPU: builds the tiny random model, Cranfield, 8 queries
    python bench/llm_batching.py --device cuda --model Qwen/Qwen2.5-1.5B-Instruct --navigator-model \\
        Qwen/Qwen3-Reranker-0.6B --queries 50

The listwise reranker and the yes/no navigator run on in-process ``VLLMEngine``s; the groups are Leiden groups over
a BM25 k-NN graph with extractive summaries (built once in --workdir). Prints queries/s of both modes, the ratio,
and whether the two runs are identical (they must be: batching changes the speed, not the result).
On CPU set VLLM_CPU_KVCACHE_SPACE (GiB, default 1 here).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--collection', default='cranfield', help='a collection folder or a name under $GAREN_DATA')
    parser.add_argument('--device', choices=['auto', 'cpu', 'cuda'], default='auto')
    parser.add_argument('--model', help='reranker model (default: a tiny random model built on the spot)')
    parser.add_argument('--navigator-model', help='navigator model (default: the reranker model, one engine)')
    parser.add_argument('--queries', type=int, default=8)
    parser.add_argument('--budget', type=int, default=40)
    parser.add_argument('--max-model-len', type=int, default=4096)
    parser.add_argument('--workdir', default=None, help='where the index, graph and groups go (default: a temp dir)')
    return parser.parse_args(argv)


def device_of(choice):
    if choice != 'auto':
        return choice
    import torch
    return 'cuda' if torch.cuda.is_available() else 'cpu'


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault('VLLM_CPU_KVCACHE_SPACE', '1')
    import pandas as pd

    import pyterrier_garen as garen
    from pyterrier_garen import build_tiny_model

    device = device_of(args.device)
    path = Path(args.collection)
    dataset = garen.LocalDataset(path if path.is_dir() else garen.data_dir(args.collection))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix='garen-bench-'))
    model = args.model
    if model is None:
        texts = [d['text'] for d in dataset.get_corpus_iter(verbose=False)]
        model = str(build_tiny_model(workdir / 'tiny-random', texts=texts))
    options = {'max_model_len': args.max_model_len}
    if device == 'cpu':
        options.update(enforce_eager=True, dtype='float32')
    else:
        options.update(gpu_memory_utilization=0.4 if args.navigator_model else 0.8)
    reranker_engine = garen.VLLMEngine(model, **options)
    navigator_engine = garen.VLLMEngine(args.navigator_model, **options) if args.navigator_model \
        else reranker_engine

    prepared = garen.prepare(dataset, workdir / dataset.name, graph='bm25', vectors=False)
    topics = dataset.get_topics().head(args.queries)
    first_stage = prepared.bm25_index.bm25(num_results=100)(topics)
    reranker = garen.ListwiseReranker(reranker_engine)
    navigator = garen.YesNoScorer(navigator_engine)
    pipeline = garen.GAREN(dataset.text_loader('text') >> reranker, prepared.groups, navigator, budget=args.budget)
    pipeline(first_stage[first_stage.qid == first_stage.qid.iloc[0]])  # warm-up (first calls compile kernels)

    start = time.perf_counter()
    batched = pipeline(first_stage)
    batched_s = time.perf_counter() - start
    start = time.perf_counter()
    single = pd.concat([pipeline(df) for _, df in first_stage.groupby('qid', sort=False)], ignore_index=True)
    single_s = time.perf_counter() - start
    n = first_stage.qid.nunique()
    print(f'model {model} on {device}; {n} queries, budget {args.budget}')
    print(f'batched across queries: {n / batched_s:.3f} queries/s ({batched_s:.1f} s)')
    print(f'one query at a time:    {n / single_s:.3f} queries/s ({single_s:.1f} s)')
    print(f'ratio batched / per-query: {single_s / batched_s:.2f}x')
    identical = batched.reset_index(drop=True).equals(single.reset_index(drop=True))
    print(f'identical runs: {identical}')
    return 0 if identical else 1


if __name__ == '__main__':
    raise SystemExit(main())
