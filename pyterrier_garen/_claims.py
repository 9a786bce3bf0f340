"""Claims checked over strength-sweep tables: the three questions issue 16 asks of every comparison.

Each function takes sweep rows (:data:`~pyterrier_garen._sweep.SWEEP_COLUMNS`) of one or more collections, with a
``collection`` column (:func:`load_sweeps` adds it), and returns one row per thing checked, so that a table in the
docs is one call away from the CSVs that ``examples/strength_sweep.py`` writes:

* :func:`budget_monotonicity`: does a measure (R@100) never fall as the budget grows?
  :func:`monotonicity_summary` counts its rows per system and reranker.
* :func:`baseline_margins`: is a system at least the best of its baselines, on the mean over collections?
  :func:`fusion_weight_margins` asks it with every system at its own best weight of the shared fusion stage.
* :func:`cost_matched_margins`: is it at least each baseline when it may send the reranker no more documents than
  that baseline sends (a budget counts distinct documents, not the documents sent)?
* :func:`strength_response`: does a measure rise as the simulated reranker gets stronger?
* :func:`load_per_query` and :func:`stratified_paired_test`: the per-query values ``strength_sweep.py`` writes beside
  each CSV, so that :func:`baseline_margins` can say whether a margin is more than the queries' noise (``p``).
* :func:`sweep_provenance`: which code, packages and command wrote each CSV (the record
  ``examples/strength_sweep.py`` writes beside it), so that a verdict never silently mixes code versions.

A reranker is named as in :func:`~pyterrier_garen._sweep.sweep_summary`: ``'sigma=0.25'`` for the simulated reranker
at that noise, ``'MiniLM'``. Values are averaged over partition seeds first; noise seeds are kept apart where a
claim is per seed, and paired where two systems are compared (a baseline counts only the noise seeds the system
has). ``examples/sweep_verdict.py`` is the command line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ._params import check_number
from ._sweep import KEYS, MEASURES, reranker_labels

__all__ = ['load_sweeps', 'budget_monotonicity', 'monotonicity_summary', 'baseline_margins', 'fusion_weight_margins',
           'cost_matched_margins', 'COST_COLUMNS', 'budget_values', 'coverage_gaps',
           'strength_response',
           'claims_report', 'sweep_provenance', 'provenance_notes', 'TOLERANCE', 'per_query_path', 'load_per_query',
           'stratified_paired_test', 'stratified_paired_interval', 'ALPHA']

#: Differences smaller than this count as ties (two means of the same numbers summed in another order).
TOLERANCE = 1e-9
#: Significance level of :func:`baseline_margins`' verdict: a margin with ``p`` at or above it is a tie.
ALPHA = 0.05
_KEYS = KEYS
_MEASURES = MEASURES


def _label(frame: pd.DataFrame) -> pd.Series:
    """``'sigma=0.25'`` / ``'MiniLM'`` per row, as the sweep's summaries name the rerankers."""
    return pd.Series(reranker_labels(frame), index=frame.index)


def load_sweeps(files: Mapping[str, Union[str, Path, Sequence[Union[str, Path]]]]) -> pd.DataFrame:
    """Sweep CSVs as one table: ``{collection: path or paths}`` -> rows with a ``collection`` column.

    Several files of one collection are joined (e.g. one run with the simulated rerankers, one with MiniLM). A row
    present in two files with the same values is kept once.

    Where the files have their provenance records (``CSV.json``), these must agree: the files of one collection
    come from one collection (its ``collection_sha256``), two collections are not one, and two files that hold rows
    of one reranker were run on the same number of queries (a mean over other queries is another comparison).

    Raises:
        FileNotFoundError: for a missing file.
        ValueError: for a file without the sweep's columns (an old CSV without ``budget``: run the sweep again), an
            empty file, a row without a value of a measure, two files that give the same row (system, reranker,
            sigma, seeds, budget) different values, or records that disagree as above.
    """
    frames = []
    for collection, path in _paths(files):
        frame = _read_table(path, collection, 'sweep CSV')
        missing = [c for c in _KEYS + list(_MEASURES) if c not in frame.columns]
        if missing:
            raise ValueError(f'{path} is not a sweep table: no column {", ".join(missing)} (write it with '
                             'examples/strength_sweep.py; a CSV from before the budget column needs a rerun)')
        if frame.empty:
            raise ValueError(f'{path} (collection {collection!r}) holds no rows; give the CSV a sweep wrote, or leave '
                             'the file out')
        _check_measured(frame, str(path))
        frames.append(frame.assign(collection=collection, file=str(path)))
    if not frames:
        raise ValueError('no sweep CSVs given: pass {collection: path}')
    _check_records(frames)
    table = pd.concat(frames, ignore_index=True)
    keys = ['collection'] + _KEYS
    table = table.drop_duplicates(keys + list(_MEASURES))
    clash = table[table.duplicated(keys, keep=False)]
    if len(clash):
        row = clash.iloc[0]
        files_ = sorted(clash[(clash[keys].fillna(-1) == row[keys].fillna(-1)).all(axis=1)].file)
        raise ValueError(f'{row.collection}: {row.system} {row.reranker} sigma={row.sigma} noise_seed='
                         f'{row.noise_seed} budget={row.budget} has different values in {", ".join(files_)}; '
                         'give each collection one run of every configuration')
    return table.drop(columns='file').reset_index(drop=True)


#: what pandas reads as a missing value by default (its own list): kept for every column of a per-query file but qid
_MISSING = frozenset({'', '#N/A', '#N/A N/A', '#NA', '-1.#IND', '-1.#QNAN', '-NaN', '-nan', '1.#IND', '1.#QNAN',
                      '<NA>', 'N/A', 'NA', 'NULL', 'NaN', 'None', 'n/a', 'nan', 'null'})


def _read_table(path: Path, collection: str, what: str, **kwargs) -> pd.DataFrame:
    """A CSV of ``collection``, with a missing or empty file named."""
    if not path.is_file():
        raise FileNotFoundError(f'no {what} at {path} (collection {collection!r})')
    try:
        return pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise ValueError(f'{path} (collection {collection!r}) is empty: not even a header; give the {what} a sweep '
                         'wrote, or leave the file out') from None


def _check_measured(frame: pd.DataFrame, where: str) -> None:
    """Refuse a row without a value of a measure: a mean would be taken over the other rows, silently."""
    for measure in _MEASURES:
        values = pd.to_numeric(frame[measure], errors='coerce')
        if values.isna().any():
            row = frame[values.isna()].iloc[0]
            query = f' qid {row.qid}' if 'qid' in frame.columns else ''
            raise ValueError(f'{where}: {row.system} {row.reranker} sigma={row.sigma} noise_seed={row.noise_seed} '
                             f'partition_seed={row.partition_seed} budget={row.budget}{query} has no {measure} '
                             f'(empty, NaN or not a number; {int(values.isna().sum())} rows like this); a sweep '
                             'writes every value: rerun it, or remove the row')


def _check_records(frames: Sequence[pd.DataFrame]) -> None:
    """The provenance records of the files of :func:`load_sweeps` agree: one collection per name, one name per
    collection, and one query count per reranker of a collection (files without a record are not checked)."""
    from ._provenance import read_sidecar
    seen: Dict[str, Tuple[str, str]] = {}  # collection_sha256 -> (name, file)
    named: Dict[str, Tuple[str, str]] = {}  # name -> (collection_sha256, file)
    counts: List[Tuple[str, str, set, int]] = []  # (name, file, reranker labels, queries)
    records = [(frame.collection.iloc[0], frame.file.iloc[0], read_sidecar(frame.file.iloc[0])) for frame in frames]
    # the collection each record names, by its last part (a name, a path or an ir_datasets id)
    claims = {(name, path): str(record.get('collection') or '').rstrip('/').rsplit('/', 1)[-1]
              for name, path, record in records}
    claimed: Dict[str, set] = {}
    for (name, _), recorded in claims.items():
        claimed.setdefault(name, set()).add(recorded)
    for (name, path), recorded in claims.items():
        # a swap: this file names another given collection, whose own files do not name it
        if recorded and recorded != name and recorded in claimed and recorded not in claimed[recorded]:
            raise ValueError(f'{path} is given as {name}, but its record says it is a sweep of {recorded}, which is '
                             f'given too: are the two swapped? Give each name the files of its own collection')
    for frame, (name, path, record) in zip(frames, records):
        sha, queries = record.get('collection_sha256'), record.get('queries')
        if sha:
            other = named.setdefault(name, (sha, path))
            if other[0] != sha:
                raise ValueError(f'{name}: {other[1]} and {path} are sweeps of two different collections (their '
                                 'records name other collection_sha256); give each collection its own name')
            first = seen.setdefault(sha, (name, path))
            if first[0] != name:
                raise ValueError(f'{first[0]} and {name} are one collection (the records of {first[1]} and {path} '
                                 'name the same collection_sha256); give each name the files of its own collection')
        if isinstance(queries, int):
            labels = set(_label(frame))
            for other_name, other_path, other_labels, other_queries in counts:
                shared = labels & other_labels
                if other_name == name and shared and other_queries != queries:
                    raise ValueError(f'{name}: {other_path} ran {other_queries} queries and {path} {queries}, both '
                                     f'with {sorted(shared)[0]}; systems are compared over one set of queries: rerun '
                                     'one of them with the other\'s --queries')
            counts.append((name, path, labels, queries))


def per_query_path(path: Union[str, Path]) -> Path:
    """Where ``strength_sweep.py`` writes the per-query values of the sweep CSV ``path``: ``X.csv`` ->
    ``X.perquery.csv.gz`` (gzip without a time stamp, so a rerun writes the same bytes)."""
    path = Path(path)
    stem = path.name[:-len('.csv')] if path.name.endswith('.csv') else path.name
    return path.with_name(stem + '.perquery.csv.gz')


def load_per_query(files: Mapping[str, Union[str, Path, Sequence[Union[str, Path]]]]) -> pd.DataFrame:
    """The per-query rows beside sweep CSVs (:func:`per_query_path`), as one table with a ``collection`` column.

    Each file is checked against its CSV: the mean over its queries of every row must give the CSV's value
    (to ``1e-9``), so a per-query file from another run is refused rather than tested.

    Raises:
        FileNotFoundError: for a CSV without its per-query file (sweeps from before it was written: rerun the
            command in the CSV's record, ``CSV.json``; the CSV comes out the same).
        ValueError: for a per-query file whose means differ from its CSV.
    """
    frames = []
    for collection, path in _paths(files):
        side = per_query_path(path)
        if not path.is_file():  # the CSV itself: naming its per-query file and record would mislead
            raise FileNotFoundError(f'no sweep CSV at {path} (collection {collection!r})')
        if not side.is_file():
            raise FileNotFoundError(f'no per-query values at {side} for {path} (collection {collection!r}): '
                                    'examples/strength_sweep.py writes them beside its CSV; rerun the command in '
                                    f'{path}.json')
        # '007' stays '007', and a qid 'NA', 'nan', 'null' or 'None' stays that text: pandas reads those as missing,
        # which refused the file as one with rows without a qid (the other columns keep pandas' missing values)
        header = _read_table(side, collection, 'per-query file', nrows=0).columns
        rows = _read_table(side, collection, 'per-query file', dtype={'qid': str}, keep_default_na=False,
                           na_values={c: sorted(_MISSING) for c in header if c != 'qid'})
        missing = [c for c in [*_KEYS, 'qid', *_MEASURES] if c not in rows.columns]
        if missing:
            raise ValueError(f'{side} is not a per-query file of a sweep: no column {", ".join(missing)}; '
                             'examples/strength_sweep.py writes it beside its CSV: rerun the command in '
                             f'{path}.json')
        if rows.qid.isna().any():
            raise ValueError(f'{side}: {int(rows.qid.isna().sum())} rows have no qid; rerun the command in '
                             f'{path}.json')
        means = rows.groupby(_KEYS, dropna=False)[list(_MEASURES)].mean().reset_index()
        table = _read_table(path, collection, 'sweep CSV')
        both = table.merge(means, on=_KEYS, how='outer', suffixes=('', '_q'), indicator=True)
        off = (both._merge != 'both') | np.any([~np.isclose(both[m], both[f'{m}_q'], rtol=0, atol=1e-9)
                                                for m in _MEASURES], axis=0)
        if off.any():
            row = both[off].iloc[0]
            raise ValueError(f'{side} does not match {path}: {row.system} {row.reranker} sigma={row.sigma} '
                             f'noise_seed={row.noise_seed} budget={row.budget} differs or is missing ({int(off.sum())} '
                             'rows); rerun the sweep so that both come from one run')
        frames.append(rows.assign(collection=collection))
    if not frames:
        raise ValueError('no sweep CSVs given: pass {collection: path}')
    keys = ['collection'] + _KEYS + ['qid']
    return pd.concat(frames, ignore_index=True).drop_duplicates(keys)


def _stratified(deltas: Sequence[Sequence[float]]) -> Optional[tuple]:
    """``(D, SE, dof)`` of :func:`stratified_paired_test` (``dof`` NaN when ``SE`` is 0); None when a collection has
    fewer than two queries or there is none."""
    arrays = [np.asarray(d, dtype=float) for d in deltas]
    if not arrays or any(len(a) < 2 for a in arrays):
        return None
    count = len(arrays)
    mean = float(sum(a.mean() for a in arrays) / count)
    parts = [a.var(ddof=1) / len(a) / count ** 2 for a in arrays]
    spread = float(np.sqrt(sum(parts)))
    if spread == 0:
        return mean, 0., float('nan')
    return mean, spread, float(sum(parts) ** 2 / sum(v ** 2 / (len(a) - 1) for v, a in zip(parts, arrays)))


def stratified_paired_test(deltas: Sequence[Sequence[float]]) -> float:
    """Two-sided p-value that the mean over collections of the mean paired difference is zero.

    ``deltas`` holds, per collection, one paired difference per query (system minus baseline). The statistic is
    ``D = mean_c mean(d_c)`` with standard error ``sqrt(sum_c s_c^2 / n_c) / C`` (``s_c`` the sample standard
    deviation of collection ``c``'s ``n_c`` differences) and Welch-Satterthwaite degrees of freedom; with one
    collection it is the paired t-test. A collection with fewer than two queries gives NaN; no spread at all gives
    1.0 when ``D`` is 0, else 0.0.
    """
    from scipy.stats import t as student
    stats = _stratified(deltas)
    if stats is None:
        return float('nan')
    mean, spread, dof = stats
    if spread == 0:
        return 1.0 if abs(mean) <= TOLERANCE else 0.0
    return float(2 * student.sf(abs(mean) / spread, dof))


def stratified_paired_interval(deltas: Sequence[Sequence[float]], level: float = 1 - ALPHA) -> Tuple[float, float]:
    """The two-sided ``level`` confidence interval of ``D``, the statistic of :func:`stratified_paired_test`:
    ``D -/+ t_(1+level)/2,dof * SE``. It excludes 0 exactly when that test's p is below ``1 - level``. ``(D, D)``
    with no spread; ``(NaN, NaN)`` where the test gives NaN."""
    from scipy.stats import t as student
    check_number('level', level, low=0, high=1, low_open=True, high_open=True, note='e.g. 0.95')
    stats = _stratified(deltas)
    if stats is None:
        return float('nan'), float('nan')
    mean, spread, dof = stats
    if spread == 0:
        return mean, mean
    half = float(student.ppf((1 + level) / 2, dof)) * spread
    return mean - half, mean + half


def parse_sweep_files(items: Sequence[str]) -> Dict[str, List[str]]:
    """Command-line arguments ``COLLECTION=PATH[,PATH...]`` -> ``{collection: [paths]}`` (a collection named twice
    gets the paths of both), as :func:`load_sweeps` and :func:`load_per_query` take them.

    Raises:
        ValueError: for an argument without a collection or a path.
    """
    files: Dict[str, List[str]] = {}
    for item in items:
        name, sep, paths = item.partition('=')
        if not sep or not name or not paths:
            raise ValueError(f'{item!r}: expected COLLECTION=PATH[,PATH...], e.g. cranfield=cranfield.csv')
        files.setdefault(name, []).extend(p for p in paths.split(',') if p)
    return files


def _paths(files: Mapping[str, Union[str, Path, Sequence[Union[str, Path]]]]):
    """``(collection, Path)`` for every file of ``{collection: path or paths}``, in order."""
    for collection, paths in files.items():
        for path in [paths] if isinstance(paths, (str, Path)) else list(paths):
            yield str(collection), Path(path)


def sweep_provenance(files: Mapping[str, Union[str, Path, Sequence[Union[str, Path]]]]) -> pd.DataFrame:
    """Who wrote each sweep CSV: one row per file of ``{collection: path or paths}`` (as :func:`load_sweeps` takes).

    Columns: ``collection``, ``file`` (as given), ``status`` (``'recorded'``, ``'changed'``: the CSV differs from the
    one its record describes, ``'missing'``: no record, ``'unreadable'``; see
    :func:`~pyterrier_garen._provenance.read_sidecar`), ``code``, ``date``, ``queries``, ``command`` (``'-'`` where
    there is no record) and ``packages`` (a dict, empty without a record).

    Raises:
        FileNotFoundError: for a missing CSV.
    """
    from ._provenance import read_sidecar
    rows = []
    for collection, path in _paths(files):
        if not path.is_file():
            raise FileNotFoundError(f'no sweep CSV at {path} (collection {collection!r})')
        record = read_sidecar(path)  # without a readable record, only its status (and an error)
        packages = record.get('packages')
        rows.append({'collection': collection, 'file': str(path), 'status': record['status'],
                     **{k: str(record.get(k, '-')) for k in ('code', 'date', 'queries', 'command')},
                     'packages': dict(packages) if isinstance(packages, dict) else {}})
    return pd.DataFrame(rows, columns=['collection', 'file', 'status', 'code', 'date', 'queries', 'command',
                                       'packages'])


def provenance_notes(provenance: pd.DataFrame) -> List[str]:
    """Sentences on what :func:`sweep_provenance` found that a reader of a verdict must know: files without a
    record or changed after it, and the code versions and package versions that differ between recorded files
    (none of these: one sentence saying every file was written by one code version)."""
    notes = []
    total = len(provenance)
    for status, say in (('missing', 'no provenance record beside {n} of {total} files (written by hand or before '
                                    'records existed): {names}'),
                        ('unreadable', 'an unreadable provenance record beside {n} of {total} files: {names}'),
                        ('changed', '{n} of {total} files changed after their provenance record was written (the '
                                    'record no longer describes them): {names}')):
        names = provenance.file[provenance.status == status].tolist()
        if names:
            notes.append(say.format(n=len(names), total=total, names=', '.join(names)))
    known = provenance[provenance.status.isin(['recorded', 'changed'])]
    codes = list(dict.fromkeys(known.code))
    if len(codes) > 1:
        notes.append(f'the files were written by {len(codes)} code versions ({", ".join(codes)}): a difference '
                     'between them may be the code, not the systems')
    elif codes and codes[0].endswith('+changes'):
        notes.append(f'the files were written by code with uncommitted changes ({codes[0]})')
    names = sorted({n for p in known.packages for n in p})
    differ = [f'{n} ({", ".join(sorted({str(p.get(n, "absent")) for p in known.packages}))})' for n in names
              if len({p.get(n) for p in known.packages}) > 1]
    if differ:
        notes.append(f'package versions differ between the files: {"; ".join(differ)}')
    if not notes and codes:
        notes.append(f'every file was written by code {codes[0]} with the same package versions')
    return notes


def _check_alpha(alpha: float) -> None:
    check_number('alpha', alpha, low=0, high=1, low_open=True, high_open=True, note='the significance level, e.g. 0.05')


def _paired_margin(deltas: Sequence[Sequence[float]], delta: float, alpha: float) -> Dict[str, object]:
    """``low``, ``high``, ``p`` and ``verdict`` of a margin ``delta`` whose per-query differences (per collection) are
    ``deltas``: the test and interval of :func:`stratified_paired_test` and :func:`stratified_paired_interval`, and
    ``'ahead'`` or ``'behind'`` when ``p < alpha``, else ``'tie'`` (``'-'`` when ``p`` is NaN)."""
    p = stratified_paired_test(deltas)
    low, high = stratified_paired_interval(deltas, 1 - alpha)
    verdict = '-' if p != p else 'tie' if p >= alpha else 'ahead' if delta > 0 else 'behind'
    return {'low': low, 'high': high, 'p': p, 'verdict': verdict}


def _prepared(table: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """Rows averaged over partition seeds, with the reranker label ``r`` and a noise seed that is never NaN
    (``keys``: further columns kept apart, e.g. ``qid``)."""
    if 'collection' not in table.columns:
        table = table.assign(collection='')
    _check_measured(table, 'the per-query rows' if 'qid' in keys else 'the sweep table')
    frame = table.assign(r=_label(table), seed=table.noise_seed.fillna(-1).astype(int))
    return frame.groupby(['collection', 'system', 'r', 'seed', 'budget', *keys], sort=False)[list(_MEASURES)] \
        .mean().reset_index()


def _rerankers(frame: pd.DataFrame, rerankers: Optional[Sequence[str]]) -> List[str]:
    present = list(dict.fromkeys(frame.r))
    if rerankers is None:
        sims = sorted((r for r in present if r != 'MiniLM'), key=lambda r: float(r.split('=')[1]))
        return sims + [r for r in present if r == 'MiniLM']
    return list(rerankers)


def budget_monotonicity(table: pd.DataFrame, systems: Iterable[str] = ('GAREN', 'GAREN+'), *,
                        measure: str = 'R@100', rerankers: Optional[Sequence[str]] = None,
                        perquery: Optional[pd.DataFrame] = None, alpha: float = ALPHA) -> pd.DataFrame:
    """Whether ``measure`` never falls as the budget grows, per collection, system, reranker and noise seed.

    Args:
        table: sweep rows with ``collection``.
        systems: systems to check (absent ones give no rows).
        measure: ``'R@100'`` or ``'nDCG@10'``.
        rerankers: labels to check (default: every one in the table).

    Returns:
        ``collection, system, reranker, noise_seed`` (-1 for MiniLM), one column per budget (NaN where that budget
        was not run), ``worst_step`` (the most negative change between consecutive budgets the row has, NaN with
        fewer than two) and ``never_falls`` (every step at least ``-TOLERANCE``). Rows with one budget only are left
        out: there is nothing to check. With ``perquery`` (:func:`load_per_query`), also ``p``: the paired t-test
        of the worst step over the collection's queries (per query, the measure at the larger budget minus the
        smaller, averaged over partition seeds), and ``step_verdict``: ``'falls'`` or ``'rises'`` when ``p < alpha``,
        else ``'tie'`` (``'-'`` when the per-query rows lack either budget).
    """
    _check_alpha(alpha)
    frame = _prepared(table)
    queries = _prepared(perquery, ['qid']) if perquery is not None else None
    frame = frame[frame.system.isin(list(systems)) & frame.r.isin(_rerankers(frame, rerankers))]
    budgets = sorted(frame.budget.unique())
    keys = ['collection', 'system', 'r', 'seed']
    # the per-query rows of each run, split once (a mask over every row per run cost seconds on a sweep of sweeps)
    runs = dict(iter(queries.groupby(keys, sort=False))) if queries is not None else {}
    rows = []
    for (collection, system, r, seed), group in frame.groupby(keys, sort=False):
        values = group.set_index('budget')[measure].sort_index()
        if len(values) < 2:
            continue
        steps = values.diff()
        worst = float(steps.min())
        row = {'collection': collection, 'system': system, 'reranker': r, 'noise_seed': seed,
               **{int(b): values.get(b, np.nan) for b in budgets},
               'worst_step': worst, 'never_falls': worst >= -TOLERANCE}
        if queries is not None:
            upper = steps.idxmin()  # the larger budget of the worst step (the first such step on a tie)
            lower = values.index[values.index.get_loc(upper) - 1]
            mine = runs.get((collection, system, r, seed), queries.iloc[:0])
            wide = mine[mine.budget.isin([lower, upper])].groupby(['qid', 'budget'])[measure].mean().unstack()
            diff = (wide[upper] - wide[lower]).dropna() if {lower, upper} <= set(wide.columns) else pd.Series([])
            p = stratified_paired_test([diff.to_numpy()])
            row['p'] = p
            row['step_verdict'] = '-' if p != p else 'tie' if p >= alpha else 'rises' if worst > 0 else 'falls'
        rows.append(row)
    columns = ['collection', 'system', 'reranker', 'noise_seed', *map(int, budgets), 'worst_step', 'never_falls',
               *(['p', 'step_verdict'] if queries is not None else [])]
    return pd.DataFrame(rows, columns=columns)


def monotonicity_summary(monotonicity: pd.DataFrame) -> pd.DataFrame:
    """:func:`budget_monotonicity`'s rows counted per system and reranker, over collections and noise seeds.

    Returns ``system, reranker, rows``, one column per budget (the mean of the rows' values there, rows without
    that budget left out; the input's budget columns are integers, or digit strings as in a CSV of it read back),
    ``never_falls`` (rows whose every step is at least ``-TOLERANCE``), ``worst_step`` (the most negative of the
    rows' worst steps) and, when the rows carry the paired test (``step_verdict``), ``rises``, ``tie`` and
    ``falls``: the rows whose worst step has that verdict (a row marked ``'-'`` counts in none of them). Systems
    and rerankers keep their first order in the input. Raises ``ValueError`` naming a missing column.
    """
    needed = ['system', 'reranker', 'worst_step', 'never_falls']
    missing = [c for c in needed if c not in getattr(monotonicity, 'columns', ())]
    if missing:
        raise ValueError(f'monotonicity_summary: missing column(s) {", ".join(missing)}; pass the frame '
                         'budget_monotonicity returns')
    paired = 'step_verdict' in monotonicity.columns
    # budget columns: integers as budget_monotonicity names them, digit strings as a CSV of it reads back
    budgets = [c for c in monotonicity.columns if not isinstance(c, str) or c.isdigit()]
    rows = []
    for (system, reranker), group in monotonicity.groupby(['system', 'reranker'], sort=False):
        row = {'system': system, 'reranker': reranker, 'rows': len(group),
               **{b: float(group[b].mean()) for b in budgets},
               'never_falls': int(group.never_falls.sum()), 'worst_step': float(group.worst_step.min())}
        if paired:
            row.update({v: int((group.step_verdict == v).sum()) for v in ('rises', 'tie', 'falls')})
        rows.append(row)
    columns = ['system', 'reranker', 'rows', *budgets, 'never_falls', 'worst_step',
               *(['rises', 'tie', 'falls'] if paired else [])]
    return pd.DataFrame(rows, columns=columns)


def baseline_margins(table: pd.DataFrame, system: str = 'GAREN+', baselines: Sequence[str] = ('GAR', 'SlideGAR', 'RGS'),
                     *, budgets: Optional[Sequence[int]] = None, rerankers: Optional[Sequence[str]] = None,
                     measures: Sequence[str] = _MEASURES, perquery: Optional[pd.DataFrame] = None,
                     alpha: float = ALPHA) -> pd.DataFrame:
    """``system`` against the best of ``baselines``, on the mean over collections, per budget, reranker and measure.

    In each collection a system's value is its mean over the noise seeds that ``system`` has there (the baselines
    are paired with it: a seed only they ran does not count). The mean over collections then picks the best
    baseline (the first in ``baselines`` on a tie). A cell is left out unless ``system`` and every baseline have it
    in every collection of the table.

    Returns:
        ``budget, reranker, measure, best`` (the best baseline's name), ``best_value``, ``value`` (the system's),
        ``delta`` (value - best_value), ``holds`` (delta at least ``-TOLERANCE``), ``delta_min`` / ``delta_max`` (the
        delta per run of the system: each noise seed and partition seed it has in every collection, against the
        best baseline at that noise seed, averaged over the baseline's partitions; equal to ``delta`` with one
        noise seed and one partition, e.g. MiniLM on one partition) and
        per collection ``delta:<collection>``: the system minus the best baseline *of that collection*. With
        ``perquery`` (:func:`load_per_query`), also ``p`` (:func:`stratified_paired_test` of the system against
        that best baseline: per query, the difference averaged over the paired noise seeds), ``low`` / ``high``
        (its ``1 - alpha`` confidence interval of ``delta``, :func:`stratified_paired_interval`) and ``verdict``:
        ``'ahead'`` or ``'behind'`` when ``p < alpha``, else ``'tie'`` (``'-'`` when ``p`` is NaN: the per-query
        rows lack one of the two systems or a collection, or a collection has fewer than two queries).
    """
    _check_alpha(alpha)
    _check_compared(system, baselines, measures)
    frame = _prepared(table)
    raw = _prepared(table, ['partition_seed'])
    queries = _prepared(perquery, ['qid']) if perquery is not None else None
    baselines = list(baselines)
    collections = list(dict.fromkeys(frame.collection))
    frame = frame[frame.system.isin([system] + baselines)]
    budgets = sorted(frame.budget.unique()) if budgets is None else [int(b) for b in budgets]
    rows = []
    for budget in budgets:
        for r in _rerankers(frame, rerankers):
            cell = frame[(frame.budget == budget) & (frame.r == r)]
            _check_seeds(cell, system, f'at budget {budget} with {r}')  # before the pairing drops their rows
            ours = cell[cell.system == system][['collection', 'seed']].drop_duplicates()
            cell = cell.merge(ours, on=['collection', 'seed'])  # the system's seeds only
            have = cell.groupby('collection').system.nunique()
            if len(have) < len(collections) or (have < len(baselines) + 1).any():
                continue  # incomplete: someone did not run this cell in some collection
            per = cell.groupby(['collection', 'system'])[list(measures)].mean()
            mean = per.groupby('system').mean()
            runs = _runs(raw, system, budget, r)
            for measure in measures:
                best = max(baselines, key=lambda b: (mean.loc[b, measure], -baselines.index(b)))
                delta = float(mean.loc[system, measure] - mean.loc[best, measure])
                by_seed = [runs.loc[(s, p), measure] - cell[(cell.seed == s) & (cell.system == best)][measure].mean()
                           for s, p in runs.index]
                row = {'budget': int(budget), 'reranker': r, 'measure': measure, 'best': best,
                       'best_value': float(mean.loc[best, measure]), 'value': float(mean.loc[system, measure]),
                       'delta': delta, 'holds': delta >= -TOLERANCE,
                       'delta_min': float(min(by_seed)) if by_seed else delta,
                       'delta_max': float(max(by_seed)) if by_seed else delta}
                for collection in collections:
                    theirs = per.loc[collection].loc[baselines, measure].max()
                    row[f'delta:{collection}'] = float(per.loc[(collection, system), measure] - theirs)
                if queries is not None:
                    row.update(_paired_margin(_paired_deltas(queries, budget, r, system, best, ours, measure,
                                                             collections), delta, alpha))
                rows.append(row)
    columns = ['budget', 'reranker', 'measure', 'best', 'best_value', 'value', 'delta', 'holds', 'delta_min',
               'delta_max', *(f'delta:{c}' for c in collections),
               *(['low', 'high', 'p', 'verdict'] if queries is not None else [])]
    return pd.DataFrame(rows, columns=columns)


def fusion_weight_margins(tables: Mapping[float, pd.DataFrame], system: str = 'GAREN+',
                          baselines: Sequence[str] = ('GAR', 'SlideGAR', 'RGS'), *,
                          budgets: Optional[Sequence[int]] = None, rerankers: Optional[Sequence[str]] = None,
                          measures: Sequence[str] = _MEASURES,
                          perqueries: Optional[Mapping[float, pd.DataFrame]] = None,
                          alpha: float = ALPHA,
                          own_fusion: Optional[Sequence[str]] = None) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """Every system at its own best weight of the shared fusion stage: :func:`baseline_margins` after tuning.

    ``tables`` maps a fusion weight (``strength_sweep.py --fusion W``) to the sweep rows run at that weight. For each
    budget, reranker and measure, each system's weight is the one with its best mean over the collections (each
    collection's value the mean over the system's runs there; the lighter weight on a tie), chosen from the weights
    at which the system has the cell in every collection. Then ``system`` at its weight is compared with the best
    of ``baselines``, each at its own weight, exactly as :func:`baseline_margins` compares them (with
    ``perqueries``, the per-query rows at each weight, also the paired test). The weights are chosen on the
    same queries they are judged on, for every system alike: an upper bound of what tuning the stage could give
    each one, not a setting to ship.

    A sweep at weight 0 has no shared stage, and a system of ``own_fusion`` then ran with its own fusion: help the
    others did not get. Its weight-0 rows are left out (NaN in ``values``), so that it is never chosen at a weight
    where it alone is fused. ``own_fusion=None``: the registered systems declared ``own_fusion`` (GAREN+, whose
    ``GAREN_PLUS`` carries a fusion it drops only when the shared stage is there).

    Returns:
        ``(values, margins)``. ``values``: ``budget, reranker, measure, system``, one column per weight (its mean
        over the collections; NaN where a collection lacks the cell) and ``best_weight``. ``margins``: the columns of
        :func:`baseline_margins` with ``weight`` (the system's) after ``measure`` and ``best_weight`` (the best
        baseline's) after ``best``.

    Raises:
        ValueError: for no weights, a negative or non-finite weight, a weight's table without any row of
            ``system``, or per-query rows for other weights than the tables'.
    """
    if not tables:
        raise ValueError('no fusion weights: give at least one {weight: sweep table}')
    if own_fusion is None:
        from ._registry import system_names
        own_fusion = system_names(own_fusion=True)
    weights = sorted(tables)
    for w in weights:
        check_number('fusion weight', w, low=0, note='the --fusion W each table was run with')
        if not (tables[w].system == system).any():
            raise ValueError(f'the table of fusion weight {w:g} has no row of {system!r}; its systems are '
                             f'{sorted(tables[w].system.unique())}')
    if perqueries is not None and set(perqueries) != set(weights):
        raise ValueError(f'the per-query rows are for fusion weights {sorted(perqueries)}, the tables for '
                         f'{weights}: give both for the same weights')
    names = [system] + [b for b in baselines if b != system]
    frames = {w: _prepared(tables[w]) for w in weights}
    collections = list(dict.fromkeys(c for w in weights for c in frames[w].collection))
    cells = pd.concat([f[['budget', 'r']] for f in frames.values()]).drop_duplicates()
    budgets = sorted(cells.budget.unique()) if budgets is None else [int(b) for b in budgets]
    everything = pd.concat([f.assign(weight=w) for w, f in frames.items()], ignore_index=True)
    value_rows, margin_rows = [], []
    for budget in budgets:
        for r in _rerankers(everything[everything.budget == budget], rerankers):
            cell = everything[(everything.budget == budget) & (everything.r == r)]
            if cell.empty:
                continue  # no sweep ran this budget with this reranker
            per = cell.groupby(['system', 'weight', 'collection'])[list(measures)].mean()
            complete = per.groupby(level=['system', 'weight']).size() == len(collections)
            mean = per.groupby(level=['system', 'weight']).mean()
            for measure in measures:
                chosen = {}
                for name in names:
                    row = {'budget': int(budget), 'reranker': r, 'measure': measure, 'system': name}
                    scores = {}
                    for w in weights:
                        ok = (name, w) in complete.index and complete.loc[(name, w)] and \
                            not (w == 0 and name in own_fusion)  # its own fusion, where the others have none
                        row[w] = float(mean.loc[(name, w), measure]) if ok else np.nan
                        if ok:
                            scores[w] = row[w]
                    # the best mean; the lighter weight on a tie
                    chosen[name] = max(scores, key=lambda w: (scores[w], -w)) if scores else None
                    row['best_weight'] = chosen[name] if scores else np.nan
                    value_rows.append(row)
                if any(chosen[n] is None for n in names):
                    continue  # someone lacks the cell at every weight
                picked = pd.concat([tables[chosen[n]][tables[chosen[n]].system == n] for n in names])
                queries = None
                if perqueries is not None:
                    queries = pd.concat([perqueries[chosen[n]][perqueries[chosen[n]].system == n] for n in names])
                margin = baseline_margins(picked, system, [n for n in names if n != system], budgets=[budget],
                                          rerankers=[r], measures=[measure], perquery=queries, alpha=alpha)
                if len(margin):
                    row = margin.iloc[0].to_dict()
                    row['weight'], row['best_weight'] = chosen[system], chosen[row['best']]
                    margin_rows.append(row)
    values = pd.DataFrame(value_rows, columns=['budget', 'reranker', 'measure', 'system', *weights, 'best_weight'])
    margin_columns = ['budget', 'reranker', 'measure', 'weight', 'best', 'best_weight', 'best_value', 'value', 'delta',
                      'holds', 'delta_min', 'delta_max', *(f'delta:{c}' for c in collections),
                      *(['low', 'high', 'p', 'verdict'] if perqueries is not None else [])]
    return values, pd.DataFrame(margin_rows, columns=margin_columns)


def _runs(raw: pd.DataFrame, system: str, budget: int, r: str) -> pd.DataFrame:
    """The system's runs in a cell: one row per (noise seed, partition seed) that every collection of ``raw`` has
    (index ``seed, partition_seed``), its measures the mean over those collections."""
    mine = raw[(raw.system == system) & (raw.budget == budget) & (raw.r == r)]
    count = mine.groupby(['seed', 'partition_seed']).collection.nunique()
    every = count[count == raw.collection.nunique()].index
    mine = mine.set_index(['seed', 'partition_seed']).loc[lambda f: f.index.isin(every)]
    return mine.groupby(level=['seed', 'partition_seed'])[list(_MEASURES)].mean().sort_index()


def _paired_deltas(queries: pd.DataFrame, budget: int, r: str, system: str, best: str, ours: pd.DataFrame,
                   measure: str, collections: Sequence[str]) -> List[np.ndarray]:
    """Per collection, the per-query ``system - best`` of ``measure``, averaged over the system's noise seeds."""
    cell = queries[(queries.budget == budget) & (queries.r == r)].merge(ours, on=['collection', 'seed'])
    wide = cell[cell.system.isin([system, best])].pivot_table(index=['collection', 'seed', 'qid'], columns='system',
                                                               values=measure)
    if system not in wide.columns or best not in wide.columns:
        return []
    _check_same_queries(wide[system], wide[best], system, best, f'at budget {budget} with {r}')
    diff = (wide[system] - wide[best]).dropna().groupby(level=['collection', 'qid']).mean()
    present = set(diff.index.get_level_values(0))  # a collection without per-query rows: no test (NaN)
    return [diff.loc[c].to_numpy() if c in present else np.empty(0) for c in collections]


def _check_seeds(cell: pd.DataFrame, system: str, where: str) -> None:
    """Refuse a cell where another system lacks a noise seed that ``system`` has in some collection: ``system``'s
    mean would then be over more seeds than the other's, and the two are no longer paired."""
    for collection, rows in cell.groupby('collection', sort=False):
        mine = set(rows[rows.system == system].seed)
        for other, theirs in rows[rows.system != system].groupby('system', sort=False):
            lacking = sorted(mine - set(theirs.seed))
            if lacking:
                seeds = ', '.join(map(str, lacking))
                raise ValueError(f'{collection or "the table"}: {other} {where} has no run with noise seed {seeds}, '
                                 f'which {system} has; the comparison pairs the seeds: run {other} with them too, or '
                                 f'leave {system}\'s out')


def _check_same_queries(ours: pd.Series, theirs: pd.Series, system: str, other: str, where: str) -> None:
    """Refuse a paired test whose two systems were measured on different queries in some run: the queries one of
    them lacks would drop out of the test, silently (e.g. qids written '001' in one file and '1' in the other)."""
    a, b = set(ours.dropna().index), set(theirs.dropna().index)
    runs = {key[:-1] for key in a | b}
    for run in sorted(runs, key=str):
        mine = {key[-1] for key in a if key[:-1] == run}
        yours = {key[-1] for key in b if key[:-1] == run}
        if mine and yours and mine != yours:
            only = sorted(mine - yours)[:3] or sorted(yours - mine)[:3]
            raise ValueError(f'the per-query rows of {system} and {other} {where} name different queries ({len(mine)} '
                             f'and {len(yours)}, {len(mine & yours)} in common; e.g. {only} in one only); the paired '
                             'test needs both measured on the same queries: rerun them on one set of topics')


def budget_values(table: pd.DataFrame, systems: Sequence[str], measure: str = 'nDCG@10', *,
                  rerankers: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """Each system's ``measure`` at every budget of the table, per reranker: the mean over collections of the mean
    over noise seeds of the mean over partition seeds (as :func:`baseline_margins` averages). Returns ``reranker,
    system`` and one column per budget (NaN where a system lacks that budget in some collection), rerankers in
    :func:`baseline_margins`' order and systems in the order given; a system absent from the table has no row."""
    frame = _prepared(table)
    collections = frame.collection.nunique()
    frame = frame[frame.system.isin(list(systems))]
    budgets = sorted(frame.budget.unique())
    per = frame.groupby(['r', 'system', 'budget', 'collection'])[measure].mean()
    counts = per.groupby(level=['r', 'system', 'budget']).size()
    means = per.groupby(level=['r', 'system', 'budget']).mean().where(counts == collections)
    rows = []
    for r in _rerankers(frame, rerankers):
        for system in systems:
            if (r, system) not in means.index.droplevel('budget'):
                continue
            rows.append({'reranker': r, 'system': system,
                         **{int(b): float(means.get((r, system, b), np.nan)) for b in budgets}})
    return pd.DataFrame(rows, columns=['reranker', 'system', *map(int, budgets)])


COST_COLUMNS = ['collection', 'system', 'budget', 'sent']


def _cost_lookup(costs: pd.DataFrame) -> Dict[Tuple[str, str, int, Optional[str]], float]:
    """``{(collection, system, budget, reranker): documents sent per query}`` of a cost table, checked; the reranker
    is ``None`` for a row that holds for every reranker (no ``reranker`` column, or an empty cell in it)."""
    missing = [c for c in COST_COLUMNS if c not in getattr(costs, 'columns', ())]
    if missing:
        raise ValueError(f'the cost table has no column {", ".join(missing)}; write it with bench/reranker_load.py '
                         '--out (collection, budget, system, sent, ...)')
    sent = pd.to_numeric(costs['sent'], errors='coerce')
    if sent.isna().any() or (sent < 0).any():
        at = costs[sent.isna() | (sent < 0)].iloc[0]
        raise ValueError(f'the cost table\'s sent must be a number of documents >= 0; got {at["sent"]} for '
                         f'{at["system"]} at budget {at["budget"]} on {at["collection"]}')
    budgets = pd.to_numeric(costs['budget'], errors='coerce')
    bad = ~np.isfinite(budgets) | (budgets < 1) | (budgets != budgets.round())
    if bad.any():
        at = costs[bad].iloc[0]
        raise ValueError(f'the cost table\'s budget must be a positive integer; got {at["budget"]!r} for '
                         f'{at["system"]} on {at["collection"]}')
    rerankers = costs['reranker'] if 'reranker' in costs.columns else pd.Series(None, index=costs.index, dtype=object)
    lookup = {}
    for collection, system, budget, reranker, value in zip(costs['collection'], costs['system'], budgets,
                                                           rerankers, sent):
        key = (str(collection), str(system), int(budget), None if pd.isna(reranker) else _reranker_label(reranker))
        if key in lookup and not np.isclose(lookup[key], value, rtol=0, atol=1e-9):
            which = '' if key[3] is None else f' with {key[3]}'
            raise ValueError(f'the cost table gives {system} at budget {budget} on {collection}{which} two costs '
                             f'({lookup[key]:.10g} and {value:.10g}); keep one measurement per system and budget')
        lookup[key] = float(value)
    return lookup


def _reranker_label(text) -> str:
    """A cost table's reranker as the sweep names it: ``'MiniLM'`` or ``'sigma=S'`` (``'sigma=1.0'`` is
    ``'sigma=1'``); anything else is refused, so that a row meant for one reranker never goes unused."""
    text = str(text).strip()
    name, sep, value = text.partition('=')
    if text == 'MiniLM':
        return text
    try:
        if name.strip() == 'sigma' and sep:
            return f'sigma={float(value):g}'
    except ValueError:
        pass
    raise ValueError(f'the cost table names the reranker {text!r}; name it as the sweep does, \'MiniLM\' or '
                     '\'sigma=S\' (e.g. sigma=0.25), or leave the cell empty for a cost that holds for every reranker')


def _check_compared(system: str, baselines: Sequence[str], measures: Sequence[str]) -> None:
    """Refuse a comparison with no baseline, the system among its baselines, a baseline named twice or a measure
    that the sweep does not record."""
    if not len(baselines):
        raise ValueError('no baselines given: name at least one system to compare with, e.g. GAR')
    if system in baselines:
        raise ValueError(f'{system} is both the system and one of its baselines {list(baselines)}; compare it with '
                         'the others')
    repeated = sorted({b for b in baselines if list(baselines).count(b) > 1})
    if repeated:
        raise ValueError(f'the baselines repeat {" ".join(repeated)}: name each once')
    unknown = [m for m in measures if m not in _MEASURES]
    if unknown:
        raise ValueError(f'no measure {", ".join(map(str, unknown))} in a sweep table; choose from '
                         f'{", ".join(_MEASURES)}')


def coverage_gaps(table: pd.DataFrame, systems: Sequence[str], *, budgets: Optional[Sequence[int]] = None,
                  rerankers: Optional[Sequence[str]] = None, limit: int = 5) -> List[str]:
    """Why a comparison of ``systems`` has no cell: per collection, the systems without a row, or the budgets and
    rerankers (of those asked for; default every one of the table) some system lacks (at most ``limit`` phrases)."""
    frame = _prepared(table)
    budgets = sorted(frame.budget.unique()) if budgets is None else [int(b) for b in budgets]
    rerankers = _rerankers(frame, rerankers)
    gaps = []
    for collection in dict.fromkeys(frame.collection):
        here = frame[frame.collection == collection]
        for name in systems:
            mine = here[here.system == name]
            where = f'{collection}: ' if collection else ''
            if mine.empty:
                gaps.append(f'{where}no rows of {name}')
                continue
            have = set(zip(mine.budget, mine.r))
            lacking = [f'{r} at budget {b}' for b in budgets for r in rerankers if (b, r) not in have]
            if lacking:
                more = f' and {len(lacking) - 2} more' if len(lacking) > 2 else ''
                gaps.append(f'{where}{name} has no rows for {", ".join(lacking[:2])}{more}')
    return gaps[:limit]


def cost_matched_margins(table: pd.DataFrame, costs: pd.DataFrame, system: str = 'GAREN+',
                         baselines: Sequence[str] = ('GAR', 'SlideGAR', 'RGS'), *,
                         budgets: Optional[Sequence[int]] = None, rerankers: Optional[Sequence[str]] = None,
                         measures: Sequence[str] = _MEASURES, perquery: Optional[pd.DataFrame] = None,
                         alpha: float = ALPHA, slack: float = 0.0) -> pd.DataFrame:
    """``system`` against each baseline at no more reranker work: the budgets of a sweep count distinct documents,
    but a search that shows the reranker the same document again (RGS re-ranks its queue after every expansion)
    pays for each showing, and with an LLM each showing is prompt text.

    For every baseline row (budget ``B``, reranker, measure) and in each collection, the system is taken at its
    largest budget of the table whose documents sent per query (``costs``) are at most the baseline's at ``B``
    times ``1 + slack``. A cell is left out when some collection has no such budget (the system's smallest budget
    already costs more), or lacks the baseline or the system.

    Args:
        table: sweep rows with ``collection`` (:func:`load_sweeps`).
        costs: documents sent per query: ``collection, system, budget, sent`` (``bench/reranker_load.py --out``;
            other columns are ignored), and optionally ``reranker`` (``'sigma=0.25'``, ``'MiniLM'``): a row with
            one holds for that reranker, a row without (or with an empty cell) for every reranker without a row of
            its own. Every (collection, system, budget) of the compared rows needs its cost.
        budgets: the baseline budgets to compare at (default: every budget of the table).
        slack: how much more the system may send, as a share of the baseline's cost (default 0: at most as much).

    Returns:
        ``baseline, budget`` (the baseline's), ``system_budget`` (the system's matched budget, an integer when the
        same in every collection, else ``'collection:budget ...'``), ``baseline_sent`` / ``system_sent`` (documents
        sent per query, mean over collections), ``baseline_value``, ``value``, ``delta``, ``holds`` (as in
        :func:`baseline_margins`: each a mean over collections of the mean over the system's noise seeds, the
        baseline paired to them) and per collection ``delta:<collection>``. With ``perquery``, also ``low``,
        ``high``, ``p`` and ``verdict``, as :func:`baseline_margins` gives them (per query, the system at its
        matched budget minus the baseline at ``B``).

    Raises:
        ValueError: a cost table without those columns, with a negative or non-numeric cost or two costs of one
            row, or without the cost of a compared row (naming it).
    """
    _check_alpha(alpha)
    _check_compared(system, baselines, measures)
    check_number('slack', slack, low=0, note='the share of the baseline\'s cost the system may send beyond it')
    sent = _cost_lookup(costs)
    frame = _prepared(table)
    queries = _prepared(perquery, ['qid']) if perquery is not None else None
    collections = list(dict.fromkeys(frame.collection))
    frame = frame[frame.system.isin([system, *baselines])]

    named = sorted({key[0] for key in sent})

    def cost(collection, name, budget, r):
        for key in ((str(collection), name, int(budget), r), (str(collection), name, int(budget), None)):
            if key in sent:
                return sent[key]
        if str(collection) not in named:  # a folder measured by its path, the sweep named by a label
            raise ValueError(f'the cost table has no row for the collection {str(collection)!r}: it names '
                             f'{", ".join(map(repr, named[:5]))}{" ..." if len(named) > 5 else ""}; give the '
                             'collection the name the cost table gives it (bench/reranker_load.py --collections '
                             'writes each as given, a folder by its path), or rename it in the cost table')
        raise ValueError(f'the cost table has no row for {name} at budget {int(budget)} on {collection} (for {r} or '
                         'for every reranker); measure it with bench/reranker_load.py --out (the same collections, '
                         'systems and budgets)')
    rows = []
    for baseline in baselines:
        theirs = frame[frame.system == baseline]
        for budget in sorted(theirs.budget.unique()) if budgets is None else [int(b) for b in budgets]:
            for r in _rerankers(frame, rerankers):
                matched, theirs_sent, ours_sent, per = {}, [], [], {}
                for collection in collections:
                    here = frame[(frame.collection == collection) & (frame.r == r)]
                    base = here[(here.system == baseline) & (here.budget == budget)]
                    ours = here[here.system == system]
                    if base.empty or ours.empty:
                        break
                    limit = cost(collection, baseline, budget, r) * (1 + slack) + TOLERANCE
                    fits = [b for b in sorted(ours.budget.unique()) if cost(collection, system, b, r) <= limit]
                    if not fits:
                        break
                    matched[collection] = int(fits[-1])
                    mine_rows = ours[ours.budget == fits[-1]]
                    _check_seeds(pd.concat([mine_rows, base]), system, f'with {r} ({baseline} at budget {budget}, '
                                 f'{system} at {fits[-1]})')
                    base = base[base.seed.isin(mine_rows.seed)]  # the baseline paired to the system's seeds
                    theirs_sent.append(cost(collection, baseline, budget, r))
                    ours_sent.append(cost(collection, system, fits[-1], r))
                    per[collection] = (mine_rows, base)
                if len(per) < len(collections):
                    continue
                same = len(set(matched.values())) == 1
                label = next(iter(matched.values())) if same else ' '.join(f'{c}:{b}' for c, b in matched.items())
                for measure in measures:
                    deltas = {c: float(m[measure].mean() - b[measure].mean()) for c, (m, b) in per.items()}
                    value = float(np.mean([m[measure].mean() for m, _ in per.values()]))
                    base_value = float(np.mean([b[measure].mean() for _, b in per.values()]))
                    row = {'baseline': baseline, 'budget': int(budget), 'reranker': r, 'measure': measure,
                           'system_budget': label, 'baseline_sent': float(np.mean(theirs_sent)),
                           'system_sent': float(np.mean(ours_sent)), 'baseline_value': base_value, 'value': value,
                           'delta': value - base_value, 'holds': value - base_value >= -TOLERANCE,
                           **{f'delta:{c}': deltas[c] for c in collections}}
                    if queries is not None:
                        row.update(_paired_margin(_matched_deltas(queries, r, system, baseline, budget, matched, per,
                                                                  measure, collections), row['delta'], alpha))
                    rows.append(row)
    columns = ['baseline', 'budget', 'reranker', 'measure', 'system_budget', 'baseline_sent', 'system_sent',
               'baseline_value', 'value', 'delta', 'holds', *(f'delta:{c}' for c in collections),
               *(['low', 'high', 'p', 'verdict'] if queries is not None else [])]
    return pd.DataFrame(rows, columns=columns)


def _matched_deltas(queries: pd.DataFrame, r: str, system: str, baseline: str, budget: int, matched: Dict[str, int],
                    per: Dict[str, tuple], measure: str, collections: Sequence[str]) -> List[np.ndarray]:
    """Per collection, the per-query ``system`` (at its matched budget) minus ``baseline`` (at ``budget``), each
    query's difference averaged over the system's noise seeds."""
    out = []
    for collection in collections:
        seeds = set(per[collection][0].seed)
        here = queries[(queries.collection == collection) & (queries.r == r) & queries.seed.isin(seeds)]
        ours = here[(here.system == system) & (here.budget == matched[collection])].set_index(['seed', 'qid'])[measure]
        theirs = here[(here.system == baseline) & (here.budget == budget)].set_index(['seed', 'qid'])[measure]
        if len(ours) and len(theirs):
            _check_same_queries(ours, theirs, system, baseline, f'on {collection} with {r}')
        diff = (ours - theirs).dropna()
        out.append(diff.groupby(level='qid').mean().to_numpy() if len(diff) else np.empty(0))
    return out


def strength_response(table: pd.DataFrame, system: str = 'GAREN+', *, budget: int = 100, weak: float = 2.0,
                      strong: float = 0.25, measure: str = 'R@100') -> pd.DataFrame:
    """Whether ``measure`` rises from the simulated reranker at noise ``weak`` to the one at ``strong``, per
    collection, on the mean over the noise seeds that both have.

    Returns:
        ``collection, weak, strong`` (the two means), ``rise`` (strong - weak), ``rises`` (rise above
        ``TOLERANCE``: a tie is no rise), ``rise_min`` / ``rise_max`` (per noise seed) and ``seeds``. A collection
        without both strengths at ``budget`` gives no row.
    """
    frame = _prepared(table)
    names = {f'sigma={weak:g}': 'weak', f'sigma={strong:g}': 'strong'}
    frame = frame[(frame.system == system) & (frame.budget == int(budget)) & frame.r.isin(list(names))]
    rows = []
    for collection, group in frame.groupby('collection', sort=False):
        wide = group.pivot_table(index='seed', columns='r', values=measure).rename(columns=names)
        if not {'weak', 'strong'} <= set(wide.columns):
            continue
        wide = wide.dropna()
        if wide.empty:
            continue
        rise = wide.strong - wide.weak
        rows.append({'collection': collection, 'weak': float(wide.weak.mean()), 'strong': float(wide.strong.mean()),
                     'rise': float(rise.mean()), 'rises': float(rise.mean()) > TOLERANCE,
                     'rise_min': float(rise.min()), 'rise_max': float(rise.max()), 'seeds': len(wide)})
    return pd.DataFrame(rows, columns=['collection', 'weak', 'strong', 'rise', 'rises', 'rise_min', 'rise_max',
                                       'seeds'])


def claims_report(table: pd.DataFrame, system: str = 'GAREN+', baselines: Sequence[str] = ('GAR', 'SlideGAR', 'RGS'),
                  *, monotone: Sequence[str] = ('GAREN', 'GAREN+'), monotone_measure: str = 'R@100',
                  margin_budgets: Sequence[int] = (100, 200),
                  rerankers: Sequence[str] = ('sigma=0.25', 'sigma=0.5', 'sigma=1', 'MiniLM'),
                  budget: int = 100, weak: float = 2.0, strong: float = 0.25,
                  perquery: Optional[pd.DataFrame] = None, alpha: float = ALPHA) -> Dict[str, pd.DataFrame]:
    """The three claims at once, as :func:`budget_monotonicity`, :func:`baseline_margins` and
    :func:`strength_response` give them: ``{'monotonicity': ..., 'margins': ..., 'response': ...}`` (``perquery``:
    the worst budget step's ``p`` and ``step_verdict``, :func:`budget_monotonicity`, and the margins' ``p`` and
    ``verdict``, :func:`baseline_margins`)."""
    present = set(_label(table))
    chosen = [r for r in rerankers if r in present]
    return {'monotonicity': budget_monotonicity(table, monotone, measure=monotone_measure, rerankers=chosen,
                                                perquery=perquery, alpha=alpha),
            'margins': baseline_margins(table, system, baselines, budgets=margin_budgets, rerankers=chosen,
                                        perquery=perquery, alpha=alpha),
            'response': strength_response(table, system, budget=budget, weak=weak, strong=strong)}
