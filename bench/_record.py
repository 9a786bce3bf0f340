"""The output file a bench script writes with ``--json PATH``, which ``docs/regen.py --bench PATH`` renders into the
README's generated blocks.

The file holds the command that wrote it (the script and its arguments, ``--json PATH`` included, so that rerunning
it rewrites the same file), the date, the load average and core count, a caption, the table (``columns``: header,
key of ``rows``, Python format spec; ``rows``: the raw values) and further ``lines`` of text the script derived from
its measurements. Nothing in it is typed by hand.
"""
import datetime
import json
import os
import tempfile
from pathlib import Path

from pyterrier_garen import code_version, package_versions
from pyterrier_garen import command_line as _command_line

ROOT = Path(__file__).resolve().parents[1]


def command_line(argv=None) -> str:
    """``python bench/NAME.py ARGS`` as typed in the repository root (the script's path relative to it)."""
    return _command_line(argv, ROOT)


def save(path, *, caption: str, columns, rows, lines=(), command: str = None, transcribed: str = None,
         date: str = None) -> Path:
    """Write the output file (atomically: a temporary file moved into place).

    Args:
        path: the file (e.g. ``bench/results/control_loop.json``).
        caption: what was measured (collection, sizes, settings), one sentence.
        columns: ``[(header, key, format_spec), ...]``: the table's columns, in order (``''`` spec: ``str``).
        rows: dicts with (at least) the ``key`` of every column.
        lines: sentences printed under the table.
        command: the command line (default: this process's).
        date: the day of the run (default: today, UTC); with ``transcribed``, the earlier run's.
        transcribed: only for figures copied from an earlier run's printed output: where from (shown beside them).
    """
    path = Path(path)
    record = {
        'command': command or command_line(),
        'date': date or datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d'),
        'load_average': round(os.getloadavg()[0], 1),
        'cores': os.cpu_count(),
        'code': code_version(ROOT),
        'packages': package_versions(),
        'caption': caption,
        'columns': [list(c) for c in columns],
        'rows': [{k: _plain(v) for k, v in row.items()} for row in rows],
        'lines': list(lines),
    }
    if transcribed:
        record['transcribed'] = transcribed
    path.parent.mkdir(parents=True, exist_ok=True)
    # a fresh temporary beside the record (O_EXCL: a link or file left at some fixed name is never written through)
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, 'w', encoding='utf8') as out:
            out.write(json.dumps(record, indent=1) + '\n')
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print(f'wrote {path}')
    return path


def _plain(value):
    """numpy scalars as Python numbers (JSON has no numpy)."""
    return value.item() if hasattr(value, 'item') else value


