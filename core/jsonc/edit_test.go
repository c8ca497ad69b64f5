package jsonc

import (
	"encoding/json"
	"testing"
)

func TestDoc_Append_Table(t *testing.T) {
	rule := Ordered{{"name", "r"}, {"ops", []string{"commit"}}}
	cases := []struct{ name, in, want string }{
		{"missing", "{\n  \"version\": 1\n}\n",
			"{\n  \"version\": 1,\n  \"rules\": [\n    {\n      \"name\": \"r\",\n      \"ops\": [\n        \"commit\"\n      ]\n    }\n  ]\n}\n"},
		{"empty", "{\n  \"rules\": []\n}",
			"{\n  \"rules\": [\n    {\n      \"name\": \"r\",\n      \"ops\": [\n        \"commit\"\n      ]\n    }\n  ]\n}"},
		{"comment only", "{\n  \"rules\": [\n    // learned rules\n  ]\n}",
			"{\n  \"rules\": [\n    // learned rules\n    {\n      \"name\": \"r\",\n      \"ops\": [\n        \"commit\"\n      ]\n    }\n  ]\n}"},
		{"after a commented element", "{\n  \"rules\": [\n    {\"name\": \"a\"} // mine\n  ]\n}",
			"{\n  \"rules\": [\n    {\"name\": \"a\"}, // mine\n    {\n      \"name\": \"r\",\n      \"ops\": [\n        \"commit\"\n      ]\n    }\n  ]\n}"},
		{"one line", "{\"rules\": [{\"name\": \"a\"}]}", "{\"rules\": [{\"name\": \"a\"}, {\"name\":\"r\",\"ops\":[\"commit\"]}]}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoc([]byte(c.in), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Append([]string{"rules"}, rule); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Bytes()); got != c.want {
				t.Fatalf("\n got: %q\nwant: %q", got, c.want)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
		})
	}
	d, _ := NewDoc([]byte(`{"rules": {}}`), false)
	if err := d.Append([]string{"rules"}, rule); err == nil {
		t.Fatal("Append to an object: want an error")
	}
}

func TestDoc_DeleteElement_Table(t *testing.T) {
	cases := []struct {
		name string
		i    int
		in   string
		want string
	}{
		{"first of two", 0, "{\n  \"r\": [\n    // a is mine\n    {\"n\": \"a\"},\n    {\"n\": \"b\"}\n  ]\n}",
			"{\n  \"r\": [\n    // a is mine\n    {\"n\": \"b\"}\n  ]\n}"},
		{"last of two, comment on its line", 1, "{\n  \"r\": [\n    {\"n\": \"a\"}, // keep\n    {\"n\": \"b\"} // goes\n  ]\n}",
			"{\n  \"r\": [\n    {\"n\": \"a\"} // keep\n  ]\n}"},
		{"only, comment before stays", 0, "{\n  \"r\": [\n    // learned\n    {\"n\": \"a\"}\n  ]\n}",
			"{\n  \"r\": [\n    // learned\n  ]\n}"},
		{"only", 0, "{\n  \"r\": [\n    {\"n\": \"a\"}\n  ],\n  \"v\": 1\n}", "{\n  \"r\": [],\n  \"v\": 1\n}"},
		{"one line middle", 1, "{\"r\": [1, 2, 3]}", "{\"r\": [1, 3]}"},
		{"trailing comma kept", 1, "{\n  \"r\": [\n    1,\n    2,\n  ]\n}", "{\n  \"r\": [\n    1,\n  ]\n}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoc([]byte(c.in), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.DeleteElement([]string{"r"}, c.i); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Bytes()); got != c.want {
				t.Fatalf("\n got: %q\nwant: %q", got, c.want)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
		})
	}
	d, _ := NewDoc([]byte(`{"r": [1]}`), false)
	if err := d.DeleteElement([]string{"r"}, 1); err == nil || string(d.Bytes()) != `{"r": [1]}` {
		t.Fatalf("out of range: err=%v, doc %s", err, d.Bytes())
	}
}

func TestPlain_KeepsValuesDropsComments(t *testing.T) {
	in := "// policy\n{\n  \"version\": 1, /* v */\n  \"n\": 12345678901234567890,\n  \"s\": \"a//b\",\n  \"l\": [1, 2,],\n}\n"
	out, err := Plain([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"n":12345678901234567890,"s":"a//b","l":[1,2]}`
	if string(out) != want || !json.Valid(out) {
		t.Fatalf("Plain = %s, want %s", out, want)
	}
	if _, err := Plain([]byte("{\n  \"a\": 1\n  \"b\": 2\n}")); err == nil {
		t.Fatal("a missing comma: want an error")
	} else if _, ok := err.(*SyntaxError); !ok {
		t.Fatalf("error %T, want *SyntaxError with a line", err)
	}
}
