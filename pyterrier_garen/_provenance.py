"""Which code produced a result: the git commit and the numerics packages recorded beside saved measurements."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

__all__ = ['code_version', 'package_versions', 'NUMERIC_PACKAGES', 'command_line', 'sidecar_path', 'write_sidecar',
           'read_sidecar']

#: Distributions whose versions can move a figure: the encoder's numerics (torch, transformers, tokenizers,
#: sentence-transformers), the k-NN graph and the partition (numpy, faiss, igraph, leidenalg), BM25 (PISA) and
#: the evaluation. MiniLM vectors that move slightly can change k-NN neighbours, then the Leiden groups.
NUMERIC_PACKAGES = ('torch', 'transformers', 'tokenizers', 'sentence-transformers', 'numpy', 'scipy', 'pandas',
                    'faiss-cpu', 'igraph', 'leidenalg', 'pyterrier', 'pyterrier-dr', 'pyterrier-pisa',
                    'pyterrier-adaptive', 'ir-measures')


def code_version(root: Optional[Union[str, Path]] = None) -> str:
    """The git commit of a checkout (``+changes`` when its ``pyterrier_garen`` files differ from it), or ``'unknown'``.

    Args:
        root: the checkout to ask; by default the one this package was imported from.
    """
    import subprocess
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    try:
        head = subprocess.run(['git', '-C', str(root), 'rev-parse', '--short=8', 'HEAD'], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(root), 'status', '--porcelain', '--untracked-files=no', '--',
                                'pyterrier_garen'], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    return head + ('+changes' if dirty else '')


def package_versions(names=None) -> dict:
    """``{distribution: version}`` of the installed :data:`NUMERIC_PACKAGES` (or ``names``); absent ones are left out.

    Read from the installed metadata, so nothing is imported (torch stays unloaded).
    """
    from importlib import metadata
    out = {}
    for name in (NUMERIC_PACKAGES if names is None else names):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def command_line(argv=None, root: Optional[Union[str, Path]] = None) -> str:
    """``python SCRIPT ARGS`` as it would be typed in ``root`` (default: the checkout this package lies in), the
    script's path relative to it when it lies inside."""
    import shlex
    import sys
    argv = list(sys.argv if argv is None else argv)
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    script = Path(argv[0]).resolve()
    try:
        script = script.relative_to(root.resolve())
    except ValueError:
        pass
    return ' '.join(['python', shlex.quote(str(script)), *map(shlex.quote, argv[1:])])


def sidecar_path(path: Union[str, Path]) -> Path:
    """Where the provenance record of a result file lies: ``<file>.json`` beside it (``run.csv`` ->
    ``run.csv.json``)."""
    path = Path(path)
    return path.with_name(path.name + '.json')


def file_digest(path: Union[str, Path]) -> str:
    """SHA-256 of a file's bytes, in hex."""
    import hashlib
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def write_sidecar(path: Union[str, Path], *, command: Optional[str] = None, **fields) -> Path:
    """Write the provenance record of the result file ``path`` (which must exist) to :func:`sidecar_path`.

    The record holds the command line that wrote it (``command``, default this process's :func:`command_line`),
    the day (UTC), the code (:func:`code_version`), the numerics
    packages (:func:`package_versions`), the file's SHA-256 (so that a reader can tell a file changed after its
    record) and ``fields`` (JSON values: the collection, the number of queries, ...). Written atomically; a secret
    the package was told of (an API key) is hidden in the command.
    """
    import datetime
    import json

    from ._redact import scrub
    path = Path(path)
    record = {'file': path.name, 'sha256': file_digest(path), 'command': scrub(command or command_line()),
              'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d'), 'code': code_version(),
              'packages': package_versions(), **fields}
    from ._atomic import atomic_write
    out = sidecar_path(path)
    atomic_write(out, json.dumps(record, indent=1, sort_keys=False) + '\n')  # a fresh temporary: no link followed
    return out


def read_sidecar(path: Union[str, Path]) -> dict:
    """The provenance of the result file ``path``: its record (:func:`write_sidecar`) with ``status``:

    * ``'recorded'``: the record is there and the file's bytes are the ones it recorded;
    * ``'changed'``: the file was changed (or replaced) after its record was written: the record no longer
      describes it;
    * ``'missing'``: no record beside it (written by hand or before records existed);
    * ``'unreadable'``: a record that is not a JSON object (``error`` says why).
    """
    import json
    side = sidecar_path(path)
    if not side.is_file():
        return {'status': 'missing'}
    try:
        record = json.loads(side.read_text())
        if not isinstance(record, dict):
            raise ValueError('not a JSON object')
    except (ValueError, UnicodeDecodeError) as ex:
        return {'status': 'unreadable', 'error': f'{side}: {ex}'}
    same = record.get('sha256') == file_digest(path)
    return {**record, 'status': 'recorded' if same else 'changed'}
