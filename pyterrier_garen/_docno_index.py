"""One docno -> internal id in a few microseconds, straight from an ``npids`` lookup's memory-mapped tables.

``npids`` answers a single docno through its vectorised path (numpy string arrays, a byte-column hash loop, a
``np.char`` decode of the candidates), about 250 µs per call whatever the batch size. Online search asks for one
docno at a time (``GroupCorpusGraph.group_of``, ``neighbours(docno)``), so :class:`DocnoIndex` walks the same
tables in plain Python instead: the FNV-1 hash bucket of the docno's UTF-8 bytes, then each candidate id of the
bucket decoded by its forward codec and compared byte for byte, exactly as ``npids``' ``hash`` inverse does. The
integer inverses (``intsequence``: docnos ``prefix + number`` in a run; ``intstored``: increasing numbers) parse
the number and find it as ``npids`` does, except that a number written with a leading zero is no docno they hold
(``npids`` would answer ``'007'`` with the id of ``'7'``). Nothing is loaded: the tables stay memory mapped, and
no docno list is built.

Any other layout (an ``intsequencemulti`` inverse, which :func:`~pyterrier_garen._graphs.write_docnos` never
writes, or no inverse at all) and any docno holding a NUL byte or not encodable as UTF-8 is answered by ``npids``
itself, so every answer equals :func:`pyterrier_garen._graphs.lookup_ids`.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Callable, List, Optional, Sequence

import numpy as np

from ._graphs import lookup_ids, prints_as_itself

__all__ = ['DocnoIndex']

_FNV_BASIS, _FNV_PRIME, _MASK32 = 2166136261, 16777619, 0xFFFFFFFF
#: Up to this many docnos, :meth:`DocnoIndex.ids_of` looks them up one by one (measured by bench/group_lookup.py)
BATCH = 200


def fnv1_32(data: bytes) -> int:
    """npids' ``fnv1_32`` of one docno's bytes (NUL bytes skipped, as npids does)."""
    h = _FNV_BASIS
    for byte in data:
        if byte:
            h = ((h ^ byte) * _FNV_PRIME) & _MASK32
    return h


def _words(arr) -> memoryview:
    """A memoryview over a 1-d numeric array: indexing it gives Python ints without numpy scalars."""
    arr = np.ascontiguousarray(np.asarray(arr).view(np.ndarray))
    return memoryview(arr).cast('B').cast(arr.dtype.char)


def _decoder(block) -> Callable[[int], bytes]:
    """The docno bytes of local id ``i`` of one forward block, decoded as the block's codec does."""
    from npids import codecs
    fmt, ctxt = block.fmt, block.ctxt
    if isinstance(fmt, codecs.fwd['fixedbytes']):
        prefix = fmt.prefix or b''
        return lambda i: prefix + bytes(ctxt[i])  # numpy drops the padding NULs
    if isinstance(fmt, codecs.fwd['intstored']):
        prefix, values = fmt.prefix or '', _words(ctxt)
        return lambda i: f'{prefix}{values[i]}'.encode()
    if isinstance(fmt, codecs.fwd['intsequencepad']):
        pattern, start = f'{fmt.prefix or ""}%0{fmt.pad}d', fmt.start or 0
        return lambda i: (pattern % (i + start)).encode()
    if isinstance(fmt, codecs.fwd['intsequence']):
        prefix, start = fmt.prefix or '', fmt.start or 0
        return lambda i: f'{prefix}{i + start}'.encode()
    return lambda i: bytes(block._lookup(np.array([i], dtype=np.uint32))[0])


class DocnoIndex:
    """Fast single-docno look-ups in an open ``npids.Lookup`` (which stays the owner of the files)."""

    def __init__(self, lookup):
        from npids import codecs
        self.lookup = lookup
        self.count = len(lookup)
        inv = lookup.inv.codec if lookup.inv is not None else None
        self._one: Optional[Callable[[bytes], int]] = None
        if isinstance(inv, codecs.inv['hash']):
            self._offsets, self._dids, self._mask = _words(inv.hash_offsets), _words(inv.dids), inv.hash_mask
            fwd = lookup.fwd
            self._starts: List[int] = [int(s) for s in fwd.offsets]
            self._decoders = [_decoder(block) for block in fwd.codecs]
            self._one = self._by_hash
        elif isinstance(inv, codecs.inv['intsequence']):
            self._prefix, self._start = inv.prefix, int(inv.start or 0)
            self._one = self._by_sequence
        elif isinstance(inv, codecs.inv['intstored']):
            self._blocks = [((block.fmt.prefix or '').encode(), _words(block.ctxt), int(start))
                            for block, start in zip(lookup.fwd.codecs, lookup.fwd.offsets)]
            self._one = self._by_stored

    def _docno_bytes(self, did: int) -> bytes:
        if len(self._decoders) == 1:
            return self._decoders[0](did)
        block = bisect_right(self._starts, did) - 1
        return self._decoders[block](did - self._starts[block])

    def _by_hash(self, data: bytes) -> int:
        bucket = fnv1_32(data) & self._mask
        dids = self._dids
        for pos in range(self._offsets[bucket], self._offsets[bucket + 1]):
            did = dids[pos]
            if self._docno_bytes(did) == data:
                return did if did < self.count else -1
        return -1

    def _by_sequence(self, data: bytes) -> int:
        if not data.startswith(self._prefix):
            return -1
        digits = data[len(self._prefix):]
        if not digits or not digits.isdigit():  # npids counts an empty number as 0; leave that to npids
            return lookup_ids(self.lookup, [data.decode()])[0].item()
        if not prints_as_itself(digits):  # a run's docnos have no leading zero: '007' is not '7'
            return -1
        did = int(digits) - self._start
        return did if 0 <= did < self.count else -1

    def _by_stored(self, data: bytes) -> int:
        # npids' intstored inverse: the first block whose prefix starts the docno and whose sorted numbers hold
        # the number after it; a stored number prints without a leading zero, so '007' is not '7' (npids itself
        # ignores the zeros: lookup_ids corrects it)
        for prefix, values, start in self._blocks:
            if not data.startswith(prefix):
                continue
            digits = data[len(prefix):]
            if not digits or not digits.isdigit():
                if digits:
                    continue
                return lookup_ids(self.lookup, [data.decode()])[0].item()
            if not prints_as_itself(digits):
                continue
            number = int(digits)
            pos = bisect_left(values, number)
            if pos < len(values) and values[pos] == number:
                did = pos + start
                return did if did < self.count else -1
        return -1

    def id_of(self, docno) -> int:
        """Internal id of ``docno`` (``str()`` of it), -1 when the lookup does not hold it."""
        docno = str(docno)
        if self._one is not None:
            try:
                data = docno.encode('utf8')
            except UnicodeEncodeError:
                data = None
            if data is not None and b'\0' not in data:
                return self._one(data)
        return int(lookup_ids(self.lookup, [docno])[0])

    def ids_of(self, docnos: Sequence[str]) -> List[int]:
        """:meth:`id_of` of several docnos: one by one for a few, npids' vectorised look-up for many.

        npids costs about 250 µs per call plus about 3 µs per docno, the fast path about 4 µs per docno, so the
        fast path pays up to :data:`BATCH` docnos.
        """
        if self._one is None or len(docnos) > BATCH:
            return lookup_ids(self.lookup, [str(d) for d in docnos]).tolist()
        return [self.id_of(d) for d in docnos]
