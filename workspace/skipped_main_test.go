package workspace

import (
	"os"
	"testing"

	"github.com/myelin-run/myelin/internal/skipped"
)

// TestMain says, in one line on the terminal, which of the package's
// tests were skipped for want of something outside Go (internal/skipped).
func TestMain(m *testing.M) { os.Exit(skipped.Main(m)) }
