"""rfc2544: RFC 2544 benchmarks driving a Linux kernel packet generator over SSH."""

__version__ = "0.1.0"
