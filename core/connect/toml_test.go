package connect

import (
	"errors"
	"strings"
	"testing"
)

const block = "[mcp_servers.sluice]\ncommand = \"/bin/s\"\n"

func TestTOML_ReplaceTables_Table(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", block},
		{"append", "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
			"model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n\n" + block},
		{"no final newline", "model = \"o3\"", "model = \"o3\"\n\n" + block},
		{"replace in place, keep neighbours and comments",
			"[a]\nx = 1\n\n[mcp_servers.sluice]\ncommand = \"old\" # old\nargs = [\n  \"a\", # c\n]\n\n# about b\n[b]\ny = \"\"\"\n[not.a.table]\n\"\"\"\n[mcp_servers.sluice.env]\nK = 'v'\n\n[c]\n",
			"[a]\nx = 1\n\n" + block + "\n# about b\n[b]\ny = \"\"\"\n[not.a.table]\n\"\"\"\n[c]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := parseTOML([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := d.ReplaceTables([]string{"mcp_servers", "sluice"}, block)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Fatalf("\n got: %q\nwant: %q", out, c.want)
			}
			d2, err := parseTOML(out)
			if err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
			again, err := d2.ReplaceTables([]string{"mcp_servers", "sluice"}, block)
			if err != nil || string(again) != string(out) {
				t.Fatalf("second run changed the file:\n%q\n%q", out, again)
			}
		})
	}
}

func TestTOML_ReplaceTables_Conflicts(t *testing.T) {
	for _, in := range []string{
		"mcp_servers.sluice.command = \"x\"\n",
		"mcp_servers = { sluice = { command = \"x\" } }\n",
		"[mcp_servers]\nsluice = { command = \"x\" }\n",
		"[mcp_servers]\nsluice.command = \"x\"\n",
		"[[mcp_servers.sluice]]\ncommand = \"x\"\n",
	} {
		d, err := parseTOML([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if _, err := d.ReplaceTables([]string{"mcp_servers", "sluice"}, block); !errors.Is(err, ErrConflict) {
			t.Errorf("%q: want ErrConflict, got %v", in, err)
		}
	}
}

func TestTOML_Parse_Valid_And_Malformed(t *testing.T) {
	valid := strings.Join([]string{
		`# comment`, `title = "TOML \"x\""`, `"quoted key" = 'lit'`, `a.b.c = 1_000`, `f = -3.5e+2`,
		`h = 0xDEAD_beef`, `o = 0o755`, `bin = 0b1010`, `inf1 = -inf`, `d = 1979-05-27T07:32:00Z`,
		`d2 = 1979-05-27 07:32:00.999-07:00`, `ld = 1979-05-27`, `lt = 07:32:00`, `arr = [ 1, [2, 3], "x", ]`,
		`it = { x = 1, y.z = "a" }`, `ml = """`, `a "" b \\" c`, `"""`, `ml2 = '''x'''`,
		`[t."quoted.part".x]`, `[[arr.of.tables]]`, `v = true`, ``,
	}, "\n")
	if _, err := parseTOML([]byte(valid)); err != nil {
		t.Fatalf("valid TOML refused: %v", err)
	}
	for _, in := range []string{
		"a = ", "a = 1 2", "[a\n", "a = \"x\n", "a = [1, 2", "= 1", "a = {x = 1", "a = nope",
		"[a]\nx = 1\n[a]\n", "a = '''x", "a.= 1",
	} {
		if _, err := parseTOML([]byte(in)); err == nil {
			t.Errorf("parseTOML(%q): want an error", in)
		}
	}
}
