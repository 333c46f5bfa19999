"""The e-PlaNNer baseline: Alg. 1 / 3 worked examples, legality, and the search never loses to it."""
from hwgen.config import load_config
from planner.eplanner import interchange, lower_bound, plan_layer
from planner.schedule import ConvShape, Schedule, is_legal
from planner.search import search
from hw_configs import data_config

CONV3_1 = ConvShape(256, 128, 56, 56, 56, 56, 3, 3, 1, 1, 1, 1, False)
CONV4_2 = ConvShape(512, 512, 28, 28, 28, 28, 3, 3, 1, 1, 1, 1, False)


def test_we1_interchange_puts_oc_innermost():
    """WE1: trips OC 5 > OH 4 > IC 2, so OC is innermost (input stationary)."""
    assert interchange(CONV3_1, Schedule(56, 65, 16, 56))[-1] == "OC"
    assert interchange(CONV3_1, Schedule(56, 65, 16, 56))[-3:] == ("IC", "OH", "OC")


def test_we3_tie_makes_ic_innermost():
    """WE3: OC and IC both 16 trips; the stable sort from (ow, oh, ic, oc) puts IC innermost (OS)."""
    assert interchange(CONV4_2, Schedule(32, 32, 28, 28))[-1] == "IC"


def test_we2_initialisation_and_elimination():
    """WE2 (IC 256, OC 512, 56x56, 32x32 array): Alg. 1 gives OC 32, IC 32, OH 1, OW whole. Unlike the
    thesis (fp32, whole-buffer check) eliminating OH does not fit here: a 32x56x56 int32 output tile
    is 401,408 B against a 131,072 B bank, so no loop is eliminated."""
    config = load_config("setup_a")
    shape = ConvShape(512, 256, 56, 56, 56, 56, 3, 3, 1, 1, 1, 1, False)
    floor, eliminated = lower_bound(shape, config)
    assert floor.tiles == {"OC": 32, "IC": 32, "OH": 1, "OW": 56}
    assert eliminated == frozenset()


def test_search_never_loses_to_eplanner_on_latency():
    config = data_config("ecp5-85f")
    for shape in (CONV3_1, ConvShape(64, 3, 224, 224, 112, 112, 7, 7, 2, 2, 3, 3, False),
                  ConvShape(1000, 2048, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, False)):
        macs = shape.oc * shape.ic * shape.oh * shape.ow * shape.kh * shape.kw
        base = plan_layer(shape, config, macs)
        assert is_legal(shape, base.schedule, config)
        assert search(shape, config, macs).cost.cycles <= base.cost.cycles
