package workspace

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

func TestLimits_CanOnlyBeLowered(t *testing.T) {
	cfg := Limits{Timeout: time.Minute, MemoryBytes: 512 << 20, OutputBytes: 1 << 20, CPUs: 1, PIDs: 100, TmpfsBytes: 64 << 20}
	base, err := cfg.withDefaults(DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	lower, err := Limits{Timeout: time.Second, MemoryBytes: 64 << 20}.withDefaults(base)
	if err != nil || lower.within(base) != nil {
		t.Fatalf("lowering refused: %v", err)
	}
	if lower.PIDs != 100 || lower.Timeout != time.Second {
		t.Fatalf("defaults not applied: %+v", lower)
	}
	for _, raise := range []Limits{
		{Timeout: 2 * time.Minute},
		{MemoryBytes: 1 << 30},
		{OutputBytes: 2 << 20},
		{PIDs: 101},
	} {
		l, err := raise.withDefaults(base)
		if err == nil {
			err = l.within(base)
		}
		if !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("%+v: raising above the configured limit gave %v", raise, err)
		}
	}
	for _, past := range []Limits{
		{Timeout: 11 * time.Minute},
		{MemoryBytes: 5 << 30},
		{OutputBytes: 5 << 20},
		{Timeout: -time.Second},
	} {
		if _, err := past.withDefaults(DefaultLimits); err == nil {
			t.Errorf("%+v: past the hard caps was accepted", past)
		}
	}
}
