"""The services file (rfc2544/y1564/services.py): what a field engineer
writes, and every bad input as one line naming the service and field."""
import math

import pytest

from rfc2544.errors import BadInput
from rfc2544.y1564 import services as svc

SAC = {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99.9}


def parse(*entries, defaults=None):
    return svc.parse({"defaults": {"sac": SAC, **(defaults or {})}, "services": list(entries)}, "s.yml")


def one(**fields):
    """A service of 512 B frames (unless it gives an EMIX) with the given fields."""
    base = {"name": "data", "cir_mbps": 100} if "emix" in fields else {"name": "data", "frame_size": 512,
                                                                       "cir_mbps": 100}
    return {**base, **fields}


def test_a_service_takes_the_defaults_and_its_own_fields():
    voice, data = parse(one(name="voice", frame_size=128, vlan=100, pcp=5, dscp=46, cir_mbps=10,
                            sac={"ftd_ms": 2}),
                        one(emix="abceg", eir_mbps=50, colour_mode="aware_dei", vlan=200, cbs_bytes=12176))
    assert voice.sizes == (128,) and voice.dscp == 46 and voice.pcp == 5 and voice.eir_mbps == 0
    assert voice.sac == svc.Acceptance(0.1, 2.0, 5.0, 99.9)         # its own ftd, the defaults' rest
    assert data.sizes == (64, 128, 256, 1024, 1518) and data.mean_frame_bytes == pytest.approx(598)
    assert data.colour_mode == "aware_dei" and data.cbs_bytes == 12176 and data.colour_mode != "blind"
    assert data.fps(100) == pytest.approx(100e6 / (598 * 8))


def test_sixteen_services_parse_and_the_shipped_example_loads():
    entries = [one(name=f"s{i}", vlan=100 + i, cir_mbps=5) for i in range(16)]
    assert [s.name for s in parse(*entries)] == [f"s{i}" for i in range(16)]
    from importlib import resources
    example = svc.load(str(resources.files("rfc2544") / "data" / "inventory" / "services-example.yml"))
    assert len(example) >= 4 and {s.colour_mode for s in example} >= {"blind", "aware_dei"}


@pytest.mark.parametrize("entry, message", [
    (one(sac={"flr_pct": -1}), "service data: sac.flr_pct: a number of at least 0"),
    (one(sac={"ftd_ms": math.nan}), "service data: sac.ftd_ms: a number of at least 0"),
    (one(sac={"fdv_ms": "fast"}), "service data: sac.fdv_ms: a number"),
    (one(sac={"avail_pct": 101}), "service data: sac.avail_pct: a number of at least 0 and at most 100"),
    (one(sac={"mlr": 1}), "service data: sac.mlr: unknown field"),
    (one(dscp=64), "service data: dscp: a whole number from 0 to 63"),
    (one(dscp=-1), "service data: dscp: a whole number from 0 to 63"),
    (one(cir_mbps=0), "service data: cir_mbps: a number above 0"),
    (one(eir_mbps=-5), "service data: eir_mbps: a number of at least 0"),
    (one(pcp=3), "service data: vlan: PCP, DEI and colour_mode aware_dei are bits of a VLAN tag"),
    (one(vlan=4095), "service data: vlan: a whole number from 1 to 4094"),
    (one(colour_mode="aware_dscp", dscp=10), "service data: yellow_dscp: colour_mode aware_dscp marks"),
    (one(colour_mode="aware_dscp", dscp=10, yellow_dscp=10), "service data: yellow_dscp: must differ"),
    (one(colour_mode="red"), "service data: colour_mode: one of blind, aware_dei, aware_dscp"),
    (one(emix="abz"), "service data: emix: 2 to 8 of Y.1564's letters"),
    (one(emix="ab", frame_size=64), "service data: frame_size: give one of"),
    (one(frame_size=40), "service data: frame_size: a frame size in bytes with FCS, 64 to 9216"),
    (one(tx="tester"), "service data: tx: HOST:PORT"),
    (one(speed=1), "services[0] (data): speed: unknown field"),
    (one(sac=5), "services[0] (data): sac: a mapping of flr_pct"),
    (one(vlan=5, dei=1, colour_mode="aware_dei"), "service data: dei: colour_mode aware_dei sends green frames"),
    (one(yellow_dscp=3), "service data: yellow_dscp: marks yellow frames with colour_mode aware_dscp only"),
    (one(frame_size=64, cbs_bytes=4_000_000, ebs_bytes=400_000), "service data: ebs_bytes: a burst of CBS + EBS"),
    (one(cbs_bytes=-1), "service data: cbs_bytes: a whole number from 0"),
    ({"name": ""}, "services[0]: name: 1 to 32 letters"),
    (one(name="a/b"), "name: 1 to 32 letters, digits, spaces or . _ : - (got 'a/b')"),
])
def test_a_bad_service_is_one_line_naming_it(entry, message):
    with pytest.raises(BadInput) as info:
        parse(entry)
    text = str(info.value)
    assert text.startswith("s.yml: ") and message in text and "\n" not in text


def test_two_services_with_one_name_or_one_class_are_refused():
    with pytest.raises(BadInput, match=r"service data: name: also the name of services\[0\]"):
        parse(one(vlan=1), one(vlan=2))
    with pytest.raises(BadInput, match=r"service video: traffic class .* is also service data's"):
        parse(one(vlan=1, pcp=2), one(name="video", vlan=1, pcp=2, frame_size=1518))


def test_the_file_s_shape_is_checked():
    for raw, message in [(None, "needs 'services:'"), ({"services": []}, "needs 'services:'"),
                         ({"services": [one()], "extra": 1}, "extra: unknown field"),
                         ({"services": [one()], "defaults": [1]}, "defaults: must be a mapping"),
                         ({"services": [one()], "defaults": {"name": "x"}}, "defaults: name: unknown field"),
                         ({"services": [one()], "defaults": {"sac": [1]}}, "defaults: sac: a mapping"),
                         ({"services": [one(name=f"s{i}", vlan=i + 1) for i in range(svc.MAX_SERVICES + 1)]},
                          f"at most {svc.MAX_SERVICES} services"),
                         ({"services": ["data"]}, r"services[0]: must be a mapping")]:
        with pytest.raises(BadInput) as info:
            svc.parse(raw, "s.yml")
        assert message in str(info.value)


def test_rates_above_the_line_are_refused_naming_the_service():
    line = {None: 1000.0}.get
    # 1000 Mbit/s at 64 B carries 1000 x 64 / 84 = 761.9 Mbit/s of layer 2
    fits = parse(one(frame_size=64, cir_mbps=700, eir_mbps=61))
    svc.check_rates(fits, line)
    with pytest.raises(BadInput, match=r"service data: eir_mbps: CIR \+ EIR is 770 Mbit/s, above the 761\.9"):
        svc.check_rates(parse(one(frame_size=64, cir_mbps=700, eir_mbps=70)), line)
    two = parse(one(frame_size=1518, cir_mbps=600, vlan=1), one(name="b", frame_size=1518, cir_mbps=500, vlan=2))
    with pytest.raises(BadInput, match=r"service b: cir_mbps: the CIRs .* add up to 1100 Mbit/s"):
        svc.check_rates(two, line)
    svc.check_rates(two, {None: None}.get)        # a line of unknown speed is not checked


def test_a_service_survives_the_results_file():
    voice, = parse(one(name="voice", emix="abg", vlan=3, colour_mode="aware_dei"))
    assert svc.from_record(svc.to_record(voice)) == voice
