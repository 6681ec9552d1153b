package mcpserver

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/workspace"
)

// openWorkspaceAt is the workspace in dir, closed when tb ends.
func openWorkspaceAt(tb testing.TB, dir string) *workspace.Workspace {
	tb.Helper()
	ws, err := workspace.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.Close() })
	return ws
}

// BenchmarkBlobReadsAtOnce sends 16 resources/read of an 8 MiB file that
// is not text at once, over HTTP, and reports the heap's peak above
// rest while they run (peak-heap-MB, sampled every 10 ms): what many
// reads at once make the server hold. It measures; it asserts nothing.
func BenchmarkBlobReadsAtOnce(b *testing.B) {
	dir := b.TempDir()
	blob := make([]byte, MaxBlob-64)
	copy(blob, "\x00\x89PNG")
	for i := 8; i < len(blob); i++ {
		blob[i] = byte(i*7 + i>>9)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), blob, 0o644); err != nil {
		b.Fatal(err)
	}
	blob = nil
	ws := openWorkspaceAt(b, dir)
	srv := httptest.NewServer(New(Config{Workspace: ws}).Handler())
	defer srv.Close()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: hostVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	const n = 16
	uri := fileURI(ws.Dir(), "big.bin")
	var worst uint64
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		stop, peak := make(chan struct{}), make(chan uint64)
		go func() {
			var top uint64
			for {
				select {
				case <-stop:
					peak <- top
					return
				case <-time.After(10 * time.Millisecond):
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				top = max(top, m.HeapInuse)
			}
		}()
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		close(stop)
		if top := <-peak; top > base {
			worst = max(worst, top-base)
		}
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MB")
}
