package workspace

// SyncStats counts what SyncTree did to the tree. Written is every entry
// created or replaced (a file, a symlink, a directory) and every file
// whose mode bits alone were set; Removed every entry removed, a
// directory counting once with what was below it; Unchanged every file
// and symlink that already matched. Archive is what the archive held.
type SyncStats struct {
	Written, Removed, Unchanged int64
	Archive                     ArchiveStats
}
