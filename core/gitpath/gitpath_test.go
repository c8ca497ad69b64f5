package gitpath

import "testing"

func TestNamesMetadata(t *testing.T) {
	cases := []struct {
		path string
		want bool
	}{
		{".git", true},
		{".git/config", true},
		{".GIT/config", true},
		{".Git/hooks/pre-commit", true},
		{"sub/.git/config", true},
		{"a/b/.gIt/HEAD", true},
		{".git./config", true},
		{".git /config", true},
		{".git::$INDEX_ALLOCATION/config", true},
		{"GIT~1/config", true},
		{`sub\.git\config`, true},
		{`"\056git/config"`, true},
		{`"sub/\056GIT/hooks"`, true},
		{"", false},
		{".gitignore", false},
		{".github/workflows/ci.yml", false},
		{"src/git/x.go", false},
		{"docs/.git-blame-ignore-revs", false},
		{`"plain name"`, false},
	}
	for _, tc := range cases {
		if got := NamesMetadata(tc.path); got != tc.want {
			t.Errorf("NamesMetadata(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestUnquote(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`"a b"`, "a b", true},
		{`"\056git"`, ".git", true},
		{`"tab\there"`, "tab\there", true},
		{`"\303\251"`, "é", true},
		{`"q\"x"`, `q"x`, true},
		{`"dangling\"`, "", false},
		{`"short\05"`, "", false},
		{`"in"side"`, "", false},
		{`unquoted`, "", false},
	}
	for _, tc := range cases {
		got, ok := Unquote(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Unquote(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
