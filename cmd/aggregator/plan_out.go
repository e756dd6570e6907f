package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/changerate/changerate/query"
)

// validatePlan checks the --plan-* options and reads PLAN_WEIGHTS's file.
func (c *config) validatePlan() error {
	if c.PlanPolicy != "" && !slices.Contains(query.Policies, c.PlanPolicy) {
		return fmt.Errorf("%s must be one of %s, got %q", opt("PLAN_POLICY"), strings.Join(query.Policies, ", "), c.PlanPolicy)
	}
	if c.PlanOut != "" && c.In == "" {
		return fmt.Errorf("%s is a filter-mode option: give %s too", opt("PLAN_OUT"), opt("IN"))
	}
	switch c.PlanWeights {
	case "", query.WeightsUniform, query.WeightsAccess:
		return nil
	}
	f, err := os.Open(c.PlanWeights)
	if err != nil {
		return fmt.Errorf("%s is uniform, access or a file of weights: %w", opt("PLAN_WEIGHTS"), err)
	}
	defer f.Close()
	w, err := readWeights(f, c.PlanWeights)
	if err != nil {
		return fmt.Errorf("%s: %w", opt("PLAN_WEIGHTS"), err)
	}
	c.planWeights = w
	return nil
}

// readWeights reads object-or-site<TAB>weight lines (blank lines and
// lines starting with # skipped); a weight must be finite and >= 0.
func readWeights(r io.Reader, name string) (map[string]float64, error) {
	w := map[string]float64{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s:%d: want object-or-site<TAB>weight (a number >= 0), got %q", name, n, line)
		}
		w[strings.ToLower(strings.TrimSpace(k))] = x
		if strings.Contains(k, "://") {
			w[strings.TrimSpace(k)] = x // objects are canonical URLs: keep the path's case
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(w) == 0 {
		return nil, fmt.Errorf("%s: no weights", name)
	}
	return w, nil
}

// planRequest is the --plan-out question: the configured budget, period,
// policy, weights and host cap, from the latest estimate's time.
func (c *config) planRequest() query.PlanRequest {
	weights := c.PlanWeights
	if c.planWeights != nil {
		weights = query.WeightsGiven
	}
	return query.PlanRequest{Policy: c.PlanPolicy, Budget: c.PlanBudget, Period: c.PlanPeriod, Weights: weights, HostCap: -1}
}

// writePlan writes the plan of the filter's estimates to PLAN_OUT.
func writePlan(srv *query.Server, cfg *config, stdout io.Writer) error {
	res, err := srv.Plan(cfg.planRequest())
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	w, closeFn, err := openOut(cfg.PlanOut, stdout)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		closeFn()
		return fmt.Errorf("plan: write %s: %w", cfg.PlanOut, err)
	}
	return closeFn()
}
