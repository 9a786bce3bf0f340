"""A small deterministic synthetic collection, for running the whole pipeline offline in seconds.

It is NOT a benchmark: numbers measured on it only show that the pipeline runs end to end. Each topic has a
"query vocabulary" and a "hidden vocabulary" of related words. Relevant documents of a query are written partly
in the query's words (BM25 finds them) and partly in the hidden words with only one shared anchor term (BM25
ranks them low; they are reachable through the corpus graph), mixed with distractor documents of other topics.

Tiny random models to go with it (no download): :func:`tiny_sbert` (a sentence-transformers bi-encoder folder, for
``pyterrier_dr.SBertBiEncoder``), :func:`tiny_bert` (a transformers folder) and :func:`tiny_cross_encoder` (for
:class:`~pyterrier_garen.CrossEncoderScorer`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Union

import numpy as np

from ._params import check_int, check_number, check_positive
from ._tiny_encoders import tiny_bert, tiny_cross_encoder, tiny_sbert
from .datasets import LocalDataset

__all__ = ['make_synthetic', 'planted_knn_graph', 'tiny_bert', 'tiny_sbert', 'tiny_cross_encoder']

# (query words, hidden related words) per topic; plain English so that a sentence encoder can relate them
_TOPICS = [
    ('ocean tide coast wave beach', 'sea shore surf harbour marine'),
    ('volcano lava eruption magma crater', 'ash basalt pyroclastic vent tephra'),
    ('heart artery blood pressure cardiac', 'vein pulse circulation cholesterol stroke'),
    ('neuron brain synapse memory cortex', 'neural cognition dendrite learning hippocampus'),
    ('bacteria infection antibiotic resistance pathogen', 'microbe germ penicillin virulence sepsis'),
    ('planet orbit star telescope galaxy', 'astronomy comet nebula cosmos asteroid'),
    ('wing lift airfoil flight aircraft', 'aerodynamic drag plane propeller glider'),
    ('battery lithium charge electrode voltage', 'cell anode cathode energy storage'),
    ('forest tree timber logging canopy', 'woodland oak pine deforestation lumber'),
    ('river flood dam rainfall basin', 'stream water levee runoff watershed'),
    ('protein enzyme amino folding molecule', 'peptide catalyst substrate structure biochemistry'),
    ('soil crop harvest farmer irrigation', 'agriculture wheat fertiliser yield tillage'),
    ('compiler code program software language', 'syntax parser bytecode debugging runtime'),
    ('market price inflation demand economy', 'trade currency recession supply finance'),
    ('vaccine immune antibody virus dose', 'immunity antigen booster pandemic inoculation'),
    ('glacier ice snow melt climate', 'frozen arctic permafrost warming iceberg'),
]
_FILLER = ('study report analysis new results effect data method observed measured model case review '
           'evidence approach large small high low early recent common').split()


def make_synthetic(path: Union[str, Path], *, docs_per_topic: int = 40, queries_per_topic: int = 3,
                   seed: int = 0) -> LocalDataset:
    """Write the synthetic collection into ``path`` (``docs.jsonl``, ``queries.tsv``, ``qrels.txt``).

    Deterministic for a given seed; rewriting an existing folder with the same arguments gives the same files.

    Args:
        path: output folder.
        docs_per_topic: documents per topic (16 topics).
        queries_per_topic: queries per topic.
        seed: random seed.

    Returns:
        A :class:`LocalDataset` over the folder.
    """
    rng = np.random.default_rng(seed)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    docs, queries, qrels = [], [], []
    for t, (qwords, hwords) in enumerate(_TOPICS):
        qwords, hwords = qwords.split(), hwords.split()
        topic_docs = []
        for i in range(docs_per_topic):
            docno = f't{t:02d}d{i:03d}'
            hidden = i % 2 == 1  # every second document speaks the hidden vocabulary
            vocab = hwords if hidden else qwords
            words = list(rng.choice(vocab, size=4)) + list(rng.choice(_FILLER, size=6))
            if hidden and i % 4 == 1:
                words.append(qwords[i % len(qwords)])  # some hidden documents share one anchor term with queries
            # words of two other topics' query vocabularies make the lexical signal noisy
            for _ in range(2):
                other = _TOPICS[int(rng.integers(len(_TOPICS)))][0].split()
                words += list(rng.choice(other, size=2))
            rng.shuffle(words)
            docs.append({'docno': docno, 'text': ' '.join(words) + '.'})
            topic_docs.append((docno, hidden))
        for j in range(queries_per_topic):
            qid = f'{t * queries_per_topic + j + 1}'
            words = list(rng.choice(qwords, size=3, replace=False))
            queries.append((qid, ' '.join(words)))
            # relevant: every document of the topic, in either vocabulary
            qrels.extend((qid, docno, 1) for docno, _ in topic_docs)
    with (path / 'docs.jsonl').open('wt') as fout:
        for doc in docs:
            fout.write(json.dumps(doc) + '\n')
    with (path / 'queries.tsv').open('wt') as fout:
        fout.writelines(f'{qid}\t{query}\n' for qid, query in queries)
    with (path / 'qrels.txt').open('wt') as fout:
        fout.writelines(f'{qid} 0 {docno} {rel}\n' for qid, docno, rel in qrels)
    (path / 'README.md').write_text('SYNTHETIC collection generated by pyterrier_garen.synthetic.make_synthetic; '
                                    'it only shows that the pipeline runs, it is not a benchmark.\n')
    return LocalDataset(path)


def planted_knn_graph(num_docs: int, *, k: int = 16, topic_size: float = 200., subtopic_size: float = 15.,
                      p_subtopic: float = 0.6, p_topic: float = 0.3, seed: int = 0) -> tuple:
    """A synthetic k-NN graph with planted two-level community structure, for scale benchmarks of group building.

    Documents fall into topics (sizes drawn around ``topic_size``), each topic into subtopics (around
    ``subtopic_size``). Every document links to ``k`` others: a share ``p_subtopic`` of its edges goes to its own
    subtopic, ``p_topic`` to the rest of its topic and the remainder to documents anywhere, with similarities
    decreasing in that order (plus noise). Leiden therefore first finds topics larger than the usual group limit
    (20) and has real re-partitioning work to do, as on real embedding graphs. Rows are sorted by decreasing
    weight, as in ``np_topk`` graphs. Built with NumPy only, in time linear in ``num_docs * k``.

    Args:
        num_docs: number of documents.
        k: neighbours per document.
        topic_size: mean topic size (sizes are log-normal around it).
        subtopic_size: mean subtopic size.
        p_subtopic: probability that an edge stays inside the document's subtopic.
        p_topic: probability that an edge goes elsewhere inside its topic.
        seed: random seed.

    Returns:
        ``(edges, weights, topics, subtopics)``: ``(n, k)`` ``int64`` neighbour ids, ``(n, k)`` ``float32``
        similarities, and the planted topic and subtopic of every document.
    """
    check_int('num_docs', num_docs, low=2)
    check_positive(k=k)
    check_number('p_subtopic', p_subtopic, low=0, high=1)
    check_number('p_topic', p_topic, low=0, high=1)
    if p_subtopic + p_topic > 1:
        raise ValueError(f'p_subtopic={p_subtopic} and p_topic={p_topic} must be >= 0 and sum to at most 1')
    rng = np.random.default_rng(seed)

    def blocks(total: int, mean: float) -> np.ndarray:
        sizes = np.maximum(1, rng.lognormal(np.log(mean) - 0.125, 0.5, size=int(total / mean) + 10).astype(np.int64))
        ends = np.cumsum(sizes)
        cut = int(np.searchsorted(ends, total))
        sizes = sizes[:cut + 1]
        sizes[-1] -= int(sizes.sum()) - total
        return np.repeat(np.arange(len(sizes)), sizes)

    topics = blocks(num_docs, topic_size)
    # subtopics nest inside topics: split each topic's consecutive range into runs of about subtopic_size
    sub_raw = blocks(num_docs, subtopic_size)
    topic_change = np.concatenate([[0], (np.diff(topics) != 0).astype(np.int64)])
    sub_change = np.concatenate([[0], (np.diff(sub_raw) != 0).astype(np.int64)])
    subtopics = np.cumsum(np.maximum(topic_change, sub_change))

    def block_bounds(labels: np.ndarray) -> tuple:
        starts = np.concatenate([[0], np.nonzero(np.diff(labels))[0] + 1])
        sizes = np.diff(np.concatenate([starts, [len(labels)]]))
        return starts[labels], sizes[labels]

    t_start, t_size = block_bounds(topics)
    s_start, s_size = block_bounds(subtopics)
    n = num_docs
    kind = rng.random((n, k))
    kind = np.where(kind < p_subtopic, 0, np.where(kind < p_subtopic + p_topic, 1, 2))
    u = rng.random((n, k))
    in_sub = s_start[:, None] + (u * s_size[:, None]).astype(np.int64)
    in_topic = t_start[:, None] + (u * t_size[:, None]).astype(np.int64)
    anywhere = (u * n).astype(np.int64)
    edges = np.choose(kind, [in_sub, in_topic, anywhere])
    # no self-loops: move a self edge to the next document (wrapping around)
    self_edge = edges == np.arange(n)[:, None]
    edges[self_edge] = (edges[self_edge] + 1) % n
    base = np.array([0.8, 0.6, 0.3], dtype=np.float32)[kind]
    weights = np.clip(base + rng.normal(0, 0.05, size=(n, k)).astype(np.float32), 0.01, 1.0)
    order = np.argsort(-weights, axis=1, kind='stable')
    edges = np.take_along_axis(edges, order, axis=1)
    weights = np.take_along_axis(weights, order, axis=1).astype(np.float32)
    return edges, weights, topics, subtopics
