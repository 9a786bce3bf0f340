"""Command line for the offline jobs: ``python -m pyterrier_garen <command> ...`` (or ``pyterrier-garen``)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional


def _dataset(spec: str):
    from .datasets import load_dataset
    return load_dataset(spec)


def _cmd_encode(args) -> None:
    from ._graphs import encode_corpus
    index = encode_corpus(_dataset(args.dataset), args.out, verbose=True)
    print(f'vectors: {index}')


def _cmd_build_graph(args) -> None:
    from ._graphs import bm25_corpus_graph, dense_corpus_graph, encode_corpus
    dataset = _dataset(args.dataset)
    if args.kind == 'dense':
        if not args.vectors:
            raise SystemExit('build-graph --kind dense needs --vectors FOLDER (a FlexIndex, see the encode command)')
        graph = dense_corpus_graph(encode_corpus(dataset, args.vectors, verbose=True), k=args.k)
    else:
        graph = bm25_corpus_graph(dataset, args.out, k=args.k)
    print(f'graph: {graph}')


def _cmd_build_groups(args) -> None:
    from ._graphs import load_corpus_graph
    from ._group_graph import GroupCorpusGraph
    groups = GroupCorpusGraph.from_corpus_graph(load_corpus_graph(args.graph), args.out,
                                                max_group_size=args.max_group_size, resolution=args.resolution,
                                                randomness=args.randomness, seed=args.seed, backend=args.backend,
                                                overwrite=args.overwrite, verbose=True)
    print(json.dumps(groups.group_stats()))


def _summarizer(args):
    if args.summarizer == 'extractive':
        from ._summaries import ExtractiveSummarizer
        return ExtractiveSummarizer()
    from . import LLMSummarizer, OpenAIEngine, VLLMEngine
    if not args.model:
        raise SystemExit('--summarizer llm needs --model (and --base-url for a server)')
    engine = OpenAIEngine(args.base_url, args.model) if args.base_url else VLLMEngine(args.model)
    return LLMSummarizer(engine)


def _cmd_summarize(args) -> None:
    from ._group_graph import GroupCorpusGraph
    groups = GroupCorpusGraph(args.groups)
    groups.summarize(_summarizer(args), _dataset(args.dataset), batch_size=args.batch_size,
                     overwrite=args.overwrite, verbose=True)
    print(json.dumps(groups.meta['summaries']))


def _cmd_prepare(args) -> None:
    from ._prepare import prepare
    prepared = prepare(_dataset(args.dataset), args.workdir, graph=args.graph, k=args.k,
                       max_group_size=args.max_group_size, seed=args.seed, verbose=True)
    print(f'groups: {prepared.groups.path}')
    print(json.dumps(prepared.groups.group_stats()))


def _cmd_show(args) -> None:
    from ._group_graph import GroupCorpusGraph
    groups = GroupCorpusGraph(args.groups)
    print(json.dumps(groups.group_stats()))
    ids = args.group or list(range(min(args.limit, groups.num_groups)))
    for gid in ids:
        print(f'--- group {gid} ({len(groups.group_member_ids(gid))} docs): {groups.group_members(gid)[:10]}')
        print(groups.summary(gid) or '(no summary)')


def _cmd_tiny_model(args) -> None:
    from ._tiny_model import build_tiny_model
    texts = None
    if args.dataset:
        texts = [' '.join(filter(None, (d.get('title'), d.get('text'))))
                 for d in _dataset(args.dataset).get_corpus_iter(verbose=False)]
    path = build_tiny_model(args.out, scripted=args.scripted, script=args.script, texts=texts, seed=args.seed)
    print(f'tiny model: {path}')


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m pyterrier_garen',
                                     description='Offline jobs of GAREN: vectors, corpus graphs, groups, summaries.')
    sub = parser.add_subparsers(dest='command', required=True)
    data_help = 'a collection folder (docs.jsonl, queries.tsv, qrels.txt), a name under $GAREN_DATA, or irds:<id>'

    p = sub.add_parser('encode', help='encode a corpus with MiniLM into a FlexIndex')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--out', required=True, help='FlexIndex folder')
    p.set_defaults(func=_cmd_encode)

    p = sub.add_parser('build-graph', help='build a k-NN corpus graph (np_topk format)')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--kind', choices=['dense', 'bm25'], default='dense')
    p.add_argument('--vectors', help='FlexIndex folder (dense graphs are stored inside it)')
    p.add_argument('--out', help='graph folder (bm25)')
    p.add_argument('--k', type=int, default=16)
    p.set_defaults(func=_cmd_build_graph)

    p = sub.add_parser('build-groups', help='partition a corpus graph into groups with Leiden')
    p.add_argument('--graph', required=True, help='a pyterrier-adaptive corpus graph folder')
    p.add_argument('--out', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--max-group-size', type=int, default=20)
    p.add_argument('--resolution', type=float, default=1.0)
    p.add_argument('--randomness', type=float, default=0.001)
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--backend', choices=['igraph', 'leidenalg'], default='igraph')
    p.add_argument('--overwrite', action='store_true')
    p.set_defaults(func=_cmd_build_groups)

    p = sub.add_parser('summarize', help='summarise every group (resumable: rerun after an interruption)')
    p.add_argument('--groups', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--summarizer', choices=['extractive', 'llm'], default='extractive')
    p.add_argument('--model', help='LLM for --summarizer llm')
    p.add_argument('--base-url', help='OpenAI-compatible server for --summarizer llm (default: in-process vLLM)')
    p.add_argument('--batch-size', type=int, default=32)
    p.add_argument('--overwrite', action='store_true')
    p.set_defaults(func=_cmd_summarize)

    p = sub.add_parser('prepare', help='all offline steps for a collection (BM25 index, vectors, graph, groups)')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--workdir', help='output folder (default: $GAREN_CACHE/<name>)')
    p.add_argument('--graph', choices=['dense', 'bm25'], default='dense')
    p.add_argument('--k', type=int, default=16)
    p.add_argument('--max-group-size', type=int, default=20)
    p.add_argument('--seed', type=int, default=42)
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser('show', help='print group statistics and some groups with their summaries')
    p.add_argument('--groups', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--group', type=int, action='append', help='a group id to show (repeatable)')
    p.add_argument('--limit', type=int, default=5)
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser('tiny-model', help='build a tiny random (or scripted) Qwen3 model to try the LLM path offline')
    p.add_argument('--out', required=True, help='model folder (new or empty, or a previous tiny model)')
    p.add_argument('--scripted', action='store_true', help='greedy decoding writes --script whatever the prompt')
    p.add_argument('--script', default='[2] > [1]', help='the scripted answer (distinct " > "-separated parts)')
    p.add_argument('--dataset', help='train the tokenizer on this collection\'s documents (' + data_help + ')')
    p.add_argument('--seed', type=int, default=0)
    p.set_defaults(func=_cmd_tiny_model)

    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (FileNotFoundError, FileExistsError, ValueError) as ex:  # user errors: the message says what to do
        parser.exit(2, f'error: {ex}\n')


if __name__ == '__main__':
    main(sys.argv[1:])
