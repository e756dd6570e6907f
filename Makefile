# changerate — common tasks. `make help` lists them.
GO ?= go
FUZZTIME ?= 30s

.PHONY: help demo test test-short bench fuzz build vet

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

demo: ## run the embedded default: in-process Kafka, in-memory state, sample logs; prints the estimates
	$(GO) run ./cmd/aggregator

test: ## run every test (installs redis-server and kcat when missing and root)
	./scripts/test.sh

test-short: ## unit tests only, no race detector
	$(GO) test -short ./...

build: ## build the binaries into bin/
	$(GO) build -o bin/ ./cmd/...

vet: ## go vet
	$(GO) vet ./...

bench: ## benchmarks and the throughput report (docs/bench.md)
	./scripts/bench.sh

fuzz: ## run every fuzz target for FUZZTIME each
	./scripts/fuzz.sh $(FUZZTIME)

-include mk/*.mk
