package estimators

// The spacing code of the change state (encoding version 4): how the
// per-object sums behind the renewal variance factor (dependence.go, R1–R6)
// are stored in the bits of the mean bucket, and how states of versions
// 1–3 (the lag-1 pair counter) are carried over.

import (
	"math"
	"math/bits"

	"github.com/changerate/changerate/internal/wire"
)

// spacingBounds are the least and the greatest Σ S_j² of x ≥ 1 spacings
// S_j ≥ 1 summing to l ≥ x: all as equal as integers allow (l = a·x + b:
// b of a + 1, x − b of a), and all but one equal to 1.
func spacingBounds(l, x int64) (lo, hi int64) {
	a, b := l/x, l%x
	return x*a*a + b*(2*a+1), (l-x+1)*(l-x+1) + x - 1
}

// expectedSpacingSq is E = E₀[Σ_{j<X} S_j²] for x ≥ 1 spacings summing
// to l ≥ x, uniform over the compositions of l under independent flags
// (the moments of R3 with K = x, M = l − x): 2M(M−1)/(x+1) + 3M + x, the
// fraction rounded half up. The encoding stores Q_c's difference from it
// (a few bits for most states). Integer operations (2M(M−1) < 2⁶³ for
// l ≤ 2³¹−1), so encoder and decoder agree on every platform.
func expectedSpacingSq(l, x int64) int64 {
	M := l - x
	return (2*M*(M-1)+(x+1)/2)/(x+1) + 3*M + x
}

// spacingsCoded reports whether the encoding holds run and Q_c: 0 < X <
// n and kept; otherwise they follow from n and X.
func (c *Change) spacingsCoded() bool {
	return c.changes > 0 && c.changes < c.Intervals() && c.spacingsKept()
}

// spacingParam is the order k of the exponential-Golomb code of Q_c's
// difference from E: ⌊log2⌋ of about its standard deviation for
// independent flags, 2/√x·E₀[Σ(S_j − S̄)²] = 2/√x·M·l·(x−1)/(x(x+1))
// (R3, R5 with K = x spacings summing to l), at most 40. Products,
// quotients and a square root only, each correctly rounded (Go fuses no
// multiply-add here), so encoder and decoder agree on every platform.
func spacingParam(l, x int64) uint {
	M, L, X := float64(l-x), float64(l), float64(x)
	sd := 2 / math.Sqrt(X) * M * L * max(X-1, 1) / (X * (X + 1))
	if !(sd >= 2) {
		return 0
	}
	return uint(min(bits.Len64(uint64(min(sd, 1<<40))), 41) - 1)
}

// importSpacings sets run and Q_c (R2) of a state decoded from a version
// without them (n, X and the rest already set): run = 0 when the latest
// interval changed (prev), else its expectation under independent flags,
// E₀[S_X] − 1 = (n − X)/(X + 1) (at least 1), and Q = (n+1)²/K + D·E₀[V]
// (R3, R4: the spread that gives R̂ = D), D the factor the state
// published (version 3: the lag-1 factor of its pair count, D2–D3,
// widening only; version 2: 1). Exact where X ∈ {0, n}; otherwise the
// state's earlier intervals count with the dependence it had measured.
func (c *Change) importSpacings(prev bool, D float64) {
	n, x := c.Intervals(), c.changes
	c.run, c.sq = 0, 0
	switch {
	case !c.spacingsKept():
	case x == 0:
		c.run = n
	case x == n:
		c.sq = x
	default:
		if !prev {
			c.run = min(max(int64(math.Round(float64(n-x)/float64(x+1))), 1), n-x)
		}
		ev, _ := spacingNull(n, x)
		N1 := float64(n + 1)
		// explicit conversions: no fused multiply-add, the same value on
		// every platform
		q := float64(N1*N1/float64(x+1)) + float64(D*ev) - float64((c.run+1)*(c.run+1))
		lo, hi := spacingBounds(n-c.run, x)
		c.sq = min(max(int64(math.Round(q)), lo), hi)
	}
}

// expectedPairs is E = round(X²(n−1)/n²), the expected number of adjacent
// changed pairs among n independent flags with X set, at most X − 1:
// version 3 stored the pair count's difference from it. Exact operations,
// so encoder and decoder agreed.
func expectedPairs(n, x int64) int64 {
	if n <= 1 || x <= 0 {
		return 0
	}
	N, X := float64(n), float64(x)
	return min(int64(math.Round(X*X*(N-1)/(N*N))), x-1)
}

// decodeSpacings reads run and Q_c as AppendBinaryAt packs them (n and X
// set, 0 < X < n) and checks them against n and X.
func (s *Change) decodeSpacings(br *wire.BitReader, d *decoder) {
	n, x := s.Intervals(), s.changes
	run := br.Gamma() - 1
	if br.Failed() || run > uint64(n-x) {
		d.r.Fail("bad spacing run")
		return
	}
	s.run = int64(run)
	l := n - s.run
	k := spacingParam(l, x)
	q := br.Gamma() - 1
	low := br.Rice(k, 0)
	if br.Failed() || q >= 1<<(62-k) {
		d.r.Fail("bad spacing sum")
		return
	}
	lo, hi := spacingBounds(l, x)
	s.sq = expectedSpacingSq(l, x) + unzigzag(q<<k|low)
	if s.sq < lo || s.sq > hi {
		d.r.Fail("bad spacing sum")
	}
}

// pairFactor is the factor a version-3 state with pair count C published:
// (D2) of ρ̂ (D3) bounded to [1, n], 1 where ρ̂ ≤ 0 or is not defined.
func pairFactor(n, x, C int64) float64 {
	rho, ok := FlagCorrelation(n, x, n, C)
	switch {
	case !ok || rho <= 0:
		return 1
	case rho >= 1:
		return float64(n)
	}
	return min(VarianceFactor(rho), float64(n))
}
