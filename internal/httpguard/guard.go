// Package httpguard guards an HTTP endpoint that drives myelin's tools —
// myelin serve's API, myelin mcp serve --http — against what a web page,
// or anyone else who can reach the port, may ask of it: a page whose
// name is made to resolve to this machine (DNS rebinding), a page of
// another origin posting without asking first, a client without the
// token, a body without end. It is the one place those rules live, so
// that every endpoint applies the same ones.
//
// It owns no route and reads no body: it answers a refusal and passes
// every other request on, its body bounded. It must not decide what an
// admitted request may do (the permission policy does that), nor log a
// token. Server is the http.Server every such endpoint runs on, its
// connections bounded in time.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultMaxBody is the largest request body a Guard lets through when
// its MaxBody is 0, in bytes.
const DefaultMaxBody = 4 << 20

// unreadBodyWait is how long a request answered by the guard itself, or
// by an open route, may take to send the body it announced, which
// net/http reads before the answer.
const unreadBodyWait = time.Second

// MinTokenLength is the fewest characters a token may have (CheckToken).
const MinTokenLength = 16

// Guard is the rules one endpoint is served under. The zero Guard serves
// loopback names only, takes no cross-origin request and no token, and
// bounds bodies at DefaultMaxBody. A Guard must not be changed while
// Wrap's handler serves.
type Guard struct {
	// Token, when set, must come with every request as
	// "Authorization: Bearer TOKEN" (the scheme in any case); it is
	// compared in constant time. It must pass CheckToken. Without it,
	// only requests for a loopback host are served.
	Token string
	// CORSOrigins are the origins (scheme://host[:port], exactly as a
	// browser sends them in Origin) whose pages may call the endpoint;
	// "*" allows any. Empty sends no CORS headers and refuses every
	// cross-origin request. They need a Token (Check).
	CORSOrigins []string
	// CORSMethods, CORSHeaders and CORSExpose are what a preflight from
	// an allowed origin is told it may send (Access-Control-Allow-Methods
	// and -Headers), and the answer headers its page may read
	// (Access-Control-Expose-Headers).
	CORSMethods, CORSHeaders, CORSExpose []string
	// OriginsFlag is the flag that sets CORSOrigins, named in the refusal
	// of a cross-origin request ("--cors-origin"); empty, the refusal
	// says the endpoint takes none.
	OriginsFlag string
	// MaxBody bounds a request's body; 0 means DefaultMaxBody.
	MaxBody int64
	// Open, when set, reports the requests served without the origin and
	// token checks: files that hold no data, which a browser opening a
	// page cannot send a token for. The Host check applies to them too.
	Open func(*http.Request) bool
	// Refuse, when set, writes a refusal with its status and message;
	// nil writes JSON {"error":{"status":N,"message":"…"}}. It is given
	// the WWW-Authenticate header already set on a 401.
	Refuse func(w http.ResponseWriter, status int, msg string)
}

// Check says what in the Guard would leave its endpoint open, nil when
// nothing does: a Token CheckToken refuses, or CORSOrigins without a
// Token (a page of an allowed origin, any page with "*", would drive
// every tool). While it fails, Wrap's handler answers every request
// 500 with it; a command checks it before it listens.
func (g *Guard) Check() error {
	if g.Token != "" {
		if err := CheckToken(g.Token); err != nil {
			return err
		}
	}
	if len(g.CORSOrigins) > 0 && g.Token == "" {
		who := "pages of " + strings.Join(g.CORSOrigins, ", ")
		if slices.Contains(g.CORSOrigins, "*") {
			who = "any web page"
		}
		return fmt.Errorf("--cors-origin %s lets %s call the API from a browser and read its answers, which drives every tool: it needs a token that each request must send (--token or MYELIN_TOKEN)", strings.Join(g.CORSOrigins, " "), who)
	}
	return nil
}

// CheckListen says what is wrong with serving the Guard's endpoint on
// addr (host:port), nil when nothing is: Check's error, or a listener
// off the loopback interface without a Token, which would let anyone
// who reaches the port drive every tool. flag names addr's flag in the
// error ("--addr", "--http").
func (g *Guard) CheckListen(flag, addr string) error {
	if !Loopback(addr) && g.Token == "" {
		return fmt.Errorf("%s %s is not a loopback address: give a token (--token or MYELIN_TOKEN) that every request must send, or listen on 127.0.0.1", flag, addr)
	}
	return g.Check()
}

// Wrap returns next guarded: a request is refused, in this order, 500
// while Check fails (fail closed: an endpoint embedded without its
// command's check serves nothing rather than an open one); 403 when
// there is no Token and its Host is not a loopback name; 403 when a
// browser sent it from a page of an origin not in CORSOrigins; 401, with
// WWW-Authenticate, when the Token is set and it does not send it. A
// preflight from any origin is answered here (with the CORS headers when
// its origin is allowed). Every other request reaches next with its body
// bounded by MaxBody.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.ContentLength != 0
		if body {
			// A body was announced (a length, or chunks), and what
			// answers here — a refusal, a preflight, an open route —
			// reads none: net/http reads it before the answer, to keep
			// the connection, for as long as the client sends nothing
			// (no token needed). It gets a second for that, and the
			// answer closes the connection; a request admitted to next,
			// which reads its body, has neither.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyWait))
		}
		if err := g.Check(); err != nil {
			g.refuse(w, http.StatusInternalServerError, "this server serves nothing until its configuration is fixed: "+err.Error())
			return
		}
		if g.Token == "" && !loopbackHost(r.Host) {
			// DNS rebinding: a page whose name is made to resolve to this
			// machine is same-origin with itself; only its Host tells it
			g.refuse(w, http.StatusForbidden, fmt.Sprintf("this server has no token, so it answers only requests for a loopback host (localhost, 127.0.0.1, [::1]), not %q: give it a token (--token) to serve other names", r.Host))
			return
		}
		if g.cors(w, r) {
			return // a preflight, answered
		}
		open := g.Open != nil && g.Open(r)
		if from, ok := crossOrigin(r); ok && !open && !g.allowedOrigin(r.Header.Get("Origin")) {
			// a browser sends a "simple" cross-site POST without asking first
			takes := "takes no cross-origin requests"
			if g.OriginsFlag != "" {
				takes = fmt.Sprintf("takes cross-origin requests only from the origins it is given (%s)", g.OriginsFlag)
			}
			g.refuse(w, http.StatusForbidden, fmt.Sprintf("a request from another origin (%s) is refused: this server %s", from, takes))
			return
		}
		if g.Token != "" && !open && !authorized(r, g.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="myelin"`)
			g.refuse(w, http.StatusUnauthorized, "this server needs its token: send the header Authorization: Bearer TOKEN")
			return
		}
		limit := g.MaxBody
		if limit <= 0 {
			limit = DefaultMaxBody
		}
		if body && !open {
			w.Header().Del("Connection")
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// refuse answers with status and msg through Refuse, or as JSON.
func (g *Guard) refuse(w http.ResponseWriter, status int, msg string) {
	if g.Refuse != nil {
		g.Refuse(w, status, msg)
		return
	}
	var e struct {
		Error struct {
			Status  int    `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e.Error.Status, e.Error.Message = status, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e) // the client is gone, or it reads what came
}

// cors adds the CORS headers for an allowed origin, and answers a
// preflight (OPTIONS with Access-Control-Request-Method), reporting that
// it did. A preflight from an origin not allowed gets no CORS headers, so
// the browser refuses the call.
func (g *Guard) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(g.CORSOrigins) == 0 {
		return false
	}
	allowed := g.allowedOrigin(origin)
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if len(g.CORSExpose) > 0 {
			h.Set("Access-Control-Expose-Headers", strings.Join(g.CORSExpose, ", "))
		}
		if preflight {
			h.Set("Access-Control-Allow-Methods", strings.Join(g.CORSMethods, ", "))
			h.Set("Access-Control-Allow-Headers", strings.Join(g.CORSHeaders, ", "))
			h.Set("Access-Control-Max-Age", "600")
		}
	}
	if preflight {
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// allowedOrigin reports whether CORSOrigins lets pages of origin call the
// endpoint.
func (g *Guard) allowedOrigin(origin string) bool {
	for _, o := range g.CORSOrigins {
		if origin != "" && origin != "null" && (o == "*" || o == origin) {
			return true
		}
	}
	return false
}

// authorized compares the request's token with token in constant time,
// their lengths included: both are hashed first, since
// subtle.ConstantTimeCompare returns at once on a length that differs.
// The scheme is case-insensitive and spaces separate it from the token
// (RFC 7235 §2.1).
func authorized(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	ok = ok && strings.EqualFold(scheme, "Bearer")
	got = strings.TrimLeft(got, " ")
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	return ok && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// CheckToken says what is wrong with a token, nil when nothing is: it
// must be at least MinTokenLength characters, each visible ASCII (no
// space, tab or other control character, nothing outside ASCII, which
// headers do not carry reliably). The error never holds the token.
func CheckToken(tok string) error {
	const rule = "a token must be at least 16 characters of visible ASCII, with no spaces (e.g. the output of `openssl rand -hex 32`)"
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c > '~' {
			what := "a character that is not visible ASCII"
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				what = "white space"
			}
			return fmt.Errorf("the token has %s at byte %d: %s", what, i+1, rule)
		}
	}
	if len(tok) < MinTokenLength {
		return fmt.Errorf("the token is %d character(s) long: %s", len(tok), rule)
	}
	return nil
}

// loopbackHost reports whether a request's Host (with or without a port)
// names the loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossOrigin reports whether a browser sent r from a page of another
// origin (its Origin header names another host, or it is "null"; or its
// Sec-Fetch-Site says so), and that origin. Clients that are not browsers
// send neither header, and pass.
func crossOrigin(r *http.Request) (string, bool) {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return o, true
		}
		return "", false
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "a page of a " + site + " origin", true
	}
	return "", false
}

// Loopback reports whether addr (host:port) listens only on the loopback
// interface, where an endpoint may be served without a token.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
