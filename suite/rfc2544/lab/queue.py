"""A lab DUT with a queue of known length in front of a known capacity, for
RFC 2544 26.5 (system recovery) with a recovery time that can be computed.

Why two stages: a policer (tc police) drops what exceeds its rate and
queues nothing, and a single shaper with a tail-drop queue stops losing
frames the moment the offered rate falls below its service rate, so by the
RFC's definition (rate drop to last lost frame) both recover at once. A DUT
that keeps losing while it drains needs a queue that serves faster than the
stage behind it:

  dut0 ingress -> mirred -> ifb QUEUE_DEV: tbf at `queue_pps`, child pfifo
  of `limit` packets -> back into dut0's ingress -> forwarding -> dut1
  egress: police at `capacity_pps` (rfc2544.lab.cap)

with capacity < queue rate < 110 % of capacity. Under overload the pfifo
fills; after the drop to `recovery_fps` it drains at queue_pps -
recovery_fps, and until it is empty the police behind it sees queue_pps >
capacity and drops. So the last frame is lost when the queue is empty:
drain time = limit / (queue_pps - recovery_fps) after the rate drop.

The tbf counts every packet as MPU_BYTES (its `mpu`): a frame shorter than
that costs exactly one packet's worth of tokens, so the byte rate
queue_pps * MPU_BYTES is a packet rate whatever the frame size (< MPU_BYTES).
"""
from rfc2544.errors import BadInput
from rfc2544.lab import cap
from rfc2544.lab.topology import DUT_PORTS

QUEUE_DEV = "ifbq"
INGRESS = DUT_PORTS[0]
MPU_BYTES = 1500
QUEUE_PREF = 49153


def _whole(name, value, top):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= top:
        raise BadInput(f"DUT queue {name} must be a whole number in 1..{top}, not {value!r}")
    return value


def drain_time_s(limit, queue_pps, recovery_fps):
    """Seconds a full queue of `limit` packets takes to empty at `queue_pps`
    while `recovery_fps` keep arriving."""
    if queue_pps <= recovery_fps:
        raise ValueError(f"a queue served at {queue_pps} pps never drains under {recovery_fps} fps")
    return limit / (queue_pps - recovery_fps)


def commands(queue_pps, limit, burst):
    """Shell commands (to run in the DUT's namespace) that build the queue."""
    queue_pps = _whole("rate", queue_pps, 1_000_000)
    limit = _whole("limit", limit, 1_000_000)
    burst = _whole("burst", burst, 10_000)
    return [
        f"ip link add {QUEUE_DEV} type ifb",
        f"ip link set {QUEUE_DEV} up",
        f"tc qdisc add dev {QUEUE_DEV} root handle 1: tbf rate {queue_pps * MPU_BYTES * 8}bit "
        f"burst {burst * MPU_BYTES} mpu {MPU_BYTES} limit {limit * MPU_BYTES}",
        f"tc qdisc add dev {QUEUE_DEV} parent 1:1 handle 10: pfifo limit {limit}",
        f"tc qdisc replace dev {INGRESS} clsact",
        f"tc filter add dev {INGRESS} ingress pref {QUEUE_PREF} matchall "
        f"action mirred egress redirect dev {QUEUE_DEV}",
    ]


def apply(lab, capacity_pps, queue_pps, limit, burst=20, capacity_burst=None):
    """The two-stage DUT: a queue of `limit` packets served at `queue_pps`,
    then a capacity of `capacity_pps` (police)."""
    if not capacity_pps < queue_pps:
        raise BadInput(f"the queue ({queue_pps} pps) must serve faster than the capacity ({capacity_pps} pps)")
    cmds = commands(queue_pps, limit, burst)
    remove_queue(lab)
    host = lab.connect("dut")
    try:
        host.run("modprobe ifb numifbs=0")
        for c in cmds:
            host.run(lab.dut_cmd(c))
    finally:
        host.close()
    cap.apply(lab, capacity_pps, capacity_burst)


def remove_queue(lab):
    host = lab.connect("dut")
    try:
        host.run(lab.dut_cmd(f"tc qdisc del dev {INGRESS} clsact"), check=False)
        host.run(lab.dut_cmd(f"ip link del {QUEUE_DEV}"), check=False)
    finally:
        host.close()


def remove(lab):
    remove_queue(lab)
    cap.remove(lab)
