package agent

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// A clone has every exported setting of its original; a field added to
// Agent and not to Clone fails this test (the agent here must set every
// exported field, which the test checks too).
func TestACloneHasEveryExportedSetting(t *testing.T) {
	a := &Agent{
		Provider: stubProvider{}, Store: &history.Memory{}, Tools: &tool.Registry{},
		Env: result.Env{Limits: result.Limits{Agent: 5000}}, Model: "m", System: "s",
		MaxTokens: 7, ContextWindow: 9, Context: window.Policy{High: 0.7, Low: 0.4, KeepRounds: 2},
		MaxRounds: 3, ToolTimeout: time.Second, Wait: true, KeepRequests: true, Lease: time.Minute,
		RefusalGuard: true, DropUnreached: true, Gate: allowAll{}, RetryFor: time.Minute,
		MaxTurnTokens: 11, MaxCost: 0.5, MaxConversationCost: 2, Pricer: fakePricer{},
	}
	a.stated.Store(1234)
	c := a.Clone()
	va, vc := reflect.ValueOf(a).Elem(), reflect.ValueOf(c).Elem()
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if va.Field(i).IsZero() {
			t.Fatalf("the test's agent leaves %s unset: set it, and see that Clone copies it", f.Name)
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vc.Field(i).Interface()) {
			t.Errorf("Clone does not copy %s", f.Name)
		}
	}
	if c.stated.Load() != 1234 {
		t.Error("the stated window does not carry over")
	}
	c.Model = "other"
	if a.Model != "m" {
		t.Error("changing the clone changed the original")
	}
}

// allowAll is a gate that allows every call, by a rule.
type allowAll struct{}

func (allowAll) Check(context.Context, tool.Question) (tool.Ruling, error) {
	return tool.Ruling{Record: permission.Record{Decision: "allow", By: "rule"}}, nil
}

// stubProvider is a provider that answers nothing, for tests that never
// send.
type stubProvider struct{}

func (stubProvider) Complete(context.Context, provider.Request, func(string)) (provider.Response, error) {
	return provider.Response{}, errors.New("stubProvider sends nothing")
}
