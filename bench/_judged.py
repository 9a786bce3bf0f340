"""What the bench scripts that score the comparison's systems on a shared collection start from, and how they score
a run (``ir_measures`` over the evaluation qrels)."""
import ir_measures
import pandas as pd

import pyterrier_garen as garen
from pyterrier_garen import LocalDataset, analysis, data_dir


def judged_collection(name: str):
    """``(dataset, prepared, qrels, topics, judged)`` of a collection under ``$GAREN_DATA``: its artifacts (built once
    in the workdir ``prepare`` uses), the evaluation qrels, the queries with a relevant label (what every sweep
    evaluates) and the qrels with ``ir_measures``' column names."""
    dataset = LocalDataset(data_dir(name))
    prepared = garen.prepare(dataset)
    qrels = garen.evaluation_qrels(dataset)
    topics = analysis.judged_topics(dataset, qrels)
    judged = qrels.rename(columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'})
    return dataset, prepared, qrels, topics, judged


def score(run, judged, measures):
    """``{measure: mean}`` of a PyTerrier result frame."""
    return ir_measures.calc_aggregate(measures, judged, run.rename(columns={'qid': 'query_id', 'docno': 'doc_id'}))


def measure_each(names, measure, *args):
    """``measure(name, *args)`` for every collection of ``names``, one table; a missing collection fails (with the
    fix, as a command's error) before anything is built for any of them."""
    with garen.command_errors():
        for name in names:
            LocalDataset(data_dir(name))
        return pd.concat([measure(name, *args) for name in names], ignore_index=True)
