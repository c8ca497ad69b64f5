# The interface for people and CI: make run, make test, make build,
# make bench, make lint. Each target installs what it needs first.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := /usr/local/go/bin:$(PATH)

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/sluicehq/sluice/core/config.Version=$(VERSION)
# One ID for both sidecar binaries of a build, drawn once per make run:
# sluice-sidecar hands stdio only to a sluice-sidecar-stdio stamped with
# the same (sidecar/serve_exec.go), never to one of another build.
BUILD_ID  := $(shell od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SIDECAR_LDFLAGS := $(LDFLAGS) -X github.com/sluicehq/sluice/sidecar.buildID=$(BUILD_ID)
BIN       := $(CURDIR)/build/bin
TAGS      := desktop,production,webkit2_41
ARTIFACTS := $(CURDIR)/build/test-output
TOOLS     := $(CURDIR)/build/tools

# What the end-to-end tests need to find; with SLUICE_REQUIRE_E2E=1 a
# missing piece fails the test instead of skipping it.
E2E_ENV := SLUICE_REQUIRE_E2E=1 SLUICE_BIN_DIR=$(BIN) SLUICE_TOOLS_DIR=$(TOOLS) \
	SLUICE_ARTIFACTS=$(ARTIFACTS) SLUICE_NODE_BIN=$(TOOLS)/node_modules/.bin

.PHONY: all run test build bench lint fuzz screenshots frontend frontend-test setup-run setup-test clean

all: build

setup-run:
	@build/scripts/setup.sh run

setup-test:
	@build/scripts/setup.sh test

frontend/node_modules/.sluice-stamp: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

frontend: frontend/node_modules/.sluice-stamp
	cd frontend && npm run build

build: setup-run frontend
	go build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/sluice .
	CGO_ENABLED=0 go build -ldflags "$(SIDECAR_LDFLAGS)" -o $(BIN)/sluice-sidecar ./sidecar/cmd/sluice-sidecar
	# What sluice-sidecar becomes (execve) when an agent starts it for
	# stdio: the serving code alone. It must sit beside sluice-sidecar
	# and carry the same BUILD_ID.
	CGO_ENABLED=0 go build -ldflags "$(SIDECAR_LDFLAGS)" -o $(BIN)/sluice-sidecar-stdio ./sidecar/cmd/sluice-sidecar-stdio
	# Under a umask of 002 go build leaves both, and the directory,
	# group-writable, which sluice-sidecar rightly refuses to hand off to.
	chmod go-w $(BIN) $(BIN)/sluice-sidecar $(BIN)/sluice-sidecar-stdio
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/sluice-headless .
	@echo "built $(BIN)/sluice, $(BIN)/sluice-sidecar and $(BIN)/sluice-sidecar-stdio ($(VERSION))"

# A window when there is a display, otherwise the headless web UI (it
# prints a one-time login URL).
run: build
	@if [ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then exec $(BIN)/sluice; else exec $(BIN)/sluice serve; fi

# staticcheck is a tool dependency in go.mod, so its version is pinned
# there and in go.sum (`go get -tool honnef.co/go/tools/cmd/staticcheck@vX`
# to move it). A finding that is right where it stands is marked on its
# line with //lint:ignore and the reason.
lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go vet -tags $(TAGS) . ./app/...
	go tool staticcheck ./...
	go tool staticcheck -tags $(TAGS) . ./app/...

frontend-test: frontend/node_modules/.sluice-stamp
	cd frontend && npm run typecheck && npm test

# The Go tests run with a single-node Kubernetes cluster started for them
# and stopped afterwards (build/scripts/with-cluster.sh; on a host that
# cannot run one it says why and the cluster's tests skip).
test: setup-test build lint frontend-test
	mkdir -p $(ARTIFACTS)
	$(E2E_ENV) build/scripts/with-cluster.sh go test -race -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz
	@echo "make test: all checks passed"

# A short run of every fuzz target on top of its checked-in seed corpus,
# bounded by a count of inputs, not a duration: Go 1.26's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded"
# when a -fuzztime duration ends on a loaded machine (go.dev/issue/75804,
# fixed in Go 1.27). 200000 inputs take about as long as 10 s did here.
FUZZTIME ?= 200000x
fuzz:
	go test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./core/audit/
	go test -run '^$$' -fuzz '^FuzzVerifyLine$$' -fuzztime $(FUZZTIME) ./core/audit/

bench: setup-test build
	mkdir -p $(ARTIFACTS)
	$(E2E_ENV) build/scripts/with-cluster.sh go run ./build/bench -out docs/benchmarks.md

# Re-render the screenshots the README and docs show (review them, then
# commit docs/screenshots).
screenshots: build
	mkdir -p docs/screenshots
	SLUICE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(E2E_ENV) go test -count=1 -run TestScreenshots_ForDocs ./app/

clean:
	rm -rf build/bin $(ARTIFACTS) frontend/dist/assets frontend/dist/index.html
