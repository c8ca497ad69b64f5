package workspace

// A confined session's container: the agent itself, run from the workspace
// image with the session's places bound in. What it is made of is said
// here, apart from any runtime; package dockerrt makes it.

// SessionBind is one host path a session's container sees.
type SessionBind struct {
	Source, Target string
	ReadOnly       bool
}

// SessionContainerSpec is a session's container.
type SessionContainerSpec struct {
	Session     string
	Image       string
	RuntimeName string
	// User is the person's uid:gid (never root).
	User       string
	Cmd        []string
	Env        []string
	WorkingDir string
	Binds      []SessionBind
	// Copy is the bind target that holds the session's copy: a runtime
	// that cannot bind it (a pod) carries it in and back.
	Copy string
	TTY  bool
	// Rows and Cols size the terminal from the start (with TTY).
	Rows, Cols uint
	Limits     Limits
}
