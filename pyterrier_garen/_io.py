"""Small file-writing helpers shared by the artifact builder and the summary store (see :mod:`._atomic`)."""
from __future__ import annotations

from ._atomic import atomic_write, open_no_follow, write_json

__all__ = ['write_json', 'atomic_write', 'open_no_follow']
