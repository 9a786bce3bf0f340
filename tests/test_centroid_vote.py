"""CentroidNavigator's ``vote_weight`` (the registered navigator ``'centroid-vote'``), checked by hand."""
import types

import numpy as np
import pandas as pd
import pytest
from test_robustness_online import FakeVectors, _groups

import pyterrier_garen as garen
from pyterrier_garen import _registry


class _AxisEncoder:
    """Every query is the first axis."""

    def encode_queries(self, texts):
        return np.tile(np.array([1., 0., 0., 0.], dtype=np.float32), (len(texts), 1))


def _navigator(tmp_path, **kwargs):
    groups = _groups(tmp_path)  # 20 documents, groups 0-3 of five each
    vectors = FakeVectors(tmp_path / 'v.npids', groups.docnos_list())
    axis = np.eye(4, dtype=np.float32)
    # group 0 on the first axis, 1 on the second, 2 half-way between them, 3 on the third
    member = {0: axis[0], 1: axis[1], 2: (axis[0] + axis[1]) / np.sqrt(2), 3: axis[2]}
    vectors.vecs = np.stack([member[i // 5] for i in range(20)]).astype(np.float32)
    return garen.CentroidNavigator(groups, vectors, _AxisEncoder(), **kwargs)


FRAME = pd.DataFrame({'qid': ['q'] * 4, 'query': ['x'] * 4, 'docno': ['0', '1', '2', '3'], 'vote': [0, 10, 2, 0]})


def test_vote_weight_adds_the_vote_to_the_cosine(tmp_path):
    # cosines 1, 0, 1/sqrt 2, 0; weight .05: + 0, .5, .1, 0 -> 1, .5, .80711, 0: order 0 2 1 3
    out = _navigator(tmp_path, vote_weight=.05)(FRAME)
    assert out.score.tolist() == pytest.approx([1., .5, 2 ** -.5 + .1, 0.], abs=1e-6)
    assert out.set_index('docno')['rank'].to_dict() == {'0': 0, '2': 1, '1': 2, '3': 3}
    # weight .2: group 1 (10 votes) 2.0 passes group 0 (1.0)
    assert _navigator(tmp_path, vote_weight=.2)(FRAME).score.tolist() == pytest.approx(
        [1., 2., 2 ** -.5 + .4, 0.], abs=1e-6)


def test_without_a_weight_the_vote_is_not_read(tmp_path):
    plain = _navigator(tmp_path)(FRAME.drop(columns='vote'))
    assert plain.score.tolist() == pytest.approx([1., 0., 2 ** -.5, 0.], abs=1e-6)
    with pytest.raises(Exception, match='vote'):
        _navigator(tmp_path, vote_weight=.05)(FRAME.drop(columns='vote'))


@pytest.mark.parametrize('bad', [-.1, float('nan'), 'a', True])
def test_vote_weight_is_checked(tmp_path, bad):
    with pytest.raises(ValueError, match='vote_weight'):
        _navigator(tmp_path, vote_weight=bad)


def test_the_registered_navigator(tmp_path):
    assert 'centroid-vote' in garen.NAVIGATORS
    groups = _groups(tmp_path)
    prepared = types.SimpleNamespace(vectors=FakeVectors(tmp_path / 'v.npids', groups.docnos_list()))
    built = _registry.navigator('centroid-vote').factory(groups, prepared, _AxisEncoder())
    assert isinstance(built, garen.CentroidNavigator)
    assert built.vote_weight == garen.CENTROID_VOTE_WEIGHT == 0.02
    assert 'vote_weight=0.02' in repr(built)
    assert _registry.navigator('centroid').factory(groups, prepared, _AxisEncoder()).vote_weight == 0.0
