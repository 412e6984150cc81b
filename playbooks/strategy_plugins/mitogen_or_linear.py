# SPDX-License-Identifier: MIT
"""Ansible's linear strategy, run through Mitogen when it is installed.

Mitogen keeps one Python interpreter per host for the whole play. Without it
every task starts Python on the host and compiles Ansible's module code
afresh: 3.5 to 12 s a task in an emulated lab guest, where Mitogen made
setup.yml --check 4.4x faster and teardown.yml 2.1x
(bench/ansible_strategy_ab.py). Mitogen is a dependency of the rfc2544
package; where it cannot be imported (ansible-core installed on its own),
this is the plain linear strategy. ANSIBLE_STRATEGY=linear opts out."""
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy

try:
    from ansible_mitogen.strategy import StrategyMixin
except ImportError:
    class StrategyMixin:
        """Mitogen is not installed: nothing to mix in."""


class StrategyModule(StrategyMixin, LinearStrategy):
    pass
