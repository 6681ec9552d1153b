package provider

import (
	"runtime/debug"
	"sync"

	"github.com/myelin-run/myelin/history"
)

// Resumable is a wire that keeps the encoded start of each conversation's
// last body (its kept prefix, internal/prefix) and can hand it out and
// take it back, so that a restarted agent builds its first request on the
// bytes the last process encoded instead of encoding every message again
// (agent/resume.go). A wire must hand out only bytes its body for those
// messages starts with, and must take back only bytes its own encoding
// gives: what it takes back is sent.
type Resumable interface {
	// HoldsPrefix reports whether the wire keeps a prefix for
	// conversation key already (its own, or one it took back).
	HoldsPrefix(key string) bool
	// KeptPrefix is what the wire kept of conversation key's last body
	// when it was made of msgs' first messages (msgs: that request's
	// messages); ok is false when it kept none, or none of msgs.
	// Point.Rows and Point.Digest are the caller's to set.
	KeptPrefix(key string, msgs []history.Message) (p history.ResumePoint, ok bool)
	// ResumePrefix takes p back for conversation key, as the prefix of
	// msgs (p.Messages of them, the view messages p's bytes encode),
	// when the wire keeps nothing for key yet, p is of this wire and its
	// settings (Wire), and its bytes end with the wire's encoding of
	// their last message group. It reports whether it took it. The
	// caller must have checked that msgs are the messages p was made of
	// (Digest); the wire checks each of them against its next request's
	// as it does for a prefix of its own. A wire that takes p keeps
	// p.Bytes as they are: the caller must not use them afterwards.
	ResumePrefix(key string, msgs []history.Message, p history.ResumePoint) bool
}

// BuildIdentity names the build of myelin running: its main module's
// version and the VCS revision it was built from (with "+modified" for a
// build of a changed tree), as the Go toolchain recorded them. A wire puts
// it in the resume points it makes (history.ResumePoint.Wire), so that a
// point made by another build, whose encoder may differ, is not taken
// back. A build without that information (go test, go run) names itself
// by what it has; its points are checked all the same (Resumable).
func BuildIdentity() string { return buildIdentity() }

var buildIdentity = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build"
	}
	id := info.Main.Path + "@" + info.Main.Version
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			id += " " + s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			id += "+modified"
		}
	}
	return id + " " + info.GoVersion
})
