package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.uber.org/fx"
)

// ServerConfig is what the HTTP server needs from the composition root.
type ServerConfig struct {
	Addr string
	// TLSCertFile and TLSKeyFile, when both set, make the server speak HTTPS
	// itself; otherwise it speaks plain HTTP for a TLS proxy in front.
	TLSCertFile string
	TLSKeyFile  string
	// ShutdownTimeout bounds how long in-flight requests may finish on stop.
	ShutdownTimeout time.Duration
}

// MaxHeaderBytes bounds request headers; larger ones get 431 from net/http.
const MaxHeaderBytes = 64 << 10

// Mount adds a handler set's routes to the host.
type Mount func(*Host) error

// Module builds the host from the Deps the composition root supplies,
// mounts every handler set (the Mounts of group "edge.mounts", and the
// GraphQL and MCP handlers when the app has them) and runs the
// server for the app's lifetime: it listens on start (so a taken port
// fails start-up) and drains in-flight requests on stop.
var Module = fx.Module("edge",
	fx.Provide(
		New,
		fx.Annotate(newModuleHandler, fx.ParamTags(``, `group:"edge.mounts"`, `name:"graphql" optional:"true"`, `name:"graphql-public" optional:"true"`, `name:"mcp" optional:"true"`)),
		runServer,
	),
	fx.Invoke(func(*Listener) {}),
)

// newModuleHandler mounts the handler sets on host and returns its
// handler.
func newModuleHandler(host *Host, mounts []Mount, graphql http.Handler, graphqlPublic GraphQLPublic, mcp http.Handler) (http.Handler, error) {
	for _, mount := range mounts {
		if err := mount(host); err != nil {
			return nil, err
		}
	}
	if graphql != nil {
		host.MountGraphQL(graphql, graphqlPublic)
	}
	if mcp != nil {
		host.MountMCP(mcp)
	}
	return host.Handler(), nil
}

// Listener is the address the server listens on, known once it started
// (useful with port 0).
type Listener struct{ Addr net.Addr }

func runServer(lc fx.Lifecycle, cfg ServerConfig, h http.Handler, log *slog.Logger) *Listener {
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	out := &Listener{}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
			}
			out.Addr = ln.Addr()
			secure := cfg.TLSCertFile != "" && cfg.TLSKeyFile != ""
			if secure {
				// Load the pair now, so a bad certificate stops start-up
				// instead of failing every connection later.
				cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
				if err != nil {
					_ = ln.Close()
					return fmt.Errorf("load TLS certificate: %w", err)
				}
				srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
				ln = tls.NewListener(ln, srv.TLSConfig)
			}
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("http server stopped", "error", err)
				}
			}()
			scheme := "http"
			if secure {
				scheme = "https"
			}
			log.Info("listening", "url", scheme+"://"+ln.Addr().String())
			return nil
		},
		OnStop: func(ctx context.Context) error {
			timeout := cfg.ShutdownTimeout
			if timeout <= 0 {
				timeout = 15 * time.Second
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return srv.Shutdown(ctx)
		},
	})
	return out
}
