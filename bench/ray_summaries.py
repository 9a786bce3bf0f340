"""Benchmark: LLM group summaries in a Ray actor pool with 1 and 2 actors (groups/s, tokens/s, and their ratio).

    python bench/ray_summaries.py                                  # tiny local model, Cranfield, 1 and 2 actors
    python bench/ray_summaries.py --groups 128 --workers 1 2 4 --address auto
    python bench/ray_summaries.py --engine vllm --model Qwen/Qwen3-4B --gpus-per-worker 1 --address auto
    python bench/ray_summaries.py --plan --corpus-groups 420000 --hours 24      # GPUs for a target wall time

The groups are Leiden groups of the collection's BM25 graph (built once under $GAREN_CACHE). Each run starts a fresh
actor pool; ``wall`` includes starting the actors and loading the model in each, ``steady`` counts from the first
finished batch to the last (the rate a long job approaches). Token counts are the engine's (prompt + completion).

``--plan`` prints how many GPUs a corpus needs for a wall time, from the GAREN paper's measured summary times
(Table 9: two A100s per summariser engine, Qwen3-Next-80B-A3B-FP8) and, optionally, the tokens per group measured
here relative to a reference.
"""
import argparse
import math
import os
import tempfile
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

# GAREN paper, Table 9 (BRIGHT): groups and summary generation minutes on two A100 GPUs
PAPER = {'biology': (5183, 81), 'earth_science': (11485, 196), 'economics': (4561, 64), 'psychology': (4789, 65),
         'robotics': (4861, 70), 'stackoverflow': (8136, 149), 'sustainable_living': (5540, 76),
         'leetcode': (40861, 611), 'pony': (621, 11), 'aops': (16558, 364), 'theoremqa_t': (2196, 40)}
PAPER_GPUS = 2


def plan(args):
    rates = {name: groups / (minutes * 60) / PAPER_GPUS for name, (groups, minutes) in PAPER.items()}
    slow, fast, leetcode = min(rates.values()), max(rates.values()), rates['leetcode']
    print(f'paper (Table 9), per A100: {leetcode:.3f} groups/s on LeetCode (40,861 groups, 611 min on 2 GPUs); '
          f'range over BRIGHT {slow:.3f} .. {fast:.3f} groups/s')
    scale = args.token_ratio
    for label, rate in (('LeetCode rate', leetcode), ('slowest BRIGHT rate', slow), ('fastest BRIGHT rate', fast)):
        gpu_hours = args.corpus_groups * scale / rate / 3600
        engines = math.ceil(gpu_hours / PAPER_GPUS / args.hours)
        print(f'{args.corpus_groups} groups x token ratio {scale:g} at the {label}: {gpu_hours:,.0f} A100-hours; '
              f'{engines} engines of {PAPER_GPUS} GPUs = {engines * PAPER_GPUS} GPUs for {args.hours:g} h '
              f'({gpu_hours / (engines * PAPER_GPUS) * 60:.0f} min each)')


def groups_for(args):
    from pyterrier_garen import GroupCorpusGraph, LocalDataset, bm25_corpus_graph, bm25_index, cache_dir, data_dir
    dataset = LocalDataset(data_dir(args.collection))
    work = cache_dir() / args.collection
    graph = bm25_corpus_graph(dataset, work / 'bm25.k16.graph', index=bm25_index(dataset, work / 'bm25.pisa'))
    groups = GroupCorpusGraph.from_corpus_graph(graph, work / 'bm25.k16.groups')
    ids = list(range(min(args.groups, groups.num_groups)))
    texts = groups._member_texts(dataset, ids)
    return [[{'group': g, 'docs': texts[g]} for g in ids[s:s + args.batch_size]]
            for s in range(0, len(ids), args.batch_size)]


def engine_spec(args, folder):
    from pyterrier_garen import EngineSpec
    if args.engine == 'transformers':
        model = args.model
        if model is None:
            from pyterrier_garen import build_tiny_model
            model = str(build_tiny_model(os.path.join(folder, 'tiny')))
        return EngineSpec('transformers', model=model, device=args.device, batch_size=args.engine_batch_size)
    if args.engine == 'openai':
        return EngineSpec('openai', base_url=args.base_url, model=args.model)
    return EngineSpec('vllm', model=args.model)


def run(spec, batches, workers, args):
    from pyterrier_garen import RayOptions, summarize_batches
    summarizer = spec.summarizer(max_tokens=args.max_tokens)
    options = RayOptions(workers=workers, num_cpus=args.cpus_per_worker, num_gpus=args.gpus_per_worker)
    start = time.perf_counter()
    first = None
    groups = tokens = steady_groups = steady_tokens = 0
    pids = set()
    for records, stats in summarize_batches(summarizer, batches, options=options):
        now = time.perf_counter()
        n, t = len(records), stats['prompt_tokens'] + stats['completion_tokens']
        groups, tokens = groups + n, tokens + t
        if first is None:
            first = now
        else:
            steady_groups, steady_tokens = steady_groups + n, steady_tokens + t
        pids.add(stats['pid'])
    end = time.perf_counter()
    wall, steady = end - start, max(end - first, 1e-9)
    return {'workers': workers, 'actors_used': len(pids), 'groups': groups, 'tokens': tokens,
            'tokens_per_group': tokens / max(groups, 1), 'wall_s': wall, 'groups_per_s': groups / wall,
            'tokens_per_s': tokens / wall, 'steady_groups_per_s': steady_groups / steady,
            'steady_tokens_per_s': steady_tokens / steady}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--collection', default='cranfield')
    parser.add_argument('--groups', type=int, default=64, help='groups summarised per run')
    parser.add_argument('--batch-size', type=int, default=8, help='groups per summariser call (one Ray task)')
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--engine', choices=['transformers', 'vllm', 'openai'], default='transformers')
    parser.add_argument('--model', help='model id or folder (default: the tiny local model, built in a temp folder)')
    parser.add_argument('--base-url', help='server URL for --engine openai')
    parser.add_argument('--device', default='cpu', help='device for --engine transformers')
    parser.add_argument('--engine-batch-size', type=int, default=8)
    parser.add_argument('--max-tokens', type=int, default=64, help='most tokens per summary')
    parser.add_argument('--address', help='Ray cluster address (default: a local cluster)')
    parser.add_argument('--cpus-per-worker', type=float, default=1)
    parser.add_argument('--gpus-per-worker', type=float, default=0)
    parser.add_argument('--num-cpus', type=int, help='CPUs of the local cluster (default: all)')
    parser.add_argument('--plan', action='store_true', help='print the GPU plan for --corpus-groups and --hours')
    parser.add_argument('--corpus-groups', type=int, default=420000)
    parser.add_argument('--hours', type=float, default=24)
    parser.add_argument('--token-ratio', type=float, default=1.0,
                        help='tokens per group of your corpus / tokens per group of BRIGHT (for --plan)')
    args = parser.parse_args()
    if args.plan:
        plan(args)
        return
    import ray
    batches = groups_for(args)
    init = {} if args.address else {'num_cpus': args.num_cpus, 'include_dashboard': False,
                                    'object_store_memory': 256 * 1024 ** 2}
    ray.init(address=args.address, log_to_driver=False, **init)  # once: the runs time actors, not the cluster start
    try:
        with tempfile.TemporaryDirectory() as folder:
            spec = engine_spec(args, folder)
            results = [run(spec, batches, workers, args) for workers in args.workers]
    finally:
        ray.shutdown()
    base = results[0]
    print(f'{args.collection}: {base["groups"]} groups, batches of {args.batch_size}, engine {spec!r}')
    print('workers  actors  wall_s  groups/s  tokens/s  steady groups/s  steady tokens/s  tokens/group  ratio')
    for r in results:
        print(f'{r["workers"]:>7}  {r["actors_used"]:>6}  {r["wall_s"]:>6.1f}  {r["groups_per_s"]:>8.2f}  '
              f'{r["tokens_per_s"]:>8.0f}  {r["steady_groups_per_s"]:>15.2f}  {r["steady_tokens_per_s"]:>15.0f}  '
              f'{r["tokens_per_group"]:>12.0f}  {r["groups_per_s"] / base["groups_per_s"]:>5.2f}')


if __name__ == '__main__':
    main()
