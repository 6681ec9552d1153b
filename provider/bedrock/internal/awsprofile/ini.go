package awsprofile

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// The INI dialect of the AWS shared config and credentials files, as the
// AWS SDK for Go v2 (config/internal/ini) reads it. Written here from its
// observed behaviour, not copied; the tests hold it to the SDK through Load
// (a case table, seeded random files, the SDK's own test files, a fuzz target).
//
//   - A line is split on "\n" only; a "\r" left at its end is trimmed with
//     the other spaces wherever values are trimmed (not in continuations).
//   - Blank lines, and lines whose first character after spaces and tabs is
//     '#' or ';', are skipped.
//   - "[type name]" (after cutting the line at its first '#' or ';') starts
//     the section "type name"; "[name]" starts "name". Sections seen twice
//     are one section: keys seen later win.
//   - "key = value" or "key: value" (the first of '=' or ':') at column 0 is
//     a property; the key is lower-cased, the value is cut at the first
//     " #", " ;", "\t#" or "\t;", trimmed, and loses one pair of matching
//     surrounding quotes. A line with neither separator is ignored.
//   - An indented "key = value" under a key whose value is empty is a
//     sub-property of it (services: "sts =\n  endpoint_url = x"), its value
//     not cut at comments; under a key with a value it is a new property.
//   - Any other indented line continues the current key's non-empty value
//     with "\n" and the line (left-trimmed only).
//   - Properties before the first section, or in a section named "", are
//     ignored.
//   - One deliberate difference: a value that is a single quote character
//     is kept as it is; the SDK panics on it.

// iniValue is one key's value: a string, or the sub-properties of a key
// whose own value is empty.
type iniValue struct {
	str string
	sub map[string]string
}

// iniSection is one section of one or more files: its values, the file each
// value came from, and the errors found merging it (partial credentials).
type iniSection struct {
	name   string
	values map[string]iniValue
	files  map[string]string
	errs   []error
}

func newIniSection(name string) *iniSection {
	return &iniSection{name: name, values: map[string]iniValue{}, files: map[string]string{}}
}

func (s *iniSection) has(key string) bool {
	_, ok := s.values[key]
	return ok
}

func (s *iniSection) str(key string) string {
	return s.values[key].str
}

// iniSections is the sections of one or more files by their full name
// ("profile x", "default", "sso-session y").
type iniSections map[string]*iniSection

// names returns the section names sorted, the order in which the SDK
// renames and merges them (which matters for duplicates).
func (ss iniSections) names() []string {
	names := make([]string, 0, len(ss))
	for n := range ss {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// readIniFile parses the file at path. A file that cannot be opened
// (missing, unreadable) reads as no sections, as in the SDK; one opened
// but not read (a directory) is an error.
func readIniFile(path string) (iniSections, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read shared config file %s: %w", path, err)
	}
	return parseIni(string(b), path), true, nil
}

// parseIni reads text (of the file at path, recorded per value) into its
// sections. It never fails: what it does not recognise it skips.
func parseIni(text, path string) iniSections {
	ss := iniSections{}
	var section, key string // current section and key; "" = none
	setProp := func(k, v string) {
		if section == "" {
			return
		}
		key = k
		ss[section].values[k] = iniValue{str: v}
		ss[section].files[k] = path
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if t := strings.TrimLeft(line, " \t"); t[0] == '#' || t[0] == ';' {
			continue
		}
		if name, ok := sectionHeader(line); ok {
			section, key = name, ""
			if ss[section] == nil {
				ss[section] = newIniSection(section)
			}
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if !indented {
			k, v, ok := splitKeyValue(strings.TrimRight(cutInlineComment(line), " \t"))
			if ok {
				setProp(k, v)
			}
			continue
		}
		if k, v, ok := splitKeyValue(strings.TrimLeft(line, " \t")); ok {
			if section == "" {
				continue
			}
			cur := ss[section].values[key]
			if key == "" || cur.str != "" {
				setProp(k, strings.TrimSpace(cutInlineComment(v)))
				continue
			}
			if cur.sub == nil {
				cur = iniValue{sub: map[string]string{}}
				ss[section].values[key] = cur
			}
			cur.sub[k] = v
			continue
		}
		if key == "" {
			continue
		}
		if cur := ss[section].values[key]; cur.str != "" && cur.sub == nil {
			cur.str += "\n" + strings.TrimLeft(line, " \t")
			ss[section].values[key] = cur
		}
	}
	return ss
}

// sectionHeader reports whether line is a "[...]" header and the section
// it names: "type name" with the blanks between them collapsed, or "name".
func sectionHeader(line string) (string, bool) {
	if i := strings.IndexAny(line, "#;"); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimSpace(line)
	if len(line) < 2 || line[0] != '[' || line[len(line)-1] != ']' {
		return "", false
	}
	inner := strings.TrimSpace(line[1 : len(line)-1])
	i := strings.IndexAny(inner, " \t")
	if i < 0 {
		return inner, true
	}
	return inner[:i] + " " + strings.TrimLeft(inner[i:], " \t"), true
}

// cutInlineComment cuts s at its first comment: '#' or ';' after a blank.
func cutInlineComment(s string) string {
	for i := 1; i < len(s); i++ {
		if (s[i] == '#' || s[i] == ';') && (s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i-1]
		}
	}
	return s
}

// splitKeyValue splits "key = value" (or "key: value", whichever separator
// comes first) into the lower-cased key and the trimmed, unquoted value.
func splitKeyValue(s string) (string, string, bool) {
	i := strings.IndexAny(s, "=:")
	if i < 0 {
		return "", "", false
	}
	k := strings.ToLower(strings.TrimSpace(s[:i]))
	v := strings.TrimSpace(s[i+1:])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return k, v, true
}
