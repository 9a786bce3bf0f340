"""Command line: ``python -m pyterrier_garen <command> ...`` (or ``pyterrier-garen``); ``compare`` is the main job."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from ._errors import UsageError


def _dataset(spec: str):
    from .datasets import load_dataset
    return load_dataset(spec)


def _add_ray_args(p) -> None:
    p.add_argument('--ray', nargs='?', const='', metavar='ADDRESS',
                   help='run in a Ray actor pool: alone, a local cluster (or $RAY_ADDRESS); with an ADDRESS '
                        '(auto, ray://head:10001), that cluster (default: no Ray, one process)')
    p.add_argument('--workers', type=_at_least(1, 'a whole number of at least 1'), default=None,
                   help='Ray actors, one model each (with --ray; default: 2)')
    p.add_argument('--gpus-per-worker', type=float, default=None,
                   help='GPUs per Ray actor (with --ray; default: 1 for in-process vLLM, else 0)')


def _check_ray_args(args) -> None:
    """Refuse Ray's sizing options without ``--ray``: the run would be one process, and they would do nothing."""
    given = [name for name, value in (('--workers', args.workers), ('--gpus-per-worker', args.gpus_per_worker))
             if value is not None]
    if args.ray is None and given:
        raise UsageError(f'{" and ".join(given)} size{"s" if len(given) == 1 else ""} a Ray actor pool, but without '
                         f'--ray the {args.command} command runs in this one process: add --ray (a local cluster, '
                         'or $RAY_ADDRESS) or --ray ADDRESS, or leave it out')


def _at_least(low: int, what: str):
    """An argparse type: an integer >= ``low`` (``what`` says which is meant, in the message)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f'must be {what}, got {text!r}')
        return value
    parse.__name__ = 'integer'
    return parse


def _share(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = float('nan')
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f'must be a number from 0 to 1, got {text!r}')
    return value


def _positive_share(text: str) -> float:
    """An argparse type: a number above 0, at most 1."""
    value = _share(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f'must be a number above 0, at most 1, got {text!r}')
    return value


def _ray_options(args, gpus: float = 0):
    if args.ray is None:
        return None
    from ._ray import RayOptions
    return RayOptions(address=args.ray or None, workers=2 if args.workers is None else args.workers,
                      num_gpus=gpus if args.gpus_per_worker is None else args.gpus_per_worker)


def _cmd_encode(args) -> None:
    _check_ray_args(args)
    from ._graphs import encode_corpus
    encoder = args.encoder if args.ray is not None else _encoder(args.encoder)  # Ray actors load their own
    index = encode_corpus(_dataset(args.dataset), args.out, encoder=encoder, verbose=True, ray=_ray_options(args))
    print(f'vectors: {index}')


def _encoder(spec: str):
    from ._encoding import DEFAULT, load_encoder
    if spec == DEFAULT:
        return None  # loaded only when something is encoded
    try:
        return load_encoder(spec)
    except ValueError as ex:
        raise UsageError(f'--encoder: {ex}') from None


def _cmd_build_graph(args) -> None:
    from ._graphs import bm25_corpus_graph, dense_corpus_graph, encode_corpus
    if args.kind == 'dense' and not args.vectors:
        raise UsageError('build-graph --kind dense needs --vectors FOLDER (a FlexIndex, see the encode command)')
    if args.kind == 'bm25' and not args.out:
        raise UsageError('build-graph --kind bm25 needs --out FOLDER (where the graph is written)')
    if args.kind == 'dense' and args.out:  # it was ignored: the dense graph is stored inside its vectors' folder
        raise UsageError('build-graph --kind dense writes the graph inside --vectors (as corpusgraph_k<k>); leave '
                         '--out out, or pass --kind bm25')
    if args.kind == 'bm25' and args.vectors:
        raise UsageError('build-graph --kind bm25 reads no vectors; leave --vectors out, or pass --kind dense')
    dataset = _dataset(args.dataset)
    if args.kind == 'dense':
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


#: summarize's options of the LLM summariser: (flag, attribute), by the engine they apply to
_LLM_OPTIONS = (('--model', 'model'), ('--base-url', 'base_url'), ('--max-tokens', 'max_tokens'),
                ('--max-doc-tokens', 'max_doc_tokens'))
_SERVER_OPTIONS = (('--timeout', 'timeout'), ('--max-retries', 'max_retries'))
#: options of the in-process vLLM engine: (flag, attribute, the vllm.LLM argument)
_IN_PROCESS_OPTIONS = (('--max-model-len', 'max_model_len'), ('--dtype', 'dtype'), ('--enforce-eager', 'enforce_eager'),
                       ('--gpu-memory-utilization', 'gpu_memory_utilization'),
                       ('--tensor-parallel-size', 'tensor_parallel_size'))


def _given(args, options) -> List[str]:
    """The flags of ``options`` given on the command line (each defaults to None)."""
    return [flag for flag, name in options if getattr(args, name) is not None]


def _check_summarizer_args(args) -> None:
    """Refuse, before any work, an option that the chosen summariser and engine would not use."""
    if args.summarizer == 'extractive':
        given = _given(args, _LLM_OPTIONS + _SERVER_OPTIONS + _IN_PROCESS_OPTIONS)
        if given:  # each would do nothing: the extractive summariser runs no model
            raise UsageError(f'{given[0]} is an option of the LLM summariser, and the extractive summariser (the '
                             'default) runs no model: add --summarizer llm --model MODEL, or leave '
                             f'{"it" if len(given) == 1 else " ".join(given)} out')
        return
    if not args.model:
        raise UsageError('--summarizer llm needs --model (and --base-url for a server)')
    wrong = _given(args, _IN_PROCESS_OPTIONS) if args.base_url else _given(args, _SERVER_OPTIONS)
    if wrong and args.base_url:
        raise UsageError(f"{wrong[0]} sets up the in-process vLLM engine; a server's is its own (vllm serve "
                         f'{wrong[0]}): leave it out with --base-url')
    if wrong:
        raise UsageError(f'{wrong[0]} applies to requests to a server (--base-url), and the in-process vLLM engine '
                         'sends none: add --base-url URL, or leave it out')


def _summarizer(args):
    _check_summarizer_args(args)
    if args.summarizer == 'extractive':
        from ._summaries import ExtractiveSummarizer
        return ExtractiveSummarizer()
    from . import LLMSummarizer, OpenAIEngine, VLLMEngine
    server = {'timeout': 60.0 if args.timeout is None else args.timeout,
              'max_retries': 3 if args.max_retries is None else args.max_retries}
    # only what is given, so that the summariser's, vLLM's and the model's own defaults hold otherwise
    engine_args = {name: getattr(args, name) for _, name in _IN_PROCESS_OPTIONS if getattr(args, name) is not None}
    options = {name: value for name, value in (('max_tokens', args.max_tokens), ('max_doc_tokens', args.max_doc_tokens))
               if value is not None}
    if args.ray is not None:  # each Ray actor builds its own engine from this recipe
        from ._ray import EngineSpec
        spec = EngineSpec('openai', base_url=args.base_url, model=args.model, **server) if args.base_url \
            else EngineSpec('vllm', model=args.model, **engine_args)
        return spec.summarizer(**options)
    engine = OpenAIEngine(args.base_url, args.model, **server) if args.base_url \
        else VLLMEngine(args.model, **engine_args)
    return LLMSummarizer(engine, **options)


def _cmd_summarize(args) -> None:
    _check_ray_args(args)
    _check_summarizer_args(args)
    from ._group_graph import GroupCorpusGraph
    groups = GroupCorpusGraph(args.groups)
    gpus = 1 if args.summarizer == 'llm' and not args.base_url else 0
    groups.summarize(_summarizer(args), _dataset(args.dataset), batch_size=args.batch_size,
                     overwrite=args.overwrite, verbose=True, ray=_ray_options(args, gpus),
                     max_failed_share=args.max_failed_share)
    print(json.dumps(groups.meta['summaries']))


def _cmd_prepare(args) -> None:
    from ._prepare import prepare
    prepared = prepare(_dataset(args.dataset), args.workdir, graph=args.graph, k=args.k,
                       max_group_size=args.max_group_size, seed=args.seed, encoder=_encoder(args.encoder),
                       verbose=True)
    print(f'groups: {prepared.groups.path}')
    print(json.dumps(prepared.groups.group_stats()))


def _cmd_show(args) -> None:
    from ._group_graph import GroupCorpusGraph
    groups = GroupCorpusGraph(args.groups)
    if args.validate:  # the full check (opening checks only sizes); an ArtifactError lists every problem
        print(json.dumps({'validate': groups.validate()}))
    print(json.dumps(groups.group_stats()))
    unknown = [g for g in args.group or [] if not 0 <= g < groups.num_groups]
    if unknown:
        raise UsageError(f'--group {unknown[0]} does not exist in {args.groups}; group ids run from 0 to '
                         f'{groups.num_groups - 1}')
    ids = args.group or list(range(min(args.limit, groups.num_groups)))
    for gid in ids:
        print(f'--- group {gid} ({len(groups.group_member_ids(gid))} docs): {groups.group_members(gid)[:10]}')
        print(groups.summary(gid) or '(no summary)')


def _cmd_compare(args) -> None:
    import warnings

    from ._compare import compare, format_comparison
    from ._errors import check_outputs
    check_outputs({'--out': args.out, '--json': args.json})  # before the run: a bad path must not lose its table
    with warnings.catch_warnings():
        if args.strict:
            warnings.simplefilter('error', UserWarning)
        try:
            table = compare(args.dataset, budget=args.budget, workdir=args.workdir, num_queries=args.queries,
                            navigator=args.navigator, systems=args.systems, binary=args.binary,
                            fusion=args.fusion, final_order=args.final_order, verbose=not args.quiet,
                            reranker=args.reranker, tail_fusion=args.tail_fusion, fusion_head=args.fusion_head,
                            observed_fusion=args.observed_fusion, head_rerank=args.head_rerank)
        except UserWarning as ex:  # only with --strict
            raise ValueError(f'{ex} (--strict turns warnings into errors)') from ex
    print(format_comparison(table))
    if not args.dataset:
        print('NOTE: synthetic data; run with --dataset for real numbers.')
    if args.out:
        from ._atomic import atomic_write
        # a fresh temporary renamed over the path: a link there is replaced, never followed into a user's file
        atomic_write(args.out, table[['name', 'nDCG@10', 'R@100']].to_csv(index=False))
        print(f'wrote {args.out}')
    if args.json:
        from ._compare import save_comparison
        import shlex
        save_comparison(table, args.json, command=shlex.join(['python', '-m', 'pyterrier_garen', *args.argv]))
        print(f'wrote {args.json}')


def _cmd_tiny_model(args) -> None:
    from ._tiny_model import build_tiny_model
    texts = None
    if args.dataset:
        texts = [' '.join(filter(None, (d.get('title'), d.get('text'))))
                 for d in _dataset(args.dataset).get_corpus_iter(verbose=False)]
    path = build_tiny_model(args.out, scripted=args.scripted, script=args.script, texts=texts, seed=args.seed)
    print(f'tiny model: {path}')


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows every option's default (or that it is required) and keeps the descriptions' line breaks."""

    def _get_help_string(self, action):
        text = action.help or ''
        if not action.option_strings or action.default is argparse.SUPPRESS or 'default' in text:
            return text
        if action.required:
            return f'{text} (required)'
        default = action.default
        if isinstance(default, bool):
            default = 'on' if default else 'off'
        elif isinstance(default, (list, tuple)):
            default = ' '.join(map(str, default))
        return f'{text} (default: {default})'


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m pyterrier_garen`` (every option has help and shows its default)."""
    from . import _registry
    from ._compare import NAVIGATORS, SYSTEMS, add_fusion_arguments
    parser = argparse.ArgumentParser(prog='python -m pyterrier_garen', formatter_class=_HelpFormatter,
                                     description='GAREN: the main job (compare) and the offline jobs that build '
                                                 'vectors, corpus graphs, groups and summaries.')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    data_help = 'a collection folder (docs.jsonl, queries.tsv, qrels.txt), a name under $GAREN_DATA, or irds:<id>'

    def add(name, help, description=None):
        return sub.add_parser(name, help=help, description=description or help, formatter_class=_HelpFormatter)

    p = add('compare', 'GAREN and its baselines side by side in one pt.Experiment (the main job)',
            'Run BM25, Rerank, GAR, SlideGAR, RGS, GAREN and its ablations with the CPU components (MiniLM reranker\n'
            'over stored vectors, extractive summaries) in one pt.Experiment and print what ran, the table and a\n'
            'legend. Offline artifacts are built once under $GAREN_CACHE (default ~/.cache/pyterrier-garen) and\n'
            'reused. Without --dataset it runs on a small synthetic collection (seconds; not a benchmark).')
    p.add_argument('--dataset', help=data_help + ' (default: the synthetic collection)')
    p.add_argument('--budget', type=int, default=100, help='documents reranked per query (c); at least the window '
                                                           'of 20, or the adaptive methods only re-rank')
    p.add_argument('--queries', type=_at_least(1, 'a number of queries >= 1'),
                   help='evaluate on the first N queries only (default: all)')
    p.add_argument('--navigator', default='centroid', choices=NAVIGATORS,
                   help="GAREN's navigator: " + '; '.join(f'{name}: {_registry.navigator(name).text}'
                                                          for name in NAVIGATORS))
    p.add_argument('--reranker', default='minilm',
                   help='the reranker of every system: minilm (cosine over stored vectors), '
                        'cross-encoder:NAME_OR_FOLDER (a sentence-transformers CrossEncoder over the text) or '
                        'factory:package.module:function (function(prepared) returns a pt.Transformer; one that '
                        'declares listwise = True, as ListwiseReranker and analysis.ListwiseView do, gets the '
                        'window-position merge and the header says so)')
    p.add_argument('--systems', nargs='+', default=SYSTEMS, choices=SYSTEMS, metavar='SYSTEM',
                   help=f'systems to run, from: {" ".join(SYSTEMS)} (default: all of them)')
    labels = p.add_mutually_exclusive_group()
    labels.add_argument('--binary', action='store_const', const=True, dest='binary',
                        help='score binary relevance (label>0 -> 1) (default: as the collection declares, else '
                             'graded)')
    labels.add_argument('--graded', action='store_const', const=False, dest='binary',
                        help='score the labels as graded gains (default: as the collection declares, else graded)')
    p.add_argument('--workdir', help='folder for the offline artifacts (default: '
                                     '$GAREN_CACHE/<collection>-<fingerprint>)')
    p.add_argument('--out', help='also write the table (name, nDCG@10, R@100) as CSV to this file')
    p.add_argument('--json', metavar='PATH', help='also write the whole table, what ran, the command and the date '
                                                  'as JSON (what docs/regen.py renders into the README)')
    p.add_argument('--quiet', action='store_true', help='no progress bars')
    add_fusion_arguments(p)
    p.add_argument('--final-order', choices=['auto', 'paper', 'score', 'dropped'],
                   help="every window search's final_order (default: each search's own default)")
    p.add_argument('--strict', action='store_true', help='turn warnings (e.g. a budget that leaves a search no '
                                                         'adaptive step, or at least the collection size) into errors')
    p.set_defaults(func=_cmd_compare)

    encoder_help = ('the dense encoder: minilm (the packaged all-MiniLM-L6-v2), sbert:MODEL (a sentence-transformers '
                    'folder or name), hf:MODEL (a transformers model, [CLS] vector) or package.module:factory')
    p = add('encode', 'encode a corpus into a FlexIndex (resumable: rerun after an interruption)')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--out', required=True, help='FlexIndex folder')
    p.add_argument('--encoder', default='minilm', help=encoder_help)
    _add_ray_args(p)
    p.set_defaults(func=_cmd_encode)

    p = add('build-graph', 'build a k-NN corpus graph (np_topk format)')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--kind', choices=['dense', 'bm25'], default='dense',
                   help='dense: exact cosine over MiniLM vectors; bm25: each document as a PISA BM25 query')
    p.add_argument('--vectors', help='FlexIndex folder for --kind dense, built when missing; the graph is stored '
                                     'inside it (default: none; required with dense)')
    p.add_argument('--out', help='graph folder for --kind bm25 (default: none; required with bm25)')
    p.add_argument('--k', type=int, default=16, help='neighbours per document')
    p.set_defaults(func=_cmd_build_graph)

    p = add('build-groups', 'partition a corpus graph into groups with Leiden')
    p.add_argument('--graph', required=True, help='a pyterrier-adaptive corpus graph folder')
    p.add_argument('--out', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--max-group-size', type=int, default=20, help='re-partition groups larger than this')
    p.add_argument('--resolution', type=float, default=1.0, help='modularity resolution of Leiden')
    p.add_argument('--randomness', type=float, default=0.001, help='Leiden randomness (theta)')
    p.add_argument('--seed', type=int, default=42, help='random seed (the same seed gives identical files)')
    p.add_argument('--backend', choices=['igraph', 'leidenalg'], default='igraph',
                   help="igraph's community_leiden (fast) or the leidenalg reference implementation")
    p.add_argument('--overwrite', action='store_true', help='rebuild when --out holds groups built otherwise')
    p.set_defaults(func=_cmd_build_groups)

    p = add('summarize', 'summarise every group (resumable: rerun after an interruption)')
    p.add_argument('--groups', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--summarizer', choices=['extractive', 'llm'], default='extractive',
                   help='extractive key terms and sentences (CPU), or an LLM (needs --model)')
    p.add_argument('--model', help='model name for --summarizer llm (default: none; required with llm)')
    p.add_argument('--base-url', help='OpenAI-compatible server URL for --summarizer llm (default: in-process vLLM)')
    p.add_argument('--batch-size', type=int, default=32, help='groups per summariser call')
    p.add_argument('--max-failed-share', type=_share, default=0.1, metavar='SHARE',
                   help='the largest share (0 to 1) of the groups whose engine request may fail (each gets a marked '
                        'extractive summary, retried by the next run); above it the run stops with exit status 1')
    p.add_argument('--timeout', type=float, default=None,
                   help='seconds an OpenAI-compatible request may take in all (with --base-url; default: 60)')
    p.add_argument('--max-retries', type=int, default=None,
                   help='retries of a failed request (with --base-url; default: 3)')
    p.add_argument('--max-tokens', type=_at_least(1, 'a number of tokens >= 1'),
                   help='most tokens the model writes per summary (default: 2048, as LLMSummarizer)')
    p.add_argument('--max-doc-tokens', type=_at_least(1, 'a number of tokens >= 1'),
                   help="most tokens of each document in a group's prompt (default: 512, as LLMSummarizer)")
    p.add_argument('--max-model-len', type=_at_least(1, 'a number of tokens >= 1'),
                   help="the context of the in-process vLLM engine, prompt and summary together (default: the "
                        "model's own; a server's is set by vllm serve --max-model-len)")
    p.add_argument('--dtype', choices=['auto', 'float16', 'bfloat16', 'float32'], default=None,
                   help="the in-process vLLM engine's weights and activations (default: vLLM's auto; float16 on a "
                        'GPU without bfloat16, e.g. a T4 or V100)')
    p.add_argument('--enforce-eager', action='store_const', const=True, default=None,
                   help='the in-process vLLM engine runs without CUDA graphs (starts sooner, less memory)')
    p.add_argument('--gpu-memory-utilization', type=_positive_share, default=None, metavar='SHARE',
                   help="share (0 to 1) of each GPU's memory the in-process vLLM engine may take (default: vLLM's "
                        '0.9)')
    p.add_argument('--tensor-parallel-size', type=_at_least(1, 'a number of GPUs >= 1'), default=None,
                   help='GPUs the in-process vLLM engine splits the model over (default: 1)')
    p.add_argument('--overwrite', action='store_true',
                   help="replace existing summaries: another summariser's, or this one's from the start (the same "
                        'command rerun after an interruption resumes; an unfinished run of another summariser is set '
                        'aside, never discarded)')
    _add_ray_args(p)
    p.set_defaults(func=_cmd_summarize)

    p = add('prepare', 'all offline steps for a collection (BM25 index, vectors, graph, groups, summaries)')
    p.add_argument('--dataset', required=True, help=data_help)
    p.add_argument('--workdir', help='output folder (default: $GAREN_CACHE/<collection>-<fingerprint>, <fingerprint> '
                                                    'being 12 hex digits of the collection\'s content hash)')
    p.add_argument('--graph', choices=['dense', 'bm25'], default='dense',
                   help='the k-NN graph the groups are built from: MiniLM cosine or PISA BM25')
    p.add_argument('--k', type=int, default=None,
                   help='neighbours per document (default: 16, or every other document of a smaller collection)')
    p.add_argument('--max-group-size', type=int, default=20, help='re-partition groups larger than this')
    p.add_argument('--seed', type=int, default=42, help='Leiden seed')
    p.add_argument('--encoder', default='minilm', help=encoder_help)
    p.set_defaults(func=_cmd_prepare)

    p = add('show', 'print group statistics and some groups with their summaries')
    p.add_argument('--groups', required=True, help='GroupCorpusGraph folder')
    p.add_argument('--group', type=int, action='append', help='a group id to show (repeatable; default: the first '
                                                              '--limit groups)')
    p.add_argument('--limit', type=_at_least(0, 'a number of groups >= 0'), default=5,
                   help='how many groups to show without --group')
    p.add_argument('--validate', action='store_true', help='check the whole artifact first (partition, docnos, '
                                                           'fingerprint, summaries)')
    p.set_defaults(func=_cmd_show)

    p = add('tiny-model', 'build a tiny random (or scripted) Qwen3 model to try the LLM path offline')
    p.add_argument('--out', required=True, help='model folder (new or empty, or a previous tiny model)')
    p.add_argument('--scripted', action='store_true', help='greedy decoding writes --script whatever the prompt')
    p.add_argument('--script', default='[2] > [1]', help='the scripted answer (distinct " > "-separated parts)')
    p.add_argument('--dataset', help='train the tokenizer on this collection\'s documents (' + data_help + ') '
                                     '(default: the package prompts plus generated text)')
    p.add_argument('--seed', type=int, default=0, help='random seed of the weights')
    p.set_defaults(func=_cmd_tiny_model)
    return parser


def main(argv: Optional[List[str]] = None) -> None:
    from ._errors import run_command
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    parser.set_defaults(argv=argv)  # the command line as typed (recorded by compare --json)
    run_command(parser, argv, _run)  # user errors: one line 'error: ...', exit status 2


#: options that name a file or folder (or a collection): an empty value is refused, not read as the current folder
PATH_OPTIONS = ('dataset', 'workdir', 'out', 'json', 'groups', 'vectors', 'graph')


def _run(args: argparse.Namespace) -> None:
    """Run the chosen command, after refusing an empty path option: ``--workdir "$UNSET"`` would otherwise put the
    artifacts among the files of the current folder (``Path('')`` is ``.``)."""
    empty = [name for name in PATH_OPTIONS if getattr(args, name, None) == '']
    if empty:
        raise UsageError(f'--{empty[0]} is empty (an unset shell variable?); give a path, or leave the option out '
                         'for its default')
    args.func(args)


if __name__ == '__main__':
    main(sys.argv[1:])
