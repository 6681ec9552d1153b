package workspace

import "sync"

// pathLocks serialize the changes of one file: workspace--edit reads a
// file, replaces text in it and writes it back, and two edits of one file
// at once (a host's and an agent's under mcp serve, two subagents') would
// each read the same original, the second rename undoing the first while
// both report success. A change holds its file's lock from the read (or
// the existence check) to the rename. The zero value is ready to use.
type pathLocks struct {
	mu   sync.Mutex
	held map[string]*pathLock
}

// pathLock is one file's lock and how many changes hold or wait for it.
type pathLock struct {
	sync.Mutex
	users int
}

// lock takes the lock of path (a resolved, workspace-relative path) and
// returns its release.
func (p *pathLocks) lock(path string) (unlock func()) {
	p.mu.Lock()
	if p.held == nil {
		p.held = map[string]*pathLock{}
	}
	l := p.held[path]
	if l == nil {
		l = &pathLock{}
		p.held[path] = l
	}
	l.users++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.users--; l.users == 0 {
			delete(p.held, path)
		}
		p.mu.Unlock()
	}
}
