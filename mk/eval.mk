# Evaluation targets (owner: evaluation). Included by the top-level Makefile.
# The evaluation command is in the research module (research/cmd/eval).
# `make eval` regenerates docs/eval/REPORT.md and its plots (a few minutes on
# 2 cores); `make eval-quick` is the CI variant (well under a minute) and
# writes to a scratch directory so the committed report is not replaced.
EVAL_DATA ?= $(abspath ../shared/data)
EVAL_QUICK_OUT ?= $(or $(TMPDIR),/tmp)/changerate-eval-quick

.PHONY: eval eval-quick
eval: ## regenerate docs/eval/REPORT.md and its plots from simulations and ../shared/data (a few minutes)
	$(GO) -C research run ./cmd/eval --out $(CURDIR)/docs/eval --data $(EVAL_DATA)

eval-quick: ## the evaluation in --quick mode (CI size), into a scratch directory
	$(GO) -C research run ./cmd/eval --quick --out $(EVAL_QUICK_OUT) --data $(EVAL_DATA)

# The alerts evaluation (docs/alerts-eval.md) is research/cmd/alertseval:
# seeded simulations and ../shared/data through aggregate.Processor.
.PHONY: alerts-eval
alerts-eval: ## regenerate docs/alerts-eval.md (alert power against the oracle, own rhythms, php-doc, NASA; ~10 min)
	$(GO) -C research run ./cmd/alertseval -out $(CURDIR)/docs/alerts-eval.md -data $(EVAL_DATA)
