package price

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/history"
)

// builtinJSON is the table kept in the repository: prices.json, with its
// date and source. docs/cost.md says how to check and override it.
//
//go:embed prices.json
var builtinJSON []byte

// Table is a price table: prices by model, and where they come from.
// Builtin is the repository's; Load puts a user's file over it.
type Table struct {
	// Date is when the prices were taken from Source ("2025-11").
	Date string
	// Source are the pages the prices were taken from, by URL.
	Source []string
	// Note says what the table prices and what it does not.
	Note string
	// Overrides are the user files put over the table, in order, each as
	// "path (date)" when it says its date.
	Overrides []string
	models    map[string]Model
}

var builtin = sync.OnceValues(func() (*Table, error) { return Parse("prices.json", builtinJSON) })

// Builtin is the table kept in the repository (prices.json). It panics
// if that file does not parse, which its tests prevent.
func Builtin() *Table {
	t, err := builtin()
	if err != nil {
		panic(fmt.Sprintf("price: the built-in table: %v", err))
	}
	return t
}

// UserFile is where the user's prices are read from when no file is
// given: os.UserConfigDir()/myelin/prices.json ($XDG_CONFIG_HOME/myelin/
// prices.json, by default ~/.config/myelin/prices.json on Linux).
func UserFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's configuration directory for the prices file: %w", err)
	}
	return filepath.Join(dir, "myelin", "prices.json"), nil
}

// Load is the built-in table with the user's prices file over it: the
// file at path, which must exist (--prices FILE), or, when path is "",
// UserFile's when there is one. A file that cannot be read or parsed is
// an error naming it and, where it can, the line and field.
func Load(path string) (*Table, error) {
	t := Builtin()
	given := path != ""
	if !given {
		p, err := UserFile()
		if err != nil {
			return t, nil // no configuration directory: no user file to read
		}
		path = p
	}
	data, err := os.ReadFile(path)
	if !given && errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the prices file: %w", err)
	}
	over, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return t.With(path, over), nil
}

// With is t with over's models put over its own: a model in over replaces
// t's whole entry (no field is merged), a new model is added. name names
// over in Overrides.
func (t *Table) With(name string, over *Table) *Table {
	n := &Table{Date: t.Date, Source: t.Source, Note: t.Note, models: make(map[string]Model, len(t.models)+len(over.models))}
	n.Overrides = append(append([]string(nil), t.Overrides...), name)
	if over.Date != "" {
		n.Overrides[len(n.Overrides)-1] += " (" + over.Date + ")"
	}
	for k, m := range t.models {
		n.models[k] = m
	}
	for k, m := range over.models {
		n.models[k] = m
	}
	return n
}

// Models are the names the table prices, sorted.
func (t *Table) Models() []string {
	names := make([]string, 0, len(t.models))
	for k := range t.models {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Lookup is the price of model: the entry named exactly so, else the
// entry of its normalised name (Normalize), dated when it is a snapshot
// ("gpt-4o-2024-05-13", "claude-sonnet-4-20250514"), else of that name
// without its date suffix; false when none. So a snapshot priced unlike
// its family's undated entry (gpt-4o-2024-05-13) has a dated entry of its
// own, which wins; the others share the undated one.
func (t *Table) Lookup(model string) (Model, bool) {
	if m, ok := t.models[model]; ok {
		return m, true
	}
	n := Normalize(model)
	if m, ok := t.models[n]; ok {
		return m, true
	}
	m, ok := t.models[undated(n)]
	return m, ok
}

// Cost is what usage u, one request's to model, costs: unknown, never
// $0, when the table has no price for the model.
func (t *Table) Cost(model string, u history.Usage) Cost {
	m, ok := t.Lookup(model)
	if !ok {
		name := model
		if name == "" {
			name = "(not recorded)"
		}
		return Cost{Why: fmt.Sprintf("model %s not in the price table", name)}
	}
	c := m.Cost(u)
	if !c.Known {
		c.Why = fmt.Sprintf("model %s: %s", model, c.Why)
	}
	return c
}

var (
	// bedrockVersion is the version suffix of a Bedrock model id:
	// "-v2:0", "-v1:0:200k".
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	bedrockVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-v\d+(:[0-9a-z]+)*$`) })
	// dateSuffix is a model snapshot's date: "-20250514" (Anthropic),
	// "-2024-08-06" (OpenAI), or "-latest".
	dateSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$`) })
)

// Normalize is the name a model id is priced under: lower case; the last
// part of a path or ARN ("publishers/anthropic/models/X",
// "arn:aws:bedrock:…:inference-profile/X", "models/X"); a Bedrock id's
// region and vendor prefix and version suffix taken off
// ("us.anthropic.claude-sonnet-4-20250514-v1:0" → "claude-sonnet-4-20250514");
// a Vertex id's "@date" made a date suffix ("claude-sonnet-4@20250514" →
// "claude-sonnet-4-20250514"). Lookup then also tries it without its
// date suffix.
func Normalize(model string) string {
	s := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.Index(s, "anthropic."); i >= 0 {
		s = s[i+len("anthropic."):]
		s = bedrockVersion().ReplaceAllString(s, "")
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		// a snapshot's date, priced as Anthropic's own id with it is;
		// anything else after the @ (a version name) is dropped
		if d := s[i+1:]; dateSuffix().MatchString("-" + d) {
			s = s[:i] + "-" + d
		} else {
			s = s[:i]
		}
	}
	return s
}

// undated is a normalised name without its date suffix.
func undated(name string) string { return dateSuffix().ReplaceAllString(name, "") }

// file is a prices file as written (prices.json is one):
//
//	{"date": "2025-11", "source": ["https://…"], "note": "…",
//	 "models": {"NAME": {"input": 3, "output": 15, "cache_read": 0.3,
//	                     "cache_write": 3.75, "cache_write_1h": 6}}}
type file struct {
	Date   string                     `json:"date"`
	Source []string                   `json:"source"`
	Note   string                     `json:"note"`
	Models map[string]json.RawMessage `json:"models"`
}

// entry is a model's prices as written, each present or not.
type entry struct {
	Input        *float64 `json:"input"`
	Output       *float64 `json:"output"`
	CacheRead    *float64 `json:"cache_read"`
	CacheWrite   *float64 `json:"cache_write"`
	CacheWrite1h *float64 `json:"cache_write_1h"`
	LongAbove    int      `json:"long_above"`
	Long         *entry   `json:"long"`
	Note         string   `json:"note"`
}

// Parse reads a prices file named name (for its errors). A file that is
// not such JSON, has a field it does not know, leaves out a price or
// gives a negative one is an error naming the file, the line and the
// model and field, and saying what to write.
func Parse(name string, data []byte) (*Table, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s%s: %w (want {\"date\": …, \"source\": […], \"models\": {NAME: {\"input\": …, \"output\": …, \"cache_read\": …, \"cache_write\": …}}}; see docs/cost.md)", name, at(data, 0, err), err)
	}
	if f.Models == nil {
		return nil, fmt.Errorf("%s: no \"models\": give {\"models\": {NAME: {\"input\": …, \"output\": …, \"cache_read\": …, \"cache_write\": …}}} in dollars per million tokens", name)
	}
	t := &Table{Date: f.Date, Source: f.Source, Note: f.Note, models: make(map[string]Model, len(f.Models))}
	for model, raw := range f.Models {
		// where the model's value starts is looked for only for an
		// error's line: a table without one (the builtin one, read by
		// every run) pays nothing for it
		var e entry
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s%s: model %q: %w (its fields: input, output, cache_read, cache_write, cache_write_1h, long_above, long, note)", name, at(data, keyOffset(data, model), err), model, err)
		}
		m, field, err := e.model(true)
		if err != nil {
			return nil, fmt.Errorf("%s%s: model %q: %w", name, lineAt(data, fieldOffset(data, keyOffset(data, model), field)), model, err)
		}
		t.models[model] = m
	}
	return t, nil
}

// model is e checked: the field at fault and why when a price is missing
// or negative, or the tier is half given. top is false for a Long tier.
func (e entry) model(top bool) (Model, string, error) {
	var m Model
	for _, p := range []struct {
		name string
		v    *float64
		to   *float64
		need bool
	}{{"input", e.Input, &m.Input, true}, {"output", e.Output, &m.Output, true},
		{"cache_read", e.CacheRead, &m.CacheRead, true}, {"cache_write", e.CacheWrite, &m.CacheWrite, true},
		{"cache_write_1h", e.CacheWrite1h, &m.CacheWrite1h, false}} {
		switch {
		case p.v == nil && p.need:
			return m, "", fmt.Errorf("%q is missing: give its price in US dollars per million tokens (the input price where the provider charges no more for it)", p.name)
		case p.v == nil:
		case *p.v < 0:
			return m, p.name, fmt.Errorf("%q is %v: a price is 0 or more, in US dollars per million tokens", p.name, *p.v)
		default:
			*p.to = *p.v
		}
	}
	m.Note = e.Note
	if !top && (e.Long != nil || e.LongAbove != 0) {
		return m, "long", errors.New("\"long\" has a tier of its own: give one tier, long_above and long, on the model")
	}
	switch {
	case e.LongAbove < 0:
		return m, "long_above", fmt.Errorf("\"long_above\" is %d: give the prompt length in tokens above which \"long\" prices a request", e.LongAbove)
	case (e.Long == nil) != (e.LongAbove == 0):
		return m, "long_above", errors.New("\"long_above\" and \"long\" go together: give both (the prompt length in tokens, and the prices above it) or neither")
	case e.Long != nil:
		long, field, err := e.Long.model(false)
		if err != nil {
			return m, field, fmt.Errorf("\"long\": %w", err)
		}
		m.LongAbove, m.Long = e.LongAbove, &long
	}
	return m, "", nil
}

// at is " line N" for err when it says where in data (offset base) it
// happened: a syntax or type error by offset, an unknown field by where
// the field is named; "" else.
func at(data []byte, base int, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return lineAt(data, base+int(syn.Offset))
	case errors.As(err, &typ):
		return lineAt(data, base+int(typ.Offset))
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return lineAt(data, fieldOffset(data, base, strings.Trim(f, `"`)))
	}
	return ""
}

// keyOffset is where the value of the key "name" starts in data (the
// offsets of errors decoding it count from there), -1 if not found.
func keyOffset(data []byte, name string) int {
	q, _ := json.Marshal(name)
	re := regexp.MustCompile(regexp.QuoteMeta(string(q)) + `\s*:\s*`)
	if loc := re.FindIndex(data); loc != nil {
		return loc[1]
	}
	return -1
}

// fieldOffset is where field is first named in data after base, or base
// when it is not ("" names the model itself).
func fieldOffset(data []byte, base int, field string) int {
	if base < 0 || field == "" {
		return base
	}
	if i := bytes.Index(data[base:], []byte(`"`+field+`"`)); i >= 0 {
		return base + i
	}
	return base
}

// lineAt is " line N" for offset off of data, "" for a negative one.
func lineAt(data []byte, off int) string {
	if off < 0 {
		return ""
	}
	off = min(off, len(data))
	return fmt.Sprintf(" line %d", bytes.Count(data[:off], []byte("\n"))+1)
}
