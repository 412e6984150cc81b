"""Number formatting for the templates and the compare table. None -> dash."""
DASH = "\u2014"


def num(value, digits=0):
    if value is None:
        return DASH
    return f"{value:,.{digits}f}"


def fps(value):
    return num(value, 0 if value is None or abs(value) >= 100 else 1)


def mbps(value):
    return num(value, 1)


def pct(value):
    """Percent with enough digits to be useful near 0 and near 100."""
    if value is None:
        return DASH
    if value != 0 and abs(value) < 1:
        return f"{value:.3f}"
    return f"{value:,.1f}" if abs(value) < 99.95 or value == 100 else f"{value:,.2f}"


def signed_pct(value):
    if value is None:
        return DASH
    return f"{value:+.2f} %"


def us(ns):
    """Nanoseconds shown as microseconds."""
    if ns is None:
        return DASH
    return f"{ns / 1000:,.1f}"


def seconds(value):
    if value is None:
        return DASH
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:g}" if value == int(value) else f"{value:.1f}"
    return f"{value:.3g}"


def ms(value_s):
    if value_s is None:
        return DASH
    return f"{value_s * 1000:,.2f}"


def duration(total_s):
    total_s = int(round(total_s or 0))
    h, rest = divmod(total_s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min {s:02d} s" if h else f"{m} min {s:02d} s"


def text(value):
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    return str(value)


def _undefined_as_none(func):
    """Template filters: a missing field (jinja2 Undefined) shows as a dash."""
    import jinja2

    def wrapper(value, *args):
        return func(None if isinstance(value, jinja2.Undefined) else value, *args)
    return wrapper


def tag_text(stream):
    """A conditions.streams entry's tags: 'VLAN 100 PCP 5', 'QinQ 200/100'."""
    from rfc2544.wire import Tags
    return Tags.of(stream).text if isinstance(stream, dict) else ""


FILTERS = {name: _undefined_as_none(func) for name, func in {
    "num": num, "fps": fps, "mbps": mbps, "pct": pct, "signed_pct": signed_pct, "us": us,
    "seconds": seconds, "ms": ms, "duration": duration, "text": text,
    "tag_text": tag_text}.items()}
