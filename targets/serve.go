package targets

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// What the reference targets (httptarget, wsgateway, frametarget) share
// to start and stop: the same --listen flag and default, one listen, the
// ready call, and serving until the context ends.

// DefaultListen is a reference target's default address: a free loopback
// port.
const DefaultListen = "127.0.0.1:0"

// ShutdownGrace bounds a reference target's graceful shutdown; then its
// connections are closed. It stays under the 2 s Process.Stop waits
// before SIGKILL.
const ShutdownGrace = time.Second

// ListenFlag registers --listen on fs: the TCP address a target listens
// on, *addr its default.
func ListenFlag(fs *flag.FlagSet, addr *string) {
	fs.StringVar(addr, "listen", *addr, "TCP address to listen on")
}

// Listen listens on TCP address addr; its error reads "listen: …".
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// ServeUntil runs serve (a target serving ln) on a goroutine of its own,
// calls ready, when not nil, with ln's host:port, and waits. When serve
// returns first, ServeUntil returns its error as "serve: …". When ctx
// ends first, it calls stop, which must make serve return, waits for
// serve, and returns nil: serve's error then (http.ErrServerClosed, a
// closed listener's) is the stop's own.
func ServeUntil(ctx context.Context, ln net.Listener, ready func(addr string), serve func() error, stop func()) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop()
	<-errc
	return nil
}

// ShutdownHTTP shuts srv down gracefully, giving the requests in flight
// up to ShutdownGrace, then closes whatever is left.
func ShutdownHTTP(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}
