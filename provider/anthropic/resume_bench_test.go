//go:build linux

package anthropic

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// BenchmarkResumeBody builds the body of a stored conversation of 100,000
// messages (a call to read a file and its result, over and over, as
// cmd/myelin's BenchmarkResumeRun stores them: 18.6 MB) as the first
// request of a fresh process does: nothing kept of an earlier body, and
// every page of it new — the collector is off during the loop, so no
// body is built in memory an earlier one left. Besides the time it
// reports the process's CPU time (user and system: the page faults are
// system time) and minor page faults per body, the steadier figures on a
// loaded machine (docs/performance.md, "Resuming a stored conversation").
// Run, one core (nothing else of the process runs beside it):
//
//	go test ./provider/anthropic -run '^$' -bench ResumeBody -benchtime 10x -cpu 1
func BenchmarkResumeBody(b *testing.B) {
	req := resumedRequest(100000)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for b.Loop() {
		body, err := bodyWith(req, true, Thinking{}, "", &headCache{}, &prefix.Cache{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(body)))
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(r1.Minflt-r0.Minflt)/float64(b.N), "faults/op")
}

// resumedRequest is a request of n messages: a prompt, then an answer
// with a text and a call to read a file and the file's lines as its
// result, over and over, the last answer's text, and the new prompt.
func resumedRequest(n int) provider.Request {
	req := providertest.SampleRequest()
	req.Messages = []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}}}
	for i := 0; i < n-3; i += 2 {
		id := fmt.Sprintf("toolu_%d", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
				{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id,
				Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}})
	}
	req.Messages = append(req.Messages, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go on"}}})
	req.CacheKey = "resumed"
	return req
}
