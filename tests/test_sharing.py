"""Sharing without surprises (issue 19): to_hf/from_hf without a network end in one line naming the cause and the
offline route; the offline route (build_package -> a path, or a static HTTP server on 127.0.0.1 -> load) works, and
an unpacked package loads with pt.Artifact.load. No shared data needed (a small GroupCorpusGraph from arrays)."""
import functools
import json
import http.server
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pyterrier as pt
import pytest

from pyterrier_garen import GroupCorpusGraph, load_package

ROOT = Path(__file__).resolve().parents[1]
SECRET = 'hf_NotARealTokenButASecret123'


def _groups(path):
    (path.parent / 'share').mkdir()
    docnos = [f'd{i}' for i in range(6)]
    edges = np.array([[1], [0], [3], [2], [5], [4]])
    return GroupCorpusGraph.from_arrays(path, docnos, edges, np.ones((6, 1)), labels=[0, 0, 1, 1, 2, 2])


def _same(a, b):
    assert isinstance(b, GroupCorpusGraph)
    assert b.num_groups == a.num_groups
    assert [b.group_members(g) for g in range(b.num_groups)] == [a.group_members(g) for g in range(a.num_groups)]
    assert list(b.neighbours('d2')) == list(a.neighbours('d2')) == ['d3']


def test_package_file_loads_from_a_path(tmp_path):
    groups = _groups(tmp_path / 'groups')
    package = groups.build_package(str(tmp_path / 'share' / 'groups.tar.lz4'), verbose=False)
    loaded = load_package(package)
    _same(groups, loaded)
    unpacked = tmp_path / 'share' / 'groups'
    assert Path(loaded.path) == unpacked
    _same(groups, pt.Artifact.load(str(unpacked)))  # the unpacked package is an ordinary artifact folder
    _same(groups, pt.Artifact.from_url(str(unpacked)))  # as is a path given to from_url
    _same(groups, load_package(package))  # a second load reuses the unpacked folder
    with pytest.raises(FileNotFoundError, match='build_package'):
        load_package(tmp_path / 'missing.tar.lz4')


def test_package_served_over_http_on_localhost(tmp_path, monkeypatch, local_network):
    groups = _groups(tmp_path / 'groups')
    package = groups.build_package(str(tmp_path / 'share' / 'groups.tar.lz4'), verbose=False)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / 'share'))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv('PYTERRIER_HOME', str(tmp_path / 'home'))
    try:
        loaded = pt.Artifact.from_url(f'http://127.0.0.1:{server.server_address[1]}/{Path(package).name}')
    finally:
        server.shutdown()
        server.server_close()
    _same(groups, loaded)


NO_NETWORK = '''
import sys
import pyterrier._artifact as artifact
import numpy as np
from pyterrier_garen import GroupCorpusGraph
groups = GroupCorpusGraph.from_arrays(sys.argv[1], ['a', 'b', 'c', 'd'], np.array([[1], [0], [3], [2]]),
                                      np.ones((4, 1)), labels=[0, 0, 1, 1])
# nothing listens on 127.0.0.1:9: every request fails to connect, as without a network
artifact._hf_url_resolver = lambda url: artifact.UrlResolverResult('http://127.0.0.1:9/artifact.tar.lz4', {})
for call in (lambda: groups.to_hf('user/repo'), lambda: GroupCorpusGraph.from_hf('user/repo')):
    try:
        call()
    except ConnectionError as ex:
        print('ERROR', ex)
'''


@pytest.mark.parametrize('offline', [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=['refused', 'HF_HUB_OFFLINE'])
def test_hub_without_network_is_one_line(tmp_path, offline):
    pytest.importorskip('huggingface_hub', reason='huggingface_hub is not installed')
    env = {**{k: v for k, v in os.environ.items() if 'proxy' not in k.lower()},
           'HF_ENDPOINT': 'http://127.0.0.1:9', 'HF_TOKEN': SECRET,
           'PYTERRIER_HOME': str(tmp_path / 'home'), 'HF_HUB_OFFLINE': '1' if offline else '0',
           'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    proc = subprocess.run([sys.executable, '-c', textwrap.dedent(NO_NETWORK), str(tmp_path / 'g')], env=env,
                          capture_output=True, text=True, timeout=300)
    errors = [line for line in proc.stdout.splitlines() if line.startswith('ERROR')]
    assert len(errors) == 2, proc.stdout + proc.stderr[-3000:]
    assert errors[0].startswith("ERROR to_hf('user/repo'): the Hugging Face Hub cannot be reached")
    assert errors[1].startswith("ERROR from_hf('user/repo'): the Hugging Face Hub cannot be reached")
    for line in errors:
        assert 'offline route: groups.build_package(' in line
        assert 'load_package' in line
    assert ('HF_HUB_OFFLINE is set' in errors[0]) == offline
    assert SECRET not in proc.stdout + proc.stderr


def test_destination_holding_the_users_files_is_left_untouched(tmp_path):
    groups = _groups(tmp_path / 'groups')
    package = groups.build_package(str(tmp_path / 'share' / 'groups.tar.lz4'), verbose=False)
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'thesis.tex').write_text('precious')
    (tmp_path / 'afile').write_text('precious')
    (tmp_path / 'link').symlink_to(tmp_path / 'groups')
    for folder, what in ((mine, 'holds files but no valid pt_meta.json'), (tmp_path / 'afile', 'is a file'),
                         (tmp_path / 'link', 'is a symbolic link')):
        with pytest.raises(FileExistsError, match=f'{what}.*left untouched: pass another folder') as info:
            load_package(package, folder)
        assert '\n' not in str(info.value)
    assert (mine / 'thesis.tex').read_text() == (tmp_path / 'afile').read_text() == 'precious'
    assert sorted(os.listdir(tmp_path)) == ['afile', 'groups', 'link', 'mine', 'share']  # no temporary left
    (tmp_path / 'empty').mkdir()
    _same(groups, load_package(package, tmp_path / 'empty'))  # an empty folder holds nothing to lose
    _same(groups, load_package(package, tmp_path / 'empty'))  # the second load reuses it


KILLED_LOAD = '''
import os, signal, sys, tarfile
from pyterrier_garen import load_package
signal.signal(signal.SIGINT, signal.default_int_handler)  # a job started in the background inherits SIGINT ignored
read, calls = tarfile.TarFile.next, []
def killed(tar):
    calls.append(1)
    if len(calls) == 5:  # some members unpacked, the others not yet
        os.kill(os.getpid(), signal.SIG{0})
    return read(tar)
tarfile.TarFile.next = killed
load_package(sys.argv[1])
'''


@pytest.mark.parametrize('signal', ['KILL', 'INT'])
def test_interrupted_load_leaves_no_folder_and_the_rerun_unpacks(tmp_path, signal):
    groups = _groups(tmp_path / 'groups')
    package = groups.build_package(str(tmp_path / 'share' / 'groups.tar.lz4'), verbose=False)
    env = {**os.environ, 'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    proc = subprocess.run([sys.executable, '-c', KILLED_LOAD.format(signal), package], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert 'Error' not in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / 'share' / 'groups').exists()  # never a half-unpacked folder at the destination
    _same(groups, load_package(package))
    assert sorted(os.listdir(tmp_path / 'share')) == ['groups', 'groups.tar.lz4', 'groups.tar.lz4.json']


def _tar(path, members, compress=True):
    """A package file holding ``members`` (TarInfo, data or None), lz4-compressed like build_package's."""
    import io
    import tarfile
    from lz4.frame import LZ4FrameFile
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    data = raw.getvalue()
    if compress:
        out = io.BytesIO()
        with LZ4FrameFile(out, 'wb') as fout:
            fout.write(data)
        data = out.getvalue()
    path.write_bytes(data)
    return path


def _member(name, data=None, kind=None, link=''):
    import tarfile
    info = tarfile.TarInfo(name)
    if kind is None:
        info.size = len(data)
    else:
        info.type, info.linkname = getattr(tarfile, kind), link
    return info, data


HOSTILE = {
    'dotdot': ([('../evil', b'x')], "'../evil', a path outside the folder"),
    'deep-dotdot': ([('sub/../../evil', b'x')], 'a path outside the folder'),
    'absolute': ([('{outside}/evil', b'x')], 'a path outside the folder'),
    'symlink': ([('link', None, 'SYMTYPE', '{outside}'), ('link/evil', b'x')], "'link', a symbolic link"),
    'hardlink': ([('hl', None, 'LNKTYPE', '/etc/passwd')], "'hl', a hard link"),
    'device': ([('dev', None, 'CHRTYPE')], 'a device or pipe'),
    'fifo': ([('fifo', None, 'FIFOTYPE')], 'a device or pipe'),
    'twice': ([('pt_meta.json', b'{}')], "'pt_meta.json' twice"),
    'too-many': ([(f'junk/{i}', b'') for i in range(8)], 'more than 12 members'),
}


@pytest.mark.parametrize('case', list(HOSTILE))
def test_hostile_package_is_refused_and_writes_nothing(tmp_path, monkeypatch, case):
    from pyterrier_garen import _sharing
    monkeypatch.setattr(_sharing, 'MAX_MEMBERS', 12)
    groups = _groups(tmp_path / 'groups')
    outside = tmp_path / 'outside'
    outside.mkdir()
    extra, message = HOSTILE[case]
    good = [_member(name, (Path(groups.path) / name).read_bytes()) for name in sorted(os.listdir(groups.path))]
    extra = [_member(*(str(part).format(outside=outside) for part in item[:1]), *item[1:3],
                     *(item[3].format(outside=outside) for _ in item[3:])) for item in extra]
    package = _tar(tmp_path / 'share' / 'bad.tar.lz4', good + extra)
    with pytest.raises(_sharing.PackageError, match=message) as info:
        load_package(package)
    assert '\n' not in str(info.value)
    assert 'nothing was unpacked: re-download it' in str(info.value)
    assert os.listdir(outside) == []
    assert sorted(os.listdir(tmp_path)) == ['groups', 'outside', 'share']
    assert os.listdir(tmp_path / 'share') == ['bad.tar.lz4']  # no folder, no temporary


def test_damaged_package_is_one_line_and_never_becomes_the_folder(tmp_path):
    from pyterrier_garen._sharing import PackageError
    groups = _groups(tmp_path / 'groups')
    share = tmp_path / 'share'
    data = Path(groups.build_package(str(share / 'groups.tar.lz4'), verbose=False)).read_bytes()
    files = {name: (Path(groups.path) / name).read_bytes() for name in sorted(os.listdir(groups.path))}
    meta = {**json.loads(files['pt_meta.json']), 'doc_count': 5}
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 1
    cases = {
        'empty.tar.lz4': (b'', 'is empty'),
        'empty.tar': (b'', 'is empty'),
        'html.tar.lz4': (b'<html><body>Not Found</body></html>' * 20, 'cannot be read .ReadError'),
        'cut.tar.lz4': (data[:len(data) // 2], 'cannot be read .EOFError'),
        'end-cut.tar.lz4': (data[:-5], 'cannot be read .EOFError'),
        'other.tar.lz4': (_tar(share / 'x1', [_member('pt_meta.json', b'{"type": "a", "format": "b"}')]),
                          r'holds no artifact that opens .ValueError: No implementation found .* type=a, format=b'),
        'no-meta.tar': (_tar(share / 'x2', [_member(n, d) for n, d in files.items() if n != 'pt_meta.json'], False),
                        'holds no artifact that opens .FileNotFoundError: pt_meta.json is missing'),
        'meta.tar.lz4': (_tar(share / 'x3', [_member(n, json.dumps(meta).encode() if n == 'pt_meta.json' else d)
                                            for n, d in files.items()]), '.*edges.u32.np has 24 bytes, expected 20'),
    }
    for name, (content, message) in cases.items():
        package = share / name
        package.write_bytes(content if isinstance(content, bytes) else content.read_bytes())
        for _ in range(2):  # the rerun fails alike: no half-unpacked folder was kept
            with pytest.raises(PackageError, match=f'package {package} {message}') as info:
                load_package(package)
            assert '\n' not in str(info.value)
        package.unlink()
    for name in ('x1', 'x2', 'x3'):
        (share / name).unlink()
    copy = share / 'copy.tar.lz4'  # beside build_package's record: the sha256 finds a changed byte anywhere
    copy.write_bytes(bytes(flipped))
    (share / 'copy.tar.lz4.json').write_text((share / 'groups.tar.lz4.json').read_text())
    with pytest.raises(PackageError, match='differs from what was built .its sha256 is not the expected_sha256 of'):
        load_package(copy)
    assert sorted(os.listdir(share)) == ['copy.tar.lz4', 'copy.tar.lz4.json', 'groups.tar.lz4', 'groups.tar.lz4.json']


def test_package_named_tar_is_read_by_its_content(tmp_path):
    groups = _groups(tmp_path / 'groups')
    package = groups.build_package(str(tmp_path / 'share' / 'groups.tar'), verbose=False)  # lz4 inside all the same
    _same(groups, load_package(package))
