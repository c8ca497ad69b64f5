package audit

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit codes of VerifyCommand.
const (
	ExitOK        = 0 // the ledger is intact
	ExitFailure   = 1 // KeygenCommand only: the key could not be written
	ExitUsage     = 2 // bad arguments, or the public key is unreadable or invalid
	ExitIntegrity = 3 // integrity or signature failure, or the ledger unreadable
)

// VerifyCommand implements
//
//	verify-audit FILE --pubkey PEM [--require-signed] [--expect-head SEQ:HASH] [--print-head]
//
// Flags may come before or after FILE. On success it prints the counts and
// "ok" to stdout and returns 0. It returns 3 on any integrity or signature
// failure, on an unsigned entry or checkpoint under --require-signed, and
// when the ledger is missing or unreadable (what cannot be read cannot be
// vouched for); and 2 on a usage error or a public key that cannot be read.
// Failures are described on stderr only; stdout is printed on success.
func VerifyCommand(args []string, stdout, stderr io.Writer) int {
	fs := newCommandFlags("verify-audit", "FILE --pubkey PEM [--require-signed] [--expect-head SEQ:HASH] [--print-head]", stderr)
	pubPath := fs.String("pubkey", "", "Ed25519 public key `PEM` (a private key PEM also works)")
	requireSigned := fs.Bool("require-signed", false, "fail on any unsigned entry or checkpoint")
	expectHead := fs.String("expect-head", "", "fail unless the ledger still holds this entry (`SEQ:HASH`, as --print-head printed it earlier)")
	printHead := fs.Bool("print-head", false, "also print the last entry as head: SEQ:HASH, an anchor to keep outside the ledger")
	pos, code, ok := parseCommand(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "verify-audit: exactly one ledger FILE is required")
		fs.Usage()
		return ExitUsage
	}
	if *pubPath == "" {
		fmt.Fprintln(stderr, "verify-audit: --pubkey is required")
		fs.Usage()
		return ExitUsage
	}
	opts := VerifyOptions{RequireSigned: *requireSigned}
	if *expectHead != "" {
		h, err := ParseHead(*expectHead)
		if err != nil {
			fmt.Fprintf(stderr, "verify-audit: --expect-head %q: %v\n", *expectHead, err)
			return ExitUsage
		}
		opts.ExpectHead = &h
	}
	pub, err := LoadPublicKey(*pubPath)
	if err != nil {
		fmt.Fprintf(stderr, "verify-audit: %v\n", err)
		return ExitUsage
	}
	rep, err := Verify(pos[0], pub, opts)
	if err != nil {
		fmt.Fprintf(stderr, "verify-audit: %v\n", err)
		return ExitIntegrity
	}
	seq := "none"
	if rep.Chained > 0 {
		seq = fmt.Sprintf("%d..%d", rep.FirstSeq, rep.LastSeq)
	}
	fmt.Fprintf(stdout, "entries: %d\nchained: %d\nlegacy: %d\nsigned: %d\nunsigned: %d\nsegments: %d\nsequence: %s\nretention_checkpoint_used: %s\n",
		rep.Entries, rep.Chained, rep.Legacy, rep.Signed, rep.Unsigned, rep.Segments, seq, rep.CheckpointUsed)
	if *printHead {
		head := "none"
		if rep.Chained > 0 {
			head = Head{Sequence: rep.LastSeq, Hash: rep.LastHash}.String()
		}
		fmt.Fprintf(stdout, "head: %s\n", head)
	}
	if opts.ExpectHead != nil {
		state := "pruned behind the checkpoint"
		if rep.HeadChecked {
			state = "held"
		}
		fmt.Fprintf(stdout, "expected_head: %s\n", state)
	}
	fmt.Fprintln(stdout, "ok")
	return ExitOK
}

// KeygenCommand implements
//
//	audit keygen [--out PRIVPATH] [--pub PUBPATH]
//
// creating a key pair at the caller's default paths unless told otherwise.
// With --out alone the public key goes to PRIVPATH.pub. It prints both paths
// and the key id, and returns 0, 2 on a usage error, or 1 when the key cannot
// be written (including when one already exists: keys are never replaced).
func KeygenCommand(args []string, defaultPrivPath, defaultPubPath string, stdout, stderr io.Writer) int {
	fs := newCommandFlags("audit keygen", "[--out PRIVPATH] [--pub PUBPATH]", stderr)
	out := fs.String("out", "", "private key `PATH` (default "+defaultPrivPath+")")
	pubOut := fs.String("pub", "", "public key `PATH` (default "+defaultPubPath+", or PRIVPATH.pub with --out)")
	pos, code, ok := parseCommand(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "audit keygen: unexpected argument %q\n", pos[0])
		fs.Usage()
		return ExitUsage
	}
	privPath, pubPath := defaultPrivPath, defaultPubPath
	if *out != "" {
		privPath, pubPath = *out, *out+".pub"
	}
	if *pubOut != "" {
		pubPath = *pubOut
	}
	if privPath == "" || pubPath == "" {
		fmt.Fprintln(stderr, "audit keygen: no key path given and no default")
		return ExitUsage
	}
	if err := GenerateKey(privPath, pubPath); err != nil {
		fmt.Fprintf(stderr, "audit keygen: %v\n", err)
		return ExitFailure
	}
	pub, err := LoadPublicKey(pubPath)
	if err != nil {
		fmt.Fprintf(stderr, "audit keygen: %v\n", err)
		return ExitFailure
	}
	fmt.Fprintf(stdout, "private key: %s\npublic key: %s\nkey id: %s\n", privPath, pubPath, KeyID(pub))
	return ExitOK
}

// newCommandFlags is the flag set of the command name, taking the
// arguments synopsis describes; errors and usage go to stderr.
func newCommandFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+name+" "+synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseCommand parses args with parseInterspersed. When the command should
// stop there, ok is false and code is its exit code: ExitOK for -h, and
// ExitUsage for arguments that do not parse (the flag package has said why).
func parseCommand(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, ExitOK, false
	}
	if err != nil {
		return nil, ExitUsage, false
	}
	return pos, ExitOK, true
}

// parseInterspersed lets flags and positional arguments come in any order,
// which the flag package alone does not (it stops at the first positional).
// Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
