"""Small file-writing helpers shared by the artifact builder and the summary store."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

__all__ = ['write_json']


def write_json(path: Path, data: Dict[str, Any]) -> None:
    """Write JSON atomically (temporary file in the same folder, then rename)."""
    tmp = path.with_name(path.name + '.tmp')
    with tmp.open('wt') as fout:
        json.dump(data, fout, indent=1, sort_keys=True)
        fout.flush()
        os.fsync(fout.fileno())
    os.replace(tmp, path)
