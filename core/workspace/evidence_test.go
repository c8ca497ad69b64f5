package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

func TestParseReport_Fixtures(t *testing.T) {
	type want struct {
		total, passed, failed, skipped, errors int
		ok                                     bool
		// failing names a case that must be reported failed (or errored)
		// with a message containing msg.
		failing, msg string
	}
	cases := []struct {
		file, format string
		want         want
	}{
		{"junit_fail.xml", "", want{4, 1, 1, 1, 1, false, "adds large numbers", "expected 4000000000"}},
		{"junit_pass.xml", FormatJUnit, want{2, 2, 0, 0, 0, true, "", ""}},
		{"tap_fail.tap", "", want{5, 2, 1, 2, 0, false, "parses nested lists", "expected 3 items"}},
		{"tap_pass.tap", FormatTAP, want{3, 3, 0, 0, 0, true, "", ""}},
		{"tap_short.tap", FormatTAP, want{3, 2, 0, 0, 1, false, "plan", "planned 4 tests, ran 2"}},
		{"gotest_fail.json", "", want{4, 1, 2, 1, 0, false, "TestDiv/by_zero", "Div(1, 0) = 0, want error"}},
		{"gotest_pass.json", FormatGoTest, want{3, 3, 0, 0, 0, true, "", ""}},
		{"gotest_buildfail.json", FormatGoTest, want{1, 0, 0, 0, 1, false, "(package)", "build failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ParseReport(tc.format, tc.file, data)
			if err != nil {
				t.Fatalf("ParseReport: %v", err)
			}
			got := want{rep.Total, rep.Passed, rep.Failed, rep.Skipped, rep.Errors, rep.OK(), tc.want.failing, tc.want.msg}
			if got != tc.want {
				t.Errorf("counts = %+v, want %+v", got, tc.want)
			}
			if len(rep.Cases) != rep.Total {
				t.Errorf("%d cases listed, total %d", len(rep.Cases), rep.Total)
			}
			if tc.want.failing == "" {
				return
			}
			for _, c := range rep.Cases {
				if c.Name == tc.want.failing {
					if c.Status != StatusFail && c.Status != StatusError {
						t.Errorf("%s has status %s", c.Name, c.Status)
					}
					if !strings.Contains(c.Message, tc.want.msg) {
						t.Errorf("%s message = %q, want it to contain %q", c.Name, c.Message, tc.want.msg)
					}
					return
				}
			}
			t.Errorf("no case named %q in %+v", tc.want.failing, rep.Cases)
		})
	}
}

func TestParseReport_FailingThenPassing(t *testing.T) {
	// The same suite failing, then fixed: the evidence must flip.
	for _, pair := range [][2]string{
		{"junit_fail.xml", "junit_pass.xml"},
		{"tap_fail.tap", "tap_pass.tap"},
		{"gotest_fail.json", "gotest_pass.json"},
	} {
		var oks []bool
		for _, f := range pair {
			data, err := os.ReadFile(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ParseReport("", f, data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			oks = append(oks, rep.OK())
		}
		if oks[0] || !oks[1] {
			t.Errorf("%v: OK = %v, want [false true]", pair, oks)
		}
	}
}

func TestParseReport_Malformed(t *testing.T) {
	cases := []struct{ format, data string }{
		{FormatJUnit, "<testsuites><testsuite>"},
		{FormatJUnit, "<html></html>"},
		{FormatJUnit, ""},
		{FormatTAP, "hello world\n"},
		{FormatGoTest, "not json at all\n"},
		{"cucumber", "{}"},
	}
	for _, tc := range cases {
		if rep, err := ParseReport(tc.format, "", []byte(tc.data)); err == nil {
			t.Errorf("%s %q: parsed as %+v, want an error", tc.format, tc.data, rep)
		} else if !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("%s %q: error code %s, want invalid_argument", tc.format, tc.data, errcode.Of(err))
		}
	}
}

func TestParseJUnit_NoExternalEntities(t *testing.T) {
	doc := `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuite name="s"><testcase name="&e;"/></testsuite>`
	// The decoder refuses the undeclared entity: nothing is read from
	// the file, and the error does not carry its content either.
	rep, err := ParseJUnit(strings.NewReader(doc))
	if err == nil {
		t.Fatalf("a document with an external entity parsed: %+v", rep)
	}
	if strings.Contains(err.Error(), "root:") {
		t.Fatalf("the error carries the entity's target: %v", err)
	}
}
