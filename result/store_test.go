package result

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
)

// memStore is a Store in memory that, like the workspace, never overwrites.
type memStore struct {
	mu    sync.Mutex
	files map[string]string
}

func (m *memStore) Save(name, data string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]string{}
	}
	ext := path.Ext(name)
	for n := 1; ; n++ {
		p := ".myelin/tool-results/" + name
		if n > 1 {
			p = fmt.Sprintf(".myelin/tool-results/%s-%d%s", strings.TrimSuffix(name, ext), n, ext)
		}
		if _, ok := m.files[p]; !ok {
			m.files[p] = data
			return p, nil
		}
	}
}

// failStore is a Store whose every write fails.
type failStore struct{}

func (failStore) Save(name, data string) (string, error) {
	return "", errors.New("disk full")
}
