package result

import "testing"

func TestHeadCutsAtALineEndKeepingEightyPercentElseAtTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		text        string
		budget, min int
		cut         int
		byLine      bool
	}{
		{"a line end keeping 80%", "aaaaaaaa\nbbbb", 10, 0, 9, true},
		{"a line end keeping less than 80%", "aaa\nbbbbbbbbbb", 10, 0, 10, false},
		{"a line end under minHead", "aaaaaaaa\nbbbb", 10, 9 + 1, 10, false},
		{"never between a CR and its LF", "aaaaaaaaa\r\nbb", 10, 0, 9, false},
		{"the whole text within the budget", "aé\n", 10, 0, 4, false},
		{"characters, not bytes", "ééééééééééé", 10, 0, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut, byLine := Head(tc.text, tc.budget, tc.min)
			if cut != tc.cut || byLine != tc.byLine {
				t.Errorf("Head(%q, %d, %d) = %d, %v; want %d, %v", tc.text, tc.budget, tc.min, cut, byLine, tc.cut, tc.byLine)
			}
		})
	}
}
