package audit

import (
	"crypto/ed25519"
	"testing"
)

// Each benchmark reports per-entry cost as ns/op, so AppendSigned against
// AppendBatch shows what one sync per entry costs, and Verify against
// Ed25519Verify shows what the verifier adds beyond signature checks.

func BenchmarkAppendSigned(b *testing.B) {
	key := newTestKey(b)
	l := openLedger(b, Options{Path: ledgerPath(b), Key: key.priv})
	e := sampleEntry(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

func BenchmarkAppendBatch(b *testing.B) {
	const batchSize = 100
	key := newTestKey(b)
	l := openLedger(b, Options{Path: ledgerPath(b), Key: key.priv})
	batch := make([]Entry, batchSize)
	for i := range batch {
		batch[i] = sampleEntry(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batchSize {
		if _, err := l.AppendBatch(batch[:min(batchSize, b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

func benchmarkVerify(b *testing.B, signed bool) {
	key := newTestKey(b)
	path := ledgerPath(b)
	// Keep every segment so that all b.N entries are verified, across
	// rotations as a real ledger is.
	opts := Options{Path: path, MaxSegments: 1 << 16}
	if signed {
		opts.Key = key.priv
	}
	l := openLedger(b, opts)
	batch := make([]Entry, 1000)
	for i := range batch {
		batch[i] = sampleEntry(i)
	}
	for i := 0; i < b.N; i += len(batch) {
		if _, err := l.AppendBatch(batch[:min(len(batch), b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: signed})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if rep.Chained != b.N {
		b.Fatalf("verified %d entries, want %d", rep.Chained, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkVerify streams a signed ledger of b.N entries.
func BenchmarkVerify(b *testing.B) { benchmarkVerify(b, true) }

// BenchmarkVerifyUnsigned is the verifier's own cost: parsing, canonical
// re-encoding, hashing and chain checks, with no signatures.
func BenchmarkVerifyUnsigned(b *testing.B) { benchmarkVerify(b, false) }

// BenchmarkEd25519Verify is the bare signature check on the exact message
// and signature of one ledger entry.
func BenchmarkEd25519Verify(b *testing.B) {
	key := newTestKey(b)
	path := ledgerPath(b)
	appendN(b, openLedger(b, Options{Path: path, Key: key.priv}), 1)
	line := readLines(b, path)[0]
	c := newLineChecker(key.pub())
	if _, reason := c.check([]byte(line)); reason != "" {
		b.Fatal(reason)
	}
	msg := c.sigBuf
	sig, err := sigEncoding.DecodeString(decodeLine(b, line)["signature"].(string))
	if err != nil {
		b.Fatal(err)
	}
	pub := key.pub()
	b.ResetTimer()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify failed")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
