package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// HelloWorldFlag is the hidden first argument that turns the bench binary into the
// hello-world server. Re-executing ourselves keeps the baseline a separate OS process,
// so scenario and baseline are compared process against process.
const HelloWorldFlag = "-hello-world-server"

var helloBody = []byte(`{"hello":"world"}` + "\n")

// ServeHelloWorld serves 200 with a small JSON body on every path of addr until ctx
// ends. It is the least any Go HTTP server can do per request.
func ServeHelloWorld(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("hello-world server: %w", err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(helloBody)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("hello-world server: %w", err)
	}
	return nil
}

// HelloWorld is the baseline of HTTP scenarios: the hello-world server in its own
// process, shared by every scenario of the run, driven by the same load generator
// as the scenario.
func HelloWorld() Baseline {
	return Baseline{
		Name: "hello-world",
		Unit: "requests",
		Setup: func(ctx context.Context, env *Env) (Slice, error) {
			if env.hello == nil {
				srv, err := env.StartHelloWorld(ctx)
				if err != nil {
					return nil, err
				}
				env.hello = srv
			}
			return env.HTTPLoad(Get(env.hello.URL+"/hello", nil)).Run, nil
		},
	}
}

// StartHelloWorld starts a new hello-world server process, stopped by Close.
func (e *Env) StartHelloWorld(ctx context.Context) (*Server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("hello-world server: %w", err)
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return e.StartServer(ctx, ServerSpec{
		Name:      "hello-world",
		Args:      []string{self, HelloWorldFlag, addr},
		Addr:      addr,
		ReadyPath: "/readyz",
	})
}
