package httpguard

import (
	"net/http"
	"time"
)

// The bounds Server puts on a connection (variables so that a test may
// shorten them).
var (
	// readHeaderTimeout is how long a client has to send a request's
	// headers: the guard's checks run only once they are read, so a
	// client without the token could otherwise hold a connection, its
	// goroutine and its descriptor for as long as it liked.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its
	// next request.
	idleTimeout = 2 * time.Minute
)

// Server is the http.Server every endpoint of myelin serves h with: a
// client must send a request's headers within 10 s and a kept-alive
// connection waiting for its next request is closed after 2 minutes. It
// sets no read or write timeout on a request itself, whose body may be
// read slowly and whose answer may be a stream that stands for hours
// (server-sent events); those are bounded by the guard's body limit and
// by the handlers.
func Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
}
