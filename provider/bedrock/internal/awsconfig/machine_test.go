package awsconfig

import (
	"errors"
	"net"
	"testing"
)

func TestOnlyLoopbackAndContainerAgentsMayServeCredentialsInTheClear(t *testing.T) {
	t.Cleanup(func(old func(string) ([]string, error)) func() { return func() { lookupHost = old } }(lookupHost))
	lookupHost = func(host string) ([]string, error) {
		switch host {
		case "agent.local":
			return []string{"169.254.170.23", "fd00:ec2::23"}, nil
		case "mixed.local":
			return []string{"127.0.0.1", "10.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	for _, c := range []struct {
		host    string
		ok, err bool
	}{
		{"127.0.0.1", true, false}, {"::1", true, false}, {"169.254.170.2", true, false},
		{"169.254.170.23", true, false}, {"fd00:ec2::23", true, false},
		{"169.254.169.254", false, false}, {"10.0.0.1", false, false},
		{"agent.local", true, false}, {"mixed.local", false, false}, {"gone.local", false, true},
	} {
		ok, err := allowedContainerHost(c.host)
		if ok != c.ok || (err != nil) != c.err {
			t.Errorf("%s: allowed %v, error %v; want %v, error %v", c.host, ok, err, c.ok, c.err)
		}
	}
	if allowedContainerIP(net.ParseIP("169.254.170.3")) {
		t.Error("169.254.170.3 is no container agent's address")
	}
}
