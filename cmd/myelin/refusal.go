package main

import "flag"

// guardFlags are the flags of run, chat and serve about refusals: the
// refusal guard (agent.Agent.RefusalGuard, docs/agent.md "The refusal
// guard"), off unless asked for.
type guardFlags struct {
	refusal bool // --refusal-guard
}

func (f *guardFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.refusal, "refusal-guard", false, "when the model refuses to go on after reading a round's tool results, withhold them (each replaced in the requests by a placeholder naming the workspace file that keeps it whole; the history keeps them) and send the request once more; a second refusal ends the turn")
}
