package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/changerate/changerate/aggregate"
)

// httpServer serves the operational endpoints of the aggregator:
//
//	/metrics  Prometheus metrics of the explicit registry
//	/healthz  200 while the process runs (liveness): it checks nothing
//	          else, so that Kafka or Redis being away never restarts the pod
//	/readyz   200 "ready" while the consumer runs, shutdown has not begun,
//	          the member has joined a consumer-group generation (it stays
//	          ready through rebalances) and the state store answers (see
//	          readiness); the body then lists the owned partitions, none
//	          when the group has more members than partitions; 503 "not
//	          ready: <reason>" otherwise
//
// and whatever the routes functions register (the query API and pages).
type httpServer struct {
	srv   *http.Server
	ln    net.Listener
	addr  string
	ready atomic.Bool
	log   *slog.Logger
	// source reports the consumer-group generation joined (0: none) and
	// the partitions assigned in it; nil: not checked.
	source func() (generation int64, partitions int)
	// store probes the state store; nil: not checked (memory store).
	store *storeProbe
}

// newHTTPServer returns the server of addr; maxHeaderBytes is its
// http.Server.MaxHeaderBytes (config.maxHeaderBytes).
func newHTTPServer(addr string, maxHeaderBytes int, reg *prometheus.Registry, proc *aggregate.Processor, logger *slog.Logger, routes ...func(*http.ServeMux)) *httpServer {
	s := &httpServer{addr: addr, log: logger.With("component", "http")}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if reason := s.notReady(r.Context()); reason != "" {
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
		for _, p := range proc.Owned() {
			fmt.Fprintf(w, "owns %s/%d\n", p.Topic, p.ID)
		}
	})
	for _, r := range routes {
		r(mux)
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: maxHeaderBytes}
	return s
}

func (s *httpServer) setReady(v bool) { s.ready.Store(v) }

// notReady returns why /readyz fails, or "" when the aggregator is ready.
// Readiness: the consumer loop runs (not starting, not shutting down), the
// member has joined a consumer-group generation — an assignment, even an
// empty one, was received; during a rebalance the generation that is
// ending still counts, so readiness does not flap with rebalances — and
// the state store answered its last check (storeProbe: at most one round
// trip per storeProbeInterval, whatever the probe rate).
func (s *httpServer) notReady(ctx context.Context) string {
	if !s.ready.Load() {
		return "consumer not running (starting or shutting down)"
	}
	if s.source != nil {
		if gen, _ := s.source(); gen == 0 {
			return "not a member of a consumer-group generation yet (Kafka unreachable or not answering, or the group still joining)"
		}
	}
	if s.store != nil {
		if err := s.store.check(ctx); err != nil {
			return "state store unreachable: " + err.Error()
		}
	}
	return ""
}

// storeProbeInterval is how long a store check's result is reused.
const storeProbeInterval = 2 * time.Second

// storeProbeTimeout bounds one store check (below the Kubernetes probe's
// timeoutSeconds of 2).
const storeProbeTimeout = time.Second

// pinger is a store that can check it is reachable (state.Redis).
type pinger interface {
	Ping(ctx context.Context) error
}

// storeProbe checks the state store for /readyz: it reuses a result for
// interval, so probes cost at most one round trip per interval; callers
// arriving while a check runs wait for it and share its result.
type storeProbe struct {
	ping     func(context.Context) error
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	checked time.Time // zero: never
	err     error
}

func newStoreProbe(ping func(context.Context) error, interval time.Duration, now func() time.Time) *storeProbe {
	return &storeProbe{ping: ping, interval: interval, now: now}
}

// check returns the error of the latest check, checking again if it is
// older than the interval.
func (p *storeProbe) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.checked.IsZero() && p.now().Sub(p.checked) < p.interval {
		return p.err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeProbeTimeout)
	defer cancel()
	p.err = p.ping(cctx)
	p.checked = p.now()
	return p.err
}

// listen binds the address; run calls it if it was not called before.
func (s *httpServer) listen() error {
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("http: %s: listen %s: %w", opt("HTTP_ADDR"), s.addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address (after listen).
func (s *httpServer) Addr() string {
	if s.ln == nil {
		return s.addr
	}
	return s.ln.Addr().String()
}

// run serves until ctx ends, then shuts down within 5 seconds.
func (s *httpServer) run(ctx context.Context) error {
	if err := s.listen(); err != nil {
		return err
	}
	s.log.Info("serving", "addr", s.Addr())
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	s.setReady(false)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: shutdown: %w", err)
	}
	return nil
}

// pprofRoutes serves net/http/pprof under /debug/pprof/ (option PPROF).
func pprofRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
