package app

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"

	"github.com/sluicehq/sluice/core/proposal"
)

// Invisible characters are how a text says one thing on screen and another
// to git: a right-to-left override (U+202E) turns "txt.exe" around, a
// zero-width space makes two branch names look the same. Everything an
// agent wrote that a card, a notification or History shows passes through
// visible first, which writes each such character as ⟨U+XXXX⟩, and the card
// lists every field that held one, so the person sees both that something
// was hidden and what.

// isInvisible reports whether r changes how text reads without showing
// itself: Unicode format characters (bidi controls and isolates, zero-width
// space, joiners, word joiner, BOM, …) and control characters other than
// newline and tab.
func isInvisible(r rune) bool {
	switch r {
	case '\n', '\t':
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || r == '\u180e'
}

// visible returns s with every invisible character written as ⟨U+XXXX⟩,
// and whether there was one.
func visible(s string) (string, bool) {
	if strings.IndexFunc(s, isInvisible) < 0 {
		return s, false
	}
	var b strings.Builder
	for _, r := range s {
		if isInvisible(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// InvisibleText is one field of a card that held invisible characters.
type InvisibleText struct {
	// Field names it: "reason", "repo", "files[2]", "args.message",
	// "pinned.refs[refs/heads/…]".
	Field string `json:"field"`
	// Shown is its text with each invisible character written as ⟨U+XXXX⟩.
	Shown string `json:"shown"`
}

// invisibleIn lists every string in v (a JSON-shaped value) that holds
// invisible characters, sorted by field.
func invisibleIn(prefix string, v any, out *[]InvisibleText) {
	switch x := v.(type) {
	case string:
		if shown, ok := visible(x); ok {
			*out = append(*out, InvisibleText{Field: prefix, Shown: shown})
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name, hidden := visible(k)
			if hidden {
				*out = append(*out, InvisibleText{Field: prefix + " (a key)", Shown: name})
			}
			invisibleIn(prefix+"."+name, x[k], out)
		}
	case []any:
		for i, e := range x {
			invisibleIn(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	}
}

// flagInvisible escapes the card's own text fields and lists every field,
// including those inside the operation's arguments (a commit message, a
// branch, paths) and the pinned refs, that held invisible characters.
func flagInvisible(c *Card) {
	var out []InvisibleText
	esc := func(field string, s *string) {
		if shown, ok := visible(*s); ok {
			out = append(out, InvisibleText{Field: field, Shown: shown})
			*s = shown
		}
	}
	esc("reason", &c.Reason)
	esc("repo", &c.Repo)
	esc("repoName", &c.RepoName)
	for i := range c.Files {
		esc(fmt.Sprintf("files[%d]", i), &c.Files[i])
	}
	for _, part := range []struct {
		name string
		v    any
	}{{"args", c.Args}, {"pinned", c.Pinned}, {"sealed", c.Sealed}} {
		b, err := json.Marshal(part.v)
		if err != nil {
			continue
		}
		var generic any
		if json.Unmarshal(b, &generic) == nil {
			invisibleIn(part.name, generic, &out)
		}
	}
	if len(out) > 0 {
		c.Sealed = escapedCopy(c.Sealed)
		if c.Args != nil && reflect.TypeOf(c.Args).Kind() == reflect.Pointer {
			// A copy of the same concrete type, its strings escaped.
			if b, err := json.Marshal(c.Args); err == nil {
				cp := reflect.New(reflect.TypeOf(c.Args).Elem())
				if json.Unmarshal(b, cp.Interface()) == nil {
					escapeStrings(cp.Elem())
					if a, ok := cp.Interface().(proposal.Args); ok {
						c.Args = a
					}
				}
			}
		}
	}
	c.Invisible = out
	if c.Invisible == nil {
		c.Invisible = []InvisibleText{}
	}
}

// invisibleOf lists the fields of p that hold invisible characters.
func invisibleOf(p proposal.Proposal) []InvisibleText {
	c := Card{Reason: p.Reason, Repo: p.Repo, Args: p.Args, Pinned: p.Pinned}
	c.Files, _ = p.FilesTouched()
	flagInvisible(&c)
	return c.Invisible
}

// escapedCopy returns a deep copy of v (a pointer to a JSON-shaped value)
// whose strings are all shown with their invisible characters escaped. The
// original is never changed: it is the proposal the digest covers.
func escapedCopy[T any](v *T) *T {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return v
	}
	escapeStrings(reflect.ValueOf(out).Elem())
	return out
}

func escapeStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			s, _ := visible(v.String())
			v.SetString(s)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			escapeStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				escapeStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			escapeStrings(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			if e.Kind() == reflect.String {
				s, _ := visible(e.String())
				v.SetMapIndex(k, reflect.ValueOf(s).Convert(e.Type()))
			}
		}
	}
}
