package gitx

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// CommitRef names a commit with its subject.
type CommitRef struct {
	SHA     string `json:"sha" jsonschema:"full commit id"`
	Subject string `json:"subject,omitempty"`
	Label   string `json:"label,omitempty" jsonschema:"what this side is, in the words of the operation"`
}

// ConflictSide is one stage of an unmerged path.
type ConflictSide struct {
	Blob      string `json:"blob" jsonschema:"abbreviated blob id"`
	Mode      string `json:"mode"`
	Size      int64  `json:"size"`
	Content   string `json:"content,omitempty" jsonschema:"the text, up to maxBytesPerSide"`
	Truncated bool   `json:"truncated,omitempty" jsonschema:"content was cut at maxBytesPerSide (on a line boundary)"`
	Binary    bool   `json:"binary,omitempty" jsonschema:"binary: content is not included"`
}

// MarkerRange is one conflict hunk in the working-tree file, by line
// numbers (1-based).
type MarkerRange struct {
	Start     int `json:"start" jsonschema:"line of <<<<<<<"`
	Base      int `json:"base,omitempty" jsonschema:"line of ||||||| (diff3 style only)"`
	Separator int `json:"separator" jsonschema:"line of ======="`
	End       int `json:"end" jsonschema:"line of >>>>>>>"`
}

// ConflictFile is one unmerged path.
type ConflictFile struct {
	Path     string        `json:"path"`
	Kind     string        `json:"kind" jsonschema:"both_modified, both_added, deleted_by_us, deleted_by_them, added_by_us, added_by_them or both_deleted"`
	Base     *ConflictSide `json:"base,omitempty" jsonschema:"the common ancestor's version (stage 1); absent when both sides added the path"`
	Ours     *ConflictSide `json:"ours,omitempty" jsonschema:"stage 2; absent when ours deleted the path"`
	Theirs   *ConflictSide `json:"theirs,omitempty" jsonschema:"stage 3; absent when theirs deleted the path"`
	Markers  []MarkerRange `json:"markers" jsonschema:"conflict hunks in the working-tree file"`
	Worktree string        `json:"worktree" jsonschema:"the working-tree file: text, binary, missing, symlink, other or too_large"`
}

// ConflictState is an in-progress conflict as data.
type ConflictState struct {
	InProgress bool           `json:"inProgress" jsonschema:"an operation is in progress or paths are unmerged"`
	Operation  *Operation     `json:"operation,omitempty"`
	Ours       *CommitRef     `json:"ours,omitempty"`
	Theirs     *CommitRef     `json:"theirs,omitempty"`
	Note       string         `json:"note,omitempty" jsonschema:"how to read ours and theirs for this operation"`
	Files      []ConflictFile `json:"files"`
	TotalFiles int            `json:"totalFiles" jsonschema:"unmerged paths (before limit and paths)"`
	Truncated  bool           `json:"truncated,omitempty"`
}

// Conflict read limits.
const (
	DefaultConflictSideBytes = 4 << 10
	MaxConflictSideBytes     = 64 << 10
	DefaultConflictFiles     = 20
	MaxConflictFiles         = 200
	maxMarkers               = 100
	worktreeReadMax          = 8 << 20
)

// ConflictRead describes the conflict in progress: the operation, both
// commits, every unmerged path with its stages (contents bounded) and the
// conflict markers in the working-tree file.
func (repo *Repo) ConflictRead(ctx context.Context, paths []string, maxBytes, limit int) (*ConflictState, error) {
	if err := repo.needWorkTree(); err != nil {
		return nil, err
	}
	maxBytes, limit, err := conflictLimits(maxBytes, limit)
	if err != nil {
		return nil, err
	}
	ps, err := CheckPaths("paths", paths)
	if err != nil {
		return nil, err
	}
	st := &ConflictState{Operation: repo.Operation(), Files: []ConflictFile{}}
	out, err := repo.git(ctx, &cmd{sub: []string{"ls-files"}, opts: []string{"--unmerged", "-z"}, paths: ps, dashdash: true, limit: 16 << 20})
	if err != nil {
		return nil, err
	}
	byPath, order := parseUnmerged(out.Stdout)
	st.TotalFiles = len(order)
	st.InProgress = st.Operation != nil || len(order) > 0
	if !st.InProgress {
		return st, nil
	}
	repo.describeSides(ctx, st)
	if len(order) > limit {
		order = order[:limit]
		st.Truncated = true
	}
	// Read every stage in two cat-file processes.
	var specs []string
	var sides []*ConflictSide
	for _, p := range order {
		for _, s := range byPath[p][1:] {
			if s != nil {
				specs = append(specs, s.Blob)
				sides = append(sides, s)
			}
		}
	}
	blobs, err := repo.readBlobs(ctx, specs, 1<<20)
	if err != nil {
		return nil, err
	}
	fillConflictSides(sides, blobs, maxBytes)
	for _, p := range order {
		s := byPath[p]
		cf := ConflictFile{Path: p, Kind: stageKind(s[1] != nil, s[2] != nil, s[3] != nil), Base: s[1], Ours: s[2], Theirs: s[3], Markers: []MarkerRange{}}
		cf.Worktree, cf.Markers = repo.conflictWorktree(p, cf.Markers)
		st.Files = append(st.Files, cf)
	}
	return st, nil
}

// conflictLimits fills in and bounds ConflictRead's sizes.
func conflictLimits(maxBytes, limit int) (int, int, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultConflictSideBytes
	}
	if maxBytes > MaxConflictSideBytes {
		return 0, 0, errcode.New(errcode.InvalidArgument, "maxBytesPerSide must be at most %d", MaxConflictSideBytes)
	}
	if limit <= 0 {
		limit = DefaultConflictFiles
	}
	if limit > MaxConflictFiles {
		return 0, 0, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxConflictFiles)
	}
	return maxBytes, limit, nil
}

// conflictStages are an unmerged path's stages 1 (base), 2 (ours) and 3
// (theirs); index 0 is unused.
type conflictStages [4]*ConflictSide

// parseUnmerged reads git ls-files --unmerged -z ("<mode> <blob>
// <stage>\t<path>" records): each path's stages, and the paths in git's
// order.
func parseUnmerged(out []byte) (byPath map[string]*conflictStages, order []string) {
	byPath = map[string]*conflictStages{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			continue
		}
		n, _ := strconv.Atoi(f[2])
		if n < 1 || n > 3 {
			continue
		}
		s := byPath[p]
		if s == nil {
			s = &conflictStages{}
			byPath[p] = s
			order = append(order, p)
		}
		s[n] = &ConflictSide{Blob: f[1], Mode: f[0]}
	}
	return byPath, order
}

// fillConflictSides puts what cat-file read for each side into it: its
// size, and its text up to maxBytes unless it is binary or too big.
func fillConflictSides(sides []*ConflictSide, blobs []blob, maxBytes int) {
	for i, s := range sides {
		b := blobs[i]
		s.Blob = abbrev(s.Blob)
		s.Size = b.size
		switch {
		case b.data == nil:
			s.Truncated = true
		case isBinary(b.data):
			s.Binary = true
		default:
			s.Content, s.Truncated = cutLines(b.data, maxBytes)
		}
	}
}

// conflictWorktree says what the working tree holds at p and, for text,
// where its conflict markers are (else markers as given).
func (repo *Repo) conflictWorktree(p string, markers []MarkerRange) (string, []MarkerRange) {
	data, _, err := repo.readWorktreeFile(p, worktreeReadMax)
	switch {
	case err == errWorktreeFile:
		if lst, lerr := lstatIn(repo.Root, p); lerr == nil && lst {
			return "symlink", markers
		}
		return "other", markers
	case err != nil:
		return "missing", markers
	case data == nil:
		return "too_large", markers
	case isBinary(data):
		return "binary", markers
	default:
		return "text", findMarkers(data)
	}
}

// describeSides fills ours/theirs with the meaning they have in the
// operation in progress: during a rebase, "ours" is the branch being
// built (the upstream plus the commits replayed so far) and "theirs" is
// your commit being replayed.
func (repo *Repo) describeSides(ctx context.Context, st *ConflictState) {
	head, _ := repo.headSHA(ctx)
	other := ""
	if st.Operation != nil {
		other = st.Operation.Other
	}
	var ids []string
	for _, s := range []string{head, other} {
		if isHex(s) {
			ids = append(ids, s)
		}
	}
	subjects := map[string]string{}
	if len(ids) > 0 {
		if s, err := repo.subjects(ctx, ids); err == nil {
			subjects = s
		}
	}
	if head != "" {
		st.Ours = &CommitRef{SHA: head, Subject: subjects[head], Label: "HEAD"}
	}
	if isHex(other) {
		st.Theirs = &CommitRef{SHA: other, Subject: subjects[other]}
	}
	kind := ""
	if st.Operation != nil {
		kind = st.Operation.Kind
	}
	switch kind {
	case "merge":
		st.Ours.setLabel("the checked-out branch")
		st.Theirs.setLabel("the branch being merged in (MERGE_HEAD)")
	case "rebase", "am":
		st.Ours.setLabel("the upstream plus the commits already replayed")
		st.Theirs.setLabel("your commit being replayed (REBASE_HEAD)")
		st.Note = "In a rebase, ours is the new base being built and theirs is your own commit being replayed onto it."
	case "cherry-pick":
		st.Ours.setLabel("the checked-out branch")
		st.Theirs.setLabel("the commit being picked (CHERRY_PICK_HEAD)")
	case "revert":
		st.Ours.setLabel("the checked-out branch")
		st.Theirs.setLabel("the commit being reverted (REVERT_HEAD); theirs holds its inverse")
	case "":
		st.Note = "Unmerged paths without an operation in progress: usually left by git stash apply or pop."
	}
}

func (c *CommitRef) setLabel(l string) {
	if c != nil {
		c.Label = l
	}
}

func stageKind(base, ours, theirs bool) string {
	switch {
	case base && ours && theirs:
		return "both_modified"
	case !base && ours && theirs:
		return "both_added"
	case base && !ours && theirs:
		return "deleted_by_us"
	case base && ours && !theirs:
		return "deleted_by_them"
	case !base && ours && !theirs:
		return "added_by_us"
	case !base && !ours && theirs:
		return "added_by_them"
	default:
		return "both_deleted"
	}
}

// cutLines returns at most max bytes of b, cut after the last whole line.
func cutLines(b []byte, max int) (string, bool) {
	if len(b) <= max {
		return string(b), false
	}
	cut := b[:max]
	if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return string(cut), true
}

// findMarkers locates conflict hunks by their seven-character markers.
func findMarkers(data []byte) []MarkerRange {
	out := []MarkerRange{}
	var cur *MarkerRange
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		switch {
		case hasMarker(l, '<'):
			cur = &MarkerRange{Start: line}
		case cur != nil && hasMarker(l, '|') && cur.Separator == 0:
			cur.Base = line
		case cur != nil && isSeparator(l) && cur.Separator == 0:
			cur.Separator = line
		case cur != nil && hasMarker(l, '>') && cur.Separator != 0:
			cur.End = line
			out = append(out, *cur)
			cur = nil
			if len(out) == maxMarkers {
				return out
			}
		}
	}
	return out
}

func hasMarker(l []byte, c byte) bool {
	if len(l) < 7 {
		return false
	}
	for i := 0; i < 7; i++ {
		if l[i] != c {
			return false
		}
	}
	return len(l) == 7 || l[7] == ' ' || l[7] == '\r'
}

func isSeparator(l []byte) bool {
	l = bytes.TrimRight(l, "\r")
	return len(l) == 7 && string(l) == "======="
}
