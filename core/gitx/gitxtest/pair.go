package gitxtest

import (
	"slices"
	"testing"
	"time"
)

// Times are the durations of one side of a paired benchmark.
type Times []time.Duration

// Mean is the mean duration.
func (t Times) Mean() time.Duration {
	var sum time.Duration
	for _, d := range t {
		sum += d
	}
	return sum / time.Duration(max(len(t), 1))
}

// Median is the median duration.
func (t Times) Median() time.Duration {
	if len(t) == 0 {
		return 0
	}
	s := slices.Clone(t)
	slices.Sort(s)
	return s[len(s)/2]
}

// Ratio is the ratio of the means a/c.
func Ratio(a, c Times) float64 { return float64(a.Mean()) / float64(c.Mean()) }

// Pair runs b.N rounds of two sides of a comparison (Sluice and what it is
// compared with) after warm unmeasured rounds of each, alternating which
// side goes first, so that whatever the machine does at a moment weighs
// on both alike. Each side returns how long its measured work took (so
// that it can leave its set-up out); Timed makes one from a plain func.
// The benchmark timer is stopped throughout: the caller reports the
// returned times with b.ReportMetric.
func Pair(b *testing.B, warm int, a, c func(round int) time.Duration) (Times, Times) {
	b.Helper()
	b.StopTimer()
	for i := range warm {
		a(-1 - i)
		c(-1 - i)
	}
	as, cs := make(Times, 0, b.N), make(Times, 0, b.N)
	for i := range b.N {
		if i%2 == 0 {
			as = append(as, a(i))
			cs = append(cs, c(i))
		} else {
			cs = append(cs, c(i))
			as = append(as, a(i))
		}
	}
	return as, cs
}

// Timed measures f as one side of Pair.
func Timed(f func()) func(int) time.Duration {
	return func(int) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
}

// Ms is d in milliseconds, for b.ReportMetric.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
