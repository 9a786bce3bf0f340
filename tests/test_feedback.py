"""Reranker feedback in navigation (GAREN's ``feedback``): group standing moves with the reranker's verdicts."""
import pytest
from _toy_graph import GROUPS, R0, first_stage, worked_garen

from pyterrier_garen._garen import group_feedback


def test_group_feedback_by_hand():
    # the worked example's last placements (keep = 2): hits at positions 0 and 1
    last = {'a1': (4, 1), 'a2': (1, 2), 'a3': (2, 2), 'a4': (1, 3), 'y1': (4, 2), 'x1': (2, 3), 'y2': (3, 3),
            'y3': (3, 2), 'w1': (4, 0), 'x2': (4, 3), 'nogroup': (1, 0)}
    # G0: a1 hit, a2 miss -> 0/3; G1: a3 x1 x2 miss -> -3/4; G2: a4 y1 y2 y3 miss -> -4/5; G5: w1 hit -> 1/2
    assert group_feedback(last, lambda d: GROUPS.get(d, -1), keep=2) == {0: 0., 1: -.75, 2: -.8, 5: .5}
    # keep = 3 turns the position-2 documents into hits: G0 a1 a2 -> 2/3, G1 a3 -> (1-2)/4, G2 y1 y3 -> 0/5
    assert group_feedback(last, lambda d: GROUPS.get(d, -1), keep=3) == {0: 2 / 3, 1: -.25, 2: 0., 5: .5}


def test_feedback_reorders_eligible_groups():
    # t=1: W~_1 = [a1 a3 a2 a4]; scored G1 .5, G2 .9 -> standardised (mean .7, std .2) G1 -1, G2 +1.
    # verdicts (keep 2): G1 a3 hit -> +1/2, G2 a4 miss -> -1/2. beta=1: G1 -.5 < G2 .5 (paper order kept);
    # beta=4: G1 -1 + 2 = 1 > G2 1 - 2 = -1, so G1 leads and explore takes x1 before y1
    paper, _, _ = worked_garen()
    paper(first_stage(R0))
    assert paper.last_trace[0]['eligible'] == [2, 1]
    assert paper.last_trace[0]['expansion'] == ['y1', 'x1']
    weak, _, _ = worked_garen(feedback=1.0)
    weak(first_stage(R0))
    assert weak.last_trace[0]['eligible'] == [2, 1]
    strong, _, _ = worked_garen(feedback=4.0)
    strong(first_stage(R0))
    assert strong.last_trace[0]['eligible'] == [1, 2]
    assert strong.last_trace[0]['expansion'] == ['x1', 'y1']


@pytest.mark.parametrize('bad', [-1, float('nan'), 'a'])
def test_feedback_must_be_a_nonnegative_number(bad):
    with pytest.raises(ValueError, match='feedback'):
        worked_garen(feedback=bad)
