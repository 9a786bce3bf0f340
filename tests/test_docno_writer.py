"""``_graphs._write_forward`` writes npids' own bytes, or nothing (then npids writes the lookup itself)."""
import random

import numpy as np
import pytest

from pyterrier_garen._graphs import _write_forward, check_docnos, write_docnos

_rng = random.Random(3)
BLOCK = 256  # npids' FwdLookupBuilder picks a block's codec from its first 256 docnos
SETS = {
    # name: (docnos in stored order, whether one vectorised block holds them all)
    'prefixed ints': (sorted(f'doc{i}' for i in range(3000)), True),
    'a consecutive run': ([f'doc{i}' for i in range(3000)], False),  # intsequence: left to npids
    'integers, string-sorted': (sorted(str(i) for i in range(1, 1401)), True),
    'integers over 2 bytes later': ([str(i) for i in range(200, 456)] + [str(70000 + i) for i in range(50)], False),
    'an integer needing 2 bytes after 1-byte seeds': ([str(i) for i in range(BLOCK)] + ['256'], False),
    'a leading zero after the seeds': ([f'd{i}' for i in range(1, 300)] + ['d07'], False),
    'a zero after the seeds': (sorted(f'd{i}' for i in range(1, 300)) + ['d0'], True),
    'zero-padded': ([f'{i:05d}' for i in range(1000)], False),  # intsequencepad: left to npids
    'zero-padded, shuffled': (_rng.sample([f'{i:05d}' for i in range(1000)], 1000), True),
    'hex digests': ([f'{_rng.getrandbits(32):08X}' for _ in range(500)], True),
    'lower-case hex, an upper-case one past the seeds': ([f'h{_rng.getrandbits(32):08x}' for _ in range(300)]
                                                         + ['h0000000A'], False),
    'hex, a shorter one past the seeds': ([f'{i:04d}' for i in _rng.sample(range(10000), 300)] + ['12'], False),
    'hex, a newline past the seeds': ([f'{i:04d}' for i in _rng.sample(range(10000), 300)] + ['012\n'], False),
    'free text and unicode': (['a', 'b10', 'c2x', 'ä', '中文', 'x' * 30] * 1 + [f'MED-{i}' for i in range(300)], True),
    'unicode past the seeds': (_rng.sample([f'q{i:04d}' for i in range(BLOCK)], BLOCK) + ['q中文', 'qä'], False),
    'unicode past fixed-width seeds': ([f'q{i:03d}{chr(97 + i % 26)}' for i in range(BLOCK)] + ['q中', 'qä'],
                                       True),
    'longer than the seeds': ([f'm{i:03d}' for i in range(BLOCK)] + ['m1234567'], False),
    'another prefix after the seeds': ([f'a{i:03d}' for i in range(BLOCK)] + ['b001'], False),
    'a trailing newline': ([f'n{i}' for i in range(1, 300)] + ['n300\n'], False),
    'non-ASCII digits': ([f'n{i}' for i in range(1, 300)] + ['n٣'], False),
    'fewer than a block': ([f'doc{i}' for i in range(5)], True),
    'exactly a block': ([f'doc{i}' for i in range(BLOCK)], True),
    'a block and one': (sorted(f'doc{i}' for i in range(BLOCK + 1)), True),
    'one integer run': ([str(i) for i in range(100000, 100500)], False),  # intsequence: left to npids
    'two docnos': (['x', 'y'], True),
}


@pytest.mark.parametrize('name', sorted(SETS))
def test_same_bytes_as_npids_or_nothing(tmp_path, name):
    from npids import Lookup
    docnos, vectorised = SETS[name]
    try:
        Lookup.build(docnos, str(tmp_path / 'npids.npids'), build_inv=False, return_self=False)
    except IndexError:  # npids itself fails on this set (see the next test)
        assert not vectorised
    assert _write_forward(docnos, tmp_path / 'ours.npids') is vectorised
    if vectorised:
        assert (tmp_path / 'ours.npids').read_bytes() == (tmp_path / 'npids.npids').read_bytes()
    else:
        assert not (tmp_path / 'ours.npids').exists()
    # either way the full writer round-trips every docno
    write_docnos(docnos, tmp_path / 'full.npids')
    with Lookup(str(tmp_path / 'full.npids')) as lookup:
        assert [str(d) for d in lookup.fwd[list(range(len(docnos)))]] == docnos
        check_docnos(lookup, docnos)


def test_a_broken_npids_block_is_replaced_by_one_that_holds_every_docno(tmp_path):
    """npids 0.1.3 chooses hexdigest from 4-digit seeds and then writes 1 byte for '12': a block it cannot read."""
    from npids import Lookup
    docnos = [f'{i:04d}' for i in random.Random(1).sample(range(10000), 300)] + ['12']
    with pytest.raises(IndexError):
        Lookup.build(docnos, str(tmp_path / 'npids.npids'))
    write_docnos(docnos, tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert len(lookup) == 301
        assert [str(d) for d in lookup.fwd[list(range(301))]] == docnos
        assert [int(i) for i in lookup.inv[['12', docnos[0], docnos[299]]]] == [300, 0, 299]
        assert repr(lookup.fwd.codecs[0].fmt).startswith('fixedbytes')


def test_docnos_npids_cannot_hold_are_refused(tmp_path):
    with pytest.raises(ValueError, match='NUL'):
        write_docnos([f'z{i}' for i in range(300)] + ['z300\0'], tmp_path / 'd.npids')
    assert not (tmp_path / 'd.npids').exists()


@pytest.mark.parametrize(('docno', 'said'), [
    ('z300\0', r"a docno ending in a NUL character cannot be stored by npids \(1 of them, e.g. \['z300\\x00'\]\); "
               r"strip it from the docnos"),
    ('z\ud800', r"a docno that is not valid Unicode text \(a lone surrogate\) has no UTF-8 bytes to store \(1 of "
                r"them, e.g. \['z\\ud800'\]\); decode the docnos with their real encoding"),
])
def test_a_docno_npids_cannot_give_back_is_named_by_the_writer_and_the_builder_before_any_work(tmp_path, docno, said):
    from pyterrier_garen import GroupCorpusGraph
    with pytest.raises(ValueError, match=f'^{said}$'):
        write_docnos(['a', 'b', docno], tmp_path / 'd.npids')
    with pytest.raises(ValueError, match=f'^{said}$'):
        GroupCorpusGraph.from_arrays(tmp_path / 'g', ['a', 'b', docno], np.array([[1], [0], [1]]), np.ones((3, 1)),
                                     labels=[0, 1, 1])
    assert not list(tmp_path.iterdir())
