# SPDX-License-Identifier: GPL-2.0-or-later
# viommu-lab: a thin wrapper over scripts/.  Every target does its own setup.
#
#   make run     the main job: memcached in a guest, no IOMMU vs viommu-vtd (README.md)
#   make demo    one guest behind viommu-vtd moving data, then the device's statistics
#   make check   all tests; last line "N passed, N failed"
#   make bench   benchmarks (reports, not pass/fail)
#   make report  contention simulation report: build/report/report.md + SVG plots
#   make fuzz    every fuzz target (engine, iova, trace, QEMU generic-fuzz in legacy and scalable mode), FUZZ_TIME s each (docs/fuzzing.rst)
#   make check-sanitize  qtest and glue suites, guest boots and migrations against an ASan+UBSan QEMU (build/qemu-fuzz)
#   make qemu    only build build/qemu-system-x86_64
#
# Variables: SUITES="unit qtest glue guest profile" (check), IOMMU=viommu-vtd|intel-iommu|none (run),
# VCPUS=2 guest vCPUs (run; not QEMU_ARGS=-smp), DURATION=10 seconds of load per run (run),
# QEMU_ARGS="..." extra QEMU options (run, demo), FUZZ_TIME=60 FUZZ_TARGETS="engine iova qemu" (fuzz),
# REPORT_FULL=1 sweeps over 1..64 CPUs and every configuration (report).

SHELL := /bin/bash
IOMMU ?= viommu-vtd
FUZZ_TIME ?= 60
SUITES ?= unit qtest glue guest profile
export IOMMU SUITES QEMU_ARGS VCPUS DURATION FUZZ_TARGETS FUZZ_TIME REPORT_FULL

.PHONY: run demo check bench qemu standalone setup report fuzz check-sanitize clean help

help:
	@sed -n '2,15p' Makefile | sed 's/^# \{0,1\}//'

setup:
	@bash scripts/setup-host.sh guest

standalone:
	@bash scripts/setup-host.sh standalone
	@bash scripts/build-standalone.sh

qemu:
	@bash scripts/setup-host.sh qemu
	@bash scripts/fetch-qemu.sh
	@bash scripts/build-qemu.sh

run:
	@bash scripts/run.sh

demo:
	@bash scripts/setup-host.sh guest
	@bash scripts/fetch-qemu.sh
	@bash scripts/build-qemu.sh
	@bash scripts/guest/demo.sh --iommu $(IOMMU) -- $(QEMU_ARGS)

check:
	@bash scripts/check.sh

bench:
	@bash scripts/bench.sh

report:
	@bash scripts/setup-host.sh standalone
	@bash scripts/report/make-report.sh

# Coverage-guided runs of every fuzz target (docs/fuzzing.rst); finds land in
# build/fuzz/artifacts/<target>/.  FUZZ_TARGETS="engine iova qemu" picks some.
# scripts/fuzz.sh checks FUZZ_TIME and FUZZ_TARGETS, then sets up the host.
fuzz:
	@bash scripts/fuzz.sh

# The qtest and glue suites and six guest boots against an ASan+UBSan build
# of QEMU with our overlay (build/qemu-fuzz, clang); not part of check (a
# second QEMU build).
check-sanitize:
	@bash scripts/setup-host.sh fuzz
	@bash scripts/setup-host.sh qemu
	@bash scripts/setup-host.sh guest
	@bash scripts/check-sanitize.sh

clean:
	rm -rf build
