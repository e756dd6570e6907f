// Package redistest starts real redis-server processes for tests, benchmarks
// and local tools: a standalone server (optionally with AOF, a password, ACL
// users or TLS) that can be killed with SIGKILL and restarted on the same
// directory and port, and a local Redis Cluster of several masters.
//
// Every server listens on 127.0.0.1 on a port that was free when it was
// picked, never on the machine's 6379, and keeps its files in its own
// directory. Start and StartCluster are for tests and benchmarks: they skip
// the test when redis-server is missing (or fail it when the environment
// variable CHANGERATE_REQUIRE_REDIS is set, as CI does) and stop the servers
// at t.Cleanup. Launch and LaunchCluster are the same without testing.TB, for
// cmd code; their caller must call Stop.
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skipped test into a failed one. CI sets it.
const RequireEnv = "CHANGERATE_REQUIRE_REDIS"

// ErrNoRedis is returned by Launch when no redis-server binary is found.
var ErrNoRedis = errors.New("redistest: redis-server not found")

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 20 * time.Second

// options collects what the Option functions set.
type options struct {
	binary      string
	dir         string
	aof         bool
	password    string
	users       []string // ACL rules, each "name on >pass ~* &* +@all" style
	extraUsers  []string // WithUser: ACL users the Server's Client does not use
	tlsCfg      *TLS
	args        []string
	clusterPort int
}

// Option configures a server started by Start or Launch.
type Option func(*options)

// WithBinary uses the given redis-server binary instead of the first of
// /usr/bin/redis-server and redis-server in PATH.
func WithBinary(path string) Option { return func(o *options) { o.binary = path } }

// WithDir keeps the server's files in dir instead of a new temporary
// directory (which Start removes at cleanup and Launch at Stop).
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// WithAOF turns on the append-only file with appendfsync everysec, so that a
// SIGKILL loses at most about the last second of acknowledged writes.
func WithAOF() Option { return func(o *options) { o.aof = true } }

// WithPassword sets requirepass (the password of the default user). The
// Server's Client authenticates with it.
func WithPassword(pw string) Option { return func(o *options) { o.password = pw } }

// WithACLUser adds an ACL user with full access and the given password, and
// makes the Server's Client log in as that user. If disableDefault is true
// the default user is turned off, so that only this user can connect.
func WithACLUser(name, password string, disableDefault bool) Option {
	return func(o *options) {
		o.users = append(o.users, fmt.Sprintf("%s on >%s ~* &* +@all", name, password))
		if disableDefault {
			o.users = append(o.users, "default off")
		}
	}
}

// WithUser adds an ACL user with exactly the given rules (e.g. state's
// least-privilege RedisACLRules) and password. Unlike WithACLUser, the
// Server's Client keeps its own (administrative) login, so a test can check
// what the restricted user may not do.
func WithUser(name, password, rules string) Option {
	return func(o *options) {
		o.extraUsers = append(o.extraUsers, fmt.Sprintf("%s on >%s %s", name, password, rules))
	}
}

// WithTLS makes the server accept only TLS connections (tls-port, port 0)
// with the given certificate files; the Server's Client connects with TLS.
func WithTLS(t TLS) Option { return func(o *options) { c := t; o.tlsCfg = &c } }

// WithArgs appends raw redis-server arguments, e.g. "--maxmemory", "1gb".
func WithArgs(args ...string) Option { return func(o *options) { o.args = append(o.args, args...) } }

// TLS names the PEM files a TLS server uses, and the client configuration
// the harness's own client uses to reach it.
type TLS struct {
	CertFile, KeyFile, CAFile string
	// AuthClients is tls-auth-clients: "yes", "no" or "optional"
	// (default "no").
	AuthClients string
	// Client is the configuration of the Server's own client; nil means
	// InsecureSkipVerify.
	Client *tls.Config
}

// Server is one running (or killed) redis-server process.
//
// Its methods are not safe for concurrent use with each other, but Client
// may be used concurrently.
type Server struct {
	// Addr is "127.0.0.1:port". It stays the same across Restart.
	Addr string
	// Port is the port of Addr.
	Port int
	// Dir holds redis.conf, the RDB/AOF files and the log file redis.log.
	Dir string
	// Client is a client of this server (authenticated as configured),
	// closed by Stop. It reconnects by itself after Restart.
	Client *redis.Client
	// Username and Password are what Client logs in with ("" if none).
	Username, Password string

	opts    options
	ownDir  bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	stopped bool
}

// findBinary returns the redis-server to run.
func findBinary(o *options) (string, error) {
	if o.binary != "" {
		if _, err := os.Stat(o.binary); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoRedis, err)
		}
		return o.binary, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	return "", ErrNoRedis
}

// Available reports whether a redis-server binary can be found.
func Available() bool {
	_, err := findBinary(&options{})
	return err == nil
}

// Start starts a redis-server for the test or benchmark tb, waits until it
// answers PING and registers its Stop with tb.Cleanup. It calls tb.Skip
// when redis-server is missing, unless CHANGERATE_REQUIRE_REDIS is set, in
// which case it calls tb.Fatal; it calls tb.Fatal on any other failure.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	skipIfMissing(tb, opts)
	if !hasDir(opts) {
		opts = append(opts, WithDir(tb.TempDir()))
	}
	s, err := Launch(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("redistest: stop: %v", err)
		}
	})
	return s
}

func hasDir(opts []Option) bool {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o.dir != ""
}

func skipIfMissing(tb testing.TB, opts []Option) {
	tb.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	if _, err := findBinary(&o); err != nil {
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("redistest: %v and %s is set", err, RequireEnv)
		}
		tb.Skipf("redistest: %v (set %s to make this fatal)", err, RequireEnv)
	}
}

// Launch starts a redis-server and waits until it answers PING. The caller
// must call Stop. It returns ErrNoRedis if no binary is found.
func Launch(opts ...Option) (*Server, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if _, err := findBinary(&o); err != nil {
		return nil, err
	}
	s := &Server{opts: o, Dir: o.dir}
	if s.Dir == "" {
		d, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		s.Dir, s.ownDir = d, true
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(o.clusterPort != 0)
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(); lastErr == nil {
			break
		}
		if !strings.Contains(lastErr.Error(), "in use") {
			break
		}
	}
	if lastErr != nil {
		s.cleanupDir()
		return nil, lastErr
	}
	s.Client = redis.NewClient(s.ClientOptions())
	return s, nil
}

// ClientOptions returns go-redis options that reach this server with the
// configured credentials and TLS.
func (s *Server) ClientOptions() *redis.Options {
	o := &redis.Options{Addr: s.Addr, Username: s.Username, Password: s.Password}
	if s.opts.tlsCfg != nil {
		o.TLSConfig = s.clientTLS()
	}
	return o
}

func (s *Server) clientTLS() *tls.Config {
	if s.opts.tlsCfg.Client != nil {
		return s.opts.tlsCfg.Client.Clone()
	}
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test harness
}

// writeConfig writes redis.conf into s.Dir.
func (s *Server) writeConfig() error {
	o := s.opts
	var b strings.Builder
	fmt.Fprintf(&b, "bind 127.0.0.1\n")
	if o.tlsCfg != nil {
		fmt.Fprintf(&b, "port 0\ntls-port %d\n", s.Port)
		fmt.Fprintf(&b, "tls-cert-file %s\ntls-key-file %s\n", o.tlsCfg.CertFile, o.tlsCfg.KeyFile)
		if o.tlsCfg.CAFile != "" {
			fmt.Fprintf(&b, "tls-ca-cert-file %s\n", o.tlsCfg.CAFile)
		}
		auth := o.tlsCfg.AuthClients
		if auth == "" {
			auth = "no"
		}
		fmt.Fprintf(&b, "tls-auth-clients %s\n", auth)
	} else {
		fmt.Fprintf(&b, "port %d\n", s.Port)
	}
	fmt.Fprintf(&b, "dir %s\n", s.Dir)
	fmt.Fprintf(&b, "logfile %s\n", filepath.Join(s.Dir, "redis.log"))
	fmt.Fprintf(&b, "daemonize no\nprotected-mode no\nsave \"\"\n")
	if o.aof {
		fmt.Fprintf(&b, "appendonly yes\nappendfsync everysec\n")
	} else {
		fmt.Fprintf(&b, "appendonly no\n")
	}
	if o.password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", o.password)
		s.Password = o.password
	}
	for _, u := range o.users {
		fmt.Fprintf(&b, "user %s\n", u)
		f := strings.Fields(u)
		if f[0] != "default" && s.Username == "" {
			s.Username = f[0]
			for _, w := range f {
				if strings.HasPrefix(w, ">") {
					s.Password = w[1:]
				}
			}
		}
	}
	for _, u := range o.extraUsers {
		fmt.Fprintf(&b, "user %s\n", u)
	}
	if o.clusterPort != 0 {
		fmt.Fprintf(&b, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 5000\n")
		fmt.Fprintf(&b, "cluster-port %d\n", o.clusterPort)
	}
	return os.WriteFile(filepath.Join(s.Dir, "redis.conf"), []byte(b.String()), 0o600)
}

// start writes the config, runs the process and waits for PING.
func (s *Server) start() error {
	if s.opts.clusterPort != 0 {
		// The bus port is this port + 10000 unless set; pick it explicitly.
		s.opts.clusterPort = s.Port + 10000
	}
	if err := s.writeConfig(); err != nil {
		return fmt.Errorf("redistest: write config: %w", err)
	}
	return s.run()
}

func (s *Server) run() error {
	bin, _ := findBinary(&s.opts)
	args := append([]string{filepath.Join(s.Dir, "redis.conf")}, s.opts.args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.stopped = cmd, done, false
	s.mu.Unlock()
	if err := s.waitReady(done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return err
	}
	return nil
}

// waitReady pings until the server answers or exits.
func (s *Server) waitReady(done <-chan struct{}) error {
	o := s.ClientOptions()
	o.MaxRetries = -1
	o.DialTimeout = 200 * time.Millisecond
	c := redis.NewClient(o)
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("redistest: redis-server exited during start: %s", s.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		// LOADING: the dataset is still being read from disk.
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: no PONG from %s within %v: %v; log: %s", s.Addr, startTimeout, err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail returns the last lines of the server's log.
func (s *Server) logTail() string {
	f, err := os.Open(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 8 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, " | ")
}

// Kill sends SIGKILL to the server and waits for it to exit. Data not yet
// written to the AOF is lost, as in a crash. Client stays usable after
// Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.stopped = true
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts the server again on the same directory, port and
// configuration (after Kill, or after Shutdown), and waits for PING, which
// Redis answers only once the AOF/RDB has been loaded.
func (s *Server) Restart() error {
	s.mu.Lock()
	running := s.cmd != nil && !s.stopped
	s.mu.Unlock()
	if running {
		return errors.New("redistest: restart of a running server")
	}
	return s.run()
}

// Stop terminates the server (SIGTERM, then SIGKILL after 10 s), closes
// Client and removes the directory if Launch created it. It is idempotent.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done, stopped := s.cmd, s.done, s.stopped
	s.stopped = true
	s.mu.Unlock()
	if cmd != nil && !stopped {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
	}
	var err error
	if s.Client != nil {
		err = s.Client.Close()
		s.Client = nil
	}
	s.cleanupDir()
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) cleanupDir() {
	if s.ownDir {
		_ = os.RemoveAll(s.Dir)
		s.ownDir = false
	}
}

// Pid returns the process id of the running server, or 0.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil || s.stopped {
		return 0
	}
	return s.cmd.Process.Pid
}

// freePort returns a TCP port on 127.0.0.1 that is free now (and, for
// cluster nodes, whose +10000 bus port is free too). Another process may
// take it before redis-server binds; Launch retries then.
func freePort(cluster bool) (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port == 6379 {
			continue
		}
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		_ = l2.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port found")
}
