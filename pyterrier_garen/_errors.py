"""The one place that turns exceptions into what a command-line user sees.

A user error (bad input, a missing or existing file, a folder that cannot be written, a dataset that cannot be
downloaded, a missing extra) becomes one line ``error: ...`` on stderr and exit status 2; a run that failed (an
exception with an ``exit_status`` attribute: a server that refuses the key, too many failed engine requests) is one
line with that status (1); Ctrl-C says what was kept and how to resume (exit status 130). Anything else is a bug and
keeps its traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import sys
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional

__all__ = ['UsageError', 'DatasetUnavailableError', 'user_message', 'run_command', 'command_errors', 'one_line',
           'each_warning_once', 'check_outputs']

INTERRUPTED = ('interrupted: every finished step is kept (artifacts are written beside their folder and moved in '
               'only when complete; summaries are saved batch by batch); rerun the same command to resume')


class UsageError(ValueError):
    """A command-line option is missing or does not fit the others."""


class DatasetUnavailableError(FileNotFoundError):
    """A dataset id names data that is not on this machine and cannot be downloaded now."""


def one_line(text: str) -> str:
    return ' '.join(str(text).split())


def is_network_error(ex: BaseException) -> bool:
    """Whether ``ex`` says the network could not be reached, including ir_datasets' ``RuntimeError('All download
    sources failed', [(source, error), ...])`` when every one of its errors does."""
    import socket
    import urllib.error
    if isinstance(ex, (socket.gaierror, socket.timeout, urllib.error.URLError, ConnectionError)):
        return True
    if type(ex) is RuntimeError and len(ex.args) == 2 and ex.args[0] == 'All download sources failed' \
            and isinstance(ex.args[1], list) and ex.args[1]:
        return all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], BaseException)
                   and is_network_error(item[1]) for item in ex.args[1])
    try:
        import requests
    except ImportError:
        return False
    return isinstance(ex, requests.exceptions.RequestException)


def user_message(ex: BaseException) -> Optional[str]:
    """The one-line message for a user error, ``None`` for an exception that is a bug."""
    from ._atomic import ArtifactBusyError, ResourceError
    if isinstance(ex, ResourceError):  # names the path, the cause and the fix already (_atomic.resource_error)
        return one_line(str(ex))
    if is_network_error(ex):
        return one_line(f'cannot reach the network to download data ({type(ex).__name__}: {str(ex)[:160]}); '
                        'download the dataset first on a connected machine (its files go to ~/.ir_datasets) or pass '
                        'a local collection folder')
    if isinstance(ex, OSError) and ex.errno is not None and ex.strerror:
        where = f': {ex.filename}' if ex.filename else ''
        fix = {errno.EACCES: 'check the permissions or choose another folder',
               errno.EPERM: 'check the permissions or choose another folder',
               errno.EROFS: 'the file system is read-only; choose a writable folder',
               errno.ENOSPC: 'free some disk space or choose another folder',
               errno.ENOENT: 'check the path',
               errno.ENOTDIR: 'a path component is a file, not a folder; check the path',
               errno.EISDIR: 'pass a file, not a folder',
               errno.EEXIST: 'something is already there (a file where a folder is needed?); choose another '
                             'path, or move it away'}.get(ex.errno, 'check the path')
        return one_line(f'{ex.strerror.lower()}{where}; {fix}')
    if isinstance(getattr(ex, 'exit_status', None), int):  # a run that failed, said by the code that knows why
        return one_line(str(ex) or type(ex).__name__)
    if isinstance(ex, IndexError):  # from deep inside: a bug (user-facing ids are checked before use)
        return None
    if isinstance(ex, (ValueError, LookupError, OSError, ImportError, ArtifactBusyError)):
        text = str(ex.args[0]) if isinstance(ex, KeyError) and ex.args else str(ex)
        return one_line(text or type(ex).__name__)
    return None


def _one_line_usage_error(self: argparse.ArgumentParser, message: str) -> None:
    """``ArgumentParser.error`` as one ``error:`` line naming ``--help`` (exit status 2), without the usage block.

    An option the parser does not know is echoed back, so the value of one named like a credential (``--api-key
    sk-...``) is hidden first; keys are read from the environment (``$OPENAI_API_KEY``), never from an option.
    """
    from ._redact import hide_option_values
    prefix = 'unrecognized arguments: '
    if message.startswith(prefix):
        words = message[len(prefix):].split(' ')
        shown = hide_option_values(words)
        message = prefix + ' '.join(shown)
        if shown != words:
            message += '; a key is read from the environment ($OPENAI_API_KEY), never from an option'
    self.exit(2, f'error: {one_line(message)} (see {self.prog} --help)\n')


def run_command(parser: argparse.ArgumentParser, argv: Optional[List[str]],
                call: Optional[Callable[[argparse.Namespace], None]] = None) -> None:
    """Parse ``argv`` and run the chosen command (``args.func``), reporting user errors, usage errors included
    (:func:`command_errors` makes every parser's, subcommands' too, one line), in one line."""
    with command_errors():
        args, extras = parser.parse_known_args(argv)
        if extras:  # named by the command's own parser, so that the error points at that command's --help
            _command_parser(parser, args).error(f'unrecognized arguments: {" ".join(extras)}')
        (call or args.func)(args)


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand ``args`` ran (``args.command``), else ``parser`` itself."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its subcommands here only
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return action.choices.get(getattr(args, action.dest or '', None), parser)
    return parser


@contextlib.contextmanager
def command_errors():
    """Around a command's work (:func:`run_command`, the example scripts' ``__main__``): a user error becomes one
    line ``error: ...`` on stderr and exit status 2 (or the run's own ``exit_status``), Ctrl-C says what was kept
    (exit status 130), and anything else, a bug, keeps its traceback. Inside it, any parser's usage error is one
    ``error:`` line too, as the package's command line gives it (the scripts build their parsers inside)."""
    before, formatted = argparse.ArgumentParser.error, warnings.formatwarning
    argparse.ArgumentParser.error = _one_line_usage_error
    warnings.formatwarning = plain_warning
    if not _SHUTDOWN:
        _shutdown_hooks()  # before the command's libraries register their exit callbacks
    status = 1  # a bug: its traceback
    try:
        yield
        status = 0
    except KeyboardInterrupt:
        end_progress_bars()
        sys.stderr.write(f'\n{INTERRUPTED}\n')  # after the terminal's ^C
        status = 130
        sys.exit(130)
    except SystemExit as ex:  # a script's own refusal, SystemExit('error: ...'), exits 2 as every user error does
        if not (isinstance(ex.code, str) and ex.code.startswith('error: ')):
            status = ex.code if isinstance(ex.code, int) else int(ex.code is not None)
            raise
        end_progress_bars()
        sys.stderr.write(f'{one_line(ex.code)}\n')
        status = 2
        sys.exit(2)
    except Exception as ex:  # noqa: BLE001 - the one place where exceptions become messages
        message = user_message(ex)
        if message is None:
            end_progress_bars()
            raise
        end_progress_bars()
        sys.stderr.write(f'error: {message}\n')
        status = getattr(ex, 'exit_status', None)
        status = status if isinstance(status, int) and status > 0 else 2
        sys.exit(status)
    finally:
        argparse.ArgumentParser.error = before
        warnings.formatwarning = formatted
        _ended(status)


def plain_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as a command shows it: ``warning: <text>``, without the file, line and source line of the code that
    warned (Python's form, ``.../_compare.py:427: UserWarning: ...`` and a line of the package's code, which tells a
    user nothing); a warning of another kind than ``UserWarning`` (a library's deprecation) keeps its kind and
    place. Set as ``warnings.formatwarning`` inside :func:`command_errors`, so filters, ``--strict`` and recorders
    (pytest's) are unchanged."""
    if category is UserWarning:
        return f'warning: {message}\n'
    return f'warning: {message} ({category.__name__}, {filename}:{lineno})\n'


#: how the last command ended (``status``), for a Ctrl-C during Python's shutdown (:func:`_shutdown_hooks`)
_SHUTDOWN: Dict[str, Any] = {}
SHUT_DOWN = ('interrupted while shutting down: the command had finished, and everything it wrote is kept; '
             'nothing to rerun')


def _shutdown_hooks() -> None:
    """Once per process, around its first command: a Ctrl-C after a command has ended, while Python shuts down
    (atexit callbacks: torch's, Ray's, vLLM's; then the teardown of modules, where Python has put its default
    handler back), printed a traceback ("Exception ignored in atexit callback") or killed the process by SIGINT
    (exit status -2) without a word. Now it ends the process at once, with status 130 and :data:`SHUT_DOWN` when
    the command had finished (else with the status the command ended with, whose line was said), and is ignored in
    the teardown, which runs no handler. Only at the process's exit: a command run inside another program (a
    test) leaves that program's handler alone."""
    import atexit
    import os
    import signal
    import threading

    def interrupted(signum, frame) -> None:
        status = _SHUTDOWN.get('status')
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            if status == 0:
                sys.stderr.write(f'\n{SHUT_DOWN}\n')
            sys.stderr.flush()
        os._exit(130 if status == 0 else status)

    def handle(handler) -> None:
        if 'status' in _SHUTDOWN and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, handler)

    # atexit runs its callbacks last-registered first: this one, registered before the command's libraries
    # registered theirs, runs after them; the other, registered once the command has ended, before them
    atexit.register(handle, signal.SIG_IGN)
    _SHUTDOWN['first'] = lambda: atexit.register(handle, interrupted)


def _ended(status: int) -> None:
    """The command ended with ``status`` (0: finished): the first of :func:`_shutdown_hooks` is registered now."""
    if 'status' not in _SHUTDOWN and 'first' in _SHUTDOWN:
        _SHUTDOWN['first']()
    _SHUTDOWN['status'] = status


def check_outputs(outputs: Dict[str, Optional[str]], inputs: Iterable[str] = ()) -> None:
    """Before a command's work: every output file it will write (``{flag: path}``, None for one not asked for) can
    be written there, so a long run does not end in an error that loses what it measured.

    A missing folder above a file is created (as ``compare --json`` does). :class:`UsageError` for a path that is a
    folder, two flags naming one file (the second would write over the first), or an output that is also one of
    ``inputs`` (the files the command reads: it would be written over).
    """
    import os
    from pathlib import Path
    read = {os.path.realpath(path): str(path) for path in inputs}
    seen: Dict[str, str] = {}
    for flag, path in outputs.items():
        if path is None:
            continue
        real = os.path.realpath(path)
        if os.path.isdir(path):
            raise UsageError(f'{flag} {path} is a folder; give the path of a file to write')
        if real in seen:
            raise UsageError(f'{seen[real]} and {flag} both name {path}; give each output a file of its own')
        if real in read:
            raise UsageError(f'{flag} {path} is also an input of this command ({read[real]}) and would be written '
                             'over; choose another output path')
        seen[real] = flag
        folder = Path(path).parent
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):  # read-only: found now, not after the run
            raise UsageError(f'{flag} {path}: its folder {folder} cannot be written to; choose another path')


def end_progress_bars() -> None:
    """Close the progress bars a failed command left open, so that what follows starts on a line of its own (a
    bar's last refresh ends without a newline)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return
    bars = list(getattr(tqdm, '_instances', ()))
    for bar in bars:
        try:
            bar.leave = True  # closing then ends the bar's line (a bar that clears itself would leave the cursor)
            bar.close()
        except Exception:  # noqa: BLE001, S110 - a broken bar must not hide the error itself
            pass
    sys.stdout.flush()
    sys.stderr.flush()


@contextlib.contextmanager
def each_warning_once():
    """Within the block, show each distinct warning (its category and text) once.

    Python shows a warning once per place, but every ``warnings.catch_warnings()`` (this package and its libraries
    use many) resets that memory, so a loop that builds the same pipelines again (a sweep: every reranker, partition
    and budget) repeated the same advice dozens of times. Filters still apply first: an ``error`` filter
    (``--strict``) raises at the first occurrence, and an ignored warning is not shown at all.
    """
    seen = set()
    show = warnings.showwarning

    def once(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key not in seen:
            seen.add(key)
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = once
    try:
        yield
    finally:
        warnings.showwarning = show
