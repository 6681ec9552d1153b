package agent

import (
	"context"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// sent keeps the bodies of the requests a turn sends (its answers', and
// the summaries' it asks for), when the agent is
// asked to (Agent.KeepRequests) and the store keeps requests
// (history.Requests): for the HTTP API, which serves each byte for byte
// (contract §13).
type sent struct {
	log   history.Requests // nil: nothing is kept
	id    string
	wire  string // the wire's name (provider.WireName)
	body  []byte // the body of the request armed last, once the wire built it
	place int    // where its answer will be stored
}

func (a *Agent) sending(id string) *sent {
	s := &sent{id: id, wire: provider.WireName(a.Provider)}
	if a.KeepRequests {
		s.log, _ = a.Store.(history.Requests)
	}
	return s
}

// arm has req report its body to s; its answer will be stored at place.
func (s *sent) arm(req *provider.Request, place int) {
	if s == nil || s.log == nil {
		return
	}
	s.body, s.place = nil, place
	req.OnBody = func(b []byte) { s.body = b }
}

// keep stores the request armed last, once its fate is known: answered
// (its answer at the armed place, its usage), cut (the answer as far as it
// streamed is stored there, with err), or refused (nothing stored: answered
// false). A failure to keep it costs only the API's view of it.
func (s *sent) keep(ctx context.Context, answered bool, usage *history.Usage, err error) {
	if s == nil || s.log == nil || s.body == nil {
		return
	}
	r := history.SentRequest{Msg: s.place, Wire: s.wire, Body: s.body, Usage: usage}
	if !answered {
		r.Msg = -1
	}
	if err != nil {
		r.Error = err.Error()
	}
	_, _ = s.log.AddRequest(history.Lazy(context.WithoutCancel(ctx)), s.id, r)
	s.body = nil
}
