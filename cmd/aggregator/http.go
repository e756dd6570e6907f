package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/changerate/changerate/aggregate"
)

// httpServer serves the operational endpoints of the aggregator:
//
//	/metrics  Prometheus metrics of the explicit registry
//	/healthz  200 while the process runs (liveness)
//	/readyz   200 while the consumer runs and shutdown has not begun
//	          (readiness); the body lists the owned partitions
//
// and whatever the routes functions register (the query API and pages).
type httpServer struct {
	srv   *http.Server
	ln    net.Listener
	addr  string
	ready atomic.Bool
	log   *slog.Logger
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
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
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
