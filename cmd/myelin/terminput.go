package main

import (
	"bufio"
	"context"
	"io"
	"sync"
)

// termInput is the lines a person types, read from the command's stdin by
// one goroutine and handed to whoever waits for one: chat's prompt, an
// approval question (askterm.go), an MCP server's elicitation. Two readers
// of one terminal would each take some of the lines typed; with one, a
// line goes to the question on the screen. The goroutine starts at the
// first line wanted, so that what reads stdin before (the .mcp.json
// approval at start) reads it alone.
type termInput struct {
	r     io.Reader
	start sync.Once
	lines chan string // closed at the input's end
	done  chan struct{}
	stop1 sync.Once
}

func newTermInput(r io.Reader) *termInput {
	return &termInput{r: r, lines: make(chan string), done: make(chan struct{})}
}

// channel is the lines as they are typed; it is closed at the input's end.
func (t *termInput) channel() <-chan string {
	t.start.Do(func() {
		go func() {
			defer close(t.lines)
			in := bufio.NewScanner(t.r)
			in.Buffer(make([]byte, 64*1024), 16<<20)
			for in.Scan() {
				select {
				case t.lines <- in.Text():
				case <-t.done:
					return
				}
			}
		}()
	})
	return t.lines
}

// next is the next line typed; errNoAnswer when the input ended, and
// ctx's cause when ctx ended first (Ctrl-C during a question ends the
// turn). A line typed after ctx ended is left for the next reader.
func (t *termInput) next(ctx context.Context) (string, error) {
	select {
	case line, ok := <-t.channel():
		if !ok {
			return "", errNoAnswer
		}
		return line, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// stop ends the reading at the next line: no more lines are wanted.
func (t *termInput) stop() { t.stop1.Do(func() { close(t.done) }) }
