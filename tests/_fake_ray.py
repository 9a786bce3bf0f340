"""A stand-in for ``ray`` and ``ray.data`` that runs the actors' code in this process, recording what the driver asked
for (tests/test_oracles_ray.py, tests/test_oracles_encoding.py): :func:`install` puts it in place of
``pyterrier_garen._ray._import_ray`` and returns ``(ray, data)``."""
import numpy as np

from pyterrier_garen import _ray


class Context:
    def __init__(self):
        self.enable_progress_bars = 'bars?'
        self.print_on_execution_start = 'print?'
        self.retried_map_errors = 'retried?'
        self.max_map_retries = 'retries?'
        self.execution_options = type('ExecutionOptions', (), {'preserve_order': 'order?'})()


class Dataset:
    def __init__(self, data, rows, blocks=None):
        self.data, self.rows, self.blocks = data, rows, blocks

    def map_batches(self, cls, *, batch_size, fn_constructor_kwargs, compute, num_cpus, num_gpus):
        self.data.calls.append({'batch_size': batch_size, 'compute': compute, 'num_cpus': num_cpus,
                                'num_gpus': num_gpus, 'blocks': self.blocks,
                                'preserve_order': self.data.context.execution_options.preserve_order})
        worker = cls(**fn_constructor_kwargs)
        out = []
        for start in range(0, len(self.rows), batch_size):
            part = self.rows[start:start + batch_size]
            batch = {k: np.asarray([r[k] for r in part], dtype=object) for k in part[0]}
            result = worker(batch)
            out.extend({k: result[k][i] for k in result} for i in range(len(next(iter(result.values())))))
        if self.data.reorder:
            out = out[::-1]
        return Dataset(self.data, out[:self.data.keep] if self.data.keep is not None else out)

    def iter_rows(self):
        yield from self.rows

    def iter_batches(self, *, batch_size, batch_format):
        assert (batch_size, batch_format) == (None, 'numpy')
        for start in range(0, len(self.rows), 2):
            part = self.rows[start:start + 2]
            yield {k: np.asarray([r[k] for r in part]) for k in part[0]}


class Data:
    def __init__(self):
        self.context = Context()
        self.calls = []
        self.reorder = False
        self.keep = None
        self.DataContext = type('DataContext', (), {'get_current': staticmethod(lambda: self.context)})

    def ActorPoolStrategy(self, *, size):
        return ('pool', size)

    def from_items(self, items, *, override_num_blocks):
        self.calls.append({'items': len(items), 'override_num_blocks': override_num_blocks})
        return Dataset(self, list(items), override_num_blocks)


class Ray:
    """``head``: whether ``init`` starts a local cluster (this driver its head node) rather than connecting to one;
    ``resources``: what ``cluster_resources()`` answers."""

    def __init__(self, initialized=False):
        self.initialized = initialized
        self.events = []
        self.head = False
        self.resources = {'CPU': 2.0}

    def is_initialized(self):
        return self.initialized

    def init(self, address=None, **kwargs):
        import types
        self.events.append(('init', address, kwargs))
        node = types.SimpleNamespace(head=self.head)
        self._private = types.SimpleNamespace(worker=types.SimpleNamespace(_global_node=node))

    def cluster_resources(self):
        self.events.append(('cluster_resources',))
        return dict(self.resources)

    def shutdown(self):
        self.events.append(('shutdown',))


def install(monkeypatch):
    """Put a new stand-in in place of ``_import_ray`` (for this test); returns ``(ray, data)``."""
    ray, data = Ray(), Data()
    monkeypatch.setattr(_ray, '_import_ray', lambda: (ray, data))
    monkeypatch.setattr(_ray, 'check_reachable', lambda address: None)  # no cluster is asked: the stand-in's 'head:1'
    return ray, data


