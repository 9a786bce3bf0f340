"""Oracles for the checks made before an artifact is opened (pyterrier_garen._checks: strict pt_meta.json, links
out of a folder, a killed write's temporaries, np_topk corpus graphs, FlexIndex vectors, the metadata adapter) and
for the parameter checks and reprs (pyterrier_garen._params: check_number's ranges and messages, check_bool,
check_groups, parse_group_ids, rebuild_repr and attributes), on small folders and toy classes whose every answer is
known by hand (the twenty-second mutation run, docs/testing.md)."""
import errno
import inspect
import json
import os
from enum import Enum

import numpy as np
import pandas as pd
import pytest

import pyterrier_garen._checks as checks
from pyterrier_garen._atomic import ResourceError
from pyterrier_garen._checks import (ArtifactError, check_flex, check_links, check_np_topk, clean_file_temporaries,
                                     is_temporary, metadata_adapter, read_meta_file)
from pyterrier_garen._graphs import write_docnos
from pyterrier_garen._params import (Rebuildable, check_bool, check_choice, check_groups, check_int, check_number,
                                     parse_group_ids)


def _message(check, *args, **kwargs):
    """The whole message of the ValueError that ``check(*args, **kwargs)`` raises."""
    with pytest.raises(ValueError) as info:
        check(*args, **kwargs)
    return str(info.value)


# --- _params: check_number, check_int, check_bool, check_choice ------------------------------------------------------

def test_a_bound_that_is_open_excludes_the_bound_itself():
    check_number('x', 0.999, high=1, high_open=True)
    check_number('x', 1, high=1)
    assert _message(check_number, 'x', 1, high=1, high_open=True) == 'x must be a finite number < 1, got 1'
    assert _message(check_number, 'x', 2, high=1) == 'x must be a finite number <= 1, got 2'
    assert _message(check_number, 'x', 1, low=0, high=1, high_open=True) == 'x must be a number in [0, 1), got 1'
    assert _message(check_number, 'x', 0, low=0, high=1, low_open=True) == 'x must be a number in (0, 1], got 0'
    assert _message(check_number, 'x', 0, low=0, low_open=True) == 'x must be a finite number > 0, got 0'


def test_none_passes_only_when_allowed_and_the_message_says_so():
    check_number('x', None, low=0, none_ok=True)
    assert _message(check_number, 'x', -1, low=0, none_ok=True) == 'x must be a finite number >= 0 or None, got -1'
    assert _message(check_number, 'x', None, low=0) == 'x must be a finite number >= 0, got None'
    assert _message(check_int, 'n', 0, low=1, none_ok=True) == 'n must be a positive integer or None, got 0'


def test_a_note_is_appended_in_brackets_and_nothing_when_there_is_none():
    assert _message(check_number, 'w', -1, low=0) == 'w must be a finite number >= 0, got -1'
    assert _message(check_number, 'w', -1, low=0, note='a weight') == \
        'w must be a finite number >= 0, got -1 (a weight)'
    assert _message(check_number, 'w', 'a') == "w must be a finite number, got 'a'"
    assert _message(check_int, 'n', 5, high=4, note='the window') == 'n must be an integer <= 4, got 5 (the window)'
    assert _message(check_bool, flag='no') == "flag must be True or False, got 'no'"
    assert _message(check_choice, 'mode', 'c', ['a', 'b']) == "mode must be one of ('a', 'b'), got 'c'"


def test_a_graph_without_the_group_interface_is_a_type_error_naming_what_it_lacks():
    class Half:
        group_of = num_groups = None

    check_groups(Half(), 'GAREN', needs=('group_of', 'num_groups'))
    with pytest.raises(TypeError, match='GAREN needs a group graph .*got Half without group_members;'):
        check_groups(Half(), 'GAREN')
    with pytest.raises(TypeError, match='got object without group_of, group_members, num_groups;'):
        check_groups(object(), 'GAREN')


# --- _params: parse_group_ids --------------------------------------------------------------------------------------

def test_group_ids_are_read_from_text_or_numbers_with_spaces_stripped():
    ids = parse_group_ids(['0', ' 2 ', 1, np.int64(1), '2\n'], 3, 'N')
    assert ids.dtype == np.int64
    assert ids.tolist() == [0, 2, 1, 1, 2]
    assert parse_group_ids([], 3, 'N').tolist() == []


class Owner:
    def __repr__(self):
        return 'Nav()'


@pytest.mark.parametrize('docno', ['3', 3, '-1', -1, 'x', '1.5', '', None])
def test_a_docno_that_is_not_a_group_id_is_refused_naming_it(docno):
    with pytest.raises(ValueError) as info:
        parse_group_ids(['0', docno], 3, Owner())
    assert str(info.value) == (f'Nav(): docno {docno!r} is not a group id of this artifact (ids run from 0 to 2); a '
                               'group navigator scores group ids, as GAREN sends them (DocGAREN\'s navigator scores '
                               'documents: give it a document scorer such as VectorScorer)')


@pytest.mark.parametrize('docno', ['1_0', '\uff12', '+1', '1e1', '0x1'])
def test_a_group_id_is_ascii_digits_only(docno):
    # int() alone reads '1_0' as 10 and a full-width two as 2: group ids in range, of the wrong groups
    with pytest.raises(ValueError) as info:
        parse_group_ids([docno], 20, Owner())
    assert str(info.value) == (f'Nav(): docno {docno!r} is not a group id of this artifact (ids run from 0 to 19); a '
                               'group navigator scores group ids, as GAREN sends them (DocGAREN\'s navigator scores '
                               'documents: give it a document scorer such as VectorScorer)')


# --- _params: rebuild_repr, init_arguments, attributes -------------------------------------------------------------

class Colour(Enum):
    RED = 'red'


class Columns:
    """Not a DataFrame, though it has columns and a length."""
    columns = ['a']

    def __len__(self):
        return 7

    def __repr__(self):
        return 'Columns()'


class Toy(Rebuildable):
    """Every kind of argument: positional, positional with a default, keyword-only with and without a default (one
    stored under another attribute) and **kwargs."""
    _repr_attributes = {'d': '_d'}

    def __init__(self, a, b=1, *, c=None, d='x', e, **extra):
        self.a, self.b, self.c, self._d, self.e, self.extra = a, b, c, d, e, extra


@pytest.mark.parametrize(('toy', 'expected'), [
    (Toy(5, e=0), 'Toy(5, e=0)'),
    (Toy(5, 2, e=0), 'Toy(5, b=2, e=0)'),
    (Toy(5, 1.0, c=None, d='x', e=0), 'Toy(5, e=0)'),  # equal to the default (1.0 == 1), though not the same object
    (Toy(5, c=np.array([1, 2]), e=0), 'Toy(5, c=array([1, 2]), e=0)'),  # == is element-wise: shown
    (Toy(5, d='y', e=0), "Toy(5, d='y', e=0)"),  # read back from _d
    (Toy(5, e=0, z=3, y='w'), "Toy(5, e=0, z=3, y='w')"),
    (Toy(Colour.RED, e=Colour.RED), "Toy('red', e='red')"),
    (Toy(Columns(), e=pd.DataFrame({'q': [1, 2, 3]})), 'Toy(Columns(), e=<DataFrame of 3 rows>)'),
])
def test_repr_shows_positionals_then_keywords_that_differ_from_their_default(toy, expected):
    assert repr(toy) == expected


def test_a_kwargs_attribute_that_is_absent_or_not_a_dict_shows_no_keywords():
    toy = Toy(5, e=0, z=3)
    del toy.extra
    assert repr(toy) == 'Toy(5, e=0)'
    toy.extra = None
    assert repr(toy) == 'Toy(5, e=0)'


def test_attributes_report_each_argument_with_its_default_and_kind():
    empty, kind = inspect.Parameter.empty, inspect.Parameter
    got = [(a.name, a.value, a.init_default_value, a.init_parameter_kind) for a in Toy(5, d='y', e=0, z=3).attributes()]
    assert got == [('a', 5, empty, kind.POSITIONAL_OR_KEYWORD), ('b', 1, 1, kind.POSITIONAL_OR_KEYWORD),
                   ('c', None, None, kind.KEYWORD_ONLY), ('d', 'y', 'x', kind.KEYWORD_ONLY),
                   ('e', 0, empty, kind.KEYWORD_ONLY), ('extra', {'z': 3}, empty, kind.VAR_KEYWORD)]


# --- _checks: read_meta_file, check_links, clean_file_temporaries, metadata_adapter --------------------------------

DAMAGED = 'the artifact is damaged: rebuild or re-download it'


def _refused(path):
    """What a refusal to read ``path`` (EACCES) becomes: a ResourceError naming the file, the cause and the fix."""
    return f'cannot read {path}: permission denied; check the permissions (ls -l) or choose a folder you can read'


def _deny(path, *args, **kwargs):
    raise PermissionError(errno.EACCES, 'Permission denied', str(path))


def test_an_unreadable_meta_file_is_a_resource_error_naming_it(tmp_path, monkeypatch):
    (tmp_path / 'pt_meta.json').write_text('{}')
    monkeypatch.setattr(type(tmp_path), 'read_bytes', _deny)
    with pytest.raises(ResourceError) as info:
        read_meta_file(tmp_path)
    assert str(info.value) == _refused(tmp_path / 'pt_meta.json')


def test_links_inside_pass_links_out_are_refused_unless_into_an_allowed_folder(tmp_path):
    art = tmp_path / 'art'
    art.mkdir()
    (art / 'data').write_text('x')
    (art / 'inner').symlink_to(art / 'data')
    check_links(art)
    with pytest.raises(ArtifactError, match=r'art/inner is a symbolic link to .*art/data \(a link inside the '
                                            r'artifact\)'):
        check_links(art, any_link=True)
    (tmp_path / 'outside').write_text('y')
    (art / 'out').symlink_to(tmp_path / 'outside')
    with pytest.raises(ArtifactError, match=r'art/out is a symbolic link to .*/outside \(outside the artifact\)'):
        check_links(art)
    check_links(art, allowed=[tmp_path])
    check_links(art, allowed=(str(tmp_path / 'elsewhere'), tmp_path))


def test_only_the_temporaries_of_the_named_files_are_removed(tmp_path):
    folder = tmp_path / 'a'
    folder.mkdir()
    for name in ('.pt_meta.json.abcd1234.tmp', '.summaries.jsonl.0a1b_c3d.tmp',  # removed
                 '.other.json.abcd1234.tmp', '.pt_meta.json.ABCD1234.tmp', '.pt_meta.json.abc.tmp',
                 'pt_meta.json', 'summaries.jsonl'):  # kept: another file's, not a temporary's name, the files
        (folder / name).write_text('x')
    (folder / '.pt_meta.json.dddd1234.tmp').mkdir()  # kept: a folder
    (tmp_path / 'target').mkdir()
    (folder / '.pt_meta.json.eeee1234.tmp').symlink_to(tmp_path / 'target')  # removed: a link, though to a folder
    assert clean_file_temporaries(folder, iter(['pt_meta.json', 'summaries.jsonl'])) == 3
    assert sorted(os.listdir(folder)) == ['.other.json.abcd1234.tmp', '.pt_meta.json.ABCD1234.tmp',
                                          '.pt_meta.json.abc.tmp', '.pt_meta.json.dddd1234.tmp', 'pt_meta.json',
                                          'summaries.jsonl']
    assert (tmp_path / 'target').is_dir()
    assert clean_file_temporaries(folder, ['pt_meta.json']) == 0
    assert is_temporary('.pt_meta.json.abcd1234.tmp')
    assert not is_temporary('.pt_meta.json.abcd123.tmp')


def test_the_metadata_adapter_names_a_folder_with_any_group_file_a_group_graph():
    group = {'type': 'corpus_graph', 'format': 'garen_groups', 'package_hint': 'pyterrier-garen'}
    assert metadata_adapter('/g', ['group_offsets.u64.np']) == group
    assert metadata_adapter('/g', ['edges.u32.np', 'group_of.u32.np', 'group_members.u32.np']) == group
    assert metadata_adapter('/g', ['edges.u32.np', 'docnos.npids']) is None
    assert metadata_adapter('/g', []) is None
    assert metadata_adapter('/g', None) is None


# --- _checks: check_np_topk ----------------------------------------------------------------------------------------

EDGES = [[1, 2], [0, 2], [0, 1]]  # three documents a, b, c, k=2


def _graph(folder, edges=EDGES, **meta):
    """An np_topk graph of docnos a, b, c: 24 bytes of edges, 12 of weights; ``meta`` overrides (None: absent)."""
    folder.mkdir(parents=True)
    np.asarray(edges, dtype=np.uint32).tofile(folder / 'edges.u32.np')
    np.full(np.shape(edges), 0.5, dtype=np.float16).tofile(folder / 'weights.f16.np')
    return _docnos_and_meta(folder, {'type': 'corpus_graph', 'format': 'np_topk', 'doc_count': 3, 'k': 2}, meta)


def _docnos_and_meta(folder, fields, overrides):
    """Docnos a, b, c and the ``pt_meta.json`` of ``fields`` with ``overrides`` (None: the field is absent)."""
    write_docnos(['a', 'b', 'c'], folder / 'docnos.npids')
    fields = {key: value for key, value in {**fields, **overrides}.items() if value is not None}
    (folder / 'pt_meta.json').write_text(json.dumps(fields))
    return folder


def test_a_sound_graph_passes_and_its_metadata_is_returned(tmp_path):
    assert check_np_topk(_graph(tmp_path / 'g')) == {'type': 'corpus_graph', 'format': 'np_topk', 'doc_count': 3,
                                                     'k': 2}
    assert check_np_topk(_graph(tmp_path / 'h', doc_count=None)) == {'type': 'corpus_graph', 'format': 'np_topk',
                                                                     'k': 2}


@pytest.mark.parametrize(('meta', 'words'), [
    ({'k': 0}, 'k must be a positive integer, got 0'),
    ({'k': None}, 'k must be a positive integer, got None'),
    ({'k': -1}, 'k must be a non-negative integer, got -1'),
    ({'doc_count': '3'}, "doc_count must be a non-negative integer, got '3'"),
])
def test_counts_that_are_not_counts_are_refused_naming_the_meta_file(tmp_path, meta, words):
    path = _graph(tmp_path / 'g', **meta)
    with pytest.raises(ArtifactError) as info:
        check_np_topk(path)
    assert str(info.value) == f'{path / "pt_meta.json"}: {words}; {DAMAGED}'


def test_a_declared_doc_count_of_zero_is_a_count_that_disagrees_with_the_docnos(tmp_path):
    path = _graph(tmp_path / 'g', doc_count=0)
    with pytest.raises(ArtifactError) as info:
        check_np_topk(path)
    assert str(info.value) == (f'{path / "pt_meta.json"} declares doc_count=0, but docnos.npids holds 3 docnos; '
                               f'{DAMAGED}')


@pytest.mark.parametrize(('row', 'col', 'top'), [(0, 0, 3), (2, 1, 3), (1, 0, 256)])
def test_a_neighbour_id_of_doc_count_or_more_is_refused_wherever_it_is(tmp_path, row, col, top):
    """3 is one past the last id; 256 is one whose every byte (0, 1, 0, 0) is a valid id; (0, 0) is the first."""
    edges = [list(r) for r in EDGES]
    edges[row][col] = top
    path = _graph(tmp_path / 'g', edges)
    with pytest.raises(ArtifactError) as info:
        check_np_topk(path)
    assert str(info.value) == (f'{path / "edges.u32.np"} names neighbour id {top}, but the graph has only 3 '
                               f'documents (ids 0..2); {DAMAGED}')


class _NumpyWith:
    """numpy as _checks sees it, with another ``memmap`` (npids keeps the real one)."""

    def __init__(self, memmap):
        self.memmap = memmap

    def __getattr__(self, name):
        return getattr(np, name)


def test_the_edges_are_mapped_read_only(tmp_path, monkeypatch):
    """A graph in a folder the user may not write to (a shared one) is checked without asking for write access."""
    maps = []

    def spy(*args, **kwargs):
        maps.append(np.memmap(*args, **kwargs))
        return maps[-1]
    monkeypatch.setattr(checks, 'np', _NumpyWith(spy))
    check_np_topk(_graph(tmp_path / 'g'))
    assert len(maps) == 1
    assert maps[0].dtype == np.uint32
    assert not maps[0].flags.writeable


def test_a_link_into_the_enclosing_artifact_is_fine_and_out_of_a_plain_folder_is_not(tmp_path):
    """pyterrier-dr puts a graph inside its FlexIndex and links its docnos.npids to the index's."""
    for outer in ('index', 'plain'):
        graph = _graph(tmp_path / outer / 'g')
        (graph / 'docnos.npids').rename(tmp_path / outer / 'docnos.npids')
        (graph / 'docnos.npids').symlink_to(tmp_path / outer / 'docnos.npids')
    (tmp_path / 'index' / 'pt_meta.json').write_text('{"type": "dense_index", "format": "flex"}')
    assert check_np_topk(tmp_path / 'index' / 'g')['k'] == 2
    with pytest.raises(ArtifactError, match=r'plain/g/docnos.npids is a symbolic link to .*plain/docnos.npids '
                                            r'\(outside the artifact\)'):
        check_np_topk(tmp_path / 'plain' / 'g')


def test_unreadable_docnos_or_edges_are_resource_errors_naming_the_file(tmp_path, monkeypatch):
    import npids
    path = _graph(tmp_path / 'g')
    with monkeypatch.context() as patch:
        patch.setattr(npids, 'Lookup', _deny)
        with pytest.raises(ResourceError) as info:
            check_np_topk(path)
    assert str(info.value) == _refused(path / 'docnos.npids')
    monkeypatch.setattr(checks, 'np', _NumpyWith(_deny))
    with pytest.raises(ResourceError) as info:
        check_np_topk(path)
    assert str(info.value) == _refused(path / 'edges.u32.np')


# --- _checks: check_flex -------------------------------------------------------------------------------------------

FIX = 'the vectors are damaged: delete the folder to encode again'


def _flex(folder, floats=6, **meta):
    """A FlexIndex of docnos a, b, c and 2 floats each (``floats`` floats in vecs.f4); ``meta`` overrides."""
    folder.mkdir()
    np.arange(floats, dtype=np.float32).tofile(folder / 'vecs.f4')
    return _docnos_and_meta(folder, {'type': 'dense_index', 'format': 'flex', 'doc_count': 3, 'vec_size': 2}, meta)


def test_sound_vectors_pass_and_their_metadata_is_returned(tmp_path):
    assert check_flex(_flex(tmp_path / 'v')) == {'type': 'dense_index', 'format': 'flex', 'doc_count': 3,
                                                 'vec_size': 2}


@pytest.mark.parametrize('meta', [{'vec_size': None}, {'doc_count': None}])
def test_sizes_are_checked_only_when_both_counts_are_declared(tmp_path, meta):
    path = _flex(tmp_path / 'v', floats=5, **meta)
    assert check_flex(path) == {key: value for key, value in
                                {'type': 'dense_index', 'format': 'flex', 'doc_count': 3, 'vec_size': 2}.items()
                                if key not in meta}


@pytest.mark.parametrize(('floats', 'meta', 'words'), [
    (5, {}, '{path}/vecs.f4 has 20 bytes, expected 24 for 3 vectors of 2 floats (truncated, or pt_meta.json '
            'declares the wrong sizes); delete the folder to encode again'),
    (8, {'doc_count': 4}, '{path}/pt_meta.json declares doc_count=4, but docnos.npids holds 3 docnos; delete the '
                          'folder to encode again'),
    (6, {'doc_count': -3}, '{path}/pt_meta.json: doc_count must be a non-negative integer, got -3; ' + DAMAGED),
    (6, {'vec_size': 2.0}, '{path}/pt_meta.json: vec_size must be a non-negative integer, got 2.0; ' + DAMAGED),
])
def test_vectors_that_disagree_with_their_meta_are_refused_naming_the_file(tmp_path, floats, meta, words):
    path = _flex(tmp_path / 'v', floats=floats, **meta)
    with pytest.raises(ArtifactError) as info:
        check_flex(path)
    assert str(info.value) == words.format(path=path)


@pytest.mark.parametrize(('meta', 'held'), [
    ({'type': 'sparse_index', 'format': 'pisa'}, 'a sparse_index.pisa artifact'),
    ({'type': 'dense_index', 'format': 'np_topk'}, 'a dense_index.np_topk artifact'),
    ({'type': None, 'format': None}, '{path}/pt_meta.json names no dense_index.flex'),
    ({'format': None}, '{path}/pt_meta.json names no dense_index.flex'),
])
def test_a_folder_of_another_kind_is_left_untouched_not_called_damaged(tmp_path, meta, held):
    # e.g. `encode --out` pointed at a PISA index: "delete the folder to encode again" would lose the user's index
    from pyterrier_garen._atomic import ArtifactKindError
    path = _flex(tmp_path / 'v', **meta)
    before = sorted(p.name for p in path.iterdir())
    with pytest.raises(ArtifactKindError) as info:
        check_flex(path)
    assert str(info.value) == (f'{path} holds {held.format(path=path)}, not vectors (dense_index.flex); it is left '
                               'untouched: choose another folder for the vectors')
    assert 'delete' not in str(info.value)
    assert sorted(p.name for p in path.iterdir()) == before


def test_an_empty_meta_file_names_the_fix_for_vectors(tmp_path):
    path = _flex(tmp_path / 'v')
    (path / 'pt_meta.json').write_text(' \n')
    with pytest.raises(ArtifactError) as info:
        check_flex(path)
    assert str(info.value) == f'{path / "pt_meta.json"} is empty (an interrupted copy?); {FIX}'


def test_unreadable_flex_docnos_are_a_resource_error_naming_the_file(tmp_path, monkeypatch):
    import npids
    path = _flex(tmp_path / 'v')
    monkeypatch.setattr(npids, 'Lookup', _deny)
    with pytest.raises(ResourceError) as info:
        check_flex(path)
    assert str(info.value) == _refused(path / 'docnos.npids')
