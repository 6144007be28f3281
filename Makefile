# SPDX-License-Identifier: GPL-2.0-or-later
# viommu-lab: a thin wrapper over scripts/.  Every target does its own setup.
#
#   make run     the main job: memcached in a guest, no IOMMU vs viommu-vtd (README.md)
#   make demo    one guest behind viommu-vtd moving data, then the device's statistics
#   make check   all tests; last line "N passed, N failed"
#   make bench   benchmarks (reports, not pass/fail)
#   make report  contention simulation report: build/report/report.md + SVG plots
#   make fuzz    libFuzzer runs of tests/fuzz, FUZZ_TIME seconds each (clang; docs/fuzzing.rst)
#   make qemu    only build build/qemu-system-x86_64
#
# Variables: SUITES="unit qtest glue guest profile" (check), IOMMU=viommu-vtd|intel-iommu|none (run),
# QEMU_ARGS="..." extra QEMU options (run), FUZZ_TIME=60 (fuzz).

SHELL := /bin/bash
IOMMU ?= viommu-vtd
FUZZ_TIME ?= 60
SUITES ?= unit qtest glue guest profile
export IOMMU SUITES QEMU_ARGS

.PHONY: run demo check bench qemu standalone setup report fuzz clean help

help:
	@sed -n '2,13p' Makefile | sed 's/^# \{0,1\}//'

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

# Coverage-guided runs; finds land in build/fuzz/artifacts/<target>/.
fuzz:
	@bash scripts/setup-host.sh fuzz
	@[ -f build/fuzz/build.ninja ] || CC=clang CXX=clang++ meson setup build/fuzz . -Dfuzzing=true \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	@ninja -C build/fuzz tests/fuzz/engine-fuzz tests/fuzz/iova-fuzz
	@for t in engine iova; do mkdir -p build/fuzz/corpus/$$t build/fuzz/artifacts/$$t; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build/fuzz/tests/fuzz/$$t-fuzz \
		build/fuzz/corpus/$$t tests/fuzz/corpus/$$t -max_total_time=$(FUZZ_TIME) -max_len=4096 \
		-timeout=10 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/$$t/ || exit 1; done

clean:
	rm -rf build
