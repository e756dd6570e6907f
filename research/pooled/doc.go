// Package pooled holds the research variants of the product's pooled
// (empirical-Bayes) estimate (estimators.Pooled, PooledEstimate): site
// priors over time (hier.go: level drift H1–H2, three-level shrinkage H3,
// lasting rates and pooled bursts H4–H5) and the over-dispersed,
// negative-binomial posterior (nb.go). research/cmd/eval judges them
// (docs/eval); none of them is published, so they are not in the
// product module. They build on the product's exported pooled primitives:
// estimators.PoolStats, Evidence, GammaPrior, Pooled, PooledPosterior and
// MaxShape.
package pooled
