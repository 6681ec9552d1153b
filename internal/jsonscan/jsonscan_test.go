package jsonscan

import (
	"encoding/json"
	"testing"
)

// Skip passes exactly what encoding/json takes for one value: a value
// it refuses is never passed over, one it takes always is.
func FuzzSkipIsJSONValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]}`, `{"a":}`, `[01]`, `"\ud800"`, `-`, `1.`, `{"a" 1}`, "\"\x01\"", `nul`, ` [ ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Scanner{B: data}
		if got, want := s.Skip() && s.AtEnd(), json.Valid(data); got != want {
			t.Fatalf("%q: Skip %v, json.Valid %v", data, got, want)
		}
	})
}

// PlainString takes a string only when encoding/json decodes it to its
// bytes as they are.
func FuzzPlainStringIsWhatEncodingJSONDecodes(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, "\"\xff\"", `"é"`, "\"\t\"", `"x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Scanner{B: data}
		raw, ok := s.PlainString()
		if !ok || !s.AtEnd() {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil || want != string(raw) {
			t.Fatalf("%q: PlainString %q, encoding/json %q (%v)", data, raw, want, err)
		}
	})
}

func TestMembersRefusesAKeyEncodingJSONWouldMatchWithoutCaseOrTwice(t *testing.T) {
	keys := []string{"input_tokens", "status"}
	for _, c := range []struct {
		json string
		ok   bool
	}{
		{`{"input_tokens":1,"status":"x","other":[1,{"Status":2}],"stat":null}`, true},
		{`{"input_tokens":1,"input_tokens":2}`, false},
		{`{"INPUT_TOKENS":1}`, false},
		{"{\"input_to\u212aens\":1}", false}, // the Kelvin sign folds to k
		{"{\"\u017ftatus\":1}", false},       // the long s folds to s
		{`{"Status":1}`, false},
		{"{\"st\u00e4tus\":1}", true},
		{`{"status":null,"input_tokens":null}`, true},
	} {
		s := Scanner{B: []byte(c.json)}
		read := 0
		ok := s.Members(keys, -1, func(int) bool { read++; return s.Skip() }) && s.AtEnd()
		if ok != c.ok {
			t.Errorf("%s: %v, want %v", c.json, ok, c.ok)
		}
		if c.ok && c.json[2] == 'i' && read != 2 {
			t.Errorf("%s: %d members read, want 2", c.json, read)
		}
	}
}

func TestPlainStringTakesAStringThatNeedsNoDecodingAndNoOther(t *testing.T) {
	for _, c := range []struct {
		json string
		raw  string // what it takes; "-" for nothing
	}{
		{`"abc",`, "abc"},
		{`""`, ""},
		{`"é 😀 ~ !#$%&'()*+-./09:;<=>?@AZ[]^_` + "`" + `az{|}"`, `é 😀 ~ !#$%&'()*+-./09:;<=>?@AZ[]^_` + "`" + `az{|}`},
		{`"a\"b"`, "-"},
		{`"a\nb"`, "-"},
		{"\"\xff\"", "-"},
		{"\"\xe9\"", "-"},
		{"\"\t\"", "-"},
		{"\"\x7f\"", "\x7f"},
		{`"x`, "-"},
		{`x"`, "-"},
		{``, "-"},
	} {
		s := Scanner{B: []byte(c.json)}
		raw, ok := s.PlainString()
		got := string(raw)
		if !ok {
			got = "-"
		}
		if got != c.raw {
			t.Errorf("%q: took %q, want %q", c.json, got, c.raw)
		}
		if ok && s.I != len(c.raw)+2 {
			t.Errorf("%q: the scan is at %d after the string, want %d", c.json, s.I, len(c.raw)+2)
		}
	}
}
