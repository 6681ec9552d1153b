package gemini

import "testing"

// Gemini's finish reasons that stop an answer for what it holds are
// refusals; those about length, recitation or a malformed call are not.
func TestRefusedFinishIsTheSafetyReasonsOnly(t *testing.T) {
	for stop, want := range map[string]bool{
		"safety": true, "prohibited_content": true, "blocklist": true, "spii": true,
		"image_safety": true, "image_prohibited_content": true, "model_armor": true,
		"stop": false, "max_tokens": false, "recitation": false, "malformed_function_call": false, "other": false, "": false,
	} {
		if got := refusedFinish(stop); got != want {
			t.Errorf("refusedFinish(%q) = %v, want %v", stop, got, want)
		}
	}
}
