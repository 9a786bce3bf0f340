__version__ = '0.1.0'

# Public names are resolved lazily (PEP 562) so that ``import pyterrier_garen`` stays light: no torch,
# vLLM, igraph or leidenalg is imported until the object that needs it is used.
import importlib as _importlib

_EXPORTS = {
    # collections (datasets.py)
    'LocalDataset': '.datasets',
    'load_dataset': '.datasets',
    'remove_excluded': '.datasets',
    'RemoveExcluded': '.datasets',
    'data_dir': '.datasets',
    # corpus graphs, BM25 and encoders (_graphs.py)
    'dense_corpus_graph': '._graphs',
    'bm25_corpus_graph': '._graphs',
    'bm25_index': '._graphs',
    'minilm_encoder': '._encoding',
    'encode_corpus': '._graphs',
    'load_encoder': '._encoding',  # 'minilm', 'sbert:FOLDER', 'hf:FOLDER', 'package.module:factory'
    'load_corpus_graph': '._graphs',
    'hnsw_corpus_graph': '._ann',  # approximate (FAISS HNSW) dense graph for large corpora
    # groups: partition, artifact, builder, summaries (_partition.py, _group_graph.py, _summaries.py)
    'leiden_partition': '._partition',
    'GroupCorpusGraph': '._group_graph',
    'ArtifactError': '._group_graph',
    'load_package': '._sharing',  # a package file (build_package) or unpacked folder, loaded offline
    'Summarizer': '._summaries',
    'ExtractiveSummarizer': '._summaries',
    # the offline pipeline and the main job (_prepare.py, _compare.py)
    'prepare': '._prepare',
    'cache_dir': '._prepare',
    'compare': '._compare',
    'cpu_components': '._compare',
    'build_systems': '._compare',
    'SYSTEMS': '._compare',
    'NAVIGATORS': '._compare',
    # the registry of systems, navigators and engine short names (_registry.py; docs/architecture.md)
    'System': '._registry',
    'Navigator': '._registry',
    'Components': '._registry',
    'register_system': '._registry',
    'register_navigator': '._registry',
    'system_names': '._registry',  # the registered systems, by their declared flags (scripts' choices)
    'evaluation_qrels': '._compare',
    'code_version': '._provenance',  # the git commit saved results record (compare --json, bench --json)
    'package_versions': '._provenance',  # the numerics packages' versions those records carry
    'write_sidecar': '._provenance',  # FILE.json beside a result file: its command, code, packages, SHA-256
    'read_sidecar': '._provenance',
    'command_line': '._provenance',
    'command_errors': '._errors',  # around a script's work: a user error as one line 'error: ...', exit status 2
    'check_outputs': '._errors',  # before a script's work: its output files can be written, none over an input
    'collection_fingerprint': '._prepare',  # the SHA-256 of a collection's content (what a result was measured on)
    'corpus_fingerprint': '._prepare',  # the SHA-256 of its documents, which names its workdir
    'format_comparison': '._compare',
    # online search (_garen.py, _baselines.py)
    'GAREN': '._garen',
    'Strategy': '._garen',
    'SlidingWindowReranker': '._baselines',
    'SlideGAR': '._baselines',
    'RGS': '._baselines',
    'DocGAREN': '._baselines',
    'FirstStageFusion': '._fusion',  # fusion with the first stage as a stage of its own (_fusion.py)
    'HeadReranker': '._head',  # one more reranker call over the top of any ranking (_head.py)
    # navigators and rerankers (_navigators.py, _rerankers.py)
    'VoteNavigator': '._navigators',
    'CentroidNavigator': '._navigators',
    'SummaryNavigator': '._navigators',
    'YesNoScorer': '._navigators',
    'VectorScorer': '._rerankers',
    'ListwiseReranker': '._rerankers',
    'parse_ranking': '._rerankers',
    'check_ranking': '._rerankers',  # parse_ranking's result and what was repaired in the answer (docs/llm.md)
    'CrossEncoderScorer': '._text_rerankers',  # any text reranker inside GAREN (_text_rerankers.py)
    'with_text': '._text_rerankers',
    # LLM engines and the LLM summariser (_llm.py, _llm_summarizer.py)
    'Engine': '._engines',
    'VLLMEngine': '._engines',
    'OpenAIEngine': '._engines',
    'TransformersEngine': '._engines',
    'AccessRefused': '._engines',  # a refused API key (HTTP 401/403): the run stops, never a fallback
    'AnswerTokenError': '._engines',  # a yes/no answer word that is not one token of the model: the run stops
    'EngineStopped': '._engines',  # an AccessRefused: the in-process vLLM engine was closed or its process died
    'EngineStartError': '._engines',  # vLLM's engine processes did not start (its log says why)
    'build_tiny_model': '._tiny_model',
    'LLMSummarizer': '._llm_summarizer',
    # offline jobs on Ray (_ray.py; ray itself is imported only when a job runs)
    'RayOptions': '._ray',
    'EngineSpec': '._ray',
    'SummarizerSpec': '._ray',
    'summarize_batches': '._ray',
    'encode_docs': '._ray',
    'native_bf16': '._encoding',  # whether encoding's precision='auto' takes bfloat16 here
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
