__version__ = '0.1.0'

# Public names are resolved lazily (PEP 562) so that ``import pyterrier_garen`` stays light: no torch,
# vLLM, igraph or leidenalg is imported until the object that needs it is used.
import importlib as _importlib

_EXPORTS = {
    # collections (datasets.py)
    'LocalDataset': '.datasets',
    'remove_excluded': '.datasets',
    'RemoveExcluded': '.datasets',
    'data_dir': '.datasets',
    # corpus graphs and encoders (_graphs.py)
    'dense_corpus_graph': '._graphs',
    'bm25_corpus_graph': '._graphs',
    'minilm_encoder': '._graphs',
    'encode_corpus': '._graphs',
    # groups (_partition.py, _group_graph.py, _summaries.py)
    'leiden_partition': '._partition',
    'GroupCorpusGraph': '._group_graph',
    'ExtractiveSummarizer': '._summaries',
    'ArtifactError': '._group_graph',
    'prepare': '._prepare',
    'load_corpus_graph': '._graphs',
    'write_docnos': '._graphs',
    'check_docnos': '._graphs',
    'Summarizer': '._summaries',
    # online (_garen.py, _navigators.py, _baselines.py, _cpu.py)
    'GAREN': '._garen',
    'VoteNavigator': '._navigators',
    'CentroidNavigator': '._cpu',
    'SummaryNavigator': '._cpu',
    'SlidingWindowReranker': '._baselines',
    'SlideGAR': '._baselines',
    'RGS': '._baselines',
    'DocGAREN': '._baselines',
    'VectorScorer': '._cpu',
    # LLM components (_llm.py, _rerankers.py, _llm_summarizer.py)
    'VLLMEngine': '._llm',
    'OpenAIEngine': '._llm',
    'ListwiseReranker': '._rerankers',
    'YesNoScorer': '._rerankers',
    'parse_ranking': '._rerankers',
    'LLMSummarizer': '._llm_summarizer',
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
