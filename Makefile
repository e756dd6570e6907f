# changerate — common tasks. `make help` lists them.
GO ?= go
FUZZTIME ?= 30s

VERSION ?= $(shell cat VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
IMAGE ?= changerate/changerate
DOCKER ?= docker

.PHONY: help demo test test-short bench fuzz build image vet

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

demo: ## run the embedded default: in-process Kafka, in-memory state, sample logs; prints the estimates
	$(GO) run ./cmd/aggregator

test: ## run every test (installs redis-server, kcat, chromium and promtool when missing and root)
	./scripts/test.sh

test-short: ## unit tests only, no race detector
	$(GO) test -short ./...

build: ## build every command into bin/; aggregator and ingest as release binaries (static, version-stamped)
	$(GO) build -o bin/ ./cmd/...
	VERSION=$(VERSION) REVISION=$(REVISION) DATE=$(DATE) GO=$(GO) ./scripts/build-static.sh bin

image: ## build the container image $(IMAGE):$(VERSION) (Dockerfile; both programs, distroless, UID 65532)
	$(DOCKER) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg DATE=$(DATE) \
		-t $(IMAGE):$(VERSION) .

vet: ## go vet
	$(GO) vet ./...

bench: ## benchmarks and the throughput report (docs/bench.md)
	./scripts/bench.sh

fuzz: ## run every fuzz target for FUZZTIME each
	./scripts/fuzz.sh $(FUZZTIME)

-include mk/*.mk
