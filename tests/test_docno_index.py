"""The single-docno fast path (``_docno_index.DocnoIndex``) answers exactly as npids' vectorised look-up does."""
import random

import numpy as np
import pytest

from pyterrier_garen import GroupCorpusGraph
from pyterrier_garen._docno_index import DocnoIndex, fnv1_32
from pyterrier_garen._graphs import lookup_ids, write_docnos

_rng = random.Random(7)
DOCNO_SETS = {
    # name: (docnos, how write_docnos / npids stores them: the fast path that must be taken)
    'prefixed ints': ([f'doc{i}' for i in range(3000)], '_by_hash'),
    'integer-like, string-sorted': ([str(i) for i in range(1, 1401)], '_by_hash'),
    'integer runs with a gap': ([str(i) for i in list(range(1, 375)) + list(range(377, 426))], '_by_hash'),
    'zero-padded': ([f'{i:05d}' for i in range(1000)], '_by_hash'),
    'hex digests': ([f'{_rng.getrandbits(32):08X}' for _ in range(500)], '_by_hash'),
    'free text and unicode': (['a', 'b10', 'c2x', 'ä', '中文', 'x' * 30] + [f'MED-{i}' for i in range(40)], '_by_hash'),
    'two forward blocks': ([str(i) for i in range(100000, 100300)] + [f'z{i:x}' for i in range(200)], '_by_hash'),
    'one integer run': ([str(i) for i in range(100000, 100500)], '_by_sequence'),
    'one prefixed run': ([f'D{i}' for i in range(100000, 100500)], '_by_sequence'),
}
UNKNOWN = ['', 'nope', 'doc', 'D', 'z', '0', '00', '-1', '+5', ' 5', '5 ', '1e3', '٣', 'ä ', 'doc01', 'doc3000',
           '1401', '0100001', 'D0100001', '100500', 'D99', 'a\0', 'zz', '9' * 30]


def _npids_id(lookup, docno):
    """npids' answer through the vectorised route; it overflows on a 30-digit number, which is simply unknown."""
    try:
        return int(lookup_ids(lookup, [docno])[0])
    except OverflowError:
        return -1


def _queries(docnos):
    rng = random.Random(len(docnos))
    return rng.sample(docnos, min(300, len(docnos))) + UNKNOWN + ['0' + d for d in docnos[:5]]


@pytest.mark.parametrize('name', sorted(DOCNO_SETS))
def test_written_lookups(tmp_path, name):
    from npids import Lookup
    docnos, route = DOCNO_SETS[name]
    docnos = sorted(docnos)  # as the artifact builder stores them
    write_docnos(docnos, tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        index = DocnoIndex(lookup)
        assert index._one is not None  # the fast path is taken, not npids
        assert index._one.__name__ == route
        asked = _queries(docnos)
        expected = [_npids_id(lookup, d) for d in asked]
        assert [index.id_of(d) for d in asked] == expected
        # and every stored docno finds its own position
        assert [index.id_of(d) for d in docnos] == list(range(len(docnos)))


@pytest.mark.parametrize('blocks', [1, 2])
def test_integer_stored_inverse(tmp_path, blocks):
    from npids import Lookup
    # increasing integers, not in string order: npids' intstored inverse (writers other than ours produce it)
    numbers = sorted(random.Random(blocks).sample(range(1, 10**6), 3000))
    docnos = [str(n) for n in numbers] + ([f'x{n}' for n in numbers] if blocks == 2 else [])
    Lookup.build(docnos, str(tmp_path / 'd.npids'), return_self=False)
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        index = DocnoIndex(lookup)
        assert index._one.__name__ == '_by_stored'
        asked = _queries(docnos) + [f'x0{numbers[1]}', 'x', 'y5', f'x{numbers[-1] + 1}', str(numbers[-1] + 1)]
        assert [index.id_of(d) for d in asked] == [_npids_id(lookup, d) for d in asked]
        assert index.id_of(str(numbers[3])) == 3
        assert index.id_of('0' + str(numbers[3])) == -1  # a leading zero makes another docno (npids ignores it)
        if blocks == 2:
            assert index.id_of(f'x{numbers[0]}') == len(numbers)


def test_fallback_for_multi_run_inverse(tmp_path):
    from npids import Lookup
    # npids' own writer picks intsequencemulti for runs with a gap: no fast path, npids answers
    docnos = [str(i) for i in list(range(1, 375)) + list(range(377, 426))]
    Lookup.build(docnos, str(tmp_path / 'd.npids'), return_self=False)
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        index = DocnoIndex(lookup)
        assert index._one is None
        assert index.id_of('377') == int(lookup_ids(lookup, ['377'])[0])


def test_fnv1_matches_npids():
    from npids.codecs.inv_hash import fnv1_32 as npids_fnv1
    words = [b'doc1', b'MED-10', 'ä中'.encode(), b'x' * 40, b'a']
    width = max(map(len, words))
    expected = npids_fnv1(np.array(words, dtype=f'S{width}')).tolist()
    assert [fnv1_32(w) for w in words] == expected
    assert fnv1_32(b'a') == ((2166136261 ^ 97) * 16777619) % 2**32  # FNV-1: xor, then multiply


def test_group_of_equals_the_vectorised_route(tmp_path):
    docnos = [str(i) for i in range(1, 601)] + [f'doc{i}' for i in range(200)]
    n = len(docnos)
    rng = np.random.default_rng(3)
    edges = rng.integers(0, n, size=(n, 3))
    labels = rng.integers(0, 37, size=n)
    GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape), labels=labels)
    groups = GroupCorpusGraph(tmp_path / 'g')
    asked = [docnos[i] for i in rng.integers(0, n, size=400)] + UNKNOWN + ['0001', '601', 'doc200']
    ids = lookup_ids(groups._docnos, asked)
    expected = [int(groups.group_ids[i]) if i >= 0 else -1 for i in ids.tolist()]
    assert [groups.group_of(d) for d in asked] == expected
    assert GroupCorpusGraph(tmp_path / 'g').groups_of(asked).tolist() == expected
    # an integer docno is looked up as its string, as before
    assert groups.group_of(17) == groups.group_of('17') == int(labels[docnos.index('17')])
    assert groups.doc_id(601) == -1


@pytest.mark.parametrize(('digits', 'itself'), [
    ('0', True), ('7', True), ('70', True), ('007', False), ('01', False), ('00', False),
    (b'0', True), (b'70', True), (b'007', False), (b'01', False)])
def test_a_number_prints_as_itself_without_a_leading_zero(digits, itself):
    # the one rule the docno writer and both integer look-ups share: '007' is stored as 7 and comes back as '7'
    from pyterrier_garen._graphs import prints_as_itself
    assert prints_as_itself(digits) is itself


@pytest.mark.parametrize('docnos', [['ab', 'x', 'a\0b'], ['doc1', 'doc2', 'doc3'], ['7', '80', 'zz']])
def test_a_trailing_nul_is_another_docno(tmp_path, docnos):
    # npids' hash skips NUL bytes and its fixed-width store drops trailing ones, so npids alone answers 'ab\0' with
    # the id of 'ab'. No written lookup holds a docno ending in NUL (write_docnos refuses them): every route says -1,
    # while a NUL inside a stored docno still finds it.
    from npids import Lookup
    write_docnos(docnos, tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        index = DocnoIndex(lookup)
        asked = [d + '\0' for d in docnos] + [d + '\0\0' for d in docnos]
        assert lookup_ids(lookup, asked).tolist() == [-1] * len(asked)
        assert [index.id_of(d) for d in asked] == [-1] * len(asked)
        assert index.ids_of(asked) == [-1] * len(asked)
        assert [index.id_of(d) for d in docnos] == [0, 1, 2]
        if 'a\0b' in docnos:
            assert index.id_of('a\0b') == 2
            assert index.id_of('a\0\0b') == -1
