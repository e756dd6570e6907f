// Package plan allocates a crawler's visit budget over objects whose change
// rates are estimated: the freshness-optimal allocation of Cho &
// Garcia-Molina (2003), LambdaCrawl's staleness-cost allocation (Kolobov et
// al., 2019) and f ∝ w·λ^p, with importance weights, per-host politeness
// caps and revisit bounds (Allocate), and the apportioning of a budget into
// integer shares (Apportion). It is pure: the query API's /v1/plan, the
// filter mode's --plan-out and the research tools' closed loop call it.
// Cho & Ntoulas's sampling policies, which the research tools reproduce,
// live in research/ntoulas.
package plan
