"""Write notebooks/analysis.ipynb and execute it in place (outputs and plots embedded).

    python notebooks/build.py              # Cranfield (about 3 minutes on 2 cores, artifacts cached)

The notebook uses public names only and must hold no ANSI escapes or machine paths (tests/test_notebook.py).
    python notebooks/build.py --dataset scifact
"""
import argparse
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CELLS = [
    ('md', """# GAREN analysis on {dataset}

CPU components (MiniLM reranker over stored vectors, centroid navigator, extractive summaries). The analysis and
plotting code lives in `pyterrier_garen.analysis`; this notebook only calls it. Regenerate with
`python notebooks/build.py --dataset {dataset}`."""),
    ('code', """import os
import warnings
os.environ.setdefault('HF_HUB_OFFLINE', '1')
# tqdm's notebook bars need ipywidgets; without it tqdm warns on import (this notebook shows no progress bars)
warnings.filterwarnings('ignore', message='IProgress not found')
import matplotlib.pyplot as plt
import pandas as pd
import pyterrier_garen as garen
from pyterrier_garen import analysis

dataset = garen.load_dataset('{dataset}')
prepared = garen.prepare(dataset)  # built once under $GAREN_CACHE (default ~/.cache/pyterrier-garen), then reused
reranker, navigator = garen.cpu_components(prepared)
topics, qrels = dataset.get_topics(), garen.evaluation_qrels(dataset)
print(qrels.attrs['labels'])
bm25 = prepared.bm25_index.bm25(num_results=1000)
first = bm25(topics)
prepared.groups.group_stats()"""),
    ('md', """## nDCG@10 and R@100 against the reranking budget

Each budget is one `pt.Experiment` over the same first stage; GAREN's number of iterations grows with the budget
(`T = 1 + ceil((c - w) / (w - h))`). R@100 counts the top 100 of each output, so above a budget of 100 it also
measures how each method orders what it observed (SlideGAR puts the most recently dropped documents first, as its
reference code does)."""),
    ('code', """systems = ['GAR', 'SlideGAR', 'RGS', 'GAREN']
budgets = [40, 60, 100, 150, 200]
by_budget = {{b: garen.build_systems(prepared, reranker, navigator, budget=b, systems=systems) for b in budgets}}
curve = analysis.budget_curve(by_budget, topics, qrels)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
analysis.plot_budget_curve(curve, 'nDCG@10', ax=axes[0])
analysis.plot_budget_curve(curve, 'R@100', ax=axes[1])
plt.tight_layout()
curve.pivot(index='budget', columns='name', values='nDCG@10').round(4)"""),
    ('md', """## Recall of relevant documents by hop distance (paper Figures 4, 8, 9)

Distance of every relevant document from the BM25 top 20, on the document k-NN graph and on the group graph (groups
linked when an edge joins their members); bars show the share each method holds in its top 100. Hop 7 means
farther than 6 hops or unreachable."""),
    ('code', """garen_run = garen.GAREN(reranker, prepared.groups, navigator, trace=True)
runs = {{
    'BM25': first[first['rank'] < 100],
    'GAR': prepared.groups.gar(reranker, num_results=100, batch_size=16)(first),
    'GAREN': garen_run(first),
    'GAREN-doc': garen.DocGAREN(reranker, prepared.groups, reranker)(first),
}}
hops = analysis.gold_hops(prepared.groups, first, qrels)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
doc_table = analysis.recall_by_hop(hops, runs, hop_column='doc_hop')
group_table = analysis.recall_by_hop(hops, runs, hop_column='group_hop')
analysis.plot_recall_by_hop(doc_table, 'document graph', ax=axes[0])
analysis.plot_recall_by_hop(group_table, 'group graph', ax=axes[1])
plt.tight_layout()
print('relevant documents per hop, document graph:', hops.doc_hop.value_counts().sort_index().to_dict())
print('relevant documents per hop, group graph:   ', hops.group_hop.value_counts().sort_index().to_dict())"""),
    ('md', """## How often the gold groups were scored and selected (Appendix C.3)

For each query: the groups holding its relevant documents, how many of them the navigator scored at some iteration,
and how many GAREN expanded."""),
    ('code', """diag = analysis.gold_group_diagnostics(garen_run.last_trace, prepared.groups, qrels)
diag = diag[diag.gold_groups > 0]
summary = pd.Series({{
    'queries': len(diag),
    'gold groups per query': diag.gold_groups.mean(),
    'share of gold groups scored': diag.scored.sum() / diag.gold_groups.sum(),
    'share of gold groups selected': diag.selected.sum() / diag.gold_groups.sum(),
    'queries with no gold group selected': (diag.selected == 0).mean(),
}}).round(3)
fig, ax = plt.subplots(figsize=(5, 3))
(diag.selected / diag.gold_groups).plot.hist(bins=10, ax=ax)
ax.set_xlabel('share of a query\\'s gold groups that GAREN expanded')
summary"""),
    ('code', """stats = garen_run.last_stats[['docs_reranked', 'groups_scored', 'reranker_calls', 'navigator_calls']]
stats.describe().round(1)"""),
    ('md', """## Reranker strength as an experimental variable

`analysis.SimulatedReranker` is an *analysis instrument*, not a retrieval model: it scores a document by its
relevance label plus a fixed Gaussian draw of standard deviation sigma (the same document always gets the same
score), so the reranker's strength becomes a knob. Every system takes the same BM25 top 1000 and budget; GAREN keeps
the real MiniLM centroid navigator. One noise seed and one partition here (the full sweep over seeds is
`examples/strength_sweep.py`, results in docs/results.md)."""),
    ('code', """seed = prepared.groups.meta['partition']['seed']
sweep, sweep_perquery = analysis.strength_sweep(
    prepared, sigmas=(0.25, 0.5, 1.0, 2.0), noise_seeds=(0,), partition_seeds=(seed,),
    systems=['Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+'])
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
analysis.plot_strength_sweep(sweep, 'nDCG@10', ax=axes[0])
analysis.plot_strength_sweep(sweep, 'R@100', ax=axes[1])
plt.tight_layout()
pd.concat({{m: analysis.sweep_summary(sweep, m) for m in ('nDCG@10', 'R@100')}}, axis=1)"""),
    ('md', """## Where GAREN loses relevant documents, by reranker strength (Appendix C.3)

For each relevant document: was its group ever a candidate, scored by the navigator, selected for expansion, and
was the document observed? `stage` names the furthest step reached (`observed`, or what failed after it).
`navigator_quality` gives, per query, the probability that the navigator scored a gold group above a scored
non-gold group (AUC) and the rank of the best gold group."""),
    ('code', """rerankers = {{'sigma=0.25': analysis.SimulatedReranker(qrels, noise=0.25),
             'sigma=1': analysis.SimulatedReranker(qrels, noise=1.0), 'MiniLM': reranker}}
stages, quality = {{}}, {{}}
for label, model in rerankers.items():
    traced = garen.GAREN(model, prepared.groups, navigator, trace=True)
    traced(first)
    status = analysis.gold_group_status(traced.last_trace, prepared.groups, qrels)
    stages[label] = status.stage.value_counts(normalize=True)
    q = analysis.navigator_quality(traced.last_trace, prepared.groups, qrels)
    quality[label] = q[['auc', 'best_gold_rank']].mean()
print('share of relevant documents by stage')
display(pd.DataFrame(stages).reindex(list(analysis.GOLD_STAGES)).fillna(0).round(3))
pd.DataFrame(quality).round(3)"""),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', default='cranfield')
    parser.add_argument('--out', default=str(Path(__file__).with_name('analysis.ipynb')))
    parser.add_argument('--no-execute', action='store_true')
    args = parser.parse_args()
    nb = nbformat.v4.new_notebook()
    for kind, text in CELLS:
        text = text.format(dataset=args.dataset)
        nb.cells.append(nbformat.v4.new_markdown_cell(text) if kind == 'md' else nbformat.v4.new_code_cell(text))
    nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}
    if not args.no_execute:
        NotebookClient(nb, timeout=1800, kernel_name='python3',
                       resources={'metadata': {'path': str(Path(args.out).parent)}}).execute()
    nbformat.write(nb, args.out)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
