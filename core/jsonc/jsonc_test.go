package jsonc

import (
	"strings"
	"testing"
)

func TestJSONDoc_Set_Table(t *testing.T) {
	entry := Ordered{{"command", "/bin/s"}, {"args", []string{"stdio"}}}
	cases := []struct {
		name     string
		comments bool
		in, want string
	}{
		{"empty", false, "", "{\n  \"mcpServers\": {\n    \"sluice\": {\n      \"command\": \"/bin/s\",\n      \"args\": [\n        \"stdio\"\n      ]\n    }\n  }\n}\n"},
		{"empty object", false, "{}\n", "{\n  \"mcpServers\": {\n    \"sluice\": {\n      \"command\": \"/bin/s\",\n      \"args\": [\n        \"stdio\"\n      ]\n    }\n  }\n}\n"},
		{"other server kept", false,
			"{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"x\": {\"command\": \"x\"}\n    }\n}",
			"{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"x\": {\"command\": \"x\"},\n        \"sluice\": {\n            \"command\": \"/bin/s\",\n            \"args\": [\n                \"stdio\"\n            ]\n        }\n    }\n}"},
		{"replace", false,
			"{\"mcpServers\": {\"sluice\": {\"command\": \"old\"}, \"y\": 1}}",
			"{\"mcpServers\": {\"sluice\": {\n  \"command\": \"/bin/s\",\n  \"args\": [\n    \"stdio\"\n  ]\n}, \"y\": 1}}"},
		{"jsonc comment after last member", true,
			"{\n  // servers\n  \"servers\": {\n    \"x\": {} // keep me\n  }\n}\n",
			"{\n  // servers\n  \"servers\": {\n    \"x\": {}, // keep me\n    \"sluice\": {\n      \"command\": \"/bin/s\",\n      \"args\": [\n        \"stdio\"\n      ]\n    }\n  }\n}\n"},
		{"jsonc trailing comma", true,
			"{\n  \"servers\": {\n    \"x\": {},\n  },\n}\n",
			"{\n  \"servers\": {\n    \"x\": {},\n    \"sluice\": {\n      \"command\": \"/bin/s\",\n      \"args\": [\n        \"stdio\"\n      ]\n    },\n  },\n}\n"},
		{"crlf", false, "{\r\n\t\"a\": 1\r\n}\r\n",
			"{\r\n\t\"a\": 1,\r\n\t\"servers\": {\r\n\t\t\"sluice\": {\r\n\t\t\t\"command\": \"/bin/s\",\r\n\t\t\t\"args\": [\r\n\t\t\t\t\"stdio\"\r\n\t\t\t]\r\n\t\t}\r\n\t}\r\n}\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoc([]byte(c.in), c.comments)
			if err != nil {
				t.Fatal(err)
			}
			key := []string{"mcpServers", "sluice"}
			if strings.Contains(c.in, "servers") && !strings.Contains(c.in, "mcpServers") || c.name == "crlf" {
				key = []string{"servers", "sluice"}
			}
			changed, err := d.Set(key, entry)
			if err != nil {
				t.Fatal(err)
			}
			if !changed || string(d.src) != c.want {
				t.Fatalf("Set: changed=%v\n got: %q\nwant: %q", changed, d.src, c.want)
			}
			root, err := Parse(d.src, c.comments)
			if err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
			if got := ValueAt(root, key); got == nil {
				t.Fatalf("value missing after Set")
			}
			again, err := d.Set(key, entry)
			if err != nil || again {
				t.Fatalf("second Set: changed=%v err=%v", again, err)
			}
		})
	}
}

func TestJSONDoc_AppendStrings_Table(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"missing", "{}", "{\n  \"permissions\": {\n    \"allow\": [\n      \"a\",\n      \"b\"\n    ]\n  }\n}"},
		{"empty array", "{\"permissions\": {\"allow\": []}}", "{\"permissions\": {\"allow\": [\n  \"a\",\n  \"b\"\n]}}"},
		{"some present", "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls)\",\n      \"b\"\n    ],\n    \"deny\": []\n  }\n}",
			"{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls)\",\n      \"b\",\n      \"a\"\n    ],\n    \"deny\": []\n  }\n}"},
		{"one line", "{\"permissions\": {\"allow\": [\"x\"]}}", "{\"permissions\": {\"allow\": [\"x\", \"a\", \"b\"]}}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoc([]byte(c.in), false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.AppendStrings([]string{"permissions", "allow"}, []string{"a", "b"}); err != nil {
				t.Fatal(err)
			}
			if string(d.src) != c.want {
				t.Fatalf("\n got: %q\nwant: %q", d.src, c.want)
			}
			added, err := d.AppendStrings([]string{"permissions", "allow"}, []string{"a", "b"})
			if err != nil || len(added) != 0 {
				t.Fatalf("second append added %v (%v)", added, err)
			}
		})
	}
}

func TestParseJSON_Malformed_Table(t *testing.T) {
	for _, c := range []struct {
		in       string
		comments bool
	}{
		{`{"a": }`, false}, {`{"a": 1,}`, false}, {`{"a": 1} x`, false}, {"// c\n{}", false},
		{`{"a": "b`, true}, {`{"a" 1}`, true}, {`[1, 2`, true}, {`{"a": tru}`, true}, {"/* x", true},
	} {
		if _, err := Parse([]byte(c.in), c.comments); err == nil {
			t.Errorf("Parse(%q, comments=%v): want an error", c.in, c.comments)
		}
	}
	if _, err := NewDoc([]byte(`[1]`), false); err == nil {
		t.Error("a top-level array: want an error")
	}
}

// An array holding only a comment keeps it; the items follow it, one a
// line, with no blank line left before them.
func TestJSONDoc_AppendStrings_CommentOnlyArray(t *testing.T) {
	in := "{\n  \"permissions\": {\n    \"allow\": [\n      // none yet\n    ]\n  }\n}"
	want := "{\n  \"permissions\": {\n    \"allow\": [\n      // none yet\n      \"a\",\n      \"b\"\n    ]\n  }\n}"
	d, err := NewDoc([]byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	added, err := d.AppendStrings([]string{"permissions", "allow"}, []string{"a", "b"})
	if err != nil || len(added) != 2 {
		t.Fatalf("AppendStrings = %v, %v", added, err)
	}
	if got := string(d.src); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
