package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/connect"
)

// The confined HOME. An agent in a session sees this directory at the
// person's HOME path and nothing else of their home: not ~/.ssh, not
// ~/.config/gh, not the person's own settings of the agent (which may
// name other MCP servers with their tokens, or hooks that run outside).
// It is kept per program across sessions, so that the agent's own
// settings, its login (when the person logs in inside a session) and its
// history stay; Sluice writes into it, at every start, the MCP entry that
// runs the relay to the session's sidecar, the folder trust for the
// session's repository, and a git identity (the person's name and e-mail
// only), so that commits the agent makes in its copy work.

// Identity is the person's git identity, as their configuration says it.
type Identity struct{ Name, Email string }

// PrepareHome writes what a session needs into the confined HOME home
// for the client agent (nil for a command Sluice does not know):
// toolsets are the sidecar's, repo the repository's path (the copy's,
// inside).
//
// It runs as the person, outside the sandbox, on a directory the agent
// writes: nothing in it is reached through a link (connect.ConfinedHome),
// and the links the agent planted on the way to its own settings (the
// client's ConfigPaths, ~/.gitconfig) are removed first, so that no
// later step of Sluice's can follow one to the person's files.
func PrepareHome(home string, agent *connect.Agent, toolsets []string, repo string, id Identity) error {
	if err := config.EnsurePrivateDir(home); err != nil {
		return err
	}
	h, err := connect.OpenConfinedHome(home)
	if err != nil {
		return err
	}
	defer h.Close()
	names := []string{".gitconfig"}
	if agent != nil {
		names = append(names, agent.ConfigPaths...)
	}
	for _, n := range names {
		if err := h.RemoveLinks(n); err != nil {
			return err
		}
	}
	if id.Name != "" || id.Email != "" {
		var b strings.Builder
		b.WriteString("# Written by Sluice for a confined session: the person's identity only.\n[user]\n")
		if id.Name != "" {
			fmt.Fprintf(&b, "\tname = %s\n", gitConfigValue(id.Name))
		}
		if id.Email != "" {
			fmt.Fprintf(&b, "\temail = %s\n", gitConfigValue(id.Email))
		}
		if err := h.WriteFile(".gitconfig", []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	if agent == nil {
		return nil
	}
	plan, err := connect.Make(connect.Options{
		Client: agent.Client, Command: InsideSidecar, Args: []string{"relay"}, Toolsets: toolsets,
		Home: home, Getenv: func(string) string { return "" }, GOOS: "linux",
		Confined: true, TrustDir: repo,
	})
	if err != nil {
		return err
	}
	if _, err := plan.Apply(time.Now()); err != nil {
		return err
	}
	return nil
}

// gitConfigValue quotes a value for a git config file.
func gitConfigValue(v string) string {
	v = strings.NewReplacer("\n", " ", "\r", " ", "\x00", "").Replace(v)
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
