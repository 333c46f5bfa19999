"""Golden kernels and the fixed-point scheme against brute-force and exact rational references."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.quant import MULTIPLIER_BITS, fixed_point, shared_shift_multipliers
from sim.golden import kernels


def brute_force_conv(x, w, stride, pads, groups):
    """Direct seven-loop convolution on Python integers."""
    channels, height, width = x.shape
    out_c, group_c, kh, kw = w.shape
    top, left, bottom, right = pads
    out_h = (height + top + bottom - kh) // stride[0] + 1
    out_w = (width + left + right - kw) // stride[1] + 1
    out = np.zeros((out_c, out_h, out_w), dtype=object)
    per_group = out_c // groups
    for o in range(out_c):
        g = o // per_group
        for i in range(out_h):
            for j in range(out_w):
                total = 0
                for c in range(group_c):
                    for a in range(kh):
                        for b in range(kw):
                            y, z = i * stride[0] + a - top, j * stride[1] + b - left
                            if 0 <= y < height and 0 <= z < width:
                                total += int(x[g * group_c + c, y, z]) * int(w[o, c, a, b])
                out[o, i, j] = total
    return out


@settings(max_examples=40, deadline=None)
@given(
    groups=st.sampled_from([1, 2, 3]), group_c=st.integers(1, 3), per_group=st.integers(1, 3),
    size=st.integers(3, 7), k=st.integers(1, 3), stride=st.integers(1, 3), pads=st.tuples(*[st.integers(0, 2)] * 4),
    seed=st.integers(0, 2**16),
)
def test_conv2d_matches_brute_force(groups, group_c, per_group, size, k, stride, pads, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-255, 256, (groups * group_c, size, size))
    w = rng.integers(-127, 128, (groups * per_group, group_c, k, k))
    got = kernels.conv2d(x, w, (stride, stride), pads, groups)
    assert np.array_equal(got, brute_force_conv(x, w, (stride, stride), pads, groups).astype(np.int64))


def exact_round_half_even(value: Fraction) -> int:
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2):
        return floor + 1
    return floor


@given(st.integers(-(2**40), 2**40), st.integers(0, 40))
def test_round_shift_is_round_half_to_even(value, shift):
    assert int(kernels.round_shift(np.int64(value), shift)) == exact_round_half_even(Fraction(value, 2**shift))


@given(st.floats(1e-9, 1e4))
def test_fixed_point_is_accurate(real):
    m, s = fixed_point(real)
    assert 2 ** (MULTIPLIER_BITS - 1) <= m < 2**MULTIPLIER_BITS or s == 62
    assert abs(m * 2.0**-s - real) <= real * 2.0**-MULTIPLIER_BITS + 2.0**-62


def test_fixed_point_rejects_bad_multipliers():
    with pytest.raises(Exception, match="multiplier"):
        fixed_point(-1.0)
    with pytest.raises(Exception, match="too large"):
        fixed_point(2.0**40)


def test_requantize_matches_rational_reference():
    rng = np.random.default_rng(3)
    acc = rng.integers(-(2**20), 2**20, (4, 5, 5))
    reals = [0.0123, 0.5, 1.0 / 9.0, 3e-5]
    pairs = [fixed_point(r) for r in reals]
    got = kernels.requantize(acc, [m for m, _ in pairs], [s for _, s in pairs], zero_point=-3, act_min=-128, act_max=127)
    for c, (m, s) in enumerate(pairs):
        for v, g in zip(acc[c].ravel(), got[c].ravel()):
            expected = min(127, max(-128, exact_round_half_even(Fraction(int(v) * m, 2**s)) - 3))
            assert expected == g


def test_shared_shift_keeps_ratios():
    (ma, mb), shift = shared_shift_multipliers([0.75, 0.3], "test")
    tolerance = 2.0 ** -(MULTIPLIER_BITS - 1)
    assert abs(ma / 2**shift - 0.75) < tolerance and abs(mb / 2**shift - 0.3) < tolerance
    assert ma < 2**MULTIPLIER_BITS


def test_pools_against_loops():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 7, 6)).astype(np.int64)
    got_max = kernels.max_pool(x, (3, 2), (2, 2), (1, 0, 1, 1))
    got_sum = kernels.sum_pool(x, (3, 2), (2, 2), (1, 0, 1, 1))
    for c in range(3):
        for i in range(got_max.shape[1]):
            for j in range(got_max.shape[2]):
                window = [x[c, y, z] for y in range(i * 2 - 1, i * 2 + 2) for z in range(j * 2, j * 2 + 2) if 0 <= y < 7 and 0 <= z < 6]
                assert got_max[c, i, j] == max(window)
                assert got_sum[c, i, j] == sum(window)
