"""`calibrate --generators 1 --generators 2` measures the receive ceiling
at each count it measures the send ceiling at (issue 56, item 4), and a run
judges tester-bound against the lower of the two for its own count.
Simulated (no host): a calibration link whose receiver counts everything
one generator sends and 60 % of what two send (two generators starving the
receive path they share CPUs with)."""
import json
from types import SimpleNamespace

from rfc2544.config import inventory as inventory_mod
from rfc2544.engine import assemble

from test_commands import main, setup  # noqa: F401 (fixture)


def simulated(monkeypatch, offered):
    import rfc2544.engine.calibrate as cal
    import rfc2544.engine.tester as tester_mod
    monkeypatch.setattr(cal, "calibrate", lambda inventory, sizes, duration=2.0, tester=None, progress=None:
                        {s: 30_000.0 * tester.generators for s in sizes})

    class Sim:
        has_calibration_link = True
        receiver_name = "pgrx"

        def __init__(self, inventory, waits=None, generators=None):
            self.generators = generators or 1
            self.plans = [SimpleNamespace(stream=0, generator=g, generators=self.generators, tx_host="t",
                                          tx_port="tx0") for g in range(self.generators)]

        def count_on_link(self, size, fps, duration):
            offered.append((self.generators, size, fps))
            sent = int(fps * duration)
            return SimpleNamespace(tx_frames=sent, rx_frames=int(sent * (1.0 if self.generators == 1 else 0.6)),
                                   achieved_fps=fps, traffic_s=duration)

        def close(self):
            pass
    monkeypatch.setattr(tester_mod, "SSHTester", Sim)


def test_each_count_gets_its_own_receive_ceiling(setup, monkeypatch, capsys):  # noqa: F811
    tmp, inv, _, _ = setup
    offered = []
    simulated(monkeypatch, offered)
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--duration", "1", "--no-pacing",
                "--generators", "1", "--generators", "2") == 0
    out = capsys.readouterr().out
    # each count's send ceiling offered on the link by that many generators
    assert sorted(offered) == [(1, 64, 30_000.0), (2, 64, 60_000.0)]
    assert "received       36,000 fps  (60.00 %): the receiver bounds it at 36,000" in out, out
    saved = json.loads((tmp / "inventory.yml.calibration.json").read_text())
    bounds = {e["generators"]: [r["bound"] for r in e["receive"]] for e in saved["ceilings"]}
    assert bounds == {"1": ["sender"], "2": ["receiver"]}
    loaded = inventory_mod.load(inv)
    # the lower of send and receive, for the run's own count
    assert assemble.load_calibration(loaded, "1") == {"64": 30_000.0}
    assert assemble.load_calibration(loaded, "2") == {"64": 36_000.0}
    assert assemble.calibration_bounds(loaded, "2") == {"64": "receiver"}
    assert assemble.calibration_bounds(loaded, "1") == {"64": "sender"}


def test_a_file_from_before_per_count_receive_ceilings_keeps_its_one(setup):  # noqa: F811
    """A file whose ceilings carry no receive rows: the one it has (measured
    with its first count) lowers every count, as before."""
    tmp, inv, _, _ = setup
    receive = [{"frame_size": 64, "bound": "receiver", "received_share": 0.5}]
    (tmp / "inventory.yml.calibration.json").write_text(json.dumps({
        "fps": {"64": 30_000.0}, "receive": receive,
        "ceilings": [{"generators": "1", "fps": {"64": 30_000.0}}, {"generators": "2", "fps": {"64": 60_000.0}}]}))
    loaded = inventory_mod.load(inv)
    assert assemble.load_calibration(loaded, "2") == {"64": 30_000.0}
    assert assemble.calibration_bounds(loaded, "2") == {"64": "receiver"}


def test_the_link_is_sent_by_the_testers_generators(tmp_path):
    """SIMULATED: SSHTester.count_on_link asks the calibration link for as
    many generators as its streams have, and LinkPacing builds the link's
    own tester with that count and the tester's --generator-cpus."""
    from test_generators import sim_tester
    from pktgen_sim import SimKernel
    from rfc2544.engine.calibration_link import LinkPacing
    asked = []

    class Link:
        def count(self, size, fps, duration, ipv6, generators):
            asked.append(generators)
    with sim_tester(tmp_path, SimKernel(pgrx_version=6), generators=2, every_cpu=True) as tester:
        tester._link_pacing = Link()
        tester.count_on_link(64, 1000.0, 1.0)
        made = []

        class Recording(type(tester)):
            def __init__(self, inventory, **kw):
                made.append(kw)
        tester.__class__ = Recording
        tester.inventory.hosts["tester"].calibration_link = ("cal0", "cal1")
        tester.session = lambda name: SimpleNamespace(
            run=lambda cmd, **kw: (0, "02:00:00:00:00:0a\n02:00:00:00:00:0b\n", ""))
        link = LinkPacing(tester, tester.inventory.hosts["tester"])
        link._link(2)
    assert asked == [2]
    assert made[0]["generators"] == 2 and made[0]["every_cpu"] is True
