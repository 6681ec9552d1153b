package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/bedrock"
	"github.com/myelin-run/myelin/provider/gemini"
	"github.com/myelin-run/myelin/provider/googlecloud"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/provider/responses"
	"github.com/myelin-run/myelin/provider/vertex"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/window"
	"github.com/myelin-run/myelin/workspace"
)

const runUsage = `Usage:
  myelin run [flags] PROMPT      (or the prompt on standard input)
      Run one turn: the assistant's text streams to stdout; each tool call,
      the conversation id, results cleared from the requests to stay within
      the context window, and the token usage go to stderr; the model's
      thinking too, with --show-thinking.
  myelin chat [flags]
      The same, a turn per line typed, until /exit or end of input.

A request held back by its key's rate limit says so on stderr, until when
and why; every turn of the process waits at one limiter, shared through a
Postgres store with every process on it, and a request that failed before
any of its answer was shown is sent again for --retry-for
(docs/ratelimits.md).

The provider's key comes from ANTHROPIC_API_KEY or OPENAI_API_KEY, its
address from ANTHROPIC_BASE_URL or OPENAI_BASE_URL when set. Gemini
(--provider gemini) reads GEMINI_API_KEY or GOOGLE_API_KEY, and
GOOGLE_GEMINI_BASE_URL. Claude on Amazon Bedrock (--provider bedrock) reads
the AWS configuration (AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID...,
AWS_BEARER_TOKEN_BEDROCK); on Google Vertex AI (--provider vertex),
CLOUD_ML_REGION, ANTHROPIC_VERTEX_PROJECT_ID and the application default
credentials; through Anthropic's gateway on Google Cloud (--provider
google-cloud), ANTHROPIC_GOOGLE_CLOUD_PROJECT,
ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID, ANTHROPIC_GOOGLE_CLOUD_LOCATION
(default global), ANTHROPIC_GOOGLE_CLOUD_BASE_URL and the application
default credentials.
`

// Default models, when --model is not given.
const (
	defaultAnthropicModel = "claude-sonnet-4-5"
	defaultOpenAIModel    = "gpt-4.1-mini"
	defaultGeminiModel    = "gemini-2.5-flash"
	defaultResponsesModel = "gpt-5-mini"
	defaultBedrockModel   = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
	defaultVertexModel    = "claude-sonnet-4-5@20250929"
)

// agentFlags are the flags of run and chat.
type agentFlags struct {
	workspace    string
	inlineCap    int
	provider     string
	model        string
	store        string
	conversation string
	cont         bool
	fork         string // ID[@N] (fork.go)
	system       string
	maxRounds    int
	maxTokens    int
	window       int
	contextHigh  float64
	contextLow   float64
	keepRounds   int
	wait         bool
	tools        toolsetFlags
	think        thinkingFlags
	cacheTTL     string // --cache-ttl: "", 5m or 1h (cachettl.go)
	background   backgroundFlags
	guard        guardFlags
	delegate     delegateFlags
	perm         permFlags
	prices       string // --prices FILE (docs/cost.md)
	budget       budgetFlags
	retryFor     retryFor // --retry-for (retryfor.go)
}

func (f *agentFlags) set(name string) *flag.FlagSet {
	fs := newFlagSet(name)
	fs.StringVar(&f.workspace, "workspace", ".", "the workspace root `DIR`")
	fs.IntVar(&f.inlineCap, "inline-cap", 0, fmt.Sprintf("the inline cap `N` in characters (default %d; at least %d)", result.DefaultCap, result.MinCap))
	fs.StringVar(&f.provider, "provider", "", "anthropic, openai (Chat Completions, and compatible servers), openai-responses (OpenAI's Responses API), gemini, bedrock, vertex (Claude on Vertex AI) or google-cloud (Anthropic's gateway on Google Cloud) (default: the one whose API key is set: anthropic, openai, gemini, in that order; the cloud platforms only by name)")
	fs.StringVar(&f.model, "model", "", "the model `NAME` (default "+defaultAnthropicModel+", "+defaultOpenAIModel+", "+defaultResponsesModel+", "+defaultGeminiModel+", "+defaultBedrockModel+", "+defaultVertexModel+"; on google-cloud, "+defaultAnthropicModel+")")
	fs.StringVar(&f.store, "store", "", storeFlagHelp)
	fs.StringVar(&f.conversation, "conversation", "", "continue (or start) the conversation `ID`")
	fs.BoolVar(&f.cont, "continue", false, "continue the most recent conversation")
	fs.StringVar(&f.fork, "fork", "", "run in a new conversation forked from `ID[@N]`: one that continues conversation ID from its first N messages (default: all), sharing them and the provider's prompt cache; ID is left as it is")
	fs.StringVar(&f.system, "system", "", "read the system prompt of a new conversation from `FILE`")
	fs.IntVar(&f.maxRounds, "max-rounds", agent.DefaultMaxRounds, "the most tool rounds in one turn")
	fs.IntVar(&f.maxTokens, "max-tokens", agent.DefaultMaxTokens, "the most tokens in one answer")
	fs.IntVar(&f.window, "context-window", 0, "the model's context window `N` in tokens (default: the model's known one, or "+strconv.Itoa(window.DefaultContext)+" for a model myelin does not know)")
	fs.Float64Var(&f.contextHigh, "context-high", window.DefaultHigh*100, "the high mark `PCT`: a request estimated above this percent of the window less the answer's room makes room first (docs/agent.md)")
	fs.Float64Var(&f.contextLow, "context-low", window.DefaultLow*100, "the low mark `PCT`: making room takes out enough at once to bring the request under this percent (not above --context-high)")
	fs.IntVar(&f.keepRounds, "keep-rounds", window.DefaultKeepRounds, "the number `N` of newest tool rounds that keep their results when room is made (at least 1)")
	fs.StringVar(&f.prices, "prices", "", pricesFlagHelp)
	fs.StringVar(&f.cacheTTL, "cache-ttl", "", cacheTTLHelp)
	f.retryFor = retryFor(defaultRetryFor)
	fs.Var(&f.retryFor, "retry-for", retryForHelp)
	fs.BoolVar(&f.wait, "wait", false, "when another process is advancing the conversation, wait for it to finish instead of failing")
	f.tools.add(fs)
	f.think.add(fs)
	f.guard.add(fs)
	f.delegate.add(fs)
	f.background.add(fs)
	f.perm.add(fs)
	f.budget.add(fs)
	return fs
}

// check refuses the values the agent would otherwise change without a
// word: an inline cap under the floor, an empty model name. set holds the
// flags the command line gave.
func (f *agentFlags) check(set map[string]bool) error {
	if f.cont && f.conversation != "" {
		return fmt.Errorf("--continue and --conversation %s: give one of them (--continue takes the most recent conversation, --conversation names one)", f.conversation)
	}
	if err := f.checkFork(set["fork"]); err != nil {
		return err
	}
	if set["conversation"] && strings.TrimSpace(f.conversation) == "" {
		return fmt.Errorf("--conversation %q: give a conversation's ID (`myelin history list` lists them), or leave the flag out for a new one", f.conversation)
	}
	if f.provider != "" && !knownWire(f.provider) {
		return fmt.Errorf("--provider %q: want %s", f.provider, wireList)
	}
	if _, err := cacheTTL(f.cacheTTL, wireName(f.provider)); err != nil {
		return err
	}
	if f.maxRounds < 1 {
		return fmt.Errorf("--max-rounds %d: give the most tool rounds of a turn, 1 or more (default %d)", f.maxRounds, agent.DefaultMaxRounds)
	}
	if err := f.budget.check(); err != nil {
		return err
	}
	if f.maxTokens < 1 {
		return fmt.Errorf("--max-tokens %d: give the most tokens of an answer, 1 or more (default %d)", f.maxTokens, agent.DefaultMaxTokens)
	}
	if set["inline-cap"] && f.inlineCap < result.MinCap {
		return errors.New(inlineCapError(f.inlineCap))
	}
	if set["model"] && strings.TrimSpace(f.model) == "" {
		return fmt.Errorf("--model %q: give a model name, or leave the flag out for the default (%s with anthropic, %s with openai, %s with gemini)", f.model, defaultAnthropicModel, defaultOpenAIModel, defaultGeminiModel)
	}
	if set["context-window"] && f.window <= 0 {
		return fmt.Errorf("--context-window %d: give the model's context window as a positive number of tokens, or leave the flag out for the model's known one", f.window)
	}
	if !(f.contextHigh > 0 && f.contextHigh <= 100) {
		return fmt.Errorf("--context-high %g: give a percent of the window less the answer's room, above 0 and at most 100 (default %g)", f.contextHigh, window.DefaultHigh*100)
	}
	if !(f.contextLow > 0 && f.contextLow <= 100) {
		return fmt.Errorf("--context-low %g: give a percent of the window less the answer's room, above 0 and at most 100 (default %g)", f.contextLow, window.DefaultLow*100)
	}
	if f.contextLow > f.contextHigh {
		return fmt.Errorf("--context-low %g is above --context-high %g: making room brings the request down to the low mark, so it must not be above the high mark", f.contextLow, f.contextHigh)
	}
	if f.keepRounds < 1 {
		return fmt.Errorf("--keep-rounds %d: at least the newest round keeps its results (give 1 or more; default %d)", f.keepRounds, window.DefaultKeepRounds)
	}
	if err := f.tools.sandbox.check(); err != nil {
		return err
	}
	if err := f.policy().Check(); err != nil {
		return fmt.Errorf("--context-high %g, --context-low %g, --keep-rounds %d: %w", f.contextHigh, f.contextLow, f.keepRounds, err)
	}
	if _, err := f.think.config(agent.AnswerRoom(f.maxTokens)); err != nil {
		return err
	}
	if !f.tools.noCodeExecution {
		if _, err := f.tools.limits(); err != nil {
			return err
		}
		if err := f.background.fit(f.tools.scriptEngines); err != nil {
			return err
		}
	}
	return f.delegate.check()
}

// policy is the context policy the flags ask for: the marks as fractions
// of the window less the answer's room (contract §12, docs/agent.md).
func (f *agentFlags) policy() window.Policy {
	return window.Policy{High: f.contextHigh / 100, Low: f.contextLow / 100, KeepRounds: f.keepRounds}
}

// session is what run and chat share: the agent, its workspace and store,
// and the conversation.
type session struct {
	agent *agent.Agent
	ws    *workspace.Workspace
	store history.Store
	tools *toolset
	id    string
	// showThinking writes the model's thinking to stderr (--show-thinking).
	showThinking bool
	// dropped: the conversation was deleted, its first request having
	// never reached the provider; chat's next turn makes it again
	dropped bool
	// forked is the --fork the conversation was made by, nil for none
	forked *forkSpec
	// prices prices the token line's turns (--prices over the built-in
	// table); nil is the built-in table.
	prices *price.Table
	// limiter is the process's rate limiter, every wire's (retryfor.go).
	limiter *ratelimit.Limiter
}

func (s *session) close() {
	if s.tools != nil {
		s.tools.close()
	}
	s.store.Close()
	s.ws.Close()
}

// errNoKey is the error when no --provider is given and no provider's key
// is set: it names every variable that would choose one.
var errNoKey = errors.New("no provider API key is set: set ANTHROPIC_API_KEY (Anthropic), OPENAI_API_KEY (OpenAI, or a compatible server with OPENAI_BASE_URL), or GEMINI_API_KEY or GOOGLE_API_KEY (Gemini); or name a cloud platform, which reads its own credentials: --provider bedrock, vertex or google-cloud")

// retries is the wires' retries before any output: 0, their default
// (provider.DefaultRetries). Tests set it; while it is set, the retries
// are bounded by it, not by --retry-for (newLimits).
var retries int

// newProvider picks the wire from --provider or from which key is set.
// Every wire waits at lim's limiter and retries for lim's time.
func newProvider(name string, ttl anthropic.CacheTTL, lim wireLimits) (provider.Provider, string, error) {
	if name == "" && !anyKey() {
		return nil, "", errNoKey
	}
	l, d := lim.limiter, lim.retryFor
	claude := anthropic.Config{MaxRetries: retries, CacheTTL: ttl, Limiter: l, RetryFor: d}
	platform := anthropic.Config{CacheTTL: ttl, Limiter: l, RetryFor: d}
	switch name = wireName(name); name {
	case "anthropic":
		p, err := anthropic.New(claude)
		return p, defaultAnthropicModel, err
	case "openai":
		p, err := openai.New(openai.Config{MaxRetries: retries, Limiter: l, RetryFor: d})
		return p, defaultOpenAIModel, err
	case "gemini":
		p, err := gemini.New(gemini.Config{MaxRetries: retries, Limiter: l, RetryFor: d})
		return p, defaultGeminiModel, err
	case "openai-responses":
		p, err := responses.New(responses.Config{MaxRetries: retries, Limiter: l, RetryFor: d})
		return p, defaultResponsesModel, err
	case "bedrock":
		p, err := bedrock.New(bedrock.Config{Config: platform})
		return p, defaultBedrockModel, err
	case "vertex":
		p, err := vertex.New(vertex.Config{Config: platform})
		return p, defaultVertexModel, err
	case googlecloud.Name: // "google-cloud": the first-party API and its model names
		p, err := googlecloud.New(googlecloud.Config{Config: platform})
		return p, defaultAnthropicModel, err
	}
	return nil, "", fmt.Errorf("--provider %q: want %s", name, wireList)
}

// wires are the names --provider takes; wireList says them.
var wires = []string{"anthropic", "openai", "openai-responses", "gemini", "bedrock", "vertex", googlecloud.Name}

const wireList = "anthropic, openai, openai-responses, gemini, bedrock, vertex or google-cloud"

// knownWire reports whether --provider takes name.
func knownWire(name string) bool { return slices.Contains(wires, name) }

// anyKey reports whether the key of a wire chosen by its key is set.
func anyKey() bool {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// wireName is the wire --provider names, or, without it, the one whose
// API key is set: anthropic, then openai, then gemini (the platforms only
// by name).
func wireName(name string) string {
	if name != "" {
		return name
	}
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("OPENAI_API_KEY") != "":
		return "openai"
	case os.Getenv("ANTHROPIC_API_KEY") == "" && (os.Getenv("GEMINI_API_KEY") != "" || os.Getenv("GOOGLE_API_KEY") != ""):
		return "gemini"
	}
	return "anthropic"
}

// open assembles the agent of run and chat and picks the conversation.
func open(ctx context.Context, f agentFlags, stderr io.Writer) (*session, error) {
	s, path, err := openAgent(ctx, f, stderr) // f.check refused --continue with --conversation
	if err != nil {
		return nil, err
	}
	if err := s.pick(ctx, f, path, stderr); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openAgent assembles the agent of run, chat and serve: the provider, the
// workspace, the store (at path) and the tools.
func openAgent(ctx context.Context, f agentFlags, stderr io.Writer) (s *session, path string, err error) {
	ttl, err := cacheTTL(f.cacheTTL, wireName(f.provider))
	if err != nil {
		return nil, "", err
	}
	lim := newLimits(f.retryFor) // the process's one limiter
	prov, model, err := newProvider(f.provider, ttl, lim)
	if err != nil {
		return nil, "", err
	}
	th, err := f.think.config(agent.AnswerRoom(f.maxTokens))
	if err != nil {
		return nil, "", err
	}
	if prov, err = withThinking(prov, wireName(f.provider), th); err != nil {
		return nil, "", err
	}
	if f.model != "" {
		model = f.model
	}
	prices, err := price.Load(f.prices)
	if err != nil {
		return nil, "", err
	}
	win, err := window.For(model, f.window)
	if err != nil {
		return nil, "", err
	}
	if win.Source == window.FromDefault {
		fmt.Fprintln(stderr, win.Notice())
	} else if _, err := win.Budget(agent.AnswerRoom(f.maxTokens)); err != nil {
		return nil, "", err
	}
	system := ""
	if f.system != "" {
		b, err := os.ReadFile(f.system)
		if err != nil {
			return nil, "", fmt.Errorf("--system: %w", err)
		}
		system = result.WellFormed(string(b))
	}
	ws, err := workspace.Open(f.workspace)
	if err != nil {
		return nil, "", err
	}
	if err := workspace.CheckOwn(ws.Dir()); err != nil {
		ws.Close()
		return nil, "", fmt.Errorf("refusing to start: %w", err)
	}
	// The store opens (its log synced, its layout checked: some 2 ms of a
	// fresh process on a local disk) while the workspace's tools are made
	// (their schemas, by reflection: about 1 ms) — and nothing else: what
	// the toolset starts (the MCP servers: their commands run, an approval
	// asked, a sign-in) waits for the store, so that a store that cannot
	// open starts none of it.
	opened := make(chan openedStore, 1)
	go func() {
		store, path, err := openSessionStore(ctx, storeChoice(f.store), ws.Dir())
		opened <- openedStore{store, path, err}
	}()
	wsTools := ws.Tools()
	o := <-opened
	if o.err != nil {
		ws.Close()
		return nil, "", o.err
	}
	path = o.path
	lim.share(o.store) // before any request: with Postgres, the limits are every process's
	s = &session{ws: ws, store: o.store, showThinking: f.think.show, prices: prices, limiter: lim.limiter}
	env := result.Env{Store: ws, Limits: result.Limits{Agent: f.inlineCap}}
	if f.tools.mcp.ui == nil { // serve: no terminal, but sampling and its notices on stderr
		f.tools.mcp.ui = newMCPUI(nil, stderr)
	}
	if f.tools.mcp.ui.sampler == nil { // serve brings its own: the conversation's provider and model
		f.tools.mcp.ui.sampler = mcp.ProviderSampler{Provider: prov, Model: model}
	}
	f.tools.delegate = f.delegate.newDelegate(f.tools.mcp.ui.notify)
	s.tools, err = openToolsetOf(ctx, ws, wsTools, f.tools, env, stderr)
	if err != nil {
		s.close()
		return nil, "", err
	}
	s.agent = &agent.Agent{Provider: prov, Store: o.store, Tools: s.tools.reg, Model: model, System: system,
		Env: env, MaxRounds: f.maxRounds, MaxTokens: f.maxTokens, ContextWindow: f.window, Context: f.policy(), Wait: f.wait,
		RefusalGuard: f.guard.refusal, DropUnreached: true, RetryFor: lim.retryFor}
	if err := f.budget.apply(s.agent, s.prices); err != nil {
		s.close()
		return nil, "", err
	}
	if s.agent.Gate, err = f.perm.gate(ws.Dir(), stderr); err != nil {
		s.close()
		return nil, "", err
	}
	if d := f.tools.delegate; d != nil {
		d.Agent = s.agent // its children run on it
	}
	return s, path, nil
}

// openedStore is what openSessionStore gave, from the goroutine that
// opened the store beside the making of the workspace's tools
// (openAgent).
type openedStore struct {
	store history.Store
	path  string
	err   error
}

// pick chooses the conversation (--continue, --conversation, --fork or a
// new one) and says which on stderr. Calls a crash left without results are
// answered by the turn, under the conversation's claim.
func (s *session) pick(ctx context.Context, f agentFlags, path string, stderr io.Writer) error {
	switch {
	case f.fork != "":
		return s.forkFrom(ctx, f.fork, stderr)
	case f.cont:
		list, err := s.store.List(ctx)
		if err != nil {
			return err
		}
		list = slices.DeleteFunc(list, func(c history.Conversation) bool { return c.Parent != "" }) // a subagent's is its parent's to continue
		if len(list) == 0 {
			return fmt.Errorf("--continue: there is no conversation in %s yet", path)
		}
		s.id = list[0].ID
	case f.conversation != "":
		s.id = f.conversation
		if err := s.agent.OpenConversation(ctx, s.id); err != nil {
			return err
		}
	default:
		id, err := s.agent.NewConversation(ctx)
		if err != nil {
			return err
		}
		s.id = id
	}
	fmt.Fprintf(stderr, "conversation %s\n", s.id)
	return nil
}

func runCommand(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f agentFlags
	fs := f.set(name)
	pos, code, done := parseCommand(name, runUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if err := f.check(explicit(fs)); err != nil {
		return usageError(stderr, name, err.Error())
	}
	// A person at the terminal is asked to approve the workspace's .mcp.json.
	f.tools.mcp.trust = mcpTrust{ask: isTerminal(stdin) && isTerminal(stderr), in: stdin, out: stderr}
	f.tools.mcp.ui = newMCPUI(stdin, stderr)
	if err := f.perm.load(f.workspace, stderr); err != nil {
		return usageError(stderr, name, err.Error())
	}
	f.perm.asker = newTermAsker(f.tools.mcp.ui) // nil off a terminal: what is asked is denied
	var prompt string
	if name == "run" {
		prompt = strings.Join(pos, " ")
		if prompt == "" {
			if isTerminal(stdin) {
				return usageError(stderr, name, "give a prompt, as arguments or on standard input")
			}
			b, err := io.ReadAll(stdin)
			if err != nil {
				return usageError(stderr, name, fmt.Sprintf("reading the prompt from standard input: %v", err))
			}
			prompt = strings.TrimSpace(string(b))
		}
		if prompt == "" {
			return usageError(stderr, name, "the prompt is empty")
		}
	} else if len(pos) > 0 {
		return usageError(stderr, name, fmt.Sprintf("takes no arguments, got %q", pos))
	}
	bgLimits, err := f.background.limits()
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	f.tools.background = &backgroundSetup{limits: bgLimits, wakes: background.NewQueue()}
	flush, err := startTelemetry(ctx, name, stderr)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer flush() // after the session closes: its last spans are sent
	// An interrupt while starting (an MCP server that hangs) ends the
	// command; in run, the turn too; in chat, each turn watches its own.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := onInterrupt(ctx, cancel)
	defer stop()
	s, err := open(ctx, f, stderr)
	if err != nil {
		if interrupted(ctx) {
			fmt.Fprintf(stderr, "myelin %s: interrupted while starting\n", name)
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	defer s.close()
	if name == "run" {
		defer s.stopBackground(stderr) // run waits for nothing
		code := s.turn(ctx, prompt, stdout, stderr)
		if interrupted(ctx) {
			return exitInterrupted
		}
		return code
	}
	stop()
	return s.chatLoop(ctx, stdin, stdout, stderr)
}

// turn runs one turn, reporting as it goes, and returns the exit status.
func (s *session) turn(ctx context.Context, prompt string, stdout, stderr io.Writer) int {
	// The servers' new tools, if they changed, are offered from this
	// turn on: never mid-turn.
	if changed, err := s.tools.refresh(); err != nil {
		fmt.Fprintf(stderr, "myelin: %v\n", err)
	} else if changed {
		s.agent.Tools = s.tools.reg
		fmt.Fprintf(stderr, "myelin: the MCP servers' tools changed; this turn offers the new set (%d tools)\n", len(s.tools.reg.Names()))
	}
	if s.dropped {
		// the conversation was deleted after a turn that never reached
		// the provider: this turn makes it again, under the same id
		if err := s.remake(ctx); err != nil {
			fmt.Fprintf(stderr, "myelin: %v\n", err)
			return exitError
		}
		s.dropped = false
	}
	rep := newReporter(stdout, stderr)
	rep.showThinking = s.showThinking
	defer rep.stop()
	defer s.tools.ui.turn(rep)()
	prompt, told := s.backgroundTurn(prompt)
	tr, err := s.agent.Turn(ctx, s.id, prompt, func(e agent.Event) {
		if answering(e) {
			startDone() // the first request was sent and its answer begins (startsATurn)
		}
		told(e)
		rep.event(e)
	})
	startDone()
	rep.stop()
	rep.endText()
	if line := s.tokenLine(tr.Usage, rep.last, rep.answered, err); line != "" {
		fmt.Fprintln(stderr, line+s.turnCost(rep))
	}
	if err != nil && interrupted(ctx) {
		fmt.Fprintln(stderr, "myelin: interrupted: the answer as far as it came is stored, marked as cut, and the calls that ran are answered")
		return exitError
	}
	if err != nil {
		fmt.Fprintf(stderr, "myelin: %v\n", err)
		if tr.Dropped {
			s.dropped = true
			fmt.Fprintln(stderr, "myelin: nothing was stored: the provider was never reached")
		}
		if held := (*history.HeldError)(nil); errors.As(err, &held) {
			fmt.Fprintf(stderr, "myelin: give --wait to wait until it has finished\n")
		}
		return exitError
	}
	return exitOK
}

// answering reports whether e comes from an answer, which comes after its
// request was sent: its text, thinking or usage streamed, a call it made,
// or the answer stored.
func answering(e agent.Event) bool {
	switch e.Kind {
	case agent.TextDelta, agent.Thinking, agent.Usage, agent.ToolCall:
		return true
	case agent.Stored:
		return e.Message != nil && e.Message.Role == history.Assistant
	}
	return false
}

// tokenLine is the line that ends a turn on stderr: the last request's
// size against the context window, then the turn's input, how much of it
// was read from (and written to) the provider's prompt cache, and its
// output. last is the last request's usage and answered how many requests
// reported one; a turn that failed before any did gets no line.
func (s *session) tokenLine(turn, last history.Usage, answered int, err error) string {
	if answered == 0 {
		if err != nil {
			return ""
		}
		return "tokens: the provider reported no usage"
	}
	size := last.Input + last.CacheRead + last.CacheWrite
	line := "tokens: last request " + thousands(size)
	if win, werr := s.agent.Window(); werr == nil && win.Context > 0 {
		line += fmt.Sprintf(" of the %s-token window (%d%%)", thousands(win.Context), percent(size, win.Context))
	}
	in := turn.Input + turn.CacheRead + turn.CacheWrite
	line += fmt.Sprintf("; turn: %s input, %s of it (%d%%) read from the cache, %s written to it; %s output",
		thousands(in), thousands(turn.CacheRead), percent(turn.CacheRead, in), thousands(turn.CacheWrite), thousands(turn.Output))
	return line
}

// percent is part as a whole percent of whole, rounded; 0 when whole is.
func percent(part, whole int) int {
	if whole <= 0 {
		return 0
	}
	return int(math.Round(100 * float64(part) / float64(whole)))
}

// thousands is n with its thousands separated by commas: 120,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
