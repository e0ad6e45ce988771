# aaemu — make run: the default scenario; make test: every test, external tools included.
GO      ?= go
BIN     := bin/aaemu
OUT     ?= out

.PHONY: all build build-mpi run test deps bench bench-scale bench-anchor lint fuzz mutants screenshot clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/aaemu

# aaemu with MPI (cgo against Open MPI: libopenmpi-dev, pkg-config), for
# one run over ranks: mpirun -np N bin/aaemu-mpi run … (docs/mpi-ranks.md).
build-mpi:
	$(GO) build -tags mpi -o bin/aaemu-mpi ./cmd/aaemu

# Runs the built-in default scenario into $(OUT)/ (table, VCD, GTKWave save file, pcapng, stats).
run: build
	./$(BIN) run --out $(OUT)

# Installs missing external tools (apt-get, npm), then runs every test; then
# the parallel kernel and a partitioned run again under the race detector
# (nodes on several goroutines must share nothing).
test: deps
	$(GO) vet ./...
	$(GO) vet -tags mpi ./internal/mpi/ ./cmd/aaemu/
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -race -count=1 ./sim/
	$(GO) test -race -count=1 -run 'TestPartitionsByteIdentical/(star|counter)' ./cmd/aaemu/

deps:
	./tools/deps.sh

# Benchmarks of the kernel and the waveform writer (see README: Speed).
# The second run builds without the tracing hooks (-tags notrace): the
# difference in BenchmarkChain8 is what the hooks cost when tracing is off.
bench:
	$(GO) test -run '^$$' -bench . -skip DHTScale -benchmem -count 3 ./sim/... ./waveforms/... ./pcie/... ./iommu/... ./aa/... ./workload/...
	$(GO) test -tags notrace -run '^$$' -bench 'Chain8$$' -benchmem -count 3 ./sim/

# The anchor workload in SystemC TLM-2.0 LT, plain Go and aaemu, with ratios.
# Wall time and memory of 1 ms of a DHT on 2..1,024 nodes × 32 processes,
# with the table and the growth exponent (an hour or so; not part of bench).
# PARTITIONS=n runs the nodes on n goroutines (default: the cores).
bench-scale:
	$(GO) test -run '^$$' -bench DHTScale -benchtime 1x -timeout 180m ./workload/ $(if $(PARTITIONS),-args -scale.partitions=$(PARTITIONS))

bench-anchor:
	./tools/bench-anchor.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# A short fuzzing session on every decoder.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./waveforms
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./pcie/tlp
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 15s ./iommu/record
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 15s ./nic/roce
	$(GO) test -run '^$$' -fuzz FuzzParseFrame -fuzztime 15s ./nic/roce
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 15s ./cmd/aaemu
	$(GO) test -run '^$$' -fuzz FuzzParseTick -fuzztime 15s ./sim
	$(GO) test -run '^$$' -fuzz FuzzInject -fuzztime 15s ./torus
	$(GO) test -run '^$$' -fuzz FuzzParseSweep -fuzztime 15s ./internal/sweep
	$(GO) test -run '^$$' -fuzz FuzzScenario -fuzztime 30s ./scenario
	$(GO) test -run '^$$' -fuzz FuzzSweep -fuzztime 30s ./internal/sweep
	$(GO) test -run '^$$' -fuzz '^FuzzReplay$$' -fuzztime 30s ./internal/conformance
	$(GO) test -run '^$$' -fuzz FuzzReplayAPI -fuzztime 30s ./internal/conformance
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 15s ./nic
	$(GO) test -run '^$$' -fuzz FuzzDecodePacket -fuzztime 15s ./torus
	$(GO) test -run '^$$' -fuzz FuzzReadMapping -fuzztime 15s ./bgl

# Single-rule mutants of the blocks and the message layers
# (tools/mutants/mutants.py), each its package compiled with a file overlay
# and linked into the verify command compiled once, run against `aaemu
# verify` (and `verify mpi`): which were killed, and the kill rate. Two to
# three CPU minutes from an empty build cache; not part of test.
mutants:
	GO=$(GO) python3 tools/mutants/mutants.py

# A picture of the default run's waveforms in GTKWave, without a display.
screenshot: deps run
	./tools/gtkwave/screenshot.sh $(OUT)/run.vcd $(OUT)/run.gtkw $(OUT)/wave.png

clean:
	rm -rf bin $(OUT)
