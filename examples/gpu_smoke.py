"""GPU smoke test: GAREN with small public LLMs on a local collection, in-process vLLM.

    python examples/gpu_smoke.py path/to/collection --queries 20

Runs BM25, BM25 >> sliding-window LLM re-ranking of the top 100, and BM25 >> GAREN (listwise LLM reranker,
yes/no LLM navigator, LLM group summaries) and prints throughput and a pt.Experiment table. Exits 0 with a
"skipped" message when there is no CUDA device or vLLM is not installed (``pip install pyterrier-garen[vllm]``).
"""
import argparse
import importlib.util
import sys
import time
from pathlib import Path


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('collection', nargs='?', default=None,
                        help='a collection folder (docs.jsonl, topics, qrels); default: $GAREN_DATA/scifact')
    parser.add_argument('--reranker-model', default='Qwen/Qwen2.5-1.5B-Instruct',
                        help='listwise reranker and group summariser')
    parser.add_argument('--navigator-model', default='Qwen/Qwen3-Reranker-0.6B', help='yes/no navigator')
    parser.add_argument('--prompt', choices=['rankllm', 'reasoning'], default='rankllm')
    parser.add_argument('--queries', type=int, default=20, help='number of topics to run (0: all)')
    parser.add_argument('--budget', type=int, default=100)
    parser.add_argument('--max-model-len', type=int, default=8192)
    parser.add_argument('--workdir', default='gpu-smoke-work', help='where the index, graph and groups are built')
    return parser.parse_args(argv)


def skip_reason():
    if importlib.util.find_spec('vllm') is None:
        return 'vllm not installed (pip install pyterrier-garen[vllm])'
    try:
        import torch
    except ImportError:
        return 'torch not installed'
    if not torch.cuda.is_available():
        return 'no CUDA device'
    return None


def main(argv=None):
    args = parse_args(argv)
    reason = skip_reason()
    if reason:
        print(f'skipped: {reason}')
        return 0

    import pyterrier as pt

    import pyterrier_garen as garen

    dataset = garen.LocalDataset(args.collection or garen.data_dir('scifact'))
    topics = dataset.get_topics()
    if args.queries:
        topics = topics.head(args.queries)
    qrels = dataset.get_qrels()

    # two small models side by side on one GPU
    reranker_engine = garen.VLLMEngine(args.reranker_model, max_model_len=args.max_model_len,
                                       gpu_memory_utilization=0.45)
    navigator_engine = garen.VLLMEngine(args.navigator_model, max_model_len=args.max_model_len,
                                        gpu_memory_utilization=0.3)
    summarizer = garen.LLMSummarizer(reranker_engine, max_doc_tokens=256, max_tokens=1024)

    start = time.perf_counter()
    prepared = garen.prepare(dataset, Path(args.workdir) / dataset.name, graph='bm25', vectors=False,
                             summarizer=summarizer, verbose=True)
    print(f'groups: {prepared.groups.num_groups} summarised in {time.perf_counter() - start:.0f}s; '
          f'summariser {summarizer.stats()}')

    bm25 = prepared.bm25_index.bm25(num_results=1000)
    text = dataset.text_loader('text')
    reranker = garen.ListwiseReranker(reranker_engine, prompt=args.prompt, window=20, stride=10)
    navigator = garen.YesNoScorer(navigator_engine)
    pipelines = {
        'BM25': bm25,
        'BM25 >> LLM top-100': bm25 % args.budget >> text >> reranker,
        'BM25 >> GAREN': bm25 >> garen.GAREN(text >> reranker, prepared.groups, navigator, window=20, keep=10,
                                             budget=args.budget),
    }
    runs = {}
    for name, pipeline in pipelines.items():
        reranker.reset_stats()
        navigator.reset_stats()
        start = time.perf_counter()
        runs[name] = pipeline(topics)
        elapsed = time.perf_counter() - start
        tokens = sum(c.prompt_tokens + c.completion_tokens for c in (reranker, navigator))
        print(f'{name}: {len(topics) / elapsed:.2f} queries/s, {tokens / elapsed:,.0f} tokens/s; '
              f'reranker {reranker.stats()}; navigator {navigator.stats()}')
    print(pt.Experiment(list(runs.values()), topics, qrels, eval_metrics=['nDCG@10', 'R@100'],
                        names=list(runs)).to_string())
    return 0


if __name__ == '__main__':
    sys.exit(main())
