package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/workspace"
)

// MaxBlob is the largest file that is not text a resource read gives
// (base64 in the reply); a larger one is refused, naming its size.
const MaxBlob = 8 << 20

// sniffSize is how much of a file decides whether it is text, as the
// workspace tools decide.
const sniffSize = 8192

// readFile reads a workspace file by its file:// URI. The path must be
// under the workspace root, and is taken as the workspace tools take
// one: no `..`, no symbolic link that leads out (os.Root), and nothing
// but a regular file, the rest refused before it is opened
// (workspace.OpenRegular). A text file (well formed: contract §3) of at
// most the inline cap characters is read whole; a longer one gives its head, cut as a spill's head is (at
// the last line end that keeps 80% of the cap, else at the cap), and a
// notice naming the file's size and the workspace--read call that pages
// on from there. A file that is not text is read as a blob, up to
// MaxBlob bytes.
func (s *Server) readFile(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ws := s.cfg.Workspace
	if ws == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	rel, err := workspacePath(ws.Dir(), uri)
	if err != nil {
		return nil, err
	}
	if err := s.mayRead(ctx, req.Session, rel); err != nil {
		return nil, err
	}
	if err := s.mayReachTarget(ctx, req.Session, rel, false); err != nil {
		return nil, err
	}
	done, err := s.readTurn(ctx, req) // after the check: a question holds no turn
	if err != nil {
		return nil, err
	}
	defer done()
	// opened as the workspace tools open a file: what is not a regular
	// file (a named pipe, which would block the read for good, a device,
	// a socket) is refused before it is opened
	f, st, err := ws.OpenRegular(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, refused("%v; a resource read gives a regular file of the workspace (workspace--list lists a directory)", err)
	}
	defer f.Close()
	cap := result.CapFor(0, s.cfg.Env.Limits)
	// enough bytes for cap characters, and one more to know there is more
	head := make([]byte, max(sniffSize, 4*cap+4))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	head = head[:n]
	if result.LooksBinary(string(head[:min(n, sniffSize)])) {
		res, err := s.readBlob(uri, rel, f, st.Size(), head)
		if err == nil && ctx.Err() != nil {
			return nil, cancelled(ctx, uri) // the SDK writes the answer all the same: a small one
		}
		return res, err
	}
	text := result.WellFormed(string(head))
	whole := int64(n) == st.Size()
	if whole && utf8.RuneCountInString(text) <= cap {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: textMIME(rel), Text: text}}}, nil
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: textMIME(rel), Text: headOf(rel, text, cap, st.Size())}}}, nil
}

// readBlob reads the rest of a file that is not text, whose first bytes
// are head.
func (s *Server) readBlob(uri, rel string, f io.Reader, size int64, head []byte) (*sdk.ReadResourceResult, error) {
	if size > MaxBlob {
		return nil, refused("%s is not text and is %d bytes, over the %d bytes a resource read gives; a tool reads it in parts", rel, size, MaxBlob)
	}
	rest, err := io.ReadAll(io.LimitReader(f, MaxBlob+1-int64(len(head))))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	data := append(head, rest...)
	if len(data) > MaxBlob {
		return nil, refused("%s is not text and grew over the %d bytes a resource read gives while it was read", rel, MaxBlob)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mimeOf(rel, "application/octet-stream"), Blob: data}}}, nil
}

// headOf is the head of a text over cap characters with its notice: cut
// as a spill's head is (result.Head: at the last line end before the cap
// when that keeps 80% of it, else at the cap), and the workspace--read
// call that reads on (by line, or by character within a long line).
func headOf(rel, text string, cap int, size int64) string {
	i, byLine := result.Head(text, cap, 0)
	cut := text[:i]
	if byLine {
		lines := strings.Count(cut, "\n")
		return fmt.Sprintf("%s[myelin: %s is %d bytes, more than a resource read gives (%d characters): shown are its first %d lines (%d characters). Read on with workspace--read %s, or search it with workspace--grep]",
			cut, rel, size, cap, lines, utf8.RuneCountInString(cut), callJSON(map[string]any{"path": rel, "offset": lines + 1}))
	}
	chars := utf8.RuneCountInString(cut)
	return fmt.Sprintf("%s\n[myelin: %s is %d bytes, more than a resource read gives (%d characters): shown are its first %d characters, within a long line. Read on with workspace--read %s, or search it with workspace--grep]",
		cut, rel, size, cap, chars, callJSON(map[string]any{"path": rel, "offsetChars": chars}))
}

// callJSON is a tool input as compact JSON.
func callJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// textMIME is the MIME type of a text file: by its extension, text/plain
// when that names none or a type that is not text.
func textMIME(rel string) string {
	t := mimeOf(rel, "")
	if t == "" || !strings.HasPrefix(t, "text/") && !strings.Contains(t, "json") && !strings.Contains(t, "xml") && !strings.Contains(t, "javascript") {
		return "text/plain; charset=utf-8"
	}
	return t
}

// workspacePath is the workspace-relative path of uri, a file:// URI
// under the workspace root dir, checked as the workspace checks a path
// (workspace.Rel: no `..`, no NUL).
func workspacePath(dir, uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", refused("%q is not a file:// URI", uri)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", refused("%s names the host %q: only this machine's files are read", uri, u.Host)
	}
	rest, ok := strings.CutPrefix(u.Path, strings.TrimSuffix(dir, "/")+"/")
	if !ok {
		return "", refused("%s is not under the workspace %s", uri, dir)
	}
	rel, err := workspace.Rel(rest)
	if err != nil {
		return "", refused("%s: %v", uri, err)
	}
	if rel == "." {
		return "", refused("%s is the workspace's root, a directory; workspace--list lists it", uri)
	}
	return rel, nil
}
