package workspace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/errcode"
)

// Test evidence: what a run's test report says, in one shape whatever the
// format. The parsers are lenient about what they do not understand and
// strict about counts: a report that cannot be read is an error, never an
// empty success.

// Report formats.
const (
	FormatJUnit  = "junit"
	FormatTAP    = "tap"
	FormatGoTest = "gotest"
)

// Test statuses.
const (
	StatusPass  = "pass"
	StatusFail  = "fail"
	StatusSkip  = "skip"
	StatusError = "error"
)

const (
	maxReportCases   = 5000
	maxCaseMessage   = 4 << 10
	maxReportBytes   = 32 << 20
	maxGoOutputLines = 200
)

// TestReport summarises a test run.
type TestReport struct {
	Format  string     `json:"format"`
	Total   int        `json:"total"`
	Passed  int        `json:"passed"`
	Failed  int        `json:"failed"`
	Skipped int        `json:"skipped"`
	Errors  int        `json:"errors"`
	Cases   []TestCase `json:"cases"`
	// Truncated is set when more cases existed than are listed (the
	// counts still include them).
	Truncated bool `json:"truncated,omitempty"`
}

// OK reports whether the report holds tests and none failed or errored.
func (r *TestReport) OK() bool { return r.Total > 0 && r.Failed == 0 && r.Errors == 0 }

// TestCase is one test.
type TestCase struct {
	Suite   string  `json:"suite,omitempty"`
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds,omitempty"`
	Message string  `json:"message,omitempty"`
}

func (r *TestReport) add(c TestCase) {
	r.Total++
	switch c.Status {
	case StatusPass:
		r.Passed++
	case StatusFail:
		r.Failed++
	case StatusSkip:
		r.Skipped++
	case StatusError:
		r.Errors++
	}
	if len(c.Message) > maxCaseMessage {
		c.Message = c.Message[len(c.Message)-maxCaseMessage:]
	}
	if len(r.Cases) >= maxReportCases {
		r.Truncated = true
		return
	}
	r.Cases = append(r.Cases, c)
}

// ParseReport parses data in the given format; "" guesses from the name
// and the content.
func ParseReport(format, name string, data []byte) (*TestReport, error) {
	if format == "" {
		format = guessFormat(name, data)
	}
	switch format {
	case FormatJUnit:
		return ParseJUnit(bytes.NewReader(data))
	case FormatTAP:
		return ParseTAP(bytes.NewReader(data))
	case FormatGoTest:
		return ParseGoTestJSON(bytes.NewReader(data))
	}
	return nil, errcode.New(errcode.InvalidArgument, "report format must be junit, tap or gotest")
}

func guessFormat(name string, data []byte) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".xml":
		return FormatJUnit
	case ".tap":
		return FormatTAP
	case ".json", ".jsonl":
		return FormatGoTest
	}
	t := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(t, []byte("<")):
		return FormatJUnit
	case bytes.HasPrefix(t, []byte("{")):
		return FormatGoTest
	}
	return FormatTAP
}

// JUnit XML (the Ant/Surefire dialect most tools write).

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name   string       `xml:"name,attr"`
	Suites []junitSuite `xml:"testsuite"`
	Cases  []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Time      string     `xml:"time,attr"`
	Failures  []junitMsg `xml:"failure"`
	Errors    []junitMsg `xml:"error"`
	Skipped   *junitMsg  `xml:"skipped"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func (m junitMsg) String() string {
	s := strings.TrimSpace(m.Message)
	if t := strings.TrimSpace(m.Text); t != "" {
		if s != "" {
			s += "\n"
		}
		s += t
	}
	return s
}

// ParseJUnit reads a JUnit XML report (<testsuites> or <testsuite> root).
// Go's XML decoder expands no external entities.
func ParseJUnit(r io.Reader) (*TestReport, error) {
	dec := xml.NewDecoder(io.LimitReader(r, maxReportBytes))
	dec.Strict = true
	var suites []junitSuite
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, errcode.New(errcode.InvalidArgument, "the JUnit report is not valid XML: %v", trimErr(err))
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "testsuites":
			var s junitSuites
			if err := dec.DecodeElement(&s, &se); err != nil {
				return nil, errcode.New(errcode.InvalidArgument, "the JUnit report is not valid XML: %v", trimErr(err))
			}
			suites = s.Suites
		case "testsuite":
			var s junitSuite
			if err := dec.DecodeElement(&s, &se); err != nil {
				return nil, errcode.New(errcode.InvalidArgument, "the JUnit report is not valid XML: %v", trimErr(err))
			}
			suites = []junitSuite{s}
		default:
			return nil, errcode.New(errcode.InvalidArgument, "the JUnit report's root element is <%s>, not <testsuites> or <testsuite>", se.Name.Local)
		}
		break
	}
	rep := &TestReport{Format: FormatJUnit, Cases: []TestCase{}}
	var walk func(s junitSuite, depth int)
	walk = func(s junitSuite, depth int) {
		if depth > 64 {
			return
		}
		for _, c := range s.Cases {
			tc := TestCase{Suite: firstNonEmpty(c.Classname, s.Name), Name: c.Name, Status: StatusPass}
			tc.Seconds, _ = strconv.ParseFloat(strings.TrimSpace(c.Time), 64)
			switch {
			case len(c.Errors) > 0:
				tc.Status, tc.Message = StatusError, c.Errors[0].String()
			case len(c.Failures) > 0:
				tc.Status, tc.Message = StatusFail, c.Failures[0].String()
			case c.Skipped != nil:
				tc.Status, tc.Message = StatusSkip, c.Skipped.String()
			}
			rep.add(tc)
		}
		for _, sub := range s.Suites {
			walk(sub, depth+1)
		}
	}
	for _, s := range suites {
		walk(s, 0)
	}
	return rep, nil
}

// TAP (versions 12 to 14; subtests are summarised by their parent line).

var (
	tapPlanRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^1\.\.(\d+)(?:\s*#\s*(.*))?$`) })
	tapTestRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$`) })
)

// ParseTAP reads a TAP stream.
func ParseTAP(r io.Reader) (*TestReport, error) {
	rep := &TestReport{Format: FormatTAP, Cases: []TestCase{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxReportBytes))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	planned, sawPlan, sawAny := -1, false, false
	inYAML := false
	var yaml strings.Builder
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimRight(raw, "\r")
		if inYAML {
			if strings.TrimSpace(line) == "..." {
				inYAML = false
				addTAPDiagnostics(rep, yaml.String())
				yaml.Reset()
			} else {
				yaml.WriteString(strings.TrimSpace(line) + "\n")
			}
			continue
		}
		if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			if strings.TrimSpace(line) == "---" {
				inYAML = true
			}
			continue // subtest output or diagnostics of the previous test
		}
		switch {
		case strings.HasPrefix(line, "TAP version"):
			sawAny = true
		case strings.HasPrefix(line, "Bail out!"):
			sawAny = true
			rep.add(TestCase{Name: "bail out", Status: StatusError, Message: strings.TrimSpace(strings.TrimPrefix(line, "Bail out!"))})
		case tapPlanRe().MatchString(line):
			m := tapPlanRe().FindStringSubmatch(line)
			planned, _ = strconv.Atoi(m[1])
			sawPlan, sawAny = true, true
		case tapTestRe().MatchString(line):
			sawAny = true
			rep.add(tapTestCase(tapTestRe().FindStringSubmatch(line)))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "the TAP report cannot be read: %v", err)
	}
	if !sawAny {
		return nil, errcode.New(errcode.InvalidArgument, "the output holds no TAP (no plan and no test lines)")
	}
	if sawPlan && planned != rep.Total {
		rep.add(TestCase{Name: "plan", Status: StatusError, Message: fmt.Sprintf("planned %d tests, ran %d", planned, rep.Total)})
	}
	if !sawPlan {
		rep.add(TestCase{Name: "plan", Status: StatusError, Message: "no plan line: the run may have stopped early"})
	}
	return rep, nil
}

// addTAPDiagnostics adds a YAML diagnostics block to the message of the
// test line before it, unless that test passed.
func addTAPDiagnostics(rep *TestReport, yaml string) {
	if yaml == "" || len(rep.Cases) == 0 {
		return
	}
	c := &rep.Cases[len(rep.Cases)-1]
	if c.Status != StatusPass {
		c.Message = strings.TrimSpace(c.Message + "\n" + yaml)
		if len(c.Message) > maxCaseMessage {
			c.Message = c.Message[:maxCaseMessage]
		}
	}
}

// tapTestCase is the test a TAP test line (tapTestRe's match m) reports.
func tapTestCase(m []string) TestCase {
	desc, directive := splitTAPDirective(m[3])
	tc := TestCase{Name: strings.TrimSpace(desc), Status: StatusPass}
	if tc.Name == "" {
		tc.Name = "test " + m[2]
	}
	ok := m[1] == "ok"
	dl := strings.ToLower(directive)
	switch {
	case strings.HasPrefix(dl, "skip"):
		tc.Status, tc.Message = StatusSkip, strings.TrimSpace(directive[4:])
	case strings.HasPrefix(dl, "todo"):
		// A failing TODO test is expected to fail; it does not
		// fail the run.
		if !ok {
			tc.Status, tc.Message = StatusSkip, strings.TrimSpace(directive)
		}
	case !ok:
		tc.Status = StatusFail
	}
	return tc
}

// splitTAPDirective splits "desc # SKIP why" at the first unescaped '#'.
func splitTAPDirective(s string) (desc, directive string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '#' {
			return strings.ReplaceAll(s[:i], `\#`, "#"), strings.TrimSpace(s[i+1:])
		}
	}
	return strings.ReplaceAll(s, `\#`, "#"), ""
}

// go test -json (test2json events).

type goTestEvent struct {
	Action  string  `json:"Action"`
	Package string  `json:"Package"`
	Test    string  `json:"Test"`
	Elapsed float64 `json:"Elapsed"`
	Output  string  `json:"Output"`
}

// ParseGoTestJSON reads the output of go test -json. Lines that are not
// JSON (build errors printed around it) are skipped; a package that fails
// without a failing test (a build failure, a panic in TestMain) becomes
// an error case.
func ParseGoTestJSON(r io.Reader) (*TestReport, error) {
	rep := &TestReport{Format: FormatGoTest, Cases: []TestCase{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxReportBytes))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	type key struct{ pkg, test string }
	output := map[key][]string{}
	failedTests := map[string]int{}
	events := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev goTestEvent
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			continue
		}
		events++
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "output", "build-output":
			if ev.Action == "build-output" {
				k = key{ev.Package, ""}
			}
			lines := append(output[k], ev.Output)
			if len(lines) > maxGoOutputLines {
				lines = lines[len(lines)-maxGoOutputLines:]
			}
			output[k] = lines
		case "pass", "fail", "skip":
			if ev.Test == "" {
				if ev.Action == "fail" && failedTests[ev.Package] == 0 {
					rep.add(TestCase{Suite: ev.Package, Name: "(package)", Status: StatusError, Seconds: ev.Elapsed, Message: strings.Join(output[k], "")})
				}
				delete(output, k)
				continue
			}
			tc := TestCase{Suite: ev.Package, Name: ev.Test, Status: map[string]string{"pass": StatusPass, "fail": StatusFail, "skip": StatusSkip}[ev.Action], Seconds: ev.Elapsed}
			if tc.Status != StatusPass {
				tc.Message = strings.Join(output[k], "")
			}
			if tc.Status == StatusFail {
				failedTests[ev.Package]++
			}
			delete(output, k)
			rep.add(tc)
		case "build-fail":
			rep.add(TestCase{Suite: ev.Package, Name: "(build)", Status: StatusError, Message: strings.Join(output[key{ev.Package, ""}], "")})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "the go test -json output cannot be read: %v", err)
	}
	if events == 0 {
		return nil, errcode.New(errcode.InvalidArgument, "the output holds no go test -json events")
	}
	return rep, nil
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

func trimErr(err error) string {
	if errors.Is(err, io.EOF) {
		return "unexpected end of file"
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
