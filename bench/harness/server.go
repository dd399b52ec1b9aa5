package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a server may take to answer its readiness probe.
const readyTimeout = 30 * time.Second

// ServerSpec says how to run a benchmark target as its own OS process. Any command
// that serves HTTP on Addr will do, which is how the self-check scenario stands in
// a hello-world server for Switchboard.
type ServerSpec struct {
	// Name identifies the server in logs and errors.
	Name string
	// Args is the command line; Args[0] is the program.
	Args []string
	// Env is added to the harness's own environment.
	Env []string
	// Addr is the host:port the server listens on (see FreeAddr).
	Addr string
	// ReadyPath answers 200 once the server takes traffic.
	ReadyPath string
}

// Server is a running target process. It is stopped by Env.Close.
type Server struct {
	// URL is the server's base URL, without a trailing slash.
	URL string

	name   string
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{}
	err    error // from Wait, valid once exited is closed
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer starts spec and waits until its readiness probe answers 200. On failure
// the error quotes the end of the server's output and the process is gone.
func startServer(ctx context.Context, spec ServerSpec) (*Server, error) {
	cmd := exec.Command(spec.Args[0], spec.Args[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	out := &tail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	s := &Server{URL: "http://" + spec.Addr, name: spec.Name, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, spec.ReadyPath); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("%s not ready: %w\n--- %s output (tail) ---\n%s", spec.Name, err, spec.Name, lastLines(out.String(), 30))
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, path string) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("GET %s: %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop asks the server to shut down with SIGTERM and kills it if it is still up ten
// seconds later.
func (s *Server) Stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("stop %s: killed after 10s without exiting on SIGTERM", s.name)
	}
}

// tail keeps the last max bytes written to it: enough of a server's output to explain
// a failure without holding a whole run's logs.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
