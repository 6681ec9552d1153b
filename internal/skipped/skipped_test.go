package skipped

import (
	"strings"
	"testing"
)

func TestNeedSkipsAndTheLineCountsByWhatWasWanted(t *testing.T) {
	for i := range 3 {
		t.Run("pg", func(t *testing.T) { Need(t, "MYELIN_TEST_POSTGRES", "start one") })
		if i == 0 {
			t.Run("browser", func(t *testing.T) { Need(t, "chromium", "apt-get install chromium") })
		}
	}
	line := Line()
	for _, want := range []string{
		"github.com/myelin-run/myelin/internal/skipped: tests skipped: ",
		"3 for want of MYELIN_TEST_POSTGRES (start one); 1 for want of chromium (apt-get install chromium)",
		".ci/run installs what they need",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}
