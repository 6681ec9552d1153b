package shell

import (
	"bytes"
	"os"
	"strings"

	"github.com/myelin-run/myelin/sandbox"
)

// describe tells the model, in the tool's description, how its commands
// are confined.
func describe(p sandbox.Policy) string {
	if p.Mode == sandbox.Off {
		return "Commands run unconfined, with the user's rights."
	}
	return "Commands run in myelin's sandbox: " + forbids(p) + "."
}

// forbids says what the sandbox of p allows and forbids, in a sentence's
// middle.
func forbids(p sandbox.Policy) string {
	var b strings.Builder
	if p.Mode == sandbox.ReadOnly {
		b.WriteString("they may write only $TMPDIR (a temp dir of their own, removed after)")
	} else {
		b.WriteString("they may write only the workspace (not its .git, .myelin/ or .mcp.json) and $TMPDIR (a temp dir of their own, removed after)")
	}
	if len(p.Writable) > 0 {
		b.WriteString(", and " + strings.Join(p.Writable, ", "))
	}
	b.WriteString("; they may not read the user's secrets (~/.ssh, ~/.aws, ~/.gnupg, cloud and registry credentials, myelin's tokens); they see only some environment variables (no keys or tokens)")
	if !p.Network {
		b.WriteString("; they have no network (their own loopback only) and no Unix sockets")
	}
	return b.String()
}

// note is the line added after the status of a failed command whose
// output looks like the sandbox stopped it.
func note(p sandbox.Policy) string {
	loosen := []string{}
	if !p.Network {
		loosen = append(loosen, "--sandbox-network")
	}
	loosen = append(loosen, "--sandbox-write DIR", "--sandbox off")
	return "[myelin's sandbox may be why this failed: " + forbids(p) +
		". This is not a missing file or a broken command; the user may loosen the sandbox with " + strings.Join(loosen, ", ") + ".]"
}

// telltales are what a command's output says when the sandbox stopped it:
// the C library's words for EACCES, EPERM, EROFS, EXDEV (Landlock refuses
// a hard link or a rename that would take a file out of where it is
// allowed), EBUSY (renaming a protected path, a mount point) and an
// unreachable or unresolvable network, and the words of common tools for
// them. They count only when the command failed.
var telltales = [][]byte{
	[]byte("permission denied"),
	[]byte("operation not permitted"),
	[]byte("read-only file system"),
	[]byte("invalid cross-device link"),
	[]byte("device or resource busy"),
	[]byte("network is unreachable"),
	[]byte("temporary failure in name resolution"),
	[]byte("could not resolve host"),
	[]byte("name or service not known"),
	[]byte("couldn't connect to server"),
	[]byte("connection refused"),
	[]byte("eacces"),
	[]byte("eperm"),
	[]byte("erofs"),
	[]byte("exdev"),
	[]byte("ebusy"),
	[]byte("enetunreach"),
}

// tailScan is how much of the output's end is looked at for telltales:
// a command's error is at its end, and the output may be gigabytes.
const tailScan = 64 << 10

// mayBeSandbox says whether the end of the output shows a telltale.
func mayBeSandbox(out *os.File) bool {
	st, err := out.Stat()
	if err != nil {
		return false
	}
	off := max(st.Size()-tailScan, 0)
	buf := make([]byte, st.Size()-off)
	n, _ := out.ReadAt(buf, off)
	tail := bytes.ToLower(buf[:n])
	for _, t := range telltales {
		if bytes.Contains(tail, t) {
			return true
		}
	}
	return false
}

// withheld are the names of the variables of myelin's environment env
// that command names (as a whole word: $NAME, ${NAME…}, printenv NAME)
// and that the sandbox of p does not pass to it: a command that reads a
// key finds nothing, and without a word the model would take the empty
// value for the key's.
func withheld(p sandbox.Policy, env []string, command string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || p.Passes(name) || !namesWord(command, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// namesWord says whether name appears in s as a word of its own: not
// inside a longer name.
func namesWord(s, name string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !nameByte(s[j-1])) && (end == len(s) || !nameByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

// nameByte says whether b may be part of a variable's name.
func nameByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// withheldNote is the line added after the output of a command that names
// variables the sandbox withheld from it.
func withheldNote(names []string) string {
	return "[myelin's sandbox withheld " + strings.Join(names, ", ") +
		" from this command: commands see only some environment variables, never a key or a token, so what it printed or used for them is not their value; the user may pass one with --sandbox-env NAME.]"
}
