package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/window"
)

// maxEdits bounds the edits one request's preparation may store: clearing,
// then a summary, then as many more summaries as a conversation too long to
// be summarised in one request needs.
const maxEdits = 8

// sizing is what a turn needs to size its requests: the conversation's
// record, the tool definitions, and the window's budget.
type sizing struct {
	conv   history.Conversation
	key    string          // the requests' CacheKey (cacheKey)
	defs   []provider.Tool // shared (Agent.toolDefs): never changed
	digest string          // of defs
	budget int
	fixed  int
	// the window's tokens and the model, for errors (windowOf)
	context int
	model   string
	sent    *sent   // keeps the requests a turn sends (requests.go); nil keeps none
	spend   *budget // the turn's budgets, which a summary request is checked against; nil checks none
	// marks is what the turn remembers of the marks it could not keep
	// (keepMark); nil tries at every request
	marks *markTry
}

func (a *Agent) sizing(ctx context.Context, id string) (sizing, error) {
	conv, err := a.record(ctx, id)
	if err != nil {
		return sizing{}, err
	}
	defs, digest, err := a.toolDefs()
	if err != nil {
		return sizing{}, err
	}
	if err := a.Context.Check(); err != nil {
		return sizing{}, fmt.Errorf("agent: the context policy: %w", err)
	}
	key, err := a.cacheKey(ctx, conv)
	if err != nil {
		return sizing{}, err
	}
	s := sizing{conv: conv, key: key, defs: defs, digest: digest, fixed: window.FixedBytes(conv.System, defs)}
	return s, a.resize(&s)
}

// cacheKey is what names conv's requests to the provider's prompt cache
// (provider.Request.CacheKey): the conversation its first messages come
// from, up the chain of forks (Conversation.Base), so that a fork's
// requests go where its base's went and find their prefix cached. A
// rewind points a fork at a branch of the same conversation, never at
// another: the key stays.
func (a *Agent) cacheKey(ctx context.Context, conv history.Conversation) (string, error) {
	key := conv.ID
	for seen, base := map[string]bool{key: true}, conv.Base; base != "" && !seen[base]; {
		seen[base] = true
		c, err := history.ReadRecord(ctx, a.Store, base)
		if err != nil {
			return "", fmt.Errorf("reading conversation %s, whose messages %s shares: %w", base, conv.ID, err)
		}
		key, base = c.ID, c.Base
	}
	return key, nil
}

// resize sets s's budget from the window as it is now (a refusal may have
// stated a smaller one since s was made).
func (a *Agent) resize(s *sizing) error {
	w, err := a.Window()
	if err != nil {
		return err
	}
	if s.budget, err = w.Budget(AnswerRoom(a.MaxTokens)); err != nil {
		return err
	}
	s.context, s.model = w.Context, a.Model
	return nil
}

// windowOf names s's window and model, for errors: "200000 tokens for
// claude-sonnet-4-5".
func (s sizing) windowOf() string {
	return fmt.Sprintf("%d tokens for %s", s.context, s.model)
}

// request is the request that sends the stored conversation g under s;
// with g nil it has no messages yet.
func (a *Agent) request(s sizing, g *window.Stored) provider.Request {
	req := provider.Request{Model: a.Model, System: s.conv.System, Tools: s.defs, MaxTokens: AnswerRoom(a.MaxTokens), CacheKey: s.key}
	if g != nil {
		req.Messages = g.View()
	}
	return req
}

// fit prepares the next request of conversation id so that it fits the
// window (contract §12): when the policy says so, it takes the oldest
// results out of it (an Edit record, stored) and, when that is not enough,
// has the model summarise the older part (another), then builds the
// request from what the store holds. refused is the size the provider gave
// for the request it just refused as too long (see window.Policy.Plan), 0
// otherwise. The edits it stores are reported as ContextEdit events and
// their requests' usage is added to tr. s is the turn's sizing: the
// conversation's record and the tools do not change within a turn, so
// they are not read again for each request.
// place is where the request's answer will be stored (the stored messages
// it was built from, records included, come before it); size is the
// request's size as estimated (what the turn's budgets check).
func (a *Agent) fit(ctx context.Context, id string, s sizing, on func(Event), refused int, tr *TurnResult) (req provider.Request, place int, size window.Count, done []string, err error) {
	if err := a.resize(&s); err != nil {
		return provider.Request{}, 0, window.Count{}, nil, err
	}
	var whyNoSummary error // why a summary asked for was not had
	for range maxEdits {
		st, g, err := a.load(ctx, id, false)
		if err != nil {
			return provider.Request{}, 0, window.Count{}, done, err
		}
		if g == nil {
			g = window.GatherTail(st.tail) // once for the plan and the request
		}
		a.keepMark(ctx, id, &st, g, s.marks, false, on)
		plan := a.Context.PlanFor(s.budget, s.fixed, g, refused)
		// A summary goes first when it is needed, so that its request is
		// the conversation's own last prefix, which the provider has
		// cached. After a refusal, clearing goes first when there is
		// something to clear: the request just refused is no prefix to
		// send a summary request with.
		if plan.Summarise && whyNoSummary == nil && (refused == 0 || len(plan.Clear) == 0) {
			edit, err := a.summarise(ctx, s, &st, g, plan, on, tr)
			if ctx.Err() != nil {
				return provider.Request{}, 0, window.Count{}, done, ctx.Err()
			}
			if budgetStopped(err) != "" {
				return provider.Request{}, 0, window.Count{}, done, err
			}
			if err == nil {
				if err := a.store(ctx, id, on, history.Message{Role: history.Context, Edit: &edit}); err != nil {
					return provider.Request{}, 0, window.Count{}, done, err
				}
				text := summaryText(edit)
				done = append(done, text)
				on(Event{Kind: ContextEdit, Text: text, Edit: &edit})
				edited(ctx, telemetry.EditSummary, &edit)
				refused = 0
				continue
			}
			whyNoSummary = err
			on(Event{Kind: Notice, Text: "the conversation could not be summarised (" + err.Error() + "); taking out what results can be taken out instead"})
		}
		refused = 0
		size = plan.Count // the request as it stands, unless results go now
		if len(plan.Clear) > 0 {
			// When the request cannot fit without them, results whose
			// file cannot be written are cleared all the same, their
			// placeholder saying why: better than a refused request.
			_, env := a.files(ctx, id)
			edit, failed := a.clear(env.Store, plan, g.Tail(), plan.After > s.budget || plan.Refused > 0)
			if failed != nil {
				on(Event{Kind: Notice, Text: "results could not be written to the workspace to be taken out of the requests: " + failed.Error()})
			}
			if len(edit.Cleared) > 0 {
				if err := a.store(ctx, id, on, history.Message{Role: history.Context, Edit: &edit}); err != nil {
					return provider.Request{}, 0, window.Count{}, done, err
				}
				text := clearedText(edit)
				done = append(done, text)
				on(Event{Kind: ContextEdit, Text: text, Edit: &edit})
				edited(ctx, telemetry.EditCleared, &edit)
				if plan.Summarise && whyNoSummary == nil {
					continue // a refusal's clearing: now the summary, if still needed
				}
				if st, g, err = a.load(ctx, id, false); err != nil {
					return provider.Request{}, 0, window.Count{}, done, err
				}
				if g == nil {
					g = window.GatherTail(st.tail)
				}
				size = g.Measure(s.fixed)
			} else if failed != nil {
				done = append(done, "could not take results out: "+failed.Error())
			}
		}
		if err := overBudget(s, size, done, whyNoSummary, on); err != nil {
			return provider.Request{}, 0, window.Count{}, done, err
		}
		return a.request(s, g), g.End(), size, done, nil
	}
	return provider.Request{}, 0, window.Count{}, done, fmt.Errorf("the conversation still does not fit its window after %d edits (%s)", maxEdits, strings.Join(done, "; "))
}

// overBudget meets a request of size over s's budget with all that can go
// gone (done: what was taken out; whyNoSummary: why no summary was had,
// nil when none was asked for or one was). An estimate this conversation's
// own usage calibrated, over by more than a tenth, is trusted: the request
// is not sent, and the error says why. Otherwise (a first request, a near
// miss) a Notice says so and the provider decides: a refusal is met as
// any other. A request within the budget passes as it is.
func overBudget(s sizing, size window.Count, done []string, whyNoSummary error, on func(Event)) error {
	if size.Tokens <= s.budget {
		return nil
	}
	if size.Calibrated && size.Tokens > s.budget+s.budget/10 {
		err := fmt.Errorf("the conversation does not fit its window: the next request would be about %d tokens, over the %d the window of %s leaves for it, with all that can be taken out taken out (%s)",
			size.Tokens, s.budget, s.windowOf(), orNothing(done))
		if whyNoSummary != nil {
			err = fmt.Errorf("%w; it could not be summarised: %w", err, whyNoSummary)
		}
		return err
	}
	why := ""
	if whyNoSummary != nil {
		why = "; it could not be summarised: " + whyNoSummary.Error()
	}
	on(Event{Kind: Notice, Text: fmt.Sprintf("the next request is estimated at about %d tokens, over the %d the window of %s leaves for it, with all that can be taken out taken out%s; sending it: the provider will say", size.Tokens, s.budget, s.windowOf(), why)})
	return nil
}

// clear writes each of plan's candidates that is not in a workspace file
// already to one, and returns the edit that replaces them in requests. A
// candidate whose file cannot be written stays in the request (so that
// what is cleared can always be read again) unless anyway is set — the
// request cannot fit with it — or there is no workspace at all: then it is
// cleared with a placeholder that says why it could not be kept. The
// errors of the writes that failed are returned joined.
func (a *Agent) clear(files result.Store, plan window.Plan, t *window.Tail, anyway bool) (history.Edit, error) {
	edit := history.Edit{Why: plan.Why(), Before: plan.Count.Tokens, After: plan.After}
	if plan.Refused > 0 {
		edit.Before = plan.Refused
	}
	var failed []error
	for _, k := range plan.Clear {
		p := t.At(k.Msg).Parts[k.Part]
		label := "cleared-" + fileLabel(k.CallID)
		if k.Input {
			text := string(p.Input)
			path, err := save(files, label+"-input.json", text)
			if err != nil {
				failed = append(failed, err)
				continue // an input placeholder must name a file: it stays
			}
			edit.Cleared = append(edit.Cleared, history.Cleared{Msg: k.Msg, CallID: k.CallID, Input: true, Text: window.ClearedInput(result.Chars(text), path), Path: path, Chars: result.Chars(text)})
			continue
		}
		path, images, err := keepWhole(files, label, p)
		whyNot := ""
		if err != nil {
			if !errors.Is(err, result.ErrNoWorkspace) {
				failed = append(failed, err)
			}
			if !anyway && !errors.Is(err, result.ErrNoWorkspace) {
				continue
			}
			path, images, whyNot = "", nil, err.Error()
		}
		chars := result.Chars(p.Text)
		edit.Cleared = append(edit.Cleared, history.Cleared{Msg: k.Msg, CallID: k.CallID, Text: window.ClearedResult(chars, p.IsError, path, images, whyNot),
			Path: path, Chars: chars, Images: len(p.Images)})
	}
	return edit, errors.Join(failed...)
}

// keepWhole has the result part p kept whole in workspace files, through
// files: its spill file when it has one, else a new file label.txt, and
// its images each in a file of its own (label-1.png, ...), written first
// so that no text file is written for a result whose images cannot be
// kept. It returns the text's path and the images' paths.
func keepWhole(files result.Store, label string, p history.Part) (path string, images []string, err error) {
	for i, img := range p.Images {
		var ipath string
		if ipath, err = save(files, fmt.Sprintf("%s-%d%s", label, i+1, imageExtension(img.MIMEType)), string(img.Data)); err != nil {
			return "", nil, err
		}
		images = append(images, ipath)
	}
	path = p.SpillPath
	if path == "" {
		path, err = save(files, label+".txt", p.Text)
	}
	return path, images, err
}

// save writes data to a new workspace file under .myelin/tool-results/
// through files (the turn's result.Store: see Agent.files).
func save(files result.Store, name, data string) (string, error) {
	if files == nil {
		return "", result.ErrNoWorkspace
	}
	return files.Save(name, data)
}

// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

// fileLabel is a call id as a part of a file name.
func fileLabel(callID string) string {
	s := unsafeName().ReplaceAllString(callID, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "call"
	}
	return s
}

func imageExtension(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	}
	return ".bin"
}

// summarise has the model write the summary of the older part of the
// conversation (window.Policy.Cut says how much), in a request of its own
// within the window, and returns the edit that makes it stand for that
// part. st is the conversation as stored, g its edits gathered.
func (a *Agent) summarise(ctx context.Context, s sizing, st *readState, g *window.Stored, plan window.Plan, on func(Event), tr *TurnResult) (history.Edit, error) {
	through, err := a.Context.CutFor(s.budget, s.fixed, g)
	if err != nil {
		return history.Edit{}, err
	}
	words := window.SummaryWords(s.budget)
	req := a.request(s, nil)
	req.Messages = window.SummaryRequestFor(g, through, words)
	// the answer's room: what was asked for and half again, within the
	// agent's own max_tokens (which the budget already keeps free)
	room := int(float64(s.budget) * window.SummaryShare)
	req.MaxTokens = min(req.MaxTokens, room*3/2)
	if err := s.spend.beforeSummary(tr.Usage, window.Measure(s.fixed, req.Messages)); err != nil {
		return history.Edit{}, err
	}
	s.sent.arm(&req, g.End()) // its summary's record goes there
	resp, err := a.send(ctx, s.conv.ID, req, window.Count{}, 0, nil)
	s.sent.keep(ctx, err == nil, resp.Message.Usage, err)
	if err != nil {
		return history.Edit{}, fmt.Errorf("the summary request failed: %w", err)
	}
	if u := resp.Message.Usage; u != nil {
		tr.Usage.Add(*u)
		on(Event{Kind: Usage, Usage: *u})
	}
	text := strings.TrimSpace(textOf(resp.Message))
	switch {
	case text == "":
		return history.Edit{}, fmt.Errorf("the model answered the summary request with no text (stop reason %q)", resp.StopReason)
	case cutByItsBound(resp.StopReason):
		return history.Edit{}, fmt.Errorf("the model's summary did not end within the %d tokens given to it (asked for about %d words)", req.MaxTokens, words)
	}
	// A model that overshoots the length asked for would have its summary
	// stand in every later request, and be summarised again and again:
	// what passes twice the room is cut, at a line or word end, saying so.
	if limit := int(float64(2*room) * window.DefaultBytesPerToken); len(text) > limit {
		cut := strings.LastIndexAny(text[:limit], "\n ")
		if cut < limit/2 {
			cut = limit
		}
		text = result.WellFormed(text[:cut]) + "\n[myelin: the summary was cut here, at twice the length asked for]"
	}
	sum := &history.Summary{Through: through, Text: window.SummaryText(st.messagesBefore(through), text), Usage: resp.Message.Usage}
	return history.Edit{Summary: sum, Why: plan.Why(), Before: plan.After}, nil
}

// clearedText says what an edit that cleared results did, for people.
func clearedText(e history.Edit) string {
	t := e.Tally()
	what := fmt.Sprintf("%d tool result(s)", t.Results)
	if t.Inputs > 0 {
		what += fmt.Sprintf(" and %d tool call input(s)", t.Inputs)
	}
	return fmt.Sprintf("%s: took %s (%d characters) out of the requests, about %d → %d tokens; each is whole in a workspace file its placeholder names",
		e.Why, what, t.Chars, e.Before, e.After)
}

// cutByItsBound reports whether a stop reason says the answer reached its
// max_tokens, in any wire's words: Anthropic's and Gemini's "max_tokens",
// Chat Completions' "length", the Responses API's "max_output_tokens".
func cutByItsBound(stop string) bool {
	switch stop {
	case "max_tokens", "length", "max_output_tokens":
		return true
	}
	return false
}

// summaryText says what an edit that summarised did, for people.
func summaryText(e history.Edit) string {
	return fmt.Sprintf("%s: the model summarised the conversation before stored message %d, and the summary stands for it in later requests (the history keeps every message)", e.Why, e.Summary.Through+1)
}

// settings are the settings conversation id's requests are sent with.
func (a *Agent) settings(s sizing) history.Settings {
	st := history.Settings{Model: a.Model, System: digest(s.conv.System), Tools: s.digest}
	st.Cache = provider.CacheSettings(a.Provider)
	st.CacheTTL = provider.CacheTTL(a.Provider)
	return st
}

// toolsDigest is the digest of tool definitions in Settings.
func toolsDigest(defs []provider.Tool) string {
	var b strings.Builder
	for _, t := range defs {
		fmt.Fprintf(&b, "%q %q %s\n", t.Name, t.Description, t.InputSchema)
	}
	return digest(b.String())
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// checkSettings compares the settings this turn's requests are sent with
// to the last ones stored with an answer, says when a change means that
// the provider's cached prefix will not be reused (contract §12), and
// returns them when they must be stored with the turn's first answer, nil
// when they are stored already.
func (a *Agent) checkSettings(s sizing, st *readState, on func(Event)) *history.Settings {
	now := a.settings(s)
	last := st.lastSettings()
	if last != nil && *last == now {
		return nil
	}
	if last != nil {
		var why []string
		if last.Model != now.Model {
			why = append(why, fmt.Sprintf("the model was %s and is now %s", last.Model, now.Model))
		}
		if last.System != now.System {
			why = append(why, "the system prompt changed")
		}
		if last.Tools != now.Tools {
			why = append(why, "the tool set changed")
		}
		if last.Cache != now.Cache {
			why = append(why, fmt.Sprintf("the cache settings were %q and are now %q", last.Cache, now.Cache))
		}
		if last.CacheTTL != now.CacheTTL {
			why = append(why, fmt.Sprintf("the cache lifetime was %s and is now %s", lifetime(last.CacheTTL), lifetime(now.CacheTTL)))
		}
		on(Event{Kind: Notice, Text: "the provider's cached prefix of this conversation will not be reused: " + strings.Join(why, "; ")})
	}
	return &now
}

// lifetime is a stored Settings.CacheTTL for people: "" is the provider's
// default.
func lifetime(ttl string) string {
	if ttl == "" {
		return "the provider's default (5m on the Anthropic family)"
	}
	return ttl
}

// tooLong reports whether err is a provider's refusal of a request longer
// than the context window, with the request's size and the window in
// tokens it gave (0 when it gave none).
func tooLong(err error) (tokens, limit int, ok bool) {
	if err == nil {
		return 0, 0, false // most answers: no errors.As, which allocates its target
	}
	if tl, ok := provider.IsTooLong(err); ok {
		return tl.Tokens, tl.Limit, true
	}
	return 0, 0, false
}
