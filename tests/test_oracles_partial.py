"""Oracles for the resume path of summarisation: ``_read_partial`` and ``remove_leftovers`` on hand-written files.

Every expected dict, file content and warning below is written out by hand from the rules in the docstrings: a torn
last line is dropped silently, other bad lines are named (first five line numbers, 1-based, blank lines counted),
the first record of a group wins unless it is a failed request and a later one is not, and the file is rewritten
with the kept records only when something was dropped.
"""
import json
import warnings

import pytest

from pyterrier_garen._summaries import PARTIAL, PARTIAL_META, SUMMARIES, _read_partial, remove_leftovers

OK = {'group': 0, 'concept': 'c0', 'summary': 's0'}
FAILED = {'group': 0, 'concept': 'x', 'summary': 'x', 'fallback': True, 'fallback_reason': 'request_failed'}
FAILED_OLD = {'group': 0, 'concept': 'x', 'summary': 'x', 'fallback': True, 'error': 'engine request failed: 503'}
UNUSABLE = {'group': 0, 'concept': 'u', 'summary': 'u', 'fallback': True, 'fallback_reason': 'unusable_reply'}


def _line(record) -> bytes:
    return (json.dumps(record) + '\n').encode()


def _read(path, num_groups=3):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        done = _read_partial(path, num_groups)
    return done, [str(w.message) for w in caught]


def test_missing_file_gives_nothing_and_creates_nothing(tmp_path):
    assert _read(tmp_path / PARTIAL) == ({}, [])
    assert not (tmp_path / PARTIAL).exists()


def test_complete_lines_are_kept_in_file_order_and_the_file_is_not_rewritten(tmp_path):
    path = tmp_path / PARTIAL
    data = _line({**OK, 'group': 2}) + b'\n' + _line(OK)  # a blank line is neither a record nor a bad line
    path.write_bytes(data)
    done, caught = _read(path)
    assert list(done) == [2, 0]
    assert done[0] == OK
    assert done[2] == {**OK, 'group': 2}
    assert caught == []
    assert path.read_bytes() == data


def test_torn_last_line_is_dropped_silently_and_cut_from_the_file(tmp_path):
    path = tmp_path / PARTIAL
    path.write_bytes(_line(OK) + b'{"group": 1, "conc')
    done, caught = _read(path)
    assert done == {0: OK}
    assert caught == []
    assert path.read_bytes() == _line(OK)


def test_a_file_of_one_torn_line(tmp_path):
    path = tmp_path / PARTIAL
    path.write_bytes(b'{"group": 1')
    assert _read(path) == ({}, [])
    assert path.read_bytes() == b''


def test_bad_lines_are_named_first_five_then_dots_and_dropped(tmp_path):
    path = tmp_path / PARTIAL
    lines = [b'garbage\n',                                   # 1: not JSON
             _line({**OK, 'group': 3}),                      # 2: group == num_groups: out of range
             _line({**OK, 'group': 2}),                      # 3: kept (the last group id in range)
             b'\n',                                          # 4: blank, skipped
             _line({**OK, 'group': -1}),                     # 5: negative
             _line({**OK, 'group': True}),                   # 6: a bool is not a group id
             b'[1, 2]\n',                                    # 7: not an object
             _line({**OK, 'group': 1, 'summary': 5}),        # 8: summary not a string
             _line({**OK, 'group': 1})]                      # 9: kept
    path.write_bytes(b''.join(lines))
    done, caught = _read(path)
    assert done == {2: {**OK, 'group': 2}, 1: {**OK, 'group': 1}}
    assert caught == [f'{path}: 6 unreadable lines (line 1, 2, 5, 6, 7, ...) skipped; 2 valid records kept, the groups '
                      'of the unreadable lines are summarised again']
    assert path.read_bytes() == _line({**OK, 'group': 2}) + _line({**OK, 'group': 1})


def test_exactly_five_bad_lines_have_no_dots(tmp_path):
    path = tmp_path / PARTIAL
    path.write_bytes(b'a\nb\nc\nd\ne\n' + _line(OK))
    done, caught = _read(path, num_groups=1)
    assert done == {0: OK}
    assert caught == [f'{path}: 5 unreadable lines (line 1, 2, 3, 4, 5) skipped; 1 valid records kept, the groups of '
                      'the unreadable lines are summarised again']


@pytest.mark.parametrize(('records', 'kept'), [
    ([OK, {**OK, 'summary': 'later'}], OK),                        # first wins
    ([FAILED, OK], OK),                                             # a retry that worked replaces a failed request
    ([FAILED_OLD, OK], OK),                                         # ... also one recognised by its error text
    ([OK, FAILED], OK),                                             # a later failure does not replace a success
    ([FAILED, {**FAILED, 'summary': 'again'}], FAILED),             # two failures: the first stays
    ([UNUSABLE, OK], UNUSABLE),                                     # an unusable reply is final, not retried
    ([{**FAILED, 'fallback': False}, OK], {**FAILED, 'fallback': False}),  # not a fallback: not a failure
])
def test_which_record_of_a_group_wins(tmp_path, records, kept):
    path = tmp_path / PARTIAL
    data = b''.join(_line(r) for r in records)
    path.write_bytes(data)
    done, caught = _read(path, num_groups=1)
    assert done == {0: kept}
    assert caught == []
    assert path.read_bytes() == data  # nothing dropped: no rewrite


def test_rewrite_keeps_the_winner_at_its_first_position(tmp_path):
    path = tmp_path / PARTIAL
    path.write_bytes(_line(FAILED) + _line({**OK, 'group': 1}) + b'junk\n' + _line(OK))
    done, _ = _read(path)
    assert list(done.items()) == [(0, OK), (1, {**OK, 'group': 1})]
    assert path.read_bytes() == _line(OK) + _line({**OK, 'group': 1})


# remove_leftovers: the partial run of a finished summarisation goes, anything else stays

def _artifact(tmp_path, summarizer='extractive', partial_run=None, started_text=None):
    folder = tmp_path / 'groups'
    folder.mkdir()
    meta = {'type': 'corpus_graph', 'format': 'garen_groups',
            'summaries': None if summarizer is None else {'summarizer': summarizer}}
    (folder / 'pt_meta.json').write_text(json.dumps(meta))
    (folder / PARTIAL).write_bytes(_line(OK))
    if started_text is not None:
        (folder / PARTIAL_META).write_text(started_text)
    elif partial_run is not None:
        (folder / PARTIAL_META).write_text(json.dumps(partial_run))
    return folder


def test_a_finished_runs_partial_files_are_removed(tmp_path):
    folder = _artifact(tmp_path, partial_run={'summarizer': 'extractive', 'groups': 1})
    remove_leftovers(folder)
    assert not (folder / PARTIAL).exists()
    assert not (folder / PARTIAL_META).exists()
    assert (folder / 'pt_meta.json').exists()


@pytest.mark.parametrize(('summarizer', 'run', 'text'), [
    ('extractive', {'summarizer': 'llm'}, None),       # another summariser's run: it is resumed, not discarded
    (None, {'summarizer': 'extractive'}, None),        # no finished summaries: the partial run is the only work
    ('extractive', None, '{"summarizer": "extr'),      # unreadable run file: nothing is guessed
    ('extractive', None, '["extractive"]'),            # not an object
    ('extractive', {'model': 'extractive'}, None),     # no summarizer named
])
def test_other_partial_runs_stay(tmp_path, summarizer, run, text):
    folder = _artifact(tmp_path, summarizer=summarizer, partial_run=run, started_text=text)
    before = (folder / PARTIAL_META).read_bytes()
    remove_leftovers(folder)
    assert (folder / PARTIAL).read_bytes() == _line(OK)
    assert (folder / PARTIAL_META).read_bytes() == before


@pytest.mark.parametrize(('run_started', 'started', 'removed'), [
    (100.5, 100.5, True),    # killed between the last two steps of the run that finished
    (100.5, 200.25, False),  # a later run of the same summariser (a retry, an overwrite): it resumes
    (None, 200.25, True),    # summaries written before runs were recorded: the same summariser's run goes, as before
])
def test_only_the_finished_runs_own_partial_files_are_removed(tmp_path, run_started, started, removed):
    folder = _artifact(tmp_path, partial_run={'summarizer': 'extractive', 'started': started})
    if run_started is not None:
        meta = json.loads((folder / 'pt_meta.json').read_text())
        meta['summaries']['run_started'] = run_started
        (folder / 'pt_meta.json').write_text(json.dumps(meta))
    remove_leftovers(folder)
    assert (folder / PARTIAL).exists() is not removed
    assert (folder / PARTIAL_META).exists() is not removed


def test_a_linked_run_file_is_not_followed_and_nothing_is_removed(tmp_path):
    folder = _artifact(tmp_path)
    outside = tmp_path / 'elsewhere.json'
    outside.write_text(json.dumps({'summarizer': 'extractive'}))
    (folder / PARTIAL_META).symlink_to(outside)
    remove_leftovers(folder)
    assert (folder / PARTIAL).exists()
    assert (folder / PARTIAL_META).is_symlink()
    assert outside.exists()


def test_temporaries_of_the_artifacts_own_files_are_removed_and_others_kept(tmp_path):
    folder = _artifact(tmp_path, summarizer=None)
    ours = [f'.{name}.abcd_123.tmp' for name in ('pt_meta.json', SUMMARIES, PARTIAL, PARTIAL_META)]
    theirs = ['.notes.txt.abcd_123.tmp', f'.{SUMMARIES}.short.tmp', f'{SUMMARIES}.abcd_123.tmp', 'user.tmp']
    for name in ours + theirs:
        (folder / name).write_text('x')
    (folder / f'.{PARTIAL}.dir_0001.tmp').mkdir()  # a folder of that name is not a temporary file
    remove_leftovers(folder)
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(['pt_meta.json', PARTIAL, f'.{PARTIAL}.dir_0001.tmp'] + theirs)


def test_a_one_byte_torn_tail_is_cut_too(tmp_path):
    path = tmp_path / PARTIAL
    path.write_bytes(_line(OK) + b'{')
    assert _read(path) == ({0: OK}, [])
    assert path.read_bytes() == _line(OK)
    path.write_bytes(b'{')
    assert _read(path) == ({}, [])
    assert path.read_bytes() == b''


def test_a_refused_read_names_the_artifact_folder(tmp_path, monkeypatch):
    import errno
    import os

    from pyterrier_garen._atomic import ResourceError
    folder = _artifact(tmp_path, partial_run={'summarizer': 'extractive'})

    def refused(path):
        raise PermissionError(errno.EACCES, 'Permission denied', str(path))
    monkeypatch.setattr(os, 'scandir', refused)
    with pytest.raises(ResourceError, match=f'cannot write {folder}: permission denied'):
        remove_leftovers(folder)
