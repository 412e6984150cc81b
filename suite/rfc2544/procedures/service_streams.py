"""A Y.1564 service as the streams the tester sends: which of the
inventory's tester ports it leaves and reaches, and its frames (sizes,
DSCP, VLAN tag with PCP and DEI). A colour-aware service is two streams,
green and yellow, so that the receiver counts each colour apart."""
from dataclasses import replace

from rfc2544.config.inventory import Stream
from rfc2544.errors import BadInput


def base_stream(service, inventory, origin="services"):
    """The inventory stream the service rides on: the one from its `tx` to
    its `rx` (either may be left out), or the inventory's first; or a
    stream between the two tester ports it names."""
    if not inventory.streams:
        raise BadInput(f"{inventory.path}: all.vars.rfc2544_streams lists no stream")
    if service.tx is None and service.rx is None:
        return inventory.streams[0]
    for s in inventory.streams:
        if service.tx in (None, f"{s.tx_host}:{s.tx_port}") and service.rx in (None, f"{s.rx_host}:{s.rx_port}"):
            return s
    if service.tx is None or service.rx is None:
        given = "tx" if service.rx is None else "rx"
        raise BadInput(f"{origin}: service {service.name}: {given}: no stream of the inventory "
                       f"{'leaves' if given == 'tx' else 'reaches'} {getattr(service, given)}")
    ends = []
    for key in ("tx", "rx"):
        host, _, port = getattr(service, key).partition(":")
        h = inventory.hosts.get(host)
        if h is None or port not in h.ports or h.group != "testers" or h.ports[port].role not in ("tx", "rx"):
            raise BadInput(f"{origin}: service {service.name}: {key}: {getattr(service, key)} is not a tester port "
                           f"of the inventory")
        ends += [host, port]
    if ends[:2] == ends[2:]:
        raise BadInput(f"{origin}: service {service.name}: sends to itself ({service.tx})")
    return Stream(*ends)


def streams_of(service, inventory):
    """(green, yellow) inventory.Stream records of `service`: yellow None
    for a colour-blind service. Its VLAN tag (and the PCP and DEI in it)
    replaces the base stream's inner tag; the base's outer tag and what
    the DUT changes stay."""
    base = base_stream(service, inventory)
    tags = base.tags
    if service.vlan is not None:
        tags = replace(tags, vlan=service.vlan, vlan_pcp=service.pcp, vlan_dei=service.dei or None)
    green = replace(base, tags=tags, sizes=tuple(service.sizes), dscp=service.dscp)
    if service.colour_mode == "aware_dei":
        return green, replace(green, tags=replace(tags, vlan_dei=1))
    if service.colour_mode == "aware_dscp":
        return green, replace(green, dscp=service.yellow_dscp)
    return green, None


def line_mbps_of(inventory, profile_link_mbps=None):
    """tx "host:port" (None: the first stream's) -> the port's line rate in
    Mbit/s: the profile's link_mbps, else the port's speed_mbps (None: unknown)."""
    def line(tx):
        if profile_link_mbps:
            return profile_link_mbps
        if tx is None:
            if not inventory.streams:
                return None
            s = inventory.streams[0]
            host, port = s.tx_host, s.tx_port
        else:
            host, _, port = tx.partition(":")
        p = inventory.hosts.get(host).ports.get(port) if host in inventory.hosts else None
        return p.speed_mbps if p else None
    return line


def check(services, inventory, profile_link_mbps=None, origin="services", generators=None):
    """Every service against the inventory, before any host is touched:
    its ports and their addresses, its rates against their lines."""
    from rfc2544.drivers.streams import plan_streams
    from rfc2544.y1564.services import check_rates
    sent_from = {}
    for service in services:
        base = base_stream(service, inventory, origin)
        sent_from[service.name] = f"{base.tx_host}:{base.tx_port}"
        green, yellow = streams_of(service, inventory)
        try:
            plan_streams(replace(inventory, streams=[green] + ([yellow] if yellow else [])), False, generators)
        except BadInput as exc:
            raise BadInput(f"{origin}: service {service.name}: {exc}") from None
    check_rates(services, line_mbps_of(inventory, profile_link_mbps), origin, tx_of=lambda s: sent_from[s.name])
