package query

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/changerate/changerate/aggregate"
	apispec "github.com/changerate/changerate/api"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
)

// Config configures a Server. The zero value of every field means its
// documented default (WithDefaults fills them in); Validate lists every
// problem at once.
type Config struct {
	// Token, when set, is required on every /v1 request and page as
	// "Authorization: Bearer <token>" (or HTTP Basic auth with the token as
	// the password, which browsers can send without JavaScript).
	Token string
	// Timeout bounds the handling of one request (503 after it). Default 5s.
	Timeout time.Duration
	// MaxRequestBytes bounds the request target (path and query; 414 beyond
	// it) and the body (413). Default 8192.
	MaxRequestBytes int
	// DefaultLimit and MaxLimit are the default and the largest limit of
	// /v1/top and /v1/alerts. Defaults 20 and 1000.
	DefaultLimit, MaxLimit int
	// Profile is the URL canonicalisation profile (parse.Profile*), the
	// same as ingest's. Default parse.ProfileChangerate.
	Profile string
	Plan    PlanConfig
}

// Defaults of Config.
const (
	DefaultTimeout         = 5 * time.Second
	DefaultMaxRequestBytes = 8192
	DefaultLimit           = 20
	DefaultMaxLimit        = 1000
)

// WithDefaults returns c with the default of every zero field filled in
// (Plan's included).
func (c Config) WithDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.DefaultLimit == 0 {
		c.DefaultLimit = DefaultLimit
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = DefaultMaxLimit
	}
	if c.Profile == "" {
		c.Profile = parse.ProfileChangerate
	}
	c.Plan = c.Plan.WithDefaults()
	return c
}

// Validate reports every problem of c (with defaults filled in) at once,
// each naming its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("query: Timeout %s must be positive", c.Timeout))
	}
	if c.MaxRequestBytes < 256 {
		errs = append(errs, fmt.Errorf("query: MaxRequestBytes %d must be at least 256", c.MaxRequestBytes))
	}
	if c.DefaultLimit < 1 || c.MaxLimit < c.DefaultLimit {
		errs = append(errs, fmt.Errorf("query: DefaultLimit %d must be in [1, MaxLimit %d]", c.DefaultLimit, c.MaxLimit))
	}
	switch c.Profile {
	case parse.ProfileChangerate, parse.ProfileWHATWG, parse.ProfileSemantic:
	default:
		errs = append(errs, fmt.Errorf("query: Profile %q must be changerate, whatwg or semantic", c.Profile))
	}
	if err := c.Plan.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Server answers the JSON API and the HTML pages from the state store and
// the Index.
type Server struct {
	cfg    Config
	store  state.Store
	locate Locator
	model  aggregate.Model
	idx    *Index
	log    *slog.Logger
	pages  *pages

	canonMu sync.Mutex
	canon   *parse.Canonicalizer
}

// NewServer returns a Server reading object states from store (where
// locate says they are), building estimates with model (the aggregator's),
// and rankings from idx.
func NewServer(cfg Config, store state.Store, locate Locator, model aggregate.Model, idx *Index, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil || locate == nil || idx == nil || logger == nil {
		return nil, errors.New("query: NewServer needs a store, a locator, an index and a logger")
	}
	cfg = cfg.WithDefaults()
	s := &Server{cfg: cfg, store: store, locate: locate, model: model, idx: idx, log: logger,
		canon: parse.NewCanonicalizer(cfg.Profile, 0)}
	var err error
	if s.pages, err = newPages(); err != nil {
		return nil, err
	}
	return s, nil
}

// Register adds the API's and the pages' routes to mux.
func (s *Server) Register(mux *http.ServeMux) {
	api := func(h func(r *http.Request) (any, error)) http.Handler {
		return s.guard(false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, err := h(r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, v)
		}))
	}
	routes := []struct {
		path string
		h    http.Handler
	}{
		{"/v1/objects", api(s.handleObject)},
		{"/v1/objects/view", api(s.handleView)},
		{"/v1/top", api(s.handleTop)},
		{"/v1/plan", api(s.handlePlan)},
		{"/v1/alerts", api(s.handleAlerts)},
		{"/v1/sites", api(s.handleSites)},
		{"/v1/openapi.yaml", s.guard(false, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/yaml")
			_, _ = w.Write(apispec.OpenAPI)
		}))},
	}
	known := map[string]bool{}
	for _, rt := range routes {
		mux.Handle("GET "+rt.path, rt.h)
		known[rt.path] = true
	}
	// Everything else under /v1/ is answered in JSON too (ServeMux's own
	// 404 and 405 are text/plain), after the size limit and the token.
	mux.Handle("/v1/", s.guard(false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if known[r.URL.Path] {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: fmt.Sprintf("method %s not allowed: the API answers GET", r.Method),
				Status: http.StatusMethodNotAllowed})
			return
		}
		writeJSON(w, http.StatusNotFound, ErrorBody{Error: fmt.Sprintf("no API path %s: the paths are in /v1/openapi.yaml", r.URL.Path),
			Status: http.StatusNotFound})
	})))
	mux.Handle("GET /{$}", s.guard(true, http.HandlerFunc(s.pageIndex)))
	mux.Handle("GET /objects", s.guard(true, http.HandlerFunc(s.pageObject)))
}

// apiError is an error with an HTTP status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// unavailableError is the failure of a dependency of the server (the state
// store, Kafka): the request may succeed later. Its message, with the
// dependency's own error (addresses, keys), is for the log; the client is
// answered 503 with a generic reason and Retry-After.
type unavailableError struct {
	what string // "state store", "Kafka": named in the response
	err  error
}

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// RetryAfter is the Retry-After (seconds) of a 503 for an unavailable
// dependency.
const RetryAfter = 5

// statusOf is the status of err and the message for the client: an
// internal error (500) is answered with a generic message, its details are
// only logged (writeError, pageError).
func statusOf(err error) (int, string) {
	var (
		ae *apiError
		ue *unavailableError
	)
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.msg
	case errors.Is(err, errNotFound):
		return http.StatusNotFound, "object not found: no state is stored for it (never observed, or expired)"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request timed out"
	case errors.As(err, &ue):
		return http.StatusServiceUnavailable, ue.what + " unavailable, retry later"
	}
	return http.StatusInternalServerError, "internal error (logged by the server)"
}

// failed logs err (with the request) when it is the server's or a
// dependency's, sets Retry-After on a 503, and returns the status and the
// message for the client.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, err error) (int, string) {
	status, msg := statusOf(err)
	if status >= 500 {
		level := slog.LevelWarn
		if status == http.StatusInternalServerError {
			level = slog.LevelError
		}
		s.log.Log(r.Context(), level, "query: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	}
	return status, msg
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := s.failed(w, r, err)
	writeJSON(w, status, ErrorBody{Error: msg, Status: status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: "encode: " + err.Error(), Status: status})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// guard applies the request size limit, the token and the time limit.
func (s *Server) guard(html bool, h http.Handler) http.Handler {
	fail := func(w http.ResponseWriter, status int, msg string) {
		if html {
			http.Error(w, msg, status)
			return
		}
		writeJSON(w, status, ErrorBody{Error: msg, Status: status})
	}
	timeoutBody, _ := json.Marshal(ErrorBody{Error: "request timed out", Status: http.StatusServiceUnavailable})
	if html {
		timeoutBody = []byte("request timed out")
	}
	th := http.TimeoutHandler(h, s.cfg.Timeout, string(timeoutBody))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.RequestURI) > s.cfg.MaxRequestBytes {
			fail(w, http.StatusRequestURITooLong, fmt.Sprintf("request target longer than %d bytes", s.cfg.MaxRequestBytes))
			return
		}
		if r.ContentLength > int64(s.cfg.MaxRequestBytes) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body longer than %d bytes", s.cfg.MaxRequestBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes))
		if s.cfg.Token != "" && !s.authorized(r) {
			if html {
				w.Header().Set("WWW-Authenticate", `Basic realm="changerate", charset="UTF-8"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Bearer realm="changerate"`)
			}
			fail(w, http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <API_TOKEN>")
			return
		}
		th.ServeHTTP(&timeoutHeaders{ResponseWriter: w, html: html}, r)
	})
}

// timeoutHeaders completes the headers of http.TimeoutHandler's own 503
// (the request ran past API_TIMEOUT), which it writes with none: without
// them the JSON body was served as text/plain (sniffed) and without
// Retry-After. A response that already has a Content-Type (the handler's
// own, which TimeoutHandler copies before writing the status) is left as
// it is.
type timeoutHeaders struct {
	http.ResponseWriter
	html bool
}

func (t *timeoutHeaders) WriteHeader(status int) {
	h := t.Header()
	if status == http.StatusServiceUnavailable && h.Get("Content-Type") == "" {
		if t.html {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			h.Set("Content-Type", "application/json")
		}
		h.Set("Cache-Control", "no-store")
		h.Set("Retry-After", strconv.Itoa(RetryAfter))
	}
	t.ResponseWriter.WriteHeader(status)
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *timeoutHeaders) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// authorized reports whether r carries the token: "Authorization: Bearer
// <token>", or HTTP Basic auth with the token as the password. Schemes are
// case-insensitive (RFC 9110 §11.1): "bearer" and "BASIC" are accepted.
// The token is compared in constant time, through SHA-256 digests so that
// its length does not show either.
func (s *Server) authorized(r *http.Request) bool {
	var got string
	scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		got = strings.TrimSpace(cred)
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
		if err != nil {
			return false
		}
		_, got, _ = strings.Cut(string(b), ":")
	default:
		return false
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// handleObject is GET /v1/objects?url=&kind= (or object= for a name).
func (s *Server) handleObject(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "url", "object", "kind"); err != nil {
		return nil, err
	}
	obj, err := s.object(q)
	if err != nil {
		return nil, err
	}
	kind := q.Get("kind")
	if kind != "" && kind != records.EstimateChange && kind != records.EstimateAccess {
		return nil, badRequest("kind must be change or access, got %q", kind)
	}
	l, err := s.load(r.Context(), obj)
	if err != nil {
		return nil, err
	}
	change, access := s.estimates(l, obj)
	switch {
	case kind == records.EstimateAccess && access != nil:
		return access, nil
	case kind != records.EstimateAccess && change != nil:
		return change, nil
	case kind == "" && access != nil:
		return access, nil
	}
	return nil, &apiError{http.StatusNotFound, fmt.Sprintf("object %s has no %s estimate", obj, kindOr(kind))}
}

func kindOr(k string) string {
	if k == "" {
		return "change"
	}
	return k
}

// handleView is GET /v1/objects/view?url= (or object= for a name).
func (s *Server) handleView(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "url", "object"); err != nil {
		return nil, err
	}
	obj, err := s.object(q)
	if err != nil {
		return nil, err
	}
	return s.view(r.Context(), obj)
}

// TopResult is /v1/top's response: the estimate records in ranking order,
// and the ranking itself (the bounds it is ordered by).
type TopResult struct {
	By      string              `json:"by"`
	Site    string              `json:"site,omitempty"`
	Objects []*records.Estimate `json:"objects"`
	Ranking []Ranked            `json:"ranking"`
}

// handleTop is GET /v1/top?by=&site=&limit=.
func (s *Server) handleTop(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "by", "site", "limit"); err != nil {
		return nil, err
	}
	by := q.Get("by")
	if by == "" {
		by = ByChangeRate
	}
	if _, ok := byIndex(by); !ok {
		return nil, badRequest("by must be one of %s, got %q", strings.Join(byNames[:], ", "), by)
	}
	limit, err := s.limit(q)
	if err != nil {
		return nil, err
	}
	return s.top(by, strings.ToLower(q.Get("site")), limit), nil
}

// top answers /v1/top (and the tables of /) from the index alone: the
// records are the index's (Index.TopRecords), so that it reads no store
// and answers while Redis is away.
func (s *Server) top(by, site string, limit int) *TopResult {
	res := &TopResult{By: by, Site: site, Objects: []*records.Estimate{}, Ranking: []Ranked{}}
	ranked, recs := s.idx.TopRecords(by, site, limit)
	for i, rk := range ranked {
		if recs[i] == nil {
			continue // ranked by a shift of a kind whose estimate is not indexed
		}
		res.Objects = append(res.Objects, recs[i])
		res.Ranking = append(res.Ranking, rk)
	}
	return res
}

// handlePlan is GET /v1/plan?budget=&period=&site=&policy=&start=&weights=&host_cap=.
func (s *Server) handlePlan(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "budget", "period", "site", "policy", "start", "weights", "host_cap"); err != nil {
		return nil, err
	}
	pc := s.cfg.Plan
	budget := pc.Budget
	if v := q.Get("budget"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > pc.MaxBudget {
			return nil, badRequest("budget must be an integer in [1, %d], got %q", pc.MaxBudget, v)
		}
		budget = n
	}
	period := pc.Period
	if v := q.Get("period"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > 366*24*time.Hour {
			return nil, badRequest("period must be a duration between 1m and 8784h such as 24h, got %q", v)
		}
		period = d
	}
	hostCap := -1 // the configured default
	if v := q.Get("host_cap"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, badRequest("host_cap must be an integer >= 0 (visits per host per period, 0: none), got %q", v)
		}
		hostCap = n
	}
	if w := q.Get("weights"); w != "" && !validWeights(w) {
		return nil, badRequest("weights must be one of %s, got %q", strings.Join(WeightModes, ", "), w)
	}
	policy := q.Get("policy")
	if policy == "" {
		policy = DefaultPolicy
	}
	known := false
	for _, p := range Policies {
		known = known || p == policy
	}
	if !known {
		return nil, badRequest("policy must be one of %s, got %q", strings.Join(Policies, ", "), policy)
	}
	start := s.idx.Latest()
	if v := q.Get("start"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, badRequest("start must be an RFC 3339 time, got %q", v)
		}
		start = t.UTC()
	}
	if start.IsZero() {
		start = time.Now().UTC()
	}
	site := strings.ToLower(q.Get("site"))
	return s.Plan(PlanRequest{Policy: policy, Budget: budget, Period: period, Start: start, Site: site, Weights: q.Get("weights"), HostCap: hostCap})
}

// AlertsResult is /v1/alerts's response: alert records as published,
// newest first.
type AlertsResult struct {
	Alerts []json.RawMessage `json:"alerts"`
}

// handleAlerts is GET /v1/alerts?since=&site=&limit=.
func (s *Server) handleAlerts(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "since", "site", "limit"); err != nil {
		return nil, err
	}
	limit, err := s.limit(q)
	if err != nil {
		return nil, err
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			d, derr := time.ParseDuration(v)
			if derr != nil || d <= 0 {
				return nil, badRequest("since must be an RFC 3339 time or a positive duration before the latest estimate (e.g. 24h), got %q", v)
			}
			since = s.idx.Latest().Add(-d)
		}
	}
	a := s.idx.Alerts(since, strings.ToLower(q.Get("site")), limit)
	if a == nil {
		a = []json.RawMessage{}
	}
	return &AlertsResult{Alerts: a}, nil
}

// SitesResult is /v1/sites's response.
type SitesResult struct {
	Sites []SiteCount `json:"sites"`
}

// handleSites is GET /v1/sites?limit=: the indexed sites, most objects first.
func (s *Server) handleSites(r *http.Request) (any, error) {
	q := r.URL.Query()
	if err := params(q, "limit"); err != nil {
		return nil, err
	}
	limit, err := s.limit(q)
	if err != nil {
		return nil, err
	}
	return &SitesResult{Sites: s.idx.Sites(limit)}, nil
}
