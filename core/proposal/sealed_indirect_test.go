package proposal

import "testing"

// TestRiskWhy_Indirections_High: a sealed outcome in a repository whose
// own git shows other history than its objects (replace refs, grafts)
// raises a low card to high and says why; the sentence is bound by the
// digest like the rest of the outcome.
func TestRiskWhy_Indirections_High(t *testing.T) {
	const note = "this repository has replace refs (refs/replace/): git log and git show here show other objects than the ones that land; Sluice shows the real ones"
	p := sample(t, &CommitArgs{Message: "fix", Paths: []string{"src/a.go"}, Branch: "agent/x"})
	p.Sealed = &Sealed{Effect: EffectLands}
	if r, why := p.RiskWhy(); r != RiskLow {
		t.Fatalf("without: %s %q", r, why)
	}
	plain, err := p.ComputeDigest()
	if err != nil {
		t.Fatal(err)
	}
	p.Sealed.Indirections = []string{note}
	if r, why := p.RiskWhy(); r != RiskHigh || why != note {
		t.Errorf("with replace refs: %s %q", r, why)
	}
	flagged, err := p.ComputeDigest()
	if err != nil {
		t.Fatal(err)
	}
	if flagged == plain {
		t.Error("the digest does not cover the indirections")
	}
}
