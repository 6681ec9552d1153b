package oauth

import (
	"net"
	"strconv"
	"testing"
)

// The port a Loopback picks stays its own until its sign-in: another
// listener cannot take it in between (CI saw a parallel test take it,
// and the sign-in fail with "address already in use").
func TestTheLoopbacksPortIsHeldUntilItsSignIn(t *testing.T) {
	l, err := NewLoopback(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(l.port))
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s between NewLoopback and the sign-in", addr)
	}
	l.mu.Lock()
	ln, err := l.listener()
	l.mu.Unlock()
	if err != nil {
		t.Fatalf("the sign-in could not listen on its own port: %v", err)
	}
	ln.Close()
	// a second sign-in listens anew on the same port
	l.mu.Lock()
	ln, err = l.listener()
	l.mu.Unlock()
	if err != nil {
		t.Fatalf("a second sign-in could not listen on the port again: %v", err)
	}
	ln.Close()
}
