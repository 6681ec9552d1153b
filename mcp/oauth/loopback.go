package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/myelin-run/myelin/internal/httpguard"
)

// Loopback receives the authorisation server's redirect on 127.0.0.1
// (RFC 8252's loopback redirect for native apps). It serves only while a
// sign-in waits, on the port its redirect URL names, and takes only the
// redirect that carries the state of the sign-in it waits for. The port it
// picks stays its own from NewLoopback to the first sign-in (the listener
// is kept, unserved), so that no other program takes it in between.
type Loopback struct {
	port int
	who  *Interaction
	mu   sync.Mutex   // one sign-in at a time
	held net.Listener // the port's listener from NewLoopback, until a sign-in takes it
}

// NewLoopback picks the redirect's port (port, or a free one when 0).
func NewLoopback(port int, who *Interaction) (*Loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's redirect on 127.0.0.1:%d: %w", port, err)
	}
	return &Loopback{port: ln.Addr().(*net.TCPAddr).Port, who: who, held: ln}, nil
}

// listener is the port's listener for a sign-in: the one NewLoopback
// kept, the first time, else a new one on the same port. l.mu is held.
func (l *Loopback) listener() (net.Listener, error) {
	if ln := l.held; ln != nil {
		l.held = nil
		return ln, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's redirect on 127.0.0.1:%d: %w", l.port, err)
	}
	return ln, nil
}

// RedirectURL is the URL the authorisation server sends the browser back
// to.
func (l *Loopback) RedirectURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/callback", l.port)
}

// Fetch shows the person the authorisation URL (printed, and opened in a
// browser when one can be), and waits for the redirect, until ctx ends. It
// is the SDK's auth.AuthorizationCodeFetcher.
func (l *Loopback) Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("the authorization URL: %w", err)
	}
	state := u.Query().Get("state")
	ln, err := l.listener()
	if err != nil {
		return nil, err
	}
	got := make(chan result, 1)
	srv := httpguard.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") != state {
			http.Error(w, "myelin: this is not the sign-in myelin is waiting for", http.StatusBadRequest)
			return
		}
		res := result{r: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
		if e := q.Get("error"); e != "" {
			res.err = fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
		} else if res.r.Code == "" {
			res.err = errors.New("the authorization server's redirect carries no code")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if res.err != nil {
			fmt.Fprintf(w, "myelin: signing in failed: %v\n", res.err)
		} else {
			fmt.Fprintln(w, "myelin: signed in. You can close this page.")
		}
		select {
		case got <- res:
		default:
		}
	}))
	go srv.Serve(ln)
	defer srv.Close()
	if l.who != nil && l.who.Out != nil {
		fmt.Fprintf(l.who.Out, "myelin: to sign in, open this URL in a browser:\n  %s\n", args.URL)
	}
	if l.who != nil && l.who.Open != nil {
		if err := l.who.Open(args.URL); err != nil && l.who.Out != nil {
			fmt.Fprintf(l.who.Out, "myelin: could not open a browser (%v); open the URL yourself\n", err)
		}
	}
	select {
	case res := <-got:
		return res.r, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no sign-in came back to %s: %w", l.RedirectURL(), ctx.Err())
	}
}

type result struct {
	r   *auth.AuthorizationResult
	err error
}
