"""Stand-ins for an encoder and a FlexIndex with vectors from fixed tables, for tests of the embedding components."""
import numpy as np


class TableEncoder:
    """Vectors from fixed tables (``docs`` defaults to ``queries``); counts every document text it encodes."""

    def __init__(self, queries, docs=None):
        self.queries, self.docs, self.encoded = queries, queries if docs is None else docs, []

    def encode_queries(self, texts):
        return np.array([self.queries[t] for t in texts], dtype=np.float32)

    def encode_docs(self, texts):
        self.encoded.extend(texts)
        return np.array([self.docs[t] for t in texts], dtype=np.float32)


class TableVectors:
    """The part of a FlexIndex the vector components read (``payload()`` -> lookup, vectors, meta), holding
    ``{docno: vector}`` with the docnos written to ``path``."""

    def __init__(self, path, table):
        from npids import Lookup

        from pyterrier_garen._graphs import write_docnos
        write_docnos(list(table), path)
        self.lookup, self.vecs = Lookup(str(path)), np.array(list(table.values()), dtype=np.float32)

    def payload(self, **kwargs):
        return self.lookup, self.vecs, {}

    def __repr__(self):
        return 'TableVectors()'
