package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/config"
)

// runRoots edits the allowed roots in config.json, where the app and every
// sidecar read them:
//
//	sluice roots list
//	sluice roots add DIR...
//	sluice roots remove DIR...
func runRoots(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: sluice roots list | add DIR... | remove DIR...")
		return 2
	}
	cmd, dirs := args[0], args[1:]
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	switch cmd {
	case "list":
		if len(dirs) > 0 {
			fmt.Fprintln(stderr, "usage: sluice roots list")
			return 2
		}
		roots, err := cfg.FileRoots()
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
		printRoots(stdout, roots, cfg.File())
	case "add", "remove":
		if len(dirs) == 0 {
			fmt.Fprintf(stderr, "usage: sluice roots %s DIR...\n", cmd)
			return 2
		}
		var roots []string
		for _, d := range dirs {
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			if cmd == "add" {
				roots, err = cfg.AddRoot(d)
			} else {
				roots, err = cfg.RemoveRoot(d)
			}
			if err != nil {
				fmt.Fprintln(stderr, "sluice:", err)
				return 1
			}
		}
		printRoots(stdout, roots, cfg.File())
		fmt.Fprintln(stdout, "Agents' sidecars read this on their next call; a running app picks it up when restarted.")
	default:
		fmt.Fprintf(stderr, "sluice: unknown roots command %q (list, add, remove)\n", cmd)
		return 2
	}
	if _, ok := os.LookupEnv("SLUICE_ALLOWED_ROOTS"); ok {
		fmt.Fprintln(stdout, "Note: SLUICE_ALLOWED_ROOTS is set in this environment and overrides the file for processes that inherit it.")
	}
	return 0
}

func printRoots(w io.Writer, roots []string, file string) {
	if len(roots) == 0 {
		fmt.Fprintf(w, "No allowed roots in %s: agents can name no repository. Add one with `sluice roots add DIR`.\n", file)
		return
	}
	fmt.Fprintf(w, "Allowed roots (%s):\n  %s\n", file, strings.Join(roots, "\n  "))
}

// persistEnvOverrides makes what the app was started with through the
// environment (SLUICE_ALLOWED_ROOTS, SLUICE_WORKSPACE_IMAGE) the saved
// configuration, so that sidecars, whose environment the agent decides,
// read the same values from config.json.
func persistEnvOverrides(cfg *config.Config, log *slog.Logger) {
	changed, err := cfg.PersistEnvOverrides()
	if err != nil {
		log.Warn("could not save the environment's settings to config.json; sidecars started without them will not see them", "err", err)
		return
	}
	if len(changed) > 0 {
		log.Info("saved settings from the environment to config.json, where every sidecar reads them", "keys", strings.Join(changed, ","), "file", cfg.File())
	}
}
