# Two commands for a fresh Debian 12 machine (as root):
#   make demo   installs everything, brings up the QEMU lab, runs a short
#               `rfc2544 run` against it and writes the report
#   make test   installs the same, runs unit tests then lab integration tests
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
RFC2544 := $(VENV)/bin/rfc2544
PYTEST_ARGS ?=
DEMO_OUT ?= results/demo
DEMO_LAB ?= demo

# Debian packages the project needs on the controller (this machine).
APT_PACKAGES := \
	python3 python3-venv python3-pip \
	qemu-system-x86 qemu-utils debootstrap debian-archive-keyring e2fsprogs cpio zstd \
	openssh-client iproute2 dpkg-dev make gcc libelf-dev dwarves \
	sparse linux-source-6.1 perl \
	chromium poppler-utils fonts-dejavu-core \
	libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz0b libharfbuzz-subset0

.PHONY: all deps apt-deps venv demo test test-quick unit integration kmod collection clean lab-down

all: deps

deps: apt-deps venv

apt-deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "make: missing Debian packages (run as root to install): $$missing" >&2; exit 2; fi; \
		echo "installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(VENV)/.installed: setup.cfg pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

venv: $(VENV)/.installed

# The demo boots its own lab (name $(DEMO_LAB)) so a developer's `default`
# lab is untouched: first a kernel-pktgen count through the DUT (lab-check/),
# then caps the DUT's forwarding at $(DEMO_CAP_PPS) frames/s after a
# $(DEMO_CAP_BURST)-frame burst (tc police), a device of known capacity below
# what the emulated path forwards at 64 and 1518 B (the burst absorbs the
# emulated tester's stalls), then `rfc2544 run -p quick --setup` and its
# report (run/). The lab is always taken down again; the exit status is the
# first failure's.
DEMO_CAP_PPS ?= 10000
DEMO_CAP_BURST ?= 1000
demo: deps
	@rm -rf $(DEMO_OUT)/lab-check $(DEMO_OUT)/run
	@inv=$$($(RFC2544) lab up --name $(DEMO_LAB)) || exit $$?; \
	export PATH="$(CURDIR)/$(VENV)/bin:$$PATH"; \
	$(RFC2544) lab demo --name $(DEMO_LAB) --out $(DEMO_OUT)/lab-check && \
	$(RFC2544) lab cap --name $(DEMO_LAB) --pps $(DEMO_CAP_PPS) --burst $(DEMO_CAP_BURST) && \
	echo "demo: the DUT forwards $(DEMO_CAP_PPS) frames/s after a $(DEMO_CAP_BURST)-frame burst, so a 2 s" \
	     "trial passes up to $$(( $(DEMO_CAP_PPS) + $(DEMO_CAP_BURST) / 2 )) frames/s: the throughput found should be close" && \
	$(RFC2544) run -i "$$inv" -p quick --setup --out $(DEMO_OUT)/run; \
	status=$$?; $(RFC2544) lab down --name $(DEMO_LAB); exit $$status

unit: deps
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

integration: deps
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

# One pytest run, unit tests first, so the run ends with one summary line;
# the 25 slowest tests are listed before it (where CI time goes).
test: deps
	$(PY) -m pytest tests/unit tests/integration --durations=25 $(PYTEST_ARGS)

# The inner loop while developing: the unit tests and one lab's core tests
# (the lab, the kernel pktgen through the DUT, the module's own commands and
# counts), one pytest run; `make test` stays the full gate CI runs.
QUICK_LAB_TESTS := tests/integration/test_lab.py tests/integration/test_kmod.py
test-quick: deps
	$(PY) -m pytest tests/unit $(QUICK_LAB_TESTS) --durations=10 $(PYTEST_ARGS)

kmod:
	$(MAKE) -C pktgen-kmod

# The Ansible collection rfc2544.benchmark (collection/README.md): assembled
# in build/collection from playbooks/roles, tarball in dist/.
collection: venv
	$(PY) collection/build.py build/collection dist

lab-down:
	-$(RFC2544) lab down

clean:
	-$(MAKE) -C pktgen-kmod clean
	rm -rf build suite/*.egg-info .pytest_cache
