package app

import (
	"fmt"
	"slices"
	"testing"
)

// TestHistory_Search_StoredWordsAndEscapes: a search finds the same rows
// whether the journal looks in its stored words first or not: plain words
// of a reason that holds a hidden character, and the hidden character as
// the row writes it (⟨U+200B⟩, or a part of it), which only the row's own
// words hold.
func TestHistory_Search_StoredWordsAndEscapes(t *testing.T) {
	a, ids := historyJournal(t, 60, func(i int) (string, string) {
		switch i {
		case 5:
			return "Fix the flaky\u200b clock", "/work/src/gadgets"
		case 6:
			return "Tidy 200b things", "/work/src/widgets"
		}
		return fmt.Sprintf("Routine update %d", i), "/work/src/widgets"
	})
	api := &API{app: a, kind: "web"}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"FLAKY", []string{ids[5]}},
		{"⟨U+200B⟩", []string{ids[5]}},
		{"u+200b", []string{ids[5]}},
		{"200b", []string{ids[6], ids[5]}},
		{"gadgets", []string{ids[5]}},
		{"routine update 59", []string{ids[59]}},
	} {
		cards, err := api.History(HistoryQuery{Text: c.text, Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, card := range cards {
			got = append(got, card.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("search %q: %v, want %v", c.text, got, c.want)
		}
	}
	for text, want := range map[string]bool{"flaky": true, "200b": false, "u+200b": false, "⟨u+200b⟩": false, "x200b": true, "+": false, "add": false, "adds": true} {
		if got := outsideEscapes(text); got != want {
			t.Errorf("outsideEscapes(%q) = %v", text, got)
		}
	}
}
